//! The shoot-out dialog (`b`; its state and keys: `dialogs/shootout.rs`):
//! its setup, then a progress bar, then the results.

use super::frame::{big, framed};
use super::{Theme, num};
use crate::tui::dialogs::shootout::{BUDGET, DWELL, SETTLE, ShootOutDialog, Stage};
use blktune_core::latency::{Dir, MIN_IOS_FOR_P99, Span as IoSpan};
use blktune_core::shootout::{
    CONTROLS_HEAD, ConfigSummary, IoLatency, Metric, ShootoutResult, verdict_lines,
};
use blktune_core::text::printable;
use blktune_core::units::format_duration;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

/// A text progress bar of `width` cells.
pub fn bar(done: f64, width: usize) -> String {
    let filled = ((done.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!("{}{}", "█".repeat(filled), "░".repeat(width - filled))
}

/// Draw the shoot-out dialog.
pub fn render(frame: &mut Frame, area: Rect, shoot_out_dialog: &ShootOutDialog, theme: Theme) {
    let r = big(area);
    let w = r.width.saturating_sub(2) as usize;
    let mut lines = Vec::new();
    let mut keys: Option<&str> = None;
    let title = format!("scheduler shoot-out on {}", shoot_out_dialog.device);
    match &shoot_out_dialog.stage {
        Stage::Setup => {
            let names = printable(&shoot_out_dialog.schedulers.join(" ")).into_owned();
            lines.push(Line::raw(format!("schedulers  {names}")));
            lines.push(Line::from(vec![
                Span::raw(format!("load        {:<48}", shoot_out_dialog.load.label())),
                Span::styled("l/Tab: change", theme.dim()),
            ]));
            lines.push(Line::raw(format!(
                "timing      rounds of settle {} + dwell {}, interleaved, for up to {}",
                format_duration(SETTLE),
                format_duration(DWELL),
                format_duration(BUDGET)
            )));
            lines.push(Line::raw(""));
            for l in [
                "Schedulers take turns (A B B A ...) through the tuner (journalled); the",
                "charts mark every switch. It stops once the verdict is decided, or says",
                "'no winner' when the time runs out. At the end, or on Esc, the original",
                "settings come back. Passive adds no I/O; randread adds reads only.",
            ] {
                lines.push(Line::from(Span::styled(l, theme.dim())));
            }
            lines.push(Line::raw(""));
            lines.push(Line::from(Span::styled(
                "Enter start   l/Tab load   Esc close",
                theme.heading(),
            )));
        }
        Stage::Running {
            progress,
            cancelling,
        } => {
            let (line, done, left) = progress.as_ref().map_or(
                ("starting…".to_string(), 0.0, shoot_out_dialog.planned()),
                |p| (p.line(), p.done, p.time_left),
            );
            lines.push(Line::raw(format!(
                "load   {}",
                shoot_out_dialog.load.label()
            )));
            lines.push(Line::raw(""));
            lines.push(Line::styled(line, theme.heading()));
            let pct = format!(" {:>3.0}%", done * 100.0);
            lines.push(Line::raw(format!(
                "{}{pct}",
                bar(done, w.saturating_sub(pct.len()))
            )));
            lines.push(Line::raw(format!(
                "time left about {}",
                format_duration(std::time::Duration::from_secs(
                    left.as_secs_f64().ceil() as u64
                ))
            )));
            lines.push(Line::raw(""));
            let hint = if *cancelling {
                "cancelling: restoring the original settings…"
            } else {
                "Esc cancels and restores the original settings"
            };
            lines.push(Line::from(Span::styled(hint, theme.heading())));
        }
        Stage::Done(res) => {
            // Every detail where there is room for it (bench prints them all);
            // inside the box's rows, less the borders and the key line.
            let rows = (r.height as usize).saturating_sub(3);
            lines.extend(results_lines(res, theme, w, area.height >= 40, rows));
            if wrapped_rows(&lines, w) < rows {
                lines.push(Line::raw(""));
            }
            // Only a decided winner can be applied or kept.
            keys = Some(if res.verdict.decided() {
                "a apply the winner   e export it as a udev rule   Esc close"
            } else {
                "no decided winner: nothing to apply   Esc close"
            });
        }
        Stage::Failed(e) => {
            lines.push(Line::from(Span::styled(
                printable(e).into_owned(),
                theme.error(),
            )));
            lines.push(Line::raw(""));
            lines.push(Line::from(Span::styled("Esc close", theme.heading())));
        }
    }
    // Wrapped rows, plus the key line, plus the borders; the key line is
    // drawn on the last inner row so a long verdict never pushes it out.
    let rows = wrapped_rows(&lines, w) + usize::from(keys.is_some());
    let h = (rows as u16 + 2).min(r.height);
    let boxr = Rect::new(r.x, r.y + (r.height - h) / 2, r.width, h);
    framed(frame, boxr, &title, lines, theme, true);
    if let Some(k) = keys
        && boxr.height > 2
    {
        let row = Rect::new(boxr.x + 1, boxr.bottom() - 2, boxr.width - 2, 1);
        frame.render_widget(Clear, row);
        frame.render_widget(Paragraph::new(Span::styled(k, theme.heading())), row);
    }
}

/// Rows `lines` take when word-wrapped greedily at `width` columns (as the
/// paragraph wraps them; a word longer than a row is split).
fn wrapped_rows(lines: &[Line], width: usize) -> usize {
    let w = width.max(1);
    lines
        .iter()
        .map(|l| {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            // `empty`: nothing on this row yet (a leading space is
            // something: an indented line's spaces take columns).
            let (mut rows, mut col, mut empty) = (1, 0, true);
            for word in text.split(' ') {
                let n = word.chars().count();
                let need = if empty { n } else { col + 1 + n };
                if need <= w {
                    col = need;
                    empty = false;
                } else {
                    // On a new row, unless the row is still empty; a word
                    // longer than a row goes on over the next ones.
                    rows += usize::from(!empty);
                    rows += n.saturating_sub(1) / w;
                    col = if n == 0 { 0 } else { (n - 1) % w + 1 };
                    empty = n == 0;
                }
            }
            rows
        })
        .sum()
}

/// A column of the results table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    /// A diskstats mean.
    Disk(Metric),
    /// The kernel's I/O count of a direction (pooled over the rounds).
    N(Dir),
    /// The kernel's p50 of the reads.
    P50,
    /// The kernel's p99 of a direction, or `n=K` under 100 I/Os.
    P99(Dir),
}

impl Col {
    /// Every column, in the order shown.
    const ALL: [Col; 11] = [
        Col::Disk(Metric::RS),
        Col::Disk(Metric::WS),
        Col::Disk(Metric::MbS),
        Col::Disk(Metric::RAwait),
        Col::Disk(Metric::WAwait),
        Col::Disk(Metric::Util),
        Col::N(Dir::Read),
        Col::P50,
        Col::P99(Dir::Read),
        Col::N(Dir::Write),
        Col::P99(Dir::Write),
    ];

    /// Which columns go first when the width is short: the reads' figures
    /// and the kernel's read percentiles; the writes' p99 only when wide.
    const PRIORITY: [Col; 11] = [
        Col::Disk(Metric::RS),
        Col::Disk(Metric::RAwait),
        Col::N(Dir::Read),
        Col::P50,
        Col::P99(Dir::Read),
        Col::Disk(Metric::WS),
        Col::Disk(Metric::WAwait),
        Col::Disk(Metric::Util),
        Col::Disk(Metric::MbS),
        Col::N(Dir::Write),
        Col::P99(Dir::Write),
    ];

    fn label(self) -> &'static str {
        match self {
            Col::Disk(m) => m.label(),
            Col::N(Dir::Read) => "r_n",
            Col::N(_) => "w_n",
            Col::P50 => "r_p50",
            Col::P99(Dir::Read) => "r_p99",
            Col::P99(_) => "w_p99",
        }
    }

    fn kernel(self) -> bool {
        !matches!(self, Col::Disk(_))
    }

    /// The cell of one configuration.
    fn cell(self, config_summary: &ConfigSummary) -> String {
        let io = |dir| {
            config_summary
                .kernel
                .as_ref()
                .and_then(|k| k.get(IoSpan::Total, dir).copied())
        };
        match self {
            Col::Disk(m @ (Metric::RAwait | Metric::WAwait)) => config_summary
                .get(m)
                .map_or("-".to_string(), |sp| ms(sp.mean)),
            Col::Disk(m) => config_summary
                .get(m)
                .map_or("-".to_string(), |sp| num(sp.mean)),
            Col::N(dir) => count_cell(config_summary.kernel.is_some(), io(dir)),
            Col::P50 => io(Dir::Read).map_or("-".into(), |l| ms(l.p50)),
            Col::P99(dir) => p99_cell(io(dir)),
        }
    }
}

