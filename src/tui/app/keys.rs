//! Applying key actions to the [`App`]: navigation, overlays and the change
//! requests sent to the source.

use super::{App, INTERVALS_MS, Overlay, SortKey, StatusKind, fmt_interval};
use crate::tui::command::{
    Action, Mode, action_for, key_name, main_binding, safe_after_escape, split_escape,
};
use crate::tui::dialogs::editor::{Editor, Field};
use crate::tui::dialogs::picker::{Picker, Tunables};
use crate::tui::worker::protocol::{ApplyKind, ApplyRequest, Control, LiveControl};
use blktune_core::device::BlockDevice;
use blktune_core::tuner::Wanted;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::time::Duration;

/// What a device key says while nothing is selected.
pub(super) const NO_SELECTION: &str = "no device selected: ↑/↓ selects one";

impl App {
    /// Take one key event; returns what the source must do. An Alt+key is an
    /// Esc glued to the next key (crossterm reads `ESC x` in one read as
    /// Alt+x): the Esc acts, then the key only if it is safe after a cancel
    /// ([`safe_after_escape`]), so `Esc Enter` typed fast never confirms the
    /// dialog the Esc cancelled.
    pub fn on_key(&mut self, ev: &KeyEvent) -> Vec<Control> {
        let (selected, status) = (self.selected.clone(), self.status.clone());
        let out = self.on_key_event(ev);
        // A message is about the device it was said of: moving to another
        // one clears it, unless this key said something new.
        if self.selected != selected && self.status == status {
            self.status = None;
        }
        out
    }

    fn on_key_event(&mut self, ev: &KeyEvent) -> Vec<Control> {
        self.top_pick = false;
        let Some(plain) = split_escape(ev) else {
            return action_for(self.mode(), ev).map_or_else(Vec::new, |a| self.on_action(a));
        };
        let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
        let mut out = action_for(self.mode(), &esc).map_or_else(Vec::new, |a| self.on_action(a));
        match action_for(self.mode(), &plain) {
            Some(a) if safe_after_escape(a) => out.extend(self.on_action(a)),
            Some(_) => {
                let k = key_name(&plain);
                self.say(
                    StatusKind::Info,
                    format!(
                        "Esc and '{k}' came together (or Alt+{k}): took the Esc only; '{k}' did nothing"
                    ),
                );
            }
            None => {}
        }
        out
    }

    /// Apply an action; returns what the source must do.
    pub fn on_action(&mut self, a: Action) -> Vec<Control> {
        let mut out = self.dispatch(a);
        // A new selection moves the probe along.
        out.extend(self.probe_control());
        out
    }

    fn dispatch(&mut self, a: Action) -> Vec<Control> {
        if a == Action::Quit {
            self.quit = true;
            return Vec::new();
        }
        match self.mode() {
            Mode::Main => self.main_action(a),
            Mode::Replay => self.replay_action(a),
            Mode::Ab => match a {
                Action::Cancel => self.stop_ab(),
                Action::Help => {
                    self.overlay = Some(Overlay::Help { scroll: 0 });
                    Vec::new()
                }
                _ => Vec::new(),
            },
            Mode::Text if self.overlay.is_none() => {
                self.filter_action(a);
                Vec::new()
            }
            _ => self.overlay_action(a),
        }
    }

    fn select_by(&mut self, delta: isize, absolute: Option<usize>) {
        let names: Vec<String> = self.visible().iter().map(|d| d.name.clone()).collect();
        if names.is_empty() {
            return;
        }
        let last = names.len() as isize - 1;
        let cur = self
            .selected
            .as_ref()
            .and_then(|s| names.iter().position(|n| n == s));
        let pos = match (absolute, cur) {
            (Some(p), _) => p.min(names.len() - 1),
            (None, Some(c)) => (c as isize + delta).clamp(0, last) as usize,
            // Nothing selected (the device vanished): the cursor sits where
            // that row was, so Down takes the row now there, Up the one above.
            (None, None) => {
                let gap = self.selected_pos as isize;
                let p = if delta > 0 {
                    gap + delta - 1
                } else {
                    gap + delta
                };
                p.clamp(0, last) as usize
            }
        };
        self.selected = Some(names[pos].clone());
        self.selected_pos = pos;
    }

    /// Why a change key cannot act now, if it cannot.
    pub(super) fn refuse_change(&self, a: Action) -> Option<String> {
        let key = main_binding(a).map_or("", |b| b.shown);
        if let Some(why) = &self.read_only {
            return Some(format!(
                "read-only ({why}): '{key}' would change settings; nothing was changed"
            ));
        }
        if self.replay.is_some() {
            return Some("replay: a recording cannot be changed".into());
        }
        if self.pending > 0 {
            return Some("busy: a change is being applied; try again in a moment".into());
        }
        None
    }

