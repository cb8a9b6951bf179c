//! Sampling with the kernel's per-I/O latency: the sampler and the BPF
//! tracer read as one, so that each interval's diskstats and histograms
//! cover the same I/Os. Used by `watch`, `record`, `list --latency` and the
//! TUI's live source, which used to write the same start, baseline,
//! attach-failure and fallback steps each their own way.
//!
//! - [`LatencyReads`]: the tracer (or why there is none) and its previous
//!   reading: each read gives the interval since the one before. A failed
//!   read stops tracing, and says so once ([`TraceNote::Stopped`]); an issue
//!   program that could not be attached is said once too
//!   ([`TraceNote::NoDeviceSpan`]).
//! - [`TracedSampler`]: a [`Sampler`] with [`LatencyReads`]: the program is
//!   loaded before the sampler's first reading, the tracer's baseline taken
//!   right after it, and each tick reads the histograms right after diskstats
//!   (and, while attribution is on, who did the I/O: [`TracedSampler::set_who`]).

use crate::latency::{Interval, Intervals, IssueProgram, Readings, Tracer, Unavailable};
use crate::os::SysRoot;
use crate::sampler::{Sampler, SamplerOptions, Snapshot};
use crate::who::{WhoByDevice, WhoWatch};
use std::io;
use std::sync::{Arc, Mutex};

/// A tracer several readers share (the TUI's live source and a shoot-out it
/// runs): the BPF program is loaded once.
pub type SharedTracer = Arc<Mutex<Tracer>>;

/// What tracing said in a tick, once each: the caller prints it, records it
/// or shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceNote {
    /// The issue program could not be attached: no device span on queues
    /// that do not time their issues ([`crate::latency::no_device_span_note`]).
    NoDeviceSpan(String),
    /// A read failed: tracing stopped for the rest of the run.
    Stopped(Unavailable),
}

/// The kernel tracer and its previous reading, or why there is no tracer.
#[derive(Debug)]
pub struct LatencyReads {
    tracer: Result<SharedTracer, Unavailable>,
    intervals: Intervals,
    /// While the kernel attributes each I/O to its submitter
    /// ([`LatencyReads::set_who`]): its previous reading and names.
    who: Option<WhoWatch>,
}

impl LatencyReads {
    /// Load the BPF program (no BPF call at all when `no_bpf`, not `live` or
    /// not root: [`Tracer::start`]). No reading yet: see [`Self::baseline`].
    pub fn start(no_bpf: bool, live: bool) -> Self {
        Self::with(Tracer::start(no_bpf, live).map(|t| Arc::new(Mutex::new(t))))
    }

    /// No tracing, for this reason (an output that shows no percentiles).
    pub fn off(why: Unavailable) -> Self {
        Self::with(Err(why))
    }

    fn with(tracer: Result<SharedTracer, Unavailable>) -> Self {
        Self {
            tracer,
            intervals: Intervals::new(),
            who: None,
        }
    }

    /// Have the kernel attribute each I/O to the process and cgroup that
    /// submitted it (`true`), read with each interval from the next
    /// baseline on ([`LatencyReads::read_who`]), or stop; `Err` says why it
    /// cannot (no tracer; a kernel without `block_io_start`). Cgroups are
    /// named from `root`'s cgroup v2 tree.
    pub fn set_who(&mut self, root: &SysRoot, on: bool) -> Result<(), String> {
        let tracer = self.tracer.as_ref().map_err(ToString::to_string)?;
        let mut t = tracer.lock().map_err(|_| "tracer poisoned".to_string())?;
        t.set_who(on)?;
        self.who = on.then(|| WhoWatch::new(root));
        Ok(())
    }

