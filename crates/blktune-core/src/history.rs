//! Per-device history of interval statistics, change marks, and the
//! before/after comparison of a change. Pure: the TUI, recordings and the
//! shoot-out all use it with their own clocks.

use crate::iostat::ExtStats;
use crate::tuner::Wanted;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One interval of one device: it ended at `t` (monotonic seconds) and lasted `itv`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub t: f64,
    pub itv: f64,
    /// `None` for an interval without data.
    pub stats: Option<ExtStats>,
}

impl Point {
    /// When the interval started.
    pub fn start(&self) -> f64 {
        self.t - self.itv
    }
}

/// A bounded history of points, oldest first.
#[derive(Debug, Clone, Default)]
pub struct DeviceHistory {
    points: VecDeque<Point>,
}

impl DeviceHistory {
    /// Append a point and drop those that ended more than `keep_secs` before it.
    pub fn push(&mut self, p: Point, keep_secs: f64) {
        self.points.push_back(p);
        while self.points.front().is_some_and(|f| f.t < p.t - keep_secs) {
            self.points.pop_front();
        }
    }

    /// All points, oldest first.
    pub fn points(&self) -> &VecDeque<Point> {
        &self.points
    }

    /// The newest point.
    pub fn last(&self) -> Option<&Point> {
        self.points.back()
    }

    /// The last `n` values of `f` (missing data as 0), oldest first, for sparklines.
    pub fn tail(&self, n: usize, f: impl Fn(&ExtStats) -> f64) -> Vec<f64> {
        let skip = self.points.len().saturating_sub(n);
        self.points
            .iter()
            .skip(skip)
            .map(|p| p.stats.as_ref().map_or(0.0, &f))
            .collect()
    }
}

/// A change to a device's settings, at a moment on the history's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeMark {
    pub device: String,
    /// Monotonic seconds on the same clock as the points.
    pub t: f64,
    /// `mq-deadline→kyber, nr_requests 256→64`
    pub label: String,
    pub before: Wanted,
    pub after: Wanted,
}

/// Means of the main figures over a window.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Means {
    /// Seconds of data in the window.
    pub secs: f64,
    pub intervals: usize,
    /// Read-count-weighted, i.e. total read ms / total reads, as iostat would
    /// print for one interval spanning the whole window.
    pub r_await: f64,
    pub w_await: f64,
    pub util: f64,
    pub r_s: f64,
    pub w_s: f64,
    pub aqu_sz: f64,
    /// How much the intervals in the window varied.
    #[serde(default)]
    pub spread: Spread,
}

/// Population standard deviation across the window's intervals of each
/// figure (awaits over the intervals that had I/O of that direction).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spread {
    pub r_await: f64,
    pub w_await: f64,
    pub util: f64,
    pub r_s: f64,
    pub w_s: f64,
    pub aqu_sz: f64,
}

/// A figure of [`Means`], for [`delta`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    RAwait,
    WAwait,
    Util,
    RS,
    WS,
    AquSz,
}

impl Figure {
    /// The mean and the per-interval spread of this figure.
    pub fn of(self, m: &Means) -> (f64, f64) {
        match self {
            Figure::RAwait => (m.r_await, m.spread.r_await),
            Figure::WAwait => (m.w_await, m.spread.w_await),
            Figure::Util => (m.util, m.spread.util),
            Figure::RS => (m.r_s, m.spread.r_s),
            Figure::WS => (m.w_s, m.spread.w_s),
            Figure::AquSz => (m.aqu_sz, m.spread.aqu_sz),
        }
    }

    /// How many I/Os a mean latency rests on in the window (`None` for the
    /// figures that are not latencies).
    pub fn ios(self, m: &Means) -> Option<u64> {
        let per_s = match self {
            Figure::RAwait => m.r_s,
            Figure::WAwait => m.w_s,
            _ => return None,
        };
        // Rates are I/Os over the window's seconds: back to a count.
        Some((per_s * m.secs).round().max(0.0) as u64)
    }
}

/// Fewest intervals on each side of a change for a percent to be stated.
pub const MIN_INTERVALS: usize = 3;

