//! The budget of scheduler files the sampler keeps open.

use super::Entry;
use crate::device::{QueueSettings, SchedulerRead};
use crate::os::{OpenAttr, SysRoot, spare_descriptors};

/// The scheduler files kept open ([`OpenAttr`]: a round-robin check reads
/// one with a `pread` instead of opening it), within a budget of
/// descriptors; the devices past it are read by path.
#[derive(Debug)]
pub(super) struct OpenFiles {
    pub(super) open: usize,
    pub(super) cap: usize,
}

impl OpenFiles {
    pub(super) fn new() -> Self {
        Self {
            open: 0,
            cap: spare_descriptors(),
        }
    }

    /// `entry`'s scheduler line, from its kept file when it has one.
    pub(super) fn read_scheduler(&mut self, root: &SysRoot, entry: &mut Entry) -> SchedulerRead {
        self.with_file(&mut entry.sched_file, |file, keep| {
            QueueSettings::read_scheduler_kept(root, &entry.dev, file, keep)
        })
    }

    /// `entry`'s settings as [`QueueSettings::read_basic`] reads them, its
    /// scheduler line as [`OpenFiles::read_scheduler`] does.
    pub(super) fn read_basic(&mut self, root: &SysRoot, entry: &mut Entry) -> QueueSettings {
        self.with_file(&mut entry.sched_file, |file, keep| {
            QueueSettings::read_basic_kept(root, &entry.dev, file, keep)
        })
    }

    /// Run a read through a device's kept file, allowed to open one while
    /// the budget lasts, and count what it kept or dropped.
    pub(super) fn with_file<T>(
        &mut self,
        file: &mut Option<OpenAttr>,
        read: impl FnOnce(&mut Option<OpenAttr>, bool) -> T,
    ) -> T {
        let had = file.is_some();
        let out = read(file, had || self.open < self.cap);
        match (had, file.is_some()) {
            (false, true) => self.open += 1,
            (true, false) => self.open -= 1,
            _ => {}
        }
        out
    }

    /// An entry that went: its kept file, if any, is no longer counted.
    pub(super) fn forget(&mut self, entry: &Entry) {
        if entry.sched_file.is_some() {
            self.open -= 1;
        }
    }
}
