//! The shoot-out: switch a device through its schedulers, measure each under
//! the same load, and say which one won and whether the win is real.
//!
//! For every (round, scheduler) of [`plan`] the device is switched through
//! [`Tuner`](crate::tuner::Tuner) (journalled, so a crash leaves `blktune revert` able to undo it),
//! the load starts, [`Config::settle`] passes, then diskstats are sampled at
//! both ends of [`Config::dwell`] (one [`RateTracker`](crate::sampler::RateTracker) interval, i.e. exactly
//! what `iostat -x` prints for one interval of that length) while the
//! built-in load times its own I/Os. Afterwards the original settings come
//! back ([`tuner::Held::restore`](crate::tuner::Held::restore) with the snapshot taken first, and the one
//! revert policy for the journal entry), or the winner is applied with
//! [`Config::apply`]. Cancelling (the `cancel` flag: Ctrl-C, SIGTERM, Esc in
//! the TUI) stops within a tenth of a second and restores too; so does a
//! panic in the `progress` callback (a closed stderr). The device's lock is
//! held from the snapshot to the restore, so no other change slips in.
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
//!
//! The files: this one holds the request ([`Config`], [`LoadSpec`]) and what
//! a run reports ([`Progress`], [`Measurement`], [`ShootoutError`]); `run` the
//! runner (checks, the lock, the switches, the restore); `measure` one
//! dwell's sampling and figures; `export` the winner as a udev rule;
//! `verdict` the plan and the verdict; `report` the result and its table.

mod export;
mod measure;
mod report;
mod run;
mod verdict;

pub use export::{WinnerExport, export_winner};
pub use measure::figures;
pub use report::{LoadInfo, ShootoutResult, table, verdict_text};
pub use run::run;
pub use verdict::{
    Figures, Goal, LoadFigures, Metric, NOISE_FLOOR_PCT, SchedulerSummary, Spread, Verdict, plan,
    verdict,
};

use crate::error::TuneError;
use crate::load::{LoadOptions, Target};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The built-in load of a shoot-out and where it runs.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// Must be the benched device; writes only if [`Target::writable`] allowed them.
    pub target: Target,
    pub options: LoadOptions,
}

/// What to measure and how. Each scheduler runs with its default tunables
/// and nr_requests: a switch resets them (kernel `elevator_switch()`).
#[derive(Debug, Clone)]
pub struct Config {
    pub device: String,
    /// Schedulers to compare, in round-1 order; empty: every available one.
    pub schedulers: Vec<String>,
    pub rounds: usize,
    /// Time after each switch before measuring (queues refill, caches settle).
    pub settle: Duration,
    /// Measuring time per scheduler and round.
    pub dwell: Duration,
    /// `None`: passive, diskstats of whatever already runs on the device.
    pub load: Option<LoadSpec>,
    pub goal: Goal,
    /// Leave the winner applied instead of restoring the original settings.
    pub apply: bool,
    /// The device is a scratch device blktune created (reported only).
    pub scratch: bool,
}

impl Config {
    /// Defaults: every scheduler, 2 rounds, 1 s settle, 10 s dwell, passive, read latency.
    pub fn passive(device: &str) -> Self {
        Self {
            device: device.into(),
            schedulers: Vec::new(),
            rounds: 2,
            settle: Duration::from_secs(1),
            dwell: Duration::from_secs(10),
            load: None,
            goal: Goal::ReadLatency,
            apply: false,
            scratch: false,
        }
    }

    /// Total time the measurements take (without the switches).
    pub fn planned_time(&self, schedulers: usize) -> Duration {
        (self.settle + self.dwell) * (schedulers * self.rounds) as u32
    }
}

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
    pub scheduler: String,
    /// 1-based.
    pub round: usize,
    pub rounds: usize,
    /// 1-based index of the (round, scheduler) step.
    pub step: usize,
    pub steps: usize,
    pub phase: Phase,
    /// Estimated time until the last measurement ends.
    pub time_left: Duration,
    /// Fraction done, 0 to 1, for a progress bar.
    pub done: f64,
}

impl Progress {
    /// `round 1/2  kyber (3/8)  measuring  21s left`
    pub fn line(&self) -> String {
        let phase = match self.phase {
            Phase::Switching => "switching",
            Phase::Settling => "settling",
            Phase::Measuring => "measuring",
            Phase::Restoring => "restoring",
        };
        format!(
            "round {}/{}  {} ({}/{})  {}  {}s left",
            self.round,
            self.rounds,
            self.scheduler,
            self.step,
            self.steps,
            phase,
            self.time_left.as_secs_f64().ceil() as u64
        )
    }
}

/// One measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// 1-based.
    pub round: usize,
    pub scheduler: String,
    /// Seconds from the start of the shoot-out to the start of the dwell.
    pub at_s: f64,
    pub dwell_s: f64,
    pub figures: Figures,
    /// The settings the kernel reported while measuring (`kyber nr_requests=256`).
    pub settings: String,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_rounds_time_left_up() {
        let p = Progress {
            device: "loop3".into(),
            scheduler: "kyber".into(),
            round: 1,
            rounds: 2,
            step: 3,
            steps: 8,
            phase: Phase::Measuring,
            time_left: Duration::from_millis(20_100),
            done: 0.3,
        };
        assert_eq!(p.line(), "round 1/2  kyber (3/8)  measuring  21s left");
    }
}
