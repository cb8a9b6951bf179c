//! The queue attributes blktune may ever write, and a device's open
//! `queue/` directory to read several of them with short lookups.

use super::names::is_plausible_tunable_name;
use super::open_attr::{OpenAttr, Opened};
use super::read::read_file;
use std::fs;
use std::io;

/// The queue attributes blktune may ever write. Nothing else is writable.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueAttr {
    /// `queue/scheduler`
    Scheduler,
    /// `queue/nr_requests`
    NrRequests,
    /// `queue/read_ahead_kb`
    ReadAheadKb,
    /// `queue/iosched/<name>`; the name is checked by [`is_plausible_tunable_name`].
    Tunable(String),
    /// `queue/<name>` of a queue setting next to the scheduler that the
    /// catalogue says blktune may set (`wbt_lat_usec`, `nomerges`, ...:
    /// [`crate::sched::settable_knobs`]); made only by [`QueueAttr::knob`].
    Knob(&'static str),
}

impl QueueAttr {
    /// The queue setting `name`, if the catalogue lets blktune set it.
    pub fn knob(name: &str) -> Option<Self> {
        crate::sched::settable_knobs()
            .find(|k| k.name == name)
            .map(|k| QueueAttr::Knob(k.name))
    }

    /// Path relative to the device directory, or `None` for a malformed tunable name.
    pub(super) fn rel_path(&self) -> Option<String> {
        match self {
            QueueAttr::Scheduler => Some("queue/scheduler".into()),
            QueueAttr::NrRequests => Some("queue/nr_requests".into()),
            QueueAttr::ReadAheadKb => Some("queue/read_ahead_kb".into()),
            QueueAttr::Tunable(name) if is_plausible_tunable_name(name) => {
                Some(format!("queue/iosched/{name}"))
            }
            QueueAttr::Tunable(_) => None,
            QueueAttr::Knob(name) => Some(format!("queue/{name}")),
        }
    }

    /// The short label used in messages (`scheduler`, `nr_requests`, `iosched/read_expire`).
    pub fn label(&self) -> String {
        match self {
            QueueAttr::Scheduler => "scheduler".into(),
            QueueAttr::NrRequests => "nr_requests".into(),
            QueueAttr::ReadAheadKb => "read_ahead_kb".into(),
            QueueAttr::Tunable(name) => format!("iosched/{name}"),
            QueueAttr::Knob(name) => (*name).to_string(),
        }
    }
}

/// A device's open `queue/` directory (see [`SysRoot::queue_dir`]); reads only.
#[derive(Debug)]
pub struct QueueDir {
    pub(super) fd: std::os::fd::OwnedFd,
}

impl QueueDir {
    /// Read a whitelisted queue attribute, trimmed.
    pub fn read(&self, attr: &QueueAttr) -> io::Result<String> {
        Ok(read_file(self.open(attr)?)?.trim().to_owned())
    }

    /// [`SysRoot::open_queue_attr`] with a short lookup.
    pub fn open_attr(&self, attr: &QueueAttr) -> io::Result<Opened> {
        OpenAttr::open(self.open(attr)?)
    }

    fn open(&self, attr: &QueueAttr) -> io::Result<fs::File> {
        use nix::fcntl::{OFlag, openat};
        use nix::sys::stat::Mode;
        let rel = attr.rel_path().ok_or_else(bad_attr)?;
        let rel = rel.strip_prefix("queue/").ok_or_else(bad_attr)?;
        // Not blocking, as [`open_nonblocking`]: a FIFO reads as empty.
        let fd = openat(
            &self.fd,
            rel,
            OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(fs::File::from(fd))
    }
}

pub(super) fn bad_attr() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "malformed queue attribute name",
    )
}
