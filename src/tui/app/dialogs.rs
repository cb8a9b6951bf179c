//! The app's side of the dialogs: opening them with what the app knows,
//! handing them actions and messages, and doing what they answer
//! ([`Reply`]). The dialogs themselves (state and keys) are in
//! [`crate::tui::dialogs`].

use super::Window;
use super::{App, Overlay, StatusKind};
use crate::tui::command::Action;
use crate::tui::dialogs::export::{Candidate, ExportDialog, WriteError};
use crate::tui::dialogs::shootout::{ShootOutDialog, on_feed_closed};
use crate::tui::dialogs::{Ctx, Reply, export};
use crate::tui::worker::protocol::{ApplyKind, Control};
use crate::tui::worker::shootout::ShootOutFeed;
use blktune_core::export as rules;
use blktune_core::history::Comparison;
use blktune_core::tuner::Wanted;
use std::path::PathBuf;

impl App {
    /// One device as the export dialog sees it; `winner` overrides its live
    /// settings (and brings its own measured text).
    fn candidate(&self, name: &str, winner: Option<&(Wanted, String)>) -> Option<Candidate> {
        let d = self.devices.iter().find(|d| d.name == name)?.clone();
        let hz = (self.kernel_hz.clone())
            .unwrap_or_else(|| blktune_core::kernel_hz::KernelHz::of_devices(&self.devices));
        let live = rules::live_settings(&d, &hz);
        let (settings, measured) = match winner {
            Some((w, text)) => (rules::with_switch_defaults(&live, w), Some(text.clone())),
            None => (
                live,
                self.last_change(name).and_then(|(m, c)| {
                    let i = self
                        .marks
                        .get(name)
                        .map_or(0, |v| v.len().saturating_sub(1));
                    measured_text(&m.label, &c, self.latency_compare(name, i).as_ref())
                }),
            ),
        };
        let udev_env = self
            .udev_db
            .as_ref()
            .map(|db| db.properties(d.major, d.minor))
            .unwrap_or_default();
        Some(Candidate {
            device: d,
            settings,
            udev_env,
            measured,
        })
    }

    /// Open the export dialog for `name` (prefilled with a shoot-out winner).
    pub(super) fn open_export(&mut self, name: &str, winner: Option<(Wanted, String)>) {
        // A rule of settings not read yet would set nothing it says it does;
        // one made from a file that did not read would leave its setting out
        // without a word (as `blktune export` refuses it).
        if self.refuse_unread(name) {
            return;
        }
        if let Some(why) = (self.devices.iter())
            .find(|d| d.name == name)
            .and_then(|d| d.queue.unreadable_text())
        {
            self.say(
                StatusKind::Error,
                format!("'{name}': {why}; nothing exported"),
            );
            return;
        }
        let Some(one) = self.candidate(name, winner.as_ref()) else {
            self.say(StatusKind::Error, format!("'{name}' is not shown"));
            return;
        };
        let changed = self
            .session()
            .iter()
            .filter_map(|s| self.candidate(&s.device, None))
            .collect();
        let dialog = ExportDialog::new(
            one,
            changed,
            self.host.hostname.clone(),
            self.devices.to_vec(),
            self.udev_db
                .as_ref()
                .map(|db| db.properties_of(&self.devices))
                .unwrap_or_default(),
            self.read_only.clone(),
        );
        self.overlay = Some(Overlay::Export(Box::new(dialog)));
    }

    /// Open the shoot-out dialog on the selected device, or say why not.
    pub(super) fn open_shootout(&mut self) {
        if let Some(why) = self.refuse_change(Action::ShootOut) {
            self.say(StatusKind::Error, why);
            return;
        }
        if let Some(name) = self.selected_device().map(|d| d.name.clone())
            && self.refuse_unread(&name)
        {
            return;
        }
        let Some(d) = self.selected_device() else {
            self.say(StatusKind::Error, self.no_selection());
            return;
        };
        let name = d.name.clone();
        match &d.queue.scheduler {
            Some(s) if s.available.len() > 1 => {
                let mut dialog = ShootOutDialog::new(&name, s.available.clone());
                dialog.diskseq = d.diskseq;
                self.overlay = Some(Overlay::ShootOut(Box::new(dialog)));
            }
            _ => self.say(
                StatusKind::Error,
                format!("'{name}' has fewer than two I/O schedulers: nothing to compare"),
            ),
        }
    }

