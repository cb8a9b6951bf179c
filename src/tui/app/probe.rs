//! The latency probe's side of the app state (`--probe`): which device the
//! source probes, and a short history of the probe's reads per device on
//! the same clock as the diskstats samples, so that the detail pane can set
//! the tail an application sees next to the averages, and a change's
//! before/after table can show what happened to the tail.
//!
//! Pure: the reads come in as [`ProbeSample`]s; a window's figures are
//! pooled from all of its reads ([`probe_window`]), never averaged from
//! per-interval percentiles, and carry the count they rest on.

use super::{App, KEEP_SECS, StatusKind};
use crate::tui::worker::protocol::{Control, LiveControl, ProbeSample};
use blktune_core::probe::{ProbeFigures, ProbeReads};
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
    /// The latency of each of the interval's reads.
    pub lat: ProbeReads,
    /// The last error of the interval (cannot open, read failed).
    pub error: Option<String>,
}

impl ProbePoint {
    /// When the interval started.
    pub fn start(&self) -> f64 {
        self.t - self.itv
    }

    /// The interval's own figures (a few reads: no p99).
    pub fn figures(&self) -> ProbeFigures {
        self.lat.figures()
    }
}

/// The figures of all the reads of a window of intervals, pooled; `n` is 0
/// when the window has no read.
pub fn probe_window<'a>(points: impl IntoIterator<Item = &'a ProbePoint>) -> ProbeFigures {
    ProbeReads::pool(points.into_iter().map(|p| &p.lat)).figures()
}