    /// Who did each whole device of `s` I/O in the interval since the last
    /// reading (`None`: attribution off, the first reading, or a failed
    /// read, which switches it off).
    pub fn read_who(&mut self, s: &Snapshot) -> Option<WhoByDevice> {
        let reading = {
            let t = self.tracer.as_ref().ok()?.lock().ok()?;
            self.who.as_ref()?;
            t.read_who()
        };
        match reading {
            Ok(r) => self.who.as_mut()?.sample(r, s),
            Err(_) => {
                self.who = None;
                None
            }
        }
    }

    /// Why there is no tracing; `None` while tracing.
    pub fn unavailable(&self) -> Option<&Unavailable> {
        self.tracer.as_ref().err()
    }

    /// Is the program loaded and read?
    pub fn is_tracing(&self) -> bool {
        self.tracer.is_ok()
    }

    /// The tracer, for another reader (a shoot-out) to read too.
    pub fn shared(&self) -> Option<SharedTracer> {
        self.tracer.as_ref().ok().map(Arc::clone)
    }

    /// A reading taken only as the next interval's start (the first one,
    /// or after a pause): what it read is not an interval.
    pub fn baseline(&mut self) {
        if let Ok(r) = self.read() {
            self.intervals.next(r);
        }
        self.baseline_who();
    }

    /// Take the attribution's baseline alone (it was just switched on).
    fn baseline_who(&mut self) {
        if let Some(w) = &mut self.who
            && let Ok(t) = self.tracer.as_ref()
            && let Ok(t) = t.lock()
            && let Ok(r) = t.read_who()
        {
            w.baseline(r);
        }
    }

    /// Read the histograms: the interval since the last reading (`None` on
    /// the first, or without tracing), and what there is to say.
    pub fn read_interval(&mut self) -> (Option<Interval>, Vec<TraceNote>) {
        let mut notes = Vec::new();
        if self.tracer.is_err() {
            return (None, notes);
        }
        match self.read() {
            Ok(r) => {
                if let Some(why) = self.take_issue_failure() {
                    notes.push(TraceNote::NoDeviceSpan(why));
                }
                (self.intervals.next(r), notes)
            }
            Err(e) => {
                let why = Unavailable::Read(e);
                notes.push(TraceNote::Stopped(why.clone()));
                self.tracer = Err(why);
                (None, notes)
            }
        }
    }

    /// Why the issue program could not be attached, however often asked
    /// (a recording started after the failure says it too).
    pub fn issue_failure(&self) -> Option<String> {
        let t = self.tracer.as_ref().ok()?.lock().ok()?;
        match t.issue_program() {
            IssueProgram::Failed(why) => Some(why.clone()),
            _ => None,
        }
    }

    /// [`Tracer::take_issue_failure`]: the failure once (a shoot-out's read
    /// may have tried the attach).
    fn take_issue_failure(&self) -> Option<String> {
        self.tracer.as_ref().ok()?.lock().ok()?.take_issue_failure()
    }

    fn read(&self) -> Result<Readings, String> {
        let tracer = self.tracer.as_ref().map_err(ToString::to_string)?;
        let mut t = tracer.lock().map_err(|_| "tracer poisoned".to_string())?;
        t.read()
    }
}

/// One tick of a [`TracedSampler`].
#[derive(Debug)]
pub struct TracedTick {
    /// The diskstats sample.
    pub snapshot: Snapshot,
    /// The kernel's histograms of the same interval (`None` on the first
    /// tick, or without tracing).
    pub interval: Option<Interval>,
    /// What tracing said this tick.
    pub notes: Vec<TraceNote>,
    /// Who did each device's I/O in it, while attribution is on.
    pub who: Option<WhoByDevice>,
}

/// A [`Sampler`] with the kernel's histograms read right after each of its
/// diskstats readings.
#[derive(Debug)]
pub struct TracedSampler {
    sampler: Sampler,
    latency: LatencyReads,
}

