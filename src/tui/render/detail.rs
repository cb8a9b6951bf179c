//! The detail pane of the selected device: a title with its schedulers and
//! queue settings, four charts with change markers on a shared time axis, and
//! a side panel with the latency probe's figures (`--probe`), the
//! before/after table of the newest change, older changes and the active
//! scheduler's tunables.

use super::before_after::Look;
use super::chart::{bucket, column, column_legend, render_axis, render_bars};
use super::width::fit;
use super::{Theme, age, put};
use crate::tui::app::{AbState, App, KEEP_SECS, Window};
use blktune_core::device::BlockDevice;
use blktune_core::history::{ChangeMark, Comparison, Figure, Means, delta};
use blktune_core::latency::Dir;
use blktune_core::probe::ProbeFigures;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

/// Width of the charts' left gutter: `max 1235k` and a space.
const GUTTER: u16 = 10;

/// Windows the charts step through while history accumulates (seconds):
/// each is at most 1.5 times the one before, so the bars always cover at
/// least two thirds of the width.
const GROWING_SPANS: [f64; 17] = [
    2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 240.0, 360.0,
    480.0,
];

/// Seconds the charts span for `cols` columns of the device `name`: two
/// minutes (more when the columns outnumber them in intervals), and less
/// while its history is shorter, from 2 s (4 intervals at least) up in
/// steps, so that the first
/// minute of a session (or of the demo) fills the charts rather than a
/// thin strip at their right.
pub fn chart_span(app: &App, cols: usize, name: &str) -> f64 {
    let full = (cols as f64 * app.interval.as_secs_f64()).clamp(120.0, KEEP_SECS);
    let Some(first) = app.histories.get(name).and_then(|h| h.points().front()) else {
        return full;
    };
    let age = app.now - (first.t - first.itv);
    GROWING_SPANS
        .iter()
        .copied()
        .filter(|&s| s >= 4.0 * app.interval.as_secs_f64())
        .find(|&s| s >= age - 1e-6)
        .unwrap_or(full)
        .min(full)
}

/// `sda  ssd 20G  sched none [mq-deadline] kyber bfq  nr 256  ra 128`
pub fn title(d: &BlockDevice) -> String {
    let sched = match &d.queue.scheduler {
        None => "no scheduler".to_string(),
        Some(s) => {
            let names: Vec<String> = s
                .available
                .iter()
                .map(|n| {
                    if *n == s.active {
                        format!("[{n}]")
                    } else {
                        n.clone()
                    }
                })
                .collect();
            format!("sched {}", names.join(" "))
        }
    };
    let opt = |v: Option<u64>| v.map_or_else(|| "-".into(), |n| n.to_string());
    // A stack by its name and lsblk's type (`dm-0 vg0-root  lvm`).
    let (name, kind) = match &d.stack {
        Some(s) => (
            s.name
                .as_ref()
                .map_or_else(|| d.name.clone(), |n| format!("{} {n}", d.name)),
            s.type_name.clone(),
        ),
        None => (d.name.clone(), super::table::kind_label(d.kind).to_string()),
    };
    format!(
        "{name}  {kind} {}  {}  nr {}  ra {}",
        d.size_label(),
        sched,
        opt(d.queue.nr_requests),
        opt(d.queue.read_ahead_kb)
    )
}

