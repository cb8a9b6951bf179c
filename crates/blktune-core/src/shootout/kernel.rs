//! The kernel's latency percentiles of the benched device's own I/O, dwell by
//! dwell: every request on the device is timed by the BPF program of
//! [`crate::latency`], whoever issued it, so a passive shoot-out on a
//! production disk gets a p99 too.
//!
//! A dwell's histograms are the difference of two cumulative readings, one
//! at each end of the dwell; a scheduler's figures come from the sum of its
//! dwells' histograms (percentiles are pooled, never averaged).
//!
//! The histograms come from the shoot-out's own tracer (`bench`) or from
//! one the caller already runs (the TUI's live one, see [`Tracing`]): the
//! BPF program is never loaded twice. Several readers of one tracer do not
//! disturb each other, since each keeps its own previous reading.

use crate::latency::{
    DevId, DeviceInterval, Dir, Hist, Intervals, IoLatency, KernelFigures, Span, Tracer,
    Unavailable,
};
use crate::os::{DeviceName, SysRoot};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

pub use crate::traced::SharedTracer;

/// Where a shoot-out's kernel histograms come from.
#[derive(Debug, Clone)]
pub enum Tracing {
    /// Load the BPF program for the shoot-out (unless [`super::Config::no_bpf`]), as `bench` does.
    Own,
    /// Read the caller's running tracer: the program stays loaded once.
    Shared(SharedTracer),
    /// None, for this reason (the caller's tracer could not start).
    Off(Unavailable),
}

/// The histograms of one dwell (or of several, pooled).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DwellHists {
    pub reads: Hist,
    pub writes: Hist,
    pub dev_reads: Hist,
    pub dev_writes: Hist,
}

impl DwellHists {
    /// A device's interval as the tracer gave it.
    fn of(device_interval: &DeviceInterval) -> Self {
        let get = |span, dir| {
            device_interval
                .hists
                .get(&(span, dir))
                .cloned()
                .unwrap_or_default()
        };
        Self {
            reads: get(Span::Total, Dir::Read),
            writes: get(Span::Total, Dir::Write),
            dev_reads: get(Span::Device, Dir::Read),
            dev_writes: get(Span::Device, Dir::Write),
        }
    }

    /// The sum of several dwells' histograms.
    pub fn pooled<'a>(dwells: impl IntoIterator<Item = &'a DwellHists>) -> Self {
        let mut sum = Self::default();
        for d in dwells {
            sum.reads.add(&d.reads);
            sum.writes.add(&d.writes);
            sum.dev_reads.add(&d.dev_reads);
            sum.dev_writes.add(&d.dev_writes);
        }
        sum
    }

    /// Percentiles and counts.
    pub fn figures(&self) -> KernelFigures {
        KernelFigures {
            reads: IoLatency::of(&self.reads),
            writes: IoLatency::of(&self.writes),
            dev_reads: IoLatency::of(&self.dev_reads),
            dev_writes: IoLatency::of(&self.dev_writes),
        }
    }
}

/// Whether the shoot-out had the kernel's percentiles (`bench --json`: `kernel`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KernelStatus {
    /// Every dwell was timed in the kernel.
    pub traced: bool,
    /// Why not, in a few words (`needs root`, `disabled by --no-bpf`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// The tracer of a shoot-out, following the benched device.
#[derive(Debug)]
pub(super) struct DwellTracer {
    tracer: SharedTracer,
    dev: DevId,
    diskseq: Option<u64>,
    intervals: Intervals,
    /// A dwell attached the issue program: detached when the shoot-out
    /// ends, so that a shared tracer's every I/O does not pay for it after.
    attached_issue: bool,
}

impl DwellTracer {
    /// Follow `dev` with the tracer `how` names (loading one: see
    /// [`Tracer::start`]); `no_bpf` wins over a shared tracer.
    pub fn start(
        root: &SysRoot,
        dev: &DeviceName,
        no_bpf: bool,
        how: Tracing,
    ) -> Result<Self, Unavailable> {
        let tracer = match how {
            _ if no_bpf => return Err(Unavailable::Disabled),
            Tracing::Own => Arc::new(Mutex::new(Tracer::start(no_bpf, root.is_live())?)),
            Tracing::Shared(t) => t,
            Tracing::Off(why) => return Err(why),
        };
        let id = root
            .read_dev_attr(dev, "dev")
            .ok()
            .and_then(|s| {
                let (a, b) = s.trim().split_once(':')?;
                Some(DevId {
                    major: a.parse().ok()?,
                    minor: b.parse().ok()?,
                })
            })
            .ok_or_else(|| Unavailable::Load(format!("cannot read /sys/block/{dev}/dev")))?;
        Ok(Self {
            tracer,
            dev: id,
            diskseq: root.read_diskseq(dev),
            intervals: Intervals::new(),
            attached_issue: false,
        })
    }

