//! The `e` dialog: a udev rule for the selected device (or every device changed
//! in this session), with the match strategy, a live preview and the path;
//! its state, its keys and the handling of the write's answer. (Its
//! bindings are [`crate::tui::command::EXPORT`], its drawing
//! `render/export.rs`.)
//!
//! The state is pure: opening it renders the preview with
//! [`blktune_core::export::render`] (no I/O: the udev properties are read once by the
//! caller), and `Enter` only produces a [`LiveControl::WriteExport`] for the worker
//! (when the rule has warnings, only after they were all shown and `y`
//! confirmed them), which writes through [`blktune_core::export::write_rules`] (atomic, no
//! clobber) and answers with [`Feed::ExportWritten`]. An existing file comes
//! back as [`WriteError::Exists`] and the dialog asks before writing with force.
//!
//! [`Feed::ExportWritten`]: crate::tui::worker::protocol::Feed::ExportWritten

use super::{Overlay, Reply};
use crate::tui::command::Action;
use crate::tui::status::StatusKind;
use crate::tui::worker::protocol::LiveControl;
pub use crate::tui::worker::protocol::WriteError;
use blktune_core::device::BlockDevice;
use blktune_core::export::{
    self, DEFAULT_RULES_PATH, ExportItem, MatchStrategy, RenderOptions, Rendered, match_spec,
};
use blktune_core::tuner::Wanted;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The strategies `m` cycles through, in order.
pub const STRATEGIES: [MatchStrategy; 4] = [
    MatchStrategy::Id,
    MatchStrategy::Model,
    MatchStrategy::Class,
    MatchStrategy::Kernel,
];

/// The commands that make udev re-read rules and apply them to `devices`
/// only (each needs root): not a trigger of every block device.
pub fn apply_hint(devices: &[String]) -> String {
    format!(
        "sudo udevadm control --reload && {}",
        blktune_core::export::trigger_command(devices)
    )
}

/// One device the dialog can export.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub device: BlockDevice,
    /// What the rule sets (live settings, or a shoot-out winner).
    pub settings: Wanted,
    pub udev_env: BTreeMap<String, String>,
    /// Before/after of the device's last change, or the shoot-out's verdict.
    pub measured: Option<String>,
}

impl Candidate {
    fn item(&self) -> ExportItem {
        let mut i = ExportItem::new(
            self.device.clone(),
            self.settings.clone(),
            self.udev_env.clone(),
        );
        i.measured = self.measured.clone();
        i
    }
}

/// Which field has the keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Focus {
    /// Keys choose options (m, a, p, Enter, ...).
    Options,
    /// Typing edits the path; the path before editing is kept for Esc.
    Path { before: String },
    /// The rule has warnings: they are all listed, y writes anyway, n goes back.
    Warnings,
    /// The file exists: y overwrites, n goes back.
    Overwrite,
    /// A write was sent; waiting for the answer.
    Writing,
}

/// The export dialog.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportDialog {
    /// The selected device.
    pub one: Candidate,
    /// Every device changed in this session (may include the selected one).
    pub changed: Vec<Candidate>,
    /// Export `changed` instead of `one`.
    pub all: bool,
    pub strategy: MatchStrategy,
    pub path: String,
    /// Lines of the preview scrolled away.
    pub scroll: u16,
    pub focus: Focus,
    /// The preview (or why there is none).
    pub preview: Result<Rendered, String>,
    /// Host name and every device, for the header and the "also matches" warnings.
    pub host: String,
    pub host_devices: Vec<BlockDevice>,
    /// Their udev properties by name (for the "also matches" warnings of `id` rules).
    pub host_udev_env: BTreeMap<String, BTreeMap<String, String>>,
    /// Why writing is not possible as this user, shown in the dialog.
    pub read_only: Option<String>,
}

/// Longest path the export dialog accepts (PATH_MAX).
const MAX_PATH: usize = 4096;

/// The default strategy for the candidates: `id` when every one has one, else `kernel`.
pub fn default_strategy(cands: &[&Candidate]) -> MatchStrategy {
    let all_have_id = cands
        .iter()
        .all(|c| match_spec(&c.item(), MatchStrategy::Id).is_ok());
    if all_have_id {
        MatchStrategy::Id
    } else {
        MatchStrategy::Kernel
    }
}

