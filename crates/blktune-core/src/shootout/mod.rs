//! The shoot-out: measure a device's configurations (its schedulers, and
//! nr_requests values with each) in interleaved rounds under the same load,
//! until the comparison engine ([`crate::compare`]) decides which is best or
//! the time budget runs out, and say which, or that it cannot.
//!
//! The rounds come in blocks (every configuration still in play, once,
//! counterbalanced: forward, then backward); after each switch the device
//! settles ([`Config::settle`]), then dwells ([`Config::dwell`]) between two
//! diskstats samples while the kernel times its I/O ([`round`]). The engine
//! looks at planned points ([`compare::Sequence`]): after the first look only
//! the leader and the configurations still undecided against it are
//! measured, until it decides, the looks run out or the budget does. Every
//! switch goes through [`Tuner`] (journalled, so a crash leaves `blktune
//! revert` able to undo it). Afterwards the original settings come back
//! ([`tuner::Locked::restore`] with the snapshot taken first, and the one
//! revert policy for the journal entry), or a decided winner is applied
//! with [`Config::apply`]. Cancelling (the `cancel` flag: Ctrl-C, SIGTERM,
//! Esc in the TUI) stops within a tenth of a second and restores too; so
//! does a panic in the `progress` callback (a closed stderr). The device's
//! lock is held from the snapshot to the restore, so no other change slips in.
//!
//! Library use, for the TUI's `b` key:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use blktune_core::shootout::{self, Config};
//! use std::sync::atomic::AtomicBool;
//! let root = blktune_core::os::SysRoot::default();
//! let cancel = AtomicBool::new(false);            // set it from Esc
//! let cfg = Config::passive("sda");               // or with a load: Config { load: Some(..), .. }
//! let journal = Some(blktune_core::journal::Journal::for_root(&root));
//! let result = shootout::run(&root, journal, &cfg, |p| eprintln!("{}", p.line()), &cancel)?;
//! println!("{}", shootout::table(&result));
//! # Ok(()) }
//! ```

mod blocks;
mod conclusion;
#[cfg(any(test, feature = "testing"))]
mod fake;
mod figures;
mod kernel;
mod report;
mod request;
mod round;
mod verdict;

pub use crate::latency::{IoLatency, KernelFigures};
pub use conclusion::{CONTROLS_HEAD, verdict_lines};
#[cfg(any(test, feature = "testing"))]
pub use fake::{FakeRounds, fake_result};
pub use figures::{ConfigSummary, Figures, Goal, LoadFigures, Metric, Spread, too_few_notes};
pub use kernel::{DwellHists, KernelStatus, SharedTracer, Tracing};
pub use report::{LoadInfo, ShootoutResult, table};
pub use request::{Candidate, Config, DEFAULT_BUDGET, Length, LoadSpec, StartingPoint};
pub use round::underneath;
pub use verdict::{Verdict, round_of, verdict};

use crate::compare::{self, LoadKind, RoundControls, Sequence};
use crate::device::QueueSettings;
use crate::error::TuneError;
use crate::journal::Journal;
use crate::load::LoadError;
use crate::os::SysRoot;
use crate::tuner::{self, Tuner, Wanted};
use blocks::measure_all;
#[cfg(test)]
use request::choose_schedulers;

use request::{Prepared, plan_of, prepare};
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// What the shoot-out is doing right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Switching,
    Settling,
    Measuring,
    Restoring,
}

/// A progress report, sent at every phase change and a few times a second.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub device: String,
    /// The scheduler of the configuration measured now.
    pub scheduler: String,
    /// The configuration measured now (`kyber nr_requests=256`).
    pub configuration: String,
    /// 1-based index of the round.
    pub step: usize,
    /// The most rounds the budget (or the fixed rounds) allows.
    pub steps: usize,
    /// 1-based index of the block.
    pub block: usize,
    pub phase: Phase,
    /// Estimated time until the last measurement ends at the latest.
    pub time_left: Duration,
    /// Fraction done, 0 to 1, for a progress bar.
    pub done: f64,
    /// The latest look of the engine, in a few words.
    pub look: Option<String>,
}