    /// The reading at the start of a dwell, with the issue program
    /// attached ([`Tracer::attach_issue_program`]; detached again when the
    /// shoot-out ends): the dwell's device span covers every I/O issued in it.
    pub fn begin(&mut self) {
        self.intervals = Intervals::new();
        if let Ok(mut t) = self.tracer.lock() {
            self.attached_issue |= t.attach_issue_program();
        }
        if let Some(r) = self.read() {
            self.intervals.next(r);
        }
    }

    /// The cumulative histograms now; `None` when reading failed (or a
    /// reader of the shared tracer panicked).
    fn read(&self) -> Option<crate::latency::Readings> {
        self.tracer.lock().ok()?.read().ok()
    }

    /// The dwell's histograms since [`DwellTracer::begin`]: empty when the
    /// device did no I/O; `None` when the reading failed.
    pub fn end(&mut self) -> Option<DwellHists> {
        let interval = self.intervals.next(self.read()?)?;
        Some(
            interval
                .device(self.dev, self.diskseq)
                .map(DwellHists::of)
                .unwrap_or_default(),
        )
    }
}

/// The shoot-out is over: the issue program a dwell attached is detached.
impl Drop for DwellTracer {
    fn drop(&mut self) {
        if self.attached_issue
            && let Ok(mut t) = self.tracer.lock()
        {
            t.detach_issue_program();
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `count` I/Os of `ns` each.
    pub fn hist(count: u64, ns: u64) -> Hist {
        let mut h = Hist::empty();
        for _ in 0..count {
            h.record(ns);
        }
        h
    }

    #[test]
    fn the_callers_reason_and_no_bpf_load_nothing() {
        use crate::fake::{FakeDisk, FakeTree};
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        t.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
        let root = t.root();
        let dev = root.device("sda").unwrap();
        let start = |no_bpf, how| DwellTracer::start(&root, &dev, no_bpf, how).unwrap_err();
        // The TUI's tracer could not start: its reason, no second try.
        assert_eq!(
            start(false, Tracing::Off(Unavailable::NotRoot)),
            Unavailable::NotRoot
        );
        // --no-bpf wins over whatever the caller offers.
        assert_eq!(
            start(true, Tracing::Off(Unavailable::NotRoot)),
            Unavailable::Disabled
        );
        // Its own on a fake tree: not the live system, no BPF call.
        assert_eq!(start(false, Tracing::Own), Unavailable::NotLive);
    }

    #[test]
    fn a_dwell_under_100_ios_has_a_count_and_no_p99() {
        let d = DwellHists {
            reads: hist(99, 1_000_000),
            writes: hist(1000, 2_000_000),
            ..DwellHists::default()
        };
        let f = d.figures();
        let r = f.reads.unwrap();
        assert_eq!((r.n, r.p99, r.p999), (99, None, None));
        assert!((r.p50 - 1.0).abs() < 1.0 / 64.0);
        let w = f.writes.unwrap();
        assert!(w.p99.is_some() && w.p999.is_some());
        assert_eq!(f.dev_reads, None);
        assert_eq!(f.count(Span::Device, Dir::Read), 0);
        assert_eq!(f.count(Span::Total, Dir::Write), 1000);
    }

    #[test]
    fn pooling_sums_histograms_not_percentiles() {
        // Round 1: 1000 reads at 1 ms. Round 2: 1000 reads, 980 at 1 ms and
        // 20 at 50 ms. Each round's p99 is ~1 ms and ~50 ms; their mean
        // would be ~25 ms, but 20 of the 2000 I/Os (1 %) are slow: the
        // pooled p99 is the top of the fast ones.
        let mut slow = hist(980, 1_000_000);
        slow.add(&hist(20, 50_000_000));
        let a = DwellHists {
            reads: hist(1000, 1_000_000),
            ..DwellHists::default()
        };
        let b = DwellHists {
            reads: slow,
            ..DwellHists::default()
        };
        let p = DwellHists::pooled([&a, &b]).figures().reads.unwrap();
        assert_eq!(p.n, 2000);
        assert!(p.p99.unwrap() < 1.1, "{p:?}");
        assert!(b.figures().reads.unwrap().p99.unwrap() > 45.0);
    }
}
