//! The live A/B of a change (`A`) on the app's side: which change it is
//! about, the rounds the worker's thread says it dwelt ([`AbFeed`]), each
//! read from what the app keeps once a snapshot covers its end (the same
//! figures, kernel histograms, devices underneath and system as a
//! before/after), and the engine's reading of them at the end
//! ([`before_after::from_rounds`]).

use super::{App, StatusKind, Window};
use crate::tui::command::Action;
use crate::tui::worker::ab::{AbFeed, AbRequest, DWELL, ROUNDS, SETTLE};
use crate::tui::worker::protocol::{Control, LiveControl};
use blktune_core::before_after::{self, BeforeAfter};
use blktune_core::compare::Round;

/// A round the worker dwelt in, waiting for the snapshot covering its end.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Dwell {
    config: usize,
    block: usize,
    from: f64,
    to: f64,
}

/// An A/B, running or done.
#[derive(Debug, Clone, PartialEq)]
pub struct AbState {
    pub device: String,
    /// The change it is about: its time on the clock and its label.
    pub mark_t: f64,
    pub label: String,
    /// Rounds planned.
    pub rounds: usize,
    /// The round being measured (1-based) and its configuration.
    pub step: usize,
    pub config: Option<usize>,
    /// When the current round's switch was made.
    pub switched_at: f64,
    pub settle: f64,
    pub dwell: f64,
    pending: Vec<Dwell>,
    /// The rounds read so far.
    pub measured: Vec<Round>,
    /// Rounds without a whole interval of data (the sampler was paused or slow).
    pub skipped: usize,
    /// Esc was pressed: the worker is restoring.
    pub cancelling: bool,
    /// The worker's last word: what happened to the settings, or why it stopped.
    pub done: Option<Result<String, String>>,
    /// The engine's reading, once every round is read.
    pub result: Option<BeforeAfter>,
}

impl AbState {
    /// Is the worker still switching?
    pub fn running(&self) -> bool {
        self.done.is_none()
    }

    /// `A/B round 3 of 12: before, measuring (about 50s left); Esc stops`.
    pub fn progress(&self, now: f64) -> String {
        let side = self
            .config
            .map_or("switching", |c| before_after::NAMES[c.min(1)]);
        let into = now - self.switched_at;
        let phase = if self.cancelling {
            "restoring your choice…"
        } else if into < self.settle {
            "settling"
        } else {
            "measuring"
        };
        let per = self.settle + self.dwell;
        let left = (self.rounds.saturating_sub(self.step) as f64 * per
            + (per - into).clamp(0.0, per))
        .max(0.0);
        format!(
            "A/B round {} of {}: {side}, {phase} (about {:.0}s left); Esc stops",
            self.step.max(1),
            self.rounds,
            left.ceil()
        )
    }
}

impl App {
    /// `A`: alternate the two configurations of the selected device's last
    /// change in interleaved rounds, to decide what one before/after cannot.
    pub(super) fn start_ab(&mut self) -> Vec<Control> {
        if let Some(why) = self.refuse_change(Action::AbTest) {
            self.say(StatusKind::Error, why);
            return Vec::new();
        }
        let Some(d) = self.selected_device() else {
            self.say(StatusKind::Error, self.no_selection());
            return Vec::new();
        };
        let (name, diskseq) = (d.name.clone(), d.diskseq);
        if self.refuse_unread(&name) {
            return Vec::new();
        }
        let Some(mark) = self.marks.get(&name).and_then(|m| m.last()).cloned() else {
            self.say(
                StatusKind::Error,
                format!("'{name}' has no change to compare yet: make one first (s, n, r, t)"),
            );
            return Vec::new();
        };
        if mark.before == mark.after {
            self.say(
                StatusKind::Error,
                format!(
                    "'{name}': the last change left every setting as it was: nothing to compare"
                ),
            );
            return Vec::new();
        }
        // A round must hold whole sample intervals: at least three.
        let itv = self.interval;
        let dwell = DWELL.max(itv * 3);
        let settle = SETTLE.max(itv);
        self.ab = Some(AbState {
            device: name.clone(),
            mark_t: mark.t,
            label: mark.label.clone(),
            rounds: ROUNDS,
            step: 0,
            config: None,
            switched_at: self.now,
            settle: settle.as_secs_f64(),
            dwell: dwell.as_secs_f64(),
            pending: Vec::new(),
            measured: Vec::new(),
            skipped: 0,
            cancelling: false,
            done: None,
            result: None,
        });
        self.say(
            StatusKind::Info,
            format!(
                "A/B on {name}: {ROUNDS} rounds alternating before and after '{}' (settle {:.0}s, dwell {:.0}s each); Esc stops; your choice comes back at the end",
                mark.label,
                settle.as_secs_f64(),
                dwell.as_secs_f64()
            ),
        );
        vec![
            LiveControl::StartAb(Box::new(AbRequest {
                device: name,
                diskseq,
                configs: [mark.before, mark.after],
                rounds: ROUNDS,
                settle,
                dwell,
            }))
            .into(),
        ]
    }

