//! The latency probe's side of the app state (`--probe`): which device the
//! source probes, and a short history of the probe's figures per device on
//! the same clock as the diskstats samples, so that the detail pane can set
//! the tail an application sees next to the averages, and a change's
//! before/after table can show what happened to the tail.
//!
//! Pure: the figures come in as [`ProbeSample`]s; the means below are
//! plain functions of a slice of points.

use super::{App, KEEP_SECS, StatusKind};
use crate::tui::worker::protocol::{Control, LiveControl, ProbeSample};
use std::collections::{HashMap, VecDeque};

/// One sample interval of the probe on one device.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbePoint {
    /// End of the interval (the snapshot's clock).
    pub t: f64,
    /// Length of the interval in seconds.
    pub itv: f64,
    /// Reads completed.
    pub reads: u64,
    /// The probe's own load on the device.
    pub reads_per_sec: f64,
    pub errors: u64,
    /// Latency percentiles (ms) of the interval's reads; `None` without reads.
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    /// The last error of the interval (cannot open, read failed).
    pub error: Option<String>,
}

impl ProbePoint {
    /// When the interval started.
    pub fn start(&self) -> f64 {
        self.t - self.itv
    }
}

/// Means of the probe's figures over a window of intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeMeans {
    /// Intervals with at least one read.
    pub intervals: usize,
    /// Mean of the intervals' medians (ms).
    pub p50: f64,
    /// Mean of the intervals' 99th percentiles (ms).
    pub p99: f64,
    /// The slowest read of the window (ms).
    pub max: f64,
}

/// Means over the points that have latencies; `None` when none has.
///
/// A plain mean of each interval's percentile, not a percentile of all the
/// reads: the probe only reports per-interval summaries. At a few reads per
/// interval the p99 is close to the interval's slowest read, which is the
/// point of a probe: the tail, not the average.
pub fn probe_means<'a>(points: impl IntoIterator<Item = &'a ProbePoint>) -> Option<ProbeMeans> {
    let (mut n, mut p50, mut p99, mut max) = (0usize, 0.0, 0.0, 0.0f64);
    for p in points {
        let (Some(a), Some(b), Some(m)) = (p.p50, p.p99, p.max) else {
            continue;
        };
        n += 1;
        p50 += a;
        p99 += b;
        max = max.max(m);
    }
    (n > 0).then(|| ProbeMeans {
        intervals: n,
        p50: p50 / n as f64,
        p99: p99 / n as f64,
        max,
    })
}

/// Mean probe p99 before and after a change at `t`, with the same windows as
/// [`blktune_core::history::compare`]: before = intervals that ended at or before
/// `t`, back to `window` seconds or the previous change; after = intervals
/// that started at or after `t`, up to the next change. The interval that
/// straddles the change belongs to neither.
pub fn compare_p99(
    points: &VecDeque<ProbePoint>,
    t: f64,
    window: f64,
    prev_t: Option<f64>,
    next_t: Option<f64>,
) -> (Option<f64>, Option<f64>) {
    let from = prev_t.map_or(t - window, |p| p.max(t - window));
    let before = probe_means(
        points
            .iter()
            .filter(|p| p.t <= t + 1e-9 && p.start() >= from - 1e-9),
    );
    let after = probe_means(
        points
            .iter()
            .filter(|p| p.start() >= t - 1e-9 && next_t.is_none_or(|n| p.t <= n + 1e-9)),
    );
    (before.map(|m| m.p99), after.map(|m| m.p99))
}

/// The probe as the app sees it; `None` in [`App::probe`] when it is off.
#[derive(Debug, Clone, Default)]
pub struct ProbeState {
    /// Configured reads per second.
    pub rate: f64,
    /// The device the source was last told to probe.
    pub target: Option<String>,
    /// Per device, oldest first, at most [`KEEP_SECS`].
    pub history: HashMap<String, VecDeque<ProbePoint>>,
}

impl ProbeState {
    /// A probe at `rate` reads per second, not pointed anywhere yet.
    pub fn new(rate: f64) -> Self {
        Self {
            rate,
            ..Self::default()
        }
    }

    /// The newest point of a device.
    pub fn latest(&self, name: &str) -> Option<&ProbePoint> {
        self.history.get(name)?.back()
    }

    /// Store one sample's figures.
    pub fn push(&mut self, s: &ProbeSample) {
        for (name, st) in &s.stats {
            let l = st.latency;
            let h = self.history.entry(name.clone()).or_default();
            h.push_back(ProbePoint {
                t: s.t,
                itv: s.itv,
                reads: st.reads,
                reads_per_sec: st.reads_per_sec,
                errors: st.errors,
                p50: l.map(|l| l.p50),
                p99: l.map(|l| l.p99),
                max: l.map(|l| l.max),
                error: st.error.clone(),
            });
            while h.front().is_some_and(|f| f.t < s.t - KEEP_SECS) {
                h.pop_front();
            }
        }
    }
}

impl App {
    /// Turn the latency probe's view on (`--probe` at `rate` reads/s).
    pub fn enable_probe(&mut self, rate: f64) {
        self.probe_rate = rate;
        self.probe = Some(ProbeState::new(rate));
    }

