//! The boxes drawn over the main view, each with its state and its key
//! handling together; they take the keys first. A dialog never touches the
//! app: it takes an [`Action`] with a [`Ctx`] (what it needs to know) and
//! answers with the dialog to show next (or `None`: closed) and a [`Reply`]
//! (what the app must say, change or send). Their drawing is in `render/`
//! (one file per region), their bindings in [`crate::tui::command`].
//!
//! - [`picker`]: the scheduler picker (`s`) and the tunables list (`t`)
//! - [`editor`]: the value editor (`n`, `r`, a tunable) and its check
//! - [`export`]: the udev export (`e`)
//! - [`shootout`]: the scheduler shoot-out (`b`)
//! - [`record`]: where `R` records, when the current directory will not do
//! - help (`?`) and the revert question (`U`) are two plain variants here

pub mod editor;
pub mod export;
pub mod picker;
pub mod record;
pub mod shootout;

use crate::tui::command::Action;
use crate::tui::status::StatusKind;
use crate::tui::worker::protocol::Control;
use blktune_core::tuner::Wanted;
use editor::{Editor, NrLimit};
use export::ExportDialog;
use picker::{Picker, Tunables};
use shootout::{ShootOutDialog, Stage};

/// A box drawn over the main view; it takes the keys first.
#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    Picker(Picker),
    Tunables(Tunables),
    Edit(Editor),
    Help {
        scroll: u16,
    },
    /// `U`: revert every change of the session on these devices?
    Confirm {
        devices: Vec<String>,
    },
    /// The udev export dialog (`e`).
    Export(Box<ExportDialog>),
    /// The scheduler shoot-out (`b`).
    ShootOut(Box<ShootOutDialog>),
    /// `R`: where to record (the current directory will not do).
    RecordPath(record::RecordPath),
}

/// What the app tells a dialog along with an action.
#[derive(Debug, Clone, Default)]
pub struct Ctx {
    /// Page size in KiB (read_ahead_kb is kept in pages).
    pub page_kb: u64,
    /// What bounds nr_requests on the dialog's device now.
    pub nr: NrLimit,
    /// Why a change cannot start now (read-only, replay, busy), if it cannot.
    pub refuse: Option<String>,
    /// How far the help can scroll at the terminal's size.
    pub help_max: usize,
}

/// A change of one device as a dialog asks for it; the app numbers it and
/// sends it to the worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub device: String,
    /// The device's `diskseq` when the dialog opened.
    pub diskseq: Option<u64>,
    pub settings: Wanted,
}

/// What a dialog asks of the app after an action or a message.
#[derive(Debug, Default)]
pub struct Reply {
    /// The status line (the last word counts).
    pub status: Option<(StatusKind, String)>,
    /// Changes through the tuner, in order (several for a stack's disks).
    pub changes: Vec<Change>,
    /// Messages for the worker (an export to write, a shoot-out to start or cancel).
    pub controls: Vec<Control>,
    /// `U` confirmed: revert these devices.
    pub revert: Option<Vec<String>>,
    /// Open the export dialog on this device with this winner and its text.
    pub export_winner: Option<(String, Wanted, String)>,
}

impl Reply {
    /// Say this in the status line.
    pub fn say(&mut self, kind: StatusKind, text: impl Into<String>) {
        self.status = Some((kind, text.into()));
    }

    /// Ask for a change of `device`.
    pub fn change(&mut self, device: &str, diskseq: Option<u64>, settings: Wanted) {
        self.changes.push(Change {
            device: device.to_string(),
            diskseq,
            settings,
        });
    }

    /// Send `c` to the worker.
    pub fn send(&mut self, c: impl Into<Control>) {
        self.controls.push(c.into());
    }
}

impl Overlay {
    /// The device the dialog acts on (name and `diskseq` when it opened),
    /// and what the dialog is called; `None` for dialogs that change no
    /// device. A running shoot-out fails by itself and restores what it
    /// can; its setup or its results must not outlive the device.
    pub fn device(&self) -> Option<(&str, Option<u64>, &'static str)> {
        Some(match self {
            Overlay::Picker(p) => (&p.device, p.diskseq, "scheduler picker"),
            Overlay::Tunables(t) => (&t.device, t.diskseq, "tunables list"),
            Overlay::Edit(e) => (&e.device, e.diskseq, "editor"),
            Overlay::ShootOut(b) if !matches!(b.stage, Stage::Running { .. }) => {
                (&b.device, b.diskseq, "shoot-out")
            }
            _ => return None,
        })
    }

    /// Does `a` act on the dialog's device? The app checks first that it
    /// is still the selected one (never onto another device).
    pub fn acts_on_device(&self, a: Action) -> bool {
        match self {
            Overlay::ShootOut(d) => d.acts_on_device(a),
            _ => a == Action::Confirm && self.device().is_some(),
        }
    }

    /// Take an action: the dialog to show next (`None`: closed) and what
    /// the app must do.
    pub fn on_action(self, a: Action, ctx: &Ctx) -> (Option<Overlay>, Reply) {
        let mut reply = Reply::default();
        let next = match self {
            Overlay::Export(d) => d.on_action(a, &mut reply),
            Overlay::ShootOut(d) => d.on_action(a, ctx, &mut reply),
            Overlay::RecordPath(r) => r.on_action(a, &mut reply),
            _ if a == Action::Cancel => None,
            Overlay::Picker(p) => p.on_action(a, &mut reply),
            Overlay::Tunables(t) => t.on_action(a),
            Overlay::Edit(e) => e.on_action(a, ctx, &mut reply),
            Overlay::Help { scroll } => {
                // Never past the end: Up after many Downs moves at once.
                let max = u16::try_from(ctx.help_max).unwrap_or(u16::MAX);
                let scroll = scroll.min(max);
                let scroll = match a {
                    Action::Up => scroll.saturating_sub(1),
                    Action::Down => scroll.saturating_add(1),
                    Action::PageUp => scroll.saturating_sub(10),
                    Action::PageDown => scroll.saturating_add(10),
                    Action::Home => 0,
                    Action::End => max,
                    _ => scroll,
                };
                Some(Overlay::Help {
                    scroll: scroll.min(max),
                })
            }
            Overlay::Confirm { devices } if a == Action::Confirm => {
                reply.revert = Some(devices);
                None
            }
            c @ Overlay::Confirm { .. } => Some(c),
        };
        (next, reply)
    }
}
