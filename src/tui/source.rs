//! Where snapshots come from. The app only sees [`Feed`] messages on one
//! channel, so the live sampler here and a replay of a recording can drive
//! the same screen. The live source also runs the tuner, on its own thread,
//! so a slow scheduler switch never blocks a key press.

use super::worker::latency::{LatencyFeed, LiveLatency, reason};
use super::worker::procio::{WhereIo, WhereIoFeed};
use super::worker::recorder::{LiveRecorder, RecordEvent};
use super::worker::shootout::{self, Report, ShootOutFeed, ShootOutHandle, ShootOutRequest};
use blktune_core::export::ExportError;
use blktune_core::history::ChangeMark;
use blktune_core::probe::{Probe, ProbeStats};
use blktune_core::sampler::{Sampler, Snapshot};
use blktune_core::tuner::{Outcome, Tuner, Wanted};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Position of a replay, shown in the header instead of live facts.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayPosition {
    /// Seconds from the start of the recording.
    pub at: f64,
    /// Length of the recording in seconds.
    pub total: f64,
    /// Playback speed factor (1.0 = real time).
    pub speed: f64,
    /// Is playback paused (by a key, or at the end)?
    pub paused: bool,
    /// Has playback reached the last frame?
    pub ended: bool,
}

/// What a source tells the app.
#[derive(Debug)]
pub enum Feed {
    /// One sample of every device.
    Snapshot(Box<Snapshot>),
    /// A change that happened (recorded, or made by someone else).
    Change(ChangeMark),
    /// The answer to a [`Control::Apply`].
    Applied(Box<ApplyReport>),
    /// Replay only: where playback is.
    Position(ReplayPosition),
    /// The source cannot read (diskstats vanished); shown in the status line.
    Error(String),
    /// From the shoot-out thread ([`Control::StartShootOut`]).
    ShootOut(ShootOutFeed),
    /// The answer to a [`Control::WriteExport`]: the path written, or why not.
    ExportWritten(Result<PathBuf, WriteError>),
    /// Replay only: forget history and marks (a seek back follows with frames).
    Reset,
    /// Recording of the live session (`R`) started, stopped or failed.
    Record(RecordEvent),
    /// Live, while the probe runs (`--probe`, `P`): its reads in the
    /// interval of the snapshot just sent.
    Probe(ProbeSample),
    /// Live: whether the kernel's latency is traced (and why not), then
    /// each interval's histograms after its snapshot.
    Latency(LatencyFeed),
    /// Live: the busiest processes (while the app asks), and placement.
    WhereIo(WhereIoFeed),
}

/// What the latency probe saw in one sample interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSample {
    /// End of the interval on the sampler's clock (the snapshot's `t`).
    pub t: f64,
    /// Length of the interval in seconds (the snapshot's interval).
    pub itv: f64,
    /// Per probed device (only the one the app asked for).
    pub stats: BTreeMap<String, ProbeStats>,
}

/// What kind of change a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyKind {
    /// A new setting, validated by the tuner.
    Change,
    /// Back to the settings before the last change.
    Undo,
    /// Back to the settings before the session's first change.
    RevertAll,
}

/// A change the app wants made.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyRequest {
    pub id: u64,
    pub device: String,
    /// The device's `diskseq` when the user chose the change; `None` when
    /// the kernel has none (before 5.15). A device that has another one now
    /// was replaced under the same name, and the change is refused.
    pub diskseq: Option<u64>,
    pub settings: Wanted,
    pub kind: ApplyKind,
}

/// How a request went.
#[derive(Debug)]
pub struct ApplyReport {
    pub request: ApplyRequest,
    /// The outcome and its mark on the sampler's clock, or the error line.
    pub result: Result<(Outcome, ChangeMark), String>,
}

