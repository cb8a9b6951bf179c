//! The kernel latency's side of the app state: whether the source traces
//! (and why not), and per device a bounded history of each interval's
//! compact histograms on the snapshots' clock.
//!
//! Windows (before and after a change, a chart's column) are pooled by
//! summing their histograms, never by averaging percentiles; a percentile
//! is only stated with the number of I/Os it rests on, a p99 from fewer
//! than [`MIN_IOS_FOR_P99`] I/Os not at all, and a percent change only
//! between windows of enough I/Os and intervals ([`delta_of`]).

use super::{App, BEFORE_WINDOW, KEEP_SECS, SHORT_POINTS};
use crate::tui::status::StatusKind;
use crate::tui::worker::latency::{DeviceLatency, KEPT, LatencyFeed, LatencySample};
use blktune_core::before_after::Series;
use blktune_core::compare::Metric;
use blktune_core::device::BlockDevice;
use blktune_core::history::{ChangeWindows, Delta, Side, delta_of};
use blktune_core::latency::Pool;
use blktune_core::latency::{
    Dir, MIN_IOS_FOR_P99, MIN_IOS_FOR_P999, Percentiles, Span, Summary, no_device_span_note,
};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// Most intervals kept per device, whatever the interval: 10 minutes at
/// 1 s, 5 minutes at 100 ms (a busy interval's histograms take a few KiB).
pub const MAX_LATENCY_POINTS: usize = 3000;

/// Whether the kernel's percentiles are there.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Tracing {
    /// The source said nothing (yet, or a test feed): no column, no words.
    #[default]
    Unknown,
    /// The BPF program runs.
    On,
    /// No percentiles, and why in a few words (`not root`, `--no-bpf`).
    Off(String),
}

/// One interval of one device.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyPoint {
    /// End of the interval (the snapshot's clock).
    pub t: f64,
    pub itv: f64,
    /// Its histograms (none of a direction: no I/O of it); shared, so a
    /// history is handed out without copying them.
    pub dev: Arc<DeviceLatency>,
}

impl LatencyPoint {
    /// When the interval started.
    pub fn start(&self) -> f64 {
        self.t - self.itv
    }
}

/// An interval without I/O.
static IDLE: DeviceLatency = DeviceLatency {
    diskseq: None,
    hists: BTreeMap::new(),
};

/// Ticks between two prunings of every traced device's kept intervals
/// (a busy device's are pruned as they come): bounds what an idle device
/// keeps of its last busy minutes.
const PRUNE_EVERY: usize = 64;

/// One device the source traces.
#[derive(Debug, Clone)]
struct Traced {
    /// The device its intervals are of (another under the same name has
    /// another diskseq).
    diskseq: Option<u64>,
    /// End of its first traced interval.
    since: f64,
    /// Intervals that ended before this may have lost their I/O to pruning
    /// (the device kept less history then): not part of its history.
    floor: f64,
    /// Its intervals with I/O, oldest first.
    busy: VecDeque<LatencyPoint>,
}

impl Traced {
    /// Drop what is older than `keep` seconds before `t`, or beyond
    /// [`MAX_LATENCY_POINTS`].
    fn prune(&mut self, t: f64, keep: f64) {
        self.floor = self.floor.max(t - keep);
        while self.busy.len() > MAX_LATENCY_POINTS
            || self.busy.front().is_some_and(|f| f.t < self.floor)
        {
            self.busy.pop_front();
        }
    }
}

/// The kernel latency as the app sees it.
///
/// A traced device's history is every traced interval from its first on,
/// with the device's histograms where it did I/O and none where it did not.
/// Stored sparsely: the intervals once (`ticks`), and per
/// device only those with I/O, so a tick costs the devices that did I/O,
/// not every device (a thousand idle ones were a tenth of the screen's
/// idle cost).
#[derive(Debug, Clone, Default)]
pub struct LatencyState {
    pub tracing: Tracing,
    /// Every traced interval (end, length), oldest first.
    ticks: VecDeque<(f64, f64)>,
    /// The devices traced, by name.
    traced: HashMap<String, Traced>,
    /// Ticks since every device's intervals were last pruned.
    unpruned: usize,
    /// Completions the kernel could not count since tracing started (of
    /// any device: the counts and percentiles may be short by as many).
    pub lost: u64,
    /// The issue program could not be attached: no device span where the
    /// kernel does not time the issue.
    pub no_device_span: bool,
    /// The device list the traced devices were last taken from (gone and
    /// replaced devices dropped, new ones added): again when it changes.
    pruned_for: Option<Arc<Vec<BlockDevice>>>,
}

