//! The live worker: owns the sampler and the tuner on its own thread, so a
//! slow scheduler switch never blocks a key press. It samples, applies
//! changes, runs the probe, the kernel tracer, the recorder, the shoot-out
//! and the export writer, and tells the app everything through [`Feed`]
//! ([`super::protocol`]).

use super::ab::{self, AbFeed, AbHandle, AbRequest};
use super::latency::{LatencyFeed, reason, sample_of};
use super::procio::WhereIo;
use super::protocol::{
    ApplyError, ApplyKind, ApplyReport, ApplyRequest, Feed, FeedTx, LiveControl, ProbeSample,
    Shared, ToWorker, WriteError,
};
use super::recorder::LiveRecorder;
use super::shootout::{self, Report, ShootOutError, ShootOutFeed, ShootOutHandle, ShootOutRequest};
use blktune_core::export::ExportError;
use blktune_core::history::ChangeMark;
use blktune_core::probe::{Probe, ProbeStats};
use blktune_core::record::latency::LatencyFacts;
use blktune_core::sampler::Sampler;
use blktune_core::shootout::Tracing;
use blktune_core::traced::{LatencyReads, TraceNote};
use blktune_core::tuner::{Tuner, Wanted};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The live source: owns the sampler and the tuner on one thread.
#[derive(Debug)]
pub struct LiveSource {
    sampler: Sampler,
    tuner: Option<Tuner>,
    interval: Duration,
    paused: bool,
    /// When the last snapshot was taken, and its time on the sampler's clock.
    last: Option<(Instant, f64)>,
    /// The running shoot-out, if any (dropping it cancels and restores).
    shootout: Option<ShootOutHandle>,
    /// The running A/B, if any (dropping it cancels and restores).
    ab: Option<AbHandle>,
    /// The recording `R` started, if any.
    recorder: LiveRecorder,
    /// The rows the screen shows ([`LiveControl::InView`]); `None` until it
    /// says.
    in_view: Option<Vec<String>>,
    /// The latency probe, while the app wants one; its thread stops when
    /// this drops, which happens on every way out of [`LiveSource::run`].
    probe: Option<Probe>,
    /// Reads per second of the probe.
    probe_rate: f64,
    /// The devices the probe is told to read.
    probe_target: Vec<String>,
    /// `Some(no_bpf)` until the thread starts the kernel tracer.
    trace: Option<bool>,
    /// The kernel tracer and its last reading, once started; or why it does
    /// not run: told to a shoot-out (which then loads none) and written in a
    /// recording's header.
    latency: Option<LatencyReads>,
    /// Who does the I/O (while shown) and where it goes.
    where_io: WhereIo,
}

impl LiveSource {
    /// A source over `sampler`; `tuner` is `None` in read-only mode.
    pub fn new(sampler: Sampler, tuner: Option<Tuner>, interval: Duration) -> Self {
        Self {
            sampler,
            tuner,
            interval,
            paused: false,
            last: None,
            shootout: None,
            ab: None,
            recorder: LiveRecorder::default(),
            in_view: None,
            probe: None,
            probe_rate: blktune_core::probe::DEFAULT_RATE,
            probe_target: Vec::new(),
            trace: None,
            latency: None,
            where_io: WhereIo::default(),
        }
    }

    /// Trace the kernel's per-I/O latency from the thread's start (no BPF
    /// call at all with `no_bpf`, on a fake tree or without root); the app
    /// is told which, and why not.
    pub fn with_latency(mut self, no_bpf: bool) -> Self {
        self.trace = Some(no_bpf);
        self
    }

    /// Load the tracer if asked; `false` when the app hung up.
    fn start_latency(&mut self, feed: &FeedTx) -> bool {
        let Some(no_bpf) = self.trace.take() else {
            return true;
        };
        let mut reads = LatencyReads::start(no_bpf, self.sampler.root().is_live());
        reads.baseline();
        if let Some(t) = reads.shared() {
            self.where_io.set_tracer(t);
        }
        let msg = match reads.unavailable() {
            None => LatencyFeed::Tracing,
            Some(why) => LatencyFeed::Unavailable(reason(why)),
        };
        self.latency = Some(reads);
        feed.send(Feed::Latency(msg)).is_ok()
    }

    /// What a recording started now says of the kernel's histograms; `None`
    /// when tracing was never asked for.
    fn latency_facts(&self) -> Option<LatencyFacts> {
        let why_not = self.latency.as_ref()?.unavailable();
        Some(LatencyFacts {
            traced: why_not.is_none(),
            unavailable: why_not.map(ToString::to_string),
        })
    }

