//! Who does the I/O and where it goes, on the app's side: the processes
//! panel (`i`) and the placement of each device from the worker.
//!
//! The panel is a view over the main screen, not a dialog: the main keys
//! still move the selection; `i` or Esc closes it. Opening it asks the live
//! worker to sample who does the I/O each tick, closing it tells the worker
//! to stop ([`LiveControl::Processes`]), so a hidden panel costs nothing.
//! The worker answers from the kernel (every request counted for the
//! process and cgroup that submitted it, per device) or, where the kernel
//! cannot say, from `/proc/<pid>/io` (approximate: no device, and write-back
//! counted for whoever dirtied the pages).

use super::App;
use crate::tui::worker::procio::WhereIoFeed;
use crate::tui::worker::protocol::{Control, LiveControl};
use blktune_core::procio::ProcessSample;
use blktune_core::topology::{Placement, Topology};
use blktune_core::who::WhoByDevice;
use std::sync::Arc;

/// The app's state of "who does the I/O, where it goes".
#[derive(Debug, Default)]
pub struct WhereIoState {
    /// Is the processes panel shown?
    pub shown: bool,
    /// The newest `/proc` sample since the panel opened (`None`: none yet).
    pub sample: Option<ProcessSample>,
    /// The newest kernel attribution since the panel opened, by device.
    pub who: Option<WhoByDevice>,
    /// Why the kernel cannot say who does the I/O (the panel then shows
    /// the `/proc` view); `None` until the worker said, or when it can.
    pub no_who: Option<String>,
    /// Where each device's I/O goes, as the worker last read it.
    pub topology: Arc<Topology>,
}

impl App {
    /// `i` (main view only: a replay has no such key, a recording has no
    /// processes): show or hide the processes panel, and tell the worker.
    pub(super) fn toggle_processes(&mut self) -> Vec<Control> {
        self.set_processes(!self.where_io.shown)
    }

    /// Show (`true`) or hide the panel.
    pub(super) fn set_processes(&mut self, on: bool) -> Vec<Control> {
        let w = &mut self.where_io;
        w.shown = on;
        // A reopened panel never shows the rows of long ago.
        w.sample = None;
        w.who = None;
        w.no_who = None;
        vec![LiveControl::Processes(on).into()]
    }

    /// A message of the worker's hook.
    pub(super) fn on_where_io(&mut self, f: WhereIoFeed) {
        match f {
            WhereIoFeed::Placement(t) => self.where_io.topology = t,
            // A sample that crossed a close on the channel is dropped.
            WhereIoFeed::Processes(s) if self.where_io.shown => self.where_io.sample = Some(s),
            WhereIoFeed::Processes(_) => {}
            WhereIoFeed::Who(w) if self.where_io.shown => self.where_io.who = Some(w),
            WhereIoFeed::NoWho(why) if self.where_io.shown => {
                self.where_io.who = None;
                self.where_io.no_who = Some(why);
            }
            WhereIoFeed::Who(_) | WhereIoFeed::NoWho(_) => {}
        }
    }

    /// Where `device`'s I/O goes, when the worker told.
    pub fn placement(&self, device: &str) -> Option<&Placement> {
        self.where_io.topology.of(device)
    }
}