impl LatencyState {
    /// The newest interval of a device, if it ended at `now` (the last
    /// snapshot) and the device was traced in it.
    pub fn current(&self, name: &str, now: f64) -> Option<&DeviceLatency> {
        let tr = self.traced.get(name)?;
        let &(t, _) = self.ticks.back()?;
        if t < now - 1e-9 || t < tr.since {
            return None;
        }
        Some(match tr.busy.back() {
            Some(p) if p.t == t => &p.dev,
            _ => &IDLE,
        })
    }

    /// A device's history of the last `keep` seconds, oldest first; `None`
    /// when it is not traced.
    pub fn points(&self, name: &str, keep: f64) -> Option<VecDeque<LatencyPoint>> {
        let tr = self.traced.get(name)?;
        let &(last, _) = self.ticks.back()?;
        let from = tr.since.max(tr.floor).max(last - keep);
        let idle = Arc::new(IDLE.clone());
        let mut busy = tr.busy.iter().peekable();
        let mut out: VecDeque<LatencyPoint> = (self.ticks.iter())
            .filter(|(t, _)| *t >= from)
            .map(|&(t, itv)| {
                while busy.next_if(|p| p.t < t).is_some() {}
                let dev = match busy.next_if(|p| p.t == t) {
                    Some(p) => Arc::clone(&p.dev),
                    None => Arc::clone(&idle),
                };
                LatencyPoint { t, itv, dev }
            })
            .collect();
        while out.len() > MAX_LATENCY_POINTS {
            out.pop_front();
        }
        Some(out)
    }

    /// No device has an interval.
    pub fn is_empty(&self) -> bool {
        self.ticks.is_empty() || self.traced.is_empty()
    }

    /// Forget every interval, the lost count and `no dev span` (tracing
    /// stopped, or a replay refeeds from an earlier point).
    pub fn clear(&mut self) {
        self.ticks.clear();
        self.traced.clear();
        self.pruned_for = None;
        self.lost = 0;
        self.no_device_span = false;
    }

    /// Take the traced devices from the device list: gone, emptied and
    /// replaced ones lose their history, new ones start at the interval
    /// ending at `t`. Only devices with a request queue are traced (the
    /// others show `-`, never a count of 0).
    fn track(&mut self, devs: &Arc<Vec<BlockDevice>>, t: f64) {
        let traced: HashMap<&str, &BlockDevice> = (devs.iter())
            .filter(|d| d.size_bytes > 0 && d.queue.has_scheduler())
            .map(|d| (d.name.as_str(), d))
            .collect();
        self.traced.retain(|name, tr| {
            traced
                .get(name.as_str())
                .is_some_and(|d| d.diskseq == tr.diskseq)
        });
        for (name, d) in traced {
            if !self.traced.contains_key(name) {
                let tr = Traced {
                    diskseq: d.diskseq,
                    since: t,
                    floor: t,
                    busy: VecDeque::new(),
                };
                self.traced.insert(name.to_string(), tr);
            }
        }
        self.pruned_for = Some(Arc::clone(devs));
    }
}

/// Which percentile a row shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantile {
    P50,
    P99,
    P999,
}

impl Quantile {
    /// Fewest I/Os for the value to be stated (p50: any; its percent change
    /// needs [`MIN_IOS_FOR_P99`] like the others).
    pub fn min_ios(self) -> u64 {
        match self {
            Quantile::P50 => 1,
            Quantile::P99 => MIN_IOS_FOR_P99,
            Quantile::P999 => MIN_IOS_FOR_P999,
        }
    }

