//! The TUI's shoot-out thread: runs [`shootout::run`] off the UI thread and
//! reports on the app's feed channel (progress, a chart mark at every
//! switch, the result). Dropping the handle cancels and waits, so quitting
//! the TUI mid-run still restores the original settings before exit.

use super::bench_dialog::{BenchRequest, DWELL, ROUNDS, SETTLE};
use super::source::Feed;
use blktune_core::history::ChangeMark;
use blktune_core::journal::Journal;
use blktune_core::load::{LoadOptions, Target};
use blktune_core::os::SysRoot;
use blktune_core::shootout::{self, Config, LoadSpec, Phase, Progress, ShootoutResult};
use blktune_core::tuner::Settings;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::Instant;

/// What the shoot-out thread tells the app.
#[derive(Debug, Clone, PartialEq)]
pub enum BenchFeed {
    Progress(Progress),
    /// The end: the result, or the error line (settings already restored).
    Done(Result<Box<ShootoutResult>, String>),
}

/// A running shoot-out.
#[derive(Debug)]
pub struct BenchHandle {
    cancel: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl BenchHandle {
    /// Ask it to stop; it restores the originals and reports `Done`.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Has the thread ended?
    pub fn finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for BenchHandle {
    fn drop(&mut self) {
        self.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The shoot-out configuration of a TUI request (see [`super::bench_dialog`] for the defaults).
pub fn config(root: &SysRoot, req: &BenchRequest) -> Result<Config, String> {
    let load = match req.load.mix() {
        None => None,
        // Read-only on any device: the TUI never writes to a device.
        Some(mix) => Some(LoadSpec {
            target: Target::read_only(root, &req.device).map_err(|e| e.to_string())?,
            options: LoadOptions::new(mix),
        }),
    };
    Ok(Config {
        rounds: ROUNDS,
        settle: SETTLE,
        dwell: DWELL,
        load,
        ..Config::passive(&req.device)
    })
}

/// Start a shoot-out; `epoch` is the sampler's time zero, so marks line up with the charts.
pub fn spawn(
    root: SysRoot,
    journal: Option<Journal>,
    req: BenchRequest,
    epoch: Instant,
    feed: Sender<Feed>,
) -> std::io::Result<BenchHandle> {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let thread = std::thread::Builder::new()
        .name("blktune-shootout".into())
        .spawn(move || {
            let result = match config(&root, &req) {
                Err(e) => Err(format!("'{}': {e}", req.device)),
                Ok(cfg) => run(&root, journal, &cfg, epoch, &feed, &flag),
            };
            let _ = feed.send(Feed::Bench(BenchFeed::Done(result)));
        })?;
    Ok(BenchHandle {
        cancel,
        thread: Some(thread),
    })
}

fn mark(dev: &str, epoch: Instant, from: &str, to: &str, what: &str) -> ChangeMark {
    let s = |n: &str| Settings {
        scheduler: Some(n.to_string()),
        ..Settings::default()
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
    epoch: Instant,
    feed: &Sender<Feed>,
    cancel: &AtomicBool,
) -> Result<Box<ShootoutResult>, String> {
    let dev = cfg.device.clone();
    let original = blktune_core::device::QueueSettings::read(
        root,
        &blktune_core::tuner::resolve(root, &dev).map_err(|e| e.to_string())?,
    )
    .scheduler
    .map(|s| s.active)
    .unwrap_or_default();
    let mut current = original.clone();
    let mut last_step = 0;
    let r = shootout::run(
        root,
        journal,
        cfg,
        |p| {
            // The switch of a step is done once it settles: mark it there.
            if p.phase == Phase::Settling && p.step != last_step {
                last_step = p.step;
                if p.scheduler != current {
                    let _ = feed.send(Feed::Change(mark(
                        &dev,
                        epoch,
                        &current,
                        &p.scheduler,
                        "shoot-out",
                    )));
                    current = p.scheduler.clone();
                }
            }
            let _ = feed.send(Feed::Bench(BenchFeed::Progress(p.clone())));
        },
        cancel,
    );
    let now = blktune_core::device::QueueSettings::read(
        root,
        &blktune_core::tuner::resolve(root, &dev).map_err(|e| e.to_string())?,
    )
    .scheduler
    .map(|s| s.active)
    .unwrap_or_default();
    if now != current {
        let _ = feed.send(Feed::Change(mark(&dev, epoch, &current, &now, "restored")));
    }
    r.map(Box::new).map_err(|e| e.to_string())
}
