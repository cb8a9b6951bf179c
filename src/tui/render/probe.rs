//! The latency probe's block at the top of the detail pane's side panel
//! (`--probe` only; nothing at all when it is off):
//!
//! ```text
//! probe 5.0 r/s, counted in r/s        its own load, so it never misleads
//! ms       p50   p99   max r_await     the tail next to the diskstats average
//! 1s      0.21  0.95  1.20    0.18     the newest interval
//! 60s     0.20  1.10  3.40    0.19     means over the last minute (max: worst read)
//! probe: cannot open /dev/sda for      the last error, wrapped
//!   reading: Permission denied
//! ```

use super::{Theme, num};
use crate::tui::app::{App, fmt_interval, probe_means};
use blktune_core::history::means;
use ratatui::style::Style;

/// Seconds the second row averages over.
pub const WINDOW_SECS: f64 = 60.0;
/// Lines an error may take at most.
const ERROR_LINES: usize = 3;

/// One row of the table: a label and four figures.
fn row(label: &str, cells: [String; 4]) -> String {
    let [a, b, c, d] = cells;
    format!("{label:<6}{a:>6}{b:>6}{c:>6}{d:>8}")
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), num)
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
pub fn lines(app: &App, name: &str, width: usize, t: Theme) -> Vec<(String, Style)> {
    let Some(p) = &app.probe else {
        return Vec::new();
    };
    let points = p.history.get(name);
    // Only a point of the newest sample is "now"; an older one is from an
    // earlier visit to this device.
    let current = p.latest(name).filter(|q| q.t >= app.now - 1e-9);
    let mut out = Vec::new();
    let load = match current {
        Some(q) => format!("probe {:.1} r/s, counted in r/s", q.reads_per_sec),
        None => format!("probe {:.1} r/s: starting", p.rate),
    };
    out.push((load, t.heading()));
    let from = app.now - WINDOW_SECS;
    let window = points.and_then(|h| probe_means(h.iter().filter(|q| q.start() >= from - 1e-9)));
    if current.is_some_and(|q| q.p99.is_some()) || window.is_some() {
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
            row("ms", ["p50", "p99", "max", "r_await"].map(String::from)),
            t.heading(),
        ));
        out.push((
            row(
                &fmt_interval(app.interval),
                [
                    opt(current.and_then(|q| q.p50)),
                    opt(current.and_then(|q| q.p99)),
                    opt(current.and_then(|q| q.max)),
                    opt(last_await),
                ],
            ),
            Style::new(),
        ));
        out.push((
            row(
                &format!("{WINDOW_SECS:.0}s"),
                [
                    opt(window.map(|w| w.p50)),
                    opt(window.map(|w| w.p99)),
                    opt(window.map(|w| w.max)),
                    opt(window_await),
                ],
            ),
            Style::new(),
        ));
    }
    if let Some(e) = current.and_then(|q| q.error.as_deref()) {
        let text = format!("probe: {e}");
        for l in wrap(&text, width, ERROR_LINES) {
            out.push((l, t.error()));
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
        // The side panel is 33 columns at 80x24.
        let r = row("100ms", ["99.99", "12.3", "12k", "1234"].map(String::from));
        assert!(r.chars().count() <= 33, "{r}");
        assert_eq!(
            row("ms", ["p50", "p99", "max", "r_await"].map(String::from)),
            "ms       p50   p99   max r_await"
        );
    }
}
