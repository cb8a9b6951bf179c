//! The detail pane of the selected device: a title with its schedulers and
//! queue settings, four charts with change markers on a shared time axis, and
//! a side panel with the latency probe's figures (`--probe`), the
//! before/after table of the newest change, older changes and the active
//! scheduler's tunables.

use super::chart::{bucket, column, column_legend, render_axis, render_bars};
use super::width::{fit, right};
use super::{Theme, age, num, put};
use crate::tui::app::{App, KEEP_SECS, Window};
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
    let side_w = (body.width * 2 / 5).clamp(MIN_SIDE_W as u16, 64);
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

/// A change label split after its first part: `mq-deadline→kyber` and the rest
/// (`nr_requests 256→64`, often the kernel's reset after a switch).
pub fn split_label(label: &str) -> (&str, Option<&str>) {
    match label.split_once(", ") {
        Some((a, b)) => (a, Some(b)),
        None => (label, None),
    }
}

/// Lines of the before/after table of one change; `probe` is the probe's
/// pooled figures before and after (`--probe` only), shown under r_await; `latency` the
/// kernel's pooled windows, whose rows follow r_await and w_await.
/// `compact` leaves out the windows' lengths (`covers`) and, in a narrow
/// panel, the awaits' spread rows: how the table fits where it would not
/// (at 80x24 the write rows fell off the bottom).
pub fn before_after(
    mark: &ChangeMark,
    c: &Comparison,
    now: f64,
    probe: Option<(ProbeFigures, ProbeFigures)>,
    latency: Option<&(Option<Window>, Option<Window>)>,
    width: usize,
    compact: bool,
) -> Vec<(String, bool)> {
    // Tunables by their own name: the panel is narrow (33 columns at least).
    let label = mark.label.replace("iosched/", "");
    let (main, rest) = split_label(&label);
    let ago = format!("{} ago", age(now - mark.t));
    let head = format!("Δ {main}  {ago}");
    let mut out = if head.chars().count() <= MIN_SIDE_W {
        vec![(head, true)]
    } else {
        // A long change keeps its values whole; its age goes below.
        vec![(format!("Δ {main}"), true), (format!("  {ago}"), false)]
    };
    if let Some(rest) = rest {
        out.push((format!("  and {rest}"), false));
    }
    // Means with their spread side by side need 11 columns each.
    let wide = width >= 8 + 11 + 11 + 7;
    let cw = if wide { 11 } else { 8 };
    out.push((
        format!("{:<8}{:>cw$}{:>cw$}{:>7}", "", "before", "after", "diff"),
        true,
    ));
    let (b, a) = (c.before, c.after);
    let secs = |m: Option<Means>| {
        m.map_or_else(
            || "-".into(),
            |m| {
                if m.secs < 10.0 {
                    format!("{:.1}s", m.secs)
                } else {
                    format!("{:.0}s", m.secs)
                }
            },
        )
    };
    if !compact {
        out.push((
            format!("{:<8}{:>cw$}{:>cw$}", "covers", secs(b), secs(a)),
            false,
        ));
    }
    let rows = [
        ("r_await", Figure::RAwait),
        ("w_await", Figure::WAwait),
        ("%util", Figure::Util),
        ("r/s", Figure::RS),
        ("w/s", Figure::WS),
    ];
    for (label, fig) in rows {
        // The mean and, next to it, how much the intervals varied (±1 sd);
        // in a narrow panel the spread of the awaits gets its own row.
        let cell = |m: Option<Means>| {
            m.map_or_else(
                || "-".into(),
                |m| {
                    let (v, sd) = fig.of(&m);
                    if wide {
                        format!("{}±{}", num(v), num(sd))
                    } else {
                        num(v)
                    }
                },
            )
        };
        let d = match (b, a) {
            (Some(b), Some(a)) => delta(&b, &a, fig).label(),
            _ => String::new(),
        };
        out.push((
            format!(
                "{label:<8}{}{}{}",
                right(&cell(b), cw),
                right(&cell(a), cw),
                right(&d, 7)
            ),
            false,
        ));
        if !wide && !compact && matches!(fig, Figure::RAwait | Figure::WAwait) {
            let sd = |m: Option<Means>| {
                m.map_or_else(|| "-".into(), |m| format!("±{}", num(fig.of(&m).1)))
            };
            out.push((format!("{:<8}{:>cw$}{:>cw$}", "", sd(b), sd(a)), false));
        }
        if let (Some((pb, pa)), "r_await") = (probe, label) {
            let rows = super::probe::before_after_rows(pb, pa, b, a, cw);
            out.extend(rows.into_iter().map(|l| (l, false)));
        }
        let dir = match label {
            "r_await" => Dir::Read,
            "w_await" => Dir::Write,
            _ => continue,
        };
        if let Some((lb, la)) = latency {
            for l in super::latency::before_after_rows(lb.as_ref(), la.as_ref(), dir) {
                out.push((l, false));
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
        let probe = app.probe_compare(&d.name, changes.len() - 1);
        let latency = app.latency_compare(&d.name, changes.len() - 1);
        let table = |compact| {
            before_after(
                mark,
                cmp,
                app.now,
                probe,
                latency.as_ref(),
                area.width as usize,
                compact,
            )
        };
        let mut rows = table(false);
        if lines.len() + rows.len() > area.height as usize {
            rows = table(true);
            // And no blank line between the in-flight line and the table.
            if lines.last().is_some_and(|(l, _)| l.is_empty()) {
                lines.pop();
            }
        }
        for (l, head) in rows {
            lines.push((l, if head { t.heading() } else { Style::new() }));
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
        let none = Comparison {
            before: None,
            after: None,
        };
        let l = before_after(
            &mark("iosched/read_lat_nsec 2000000→1000000"),
            &none,
            13.0,
            None,
            None,
            MIN_SIDE_W,
            false,
        );
        assert_eq!(l[0].0, "Δ read_lat_nsec 2000000→1000000");
        assert_eq!(l[1].0, "  3s ago");
        assert!(l.iter().all(|(s, _)| s.chars().count() <= MIN_SIDE_W));
        // A short one keeps its age on the same line.
        let l = before_after(
            &mark("none→kyber, nr_requests 128→256"),
            &none,
            13.0,
            None,
            None,
            MIN_SIDE_W,
            false,
        );
        assert_eq!(l[0].0, "Δ none→kyber  3s ago");
        assert_eq!(l[1].0, "  and nr_requests 128→256");
    }

    #[test]
    fn a_compact_table_leaves_out_the_windows_lengths_and_the_spread_rows() {
        let m = Means {
            secs: 20.0,
            ..Default::default()
        };
        let c = Comparison {
            before: Some(m),
            after: Some(m),
        };
        let table = |compact| -> Vec<String> {
            before_after(
                &mark("none→kyber"),
                &c,
                13.0,
                None,
                None,
                MIN_SIDE_W,
                compact,
            )
            .into_iter()
            .map(|(l, _)| l)
            .collect()
        };
        let (full, compact) = (table(false), table(true));
        let spread = |l: &Vec<String>| l.iter().filter(|r| r.trim_start().starts_with('±')).count();
        assert!(full.iter().any(|l| l.starts_with("covers")));
        assert_eq!(spread(&full), 2, "r_await's and w_await's: {full:?}");
        assert!(!compact.iter().any(|l| l.starts_with("covers")));
        assert_eq!(spread(&compact), 0, "{compact:?}");
        // Every other row is kept, in its order.
        let kept: Vec<&String> = full
            .iter()
            .filter(|l| !l.starts_with("covers") && !l.trim_start().starts_with('±'))
            .collect();
        assert_eq!(kept, compact.iter().collect::<Vec<_>>());
    }
}