/// Least width of the configuration column.
const NAME_W: usize = 12;

/// The columns that fit in `width`: all of diskstats' (9 wide) without the
/// kernel's figures; with them (8 wide), by [`Col::PRIORITY`], the writes'
/// only when some scheduler saw writes.
fn columns(width: usize, name_w: usize, kernel: bool, writes: bool) -> (Vec<Col>, usize) {
    if !kernel {
        return (Col::ALL.into_iter().filter(|c| !c.kernel()).collect(), 9);
    }
    let cw = 8;
    let fits = (width.saturating_sub(name_w) / cw).max(1);
    let chosen: Vec<Col> = Col::PRIORITY
        .into_iter()
        .filter(|c| writes || !matches!(c, Col::N(Dir::Write) | Col::P99(Dir::Write)))
        .take(fits)
        .collect();
    (
        Col::ALL
            .into_iter()
            .filter(|c| chosen.contains(c))
            .collect(),
        cw,
    )
}

/// What a line of the results is, for fitting them into a small screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Always shown: the table, the comparisons, the conclusion.
    Keep,
    /// The table's first explanation: rounds pooled for display.
    Rounds,
    /// The second: whose percentiles, and `n=K` under 100 I/Os.
    Kernel,
    /// `controls (what else changed in the same rounds):`
    ControlsHead,
    /// A control that held or is worth a note.
    Note,
    /// A failed control: kept, in one row when rows are short.
    Failed,
    /// The leader against one other: kept, in one row when rows are short.
    Comparison,
    /// What the device was left with.
    Restore,
}