/// The probe's pooled figures before and after a change at `at`, with the
/// same windows as [`blktune_core::history::compare`]: before = intervals
/// that ended at or before `at`, back to `window` seconds or the previous
/// change; after = intervals that started at or after `at`, up to the next
/// change. The interval that straddles the change belongs to neither.
pub fn compare_probe(
    points: &VecDeque<ProbePoint>,
    at: f64,
    window: f64,
    prev_t: Option<f64>,
    next_t: Option<f64>,
) -> (ProbeFigures, ProbeFigures) {
    let from = prev_t.map_or(at - window, |p| p.max(at - window));
    let before = probe_window(
        points
            .iter()
            .filter(|p| p.t <= at + 1e-9 && p.start() >= from - 1e-9),
    );
    let after = probe_window(
        points
            .iter()
            .filter(|p| p.start() >= at - 1e-9 && next_t.is_none_or(|n| p.t <= n + 1e-9)),
    );
    (before, after)
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
    pub fn push(&mut self, probe_sample: &ProbeSample) {
        for (name, st) in &probe_sample.stats {
            let h = self.history.entry(name.clone()).or_default();
            h.push_back(ProbePoint {
                t: probe_sample.t,
                itv: probe_sample.itv,
                reads: st.reads,
                reads_per_sec: st.reads_per_sec,
                errors: st.errors,
                lat: st.reads_ns.clone(),
                error: st.error.clone(),
            });
            while h.front().is_some_and(|f| f.t < probe_sample.t - KEEP_SECS) {
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
        // It reads the selected device: with none, it would read nothing.
        if self.selected_device().is_none() {
            self.say(StatusKind::Error, self.no_selection());
            return Vec::new();
        }
        self.enable_probe(self.probe_rate);
        let dev = self.selected.as_deref().unwrap_or("the selected device");
        let msg = format!(
            "probe on: {:.1} read-only direct 4 KiB reads/s of {dev} above the block layer (in its r/s)",
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

    pub(super) fn on_probe(&mut self, probe_sample: &ProbeSample) {
        let Some(p) = self.probe.as_mut() else {
            return;
        };
        // (Devices gone from the machine lose their history in on_snapshot.)
        p.push(probe_sample);
    }

    /// The probe's pooled figures before and after the `index`-th change of
    /// `name`, as the before/after table shows them; `None` when the probe
    /// is off.
    pub fn probe_compare(&self, name: &str, index: usize) -> Option<(ProbeFigures, ProbeFigures)> {
        let p = self.probe.as_ref()?;
        let marks = self.marks.get(name)?;
        let m = marks.get(index)?;
        let Some(points) = p.history.get(name) else {
            return Some(Default::default());
        };
        let prev = index.checked_sub(1).map(|j| marks[j].t);
        let next = marks.get(index + 1).map(|n| n.t);
        Some(compare_probe(points, m.t, super::BEFORE_WINDOW, prev, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blktune_core::probe::ProbeStats;
    use std::collections::BTreeMap;

    /// An interval ending at `at` whose reads took these ms.
    fn pt(at: f64, ms: &[u64]) -> ProbePoint {
        ProbePoint {
            t: at,
            itv: 1.0,
            reads: ms.len() as u64,
            reads_per_sec: ms.len() as f64,
            errors: 0,
            lat: ProbeReads::from_ns(ms.iter().map(|v| v * 1_000_000).collect()),
            error: None,
        }
    }

    #[test]
    fn a_window_is_the_percentiles_of_all_its_reads_not_a_mean_of_intervals() {
        // 30 intervals of 5 reads: 1..=4 ms and one slow read, 10 ms in
        // most of them and 50 ms in three. The mean of the intervals' p99
        // (their slowest read) would be 14 ms; the pooled p99 of the 150
        // reads is 50 ms (the three slowest are 2 % of them).
        let pts: Vec<ProbePoint> = (1..=30)
            .map(|i| pt(i as f64, &[1, 2, 3, 4, if i % 10 == 0 { 50 } else { 10 }]))
            .collect();
        let w = probe_window(&pts);
        assert_eq!(w.n, 150);
        assert_eq!(w.p99, Some(50.0));
        assert_eq!(w.p50, Some(3.0));
        assert_eq!(w.max, Some(50.0));
        // Intervals without reads add nothing.
        let mut gaps = pts.clone();
        gaps.push(pt(31.0, &[]));
        assert_eq!(probe_window(&gaps), w);
        assert_eq!(probe_window(&[]), ProbeFigures::default());
    }

    #[test]
    fn a_window_of_fewer_than_100_reads_has_no_p99() {
        let pts: Vec<ProbePoint> = (1..=19).map(|i| pt(i as f64, &[1, 2, 3, 4, 9])).collect();
        let w = probe_window(&pts);
        assert_eq!((w.n, w.p99, w.max), (95, None, Some(9.0)));
        assert_eq!(w.p50, Some(3.0));
    }

    #[test]
    fn before_and_after_a_change_use_the_history_windows() {
        // 40 reads/s; 10 ms at the tail up to t=5, then 1 ms; a change at
        // 4.5 (the interval (4,5] straddles it and belongs to neither).
        let reads = |tail: u64| {
            let mut v = vec![1; 39];
            v.push(tail);
            v
        };
        let pts: VecDeque<ProbePoint> = (1..=10)
            .map(|i| pt(i as f64, &reads(if i > 5 { 1 } else { 10 })))
            .collect();
        let (b, a) = compare_probe(&pts, 4.5, 60.0, None, None);
        assert_eq!((b.n, b.p99, b.max), (160, Some(10.0), Some(10.0)));
        assert_eq!((a.n, a.p99, a.max), (200, Some(1.0), Some(1.0)));
        // A later change ends "after"; a previous one starts "before".
        let (b, a) = compare_probe(&pts, 4.5, 60.0, Some(2.0), Some(7.0));
        assert_eq!((b.n, a.n), (80, 80));
        assert_eq!((b.p99, a.p99), (None, None), "under 100 reads each");
        // The window limits "before" too.
        assert_eq!(compare_probe(&pts, 4.5, 2.0, None, None).0.n, 40);
        // No probe data after the change yet.
        assert_eq!(compare_probe(&pts, 10.0, 60.0, None, None).1.n, 0);
    }

    #[test]
    fn state_keeps_a_bounded_history_with_errors() {
        let mut st = ProbeState::new(5.0);
        let stats = |lat: Option<u64>, err: Option<&str>| {
            BTreeMap::from([(
                "sda".to_string(),
                ProbeStats {
                    reads: u64::from(lat.is_some()),
                    reads_per_sec: 5.0,
                    errors: u64::from(err.is_some()),
                    reads_ns: ProbeReads::from_ns(lat.into_iter().collect()),
                    error: err.map(String::from),
                },
            )])
        };
        for i in 0..1000 {
            st.push(&ProbeSample {
                t: i as f64,
                itv: 1.0,
                stats: stats(Some(500_000), None),
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
        assert_eq!((last.figures().n, last.errors), (0, 1));
        assert!(st.latest("sdb").is_none());
    }
}