    /// Probe at `rate` reads per second (default [`blktune_core::probe::DEFAULT_RATE`])
    /// once the app names a device with [`LiveControl::Probe`].
    pub fn with_probe_rate(mut self, rate: f64) -> Self {
        self.probe_rate = rate;
        self
    }

    /// Point the probe at `device`, starting it if needed; `None` stops it.
    fn retarget_probe(&mut self, device: Option<String>) {
        self.probe_target = device.into_iter().collect();
        if self.probe_target.is_empty() {
            // Dropping joins its thread and closes the device.
            self.probe = None;
            return;
        }
        match &self.probe {
            Some(p) => p.set_devices(&self.probe_target),
            None => {
                self.probe = Some(Probe::start(
                    self.sampler.root(),
                    &self.probe_target,
                    self.probe_rate,
                ));
            }
        }
    }

    /// The probe's figures since the last call, for the devices it is told
    /// to read (a device just left may still have a partial interval).
    fn take_probe(&self) -> Option<BTreeMap<String, ProbeStats>> {
        let mut stats = self.probe.as_ref()?.take();
        stats.retain(|k, _| self.probe_target.contains(k));
        Some(stats)
    }

    /// Run on a new thread until [`Shared::Stop`] or the app hangs up.
    pub fn spawn(
        self,
        feed: impl Into<FeedTx>,
        control: Receiver<ToWorker<LiveControl>>,
    ) -> std::io::Result<JoinHandle<()>> {
        let feed = feed.into();
        std::thread::Builder::new()
            .name("blktune-sampler".into())
            .spawn(move || self.run(&feed, &control))
    }

    /// Sample, and send what the tick found with one wake-up of the loop
    /// at the end (woken per message, it could take the snapshot in and
    /// draw before the latency came, and draw again for it).
    fn tick(&mut self, feed: &FeedTx) -> bool {
        let ok = self.tick_quietly(feed);
        feed.wake();
        ok
    }

    fn tick_quietly(&mut self, feed: &FeedTx) -> bool {
        // Rows off screen are checked less often, except while recording:
        // a recording has every row, so each is checked every period.
        let view = (!self.recorder.is_active())
            .then_some(self.in_view.as_deref())
            .flatten();
        self.sampler.set_in_view(view);
        // A shoot-out switches schedulers behind the sampler's back: re-read settings.
        if self.shootout.is_some() {
            self.sampler.invalidate();
            if self.shootout.as_ref().is_some_and(ShootOutHandle::finished) {
                self.shootout = None;
            }
        }
        // So does an A/B.
        if self.ab.is_some() {
            self.sampler.invalidate();
            if self.ab.as_ref().is_some_and(AbHandle::finished) {
                self.ab = None;
            }
        }
        let msg = match self.sampler.tick() {
            Ok(s) => {
                self.last = Some((Instant::now(), s.t));
                // Taken right after the sample, so the probe's interval is
                // the snapshot's (to within the time of one read).
                let probe = self.take_probe().and_then(|stats| {
                    Some(ProbeSample {
                        t: s.t,
                        itv: s.interval?,
                        stats,
                    })
                });
                // The kernel's histograms read right after the sample too.
                let (interval, notes) = match self.latency.as_mut() {
                    None => (None, Vec::new()),
                    // No rates (the first snapshot, or one after a pause):
                    // the next interval starts here.
                    Some(l) if s.interval.is_none() => {
                        l.baseline();
                        (None, Vec::new())
                    }
                    Some(l) => l.read_interval(),
                };
                let mut latency = interval
                    .as_ref()
                    .and_then(|i| sample_of(i, &s))
                    .map(LatencyFeed::Sample);
                for note in notes {
                    match note {
                        TraceNote::NoDeviceSpan(why) => {
                            self.recorder.no_device_span(&why);
                            if feed
                                .send(Feed::Latency(LatencyFeed::NoDeviceSpan(why)))
                                .is_err()
                            {
                                return false;
                            }
                        }
                        TraceNote::Stopped(why) => {
                            latency = Some(LatencyFeed::Unavailable(reason(&why)));
                        }
                    }
                }
                let who = |m| feed.send_quietly(Feed::WhereIo(m)).is_ok();
                if !self.where_io.tick(self.sampler.root(), &s, who) {
                    return false;
                }
                // The recording gets the interval the app is sent, and who
                // did its I/O while the panel shows it.
                if let Some(w) = self.where_io.take_who() {
                    self.recorder.who(w);
                }
                if let Some(ev) = self.recorder.snapshot(&s, interval.as_ref())
                    && feed.send_quietly(Feed::Record(ev)).is_err()
                {
                    return false;
                }
                if feed.send_quietly(Feed::Snapshot(Box::new(s))).is_err() {
                    return false;
                }
                if let Some(p) = probe
                    && feed.send_quietly(Feed::Probe(p)).is_err()
                {
                    return false;
                }
                match latency {
                    Some(l) => Feed::Latency(l),
                    None => return true,
                }
            }
            Err(e) => Feed::Error(format!("cannot read diskstats: {e}")),
        };
        feed.send_quietly(msg).is_ok()
    }