/// Fewest I/Os of a direction in each window for a percent change of its
/// mean latency (r_await, w_await). As for a p99
/// ([`crate::latency::MIN_IOS_FOR_P99`]): a handful of I/Os moves a mean by
/// tens of percent, and their spread across intervals of one or two I/Os
/// each says little.
pub const MIN_IOS_FOR_PCT: u64 = 100;

/// Differences below this many percent are noise whatever the spread
/// (the comparison engine's minimum effect, `compare::DEFAULT_MIN_EFFECT`).
pub const NOISE_FLOOR_PCT: f64 = 5.0;

/// What a before/after difference may be called.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Delta {
    /// A change of this many percent, larger than the noise.
    Pct(f64),
    /// This many percent, but inside the noise: below [`NOISE_FLOOR_PCT`] or
    /// smaller than the per-interval spread of either window.
    Noise(f64),
    /// A window has fewer than [`MIN_INTERVALS`] intervals: no percent.
    TooShort,
    /// A mean latency from fewer than [`MIN_IOS_FOR_PCT`] I/Os on a side: no
    /// percent.
    FewIos,
    /// Before was zero: no percent.
    NoBase,
}

impl Delta {
    /// The percent, only when it is more than noise.
    pub fn significant(self) -> Option<f64> {
        match self {
            Delta::Pct(p) => Some(p),
            _ => None,
        }
    }

    /// `-42%`, `~+3%` (noise), `short`, `few` or `n/a`, for tables.
    pub fn label(self) -> String {
        match self {
            Delta::Pct(p) => format!("{p:+.0}%"),
            Delta::Noise(p) => format!("~{p:+.0}%"),
            Delta::TooShort => "short".into(),
            Delta::FewIos => "few".into(),
            Delta::NoBase => "n/a".into(),
        }
    }
}

/// How `fig` moved from `before` to `after`, honestly: no percent from
/// windows shorter than [`MIN_INTERVALS`] or, for a mean latency, resting on
/// fewer than [`MIN_IOS_FOR_PCT`] I/Os, and a move smaller than the
/// intervals' own variation marked as noise.
pub fn delta(before: &Means, after: &Means, fig: Figure) -> Delta {
    if before.intervals >= MIN_INTERVALS
        && after.intervals >= MIN_INTERVALS
        && fig
            .ios(before)
            .zip(fig.ios(after))
            .is_some_and(|(b, a)| b.min(a) < MIN_IOS_FOR_PCT)
    {
        return Delta::FewIos;
    }
    let side = |m: &Means| {
        let (value, spread) = fig.of(m);
        Side {
            value,
            spread,
            intervals: m.intervals,
        }
    };
    delta_of(side(before), side(after))
}

/// One window of a figure for [`delta_of`]: its value over the window, how
/// much its intervals varied, and how many intervals it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Side {
    pub value: f64,
    /// Standard deviation of the figure across the window's intervals.
    pub spread: f64,
    pub intervals: usize,
}

/// [`delta`] of any figure (a pooled latency percentile too): no percent
/// from windows shorter than [`MIN_INTERVALS`], a move within either
/// window's spread or below [`NOISE_FLOOR_PCT`] marked as noise.
pub fn delta_of(before: Side, after: Side) -> Delta {
    if before.intervals < MIN_INTERVALS || after.intervals < MIN_INTERVALS {
        return Delta::TooShort;
    }
    let ((b, b_sd), (a, a_sd)) = ((before.value, before.spread), (after.value, after.spread));
    let Some(p) = pct_change(b, a) else {
        return Delta::NoBase;
    };
    if p.abs() < NOISE_FLOOR_PCT || (a - b).abs() <= b_sd.max(a_sd) {
        Delta::Noise(p)
    } else {
        Delta::Pct(p)
    }
}

/// Means over the points, weighting each interval by its length (and awaits
/// by the number of I/Os), so the result equals one long iostat interval.
pub fn means<'a>(points: impl IntoIterator<Item = &'a Point>) -> Option<Means> {
    let mut acc = MeansAcc::default();
    for p in points {
        acc.add(p);
    }
    acc.means()
}