    /// Say so, and `true`, when `name`'s settings are not read yet
    /// ([`blktune_core::device::QueueSettings::is_unread`]): a change key,
    /// the shoot-out or an export would act on settings it does not know,
    /// and never is it that the device has no scheduler.
    pub(super) fn refuse_unread(&mut self, name: &str) -> bool {
        let Some(q) = self
            .devices
            .iter()
            .find(|d| d.name == name)
            .map(|d| &d.queue)
        else {
            return false;
        };
        if !q.is_unread() {
            return false;
        }
        // Read, but nothing in it could be: that is why, not "not yet".
        let text = match q.unreadable_text() {
            Some(why) => format!("'{name}': {why}"),
            None => format!("'{name}': its queue settings are not read yet; try again in a moment"),
        };
        self.say(StatusKind::Error, text);
        true
    }

    /// A change of `device` as the user chose it: `diskseq` is the one it
    /// had then, so the source refuses it if the device was replaced since.
    pub(super) fn request(
        &mut self,
        device: &str,
        diskseq: Option<u64>,
        settings: Wanted,
        kind: ApplyKind,
    ) -> Control {
        self.pending += 1;
        let id = self.next_id;
        self.next_id += 1;
        Control::Live(LiveControl::Apply(ApplyRequest {
            id,
            device: device.to_string(),
            diskseq,
            settings,
            kind,
        }))
    }

    pub(super) fn main_action(&mut self, a: Action) -> Vec<Control> {
        let page = self.page_rows.max(1) as isize;
        match a {
            Action::Up => self.select_by(-1, None),
            Action::Down => self.select_by(1, None),
            Action::PageUp => self.select_by(-page, None),
            Action::PageDown => self.select_by(page, None),
            Action::Home => self.select_by(0, Some(0)),
            Action::End => self.select_by(0, Some(usize::MAX)),
            Action::Picker
            | Action::EditNr
            | Action::EditRa
            | Action::EditTunables
            | Action::Undo
            | Action::RevertAll => {
                if let Some(why) = self.refuse_change(a) {
                    self.say(StatusKind::Error, why);
                    return Vec::new();
                }
                return self.change_action(a);
            }
            Action::Export => {
                if let Some(name) = self.selected_device().map(|d| d.name.clone()) {
                    self.open_export(&name, None);
                } else {
                    self.say(StatusKind::Error, self.no_selection());
                }
            }
            Action::ShootOut => self.open_shootout(),
            Action::AbTest => return self.start_ab(),
            Action::Record => return self.record_action(),
            Action::ToggleProbe => return self.toggle_probe(),
            Action::Processes => return self.toggle_processes(),
            // Esc closes the panel first, then clears the filter.
            Action::Cancel if self.where_io.shown => return self.set_processes(false),
            Action::Faster | Action::Slower => {
                let ms = self.interval.as_millis() as u64;
                let next = if a == Action::Faster {
                    INTERVALS_MS
                        .iter()
                        .rev()
                        .find(|&&i| i < ms)
                        .copied()
                        .unwrap_or(INTERVALS_MS[0])
                } else {
                    INTERVALS_MS
                        .iter()
                        .find(|&&i| i > ms)
                        .copied()
                        .unwrap_or(INTERVALS_MS[6])
                };
                self.interval = Duration::from_millis(next);
                self.say(
                    StatusKind::Info,
                    format!("sampling every {}", fmt_interval(self.interval)),
                );
                return vec![LiveControl::Interval(self.interval).into()];
            }
            // The display only: the worker samples on (no control is sent).
            Action::Pause => {
                let n = self.toggle_pause();
                let text = if self.paused {
                    "display paused; sampling goes on (p resumes)".to_string()
                } else {
                    format!("resumed: {n} samples taken while paused are shown")
                };
                self.say(StatusKind::Info, text);
            }
            Action::Help => self.overlay = Some(Overlay::Help { scroll: 0 }),
            Action::Sort | Action::SortLeft | Action::SortRight => {
                self.sort = self.sort_step(a);
                let order = if self.sort == SortKey::Name {
                    "A to Z"
                } else {
                    "largest first"
                };
                self.say(
                    StatusKind::Info,
                    format!("sorted by {} ({order})", self.sort.label()),
                );
            }
            Action::Filter => self.filter_typing = true,
            Action::Cancel if !self.filter.is_empty() => {
                self.filter.clear();
                self.say(StatusKind::Info, "filter cleared");
            }
            _ => {}
        }
        Vec::new()
    }