/// What the app tells a source.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    Interval(Duration),
    Pause(bool),
    Apply(ApplyRequest),
    /// Re-read device settings now (someone else changed them).
    Refresh,
    /// Replay only: move the position by this many seconds.
    Seek(f64),
    /// Replay only: play at this speed.
    Speed(f64),
    /// Live only: start recording to this file (`Some`) or stop (`None`).
    Record(Option<std::path::PathBuf>),
    Stop,
    /// Write an exported rules file (atomic; an existing file only with `force`).
    WriteExport {
        path: PathBuf,
        text: String,
        force: bool,
    },
    /// Start a shoot-out on its own thread (answers with [`Feed::ShootOut`]).
    StartShootOut(ShootOutRequest),
    /// Cancel the running shoot-out (it restores the originals).
    CancelShootOut,
    /// Live only: probe this device from now on (the probe starts if it is
    /// not running); `None` stops the probe and closes its device.
    Probe(Option<String>),
    /// Live only: sample the busiest processes each tick (the `i` panel), or stop.
    Processes(bool),
}

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
    /// The recording `R` started, if any.
    recorder: LiveRecorder,
    /// The latency probe, while the app wants one; its thread stops when
    /// this drops, which happens on every way out of [`LiveSource::run`].
    probe: Option<Probe>,
    /// Reads per second of the probe.
    probe_rate: f64,
    /// The devices the probe is told to read.
    probe_target: Vec<String>,
    /// `Some(no_bpf)` until the thread starts the kernel tracer.
    trace: Option<bool>,
    /// The kernel tracer, while it runs.
    latency: Option<LiveLatency>,
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
            recorder: LiveRecorder::default(),
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
    fn start_latency(&mut self, feed: &Sender<Feed>) -> bool {
        let Some(no_bpf) = self.trace.take() else {
            return true;
        };
        let msg = match LiveLatency::start(no_bpf, self.sampler.root().is_live()) {
            Ok(l) => {
                self.latency = Some(l);
                LatencyFeed::Tracing
            }
            Err(why) => LatencyFeed::Unavailable(reason(&why)),
        };
        feed.send(Feed::Latency(msg)).is_ok()
    }

    /// Probe at `rate` reads per second (default [`blktune_core::probe::DEFAULT_RATE`])
    /// once the app names a device with [`Control::Probe`].
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

    /// Run on a new thread until [`Control::Stop`] or the app hangs up.
    pub fn spawn(
        self,
        feed: Sender<Feed>,
        control: Receiver<Control>,
    ) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("blktune-sampler".into())
            .spawn(move || self.run(&feed, &control))
    }

    fn tick(&mut self, feed: &Sender<Feed>) -> bool {
        // A shoot-out switches schedulers behind the sampler's back: re-read settings.
        if self.shootout.is_some() {
            self.sampler.invalidate();
            if self.shootout.as_ref().is_some_and(ShootOutHandle::finished) {
                self.shootout = None;
            }
        }
        let msg = match self.sampler.tick() {
            Ok(s) => {
                self.last = Some((Instant::now(), s.t));
                if let Some(ev) = self.recorder.snapshot(&s)
                    && feed.send(Feed::Record(ev)).is_err()
                {
                    return false;
                }
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
                let latency = match self.latency.as_mut().map(|l| l.tick(&s)) {
                    None | Some(Ok(None)) => None,
                    Some(Ok(Some(sample))) => Some(LatencyFeed::Sample(sample)),
                    Some(Err(_)) => {
                        self.latency = None;
                        Some(LatencyFeed::Unavailable("BPF read failed".into()))
                    }
                };
                let who = |m| feed.send(Feed::WhereIo(m)).is_ok();
                if !self.where_io.tick(self.sampler.root(), &s, who)
                    || feed.send(Feed::Snapshot(Box::new(s))).is_err()
                {
                    return false;
                }
                if let Some(p) = probe
                    && feed.send(Feed::Probe(p)).is_err()
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
        feed.send(msg).is_ok()
    }

    /// Seconds on the sampler's clock for `at`.
    fn clock(&self, at: Instant) -> f64 {
        self.last.map_or(0.0, |(i, t)| {
            t + at.saturating_duration_since(i).as_secs_f64()
        })
    }

    fn apply(&mut self, req: ApplyRequest) -> ApplyReport {
        let result = match &self.tuner {
            None => Err("read-only: changes are disabled".to_string()),
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
                .map_err(|e| e.to_string())
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

    /// Start the shoot-out thread; `Some(reason)` when it cannot start.
    fn start_shootout(&mut self, req: ShootOutRequest, feed: &Sender<Feed>) -> Option<String> {
        if self.shootout.as_ref().is_some_and(|b| !b.finished()) {
            return Some("a shoot-out is already running".into());
        }
        let Some(tuner) = &self.tuner else {
            return Some("read-only: the shoot-out is disabled".into());
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
        match shootout::spawn(
            tuner.root().clone(),
            tuner.journal().cloned(),
            req,
            epoch,
            report,
        ) {
            Ok(h) => {
                self.shootout = Some(h);
                None
            }
            Err(e) => Some(format!("cannot start the shoot-out thread: {e}")),
        }
    }

    fn run(mut self, feed: &Sender<Feed>, control: &Receiver<Control>) {
        if !self.start_latency(feed) {
            return;
        }
        // The devices and their settings at once, the rates at the first tick.
        if let Some(first) = self.sampler.take_baseline() {
            self.last = Some((Instant::now(), first.t));
            if feed.send(Feed::Snapshot(Box::new(first))).is_err() {
                return;
            }
        }
        let mut next = Instant::now() + self.interval;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            match control.recv_timeout(wait) {
                Ok(Control::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    if let Some(ev) = self.recorder.stop() {
                        let _ = feed.send(Feed::Record(ev));
                    }
                    return;
                }
                Ok(Control::Record(path)) => {
                    let origin = self.last.map_or(0.0, |(_, t)| t);
                    let ev = match path {
                        Some(p) => {
                            // A recording's first facts must be whole.
                            self.sampler.complete();
                            self.recorder
                                .start(&p, &self.sampler, origin, self.interval)
                        }
                        None => self.recorder.stop(),
                    };
                    if let Some(ev) = ev
                        && feed.send(Feed::Record(ev)).is_err()
                    {
                        return;
                    }
                }
                Ok(Control::Seek(_) | Control::Speed(_)) => {}
                Ok(Control::Interval(d)) => {
                    self.interval = d;
                    next = self.last.map_or_else(Instant::now, |(i, _)| i) + d;
                }
                Ok(Control::Pause(p)) => {
                    self.paused = p;
                    next = Instant::now();
                }
                Ok(Control::Apply(req)) => {
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
                Ok(Control::WriteExport { path, text, force }) => {
                    let r = write_export(path, &text, force);
                    if feed.send(Feed::ExportWritten(r)).is_err() {
                        return;
                    }
                }
                Ok(Control::StartShootOut(req)) => {
                    if let Some(msg) = self.start_shootout(req, feed) {
                        let _ = feed.send(Feed::ShootOut(ShootOutFeed::Done(Err(msg))));
                    }
                }
                Ok(Control::Probe(device)) => self.retarget_probe(device),
                Ok(Control::Processes(on)) => self.where_io.show_processes(on),
                Ok(Control::CancelShootOut) => {
                    if let Some(b) = &self.shootout {
                        b.cancel();
                    }
                }
                Ok(Control::Refresh) => {
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

/// How writing an exported file went wrong (the answer to [`Control::WriteExport`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// The file exists and `force` was not given.
    Exists(String),
    /// Any other failure, as one line.
    Failed(String),
}

/// Write an exported file; an existing one is reported apart so the dialog can ask.
fn write_export(path: PathBuf, text: &str, force: bool) -> Result<PathBuf, WriteError> {
    match blktune_core::export::write_rules(&path, text, force) {
        Ok(()) => Ok(path),
        Err(ExportError::AlreadyExists { path }) => Err(WriteError::Exists(path)),
        Err(e) => Err(WriteError::Failed(e.to_string())),
    }
}