    /// Esc while an A/B runs: stop it (the worker restores the user's choice).
    pub(super) fn stop_ab(&mut self) -> Vec<Control> {
        let Some(ab) = self.ab.as_mut().filter(|a| a.running()) else {
            return Vec::new();
        };
        if ab.cancelling {
            return Vec::new();
        }
        ab.cancelling = true;
        let dev = ab.device.clone();
        self.say(
            StatusKind::Info,
            format!("stopping the A/B on {dev}: restoring your choice…"),
        );
        vec![LiveControl::CancelAb.into()]
    }

    /// A message of the A/B thread.
    pub(super) fn on_ab(&mut self, f: AbFeed) {
        let Some(ab) = self.ab.as_mut() else {
            return;
        };
        match f {
            AbFeed::Switched { step, config, t } => {
                ab.step = step;
                ab.config = Some(config);
                ab.switched_at = t;
            }
            AbFeed::Dwelt {
                config,
                block,
                from,
                to,
                ..
            } => ab.pending.push(Dwell {
                config,
                block,
                from,
                to,
            }),
            AbFeed::Done(r) => {
                let (kind, text) = match &r {
                    Ok(restored) => (
                        StatusKind::Done,
                        format!("A/B on {} done: {restored}", ab.device),
                    ),
                    Err(why) => (StatusKind::Error, why.clone()),
                };
                ab.done = Some(r);
                self.say(kind, text);
            }
        }
        self.read_ab_rounds();
    }

    /// Read the rounds whose end a snapshot covers; at the end, hand them
    /// to the engine. Called after every snapshot and A/B message.
    pub(super) fn read_ab_rounds(&mut self) {
        let Some(ab) = self.ab.as_ref() else {
            return;
        };
        if ab.pending.is_empty() && (ab.result.is_some() || ab.running()) {
            return;
        }
        let device = ab.device.clone();
        let (ready, waiting): (Vec<Dwell>, Vec<Dwell>) =
            ab.pending.iter().partition(|d| d.to <= self.now + 1e-9);
        let points = self.latency_points(&device);
        let mut read = Vec::new();
        let mut skipped = 0;
        for d in ready {
            let keep = |s: f64, e: f64| s >= d.from - 1e-9 && e <= d.to + 1e-9;
            let kernel = points
                .as_ref()
                .and_then(|p| Window::of(p.iter().filter(|p| keep(p.start(), p.t))));
            match self.window_figures(&device, keep, kernel.as_ref()) {
                Some(w) => read.push(w.round(d.config, d.block, d.from)),
                None => skipped += 1,
            }
        }
        let Some(ab) = self.ab.as_mut() else {
            return;
        };
        ab.pending = waiting;
        ab.measured.extend(read);
        ab.skipped += skipped;
        if !ab.running() && ab.pending.is_empty() && ab.result.is_none() {
            ab.result = Some(before_after::from_rounds(&ab.measured, &device));
        }
    }

    /// The A/B of `name`'s change at `mark_t`, if there is one.
    pub fn ab_of(&self, name: &str, mark_t: f64) -> Option<&AbState> {
        self.ab
            .as_ref()
            .filter(|a| a.device == name && (a.mark_t - mark_t).abs() < 1e-9)
    }
}