/// Draw the pane.
pub fn render(buf: &mut Buffer, area: Rect, app: &App, t: Theme) {
    if area.height < 3 {
        return;
    }
    let Some(d) = app.selected_device() else {
        if let Some(name) = app.hidden_selection() {
            let msg = format!("─ {name} (selected) is hidden by the filter: Esc shows it ");
            let line = format!("{msg:─<w$}", w = area.width as usize);
            put(buf, area.x, area.y, &line, area.width, t.dim());
        } else if app.samples > 0 {
            let msg = "─ no device selected: ↑/↓ selects one ";
            let line = format!("{msg:─<w$}", w = area.width as usize);
            put(buf, area.x, area.y, &line, area.width, t.dim());
        }
        return;
    };
    let w = area.width as usize;
    // The model, when the whole of it fits after the settings: it tells
    // which disk this is, but is never worth a cut number.
    // A hot selected row shows `▶`, not `!`: the title says why it stands
    // out, first, where it is never cut.
    let mut head = match app.row_hot(&d.name) {
        Some(h) => format!("{}  {}", h.label(), title(d)),
        None => title(d),
    };
    // Vendor and model apart, as `list`, the JSON and the rules show them;
    // the model alone when both do not fit.
    let fits = |with: &str| super::width::width(with) <= w.saturating_sub(3);
    let field = |v: Option<&str>| {
        v.map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let (vendor, model) = (field(d.vendor.as_deref()), field(d.model.as_deref()));
    let both = match (&vendor, &model) {
        (Some(v), Some(m)) => Some(format!("{head}  vendor {v}, model {m}")),
        (Some(v), None) => Some(format!("{head}  vendor {v}")),
        _ => None,
    };
    let alone = model.map(|m| format!("{head}  model {m}"));
    if let Some(with) = [both, alone].into_iter().flatten().find(|w| fits(w)) {
        head = with;
    }
    let line = format!("{:─<w$}", format!("─ {} ", fit(&head, w.saturating_sub(3))));
    put(buf, area.x, area.y, &line, area.width, t.heading());
    let body = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
    // A change's before/after needs a little more room than the rest:
    // its rates row holds both values and the interval.
    let least = if app.marks.get(&d.name).is_some_and(|m| !m.is_empty()) {
        CHANGE_SIDE_W
    } else {
        MIN_SIDE_W
    };
    let side_w = (body.width * 2 / 5).clamp(least as u16, 64);
    let charts = Rect::new(body.x, body.y, body.width - side_w - 1, body.height);
    let side = Rect::new(body.x + charts.width + 1, body.y, side_w, body.height);
    render_charts(buf, charts, app, &d.name, t);
    render_side(buf, side, app, d, t);
}

fn render_charts(buf: &mut Buffer, area: Rect, app: &App, name: &str, t: Theme) {
    let Some(h) = app.histories.get(name) else {
        return;
    };
    if area.height < 5 || area.width <= GUTTER + 4 {
        return;
    }
    let cols = (area.width - GUTTER) as usize;
    let span = chart_span(app, cols, name);
    let s = bucket(h, app.now, span, cols);
    let marks: Vec<(usize, String)> = app
        .marks
        .get(name)
        .map(|ms| {
            ms.iter()
                .filter_map(|m| {
                    let col = column(m.t, app.now, span, cols)?;
                    Some((col, split_label(&m.label).0.to_string()))
                })
                .collect()
        })
        .unwrap_or_default();
    let mark_cols: Vec<usize> = marks.iter().map(|(c, _)| *c).collect();
    let rows = area.height - 1;
    // The kernel's p50/p99 of reads below r_await while it traces this
    // device; of writes below w_await when every chart keeps four rows.
    let points = app.latency_points(name);
    let lat = |dir| {
        let points = points.as_ref()?;
        let mut l = super::latency::bucket(points, app.now, span, cols, dir);
        l.last = app.latency_now(name, dir).flatten();
        Some(l)
    };
    let r_lat = lat(Dir::Read);
    let w_lat = r_lat
        .as_ref()
        .filter(|_| rows >= 6 * 4)
        .and(lat(Dir::Write));
    let last = |f: fn(&Means) -> f64| s.last.as_ref().map(f);
    let mut charts: Vec<Chart> = vec![Chart::Bars(
        "r_await",
        "ms",
        &s.r_await,
        last(|m| m.r_await),
    )];
    if let Some(l) = &r_lat {
        charts.push(Chart::Latency("r_p99", l));
    }
    charts.push(Chart::Bars(
        "w_await",
        "ms",
        &s.w_await,
        last(|m| m.w_await),
    ));
    if let Some(l) = &w_lat {
        charts.push(Chart::Latency("w_p99", l));
    }
    charts.push(Chart::Bars("%util", "%", &s.util, last(|m| m.util)));
    charts.push(Chart::Bars("IOPS", "", &s.iops, last(|m| m.r_s + m.w_s)));
    let n = charts.len() as u16;
    let (each, extra) = (rows / n, rows % n);
    let mut y = area.y;
    for (i, chart) in charts.iter().enumerate() {
        let hgt = each + u16::from((i as u16) < extra);
        let r = Rect::new(area.x, y, area.width, hgt);
        match chart {
            Chart::Bars(label, unit, vals, last) => render_bars(
                buf,
                r,
                GUTTER,
                label,
                unit,
                vals,
                *last,
                &mark_cols,
                t.series(i),
                t,
            ),
            Chart::Latency(label, l) => {
                super::latency::render_chart(buf, r, GUTTER, label, l, &mark_cols, t.series(i), t)
            }
        }
        y += hgt;
    }
    render_axis(
        buf,
        Rect::new(area.x, y, area.width, 1),
        GUTTER,
        span,
        &marks,
        column_legend(span, cols, app.interval.as_secs_f64()).as_deref(),
        t,
    );
}

/// One chart of the pane.
enum Chart<'a> {
    /// Name, unit, one value per column, the newest interval's value.
    Bars(&'a str, &'a str, &'a [Option<f64>], Option<f64>),
    /// The kernel's p50 and p99 of one direction.
    Latency(&'a str, &'a super::latency::LatencySeries),
}

/// The side panel's narrowest width.
const MIN_SIDE_W: usize = 33;
/// The side panel's narrowest width while it shows a change.
const CHANGE_SIDE_W: usize = 38;

/// A change label split after its first part: `mq-deadline→kyber` and the rest
/// (`nr_requests 256→64`, often the kernel's reset after a switch).
pub fn split_label(label: &str) -> (&str, Option<&str>) {
    match label.split_once(", ") {
        Some((a, b)) => (a, Some(b)),
        None => (label, None),
    }
}

/// The head of a change's before/after: `Δ none→kyber  5s ago` (the age on
/// its own line when the change is long), then what else the switch
/// changed (`and nr_requests 128→256`).
pub fn change_head(mark: &ChangeMark, now: f64) -> Vec<(String, Look)> {
    // Tunables by their own name: the panel is narrow.
    let label = mark.label.replace("iosched/", "");
    let (main, rest) = split_label(&label);
    let ago = format!("{} ago", age(now - mark.t));
    let head = format!("Δ {main}  {ago}");
    let mut out = if head.chars().count() <= CHANGE_SIDE_W {
        vec![(head, Look::Heading)]
    } else {
        // A long change keeps its values whole; its age goes below.
        vec![
            (format!("Δ {main}"), Look::Heading),
            (format!("  {ago}"), Look::Plain),
        ]
    };
    if let Some(rest) = rest {
        out.push((format!("  and {rest}"), Look::Plain));
    }
    out
}

/// What the panel adds under the table, each block with the priority it
/// is kept by: the probe's rows (`--probe`), and in a wide panel where a
/// moved p99 spent its time (the scheduler or the device).
fn extras(
    c: &Comparison,
    probe: Option<(ProbeFigures, ProbeFigures)>,
    latency: Option<&(Option<Window>, Option<Window>)>,
    wide: bool,
) -> Vec<(u8, Vec<(String, Look)>)> {
    let mut out = Vec::new();
    if let Some((pb, pa)) = probe {
        let rows = super::probe::before_after_rows(pb, pa, c.before, c.after, 8);
        out.push((4, rows.into_iter().map(|l| (l, Look::Plain)).collect()));
    }
    if let (Some((lb, la)), true) = (latency, wide) {
        for (dir, name) in [(Dir::Read, "reads' p99"), (Dir::Write, "writes' p99")] {
            if let Some(w) = super::latency::share(lb.as_ref(), la.as_ref(), dir) {
                out.push((8, vec![(format!("{name}: {w}"), Look::Dim)]));
            }
        }
    }
    out
}

fn render_side(buf: &mut Buffer, area: Rect, app: &App, d: &BlockDevice, t: Theme) {
    let mut lines = Vec::new();
    // The queue right now, beside the charts' averages; while the device
    // is busy: I/O in flight, or done in the last interval (under load the
    // count at the tick is often 0, and a line that came and went each
    // second made the pane below it jump). An idle device's 0/0 would push
    // the rest down for nothing.
    let busy = |n: &crate::tui::app::InFlightNow| {
        n.total > 0
            || app
                .latest(&d.name)
                .is_some_and(|s| s.r_s + s.w_s + s.d_s + s.f_s > 0.0)
    };
    if let Some(n) = app.in_flight(&d.name).filter(busy) {
        let text = match n.split {
            Some(_) => format!("in flight r/w  {}", n.label()),
            None => format!("in flight  {}", n.label()),
        };
        lines.push((text, Style::new()));
        lines.push((String::new(), Style::new()));
    }
    let probe = super::probe::lines(app, &d.name, area.width as usize, t);
    if !probe.is_empty() {
        lines.extend(probe);
        lines.push((String::new(), Style::new()));
    }
    let changes = app.changes_with_comparison(&d.name);
    if let Some((mark, cmp)) = changes.last() {
        let i = changes.len() - 1;
        let head = change_head(mark, app.now);
        let budget = (area.height as usize).saturating_sub(lines.len());
        let ab = app.ab_of(&d.name, mark.t);
        let hint = (app.read_only.is_none() && app.replay.is_none() && ab.is_none())
            .then_some("A runs an A/B");
        // A running A/B shows its progress; a finished one its verdict; a
        // stopped one the change's own windows (up to the A/B) and why.
        let verdict = match ab {
            Some(a) if a.running() => None,
            Some(a) => a.result.clone().or_else(|| app.change_verdict(&d.name, i)),
            None => app.change_verdict(&d.name, i),
        };
        let head = match ab.and_then(|a| a.done.as_ref()) {
            Some(Err(why)) => {
                let mut h = head;
                for l in super::width::wrap(why, (area.width as usize).saturating_sub(2)) {
                    h.push((l, Look::Dim));
                }
                h
            }
            _ => head,
        };
        let rows = match verdict {
            _ if ab.is_some_and(AbState::running) => {
                let mut h = head;
                if let Some(a) = ab {
                    let line = a.progress_line();
                    for l in super::width::wrap(&line, (area.width as usize).saturating_sub(2)) {
                        h.push((l, Look::Plain));
                    }
                }
                h.truncate(budget);
                h
            }
            Some(v) => {
                let wide = area.width as usize >= super::before_after::WIDE;
                let extra = extras(
                    cmp,
                    app.probe_compare(&d.name, i),
                    app.latency_compare(&d.name, i).as_ref(),
                    wide,
                );
                if lines.len() + 12 > area.height as usize
                    && lines.last().is_some_and(|(l, _)| l.is_empty())
                {
                    // No blank line between the in-flight line and the table.
                    lines.pop();
                }
                let budget = (area.height as usize).saturating_sub(lines.len());
                super::before_after::lines(&v, head, hint, extra, area.width as usize, budget)
            }
            None => {
                let mut h = head;
                h.push(("  after: no interval yet".into(), Look::Dim));
                h.truncate(budget);
                h
            }
        };
        for (l, look) in rows {
            let st = match look {
                Look::Heading => t.heading(),
                Look::Alarm => t.error(),
                Look::Dim => t.dim(),
                Look::Plain => Style::new(),
            };
            lines.push((l, st));
        }
        if changes.len() > 1 {
            lines.push(("earlier changes (r_await)".into(), t.heading()));
            for (m, c) in changes.iter().rev().skip(1) {
                let eff = match (c.before, c.after) {
                    (Some(b), Some(a)) => delta(&b, &a, Figure::RAwait).label(),
                    _ => String::new(),
                };
                let label = split_label(&m.label).0;
                let ago = format!("-{}", age(app.now - m.t));
                lines.push((format!("{ago:>6}{eff:>6} {label}"), Style::new()));
            }
        }
        lines.push((String::new(), Style::new()));
    }
    // Where the I/O goes (mounts, a loop device's file, stacking), wrapped
    // so that a long path is never cut.
    if let Some(p) = app
        .placement(&d.name)
        .map(|p| p.lines())
        .filter(|l| !l.is_empty())
    {
        lines.push(("where the I/O goes".into(), t.heading()));
        for l in p {
            let wrapped = super::width::wrap(&l, area.width.saturating_sub(2) as usize);
            lines.extend(
                wrapped
                    .into_iter()
                    .enumerate()
                    .map(|(i, w)| (if i == 0 { w } else { format!("  {w}") }, Style::new())),
            );
        }
        lines.push((String::new(), Style::new()));
    }
    match &d.queue.scheduler {
        // A stack: the disks that schedule its I/O (`s` offers to change them).
        None => match blktune_core::topology::stacks::carried_text(&app.devices, &d.name) {
            Some(carried) => {
                let text = format!("no I/O scheduler of its own: {carried}");
                let wrapped = super::width::wrap(&text, area.width.saturating_sub(2) as usize);
                for (i, w) in wrapped.into_iter().enumerate() {
                    let w = if i == 0 { w } else { format!("  {w}") };
                    lines.push((w, t.heading()));
                }
                if app.read_only.is_none() && app.mode() == crate::tui::command::Mode::Main {
                    lines.push(("s: the scheduler of those disks".into(), t.dim()));
                }
            }
            None => lines.push(("no I/O scheduler: bio-based device".into(), t.dim())),
        },
        Some(s) if d.queue.tunables.is_empty() => {
            lines.push((format!("{}: no tunables", s.active), t.heading()))
        }
        Some(s) => {
            lines.push((format!("{} tunables", s.active), t.heading()));
            for (k, v) in &d.queue.tunables {
                lines.push((format!("{k:<18}{v:>10}"), Style::new()));
            }
        }
    }
    // The queue settings next to the scheduler (t edits them).
    if !d.queue.knobs.is_empty() {
        lines.push(("queue settings".into(), t.heading()));
        for k in blktune_core::sched::QUEUE_KNOBS {
            if let Some(v) = d.queue.knobs.get(k.name) {
                // Write-back throttling at 0 is off (bfq turns it off).
                let off = if k.name == "wbt_lat_usec" && v == "0" {
                    " off"
                } else {
                    ""
                };
                lines.push((format!("{:<18}{v:>10}{off}", k.name), Style::new()));
            }
        }
    }
    // The key hint only where the key can change something.
    if changes.is_empty()
        && d.queue.has_scheduler()
        && app.read_only.is_none()
        && app.mode() == crate::tui::command::Mode::Main
    {
        lines.push((String::new(), Style::new()));
        lines.push(("no change yet (s: scheduler)".into(), t.dim()));
    }
    for (i, (l, st)) in lines.iter().take(area.height as usize).enumerate() {
        put(
            buf,
            area.x,
            area.y + i as u16,
            &fit(l, area.width as usize),
            area.width,
            *st,
        );
    }
    for y in area.y..area.bottom() {
        put(buf, area.x - 1, y, "│", 1, t.dim());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(label: &str) -> ChangeMark {
        ChangeMark {
            device: "sda".into(),
            t: 10.0,
            label: label.into(),
            before: Default::default(),
            after: Default::default(),
        }
    }

    #[test]
    fn a_long_change_keeps_its_values_whole_in_the_narrow_panel() {
        let l = change_head(&mark("iosched/read_lat_nsec 2000000→1000000"), 13.0);
        assert_eq!(l[0].0, "Δ read_lat_nsec 2000000→1000000");
        assert_eq!(l[1].0, "  3s ago");
        assert!(l.iter().all(|(s, _)| s.chars().count() <= CHANGE_SIDE_W));
        // A short one keeps its age on the same line.
        let l = change_head(&mark("none→kyber, nr_requests 128→256"), 13.0);
        assert_eq!(l[0].0, "Δ none→kyber  3s ago");
        assert_eq!(l[1].0, "  and nr_requests 128→256");
    }
}
