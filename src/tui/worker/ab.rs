//! The TUI's live A/B (`A`): the two configurations of a change (its whole
//! settings before and after: scheduler, tunables, nr_requests) alternated
//! on the live device by the shoot-out's runner ([`shootout::run_traced`]
//! with [`Config::configurations`]): blocks of both, counterbalanced (`A B |
//! B A`), each round settling after its switch and then dwelling, every
//! switch through the tuner under the device's lock (journalled like every
//! change), the kernel's percentiles from the TUI's own tracer. At the end,
//! on Esc (the cancel flag) and when the handle is dropped (quitting), the
//! settings the device had when it started (the user's choice) come back.
//! Its rounds go back to the app as the engine's rounds
//! ([`shootout::round_of`]), for [`blktune_core::before_after::from_rounds`].

use blktune_core::compare::Round;
use blktune_core::journal::Journal;
use blktune_core::os::SysRoot;
use blktune_core::shootout::{self, Candidate, Config, Length, Phase, StartingPoint, Tracing};
use blktune_core::tuner::Wanted;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Blocks of an A/B unless asked otherwise: six pairs, twelve rounds.
pub const BLOCKS: usize = 6;
/// Time after each switch before a round measures (requests queued under
/// the old rules finish, kyber adapts its depths).
pub const SETTLE: Duration = Duration::from_secs(2);
/// Measuring time per round.
pub const DWELL: Duration = Duration::from_secs(4);

/// What the app asks for: alternate the settings before (0) and after (1)
/// a change of `device`.
#[derive(Debug, Clone, PartialEq)]
pub struct AbRequest {
    pub device: String,
    /// The device the user saw (a replaced one is refused).
    pub diskseq: Option<u64>,
    pub configs: [Wanted; 2],
    /// Blocks of both configurations (two rounds each).
    pub blocks: usize,
    pub settle: Duration,
    pub dwell: Duration,
}

impl AbRequest {
    /// The shoot-out's configurations of the two sides; `None` when the
    /// change is not one an A/B can alternate (no scheduler, or the two
    /// sides differ only in what a configuration does not hold: read-ahead).
    pub fn candidates(&self) -> Option<[Candidate; 2]> {
        let (a, b) = (
            Candidate::of(&self.configs[0])?,
            Candidate::of(&self.configs[1])?,
        );
        (a != b).then_some([a, b])
    }
}

/// How far it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AbProgress {
    /// 1-based round and the rounds planned.
    pub step: usize,
    pub steps: usize,
    /// The side measured now (0: before the change, 1: after it).
    pub config: Option<usize>,
    pub phase: Phase,
    pub time_left: Duration,
}

/// What an A/B gave.
#[derive(Debug, Clone, PartialEq)]
pub struct AbOutcome {
    /// Its rounds as the engine takes them (configuration 0: before).
    pub rounds: Vec<Round>,
    /// What happened to the settings at the end.
    pub restored: String,
}

/// What the A/B tells the app.
#[derive(Debug, Clone, PartialEq)]
pub enum AbFeed {
    Progress(AbProgress),
    /// The end: the rounds, or why it stopped (the settings' fate said).
    Done(Result<AbOutcome, String>),
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

/// Start the A/B thread: `tracing` is where the kernel's percentiles come
/// from (the TUI's tracer, shared).
pub fn spawn(
    root: SysRoot,
    journal: Option<Journal>,
    req: AbRequest,
    tracing: Tracing,
    report: impl Fn(AbFeed) + Send + 'static,
) -> std::io::Result<AbHandle> {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let thread = std::thread::Builder::new()
        .name("blktune-ab".into())
        .spawn(move || {
            let done = run(&root, journal, &req, tracing, &report, &flag);
            report(AbFeed::Done(done));
        })?;
    Ok(AbHandle {
        cancel,
        thread: Some(thread),
    })
}

/// The rounds and the restore, by the shoot-out's runner.
fn run(
    root: &SysRoot,
    journal: Option<Journal>,
    req: &AbRequest,
    tracing: Tracing,
    report: &impl Fn(AbFeed),
    cancel: &AtomicBool,
) -> Result<AbOutcome, String> {
    let dev = &req.device;
    let candidates = req.candidates().ok_or_else(|| {
        format!("'{dev}': an A/B alternates schedulers, nr_requests and tunables; the last change had none of them to alternate")
    })?;
    // Only the device the user saw: one re-created under its name is another.
    if let Some(seen) = req.diskseq
        && root
            .device(dev)
            .and_then(|d| root.read_diskseq(&d))
            .is_some_and(|now| now != seen)
    {
        return Err(format!(
            "'{dev}' was replaced by another device of that name (new diskseq): nothing was changed"
        ));
    }
    let labels = candidates.each_ref().map(Candidate::label);
    let cfg = Config {
        configurations: candidates.to_vec(),
        length: Length::Rounds(req.blocks),
        settle: req.settle,
        dwell: req.dwell,
        // What it puts back is the change the A/B tries, not the originals.
        start: StartingPoint::UsersChoice,
        ..Config::passive(dev)
    };
    let r = shootout::run_traced(
        root,
        journal,
        &cfg,
        tracing,
        |p| {
            let config = labels.iter().position(|l| *l == p.configuration);
            report(AbFeed::Progress(AbProgress {
                step: p.step,
                steps: p.steps,
                config: config.filter(|_| p.phase != Phase::Restoring),
                phase: p.phase,
                time_left: p.time_left,
            }));
        },
        cancel,
    )
    .map_err(|e| match e {
        shootout::ShootoutError::Cancelled { restore, .. } => {
            format!("A/B on {dev}: cancelled; {restore}")
        }
        shootout::ShootoutError::Aborted { cause, restore } => {
            format!("A/B on {dev}: {cause}; {restore}")
        }
        e => format!("A/B on {dev}: {e}"),
    })?;
    Ok(AbOutcome {
        rounds: r.measurements.iter().map(shootout::round_of).collect(),
        restored: r.final_settings,
    })
}
