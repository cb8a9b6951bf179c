//! The `b` dialog: a scheduler shoot-out on the selected device, run by
//! [`super::bench_worker`] on its own thread while the sampler keeps drawing.
//!
//! Stages: [`Stage::Setup`] (choose the load), [`Stage::Running`] (progress
//! bar; Esc cancels and the library restores the originals), then
//! [`Stage::Done`] (the results table; apply or export the winner) or
//! [`Stage::Failed`].
//!
//! Defaults are sized for a live demo: every scheduler, one round, 1 s settle
//! and 5 s dwell, so four schedulers take about 25 s. One round cannot tell
//! noise from a difference; the results say so, and `blktune bench` is there
//! for the careful measurement.

use blktune_core::load::Mix;
use blktune_core::shootout::{Progress, ShootoutResult};
use std::time::Duration;

/// Measuring time per scheduler in the TUI.
pub const DWELL: Duration = Duration::from_secs(5);
/// Time after each switch before measuring.
pub const SETTLE: Duration = Duration::from_secs(1);
/// Rounds in the TUI.
pub const ROUNDS: usize = 1;

/// The load of a TUI shoot-out. Write loads are never offered: the TUI runs on
/// devices blktune did not create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadChoice {
    /// Diskstats of whatever already runs on the device (nothing is added).
    Passive,
    /// 4 KiB random reads at queue depth 4 (reads only, never writes).
    RandRead,
}

impl LoadChoice {
    /// How the dialog names it.
    pub fn label(self) -> &'static str {
        match self {
            LoadChoice::Passive => "passive (the device's own workload)",
            LoadChoice::RandRead => "randread (4 × 4 KiB random reads, read-only)",
        }
    }

    /// The built-in mix, if any.
    pub fn mix(self) -> Option<Mix> {
        match self {
            LoadChoice::Passive => None,
            LoadChoice::RandRead => Some(Mix::RandRead),
        }
    }
}

/// What the dialog shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    Setup,
    Running {
        progress: Option<Progress>,
        /// Esc was pressed; waiting for the restore.
        cancelling: bool,
    },
    Done(Box<ShootoutResult>),
    Failed(String),
}

/// The shoot-out dialog.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchDialog {
    pub device: String,
    /// The device's `diskseq` when the dialog opened: the winner is applied
    /// only while the selected device is still this one.
    pub diskseq: Option<u64>,
    /// Schedulers the device offers (all are compared).
    pub schedulers: Vec<String>,
    pub load: LoadChoice,
    pub stage: Stage,
}

impl BenchDialog {
    /// A dialog in its setup stage, passive by default.
    pub fn new(device: &str, schedulers: Vec<String>) -> Self {
        Self {
            device: device.into(),
            diskseq: None,
            schedulers,
            load: LoadChoice::Passive,
            stage: Stage::Setup,
        }
    }

    /// `Tab`: the other load (only before starting).
    pub fn cycle_load(&mut self) {
        if self.stage == Stage::Setup {
            self.load = match self.load {
                LoadChoice::Passive => LoadChoice::RandRead,
                LoadChoice::RandRead => LoadChoice::Passive,
            };
        }
    }

    /// Is the shoot-out running (the dialog must not close)?
    pub fn running(&self) -> bool {
        matches!(self.stage, Stage::Running { .. })
    }

    /// Planned time of the whole shoot-out.
    pub fn planned(&self) -> Duration {
        (SETTLE + DWELL) * (self.schedulers.len() * ROUNDS) as u32
    }

    /// The winner's scheduler, when there is a result with one.
    pub fn winner(&self) -> Option<&str> {
        match &self.stage {
            Stage::Done(r) => r.verdict.as_ref().map(|v| v.winner.as_str()),
            _ => None,
        }
    }
}

/// What the app sends the source to start a shoot-out.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRequest {
    pub device: String,
    pub load: LoadChoice,
}
