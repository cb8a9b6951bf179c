//! The latency probe's block at the top of the detail pane's side panel
//! (`--probe` only; nothing at all when it is off):
//!
//! ```text
//! probe: 5.0/s direct 4 KiB reads   what it is, and its own load
//! above the block layer (in r/s)
//! ms        n   p50   p99   max r_await   r_await only when the panel is wide
//! 1s        5  0.21     -  1.20    0.18   the newest interval: too few for a p99
//! 60s     300  0.20  1.10  3.40    0.19   all reads of the last minute, pooled
//! probe: cannot open /dev/sda for      the last error, wrapped
//!   reading: Permission denied
//! ```
//!
//! Every row carries the number of reads its figures rest on; a p99 needs
//! [`blktune_core::probe::MIN_IOS_FOR_P99`] of them, else it is `-` and the median and the
//! slowest read say what there is.

use super::width::right;
use super::{Theme, num};
use crate::tui::app::{App, fmt_interval, probe_window};
use blktune_core::history::{Means, Side, delta_of, means};
use blktune_core::probe::ProbeFigures;
use ratatui::style::Style;

/// Seconds the second row pools over.
pub const WINDOW_SECS: f64 = 60.0;
/// Lines an error may take at most.
const ERROR_LINES: usize = 3;
/// Lines each half of the heading may take at most.
const HEAD_LINES: usize = 2;
/// The table's width without the r_await column.
const NARROW_W: usize = 5 + 5 + 6 + 6 + 6;
/// The r_await column's width.
const AWAIT_W: usize = 8;

/// One row of the table: a label, the count, three latencies and, when
/// there is room, r_await.
fn row(label: &str, cells: [String; 4], r_await: Option<String>) -> String {
    let [n, a, b, c] = cells;
    let mut s = format!(
        "{label:<5}{}{}{}{}",
        right(&n, 5),
        right(&a, 6),
        right(&b, 6),
        right(&c, 6)
    );
    if let Some(d) = r_await {
        s.push_str(&right(&d, AWAIT_W));
    }
    s
}

fn opt(value: Option<f64>) -> String {
    value.map_or_else(|| "-".into(), num)
}

/// The cells of a set of reads: the count, p50, p99 (`-` under
/// [`blktune_core::probe::MIN_IOS_FOR_P99`] reads) and the slowest read.
fn cells(probe_figures: ProbeFigures) -> [String; 4] {
    [
        probe_figures.n.to_string(),
        opt(probe_figures.p50),
        opt(probe_figures.p99),
        opt(probe_figures.max),
    ]
}

/// The block's heading: what the probe measures and its own load, on one
/// line when it fits `width`, else broken after the reads.
pub fn heading(rate: f64, starting: bool, width: usize) -> Vec<String> {
    let what = format!("probe: {rate:.1}/s direct 4 KiB reads");
    let how = if starting {
        "above the block layer: starting"
    } else {
        "above the block layer (in r/s)"
    };
    if what.chars().count() + 1 + how.chars().count() <= width {
        return vec![format!("{what} {how}")];
    }
    let mut out = wrap(&what, width, HEAD_LINES);
    out.extend(wrap(how, width, HEAD_LINES));
    out
}

/// The probe's before/after rows: its read count in each window (`pr_n`),
/// then the p99 of the pooled reads, `n=K` under [`blktune_core::probe::MIN_IOS_FOR_P99`] reads
/// and then no percent ("few"). A p99 of pooled reads has no spread; the
/// noise floor and the windows' lengths (`means`, `a`) still hold.
pub fn before_after_rows(
    pb: ProbeFigures,
    pa: ProbeFigures,
    means: Option<Means>,
    a: Option<Means>,
    cw: usize,
) -> Vec<String> {
    if pb.n == 0 && pa.n == 0 {
        return Vec::new();
    }
    let p99 = |f: ProbeFigures| match (f.p99, f.n) {
        (Some(v), _) => num(v),
        (None, 0) => "-".into(),
        (None, n) => format!("n={n}"),
    };
    let side = |v: f64, m: Option<Means>| Side {
        value: v,
        spread: 0.0,
        intervals: m.map_or(0, |m| m.intervals),
    };
    let d = match (pb.p99, pa.p99) {
        (Some(vb), Some(va)) => delta_of(side(vb, means), side(va, a)).label(),
        _ if pb.n == 0 || pa.n == 0 => String::new(),
        _ => "few".into(),
    };
    // A figure never touches the one before it.
    vec![
        format!(
            "{:<8}{}{}",
            "pr_n",
            right(&pb.n.to_string(), cw),
            right(&pa.n.to_string(), cw)
        ),
        format!(
            "{:<8}{}{}{}",
            "pr_p99",
            right(&p99(pb), cw),
            right(&p99(pa), cw),
            right(&d, 7)
        ),
    ]
}