    /// Seconds on the sampler's clock for `at`.
    fn clock(&self, at: Instant) -> f64 {
        self.last.map_or(0.0, |(i, t)| {
            t + at.saturating_duration_since(i).as_secs_f64()
        })
    }

    fn apply(&mut self, req: ApplyRequest) -> ApplyReport {
        let result = match &self.tuner {
            None => Err(ApplyError::ReadOnly),
            Some(tuner) => {
                // Only the device the user chose: the tuner refuses a
                // replaced one (another diskseq) before its first write.
                let tuner = tuner.clone().expecting(&req.device, req.diskseq);
                let started = Instant::now();
                let r = match req.kind {
                    ApplyKind::Change => tuner.apply(&req.device, &req.settings),
                    ApplyKind::Undo | ApplyKind::RevertAll => {
                        tuner.restore(&req.device, &req.settings)
                    }
                };
                // The mark sits where the kernel's writes began.
                let t = self.clock(started);
                r.map(|o| {
                    let mark = ChangeMark {
                        device: o.device.clone(),
                        t,
                        label: o.label(),
                        before: Wanted::snapshot_of(&o.before),
                        after: Wanted::snapshot_of(&o.after),
                    };
                    (o, mark)
                })
                .map_err(ApplyError::Tune)
            }
        };
        if let Ok((_, mark)) = &result {
            self.recorder.change(mark);
        }
        self.sampler.invalidate();
        ApplyReport {
            request: req,
            result,
        }
    }

    /// Start the shoot-out thread; `Some(why)` when it cannot start.
    fn start_shootout(&mut self, req: ShootOutRequest, feed: &FeedTx) -> Option<ShootOutError> {
        if self.shootout.as_ref().is_some_and(|b| !b.finished()) {
            return Some(ShootOutError::Busy);
        }
        let Some(tuner) = &self.tuner else {
            return Some(ShootOutError::ReadOnly);
        };
        let epoch = self.last.map_or_else(Instant::now, |(i, t)| {
            i.checked_sub(Duration::from_secs_f64(t.max(0.0)))
                .unwrap_or(i)
        });
        let feed = feed.clone();
        let report = move |r: Report| {
            let _ = feed.send(match r {
                Report::Feed(f) => Feed::ShootOut(f),
                Report::Switched(mark) => Feed::Change(mark),
            });
        };
        let tracing = self.tracing();
        match shootout::spawn(
            tuner.root().clone(),
            tuner.journal().cloned(),
            req,
            tracing,
            epoch,
            report,
        ) {
            Ok(h) => {
                self.shootout = Some(h);
                None
            }
            Err(e) => Some(ShootOutError::Thread(e)),
        }
    }

    /// Where a shoot-out or an A/B takes the kernel's percentiles from:
    /// the sampler's tracer, shared (the BPF program is never loaded twice).
    fn tracing(&self) -> Tracing {
        match &self.latency {
            Some(l) => match (l.shared(), l.unavailable()) {
                (Some(t), _) => Tracing::Shared(t),
                (None, Some(why)) => Tracing::Off(why.clone()),
                (None, None) => Tracing::Own,
            },
            None => Tracing::Own,
        }
    }

    /// Start the A/B thread; `Some(why)` when it cannot start.
    fn start_ab(&mut self, req: AbRequest, feed: &FeedTx) -> Option<String> {
        if self.ab.as_ref().is_some_and(|h| !h.finished()) {
            return Some("an A/B is already running".into());
        }
        if self.shootout.as_ref().is_some_and(|h| !h.finished()) {
            return Some("a shoot-out is running: the A/B waits for it to end".into());
        }
        let Some(tuner) = &self.tuner else {
            return Some("read-only: the A/B is disabled".into());
        };
        let feed = feed.clone();
        let report = move |f: AbFeed| {
            let _ = feed.send(Feed::Ab(f));
        };
        let (root, journal) = (tuner.root().clone(), tuner.journal().cloned());
        match ab::spawn(root, journal, req, self.tracing(), report) {
            Ok(h) => {
                self.ab = Some(h);
                None
            }
            Err(e) => Some(format!("cannot start the A/B thread: {e}")),
        }
    }