/// The results table (each configuration's rounds pooled: diskstats means
/// and the kernel's percentiles, as many columns as `width` holds), the
/// verdict's lines ([`verdict_lines`]: controls, intervals, conclusion) and
/// what the device was left with, in at most `rows` rows where it can
/// ([`fit`]).
pub fn results_lines(
    shootout_result: &ShootoutResult,
    theme: Theme,
    width: usize,
    full: bool,
    rows: usize,
) -> Vec<Line<'static>> {
    let kernel = shootout_result
        .configurations
        .iter()
        .any(|s| s.kernel.is_some());
    let writes = shootout_result.configurations.iter().any(|s| {
        s.kernel
            .as_ref()
            .is_some_and(|k| k.count(IoSpan::Total, Dir::Write) > 0)
    });
    // Schedulers alone, or with nr_requests (`kyber nr_requests=256`).
    let longest = shootout_result
        .configurations
        .iter()
        .map(|s| s.configuration.chars().count())
        .max()
        .unwrap_or(0);
    let name_w = NAME_W.max(longest + 2);
    let what = if shootout_result
        .configurations
        .iter()
        .any(|s| s.configuration.contains(' '))
    {
        "configuration"
    } else {
        "scheduler"
    };
    let (cols, cw) = columns(width, name_w, kernel, writes);
    let mut head = format!("{what:<name_w$}");
    for c in &cols {
        head.push_str(&format!("{:>cw$}", c.label()));
    }
    let winner = shootout_result.verdict.winner.clone();
    let mut out = vec![(Part::Keep, Line::styled(head, theme.heading()))];
    for s in &shootout_result.configurations {
        // A star for a decided winner only.
        let mark = if winner.as_deref() == Some(s.configuration.as_str()) {
            "★"
        } else {
            " "
        };
        let mut row = format!("{mark}{:<w$}", s.configuration, w = name_w - 1);
        for c in &cols {
            row.push_str(&format!("{:>cw$}", c.cell(s)));
        }
        out.push((Part::Keep, Line::raw(row)));
    }
    out.push((
        Part::Rounds,
        Line::styled(
            format!(
                "{} rounds of {} in {} block{}, pooled for display; latencies in ms",
                shootout_result.rounds,
                format_duration(std::time::Duration::from_secs_f64(shootout_result.dwell_s)),
                shootout_result.blocks,
                if shootout_result.blocks == 1 { "" } else { "s" }
            ),
            theme.dim(),
        ),
    ));
    out.push((
        Part::Kernel,
        Line::styled(
            if kernel {
                let names: Vec<&str> = cols
                    .iter()
                    .filter(|c| c.kernel())
                    .map(|c| c.label())
                    .collect();
                format!(
                    "{}: the kernel's, of every I/O on {}; no p99 under {MIN_IOS_FOR_P99} I/Os",
                    names.join(" "),
                    shootout_result.device
                )
            } else {
                let why = shootout_result
                    .kernel
                    .unavailable
                    .as_deref()
                    .unwrap_or("not traced");
                format!("no kernel percentiles: {}", printable(why))
            },
            theme.dim(),
        ),
    ));
    for l in verdict_lines(shootout_result, full) {
        let st = if l.contains("FAILED") || l.contains("UNRELIABLE") {
            theme.error()
        } else if l.starts_with("winner for ") {
            theme.done()
        } else {
            Style::new()
        };
        let part = if l.starts_with(CONTROLS_HEAD) {
            Part::ControlsHead
        } else if l.starts_with("  note  ") || l.starts_with("  ok    ") {
            Part::Note
        } else if l.starts_with("  FAILED") {
            Part::Failed
        } else if l.starts_with("  ") {
            Part::Comparison
        } else {
            Part::Keep
        };
        out.push((part, Line::styled(printable(&l).into_owned(), st)));
    }
    out.push((
        Part::Restore,
        Line::styled(shootout_result.final_settings.clone(), theme.done()),
    ));
    let table_rows = 1 + shootout_result.configurations.len();
    fit(out, theme, width, rows, table_rows)
}