    /// The value of this percentile, in ms.
    pub fn of(self, p: &Percentiles) -> f64 {
        match self {
            Quantile::P50 => p.p50,
            Quantile::P99 => p.p99,
            Quantile::P999 => p.p999,
        }
    }
}

/// A window's pooled histograms (one per [`KEPT`] span and direction) and
/// the per-interval spread of each percentile.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// Intervals in the window (traced, with or without I/O).
    pub intervals: usize,
    /// Seconds covered.
    pub secs: f64,
    /// The percentiles of the pooled histograms, per span and direction.
    pooled: Summary,
    /// Per [`KEPT`] entry, the values of each interval with enough I/Os
    /// for p50, p99, p99.9.
    per_interval: [[Vec<f64>; 3]; 4],
}

fn kept_index(span: Span, dir: Dir) -> Option<usize> {
    KEPT.iter().position(|k| *k == (span, dir))
}

const QS: [Quantile; 3] = [Quantile::P50, Quantile::P99, Quantile::P999];

/// Population standard deviation (0 for fewer than two values).
fn stddev(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt()
}

impl Window {
    /// Pool the points; `None` when there are none.
    pub fn of<'a>(points: impl IntoIterator<Item = &'a LatencyPoint>) -> Option<Self> {
        let mut pools: [Pool; 4] = Default::default();
        let mut per_interval: [[Vec<f64>; 3]; 4] = Default::default();
        let (mut intervals, mut secs) = (0, 0.0);
        for p in points {
            intervals += 1;
            secs += p.itv;
            for (i, k) in KEPT.iter().enumerate() {
                let Some(c) = p.dev.hists.get(k) else {
                    continue;
                };
                pools[i].add(c);
                let mut one = Pool::default();
                one.add(c);
                if let Some(pc) = Percentiles::of(&one.hist()) {
                    for (j, q) in QS.iter().enumerate() {
                        if pc.n >= q.min_ios() {
                            per_interval[i][j].push(q.of(&pc));
                        }
                    }
                }
            }
        }
        let hists = pools.map(|p| p.hist());
        let pooled = Summary::of(KEPT.iter().zip(&hists).map(|(&(s, d), h)| (s, d, h)));
        (intervals > 0).then_some(Self {
            intervals,
            secs,
            pooled,
            per_interval,
        })
    }

    /// The pooled percentiles; `None` without I/O.
    pub fn percentiles(&self, span: Span, dir: Dir) -> Option<&Percentiles> {
        self.pooled.get(span, dir)
    }

    /// The pooled percentiles of every span and direction, as the engine's
    /// texts take them (the rule file's measured comment).
    pub fn summary(&self) -> &Summary {
        &self.pooled
    }

    /// Number of I/Os of a span and direction.
    pub fn count(&self, span: Span, dir: Dir) -> u64 {
        self.percentiles(span, dir).map_or(0, |p| p.n)
    }

    /// The pooled value of `q`, when it rests on enough I/Os.
    pub fn value(&self, span: Span, dir: Dir, q: Quantile) -> Option<f64> {
        let p = self.percentiles(span, dir)?;
        (p.n >= q.min_ios()).then(|| q.of(p))
    }

    /// One of the kernel's figures over the window, for the comparison
    /// engine: the pooled percentile (when it rests on enough I/Os), the
    /// values of the intervals that had enough for it, the I/Os.
    pub fn series(&self, metric: Metric) -> Option<Series> {
        let (span, dir) = metric.kernel_io()?;
        let q = match metric {
            Metric::KRP50 | Metric::KWP50 => Quantile::P50,
            Metric::KRP999 | Metric::KWP999 => Quantile::P999,
            _ => Quantile::P99,
        };
        let value = self.value(span, dir, q)?;
        let i = kept_index(span, dir)?;
        let j = QS.iter().position(|x| *x == q)?;
        Some(Series {
            value,
            per_interval: self.per_interval[i][j].clone(),
            ios: Some(self.count(span, dir)),
        })
    }

    /// The window as one side of [`delta_of`]; `None` under
    /// [`MIN_IOS_FOR_P99`] I/Os (or the percentile's own minimum).
    fn side(&self, span: Span, dir: Dir, q: Quantile) -> Option<Side> {
        let p = self.percentiles(span, dir)?;
        if p.n < q.min_ios().max(MIN_IOS_FOR_P99) {
            return None;
        }
        let i = kept_index(span, dir)?;
        let j = QS.iter().position(|x| *x == q)?;
        Some(Side {
            value: q.of(p),
            spread: stddev(&self.per_interval[i][j]),
            intervals: self.intervals,
        })
    }
}

