//! The TUI's live A/B (`A`): the two configurations of a change alternated
//! on the live device, in interleaved and counterbalanced blocks (`A B | B
//! A`, [`block_order`]), each round settling after its switch and then
//! dwelling, on its own thread. Every switch goes through the tuner under
//! the device's lock (journalled like every change); at the end, on Esc
//! (the cancel flag) and when the handle is dropped (quitting), the
//! settings the device had when it started (the user's choice) come back.
//!
//! It measures nothing itself: it says when each round dwelt, on the
//! sampler's clock, and the app reads that round's figures from what it
//! already keeps (diskstats, the kernel's histograms, the devices
//! underneath, the system), then hands the rounds to the comparison engine.

use blktune_core::compare::design::block_order;
use blktune_core::device::QueueSettings;
use blktune_core::error::TuneError;
use blktune_core::tuner::{self, Tuner, Wanted};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Rounds of an A/B unless asked otherwise: six pairs.
pub const ROUNDS: usize = 12;
/// Time after each switch before a round measures (requests queued under
/// the old rules finish, kyber adapts its depths).
pub const SETTLE: Duration = Duration::from_secs(2);
/// Measuring time per round.
pub const DWELL: Duration = Duration::from_secs(4);

/// What the app asks for: alternate `configs` (0: before the change, 1:
/// after it) on `device`.
#[derive(Debug, Clone, PartialEq)]
pub struct AbRequest {
    pub device: String,
    /// The device the user saw (a replaced one is refused).
    pub diskseq: Option<u64>,
    pub configs: [Wanted; 2],
    /// Both configurations' rounds together (even: whole blocks).
    pub rounds: usize,
    pub settle: Duration,
    pub dwell: Duration,
}

/// What the A/B tells the app.
#[derive(Debug, Clone, PartialEq)]
pub enum AbFeed {
    /// A round starts: its configuration was switched in at `t`.
    Switched { step: usize, config: usize, t: f64 },
    /// A round dwelt from `from` to `to` (the sampler's clock).
    Dwelt {
        step: usize,
        config: usize,
        block: usize,
        from: f64,
        to: f64,
    },
    /// The end: what happened to the settings, or why it stopped.
    Done(Result<String, String>),
}

/// A running A/B; dropping it cancels and waits (the settings come back).
#[derive(Debug)]
pub struct AbHandle {
    cancel: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl AbHandle {
    /// Ask it to stop; it restores the user's choice and reports `Done`.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Has the thread ended?
    pub fn finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for AbHandle {
    fn drop(&mut self) {
        self.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Start the A/B thread; `clock` gives the sampler's time for an instant.
pub fn spawn(
    tuner: Tuner,
    req: AbRequest,
    clock: impl Fn(Instant) -> f64 + Send + 'static,
    report: impl Fn(AbFeed) + Send + 'static,
) -> std::io::Result<AbHandle> {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let thread = std::thread::Builder::new()
        .name("blktune-ab".into())
        .spawn(move || {
            let done = run(&tuner, &req, &clock, &report, &flag);
            report(AbFeed::Done(done));
        })?;
    Ok(AbHandle {
        cancel,
        thread: Some(thread),
    })
}

/// `mq-deadline nr_requests=256`: what a user chose, in a few words (the
/// tunables and read-ahead came back with it).
fn short(w: &Wanted) -> String {
    let mut s = w.scheduler.clone().unwrap_or_default();
    if let Some(n) = w.nr_requests {
        s.push_str(&format!(" nr_requests={n}"));
    }
    s
}

/// Why the rounds stopped early.
enum Stop {
    Cancelled,
    Failed(String),
}

/// Sleep until `until` in slices; `Err` once the flag is set.
fn wait(until: Instant, cancel: &AtomicBool) -> Result<(), Stop> {
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Err(Stop::Cancelled);
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        std::thread::sleep((until - now).min(Duration::from_millis(100)));
    }
}

/// The rounds, then the restore; the sentence the status line shows.
fn run(
    tuner: &Tuner,
    req: &AbRequest,
    clock: &impl Fn(Instant) -> f64,
    report: &impl Fn(AbFeed),
    cancel: &AtomicBool,
) -> Result<String, String> {
    let dev = tuner::resolve(tuner.root(), &req.device).map_err(|e| e.to_string())?;
    let tuner = tuner.clone().expecting(dev.as_str(), req.diskseq);
    let locked = tuner.lock(dev.as_str()).map_err(|e| e.to_string())?;
    // The user's choice, read under the lock: what comes back at the end.
    let original = Wanted::snapshot_of(&QueueSettings::read(tuner.root(), &dev));
    let rounds = (|| -> Result<(), Stop> {
        let mut step = 0;
        for block in 0..req.rounds.div_ceil(2) {
            for config in block_order(&[0, 1], block) {
                if step >= req.rounds {
                    return Ok(());
                }
                step += 1;
                wait(Instant::now(), cancel)?;
                let at = Instant::now();
                locked
                    .apply(&req.configs[config])
                    .map_err(|e| Stop::Failed(e.to_string()))?;
                report(AbFeed::Switched {
                    step,
                    config,
                    t: clock(at),
                });
                wait(Instant::now() + req.settle, cancel)?;
                let from = Instant::now();
                wait(from + req.dwell, cancel)?;
                report(AbFeed::Dwelt {
                    step,
                    config,
                    block,
                    from: clock(from),
                    to: clock(Instant::now()),
                });
            }
        }
        Ok(())
    })();
    let restored = match locked.restore(&original) {
        Ok(_) => format!("your choice is back ({})", short(&original)),
        Err(TuneError::Replaced { .. }) => format!(
            "'{dev}' was re-created: nothing restored; 'blktune revert {dev}' drops the stale entry"
        ),
        Err(e) => format!("RESTORE FAILED ({e}); run 'blktune revert {dev}'"),
    };
    match rounds {
        Ok(()) => Ok(restored),
        Err(Stop::Cancelled) => Err(format!("A/B on {dev} stopped; {restored}")),
        Err(Stop::Failed(why)) => Err(format!("A/B on {dev} failed: {why}; {restored}")),
    }
}