    /// `P`: the probe off (the source stops it and closes the device), or
    /// on at [`App::probe_rate`] (the action's answer then points it at the
    /// selected device).
    pub(super) fn toggle_probe(&mut self) -> Vec<Control> {
        if self.probe.take().is_some() {
            self.say(StatusKind::Info, "probe off");
            return vec![LiveControl::Probe(None).into()];
        }
        self.enable_probe(self.probe_rate);
        let dev = self.selected.as_deref().unwrap_or("the selected device");
        let msg = format!(
            "probe on: {:.1} read-only 4 KiB reads/s of {dev}, counted in its r/s",
            self.probe_rate
        );
        self.say(StatusKind::Info, msg);
        Vec::new()
    }

    /// The message that points the probe at the selected device, when the
    /// selection moved since the last one; `None` when the probe is off or
    /// already there. Called after every action and every batch of feeds.
    pub fn probe_control(&mut self) -> Option<Control> {
        let p = self.probe.as_mut()?;
        if self.replay.is_some() || p.target == self.selected {
            return None;
        }
        p.target.clone_from(&self.selected);
        Some(LiveControl::Probe(p.target.clone()).into())
    }

    pub(super) fn on_probe(&mut self, s: &ProbeSample) {
        let Some(p) = self.probe.as_mut() else {
            return;
        };
        // (Devices gone from the machine lose their history in on_snapshot.)
        p.push(s);
    }

    /// Mean probe p99 before and after the `i`-th change of `name`, as the
    /// before/after table shows it; `None` when the probe is off.
    pub fn probe_compare(&self, name: &str, i: usize) -> Option<(Option<f64>, Option<f64>)> {
        let p = self.probe.as_ref()?;
        let marks = self.marks.get(name)?;
        let m = marks.get(i)?;
        let Some(points) = p.history.get(name) else {
            return Some((None, None));
        };
        let prev = i.checked_sub(1).map(|j| marks[j].t);
        let next = marks.get(i + 1).map(|n| n.t);
        Some(compare_p99(points, m.t, super::BEFORE_WINDOW, prev, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blktune_core::load::LatencySummary;
    use blktune_core::probe::ProbeStats;
    use std::collections::BTreeMap;

    fn pt(t: f64, p99: Option<f64>) -> ProbePoint {
        ProbePoint {
            t,
            itv: 1.0,
            reads: u64::from(p99.is_some()) * 5,
            reads_per_sec: 5.0,
            errors: 0,
            p50: p99.map(|v| v / 4.0),
            p99,
            max: p99.map(|v| v * 2.0),
            error: None,
        }
    }

    #[test]
    fn means_skip_intervals_without_reads_and_keep_the_worst_read() {
        let pts = [pt(1.0, Some(2.0)), pt(2.0, None), pt(3.0, Some(4.0))];
        let m = probe_means(&pts).unwrap();
        assert_eq!(m.intervals, 2);
        assert_eq!(m.p99, 3.0);
        assert_eq!(m.p50, 0.75);
        assert_eq!(m.max, 8.0);
        assert!(probe_means(&[pt(1.0, None)]).is_none());
        assert!(probe_means(&[]).is_none());
    }

    #[test]
    fn p99_before_and_after_a_change_use_the_history_windows() {
        // p99 10 ms up to t=5, then 1 ms; a change at 4.5 (interval (4,5] straddles it).
        let pts: VecDeque<ProbePoint> = (1..=10)
            .map(|i| pt(i as f64, Some(if i > 5 { 1.0 } else { 10.0 })))
            .collect();
        assert_eq!(
            compare_p99(&pts, 4.5, 60.0, None, None),
            (Some(10.0), Some(1.0))
        );
        // A later change ends "after"; a previous one starts "before".
        let mixed: VecDeque<ProbePoint> = (1..=10).map(|i| pt(i as f64, Some(i as f64))).collect();
        assert_eq!(
            compare_p99(&mixed, 4.5, 60.0, Some(2.0), Some(7.0)),
            (Some(3.5), Some(6.5))
        );
        // The window limits "before" too.
        assert_eq!(compare_p99(&mixed, 4.5, 2.0, None, None).0, Some(4.0));
        // No probe data after the change yet.
        assert_eq!(compare_p99(&pts, 10.0, 60.0, None, None).1, None);
    }

    #[test]
    fn state_keeps_a_bounded_history_with_errors() {
        let mut st = ProbeState::new(5.0);
        let stats = |lat: Option<f64>, err: Option<&str>| {
            BTreeMap::from([(
                "sda".to_string(),
                ProbeStats {
                    reads: u64::from(lat.is_some()),
                    reads_per_sec: 5.0,
                    errors: u64::from(err.is_some()),
                    latency: lat.map(|v| LatencySummary {
                        count: 1,
                        p50: v,
                        p99: v,
                        max: v,
                        ..LatencySummary::default()
                    }),
                    error: err.map(String::from),
                },
            )])
        };
        for i in 0..1000 {
            st.push(&ProbeSample {
                t: i as f64,
                itv: 1.0,
                stats: stats(Some(0.5), None),
            });
        }
        assert_eq!(st.history["sda"].len(), KEEP_SECS as usize + 1);
        st.push(&ProbeSample {
            t: 1000.0,
            itv: 1.0,
            stats: stats(None, Some("cannot open /dev/sda")),
        });
        let last = st.latest("sda").unwrap();
        assert_eq!(last.error.as_deref(), Some("cannot open /dev/sda"));
        assert_eq!((last.p99, last.errors), (None, 1));
        assert!(st.latest("sdb").is_none());
    }
}
