//! The live A/B of a change (`A`) on the app's side: which change it is
//! about, how far the worker's thread is ([`AbFeed`]), and at the end the
//! engine's reading of its rounds ([`before_after::from_rounds`]).

use super::{App, StatusKind};
use crate::tui::command::Action;
use crate::tui::worker::ab::{AbFeed, AbProgress, AbRequest, BLOCKS, DWELL, SETTLE};
use crate::tui::worker::protocol::{Control, LiveControl};
use blktune_core::before_after::{self, BeforeAfter};
use blktune_core::shootout::Phase;

/// An A/B, running or done.
#[derive(Debug, Clone, PartialEq)]
pub struct AbState {
    pub device: String,
    /// The change it is about: its time on the clock and its label.
    pub mark_t: f64,
    pub label: String,
    /// When it started: the change's own "after" window ends here (the
    /// A/B's rounds alternate both sides).
    pub started_at: f64,
    /// The worker's latest progress.
    pub progress: Option<AbProgress>,
    /// Esc was pressed: the worker is restoring.
    pub cancelling: bool,
    /// The worker's last word: what happened to the settings, or why it stopped.
    pub done: Option<Result<String, String>>,
    /// The engine's reading of its rounds, when it ran them all.
    pub result: Option<BeforeAfter>,
}

impl AbState {
    /// Is the worker still at it?
    pub fn running(&self) -> bool {
        self.done.is_none()
    }

    /// `A/B round 3 of 12: after, measuring, 50s left; Esc stops`.
    pub fn progress_line(&self) -> String {
        let Some(p) = self.progress else {
            return "A/B: starting…".into();
        };
        if self.cancelling || p.phase == Phase::Restoring {
            return "A/B: restoring your choice…".into();
        }
        let side = p
            .config
            .map_or("switching", |c| before_after::NAMES[c.min(1)]);
        let phase = match p.phase {
            Phase::Switching => "switching",
            Phase::Settling => "settling",
            Phase::Measuring | Phase::Restoring => "measuring",
        };
        format!(
            "A/B round {} of {}: {side}, {phase}, {}s left; Esc stops",
            p.step.max(1),
            p.steps,
            p.time_left.as_secs_f64().ceil() as u64
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
                format!("'{name}' has no change to compare yet: make one first (s, n, t)"),
            );
            return Vec::new();
        };
        let req = AbRequest {
            device: name.clone(),
            diskseq,
            configs: [mark.before, mark.after],
            blocks: BLOCKS,
            settle: SETTLE,
            dwell: DWELL,
        };
        if req.candidates().is_none() {
            self.say(
                StatusKind::Error,
                format!(
                    "'{name}': an A/B alternates schedulers, nr_requests and tunables; '{}' changed none of them",
                    mark.label
                ),
            );
            return Vec::new();
        }
        self.ab = Some(AbState {
            device: name.clone(),
            mark_t: mark.t,
            label: mark.label.clone(),
            started_at: self.now,
            progress: None,
            cancelling: false,
            done: None,
            result: None,
        });
        self.say(
            StatusKind::Info,
            format!(
                "A/B on {name}: {} rounds alternating before and after '{}' (settle {}s, dwell {}s each); Esc stops; your choice comes back at the end",
                2 * BLOCKS,
                mark.label,
                SETTLE.as_secs(),
                DWELL.as_secs()
            ),
        );
        vec![LiveControl::StartAb(Box::new(req)).into()]
    }

    /// Esc while an A/B runs: stop it (the worker restores the user's choice).
    pub(super) fn stop_ab(&mut self) -> Vec<Control> {
        let Some(ab) = self.ab.as_mut().filter(|a| a.running() && !a.cancelling) else {
            return Vec::new();
        };
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
            AbFeed::Progress(p) => ab.progress = Some(p),
            AbFeed::Done(Ok(outcome)) => {
                ab.result = Some(before_after::from_rounds(&outcome.rounds, &ab.device));
                let text = format!("A/B on {} done: {}", ab.device, outcome.restored);
                ab.done = Some(Ok(outcome.restored));
                self.say(StatusKind::Done, text);
            }
            AbFeed::Done(Err(why)) => {
                ab.done = Some(Err(why.clone()));
                self.say(StatusKind::Error, why);
            }
        }
    }

    /// The A/B of `name`'s change at `mark_t`, if there is one.
    pub fn ab_of(&self, name: &str, mark_t: f64) -> Option<&AbState> {
        self.ab
            .as_ref()
            .filter(|a| a.device == name && (a.mark_t - mark_t).abs() < 1e-9)
    }
}
