//! The kernel's per-I/O latency as the TUI gets it: the live source's hook
//! on the tracer (one read of the BPF histograms per tick, right after the
//! diskstats sample, so both cover the same interval) and the message it
//! sends the app with each snapshot.
//!
//! Histograms travel and are kept sparse (only their non-empty slots), so
//! that the app can pool any window by summing them: percentiles of a
//! window are never averaged from the intervals' percentiles.

use blktune_core::latency::hist::{Hist, NR_SLOTS, VALUE_LEN};
use blktune_core::latency::{DevId, Dir, Intervals, Span, SparseHist, Tracer, Unavailable};
use blktune_core::sampler::Snapshot;
use std::collections::BTreeMap;

/// The spans and directions the TUI shows (discards and flushes are left
/// to `watch --json`).
pub const KEPT: [(Span, Dir); 4] = [
    (Span::Total, Dir::Read),
    (Span::Device, Dir::Read),
    (Span::Total, Dir::Write),
    (Span::Device, Dir::Write),
];

/// Sums sparse histograms: the pooled histogram of a window.
#[derive(Debug, Clone)]
pub struct Pool {
    /// The slots, then the sum in ns (a map value's layout).
    value: Vec<u64>,
}

impl Default for Pool {
    fn default() -> Self {
        Self {
            value: vec![0; VALUE_LEN],
        }
    }
}

impl Pool {
    /// Add one interval's histogram.
    pub fn add(&mut self, c: &SparseHist) {
        for &(slot, n) in &c.slots {
            // Slots of a recording are range-checked on read; the sum has its own place.
            let i = (slot as usize).min(NR_SLOTS - 1);
            self.value[i] = self.value[i].saturating_add(n);
        }
        self.value[NR_SLOTS] = self.value[NR_SLOTS].saturating_add(c.sum_ns);
    }

    /// The pooled histogram.
    pub fn hist(&self) -> Hist {
        // The length is right by construction.
        Hist::from_value(&self.value).unwrap_or_default()
    }
}

/// One device's histograms of one interval.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeviceLatency {
    /// The device these I/Os belong to (a new one under the same name has another).
    pub diskseq: Option<u64>,
    /// Only the [`KEPT`] spans and directions that saw I/O.
    pub hists: BTreeMap<(Span, Dir), SparseHist>,
}

impl DeviceLatency {
    /// The histogram of a span and direction; `None` when it saw no I/O.
    pub fn get(&self, span: Span, dir: Dir) -> Option<&SparseHist> {
        self.hists.get(&(span, dir))
    }
}

/// What the kernel timed in one sample interval, per device.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySample {
    /// End of the interval (the snapshot's `t`).
    pub t: f64,
    /// Length of the interval in seconds.
    pub itv: f64,
    /// Every traced device (those with a blk-mq queue); a device without an
    /// entry did no I/O.
    pub devices: BTreeMap<String, DeviceLatency>,
}

/// What the live source says about tracing.
#[derive(Debug, Clone, PartialEq)]
pub enum LatencyFeed {
    /// Tracing runs; samples follow the snapshots.
    Tracing,
    /// No tracing, and why in a few words.
    Unavailable(String),
    /// One interval's histograms.
    Sample(LatencySample),
}

/// The header's few words for why there are no percentiles.
pub fn reason(u: &Unavailable) -> String {
    match u {
        Unavailable::Disabled => "--no-bpf".into(),
        Unavailable::NotRoot => "not root".into(),
        Unavailable::NotLive => "fake tree".into(),
        Unavailable::NoBtf => "no BTF".into(),
        Unavailable::Lockdown(_) => "lockdown".into(),
        Unavailable::Load(_) => "BPF load failed".into(),
    }
}

/// The live source's tracer and its previous reading.
#[derive(Debug)]
pub struct LiveLatency {
    tracer: Tracer,
    intervals: Intervals,
}

impl LiveLatency {
    /// Load the BPF program (no BPF call at all when `no_bpf`, not `live`
    /// or not root); the first reading is the baseline.
    pub fn start(no_bpf: bool, live: bool) -> Result<Self, Unavailable> {
        let mut l = Self {
            tracer: Tracer::start(no_bpf, live)?,
            intervals: Intervals::new(),
        };
        l.baseline();
        Ok(l)
    }

    /// Read the histograms after the snapshot `s`: the interval since the
    /// last read, per device of the snapshot. `Err` when reading failed
    /// (tracing then stops).
    pub fn tick(&mut self, s: &Snapshot) -> Result<Option<LatencySample>, String> {
        let Some(itv) = s.interval else {
            self.baseline();
            return Ok(None);
        };
        let readings = self.tracer.read()?;
        let Some(interval) = self.intervals.next(readings) else {
            return Ok(None);
        };
        let mut devices = BTreeMap::new();
        for d in s.devices.iter().filter(|d| d.size_bytes > 0) {
            let id = DevId {
                major: d.major,
                minor: d.minor,
            };
            // An earlier device's histograms under this number are never the new one's.
            let Some(di) = interval.device(id, d.diskseq) else {
                continue;
            };
            let hists = KEPT
                .iter()
                .filter_map(|k| Some((*k, SparseHist::from(di.hists.get(k)?))))
                .filter(|(_, c)| c.count() > 0)
                .collect();
            devices.insert(
                d.name.clone(),
                DeviceLatency {
                    diskseq: d.diskseq,
                    hists,
                },
            );
        }
        Ok(Some(LatencySample {
            t: s.t,
            itv,
            devices,
        }))
    }

    /// A reading taken only as the next baseline.
    fn baseline(&mut self) {
        if let Ok(r) = self.tracer.read() {
            self.intervals.next(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blktune_core::latency::Percentiles;

    fn hist(values: &[u64]) -> Hist {
        let mut h = Hist::empty();
        for &v in values {
            h.record(v);
        }
        h
    }

    #[test]
    fn compact_keeps_only_non_empty_slots_and_pools_back_exactly() {
        let a = hist(&[1_000_000; 90]);
        let b = hist(&[10_000_000; 10]);
        let (ca, cb) = (SparseHist::from(&a), SparseHist::from(&b));
        assert_eq!(ca.slots.len(), 1);
        assert_eq!((ca.count(), cb.count()), (90, 10));
        let mut p = Pool::default();
        p.add(&ca);
        p.add(&cb);
        let mut whole = a.clone();
        whole.add(&b);
        assert_eq!(p.hist(), whole);
        // The pooled p99 is the slow tenth's, which no average of the two
        // intervals' p99s (1 ms and 10 ms) would give.
        let pct = Percentiles::of(&p.hist()).unwrap();
        assert_eq!(pct.n, 100);
        assert!((pct.p99 - 10.0).abs() < 0.2, "{pct:?}");
        assert!((pct.p50 - 1.0).abs() < 0.02, "{pct:?}");
        assert_eq!(Pool::default().hist(), Hist::empty());
    }

    #[test]
    fn reasons_are_a_few_words() {
        assert_eq!(reason(&Unavailable::NotRoot), "not root");
        assert_eq!(reason(&Unavailable::Disabled), "--no-bpf");
        assert_eq!(reason(&Unavailable::NoBtf), "no BTF");
        assert_eq!(reason(&Unavailable::Load("x".into())), "BPF load failed");
    }
}