impl Progress {
    /// `round 7 of at most 43  kyber  measuring  95s left  (look 1: kyber leads; open: none, bfq)`
    pub fn line(&self) -> String {
        let phase = match self.phase {
            Phase::Switching => "switching",
            Phase::Settling => "settling",
            Phase::Measuring => "measuring",
            Phase::Restoring => "restoring",
        };
        let mut s = format!(
            "round {} of at most {}  {}  {}  {}s left",
            self.step,
            self.steps,
            self.configuration,
            phase,
            self.time_left.as_secs_f64().ceil() as u64
        );
        if let Some(l) = &self.look {
            s.push_str(&format!("  ({l})"));
        }
        s
    }
}

/// One measurement: one round of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// 1-based index of the round.
    pub round: usize,
    /// 1-based index of its block: pairs are made of rounds of one block.
    pub block: usize,
    /// Index of the configuration in [`ShootoutResult::configurations`].
    pub config: usize,
    pub configuration: String,
    /// Seconds from the start of the shoot-out to the start of the dwell.
    pub at_s: f64,
    pub dwell_s: f64,
    pub figures: Figures,
    /// The kernel's percentiles of the device's I/O in this dwell (`null`: not traced).
    #[serde(default)]
    pub kernel: Option<KernelFigures>,
    /// The settings the kernel reported while measuring (`kyber nr_requests=256`).
    pub settings: String,
    /// The offered load, the devices underneath and the system in this dwell.
    #[serde(default)]
    pub controls: RoundControls,
}

/// Why a shoot-out did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ShootoutError {
    /// Bad request; nothing was changed.
    #[error(transparent)]
    Tune(#[from] TuneError),
    /// Bad request; nothing was changed.
    #[error("{0}")]
    Usage(String),
    /// Something failed midway; `restore` says what happened to the settings.
    #[error("{cause}; {restore}")]
    Aborted { cause: String, restore: String },
    /// The cancel flag was set; `restore` says what happened to the settings.
    #[error("shoot-out on '{dev}' cancelled; {restore}")]
    Cancelled { dev: String, restore: String },
}

impl ShootoutError {
    /// 2 for bad requests, 1 for failures, 130 for a cancel (like Ctrl-C).
    pub fn exit_code(&self) -> i32 {
        match self {
            ShootoutError::Tune(t) => t.exit_code(),
            ShootoutError::Usage(_) => 2,
            ShootoutError::Aborted { .. } => 1,
            ShootoutError::Cancelled { .. } => 130,
        }
    }
}

/// Run a shoot-out. `progress` is called from this thread; `cancel` is polled
/// every 100 ms. Returns after the original settings are back (or the winner
/// applied); on error or cancel the settings are restored before returning.
/// The kernel's percentiles come from a tracer of its own ([`Tracing::Own`]).
pub fn run(
    root: &SysRoot,
    journal: Option<Journal>,
    cfg: &Config,
    progress: impl FnMut(&Progress),
    cancel: &AtomicBool,
) -> Result<ShootoutResult, ShootoutError> {
    run_traced(root, journal, cfg, Tracing::Own, progress, cancel)
}