    /// The picker of a stack without a scheduler (LVM, crypt, md, an NVMe
    /// head): the schedulers every disk under it offers, the one they share
    /// marked active, and the disks each to be changed; `None` when it sits
    /// on no disk with a scheduler, or on one whose settings are not read.
    fn stack_picker(&self, name: &str) -> Option<Picker> {
        use blktune_core::topology::stacks;
        let disks = stacks::scheduled_on(&self.devices, name);
        let members: Vec<&BlockDevice> = disks
            .iter()
            .filter_map(|n| self.devices.iter().find(|d| d.name == *n))
            .collect();
        if members.is_empty() || members.len() != disks.len() {
            return None;
        }
        let scheds: Vec<&blktune_core::device::SchedulerState> = members
            .iter()
            .map(|d| d.queue.scheduler.as_ref())
            .collect::<Option<_>>()?;
        let options: Vec<String> = (scheds[0].available.iter())
            .filter(|o| scheds.iter().all(|s| s.available.contains(o)))
            .cloned()
            .collect();
        let active = if scheds.iter().all(|s| s.active == scheds[0].active) {
            scheds[0].active.clone()
        } else {
            String::new()
        };
        let shared = stacks::shared_members(&self.devices, name)
            .into_iter()
            .map(|(disk, others)| format!("{disk} also carries {}", others.join(", ")))
            .collect();
        let stack_dev = self.devices.iter().find(|d| d.name == name)?;
        Some(Picker {
            device: name.to_owned(),
            diskseq: stack_dev.diskseq,
            cursor: options.iter().position(|o| *o == active).unwrap_or(0),
            options,
            active,
            members: members
                .iter()
                .map(|d| (d.name.clone(), d.diskseq))
                .collect(),
            shared,
            confirmed: false,
        })
    }

    fn change_action(&mut self, a: Action) -> Vec<Control> {
        if a == Action::RevertAll {
            // Every device of the session, whatever is selected.
            let devices: Vec<String> = self.session().into_iter().map(|s| s.device).collect();
            if devices.is_empty() {
                self.say(
                    StatusKind::Info,
                    "nothing to revert: no changes in this session",
                );
            } else {
                self.overlay = Some(Overlay::Confirm { devices });
            }
            return Vec::new();
        }
        let Some(d) = self.selected_device().cloned() else {
            self.say(StatusKind::Error, self.no_selection());
            return Vec::new();
        };
        if self.refuse_unread(&d.name) {
            return Vec::new();
        }
        let needs_sched = matches!(a, Action::Picker | Action::EditNr | Action::EditTunables);
        if needs_sched && !d.queue.has_scheduler() {
            if a == Action::Picker
                && let Some(p) = self.stack_picker(&d.name)
            {
                self.overlay = Some(Overlay::Picker(p));
                return Vec::new();
            }
            let carried = blktune_core::topology::stacks::carried_text(&self.devices, &d.name)
                .map(|c| format!(": {c}; select those"))
                .unwrap_or_else(|| " (bio-based device); only read_ahead_kb can be set".into());
            self.say(
                StatusKind::Error,
                format!("'{}' has no I/O scheduler{carried}", d.name),
            );
            return Vec::new();
        }
        match a {
            Action::Picker => {
                if let Some(s) = &d.queue.scheduler {
                    self.overlay = Some(Overlay::Picker(Picker {
                        device: d.name.clone(),
                        diskseq: d.diskseq,
                        cursor: s.available.iter().position(|n| *n == s.active).unwrap_or(0),
                        options: s.available.clone(),
                        active: s.active.clone(),
                        ..Picker::default()
                    }));
                }
            }
            Action::EditNr | Action::EditRa => {
                let (field, cur) = if a == Action::EditNr {
                    (Field::NrRequests, d.queue.nr_requests)
                } else {
                    (Field::ReadAheadKb, d.queue.read_ahead_kb)
                };
                let current = cur.map_or_else(|| "-".into(), |n| n.to_string());
                self.overlay = Some(Overlay::Edit(Editor::new(
                    &d.name, d.diskseq, field, current,
                )));
            }
            Action::EditTunables => {
                let knobs: Vec<(String, String)> = blktune_core::sched::settable_knobs()
                    .filter_map(|k| Some((k.name.to_string(), d.queue.knobs.get(k.name)?.clone())))
                    .collect();
                if d.queue.tunables.is_empty() && knobs.is_empty() {
                    self.say(
                        StatusKind::Info,
                        format!("'{}': {} has no tunables", d.name, d.queue.active_label()),
                    );
                    return Vec::new();
                }
                self.overlay = Some(Overlay::Tunables(Tunables {
                    device: d.name.clone(),
                    diskseq: d.diskseq,
                    scheduler: d.queue.active_label().to_string(),
                    items: d
                        .queue
                        .tunables
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    knobs,
                    cursor: 0,
                }));
            }
            Action::Undo => {
                let Some(m) = self.undo.get(&d.name).and_then(|s| s.last()).cloned() else {
                    self.say(StatusKind::Info, format!("nothing to undo on '{}'", d.name));
                    return Vec::new();
                };
                self.say(
                    StatusKind::Info,
                    format!("applying: undo {} on {}…", m.label, d.name),
                );
                return vec![self.request(&d.name, d.diskseq, m.before, ApplyKind::Undo)];
            }
            _ => {}
        }
        Vec::new()
    }

    fn filter_action(&mut self, a: Action) {
        match a {
            Action::Input(c) if self.filter.len() < 32 => self.filter.push(c),
            Action::Backspace => {
                self.filter.pop();
            }
            Action::ClearInput => self.filter.clear(),
            Action::Confirm => self.filter_typing = false,
            Action::Cancel => {
                self.filter.clear();
                self.filter_typing = false;
            }
            _ => {}
        }
        self.reconcile_selection();
    }
}