impl ExportDialog {
    /// A dialog for `one`; `changed` feeds the "all changed devices" toggle.
    pub fn new(
        one: Candidate,
        changed: Vec<Candidate>,
        host: String,
        host_devices: Vec<BlockDevice>,
        host_udev_env: BTreeMap<String, BTreeMap<String, String>>,
        read_only: Option<String>,
    ) -> Self {
        let strategy = default_strategy(&[&one]);
        let mut d = Self {
            one,
            changed,
            all: false,
            strategy,
            path: DEFAULT_RULES_PATH.to_string(),
            scroll: 0,
            focus: Focus::Options,
            preview: Err(String::new()),
            host,
            host_devices,
            host_udev_env,
            read_only,
        };
        d.refresh();
        d.scroll_to_rules();
        d
    }

    /// The devices being exported.
    pub fn candidates(&self) -> Vec<&Candidate> {
        if self.all && !self.changed.is_empty() {
            self.changed.iter().collect()
        } else {
            vec![&self.one]
        }
    }

    /// Render the preview again (after any change of the options).
    pub fn refresh(&mut self) {
        let items: Vec<ExportItem> = self.candidates().iter().map(|c| c.item()).collect();
        let opts = RenderOptions {
            strategy: Some(self.strategy),
            output: Some(PathBuf::from(self.path.trim())),
            host_devices: self.host_devices.clone(),
            host_udev_env: self.host_udev_env.clone(),
            ..RenderOptions::new(&self.host)
        };
        self.preview = export::render(&items, &opts).map_err(|e| e.to_string());
    }

    /// Scroll to the first rule (past the file's common header; ↑ shows it).
    pub fn scroll_to_rules(&mut self) {
        self.scroll = self.preview.as_ref().map_or(0, |r| {
            r.text
                .lines()
                .position(str::is_empty)
                .map_or(0, |i| (i + 1) as u16)
        });
    }

    /// `m`: the next match strategy.
    pub fn cycle_strategy(&mut self) {
        let i = STRATEGIES
            .iter()
            .position(|s| *s == self.strategy)
            .unwrap_or(0);
        self.strategy = STRATEGIES[(i + 1) % STRATEGIES.len()];
        self.refresh();
        self.scroll_to_rules();
    }

    /// `a`: this device / every device changed in this session.
    pub fn toggle_all(&mut self) -> Result<(), String> {
        if self.changed.is_empty() {
            return Err("no device was changed in this session; exporting the selected one".into());
        }
        self.all = !self.all;
        self.strategy = default_strategy(&self.candidates());
        self.refresh();
        self.scroll_to_rules();
        Ok(())
    }

    /// Scroll the preview by `delta` lines, within the text.
    pub fn scroll_by(&mut self, delta: i32) {
        let lines = self.preview.as_ref().map_or(0, |r| r.text.lines().count());
        let max = lines.saturating_sub(1) as i32;
        self.scroll = (i32::from(self.scroll) + delta).clamp(0, max) as u16;
    }

    /// Can the text be written to the path? The text to write, or why not.
    pub fn ready(&self) -> Result<(PathBuf, String), String> {
        let r = self
            .preview
            .as_ref()
            .map_err(|e| format!("cannot export: {e}"))?;
        let p = self.path.trim();
        if p.is_empty() {
            return Err("type a path first (p)".into());
        }
        let path = PathBuf::from(p);
        if r.uses_udev_env && !export::sorts_after_persistent_storage(&path) {
            return Err(format!(
                "{p}: the rule matches on ENV{{ID_*}}, set by {}; the name must sort after it (e.g. 61-blktune.rules)",
                export::PERSISTENT_STORAGE_RULES
            ));
        }
        Ok((path, r.text.clone()))
    }

    /// The preview's warnings (none when there is no preview).
    pub fn warnings(&self) -> &[String] {
        self.preview.as_ref().map_or(&[], |r| r.warnings.as_slice())
    }

    /// Names of the exported devices, for the status line.
    pub fn names(&self) -> String {
        self.devices().join(", ")
    }