/// [`means`] one point at a time, in constant memory: what a one-pass
/// reader (the summary of a recording too large to keep) accumulates per
/// window. Adding the same points in the same order gives the same result.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MeansAcc {
    secs: f64,
    n: usize,
    reads: f64,
    writes: f64,
    rd_ms: f64,
    wr_ms: f64,
    busy: f64,
    queue: f64,
    /// Per-interval spread of r_await, w_await, util, r_s, w_s, aqu_sz.
    per: [Welford; 6],
}

impl MeansAcc {
    /// Count one interval (one without data or without a length is left out).
    pub fn add(&mut self, p: &Point) {
        let Some(s) = p.stats else { return };
        if p.itv.is_nan() || p.itv <= 0.0 {
            return;
        }
        self.n += 1;
        self.secs += p.itv;
        let r = s.r_s * p.itv;
        let w = s.w_s * p.itv;
        self.reads += r;
        self.writes += w;
        self.rd_ms += s.r_await * r;
        self.wr_ms += s.w_await * w;
        self.busy += s.util * p.itv;
        self.queue += s.aqu_sz * p.itv;
        // An interval without reads says nothing about read latency.
        if s.r_s > 0.0 {
            self.per[0].add(s.r_await);
        }
        if s.w_s > 0.0 {
            self.per[1].add(s.w_await);
        }
        self.per[2].add(s.util);
        self.per[3].add(s.r_s);
        self.per[4].add(s.w_s);
        self.per[5].add(s.aqu_sz);
    }

    /// Intervals counted so far.
    pub fn intervals(&self) -> usize {
        self.n
    }

    /// The means so far; `None` before the first interval with data.
    pub fn means(&self) -> Option<Means> {
        let div = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        (self.n > 0).then(|| Means {
            secs: self.secs,
            intervals: self.n,
            r_await: div(self.rd_ms, self.reads),
            w_await: div(self.wr_ms, self.writes),
            util: div(self.busy, self.secs),
            r_s: div(self.reads, self.secs),
            w_s: div(self.writes, self.secs),
            aqu_sz: div(self.queue, self.secs),
            spread: Spread {
                r_await: self.per[0].stddev(),
                w_await: self.per[1].stddev(),
                util: self.per[2].stddev(),
                r_s: self.per[3].stddev(),
                w_s: self.per[4].stddev(),
                aqu_sz: self.per[5].stddev(),
            },
        })
    }
}

/// Running mean and sum of squared deviations (Welford's method: one pass,
/// no cancellation, exactly 0 for equal values).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Welford {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Welford {
    fn add(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    /// Population standard deviation (0 for fewer than two values).
    fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        (self.m2 / self.n as f64).max(0.0).sqrt()
    }
}

/// Before/after figures of one change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub before: Option<Means>,
    pub after: Option<Means>,
}

/// Percent change from `before` to `after`; `None` when before is zero.
pub fn pct_change(before: f64, after: f64) -> Option<f64> {
    (before.abs() > f64::EPSILON).then(|| (after - before) / before * 100.0)
}

/// Where the two windows of a change at `t` lie, on the history's clock.
///
/// Before: intervals that ended at or before `t`, back to `window` seconds or
/// the previous change (`prev_t`), whichever is later. After: intervals that
/// started at or after `t`, up to the next change (`next_t`). The interval
/// that straddles the change belongs to neither. One rule for every figure
/// of a before/after: diskstats, the kernel's histograms, the system.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangeWindows {
    /// Earliest start of a "before" interval.
    pub from: f64,
    /// The change.
    pub t: f64,
    /// Latest end of an "after" interval (`None`: up to now).
    pub until: Option<f64>,
}

impl ChangeWindows {
    /// The windows of a change at `t` (see the type's documentation).
    pub fn new(t: f64, window: f64, prev_t: Option<f64>, next_t: Option<f64>) -> Self {
        Self {
            from: prev_t.map_or(t - window, |p| p.max(t - window)),
            t,
            until: next_t,
        }
    }

    /// Is the interval `(start, end]` in the window before the change?
    pub fn before(&self, start: f64, end: f64) -> bool {
        end <= self.t + 1e-9 && start >= self.from - 1e-9
    }

