//! The TUI's shoot-out runner: runs [`shootout::run`] on its own thread
//! and reports through a callback (progress, a chart mark at every switch,
//! the result), which the live worker turns into feed messages. Dropping
//! the handle cancels and waits, so quitting the TUI mid-run still restores
//! the original settings before exit. It knows no dialog: the request is
//! its own type ([`ShootOutRequest`]).

use blktune_core::history::ChangeMark;
use blktune_core::journal::Journal;
use blktune_core::load::{LoadOptions, Mix, Target};
use blktune_core::os::SysRoot;
use blktune_core::shootout::{
    self, Config, Length, LoadSpec, Phase, Progress, ShootoutResult, Tracing,
};
use blktune_core::tuner::Wanted;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the app asks for: a shoot-out of every scheduler of `device`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShootOutRequest {
    pub device: String,
    /// The load to add (read-only), or `None`: the device's own workload.
    pub load: Option<Mix>,
    /// Until decided, within a time budget, or a fixed number of rounds.
    pub length: Length,
    /// Time after each switch before measuring.
    pub settle: Duration,
    /// Measuring time per round.
    pub dwell: Duration,
}

/// What the shoot-out tells the app.
#[derive(Debug)]
pub enum ShootOutFeed {
    Progress(Progress),
    /// The end: the result, or why not (settings already restored).
    Done(Result<Box<ShootoutResult>, ShootOutError>),
}

/// Why a shoot-out of the TUI gave no result; the app shows its words.
#[derive(Debug, thiserror::Error)]
pub enum ShootOutError {
    /// One runs already (the dialog asks only when none does).
    #[error("a shoot-out is already running")]
    Busy,
    /// The session is read-only: no tuner.
    #[error("read-only: the shoot-out is disabled")]
    ReadOnly,
    #[error("cannot start the shoot-out thread: {0}")]
    Thread(std::io::Error),
    /// The request's load cannot run on `device` (nothing was changed).
    #[error("'{device}': {source}")]
    Load {
        device: String,
        source: blktune_core::load::LoadError,
    },
    /// The device is gone or was never one (nothing was changed).
    #[error(transparent)]
    Device(#[from] blktune_core::error::TuneError),
    /// The engine's shoot-out failed or was cancelled; its words say what
    /// happened to the settings.
    #[error(transparent)]
    Run(#[from] shootout::ShootoutError),
}

/// What the runner reports: for the app, or a switch to mark on the charts.
#[derive(Debug)]
pub enum Report {
    Feed(ShootOutFeed),
    /// The shoot-out switched the scheduler (or restored it) at this mark.
    Switched(ChangeMark),
}

/// A running shoot-out.
#[derive(Debug)]
pub struct ShootOutHandle {
    cancel: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ShootOutHandle {
    /// Ask it to stop; it restores the originals and reports `Done`.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Has the thread ended?
    pub fn finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for ShootOutHandle {
    fn drop(&mut self) {
        self.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The shoot-out configuration of a TUI request.
pub fn config(root: &SysRoot, req: &ShootOutRequest) -> Result<Config, ShootOutError> {
    let load = match req.load {
        None => None,
        // Read-only on any device: the TUI never writes to a device.
        Some(mix) => Some(LoadSpec {
            target: Target::read_only(root, &req.device).map_err(|source| ShootOutError::Load {
                device: req.device.clone(),
                source,
            })?,
            options: LoadOptions::new(mix),
        }),
    };
    Ok(Config {
        length: req.length,
        settle: req.settle,
        dwell: req.dwell,
        load,
        ..Config::passive(&req.device)
    })
}

/// Start a shoot-out; `epoch` is the sampler's time zero, so marks line up
/// with the charts. `tracing` is where the kernel's percentiles come from:
/// the live tracer, shared (the BPF program is loaded once), or why there are none.
pub fn spawn(
    root: SysRoot,
    journal: Option<Journal>,
    req: ShootOutRequest,
    tracing: Tracing,
    epoch: Instant,
    report: impl Fn(Report) + Send + 'static,
) -> std::io::Result<ShootOutHandle> {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let thread = std::thread::Builder::new()
        .name("blktune-shootout".into())
        .spawn(move || {
            let result = match config(&root, &req) {
                Err(e) => Err(e),
                Ok(cfg) => run(&root, journal, &cfg, tracing, epoch, &report, &flag),
            };
            report(Report::Feed(ShootOutFeed::Done(result)));
        })?;
    Ok(ShootOutHandle {
        cancel,
        thread: Some(thread),
    })
}

fn mark(dev: &str, epoch: Instant, from: &str, to: &str, what: &str) -> ChangeMark {
    let s = |n: &str| Wanted {
        scheduler: Some(n.to_string()),
        ..Wanted::default()
    };
    ChangeMark {
        device: dev.to_string(),
        t: epoch.elapsed().as_secs_f64(),
        label: format!("{what} {from}→{to}"),
        before: s(from),
        after: s(to),
    }
}

fn run(
    root: &SysRoot,
    journal: Option<Journal>,
    cfg: &Config,
    tracing: Tracing,
    epoch: Instant,
    report: &impl Fn(Report),
    cancel: &AtomicBool,
) -> Result<Box<ShootoutResult>, ShootOutError> {
    let dev = cfg.device.clone();
    let original =
        blktune_core::device::QueueSettings::read(root, &blktune_core::tuner::resolve(root, &dev)?)
            .scheduler
            .map(|s| s.active)
            .unwrap_or_default();
    let mut current = original.clone();
    let mut last_step = 0;
    let r = shootout::run_traced(
        root,
        journal,
        cfg,
        tracing,
        |p| {
            // The switch of a step is done once it settles: mark it there.
            if p.phase == Phase::Settling && p.step != last_step {
                last_step = p.step;
                if p.scheduler != current {
                    report(Report::Switched(mark(
                        &dev,
                        epoch,
                        &current,
                        &p.scheduler,
                        "shoot-out",
                    )));
                    current = p.scheduler.clone();
                }
            }
            report(Report::Feed(ShootOutFeed::Progress(p.clone())));
        },
        cancel,
    );
    let now =
        blktune_core::device::QueueSettings::read(root, &blktune_core::tuner::resolve(root, &dev)?)
            .scheduler
            .map(|s| s.active)
            .unwrap_or_default();
    if now != current {
        report(Report::Switched(mark(
            &dev, epoch, &current, &now, "restored",
        )));
    }
    Ok(Box::new(r?))
}