    /// The names of the devices the rule is for.
    pub fn devices(&self) -> Vec<String> {
        self.candidates()
            .iter()
            .map(|c| c.device.name.clone())
            .collect()
    }
}

impl ExportDialog {
    /// Take an action; `None` closes the dialog.
    pub fn on_action(mut self, action: Action, reply: &mut Reply) -> Option<Overlay> {
        let d = &mut self;
        match (d.focus.clone(), action) {
            (Focus::Options, Action::Cancel) => return None,
            (Focus::Options, Action::Cycle) => d.cycle_strategy(),
            (Focus::Options, Action::Toggle) => {
                if let Err(why) = d.toggle_all() {
                    reply.say(StatusKind::Info, why);
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
                    reply.say(
                        StatusKind::Info,
                        format!(
                            "{n} warning{}: y writes anyway, n goes back",
                            if n == 1 { "" } else { "s" }
                        ),
                    );
                }
                Ok((path, text)) => {
                    d.focus = Focus::Writing;
                    reply.send(LiveControl::WriteExport {
                        path,
                        text,
                        force: false,
                    });
                }
                Err(why) => reply.say(StatusKind::Error, why),
            },
            // y after the warnings, or y to replace an existing file.
            (Focus::Warnings | Focus::Overwrite, Action::Confirm) => {
                let force = d.focus == Focus::Overwrite;
                match d.ready() {
                    Ok((path, text)) => {
                        d.focus = Focus::Writing;
                        reply.send(LiveControl::WriteExport { path, text, force });
                    }
                    Err(why) => {
                        d.focus = Focus::Options;
                        reply.say(StatusKind::Error, why);
                    }
                }
            }
            (Focus::Path { .. }, Action::Input(c)) if d.path.len() < MAX_PATH => d.path.push(c),
            (Focus::Path { .. }, Action::Backspace) => {
                d.path.pop();
            }
            (Focus::Path { .. }, Action::ClearInput) => d.path.clear(),
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
                reply.say(
                    StatusKind::Info,
                    format!(
                        "{} not written; Enter lists the warnings again",
                        d.path.trim()
                    ),
                );
            }
            // The answer still comes (and lands in the status line); the dialog may go.
            (Focus::Writing, Action::Cancel) => return None,
            (Focus::Overwrite, Action::Cancel) => {
                d.focus = Focus::Options;
                reply.say(
                    StatusKind::Info,
                    format!("{} not overwritten; p changes the path", d.path.trim()),
                );
            }
            _ => {}
        }
        Some(Overlay::Export(Box::new(self)))
    }
}

/// The answer to a [`LiveControl::WriteExport`], for the dialog `export_dialog` when it is
/// still open; `read_only` adds a hint to a failure. Returns whether the
/// dialog closes.
pub fn on_written(
    export_dialog: Option<&mut ExportDialog>,
    result: Result<PathBuf, WriteError>,
    read_only: bool,
    reply: &mut Reply,
) -> bool {
    let names = match export_dialog {
        Some(d) => {
            match &result {
                Err(WriteError::Exists(_)) => d.focus = Focus::Overwrite,
                Err(WriteError::Failed(_)) => d.focus = Focus::Options,
                Ok(_) => {}
            }
            d.devices()
        }
        None => Vec::new(),
    };
    let hint = apply_hint(&names);
    let names = names.join(", ");
    match result {
        Ok(path) => {
            reply.say(
                StatusKind::Done,
                format!("wrote {} ({names}); apply: {hint}", path.display()),
            );
            return true;
        }
        Err(WriteError::Exists(p)) if names.is_empty() => {
            reply.say(StatusKind::Error, format!("{p} exists; not overwritten"));
        }
        Err(WriteError::Exists(p)) => reply.say(
            StatusKind::Error,
            format!("{p} exists: y overwrites it, n keeps it"),
        ),
        Err(WriteError::Failed(e)) => {
            let hint = if read_only {
                "; not root: press p and choose a path you can write, then install it as root"
            } else {
                ""
            };
            reply.say(StatusKind::Error, format!("not written: {e}{hint}"));
        }
    }
    false
}