/// Split `text` into lines of at most `width` columns at spaces (words
/// longer than a line are cut), at most `max` lines, the last one ending in
/// `…` when text was left out.
pub fn wrap(text: &str, width: usize, max: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let mut w: String = word.chars().take(width).collect();
        if word.chars().count() > width {
            w.pop();
            w.push('…');
        }
        let fits = cur.is_empty() || cur.chars().count() + 1 + w.chars().count() <= width;
        if !fits {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(&w);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    if out.len() > max {
        out.truncate(max);
        if let Some(last) = out.last_mut() {
            while last.chars().count() + 1 > width {
                last.pop();
            }
            last.push('…');
        }
    }
    out
}

/// The block's lines for device `name` in a panel `width` columns wide;
/// empty when the probe is off.
pub fn lines(app: &App, name: &str, width: usize, theme: Theme) -> Vec<(String, Style)> {
    let Some(p) = &app.probe else {
        return Vec::new();
    };
    let points = p.history.get(name);
    // Only a point of the newest sample is "now"; an older one is from an
    // earlier visit to this device.
    let current = p.latest(name).filter(|q| q.t >= app.now - 1e-9);
    let head = match current {
        Some(q) => heading(q.reads_per_sec, false, width),
        None => heading(p.rate, true, width),
    };
    let mut out: Vec<(String, Style)> = head.into_iter().map(|l| (l, theme.heading())).collect();
    let from = app.now - WINDOW_SECS;
    let window = points
        .map(|h| probe_window(h.iter().filter(|q| q.start() >= from - 1e-9)))
        .unwrap_or_default();
    let now = current.map(|q| q.figures()).unwrap_or_default();
    if now.n > 0 || window.n > 0 {
        let wide = width >= NARROW_W + AWAIT_W;
        let h = app.histories.get(name);
        let last_await = app
            .latest(name)
            .filter(|_| {
                h.and_then(|h| h.last())
                    .is_some_and(|l| l.t >= app.now - 1e-9)
            })
            .map(|s| s.r_await);
        let window_await = h
            .and_then(|h| means(h.points().iter().filter(|q| q.start() >= from - 1e-9)))
            .map(|m| m.r_await);
        out.push((
            row(
                "ms",
                ["n", "p50", "p99", "max"].map(String::from),
                wide.then(|| "r_await".into()),
            ),
            theme.heading(),
        ));
        out.push((
            row(
                &fmt_interval(app.interval),
                cells(now),
                wide.then(|| opt(last_await)),
            ),
            Style::new(),
        ));
        out.push((
            row(
                &format!("{WINDOW_SECS:.0}s"),
                cells(window),
                wide.then(|| opt(window_await)),
            ),
            Style::new(),
        ));
    }
    if let Some(e) = current.and_then(|q| q.error.as_deref()) {
        let text = format!("probe: {e}");
        for l in wrap(&text, width, ERROR_LINES) {
            out.push((l, theme.error()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_and_marks_what_is_left_out() {
        assert_eq!(
            wrap("cannot open /dev/sda for reading: Permission denied", 20, 3),
            vec!["cannot open /dev/sda", "for reading:", "Permission denied"]
        );
        assert_eq!(
            wrap("a b c d e f", 3, 2),
            vec!["a b".to_string(), "c …".to_string()]
        );
        assert_eq!(wrap("abcdefgh", 4, 2), vec!["abc…"]);
        assert!(wrap("", 10, 2).is_empty());
        for l in wrap("read at offset 123456789 failed: Input/output error", 12, 9) {
            assert!(l.chars().count() <= 12, "{l}");
        }
    }

    #[test]
    fn rows_fit_the_narrowest_side_panel() {
        // The side panel is 33 columns at 80x24: no r_await there.
        let r = row(
            "100ms",
            ["6000", "99.99", "12.3", "12k"].map(String::from),
            None,
        );
        assert!(r.chars().count() <= 33, "{r}");
        let r = row(
            "250ms",
            ["6000", "99.99", "12.3", "12k"].map(String::from),
            Some("1234".into()),
        );
        assert_eq!(r.chars().count(), NARROW_W + AWAIT_W, "{r}");
        assert_eq!(
            row(
                "ms",
                ["n", "p50", "p99", "max"].map(String::from),
                Some("r_await".into())
            ),
            "ms       n   p50   p99   max r_await"
        );
        for l in heading(100.0, false, 33) {
            assert!(l.chars().count() <= 33, "{l}");
        }
        assert_eq!(
            heading(5.0, false, 33),
            [
                "probe: 5.0/s direct 4 KiB reads",
                "above the block layer (in r/s)"
            ]
        );
        assert_eq!(heading(5.0, false, 80).len(), 1);
    }

    #[test]
    fn a_few_reads_show_their_count_median_and_max_but_no_p99() {
        let few = ProbeFigures {
            n: 5,
            p50: Some(0.4),
            p99: None,
            max: Some(1.5),
        };
        assert_eq!(row("1s", cells(few), None), "1s       5  0.40     -  1.50");
        let none = ProbeFigures::default();
        assert_eq!(row("1s", cells(none), None), "1s       0     -     -     -");
    }
}