/// How a latency figure moved between two windows; `None` when a window
/// has too few I/Os for a percent (the table says `few`).
pub fn latency_delta(
    before: &Window,
    after: &Window,
    span: Span,
    dir: Dir,
    q: Quantile,
) -> Option<Delta> {
    Some(delta_of(
        before.side(span, dir, q)?,
        after.side(span, dir, q)?,
    ))
}

/// Before and after a change at `t`, with the windows of
/// [`blktune_core::history::compare`] ([`ChangeWindows`]).
pub fn compare_windows(
    points: &VecDeque<LatencyPoint>,
    t: f64,
    window: f64,
    prev_t: Option<f64>,
    next_t: Option<f64>,
) -> (Option<Window>, Option<Window>) {
    let w = ChangeWindows::new(t, window, prev_t, next_t);
    let before = Window::of(points.iter().filter(|p| w.before(p.start(), p.t)));
    let after = Window::of(points.iter().filter(|p| w.after(p.start(), p.t)));
    (before, after)
}

impl App {
    /// Take what the source says about tracing.
    pub fn on_latency(&mut self, f: LatencyFeed) {
        match f {
            LatencyFeed::Tracing => self.latency.tracing = Tracing::On,
            LatencyFeed::Unavailable(why) => {
                self.latency.tracing = Tracing::Off(why);
                self.latency.clear();
            }
            LatencyFeed::Sample(s) => self.push_latency(s),
            // Said once (a replay repeats it with every frame after it).
            LatencyFeed::NoDeviceSpan(why) => {
                if !std::mem::replace(&mut self.latency.no_device_span, true) {
                    self.say(StatusKind::Error, no_device_span_note(&why));
                }
            }
        }
    }

    fn push_latency(&mut self, s: LatencySample) {
        self.latency.lost = self.latency.lost.saturating_add(s.lost);
        if !(self.latency.pruned_for.as_ref()).is_some_and(|p| Arc::ptr_eq(p, &self.devices)) {
            let devs = Arc::clone(&self.devices);
            self.latency.track(&devs, s.t);
        }
        let all_long = self.all_keep_long();
        // The longest any device keeps.
        let longest = KEEP_SECS.max(SHORT_POINTS * self.interval.as_secs_f64());
        let ticks = &mut self.latency.ticks;
        ticks.push_back((s.t, s.itv));
        while ticks.len() > MAX_LATENCY_POINTS || ticks.front().is_some_and(|f| f.0 < s.t - longest)
        {
            ticks.pop_front();
        }
        // The devices that did I/O (an interval of the device the app
        // knows under that name).
        for (name, dev) in s.devices {
            let keep = self.keep_secs(&name, all_long);
            let Some(tr) = self.latency.traced.get_mut(&name) else {
                continue;
            };
            if dev.diskseq != tr.diskseq {
                continue;
            }
            tr.busy.push_back(LatencyPoint {
                t: s.t,
                itv: s.itv,
                dev: Arc::new(dev),
            });
            tr.prune(s.t, keep);
        }
        self.latency.unpruned += 1;
        if self.latency.unpruned >= PRUNE_EVERY {
            self.latency.unpruned = 0;
            // Taken out for the sweep: each device's keep asks the app.
            let mut traced = std::mem::take(&mut self.latency.traced);
            for (name, tr) in &mut traced {
                tr.prune(s.t, self.keep_secs(name, all_long));
            }
            self.latency.traced = traced;
        }
    }