    /// Is the interval `(start, end]` in the window after the change?
    pub fn after(&self, start: f64, end: f64) -> bool {
        start >= self.t - 1e-9 && self.until.is_none_or(|n| end <= n + 1e-9)
    }
}

/// Compare the window before a change at `t` with the time since it
/// ([`ChangeWindows`]).
pub fn compare(
    h: &DeviceHistory,
    t: f64,
    window: f64,
    prev_t: Option<f64>,
    next_t: Option<f64>,
) -> Comparison {
    let w = ChangeWindows::new(t, window, prev_t, next_t);
    let before = means(h.points().iter().filter(|p| w.before(p.start(), p.t)));
    let after = means(h.points().iter().filter(|p| w.after(p.start(), p.t)));
    Comparison { before, after }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(t: f64, r_s: f64, r_await: f64, util: f64) -> Point {
        Point {
            t,
            itv: 1.0,
            stats: Some(ExtStats {
                r_s,
                r_await,
                util,
                ..ExtStats::default()
            }),
        }
    }

    #[test]
    fn means_weight_awaits_by_io_count() {
        // 100 reads at 10 ms and 300 reads at 2 ms: 1600 ms / 400 = 4 ms, not 6.
        let m = means(&[pt(1.0, 100.0, 10.0, 50.0), pt(2.0, 300.0, 2.0, 100.0)]).unwrap();
        assert_eq!(m.r_await, 4.0);
        assert_eq!(m.r_s, 200.0);
        assert_eq!(m.util, 75.0);
        assert_eq!(m.secs, 2.0);
        assert!(means(&[]).is_none());
    }

    #[test]
    fn compare_splits_at_the_change_and_skips_the_straddling_interval() {
        let mut h = DeviceHistory::default();
        for i in 1..=10 {
            let fast = i > 5;
            h.push(
                pt(i as f64, 100.0, if fast { 1.0 } else { 8.0 }, 50.0),
                600.0,
            );
        }
        // Change at 4.5: interval (4,5] straddles it.
        let c = compare(&h, 4.5, 60.0, None, None);
        let (b, a) = (c.before.unwrap(), c.after.unwrap());
        assert_eq!(b.intervals, 4);
        assert_eq!(b.r_await, 8.0);
        assert_eq!(a.intervals, 5);
        assert_eq!(a.r_await, 1.0);
        assert_eq!(pct_change(b.r_await, a.r_await), Some(-87.5));
        // The window and a previous change limit "before".
        assert_eq!(
            compare(&h, 4.5, 3.0, None, None).before.unwrap().intervals,
            2
        );
        assert_eq!(
            compare(&h, 4.5, 60.0, Some(3.0), None)
                .before
                .unwrap()
                .intervals,
            1
        );
        // A later change limits "after".
        assert_eq!(
            compare(&h, 4.5, 60.0, None, Some(7.0))
                .after
                .unwrap()
                .intervals,
            2
        );
    }

    #[test]
    fn the_spread_is_the_variation_of_the_intervals() {
        let m = means(&[pt(1.0, 100.0, 4.0, 50.0), pt(2.0, 100.0, 6.0, 50.0)]).unwrap();
        assert_eq!(m.spread.r_await, 1.0);
        assert_eq!(m.spread.util, 0.0);
        // An interval without reads says nothing about read latency.
        let m = means(&[pt(1.0, 100.0, 4.0, 50.0), pt(2.0, 0.0, 0.0, 50.0)]).unwrap();
        assert_eq!(m.spread.r_await, 0.0);
    }

    #[test]
    fn the_accumulator_gives_what_means_gives_one_point_at_a_time() {
        let pts: Vec<Point> = (1..=50)
            .map(|i| {
                let i = f64::from(i);
                pt(
                    i,
                    (i * 37.0) % 11.0,
                    1.0 + (i * 13.0) % 7.0,
                    (i * 3.0) % 100.0,
                )
            })
            .collect();
        let mut acc = MeansAcc::default();
        let mut seen = Vec::new();
        for p in &pts {
            acc.add(p);
            seen.push(*p);
            assert_eq!(acc.means(), means(&seen));
        }
        let m = acc.means().unwrap();
        assert_eq!(m.intervals, 50);
        // The one-pass spread agrees with the two-pass population deviation.
        let utils: Vec<f64> = pts.iter().map(|p| p.stats.unwrap().util).collect();
        let mean = utils.iter().sum::<f64>() / 50.0;
        let sd = (utils.iter().map(|u| (u - mean).powi(2)).sum::<f64>() / 50.0).sqrt();
        assert!(
            (m.spread.util - sd).abs() < 1e-9,
            "{} vs {sd}",
            m.spread.util
        );
        assert_eq!(MeansAcc::default().means(), None);
    }

    fn window(awaits: &[f64]) -> Means {
        let pts: Vec<Point> = awaits
            .iter()
            .enumerate()
            .map(|(i, &a)| pt(i as f64 + 1.0, 100.0, a, 50.0))
            .collect();
        means(&pts).unwrap()
    }

    #[test]
    fn deltas_are_stated_only_when_they_are_more_than_noise() {
        let steady5 = window(&[5.0, 5.0, 5.0, 5.0]);
        let steady1 = window(&[1.0, 1.0, 1.0, 1.0]);
        assert_eq!(delta(&steady5, &steady1, Figure::RAwait), Delta::Pct(-80.0));
        assert_eq!(delta(&steady5, &steady1, Figure::RAwait).label(), "-80%");
        // 5 -> 5.5 with intervals swinging 2..8: inside the noise.
        let noisy = window(&[2.0, 8.0, 2.0, 8.0]);
        let d = delta(&noisy, &window(&[5.5, 5.5, 5.5, 5.5]), Figure::RAwait);
        assert_eq!(d, Delta::Noise(10.0));
        assert_eq!(d.label(), "~+10%");
        assert_eq!(d.significant(), None);
        // Below the floor, however steady.
        assert!(matches!(
            delta(&steady5, &window(&[5.1; 4]), Figure::RAwait),
            Delta::Noise(_)
        ));
        // One second before a change is no basis for +936%.
        assert_eq!(
            delta(&window(&[1.0]), &window(&[10.36; 5]), Figure::RAwait),
            Delta::TooShort
        );
        assert_eq!(
            delta(&steady5, &window(&[5.0, 5.0]), Figure::RAwait),
            Delta::TooShort
        );
        let idle = window(&[0.0, 0.0, 0.0]);
        assert_eq!(delta(&idle, &steady5, Figure::RAwait), Delta::NoBase);
        // Eight reads before, eight after: +38% of a mean of a handful.
        let few = |r_await| {
            let pts: Vec<Point> = (0..12)
                .map(|i| pt(f64::from(i) + 1.0, 0.7, r_await, 1.0))
                .collect();
            means(&pts).unwrap()
        };
        assert_eq!(Figure::RAwait.ios(&few(1.99)), Some(8));
        let d = delta(&few(1.99), &few(2.75), Figure::RAwait);
        assert_eq!(d, Delta::FewIos);
        assert_eq!(d.label(), "few");
        // The rates themselves are not latencies: their percent stands.
        assert_eq!(delta(&few(1.99), &few(2.75), Figure::RS), Delta::Noise(0.0));
        // 100 reads a side is enough.
        let enough = |r_await| {
            let pts: Vec<Point> = (0..4)
                .map(|i| pt(f64::from(i) + 1.0, 25.0, r_await, 1.0))
                .collect();
            means(&pts).unwrap()
        };
        assert_eq!(
            delta(&enough(2.0), &enough(3.0), Figure::RAwait),
            Delta::Pct(50.0)
        );
        assert_eq!(Delta::NoBase.label(), "n/a");
    }

    #[test]
    fn history_is_bounded_and_tail_fills_gaps_with_zero() {
        let mut h = DeviceHistory::default();
        for i in 0..100 {
            h.push(pt(i as f64, 1.0, 1.0, 1.0), 10.0);
        }
        assert_eq!(h.points().len(), 11);
        h.push(
            Point {
                t: 100.0,
                itv: 1.0,
                stats: None,
            },
            10.0,
        );
        assert_eq!(h.tail(3, |s| s.r_await), vec![1.0, 1.0, 0.0]);
    }
}
