//! The tuner: changes a device's scheduler, its tunables, nr_requests and
//! read_ahead_kb as one change.
//!
//! Order matters: switching the scheduler resets `nr_requests` and every
//! `queue/iosched/*` tunable (kernel `block/elevator.c`, `elevator_switch()`;
//! `Documentation/ABI/stable/sysfs-block`), so the order is scheduler, then
//! its tunables, then nr_requests, then read_ahead_kb. Every value is
//! validated first, read back after writing, and if any step fails what was
//! already changed is put back. The device's original settings are journalled
//! before its first change.
//!
//! The files, by idea: this one holds the
//! [`Tuner`] and its lock ([`Locked`]) (the request, [`Wanted`], is a leaf of
//! its own: `crate::wanted`); `validate` checks a request through
//! the scheduler catalogue; `transaction` is the one transaction (request ->
//! validate -> journal -> write in kernel order -> read back -> rollback);
//! `diff` says what changed ([`diff`], [`ValueChange`], [`Outcome::label`]).

mod diff;
mod transaction;
mod validate;

pub use crate::device::hw_queue_depth;
pub use crate::wanted::Wanted;
pub use diff::{Outcome, Stored, ValueChange, diff, is_no_op};
pub use transaction::boot_id;
pub use validate::validate;

use crate::device::QueueSettings;
use crate::error::TuneError;
use crate::journal::{DeviceLock, Journal, JournalEntry, Kept, LOCK_WAIT, LockError};
use crate::os::{DeviceName, SysRoot};
use std::io;
use std::time::Duration;

/// Resolve user input to a whole device, with the errors the CLI shows:
/// a kernel name, `/dev/NAME`, `/dev/mapper/NAME`, `MAJ:MIN`, and on the
/// live machine any link under /dev ([`crate::devname::resolve`]).
pub fn resolve(root: &SysRoot, name: &str) -> Result<DeviceName, TuneError> {
    crate::devname::resolve(root, &crate::devname::no_links, name).map(|r| r.dev)
}

/// Applies changes to one [`SysRoot`], journalling originals.
///
/// Every change is one transaction under the device's lock (see
/// [`crate::journal::Journal::lock`]): validate against a fresh read, journal
/// the original, write in kernel order, read back, roll back on failure, and
/// after a restore apply the revert policy
/// ([`crate::journal::Journal::forget_if_reverted`]). Without a journal
/// (blktune's own scratch devices) there is no lock either.
#[derive(Debug, Clone)]
pub struct Tuner {
    root: SysRoot,
    journal: Option<Journal>,
    /// The device incarnation the caller saw (name, diskseq): see [`Tuner::expecting`].
    seen: Option<(String, u64)>,
    lock_wait: Duration,
}

/// A device held under its lock for several transactions in a row (the
/// shoot-out: its switches, measurements and the restore), so no other
/// change can slip in between. Dropping it releases the lock.
#[derive(Debug)]
pub struct Locked<'a> {
    tuner: &'a Tuner,
    name: String,
    _lock: Option<DeviceLock>,
}

/// What a transaction is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A new setting: validated, the original journalled first.
    Change,
    /// Back to earlier settings this process read from the kernel (an
    /// undo, a shoot-out's restore): no range checks and no journalling;
    /// the revert policy decides on the entry afterwards.
    Restore,
    /// Back to the originals of a journal entry (`blktune revert`): a
    /// restore whose values come from a file, so every one is checked with
    /// the catalogue ([`validate::validate_original`]) before the first write.
    Revert,
}

impl Tuner {
    /// A tuner that journals originals in `journal` and locks each device
    /// while changing it (`None`: neither, for blktune's own scratch devices).
    /// The journal is bound to `root`'s tree ([`Journal::bound_to`]): it
    /// reads and writes only that tree's entries.
    pub fn new(root: SysRoot, journal: Option<Journal>) -> Self {
        let journal = journal.map(|j| j.bound_to(&root));
        Self {
            root,
            journal,
            seen: None,
            lock_wait: LOCK_WAIT,
        }
    }

    /// Wait at most `wait` for another holder of a device's lock.
    pub fn with_lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    /// Only touch `device` while its `diskseq` is the one the caller saw
    /// (kernel 5.15+: a new number on every attach, so a loop device detached
    /// and re-attached under the same name is another device). Every change
    /// checks the diskseq before each of its writes anyway, against the one
    /// it read first; this also ties the first write to what the caller saw.
    /// `None` (a kernel without diskseq) leaves only the per-change check.
    pub fn expecting(mut self, device: &str, diskseq: Option<u64>) -> Self {
        self.seen = diskseq.map(|d| (device.to_owned(), d));
        self
    }

    /// The diskseq given to [`Tuner::expecting`].
    pub fn seen_diskseq(&self) -> Option<u64> {
        self.seen.as_ref().map(|(_, s)| *s)
    }

    /// The sysfs/procfs root.
    pub fn root(&self) -> &SysRoot {
        &self.root
    }