impl TracedSampler {
    /// Load the tracer when `trace` (see [`LatencyReads::start`]; `no_bpf`
    /// makes no BPF call), then the sampler over `root` with `opts`, then
    /// the tracer's baseline: both count from the sampler's first reading.
    pub fn start(
        root: SysRoot,
        opts: SamplerOptions,
        trace: bool,
        no_bpf: bool,
    ) -> io::Result<Self> {
        // Loading the BPF program takes a moment: before the sampler's first
        // reading, so that the two count the same intervals.
        let latency = if trace {
            LatencyReads::start(no_bpf, root.is_live())
        } else {
            LatencyReads::off(Unavailable::Disabled)
        };
        Self::with(Sampler::with_options(root, opts)?, latency)
    }

    /// A sampler made elsewhere (its options set) with tracing already
    /// started; takes the tracer's baseline now.
    pub fn with(sampler: Sampler, mut latency: LatencyReads) -> io::Result<Self> {
        latency.baseline();
        Ok(Self { sampler, latency })
    }

    /// One tick: diskstats, then the histograms of the same interval. A
    /// snapshot without rates (the first, or one after a pause) takes the
    /// tracer's baseline instead.
    pub fn tick(&mut self) -> io::Result<TracedTick> {
        let snapshot = self.sampler.tick()?;
        let (interval, notes, who) = if snapshot.interval.is_none() {
            self.latency.baseline();
            (None, Vec::new(), None)
        } else {
            let (interval, notes) = self.latency.read_interval();
            let who = self.latency.read_who(&snapshot);
            (interval, notes, who)
        };
        Ok(TracedTick {
            snapshot,
            interval,
            notes,
            who,
        })
    }

    /// The sampler, for its settings and caches.
    pub fn sampler(&self) -> &Sampler {
        &self.sampler
    }

    /// The sampler, to change what it reads.
    pub fn sampler_mut(&mut self) -> &mut Sampler {
        &mut self.sampler
    }

    /// The tracing side.
    pub fn latency(&self) -> &LatencyReads {
        &self.latency
    }

    /// [`LatencyReads::set_who`] on the sampler's root; the next tick is
    /// the attribution's baseline.
    pub fn set_who(&mut self, on: bool) -> Result<(), String> {
        let root = self.sampler.root().clone();
        self.latency.set_who(&root, on)?;
        self.latency.baseline_who();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diskstats::Counters;
    use crate::fake::{FakeDisk, FakeTree};

    /// Without BPF (asked for, or a fake tree) nothing is traced, no BPF
    /// call is made, and the reason stays the one given at the start.
    #[test]
    fn without_a_tracer_reads_give_no_interval_and_no_notes() {
        let mut off = LatencyReads::start(true, true);
        assert_eq!(off.unavailable(), Some(&Unavailable::Disabled));
        assert!(!off.is_tracing() && off.shared().is_none());
        off.baseline();
        let (interval, notes) = off.read_interval();
        assert!(interval.is_none() && notes.is_empty());
        assert_eq!(off.issue_failure(), None);
        let not_live = LatencyReads::start(false, false);
        assert_eq!(not_live.unavailable(), Some(&Unavailable::NotLive));
    }

    /// The sampler's ticks come through whole (its baseline was read when it
    /// was made, so the first tick has rates); a fake tree is never traced.
    #[test]
    fn a_traced_sampler_on_a_fake_tree_samples_and_does_not_trace() {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        t.add(&FakeDisk::new("sda")).unwrap();
        t.set_diskstats(&[("sda", 8, 0, Counters::default())])
            .unwrap();
        let mut s = TracedSampler::start(t.root(), SamplerOptions::default(), true, false).unwrap();
        assert_eq!(s.latency().unavailable(), Some(&Unavailable::NotLive));
        let c = Counters {
            rd_ios: 10,
            ..Counters::default()
        };
        t.set_diskstats(&[("sda", 8, 0, c)]).unwrap();
        let next = s.tick().unwrap();
        assert!(next.snapshot.interval.is_some());
        assert_eq!(next.snapshot.stats["sda"].counters.rd_ios, 10);
        assert!(next.interval.is_none(), "not traced");
        assert_eq!(s.sampler().root(), &t.root());
    }
}
