//! The `b` dialog: a scheduler shoot-out on the selected device, run by
//! the worker ([`crate::tui::worker::shootout`]) on its own thread while the
//! sampler keeps drawing. Its state, its keys and the handling of the
//! runner's feed live here; its bindings are
//! [`crate::tui::command::SHOOTOUT`], its drawing `render/shootout.rs`.
//!
//! Stages: [`Stage::Setup`] (choose the load), [`Stage::Running`] (progress
//! bar; Esc cancels and the library restores the originals), then
//! [`Stage::Done`] (the results table; apply or export the winner) or
//! [`Stage::Failed`].
//!
//! Every scheduler is measured in interleaved rounds (1 s settle, 2 s dwell)
//! until the comparison engine decides or [`BUDGET`] runs out: then the
//! results say "no winner", and only a decided winner can be applied or
//! exported. `blktune bench --budget` is there for a longer measurement.

use super::{Ctx, Overlay, Reply};
use crate::tui::command::Action;
use crate::tui::status::StatusKind;
use crate::tui::worker::protocol::LiveControl;
use crate::tui::worker::shootout::{ShootOutFeed, ShootOutRequest};
use blktune_core::load::Mix;
use blktune_core::shootout::{Length, Progress, ShootoutResult};
use std::time::Duration;

/// Measuring time per round in the TUI.
pub const DWELL: Duration = Duration::from_secs(2);
/// Time after each switch before measuring.
pub const SETTLE: Duration = Duration::from_secs(1);
/// The most time a TUI shoot-out takes: it stops earlier once decided.
pub const BUDGET: Duration = Duration::from_secs(60);

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
pub struct ShootOutDialog {
    pub device: String,
    /// The device's `diskseq` when the dialog opened: the winner is applied
    /// only while the selected device is still this one.
    pub diskseq: Option<u64>,
    /// Schedulers the device offers (all are compared).
    pub schedulers: Vec<String>,
    pub load: LoadChoice,
    pub stage: Stage,
}

impl ShootOutDialog {
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

    /// The most time the whole shoot-out takes.
    pub fn planned(&self) -> Duration {
        BUDGET
    }

    /// The decided winner, when there is a result with one.
    pub fn winner(&self) -> Option<&str> {
        match &self.stage {
            Stage::Done(r) => r.verdict.winner.as_deref(),
            _ => None,
        }
    }
}

impl ShootOutDialog {
    /// What the worker is asked to run.
    pub fn request(&self) -> ShootOutRequest {
        ShootOutRequest {
            device: self.device.clone(),
            load: self.load.mix(),
            length: Length::Budget(BUDGET),
            settle: SETTLE,
            dwell: DWELL,
        }
    }

    /// Does `a` act on the device (start, apply the winner)? The app then
    /// checks first that the device is still the one the dialog opened on.
    pub fn acts_on_device(&self, a: Action) -> bool {
        matches!(
            (&self.stage, a),
            (Stage::Setup, Action::Confirm) | (Stage::Done(_), Action::ApplyWinner)
        )
    }

    /// Take an action; `ctx.refuse` says why a change cannot start now.
    /// `None` closes the dialog.
    pub fn on_action(mut self, a: Action, ctx: &Ctx, reply: &mut Reply) -> Option<Overlay> {
        let d = &mut self;
        match (&mut d.stage, a) {
            (Stage::Setup, Action::Cycle) => d.cycle_load(),
            (Stage::Setup, Action::Confirm) => {
                if let Some(why) = &ctx.refuse {
                    reply.say(StatusKind::Error, why.clone());
                } else {
                    d.stage = Stage::Running {
                        progress: None,
                        cancelling: false,
                    };
                    reply.say(
                        StatusKind::Info,
                        format!("shoot-out on {}: Esc cancels and restores", d.device),
                    );
                    reply.send(LiveControl::StartShootOut(d.request()));
                }
            }
            (Stage::Running { cancelling, .. }, Action::Cancel) if !*cancelling => {
                *cancelling = true;
                reply.send(LiveControl::CancelShootOut);
                reply.say(
                    StatusKind::Info,
                    format!(
                        "cancelling the shoot-out on {}: restoring the original settings…",
                        d.device
                    ),
                );
            }
            (Stage::Done(r), Action::ApplyWinner) => {
                // Only a decided winner: never a leader inside the noise.
                let Some((label, want)) = r.winner() else {
                    reply.say(StatusKind::Info, "no decided winner to apply");
                    return Some(Overlay::ShootOut(Box::new(self)));
                };
                // What the shoot-out itself left on the device: fresher than
                // the last snapshot, which may still show a scheduler it tried.
                let left = r.applied.as_ref().unwrap_or(&r.original);
                let same = left.scheduler == want.scheduler
                    && want.nr_requests.is_none_or(|n| left.nr_requests == Some(n));
                if let Some(why) = &ctx.refuse {
                    reply.say(StatusKind::Error, why.clone());
                } else if same {
                    reply.say(
                        StatusKind::Info,
                        format!("'{}': {label} is already active", d.device),
                    );
                } else {
                    reply.say(
                        StatusKind::Info,
                        format!("applying the winner: {} → {label}…", d.device),
                    );
                    reply.change(&d.device, d.diskseq, want.clone());
                    return None;
                }
            }
            (Stage::Done(r), Action::Export) => {
                if let Some((_, want)) = r.winner() {
                    let load = r.load.as_ref().map_or("passive".into(), |l| l.describe());
                    let text = format!("blktune shoot-out ({load}): {}", r.verdict.headline);
                    reply.export_winner = Some((d.device.clone(), want.clone(), text));
                    return None;
                }
                reply.say(StatusKind::Info, "no decided winner to export");
            }
            (Stage::Setup | Stage::Done(_) | Stage::Failed(_), Action::Cancel)
            | (Stage::Done(_) | Stage::Failed(_), Action::Confirm) => return None,
            _ => {}
        }
        Some(Overlay::ShootOut(Box::new(self)))
    }

    /// A message of the shoot-out runner while the dialog is open; returns
    /// whether the dialog closes (a cancel that finished).
    pub fn on_feed(&mut self, f: ShootOutFeed, reply: &mut Reply) -> bool {
        match f {
            ShootOutFeed::Progress(p) => {
                if let Stage::Running { progress, .. } = &mut self.stage {
                    *progress = Some(p);
                }
            }
            ShootOutFeed::Done(Ok(r)) => {
                let msg = match &r.verdict.winner {
                    Some(w) => format!(
                        "shoot-out on {} done: winner {w}; a applies it, e exports it",
                        r.device
                    ),
                    None => format!("shoot-out on {} done: no winner", r.device),
                };
                self.stage = Stage::Done(r);
                reply.say(StatusKind::Done, msg);
            }
            ShootOutFeed::Done(Err(e)) => {
                let cancelled = matches!(
                    self.stage,
                    Stage::Running {
                        cancelling: true,
                        ..
                    }
                );
                let e = e.to_string();
                self.stage = Stage::Failed(e.clone());
                if cancelled {
                    reply.say(StatusKind::Info, e);
                    return true;
                }
                reply.say(StatusKind::Error, e);
            }
        }
        false
    }
}

/// The end of a shoot-out whose dialog was closed: one line in the status.
pub fn on_feed_closed(f: ShootOutFeed, reply: &mut Reply) {
    if let ShootOutFeed::Done(r) = f {
        let text = r.map_or_else(|e| e.to_string(), |r| r.final_settings.clone());
        reply.say(StatusKind::Info, format!("shoot-out: {text}"));
    }
}
