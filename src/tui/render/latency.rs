//! The kernel's latency in the detail pane: a chart of p50 and p99 over
//! time, and the before/after rows of a change.
//!
//! ```text
//! r_p99     ▂▂▂         one bar per column of pooled histograms: solid up
//! 1.20ms    ▒▒▒         to the p50, shaded (▒) from there to the p99;
//! max 12.0  ▒▒▒  ▁▁▁    `n=42` for the newest interval when under 100 reads
//! p50 1.00  ███  ███
//!
//! ```
//!
//! Their rows in the before/after (pooled windows, see `Window::series`)
//! are drawn with the other figures by `before_after`; here, where a p99
//! that moved spent its time ([`share`]).

use super::chart::column;
use super::width::fit;
use super::{Theme, num, put};
use crate::tui::app::{LatencyPoint, Quantile, Window, latency_delta};
use blktune_core::latency::Pool;
use blktune_core::latency::{Dir, MIN_IOS_FOR_P99, Percentiles, Span};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use std::collections::VecDeque;

/// p50 and p99 per chart column, and the I/Os each rests on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencySeries {
    pub p50: Vec<Option<f64>>,
    /// `None` also for a column of fewer than 100 I/Os.
    pub p99: Vec<Option<f64>>,
    pub n: Vec<u64>,
    /// The newest interval on its own (what the table's p99 column shows),
    /// set by the caller; the newest column pools several intervals.
    pub last: Option<Percentiles>,
}

/// Pool the points of each of `cols` columns covering `(now - span, now]`
/// (summing their histograms) for one direction's total span.
pub fn bucket(
    points: &VecDeque<LatencyPoint>,
    now: f64,
    span: f64,
    cols: usize,
    dir: Dir,
) -> LatencySeries {
    // A pool only for a column with I/O: a column without has no
    // percentiles either way, and an idle device's chart (redrawn every
    // tick) then costs no pool of its own per column.
    let mut pools: Vec<Option<Pool>> = vec![None; cols];
    for p in points {
        let (Some(c), Some(h)) = (column(p.t, now, span, cols), p.dev.get(Span::Total, dir)) else {
            continue;
        };
        pools[c].get_or_insert_with(Pool::default).add(h);
    }
    let mut s = LatencySeries {
        p50: vec![None; cols],
        p99: vec![None; cols],
        n: vec![0; cols],
        last: None,
    };
    for (c, pool) in pools.iter().enumerate() {
        let Some(pc) = pool.as_ref().and_then(|p| Percentiles::of(&p.hist())) else {
            continue;
        };
        s.n[c] = pc.n;
        s.p50[c] = Some(pc.p50);
        s.p99[c] = pc.p99_if_enough();
    }
    let cover = super::chart::covering(points.iter().map(|p| (p.t, p.itv)), now, span, cols);
    super::chart::fill(&mut s.p50, &cover);
    super::chart::fill(&mut s.p99, &cover);
    super::chart::fill(&mut s.n, &cover);
    s
}

/// The chart: one bar per column, solid up to the p50 and shaded from
/// there to the p99 (a column under 100 I/Os has only its p50); the newest
/// figures in the gutter (`n=K` when the newest column has under 100 I/Os).
#[expect(
    clippy::too_many_arguments,
    reason = "one chart: its area, gutter, label, data, marks and two styles, as render_bars"
)]
pub fn render_chart(
    buf: &mut Buffer,
    area: Rect,
    gutter: u16,
    name: &str,
    s: &LatencySeries,
    marks: &[usize],
    style: Style,
    t: Theme,
) {
    if area.height == 0 || area.width <= gutter {
        return;
    }
    // The newest interval's p99, as in the table, when it rests on enough
    // I/Os; else the newest column with I/O says what "now" is.
    let last_p99 = s.last.filter(|p| p.n >= MIN_IOS_FOR_P99).map(|p| p.p99);
    let max = s
        .p99
        .iter()
        .chain(&s.p50)
        .flatten()
        .chain(last_p99.iter())
        .copied()
        .fold(0.0, f64::max);
    let g = (gutter - 1) as usize;
    put(buf, area.x, area.y, &fit(name, g), gutter - 1, t.heading());
    let newest = s.n.iter().rposition(|&n| n > 0);
    if area.height > 1 {
        let (now, st) = match (s.last, newest) {
            (Some(p), _) if p.n >= MIN_IOS_FOR_P99 => (super::num_unit(p.p99, "ms"), Style::new()),
            (Some(p), _) => (format!("n={}", p.n), t.dim()),
            (None, Some(c)) => match s.p99[c] {
                Some(v) => (super::num_unit(v, "ms"), Style::new()),
                None => (format!("n={}", s.n[c]), t.dim()),
            },
            (None, None) => ("-".into(), Style::new()),
        };
        put(buf, area.x, area.y + 1, &fit(&now, g), gutter - 1, st);
    }
    if area.height > 2 && newest.is_some() {
        put(
            buf,
            area.x,
            area.y + 2,
            &fit(&format!("max {}", num(max)), g),
            gutter - 1,
            t.dim(),
        );
    }
    if area.height > 3
        && let Some(v) = s.last.map(|p| p.p50).or(newest.and_then(|c| s.p50[c]))
    {
        put(
            buf,
            area.x,
            area.y + 3,
            &fit(&format!("p50 {}", num(v)), g),
            gutter - 1,
            t.dim(),
        );
    }
    const EIGHTHS: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];
    let rows = area.height as usize;
    let levels = (rows * 8) as f64;
    // Headroom above the highest bar leaves space for change markers, as in render_bars.
    let level = |v: f64| {
        if max > 0.0 {
            (v / (max * 1.25) * levels).round() as usize
        } else {
            1
        }
    };
    let x0 = area.x + gutter;
    for c in 0..s.p50.len().min((area.width - gutter) as usize) {
        let p50 = s.p50[c].map_or(0, level);
        let top = s.p99[c].map_or(p50, level).max(p50);
        for r in 0..rows {
            // r = 0 is the bottom row.
            let y = area.y + area.height - 1 - r as u16;
            let here = top.saturating_sub(r * 8).min(8);
            let glyph = if here < 8 && marks.contains(&c) {
                put(buf, x0 + c as u16, y, "│", 1, t.marker());
                continue;
            } else if here == 0 {
                continue;
            } else if here < 8 || r * 8 < p50 {
                EIGHTHS[here]
            } else {
                // Between the p50 and the p99: the tail.
                "▒"
            };
            put(buf, x0 + c as u16, y, glyph, 1, style);
        }
    }
}