    /// The journal, if any.
    pub fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    /// The command that reverts `device` from this tuner's journal (naming
    /// the journal directory when it is not the default, and a fake tree's
    /// roots: [`Journal::revert_command`]).
    pub fn revert_command(&self, device: &str) -> String {
        match &self.journal {
            Some(j) => j.revert_command(&self.root, &[device]),
            None => format!("blktune revert {device}"),
        }
    }

    /// Take the lock of the device called `name` (a plausible device name;
    /// it need not exist any more, so a gone device's entry can be dropped).
    pub fn lock(&self, name: &str) -> Result<Locked<'_>, TuneError> {
        let lock = match &self.journal {
            None => None,
            Some(j) => Some(j.lock(name, self.lock_wait).map_err(|e| match e {
                LockError::Busy { .. } => TuneError::Busy(e.to_string()),
                // Not root: the journal (root's) is as closed as the device.
                LockError::Io(source) if source.kind() == io::ErrorKind::PermissionDenied => {
                    TuneError::PermissionDenied {
                        dev: name.to_string(),
                        path: j.lock_dir().display().to_string(),
                    }
                }
                LockError::Io(source) => TuneError::Journal {
                    dir: j.dir().display().to_string(),
                    source,
                },
            })?),
        };
        Ok(Locked {
            tuner: self,
            name: name.to_string(),
            _lock: lock,
        })
    }

    /// Validate and apply `want` to the device called `name`, under its lock.
    pub fn apply(&self, name: &str, want: &Wanted) -> Result<Outcome, TuneError> {
        let dev = resolve(&self.root, name)?;
        self.lock(dev.as_str())?.apply(want)
    }

    /// Put a device back to `original` (a revert, an undo), under its lock,
    /// without journalling and without range checks (the values came from
    /// the kernel); then the revert policy drops its journal entry when the
    /// device is back at the journalled originals.
    pub fn restore(&self, name: &str, original: &Wanted) -> Result<Outcome, TuneError> {
        let dev = resolve(&self.root, name)?;
        self.lock(dev.as_str())?.restore(original)
    }

    /// The revert policy after a restore (or a rolled-back change) of `dev`:
    /// see [`Journal::forget_if_reverted`]. The writes are done whatever it
    /// says, so a journal that cannot be read here only keeps its entry.
    fn settle_journal(&self, dev: &DeviceName, now: &QueueSettings) -> Kept {
        match &self.journal {
            Some(j) => j.forget_if_reverted(dev.as_str(), now).unwrap_or_else(|e| {
                Kept::Differs(vec![format!("the journal could not be read ({e})")])
            }),
            None => Kept::None,
        }
    }
}

impl Locked<'_> {
    /// The device name it holds.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The command that reverts this device ([`Tuner::revert_command`]).
    pub fn revert_command(&self) -> String {
        self.tuner.revert_command(&self.name)
    }

    /// The diskseq its tuner was told to expect ([`Tuner::expecting`]).
    pub fn seen_diskseq(&self) -> Option<u64> {
        self.tuner.seen_diskseq()
    }

    /// [`Tuner::apply`] under this lock.
    pub fn apply(&self, want: &Wanted) -> Result<Outcome, TuneError> {
        self.tuner.transact(&self.name, want, Kind::Change)
    }

    /// [`Tuner::restore`] under this lock.
    pub fn restore(&self, original: &Wanted) -> Result<Outcome, TuneError> {
        self.tuner.transact(&self.name, original, Kind::Restore)
    }

    /// Put the device back to `original`, the originals of its journal
    /// entry ([`Locked::entry`]): a restore, but every value is checked with
    /// the catalogue before the first write, as the entry is a file and a
    /// value `set` would refuse is refused here too
    /// ([`TuneError::BadOriginal`], nothing written).
    pub fn revert(&self, original: &Wanted) -> Result<Outcome, TuneError> {
        self.tuner.transact(&self.name, original, Kind::Revert)
    }

    /// The device's journal entry, read under the lock (`None`: no journal or no entry).
    pub fn entry(&self) -> Result<Option<JournalEntry>, TuneError> {
        let Some(j) = &self.tuner.journal else {
            return Ok(None);
        };
        j.load(&self.name).map_err(|source| TuneError::Journal {
            dir: j.dir().display().to_string(),
            source,
        })
    }

    /// Drop the device's journal entry (a stale one, which no restore can apply).
    pub fn drop_entry(&self) -> Result<(), TuneError> {
        let Some(j) = &self.tuner.journal else {
            return Ok(());
        };
        j.remove(&self.name).map_err(|source| TuneError::Journal {
            dir: j.dir().display().to_string(),
            source,
        })
    }
}

#[cfg(test)]
pub(super) mod test_support {
    use super::*;
    use crate::fake::{FakeDisk, FakeTree};

    /// A fake tree with `sda` (mq-deadline) and a tuner with a journal beside it.
    pub fn setup() -> (tempfile::TempDir, FakeTree, Tuner) {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(&dir.path().join("root")).unwrap();
        t.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
        let tuner = Tuner::new(t.root(), Some(Journal::new(dir.path().join("j"))));
        (dir, t, tuner)
    }
}