/// [`run`], with the kernel's histograms from `tracing` (the TUI shares
/// the tracer its sampler already runs, so the program is loaded once).
pub fn run_traced(
    root: &SysRoot,
    journal: Option<Journal>,
    cfg: &Config,
    tracing: Tracing,
    mut progress: impl FnMut(&Progress),
    cancel: &AtomicBool,
) -> Result<ShootoutResult, ShootoutError> {
    let Prepared {
        dev,
        candidates,
        skipped,
        seq,
    } = prepare(root, cfg)?;
    // The kernel's percentiles of the device's own I/O, when it can.
    let mut tracer = kernel::DwellTracer::start(root, &dev, cfg.no_bpf, tracing);
    if let (Some(_), None, Err(why)) = (cfg.goal.fallback(), &cfg.load, &tracer) {
        return Err(ShootoutError::Usage(format!(
            "--goal {} without a --load needs the kernel's percentiles, and there are none here ({why}); choose a --load",
            cfg.goal
        )));
    }
    let kernel_status = KernelStatus {
        traced: tracer.is_ok(),
        unavailable: tracer.as_ref().err().map(ToString::to_string),
    };
    let metric = match (cfg.goal.fallback(), tracer.is_ok()) {
        (Some(f), false) => f,
        _ => cfg.goal.metric(),
    };
    let under = underneath(root, dev.as_str());
    let tuner = Tuner::new(root.clone(), journal).expecting(dev.as_str(), seq);
    let locked = tuner.lock(dev.as_str())?;
    // The original is read under the lock: no other change is half-way now.
    let original = Wanted::snapshot_of(&QueueSettings::read(root, &dev));
    let started = Instant::now();
    let mut guard = RestoreOnUnwind {
        locked: &locked,
        original: Some(original.clone()),
    };
    let labels: Vec<String> = candidates.iter().map(Candidate::label).collect();
    let load_kind = if cfg.load.is_some() {
        LoadKind::ClosedLoop
    } else {
        LoadKind::Unknown
    };
    let mut opts = compare::Options::new(metric, labels.clone(), dev.as_str(), load_kind);
    opts.min_effect = cfg.min_effect;
    let plan = plan_of(cfg, candidates.len());
    let bench = round::Bench {
        root,
        locked: &locked,
        cfg,
        under: &under,
        started,
        cancel,
    };
    let outcome = measure_all(
        &bench,
        &candidates,
        Sequence::new(candidates.len(), opts, plan),
        plan,
        tracer.as_mut().ok(),
        &mut progress,
    );
    progress(&Progress {
        device: dev.to_string(),
        scheduler: original.scheduler.clone().unwrap_or_default(),
        configuration: original.scheduler.clone().unwrap_or_default(),
        step: 0,
        steps: plan.max_rounds,
        block: 0,
        phase: Phase::Restoring,
        time_left: Duration::ZERO,
        done: 1.0,
        look: None,
    });
    let (measurements, hists, analysis) = match outcome {
        Ok(m) => m,
        Err(Stop::Replaced(cause)) => {
            // Nothing of the original goes onto another device; the journal
            // entry names the old diskseq, so 'revert' drops it as stale.
            return Err(ShootoutError::Aborted {
                cause,
                restore: not_restored(dev.as_str()),
            });
        }
        Err(e) => {
            let restore = restore(guard.disarm(), &original, cfg.start);
            return Err(match e {
                Stop::Cancelled => ShootoutError::Cancelled {
                    dev: dev.to_string(),
                    restore,
                },
                Stop::Failed(cause) => ShootoutError::Aborted { cause, restore },
                Stop::Replaced(_) => unreachable!("handled above"),
            });
        }
    };
    let summaries = summarise(&labels, &measurements, &hists);
    let settings: Vec<Wanted> = candidates.iter().map(Candidate::wanted).collect();
    let mut verdict = verdict(cfg.goal, analysis.as_ref(), &labels, &settings, &summaries);
    verdict.notes.splice(0..0, skipped);
    let (final_settings, applied) = match (&verdict.winner_settings, cfg.apply) {
        (Some(want), true) if !is_original(want, &original) => match locked.apply(want) {
            Ok(_) => (
                format!(
                    "winner applied: {} (undo with '{}')",
                    want.summary(),
                    locked.revert_command()
                ),
                Some(want.clone()),
            ),
            Err(e) => {
                let restore = restore(guard.disarm(), &original, cfg.start);
                return Err(ShootoutError::Aborted {
                    cause: format!("cannot apply the winner: {e}"),
                    restore,
                });
            }
        },
        _ => (restore(guard.disarm(), &original, cfg.start), None),
    };
    guard.disarm();
    Ok(ShootoutResult {
        device: dev.to_string(),
        scratch: cfg.scratch,
        load: cfg.load.as_ref().map(|l| report::LoadInfo::of(&l.options)),
        goal: cfg.goal,
        kernel: kernel_status,
        budget_s: match cfg.length {
            Length::Budget(b) => Some(b.as_secs_f64()),
            Length::Rounds(_) => None,
        },
        rounds: measurements.len(),
        blocks: measurements.iter().map(|m| m.block).max().unwrap_or(0),
        settle_s: cfg.settle.as_secs_f64(),
        dwell_s: cfg.dwell.as_secs_f64(),
        original,
        configurations: summaries,
        settings,
        measurements,
        analysis,
        verdict,
        applied,
        final_settings,
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}

/// Does `want` ask for what the device had at the start?
fn is_original(want: &Wanted, original: &Wanted) -> bool {
    want.scheduler == original.scheduler
        && want
            .nr_requests
            .is_none_or(|n| original.nr_requests == Some(n))
}

/// Each configuration's rounds pooled for display, with the kernel's histograms.
pub(crate) fn summarise(
    labels: &[String],
    measurements: &[Measurement],
    hists: &[Option<DwellHists>],
) -> Vec<ConfigSummary> {
    labels
        .iter()
        .enumerate()
        .map(|(c, label)| {
            let rounds = measurements
                .iter()
                .filter(|m| m.config == c)
                .map(|m| m.figures)
                .collect();
            let dwells: Vec<DwellHists> = measurements
                .iter()
                .zip(hists)
                .filter(|(m, _)| m.config == c)
                .filter_map(|(_, h)| h.clone())
                .collect();
            ConfigSummary::new(label, rounds).with_kernel(&dwells)
        })
        .collect()
}

/// Put the settings it started from back; a sentence saying what happened,
/// in the words of `start`. The journal entry follows the one revert policy
/// (dropped when the device is back at the journalled originals, whoever
/// made the entry).
fn restore(locked: &tuner::Locked<'_>, original: &Wanted, start: StartingPoint) -> String {
    let dev = locked.name();
    match locked.restore(original) {
        Ok(_) => format!("{} ({})", start.restored(), original.summary()),
        // Refused, as it must be: said as when the shoot-out saw it first.
        Err(TuneError::Replaced { .. }) => not_restored(dev),
        Err(e) => format!("RESTORE FAILED ({e}); run '{}'", locked.revert_command()),
    }
}

/// What a shoot-out whose device was re-created under its name did with
/// the original settings: nothing (they are the old device's), however it
/// found out (between steps, or when a step failed on the new device).
fn not_restored(dev: &str) -> String {
    format!(
        "nothing was restored onto the new device; 'blktune revert {dev}' drops the stale journal entry"
    )
}

/// Restores the original settings if the shoot-out unwinds (a panic in the
/// caller's `progress`, e.g. writing to a closed stderr) before it restored
/// them itself; [`RestoreOnUnwind::disarm`] once it takes over.
struct RestoreOnUnwind<'a, 'b> {
    locked: &'a tuner::Locked<'b>,
    original: Option<Wanted>,
}

impl<'a, 'b> RestoreOnUnwind<'a, 'b> {
    /// The locked device, for the normal restore; the guard does nothing more.
    fn disarm(&mut self) -> &'a tuner::Locked<'b> {
        self.original = None;
        self.locked
    }
}

impl Drop for RestoreOnUnwind<'_, '_> {
    fn drop(&mut self) {
        if let Some(original) = &self.original
            && std::thread::panicking()
        {
            let _ = self.locked.restore(original);
        }
    }
}

/// Why the rounds stopped early.
enum Stop {
    Cancelled,
    Failed(String),
    /// The device was re-created under its name (new diskseq).
    Replaced(String),
}

impl From<TuneError> for Stop {
    fn from(tune_error: TuneError) -> Self {
        match tune_error {
            TuneError::Replaced { .. } => Stop::Replaced(tune_error.to_string()),
            e => Stop::Failed(e.to_string()),
        }
    }
}

impl From<LoadError> for Stop {
    fn from(load_error: LoadError) -> Self {
        match load_error {
            LoadError::Replaced { .. } => Stop::Replaced(load_error.to_string()),
            e => Stop::Failed(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests;