/// Where a p99 that moved spent its time: the device's own p99 moved the
/// same way (the device), or stayed within its noise (the scheduler, which
/// holds requests between their start and their issue).
pub fn share(b: Option<&Window>, a: Option<&Window>, dir: Dir) -> Option<&'static str> {
    let (b, a) = (b?, a?);
    let total = latency_delta(b, a, Span::Total, dir, Quantile::P99)?.significant()?;
    let device = latency_delta(b, a, Span::Device, dir, Quantile::P99)?;
    Some(match device.significant() {
        Some(d) if d.signum() == total.signum() => "time on the device",
        _ => "time in the scheduler",
    })
}

/// The table's p99 cell: the value, `n=K` under 100 I/Os (dimmed), `-`
/// when untraced. The bool says "dim it".
pub fn p99_cell(now: Option<Option<Percentiles>>) -> (String, bool) {
    match now {
        None => ("-".into(), false),
        Some(None) => ("n=0".into(), true),
        Some(Some(p)) if p.n < MIN_IOS_FOR_P99 => (format!("n={}", p.n), true),
        Some(Some(p)) => (num(p.p99), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::worker::latency::DeviceLatency;
    use blktune_core::latency::SparseHist;
    use blktune_core::latency::hist::Hist;
    use std::collections::BTreeMap;

    fn point(t: f64, n: u64, ms: f64, dev_ms: f64) -> LatencyPoint {
        let hist = |ms: f64| {
            let mut h = Hist::empty();
            for _ in 0..n {
                h.record((ms * 1e6) as u64);
            }
            SparseHist::from(&h)
        };
        LatencyPoint {
            t,
            itv: 1.0,
            dev: DeviceLatency {
                diskseq: None,
                hists: BTreeMap::from([
                    ((Span::Total, Dir::Read), hist(ms)),
                    ((Span::Device, Dir::Read), hist(dev_ms)),
                ]),
            }
            .into(),
        }
    }

    #[test]
    fn columns_pool_their_points() {
        let pts: VecDeque<LatencyPoint> = (1..=8)
            .map(|i| point(i as f64, if i <= 4 { 60 } else { 200 }, i as f64, 0.5))
            .collect();
        let s = bucket(&pts, 8.0, 8.0, 4, Dir::Read);
        // Two points per column: 120 reads in the first two columns (a p99),
        // 400 in the last two.
        assert_eq!(s.n, vec![120, 120, 400, 400]);
        assert!(s.p99.iter().all(Option::is_some));
        let s = bucket(&pts, 8.0, 8.0, 8, Dir::Read);
        assert_eq!(s.p99[0], None);
        assert!((s.p50[0].unwrap() - 1.0).abs() < 0.02);
        assert!(s.p99[7].is_some());
    }

    #[test]
    fn the_scheduler_share_names_what_moved() {
        let slow: Vec<LatencyPoint> = (1..=5).map(|i| point(i as f64, 200, 8.0, 0.5)).collect();
        let fast: Vec<LatencyPoint> = (6..=10).map(|i| point(i as f64, 200, 1.0, 0.5)).collect();
        let dev_fast: Vec<LatencyPoint> =
            (6..=10).map(|i| point(i as f64, 200, 1.0, 0.1)).collect();
        let (s, f, d) = (
            Window::of(&slow).unwrap(),
            Window::of(&fast).unwrap(),
            Window::of(&dev_fast).unwrap(),
        );
        assert_eq!(
            share(Some(&s), Some(&f), Dir::Read),
            Some("time in the scheduler")
        );
        assert_eq!(
            share(Some(&s), Some(&d), Dir::Read),
            Some("time on the device")
        );
        assert_eq!(share(Some(&s), Some(&s), Dir::Read), None);
    }

    #[test]
    fn the_table_cell_shows_a_count_under_100_ios() {
        assert_eq!(p99_cell(None), ("-".into(), false));
        assert_eq!(p99_cell(Some(None)), ("n=0".into(), true));
        let p = Percentiles::of(&{
            let mut h = Hist::empty();
            h.record(1_000_000);
            h
        });
        assert_eq!(p99_cell(Some(p)), ("n=1".into(), true));
    }
}