    /// An action while a dialog is open: checked against the device the
    /// dialog was opened on, then handed to the dialog.
    pub(super) fn overlay_action(&mut self, action: Action) -> Vec<Control> {
        let Some(ov) = self.overlay.take() else {
            return Vec::new();
        };
        if ov.acts_on_device(action)
            && let Some((dev, seq, _)) = ov.device()
            && let Err(why) = self.still_selected(dev, seq)
        {
            // Never onto another device than the one the dialog was opened on.
            let closed = if matches!(ov, Overlay::ShootOut(_)) {
                "shoot-out closed, "
            } else {
                ""
            };
            self.say(
                StatusKind::Error,
                format!("{why}: {closed}nothing was changed"),
            );
            return Vec::new();
        }
        let refused = if action == Action::ApplyWinner {
            Action::ApplyWinner
        } else {
            Action::ShootOut
        };
        let ctx = Ctx {
            page_kb: self.page_kb,
            nr: ov
                .device()
                .map(|(dev, ..)| self.nr_limit(dev))
                .unwrap_or_default(),
            refuse: self.refuse_change(refused),
            help_max: self.help_max,
        };
        let (next, reply) = ov.on_action(action, &ctx);
        self.overlay = next;
        self.on_reply(reply)
    }

    /// Do what a dialog answered; returns what the worker must do.
    fn on_reply(&mut self, reply: Reply) -> Vec<Control> {
        if let Some((kind, text)) = reply.status {
            self.say(kind, text);
        }
        let mut out = reply.controls;
        for c in reply.changes {
            out.push(self.request(&c.device, c.diskseq, c.settings, ApplyKind::Change));
        }
        if let Some(devices) = reply.revert {
            out.extend(self.revert(&devices));
        }
        if let Some((dev, settings, text)) = reply.export_winner {
            self.open_export(&dev, Some((settings, text)));
        }
        out
    }

    /// `U` confirmed: put back exactly the devices the question named that
    /// still have changes here (a replaced device's were dropped).
    fn revert(&mut self, devices: &[String]) -> Vec<Control> {
        let session: Vec<_> = self
            .session()
            .into_iter()
            .filter(|s| devices.contains(&s.device))
            .collect();
        self.reverting = Some(super::RevertBatch {
            left: session.len(),
            ..Default::default()
        });
        let mut out = Vec::new();
        for s in &session {
            let seq = self.diskseq_of(&s.device);
            out.push(self.request(&s.device, seq, s.original.clone(), ApplyKind::RevertAll));
        }
        if session.is_empty() {
            self.reverting = None;
            self.say(
                StatusKind::Info,
                "nothing to revert any more; nothing was changed",
            );
        } else {
            self.say(
                StatusKind::Info,
                format!("applying: reverting {} device(s)…", session.len()),
            );
        }
        out
    }

    /// A message of the shoot-out runner.
    pub(super) fn on_shootout_feed(&mut self, shoot_out_feed: ShootOutFeed) {
        let mut reply = Reply::default();
        match &mut self.overlay {
            Some(Overlay::ShootOut(d)) => {
                if d.on_feed(shoot_out_feed, &mut reply) {
                    self.overlay = None;
                }
            }
            _ => on_feed_closed(shoot_out_feed, &mut reply),
        }
        self.on_reply(reply);
    }

    /// The answer to a [`LiveControl::WriteExport`](crate::tui::worker::protocol::LiveControl::WriteExport).
    pub(super) fn on_export_written(&mut self, result: Result<PathBuf, WriteError>) {
        let mut reply = Reply::default();
        let d = match &mut self.overlay {
            Some(Overlay::Export(d)) => Some(d.as_mut()),
            _ => None,
        };
        if export::on_written(d, result, self.read_only.is_some(), &mut reply) {
            self.overlay = None;
        }
        self.on_reply(reply);
    }
}

/// The before/after of a change as the rule file's header text, in the
/// engine's words ([`blktune_core::export::measured::before_after`]): no
/// percent from a window under three intervals, a move inside the noise
/// marked as such, so no unsound figure is ever written into a rule file.
/// `latency` is the kernel's windows of the change
/// ([`crate::tui::app::App::latency_compare`]): with both, the text cites
/// the read and write p99 before and after, each window's histograms
/// pooled, with their counts (a count alone under 100 I/Os).
fn measured_text(
    label: &str,
    comparison: &Comparison,
    latency: Option<&(Option<Window>, Option<Window>)>,
) -> Option<String> {
    let p99 = match latency {
        Some((Some(b), Some(a))) => Some((b.summary(), a.summary())),
        _ => None,
    };
    blktune_core::export::measured::before_after(label, comparison, p99)
}
