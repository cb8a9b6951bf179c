//! The scheduler picker (`s`) and the tunables list (`t`: the active
//! scheduler's tunables, then the queue settings next to the scheduler): a
//! list with a cursor; Enter applies the scheduler, or opens the value
//! editor of the tunable or setting under the cursor.

use super::editor::{Editor, Field};
use super::{Overlay, Reply};
use crate::tui::command::Action;
use crate::tui::status::StatusKind;
use blktune_core::tuner::Wanted;

/// The scheduler picker of one device, or of the disks under a stack
/// without a scheduler of its own (LVM, crypt, md, an NVMe head).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Picker {
    pub device: String,
    /// The device's `diskseq` when the picker opened: Enter acts only
    /// while the selected device is still this one.
    pub diskseq: Option<u64>,
    pub options: Vec<String>,
    pub active: String,
    pub cursor: usize,
    /// A stack's picker: the disks that schedule its I/O, with their
    /// `diskseq`; each is changed (and journalled) on its own. Empty for a
    /// device with a scheduler.
    pub members: Vec<(String, Option<u64>)>,
    /// Of those disks, the ones that also carry another stack, said as
    /// `sda also carries md0`: Enter asks again before changing them.
    pub shared: Vec<String>,
    /// Enter was pressed once on a picker with `shared` disks.
    pub confirmed: bool,
}

/// The active scheduler's tunables of one device, then its queue settings
/// next to the scheduler (the cursor runs over both).
#[derive(Debug, Clone, PartialEq)]
pub struct Tunables {
    pub device: String,
    /// The device's `diskseq` when the list opened.
    pub diskseq: Option<u64>,
    pub scheduler: String,
    pub items: Vec<(String, String)>,
    /// The settable queue settings the device has (`wbt_lat_usec`, ...),
    /// name and value, after the tunables.
    pub knobs: Vec<(String, String)>,
    pub cursor: usize,
}

/// The cursor one step up or down a list of `len`, within it.
pub fn step(cursor: usize, len: usize, down: bool) -> usize {
    if down {
        (cursor + 1).min(len.saturating_sub(1))
    } else {
        cursor.saturating_sub(1)
    }
}

impl Picker {
    /// Take an action (Esc was handled by the caller); `None` closes.
    pub fn on_action(mut self, a: Action, reply: &mut Reply) -> Option<Overlay> {
        match a {
            Action::Up | Action::Down => {
                self.cursor = step(self.cursor, self.options.len(), a == Action::Down);
                // Another choice is asked about again.
                self.confirmed = false;
            }
            Action::Confirm if !self.members.is_empty() => {
                return self.confirm_members(reply).map(Overlay::Picker);
            }
            Action::Confirm => {
                let choice = self.options.get(self.cursor).cloned().unwrap_or_default();
                let (device, active) = (&self.device, &self.active);
                if choice == *active {
                    reply.say(
                        StatusKind::Info,
                        format!("'{device}': {choice} is already active"),
                    );
                } else {
                    reply.say(
                        StatusKind::Info,
                        format!("applying: {device} {active}→{choice}…"),
                    );
                    let s = Wanted {
                        scheduler: Some(choice),
                        ..Wanted::default()
                    };
                    reply.change(&self.device, self.diskseq, s);
                }
                return None;
            }
            _ => {}
        }
        Some(Overlay::Picker(self))
    }
}

impl Picker {
    /// Enter on a stack's picker: the chosen scheduler on each of its disks
    /// (one change each, journalled by the tuner), once the user has seen
    /// and confirmed which other stacks share them.
    fn confirm_members(mut self, reply: &mut Reply) -> Option<Self> {
        let choice = self.options.get(self.cursor).cloned().unwrap_or_default();
        if !self.shared.is_empty() && !self.confirmed {
            self.confirmed = true;
            reply.say(
                StatusKind::Error,
                format!(
                    "{}: {choice} there changes them too; Enter again to change, Esc to leave them",
                    self.shared.join("; ")
                ),
            );
            return Some(self);
        }
        let names: Vec<&str> = self.members.iter().map(|(n, _)| n.as_str()).collect();
        reply.say(
            StatusKind::Info,
            format!(
                "applying: {choice} on {} (the disks under {})…",
                names.join(", "),
                self.device
            ),
        );
        for (disk, diskseq) in &self.members {
            reply.change(
                disk,
                *diskseq,
                Wanted {
                    scheduler: Some(choice.clone()),
                    ..Wanted::default()
                },
            );
        }
        None
    }
}

impl Tunables {
    /// Take an action (Esc was handled by the caller); Enter opens the editor.
    pub fn on_action(mut self, a: Action) -> Option<Overlay> {
        match a {
            Action::Up | Action::Down => {
                let len = self.items.len() + self.knobs.len();
                self.cursor = step(self.cursor, len, a == Action::Down);
            }
            Action::Confirm => {
                let n = self.items.len();
                let (field, v) = match self.items.get(self.cursor) {
                    Some((k, v)) => (Field::Tunable(k.clone()), v),
                    None => {
                        let (k, v) = self.knobs.get(self.cursor - n)?;
                        (Field::Knob(k.clone()), v)
                    }
                };
                return Some(Overlay::Edit(Editor::new(
                    &self.device,
                    self.diskseq,
                    field,
                    v.clone(),
                )));
            }
            _ => {}
        }
        Some(Overlay::Tunables(self))
    }
}