/// The lines in at most `rows` wrapped rows where they can be: what a small
/// screen can do without goes first, least needed first (the rounds'
/// line under the table; then the controls that held or are only a note,
/// said in one line; then the line that explains the kernel's columns; then
/// the restore line's detail), never the table, the first failed control,
/// the comparisons or the conclusion. When even that is too tall (failed
/// controls and comparisons wrap), the restore line moves up under the
/// table: what the device was left with is never cut off by the box. Then
/// each failed control and each comparison takes one row, and the failed
/// controls beyond the rows are counted in one line: the conclusion and
/// every comparison stay.
fn fit(
    mut lines: Vec<(Part, Line<'static>)>,
    theme: Theme,
    width: usize,
    rows: usize,
    table_rows: usize,
) -> Vec<Line<'static>> {
    let taken = |l: &[(Part, Line<'static>)]| {
        l.iter()
            .map(|(_, l)| wrapped_rows(std::slice::from_ref(l), width))
            .sum::<usize>()
    };
    if taken(&lines) > rows {
        lines.retain(|(p, _)| *p != Part::Rounds);
    }
    let notes = lines.iter().filter(|(p, _)| *p == Part::Note).count();
    if taken(&lines) > rows && notes > 0 {
        let failed = lines
            .iter()
            .any(|(_, l)| l.spans.iter().any(|s| s.content.starts_with("  FAILED")));
        let said = if failed {
            format!(
                "  and {notes} note{} (a taller terminal shows them)",
                plural(notes)
            )
        } else {
            format!(
                "controls: nothing failed; {notes} note{} (a taller terminal shows them)",
                plural(notes)
            )
        };
        let at = lines
            .iter()
            .position(|(p, _)| *p == Part::Note)
            .unwrap_or(0);
        lines.retain(|(p, _)| *p != Part::Note && (failed || *p != Part::ControlsHead));
        let at = if failed { at } else { at.saturating_sub(1) }.min(lines.len());
        lines.insert(at, (Part::Keep, Line::styled(said, theme.dim())));
    }
    if taken(&lines) > rows {
        lines.retain(|(p, _)| *p != Part::Kernel);
    }
    if taken(&lines) > rows
        && let Some((_, l)) = lines.iter_mut().find(|(p, _)| *p == Part::Restore)
    {
        // One row: its start says whether the originals came back.
        *l = one_row(l, width);
    }
    if taken(&lines) > rows
        && let Some(at) = lines.iter().position(|(p, _)| *p == Part::Restore)
    {
        let restore = lines.remove(at);
        lines.insert(table_rows.min(lines.len()), restore);
    }
    // Then each failed control and each comparison in one row: their
    // starts say what failed and what was found (bench prints them whole).
    for part in [Part::Failed, Part::Comparison] {
        if taken(&lines) > rows {
            for (_, l) in lines.iter_mut().filter(|(p, _)| *p == part) {
                *l = one_row(l, width);
            }
        }
    }
    // The last resort: the failed controls that do not fit are counted in
    // one line; the first stays, and the comparisons and the conclusion
    // are never given up.
    let failed: Vec<usize> = (lines.iter().enumerate())
        .filter(|(_, (p, _))| *p == Part::Failed)
        .map(|(i, _)| i)
        .collect();
    if taken(&lines) > rows && failed.len() > 1 {
        for keep in (1..failed.len()).rev() {
            let hidden = failed.len() - keep;
            let mut fewer = lines.clone();
            for &at in failed[keep..].iter().rev() {
                fewer.remove(at);
            }
            let more = format!(
                "  and {hidden} more failed control{} (a taller terminal shows them)",
                plural(hidden)
            );
            fewer.insert(
                failed[keep - 1] + 1,
                (Part::Keep, Line::styled(more, theme.error())),
            );
            if taken(&fewer) <= rows || keep == 1 {
                lines = fewer;
                break;
            }
        }
    }
    lines.into_iter().map(|(_, l)| l).collect()
}

/// `line` cut to one row of `width` columns, ending in `…` when cut.
fn one_row(line: &Line<'static>, width: usize) -> Line<'static> {
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    if text.chars().count() <= width {
        return line.clone();
    }
    let cut: String = text.chars().take(width.saturating_sub(1)).collect();
    let style = line.spans.first().map(|s| s.style).unwrap_or_default();
    Line::from(Span::styled(format!("{cut}…"), style)).style(line.style)
}

/// `s` for a count other than one.
fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// An I/O count: `-` when the dwell was not traced.
fn count_cell(traced: bool, io_latency: Option<IoLatency>) -> String {
    match (traced, io_latency) {
        (false, _) => "-".into(),
        (true, None) => "0".into(),
        (true, Some(l)) if l.n >= 100_000 => format!("{}k", l.n / 1000),
        (true, Some(l)) => l.n.to_string(),
    }
}

/// A p99, or `n=K` when it rests on fewer than 100 I/Os.
fn p99_cell(io_latency: Option<IoLatency>) -> String {
    match io_latency {
        None => "-".into(),
        Some(l) => l.p99.map_or_else(|| format!("n={}", l.n), ms),
    }
}

/// A latency in ms with three significant figures below 1 ms (`0.0123`,
/// `0.490`: on fast devices the differences are there), as [`num`] above.
fn ms(value: f64) -> String {
    if value != 0.0 && value.abs() < 0.1 {
        format!("{value:.4}")
    } else if value.abs() < 1.0 {
        format!("{value:.3}")
    } else {
        num(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_keep_three_figures_below_a_millisecond() {
        assert_eq!(ms(0.01234), "0.0123");
        assert_eq!(ms(0.49), "0.490");
        assert_eq!(ms(0.0), "0.000");
        assert_eq!(ms(4.0), "4.00");
        assert_eq!(ms(12.34), "12.3");
    }

    #[test]
    fn wrapped_rows_counts_greedy_word_wrapping() {
        let rows = |s: &str, w| wrapped_rows(&[Line::raw(s.to_string())], w);
        assert_eq!(rows("", 10), 1);
        assert_eq!(rows("abc def", 7), 1);
        assert_eq!(rows("abc def", 6), 2);
        assert_eq!(rows("aaaa bbbb cccc", 9), 2);
        // A word longer than a row is split over rows.
        assert_eq!(rows("aaaaaaaaaaaa", 5), 3);
        assert_eq!(rows("aaaaaaaaaa", 5), 2);
        assert_eq!(
            wrapped_rows(&[Line::raw("one"), Line::raw("two three")], 5),
            3
        );
        // An indented line's spaces take columns.
        assert_eq!(rows("  ab", 3), 2);
        assert_eq!(rows("  ab", 4), 1);
    }

    /// The estimate is what the paragraph does (seen in a CI run: an
    /// indented comparison of 78 columns counted as one row at 76 took
    /// two, and the restore line fell out of the box).
    #[test]
    fn wrapped_rows_agrees_with_the_paragraphs_own_wrapping() {
        use ratatui::widgets::{Paragraph, Widget, Wrap};
        let texts = [
            "  FAILED  load: IOPS +35% (+14..+60) under none against mq-deadline, with +16% (+2..+33) I/Os in flight (aqu-sz): the offered load changed; the switch is not the only change",
            "  FAILED  vda (under loop2) sped up too: await 9.8 -> 0.45 ms (mq-deadline -> none, -99%); the switch is not the only change",
            "  mq-deadline  -14% (-23..-4): undecided; UNRELIABLE (a control failed, above)",
            "  kyber        -16% (-39..+16): undecided",
            "no winner for read-latency (r_await): UNRELIABLE, a control failed (above)",
            "original settings restored (scheduler=none nr_requests=128 read_ahead_kb=2560 wbt_lat_usec=75000 nomerges=0 rq_affinity=1 max_sectors_kb=1280 add_random=0)",
            "  and 2 notes (a taller terminal shows them)",
        ];
        for width in [76u16, 60, 40, 23] {
            for text in texts {
                let area = ratatui::layout::Rect::new(0, 0, width, 20);
                let mut buf = ratatui::buffer::Buffer::empty(area);
                Paragraph::new(Line::raw(text))
                    .wrap(Wrap { trim: false })
                    .render(area, &mut buf);
                let used = (0..area.height)
                    .filter(|&y| (0..width).any(|x| buf[(x, y)].symbol() != " "))
                    .count();
                assert_eq!(
                    wrapped_rows(&[Line::raw(text)], usize::from(width)),
                    used,
                    "at {width}: {text}"
                );
            }
        }
    }
}