    fn run(mut self, feed: &FeedTx, control: &Receiver<ToWorker<LiveControl>>) {
        // The devices and their settings at once, the rates at the first tick.
        if let Some(first) = self.sampler.take_baseline() {
            self.last = Some((Instant::now(), first.t));
            if feed.send(Feed::Snapshot(Box::new(first))).is_err() {
                return;
            }
        }
        // Loading the BPF program takes 100 ms or more: after the first
        // frame's snapshot, so the screen never waits for it. The first
        // interval's percentiles then cover the time since the load.
        if !self.start_latency(feed) {
            return;
        }
        let mut next = Instant::now() + self.interval;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            match control.recv_timeout(wait) {
                Ok(ToWorker::Shared(Shared::Stop)) | Err(RecvTimeoutError::Disconnected) => {
                    if let Some(ev) = self.recorder.stop() {
                        let _ = feed.send(Feed::Record(ev));
                    }
                    return;
                }
                Ok(ToWorker::Own(LiveControl::Record(path))) => {
                    let origin = self.last.map_or(0.0, |(_, t)| t);
                    let ev = match path {
                        Some(p) => {
                            // A recording's first facts must be whole.
                            self.sampler.complete();
                            let facts = self.latency_facts();
                            let ev = self.recorder.start(
                                &p,
                                &self.sampler,
                                origin,
                                self.interval,
                                facts,
                            );
                            // Said already on screen: the recording says it
                            // with its first sample.
                            if let Some(why) = self.latency.as_ref().and_then(|l| l.issue_failure())
                            {
                                self.recorder.no_device_span(&why);
                            }
                            ev
                        }
                        None => self.recorder.stop(),
                    };
                    if let Some(ev) = ev
                        && feed.send(Feed::Record(ev)).is_err()
                    {
                        return;
                    }
                }
                Ok(ToWorker::Own(LiveControl::Interval(d))) => {
                    self.interval = d;
                    next = self.last.map_or_else(Instant::now, |(i, _)| i) + d;
                }
                Ok(ToWorker::Shared(Shared::Pause(p))) => {
                    self.paused = p;
                    next = Instant::now();
                }
                Ok(ToWorker::Own(LiveControl::Apply(req))) => {
                    let report = self.apply(req);
                    let ok = report.result.is_ok();
                    if feed.send(Feed::Applied(Box::new(report))).is_err() {
                        return;
                    }
                    // Show the new settings at once; the short interval is weighted as such.
                    if ok && !self.paused && !self.tick(feed) {
                        return;
                    }
                }
                Ok(ToWorker::Own(LiveControl::WriteExport { path, text, force })) => {
                    let r = write_export(path, &text, force);
                    if feed.send(Feed::ExportWritten(r)).is_err() {
                        return;
                    }
                }
                Ok(ToWorker::Own(LiveControl::StartShootOut(req))) => {
                    if let Some(msg) = self.start_shootout(req, feed) {
                        let _ = feed.send(Feed::ShootOut(ShootOutFeed::Done(Err(msg))));
                    }
                }
                Ok(ToWorker::Own(LiveControl::Probe(device))) => self.retarget_probe(device),
                Ok(ToWorker::Own(LiveControl::Processes(on))) => self.where_io.show_processes(on),
                Ok(ToWorker::Own(LiveControl::InView(rows))) => self.in_view = Some(rows),
                Ok(ToWorker::Own(LiveControl::StartAb(req))) => {
                    if let Some(why) = self.start_ab(*req, feed) {
                        let _ = feed.send(Feed::Ab(AbFeed::Done(Err(why))));
                    }
                }
                Ok(ToWorker::Own(LiveControl::CancelAb)) => {
                    if let Some(h) = &self.ab {
                        h.cancel();
                    }
                }
                Ok(ToWorker::Own(LiveControl::CancelShootOut)) => {
                    if let Some(b) = &self.shootout {
                        b.cancel();
                    }
                }
                Ok(ToWorker::Own(LiveControl::Refresh)) => {
                    self.sampler.invalidate();
                    if !self.paused && !self.tick(feed) {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    if !self.paused && !self.tick(feed) {
                        return;
                    }
                    next += self.interval;
                    let now = Instant::now();
                    if next < now {
                        // Fell behind (slow sysfs, suspended): skip, do not burst.
                        next = now + self.interval;
                    }
                    if self.paused {
                        next = now + Duration::from_millis(200);
                    }
                }
            }
        }
    }
}

/// Write an exported file; an existing one is reported apart so the dialog can ask.
fn write_export(path: PathBuf, text: &str, force: bool) -> Result<PathBuf, WriteError> {
    match blktune_core::export::write_rules(&path, text, force) {
        Ok(()) => Ok(path),
        Err(ExportError::AlreadyExists { path }) => Err(WriteError::Exists(path)),
        Err(e) => Err(WriteError::Failed(e.to_string())),
    }
}