    /// A device's latency history as the app keeps it (the selected and
    /// changed devices long, the others short at a thousand devices),
    /// oldest first; `None` when the device is not traced.
    pub fn latency_points(&self, name: &str) -> Option<VecDeque<LatencyPoint>> {
        let keep = self.keep_secs(name, self.all_keep_long());
        self.latency.points(name, keep)
    }

    /// The newest interval's read (total) percentiles of a device for the
    /// table: `None` when untraced (no tracing, no request queue, or no
    /// interval yet); `Some(None)` when traced without reads.
    pub fn latency_now(&self, name: &str, dir: Dir) -> Option<Option<Percentiles>> {
        let p = self.latency.current(name, self.now)?;
        Some(p.get(Span::Total, dir).and_then(|c| {
            let mut pool = Pool::default();
            pool.add(c);
            Percentiles::of(&pool.hist())
        }))
    }

    /// Pooled latency before and after the `i`-th change of `name`; `None`
    /// when the device has no latency history.
    pub fn latency_compare(
        &self,
        name: &str,
        i: usize,
    ) -> Option<(Option<Window>, Option<Window>)> {
        let points = self.latency_points(name)?;
        let marks = self.marks.get(name)?;
        let m = marks.get(i)?;
        let prev = i.checked_sub(1).map(|j| marks[j].t);
        let next = marks.get(i + 1).map(|n| n.t);
        Some(compare_windows(&points, m.t, BEFORE_WINDOW, prev, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blktune_core::latency::SparseHist;
    use blktune_core::latency::hist::Hist;
    use std::collections::BTreeMap;

    /// An interval with `n` reads of `ms` each, plus `slow` reads of 50 ms.
    fn point(t: f64, n: u64, ms: f64, slow: u64) -> LatencyPoint {
        let mut h = Hist::empty();
        for _ in 0..n {
            h.record((ms * 1e6) as u64);
        }
        for _ in 0..slow {
            h.record(50_000_000);
        }
        let mut dev = Hist::empty();
        for _ in 0..n + slow {
            dev.record(500_000);
        }
        LatencyPoint {
            t,
            itv: 1.0,
            dev: DeviceLatency {
                diskseq: Some(1),
                hists: BTreeMap::from([
                    ((Span::Total, Dir::Read), SparseHist::from(&h)),
                    ((Span::Device, Dir::Read), SparseHist::from(&dev)),
                ]),
            }
            .into(),
        }
    }

    #[test]
    fn a_window_pools_histograms_and_never_averages_percentiles() {
        // 9 intervals of 100 fast reads and one with 20 slow ones among 100:
        // 2% of all reads are slow, so the pooled p99 is a slow read.
        let mut pts: Vec<LatencyPoint> = (1..=9).map(|i| point(i as f64, 100, 1.0, 0)).collect();
        pts.push(point(10.0, 80, 1.0, 20));
        let w = Window::of(&pts).unwrap();
        assert_eq!(w.intervals, 10);
        assert_eq!(w.count(Span::Total, Dir::Read), 1000);
        let p99 = w.value(Span::Total, Dir::Read, Quantile::P99).unwrap();
        // The mean of the intervals' p99s would be (9 * 1 + 50) / 10 = 5.9 ms.
        assert!(p99 > 45.0, "{p99}");
        assert!((w.value(Span::Total, Dir::Read, Quantile::P50).unwrap() - 1.0).abs() < 0.02);
        // p99.9 needs 1000 I/Os: here it has them, and it is a slow read.
        assert!(w.value(Span::Total, Dir::Read, Quantile::P999).unwrap() > 45.0);
        // The device span is kept apart.
        let dev99 = w.value(Span::Device, Dir::Read, Quantile::P99).unwrap();
        assert!((dev99 - 0.5).abs() < 0.01, "{dev99}");
        assert_eq!(w.count(Span::Total, Dir::Write), 0);
        assert!(Window::of(&[]).is_none());
    }

    #[test]
    fn few_ios_give_a_count_and_no_percent() {
        let few: Vec<LatencyPoint> = (1..=5).map(|i| point(i as f64, 10, 2.0, 0)).collect();
        let many: Vec<LatencyPoint> = (6..=10).map(|i| point(i as f64, 150, 1.0, 0)).collect();
        let (b, a) = (Window::of(&few).unwrap(), Window::of(&many).unwrap());
        assert_eq!(b.count(Span::Total, Dir::Read), 50);
        assert_eq!(b.value(Span::Total, Dir::Read, Quantile::P99), None);
        assert!(b.value(Span::Total, Dir::Read, Quantile::P50).is_some());
        // Under 100 I/Os: no percent, even for the p50.
        assert_eq!(
            latency_delta(&b, &a, Span::Total, Dir::Read, Quantile::P50),
            None
        );
        // p99.9 under 1000 I/Os: no value.
        assert_eq!(a.value(Span::Total, Dir::Read, Quantile::P999), None);
        assert_eq!(
            latency_delta(&a, &a, Span::Total, Dir::Read, Quantile::P999),
            None
        );
    }

    #[test]
    fn deltas_follow_the_history_rules() {
        let slow: Vec<LatencyPoint> = (1..=5).map(|i| point(i as f64, 200, 4.0, 0)).collect();
        let fast: Vec<LatencyPoint> = (6..=10).map(|i| point(i as f64, 200, 1.0, 0)).collect();
        let (b, a) = (Window::of(&slow).unwrap(), Window::of(&fast).unwrap());
        let d = latency_delta(&b, &a, Span::Total, Dir::Read, Quantile::P99).unwrap();
        assert!(
            matches!(d, Delta::Pct(p) if (p + 75.0).abs() < 2.0),
            "{d:?}"
        );
        // The same figure both sides: noise, marked `~`.
        let d = latency_delta(&b, &b, Span::Total, Dir::Read, Quantile::P50).unwrap();
        assert_eq!(d.label(), "~+0%");
        // Fewer than MIN_INTERVALS intervals: no percent.
        let short = Window::of(&fast[..2]).unwrap();
        assert_eq!(
            latency_delta(&b, &short, Span::Total, Dir::Read, Quantile::P99),
            Some(Delta::TooShort)
        );
        // A move inside the intervals' own swing is noise.
        let swing: Vec<LatencyPoint> = (1..=6)
            .map(|i| point(i as f64, 200, if i % 2 == 0 { 1.0 } else { 8.0 }, 0))
            .collect();
        let steady: Vec<LatencyPoint> = (7..=12).map(|i| point(i as f64, 200, 6.0, 0)).collect();
        let d = latency_delta(
            &Window::of(&swing).unwrap(),
            &Window::of(&steady).unwrap(),
            Span::Total,
            Dir::Read,
            Quantile::P99,
        )
        .unwrap();
        assert!(matches!(d, Delta::Noise(_)), "{d:?}");
    }

    #[test]
    fn windows_are_those_of_the_before_after_table() {
        let pts: VecDeque<LatencyPoint> = (1..=10)
            .map(|i| point(i as f64, 100, if i > 5 { 1.0 } else { 4.0 }, 0))
            .collect();
        // The interval (4, 5] straddles a change at 4.5: in neither window.
        let (b, a) = compare_windows(&pts, 4.5, 60.0, None, None);
        let (b, a) = (b.unwrap(), a.unwrap());
        assert_eq!((b.intervals, a.intervals), (4, 5));
        assert!((b.value(Span::Total, Dir::Read, Quantile::P50).unwrap() - 4.0).abs() < 0.1);
        assert!((a.value(Span::Total, Dir::Read, Quantile::P50).unwrap() - 1.0).abs() < 0.1);
        // Bounded by the previous and the next change, and by the window.
        let (b, a) = compare_windows(&pts, 4.5, 60.0, Some(2.0), Some(7.0));
        assert_eq!((b.unwrap().intervals, a.unwrap().intervals), (2, 2));
        assert_eq!(
            compare_windows(&pts, 4.5, 2.0, None, None)
                .0
                .unwrap()
                .intervals,
            1
        );
        assert!(compare_windows(&pts, 10.0, 60.0, None, None).1.is_none());
    }
}
