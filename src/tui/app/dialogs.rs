//! Keys and feed messages of the export (`e`) and shoot-out (`b`) dialogs.
//! Pure state changes; the writes and the shoot-out run on other threads and
//! are asked for with [`Control`] messages.

use super::{App, Overlay, StatusKind};
use crate::tui::bench_dialog::{BenchDialog, BenchRequest, Stage};
use crate::tui::bench_worker::BenchFeed;
use crate::tui::command::Action;
use crate::tui::export_dialog::{
    APPLY_HINT, Candidate, ExportDialog, Focus, WriteError, measured_text,
};
use crate::tui::source::{ApplyKind, Control};
use blktune_core::export;
use blktune_core::shootout::verdict_text;
use blktune_core::tuner::Settings;
use std::path::PathBuf;

/// Longest path the export dialog accepts (PATH_MAX).
const MAX_PATH: usize = 4096;

impl App {
    /// One device as the export dialog sees it; `winner` overrides its live
    /// settings (and brings its own measured text).
    fn candidate(&self, name: &str, winner: Option<&(Settings, String)>) -> Option<Candidate> {
        let d = self.devices.iter().find(|d| d.name == name)?.clone();
        let live = export::live_settings(&d);
        let (settings, measured) = match winner {
            Some((w, text)) => (export::with_switch_defaults(&live, w), Some(text.clone())),
            None => (
                live,
                self.last_change(name)
                    .and_then(|(m, c)| measured_text(&m.label, &c)),
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
    pub(super) fn open_export(&mut self, name: &str, winner: Option<(Settings, String)>) {
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
    pub(super) fn open_bench(&mut self) {
        if let Some(why) = self.refuse_change(Action::ShootOut) {
            self.say(StatusKind::Error, why);
            return;
        }
        let Some(d) = self.selected_device() else {
            self.say(StatusKind::Error, self.no_selection());
            return;
        };
        let name = d.name.clone();
        match &d.queue.scheduler {
            Some(s) if s.available.len() > 1 => {
                let mut dialog = BenchDialog::new(&name, s.available.clone());
                dialog.diskseq = d.diskseq;
                self.overlay = Some(Overlay::Bench(Box::new(dialog)));
            }
            _ => self.say(
                StatusKind::Error,
                format!("'{name}' has fewer than two I/O schedulers: nothing to compare"),
            ),
        }
    }

    /// A key while the export or shoot-out dialog is open.
    pub(super) fn dialog_action(&mut self, a: Action) -> Vec<Control> {
        match self.overlay.take() {
            Some(Overlay::Export(d)) => self.export_action(*d, a),
            Some(Overlay::Bench(d)) => self.bench_action(*d, a),
            other => {
                self.overlay = other;
                Vec::new()
            }
        }
    }

    fn export_action(&mut self, mut d: ExportDialog, a: Action) -> Vec<Control> {
        let mut out = Vec::new();
        match (d.focus.clone(), a) {
            (Focus::Options, Action::Cancel) => return out,
            (Focus::Options, Action::Cycle) => d.cycle_strategy(),
            (Focus::Options, Action::Toggle) => {
                if let Err(why) = d.toggle_all() {
                    self.say(StatusKind::Info, why);
                }
            }
            (Focus::Options, Action::EditPath) => {
                d.focus = Focus::Path {
                    before: d.path.clone(),
                }
            }
            (Focus::Options, Action::Up) => d.scroll_by(-1),
            (Focus::Options, Action::Down) => d.scroll_by(1),
            (Focus::Options, Action::PageUp) => d.scroll_by(-10),
            (Focus::Options, Action::PageDown) => d.scroll_by(10),
            (Focus::Options, Action::Confirm) => match d.ready() {
                // Warnings first: the rule may reach other disks or not last.
                Ok(_) if !d.warnings().is_empty() => {
                    d.focus = Focus::Warnings;
                    let n = d.warnings().len();
                    self.say(
                        StatusKind::Info,
                        format!(
                            "{n} warning{}: y writes anyway, n goes back",
                            if n == 1 { "" } else { "s" }
                        ),
                    );
                }
                Ok((path, text)) => {
                    d.focus = Focus::Writing;
                    out.push(Control::WriteExport {
                        path,
                        text,
                        force: false,
                    });
                }
                Err(why) => self.say(StatusKind::Error, why),
            },
            // y after the warnings, or y to replace an existing file.
            (Focus::Warnings | Focus::Overwrite, Action::Confirm) => {
                let force = d.focus == Focus::Overwrite;
                match d.ready() {
                    Ok((path, text)) => {
                        d.focus = Focus::Writing;
                        out.push(Control::WriteExport { path, text, force });
                    }
                    Err(why) => {
                        d.focus = Focus::Options;
                        self.say(StatusKind::Error, why);
                    }
                }
            }
            (Focus::Path { .. }, Action::Input(c)) if d.path.len() < MAX_PATH => d.path.push(c),
            (Focus::Path { .. }, Action::Backspace) => {
                d.path.pop();
            }
            (Focus::Path { .. }, Action::Confirm) => {
                d.focus = Focus::Options;
                d.refresh();
            }
            (Focus::Path { before }, Action::Cancel) => {
                d.path = before;
                d.focus = Focus::Options;
            }
            (Focus::Warnings, Action::Cancel) => {
                d.focus = Focus::Options;
                self.say(
                    StatusKind::Info,
                    format!(
                        "{} not written; Enter lists the warnings again",
                        d.path.trim()
                    ),
                );
            }
            // The answer still comes (and lands in the status line); the dialog may go.
            (Focus::Writing, Action::Cancel) => return out,
            (Focus::Overwrite, Action::Cancel) => {
                d.focus = Focus::Options;
                self.say(
                    StatusKind::Info,
                    format!("{} not overwritten; p changes the path", d.path.trim()),
                );
            }
            _ => {}
        }
        self.overlay = Some(Overlay::Export(Box::new(d)));
        out
    }

    fn bench_action(&mut self, mut d: BenchDialog, a: Action) -> Vec<Control> {
        let mut out = Vec::new();
        let acts = matches!(
            (&d.stage, a),
            (Stage::Setup, Action::Confirm) | (Stage::Done(_), Action::ApplyWinner)
        );
        if acts && let Err(why) = self.still_selected(&d.device, d.diskseq) {
            // Never onto another device than the one the dialog was opened on.
            self.say(
                StatusKind::Error,
                format!("{why}: shoot-out closed, nothing was changed"),
            );
            return out;
        }
        match (&mut d.stage, a) {
            (Stage::Setup, Action::Cycle) => d.cycle_load(),
            (Stage::Setup, Action::Confirm) => {
                if let Some(why) = self.refuse_change(Action::ShootOut) {
                    self.say(StatusKind::Error, why);
                } else {
                    d.stage = Stage::Running {
                        progress: None,
                        cancelling: false,
                    };
                    self.say(
                        StatusKind::Info,
                        format!("shoot-out on {}: Esc cancels and restores", d.device),
                    );
                    out.push(Control::StartShootout(BenchRequest {
                        device: d.device.clone(),
                        load: d.load,
                    }));
                }
            }
            (Stage::Running { cancelling, .. }, Action::Cancel) if !*cancelling => {
                *cancelling = true;
                out.push(Control::CancelShootout);
                self.say(
                    StatusKind::Info,
                    format!(
                        "cancelling the shoot-out on {}: restoring the original settings…",
                        d.device
                    ),
                );
            }
            (Stage::Done(r), Action::ApplyWinner) => {
                let Some(v) = &r.verdict else {
                    self.say(StatusKind::Info, "no winner to apply");
                    self.overlay = Some(Overlay::Bench(Box::new(d)));
                    return out;
                };
                // What the shoot-out itself left on the device: fresher than
                // the last snapshot, which may still show a scheduler it tried.
                let active = r.applied.as_ref().unwrap_or(&r.original).scheduler.clone();
                if let Some(why) = self.refuse_change(Action::ApplyWinner) {
                    self.say(StatusKind::Error, why);
                } else if active.as_deref() == Some(v.winner.as_str()) {
                    self.say(
                        StatusKind::Info,
                        format!("'{}': {} is already active", d.device, v.winner),
                    );
                } else {
                    let s = Settings {
                        scheduler: Some(v.winner.clone()),
                        ..Settings::default()
                    };
                    self.say(
                        StatusKind::Info,
                        format!("applying the winner: {} → {}…", d.device, v.winner),
                    );
                    out.push(self.request(&d.device, d.diskseq, s, ApplyKind::Change));
                    return out;
                }
            }
            (Stage::Done(r), Action::Export) => {
                if let Some(v) = &r.verdict {
                    let s = Settings {
                        scheduler: Some(v.winner.clone()),
                        ..Settings::default()
                    };
                    let load = r.load.as_ref().map_or("passive".into(), |l| l.describe());
                    let text = format!("blktune shoot-out ({load}): {}", verdict_text(v));
                    let dev = d.device.clone();
                    self.open_export(&dev, Some((s, text)));
                    return out;
                }
                self.say(StatusKind::Info, "no winner to export");
            }
            (Stage::Setup | Stage::Done(_) | Stage::Failed(_), Action::Cancel)
            | (Stage::Done(_) | Stage::Failed(_), Action::Confirm) => return out,
            _ => {}
        }
        self.overlay = Some(Overlay::Bench(Box::new(d)));
        out
    }

    /// A message of the shoot-out thread.
    pub(super) fn on_bench_feed(&mut self, f: BenchFeed) {
        let Some(Overlay::Bench(d)) = &mut self.overlay else {
            if let BenchFeed::Done(r) = f {
                let text = r.map_or_else(|e| e, |r| r.final_settings.clone());
                self.say(StatusKind::Info, format!("shoot-out: {text}"));
            }
            return;
        };
        match f {
            BenchFeed::Progress(p) => {
                if let Stage::Running { progress, .. } = &mut d.stage {
                    *progress = Some(p);
                }
            }
            BenchFeed::Done(Ok(r)) => {
                let msg = match &r.verdict {
                    Some(v) => format!(
                        "shoot-out on {} done: winner {}; a applies it, e exports it",
                        r.device, v.winner
                    ),
                    None => format!("shoot-out on {} done: no winner", r.device),
                };
                d.stage = Stage::Done(r);
                self.say(StatusKind::Done, msg);
            }
            BenchFeed::Done(Err(e)) => {
                let cancelled = matches!(
                    d.stage,
                    Stage::Running {
                        cancelling: true,
                        ..
                    }
                );
                d.stage = Stage::Failed(e.clone());
                if cancelled {
                    self.overlay = None;
                    self.say(StatusKind::Info, e);
                } else {
                    self.say(StatusKind::Error, e);
                }
            }
        }
    }

    /// The answer to a [`Control::WriteExport`].
    pub(super) fn on_export_written(&mut self, r: Result<PathBuf, WriteError>) {
        let names = match &mut self.overlay {
            Some(Overlay::Export(d)) => {
                match &r {
                    Err(WriteError::Exists(_)) => d.focus = Focus::Overwrite,
                    Err(WriteError::Failed(_)) => d.focus = Focus::Options,
                    Ok(_) => {}
                }
                d.names()
            }
            _ => String::new(),
        };
        match r {
            Ok(path) => {
                self.overlay = None;
                self.say(
                    StatusKind::Done,
                    format!("wrote {} ({names}); apply: {APPLY_HINT}", path.display()),
                );
            }
            Err(WriteError::Exists(p)) if names.is_empty() => {
                self.say(StatusKind::Error, format!("{p} exists; not overwritten"));
            }
            Err(WriteError::Exists(p)) => self.say(
                StatusKind::Error,
                format!("{p} exists: y overwrites it, n keeps it"),
            ),
            Err(WriteError::Failed(e)) => {
                let hint = if self.read_only.is_some() {
                    "; not root: press p and choose a path you can write, then install it as root"
                } else {
                    ""
                };
                self.say(StatusKind::Error, format!("not written: {e}{hint}"));
            }
        }
    }
}
