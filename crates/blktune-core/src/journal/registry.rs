//! The register of live devices: one place every blktune finds, whatever
//! journal directory it was given, that holds each real device's lock and
//! says in which journal directory its originals are.
//!
//! Without it, two processes with two journal directories (`sudo` drops
//! `BLKTUNE_JOURNAL_DIR`) each took their own lock and journalled their own
//! "original" of one device, and the second one's was the first one's
//! change: after both reverts the device kept the first change. Now a live
//! device's lock is `.<device>.lock` here (`/run/blktune/live`, never moved
//! by the variable), and under it a change reads the device's registration
//! (`<device>.json`: the journal directory, the device's number, diskseq and
//! boot id, the pid and time of the first change): a change journalled in
//! another directory is refused with that directory's path, and a revert
//! takes the originals from there.
//!
//! A registration is written before the entry it points to and removed
//! after it, so a crash leaves at most a registration whose journal has no
//! entry: it counts for nothing. One of an earlier incarnation of the device
//! (another diskseq, another boot) counts for nothing either. Not root:
//! the directory cannot be made or read, and a change of a live device
//! (which needs root anyway) is refused before anything is written.

use super::dir::{Dir, os_err, refused};
use super::{DEFAULT_DIR, DeviceId, Journal, JournalEntry, MAX_ENTRY_BYTES, stale_reason};
use nix::fcntl::renameat;
use serde::{Deserialize, Serialize};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Where live devices are registered: beside the default journal, and
/// never moved by `BLKTUNE_JOURNAL_DIR` (that is the point of it).
pub const LIVE_DIR: &str = "/run/blktune/live";

/// Version of the registration format.
const REGISTRATION_VERSION: u32 = 1;

/// Where a live device's originals are journalled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    pub version: u32,
    pub device: String,
    pub major: u32,
    pub minor: u32,
    pub diskseq: Option<u64>,
    pub boot_id: Option<String>,
    /// The journal directory that holds the device's entry (absolute).
    pub journal: PathBuf,
    /// The process that journalled the original.
    pub pid: u32,
    /// Seconds since the Unix epoch when it was registered.
    pub saved_at: f64,
}

impl Registration {
    /// The registration of `entry`, journalled in `journal`.
    pub fn of(entry: &JournalEntry, journal: &Path) -> Self {
        Self {
            version: REGISTRATION_VERSION,
            device: entry.device.clone(),
            major: entry.major,
            minor: entry.minor,
            diskseq: entry.diskseq,
            boot_id: entry.boot_id.clone(),
            journal: journal.to_path_buf(),
            pid: entry.pid.unwrap_or_else(std::process::id),
            saved_at: entry.saved_at,
        }
    }

    /// Is it about the device incarnation `entry` was read from (same
    /// number, diskseq and boot)?
    pub fn is_of(&self, entry: &JournalEntry) -> bool {
        let id = DeviceId {
            major: entry.major,
            minor: entry.minor,
            diskseq: entry.diskseq,
        };
        let saved = (
            self.major,
            self.minor,
            self.diskseq,
            self.boot_id.as_deref(),
        );
        stale_reason(saved, Some(id), entry.boot_id.as_deref()).is_none()
    }
}

/// Why an original was not journalled ([`Journal::save_original`]).
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The live device's originals are journalled in another directory
    /// (see [`registry`]): this change would journal a second "original".
    #[error("'{device}' has its originals journalled in {}", .dir.display())]
    Elsewhere { device: String, dir: PathBuf },
    /// A directory or file of the journal or the register cannot be used.
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl Journal {
    /// Journal `entry` as its device's original before a change, with the
    /// device's lock held: nothing when the device already has a live
    /// entry here (the first original wins); a stale one (an earlier
    /// incarnation) is replaced. A live device is registered first
    /// ([`registry`]), and refused when its originals are journalled in
    /// another directory. Returns whether an entry was written.
    pub fn save_original(&self, entry: &JournalEntry) -> Result<bool, SaveError> {
        if let Some(dir) = self.journalled_elsewhere(entry)? {
            return Err(SaveError::Elsewhere {
                device: entry.device.clone(),
                dir,
            });
        }
        let (id, boot) = (entry.device_id(), entry.boot_id.as_deref());
        // An entry that is not trusted (a symlink, a forged owner, another
        // version, bad JSON, another tree's) is an error here: nothing is written.
        let old = self.load(&entry.device)?;
        // Registered before the entry is written: a crash in between leaves a
        // registration without an entry, which counts for nothing.
        self.register(entry)?;
        Ok(match old {
            Some(old) if old.stale_for(Some(id), boot).is_none() => false,
            Some(_) => {
                self.replace(entry)?;
                true
            }
            None => self.save_if_absent(entry)?,
        })
    }

    /// The other journal directory holding a live original of `entry`'s
    /// device: the one its registration names, or (no registration) the
    /// default one, where a blktune before the register journalled it.
    fn journalled_elsewhere(&self, entry: &JournalEntry) -> io::Result<Option<PathBuf>> {
        let Some(registry) = &self.registry else {
            return Ok(None);
        };
        let other = match registry.load(&entry.device)? {
            Some(r) if r.journal != self.dir && r.is_of(entry) => r.journal,
            Some(_) => return Ok(None),
            None if self.dir != Path::new(DEFAULT_DIR) => PathBuf::from(DEFAULT_DIR),
            None => return Ok(None),
        };
        let there = self.sibling(other);
        // An entry there that cannot be read refuses the change: whether it
        // holds the true original cannot be told.
        match there.load(&entry.device)? {
            Some(e)
                if e.stale_for(Some(entry.device_id()), entry.boot_id.as_deref())
                    .is_none() =>
            {
                Ok(Some(there.dir))
            }
            _ => Ok(None),
        }
    }

    /// Register `entry`'s device as journalled here (live devices only),
    /// unless it already is.
    fn register(&self, entry: &JournalEntry) -> io::Result<()> {
        let Some(registry) = &self.registry else {
            return Ok(());
        };
        if let Ok(Some(r)) = registry.load(&entry.device)
            && r.journal == self.dir
            && r.is_of(entry)
        {
            return Ok(());
        }
        registry.put(&Registration::of(entry, &self.dir))
    }

    /// The journal that holds `device`'s originals when this one does not:
    /// the directory its registration names, or the default one (entries
    /// of a blktune before the register). `None`: no other one (not live,
    /// or this is the one). Its entry may still be refused when read.
    pub fn home_of(&self, device: &str) -> io::Result<Option<Journal>> {
        let Some(registry) = &self.registry else {
            return Ok(None);
        };
        let other = match registry.load(device)? {
            Some(r) if r.journal != self.dir => r.journal,
            Some(_) => return Ok(None),
            None if self.dir != Path::new(DEFAULT_DIR) => PathBuf::from(DEFAULT_DIR),
            None => return Ok(None),
        };
        let there = self.sibling(other);
        let has = match there.open_dir(false) {
            Ok(Some(dir)) => dir.names()?.contains(&Self::file_name(device)?),
            Ok(None) => false,
            // A directory that cannot be used: its error is told when read.
            Err(_) => true,
        };
        Ok(has.then_some(there))
    }
}

/// The register's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    dir: PathBuf,
}

impl Registry {
    /// The register of this machine's devices ([`LIVE_DIR`]).
    pub fn live() -> Self {
        Self::new(LIVE_DIR)
    }

    /// A register in `dir` (tests).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file_name(device: &str) -> io::Result<String> {
        super::Journal::file_name(device)
    }

    /// The registration of `device`, checked like a journal entry (a trusted
    /// regular file, this format, the device its name says, an absolute path).
    pub fn load(&self, device: &str) -> io::Result<Option<Registration>> {
        let name = Self::file_name(device)?;
        let Some(dir) = Dir::open(&self.dir, false)? else {
            return Ok(None);
        };
        Self::load_in(&dir, device, &name)
    }

    fn load_in(dir: &Dir, device: &str, name: &str) -> io::Result<Option<Registration>> {
        let path = dir.at(name);
        let Some(mut f) = dir.open_trusted(name)? else {
            return Ok(None);
        };
        let mut text = String::new();
        Read::by_ref(&mut f)
            .take(MAX_ENTRY_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let r: Registration = serde_json::from_str(&text)
            .map_err(|e| refused(&path, format!("not a registration ({e})")))?;
        if r.version != REGISTRATION_VERSION {
            return Err(refused(
                &path,
                format!(
                    "registration format {}, this blktune reads {REGISTRATION_VERSION}",
                    r.version
                ),
            ));
        }
        if r.device != device {
            return Err(refused(
                &path,
                format!("names device '{}', not '{device}'", r.device.escape_debug()),
            ));
        }
        if !r.journal.is_absolute() {
            return Err(refused(&path, "its journal directory is not absolute"));
        }
        Ok(Some(r))
    }

    /// Register `registration` (replacing what was there: the caller holds the
    /// device's lock and has checked it), atomically.
    pub fn put(&self, registration: &Registration) -> io::Result<()> {
        let name = Self::file_name(&registration.device)?;
        let json = serde_json::to_vec_pretty(registration).map_err(io::Error::other)?;
        let Some(dir) = Dir::open(&self.dir, true)? else {
            return Err(refused(&self.dir, "cannot be created"));
        };
        let tmp = dir.write_temp(&registration.device, &json)?;
        let out = renameat(&dir.fd, tmp.as_str(), &dir.fd, name.as_str())
            .map_err(|e| os_err(&dir.at(&name), e));
        let _ = dir.unlink(&tmp);
        out?;
        dir.sync()
    }

    /// Remove `device`'s registration if it names `journal` (one naming
    /// another directory is that directory's business).
    pub fn forget(&self, device: &str, journal: &Path) -> io::Result<()> {
        let name = Self::file_name(device)?;
        let Some(dir) = Dir::open(&self.dir, false)? else {
            return Ok(());
        };
        match Self::load_in(&dir, device, &name) {
            Ok(Some(r)) if r.journal != journal => return Ok(()),
            Ok(None) => return Ok(()),
            // Ours, or not a registration at all: it goes.
            Ok(Some(_)) | Err(_) => {}
        }
        dir.unlink(&name)?;
        dir.sync()
    }

    /// Every registration, sorted by device; unreadable ones reported.
    pub fn list(&self) -> io::Result<Vec<Result<Registration, (String, io::Error)>>> {
        let Some(dir) = Dir::open(&self.dir, false)? else {
            return Ok(Vec::new());
        };
        Ok(dir
            .json_stems()?
            .into_iter()
            .filter_map(|n| {
                let r = Self::file_name(&n).and_then(|file| Self::load_in(&dir, &n, &file));
                match r {
                    Ok(Some(r)) => Some(Ok(r)),
                    Ok(None) => None,
                    Err(e) => Some(Err((n, e))),
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::TuneError;
    use crate::fake::{FakeDisk, FakeTree};
    use crate::tuner::{Tuner, Wanted};
    use std::time::Duration;

    /// A fake tree with `loop1` (diskseq 11), registered like a live device
    /// in a register of its own; `journal(name)` is a journal directory there.
    struct Machine {
        dir: tempfile::TempDir,
        tree: FakeTree,
    }

    impl Machine {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let tree = FakeTree::new(&dir.path().join("root")).unwrap();
            let mut d = FakeDisk::new("loop1").dev(7, 1);
            d.diskseq = Some(11);
            tree.add(&d).unwrap();
            Self { dir, tree }
        }

        fn registry(&self) -> Registry {
            Registry::new(self.dir.path().join("live"))
        }

        fn journal(&self, name: &str) -> Journal {
            Journal::new(self.dir.path().join(name)).with_registry(self.registry())
        }

        fn tuner(&self, journal: &str) -> Tuner {
            Tuner::new(self.tree.root(), Some(self.journal(journal)))
                .with_lock_wait(Duration::from_secs(30))
        }

        fn read_ahead(&self) -> String {
            std::fs::read_to_string(self.tree.dev_dir("loop1").join("queue/read_ahead_kb"))
                .unwrap()
                .trim()
                .to_string()
        }
    }

    fn ra(count: u64) -> Wanted {
        Wanted {
            read_ahead_kb: Some(count),
            ..Wanted::default()
        }
    }

    #[test]
    fn a_device_journalled_in_one_directory_is_refused_from_another_and_reverted_from_the_first() {
        let m = Machine::new();
        let (a, b) = (m.tuner("a"), m.tuner("b"));
        a.apply("loop1", &ra(512)).unwrap();
        let r = m.registry().load("loop1").unwrap().unwrap();
        assert_eq!(r.journal, m.dir.path().join("a"));
        assert_eq!((r.major, r.minor, r.diskseq), (7, 1, Some(11)));
        assert_eq!(r.pid, std::process::id());
        // From the other directory: refused, naming the first, nothing written.
        let e = b.apply("loop1", &ra(1024)).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, TuneError::JournalledElsewhere { .. }), "{msg}");
        assert!(
            msg.contains(&m.dir.path().join("a").display().to_string()),
            "{msg}"
        );
        assert!(msg.contains("nothing was changed"), "{msg}");
        assert_eq!(m.read_ahead(), "512");
        assert!(m.journal("b").load("loop1").unwrap().is_none());
        // The other directory finds the originals where they are.
        let home = m.journal("b").home_of("loop1").unwrap().unwrap();
        assert_eq!(home.dir(), m.dir.path().join("a"));
        let t = Tuner::new(m.tree.root(), Some(home));
        let held = t.lock("loop1").unwrap();
        let entry = held.entry().unwrap().unwrap();
        held.revert(&entry.original).unwrap();
        drop(held);
        assert_eq!(m.read_ahead(), "128");
        // Entry and registration are gone: the other directory may change it now.
        assert!(m.registry().load("loop1").unwrap().is_none());
        b.apply("loop1", &ra(1024)).unwrap();
        assert_eq!(
            m.registry().load("loop1").unwrap().unwrap().journal,
            m.dir.path().join("b")
        );
    }

    #[test]
    fn a_registration_without_its_entry_or_of_an_earlier_device_counts_for_nothing() {
        let m = Machine::new();
        let a = m.journal("a");
        m.tuner("a").apply("loop1", &ra(512)).unwrap();
        // A crash between the registration and the entry: no entry there.
        std::fs::remove_file(m.dir.path().join("a/loop1.json")).unwrap();
        m.tuner("b").apply("loop1", &ra(1024)).unwrap();
        let e = m.journal("b").load("loop1").unwrap().unwrap();
        assert_eq!(e.original.read_ahead_kb, Some(512));
        assert!(a.home_of("loop1").unwrap().is_some(), "b is its home now");
        // A registration of an earlier incarnation (another diskseq).
        let mut r = m.registry().load("loop1").unwrap().unwrap();
        r.diskseq = Some(3);
        m.registry().put(&r).unwrap();
        std::fs::rename(m.dir.path().join("b"), m.dir.path().join("old")).unwrap();
        r.journal = m.dir.path().join("old");
        m.registry().put(&r).unwrap();
        m.tuner("a").apply("loop1", &ra(256)).unwrap();
        assert_eq!(
            m.registry().load("loop1").unwrap().unwrap().journal,
            m.dir.path().join("a")
        );
    }

    #[test]
    fn a_forged_registration_refuses_the_change_with_its_path() {
        let m = Machine::new();
        std::fs::create_dir_all(m.registry().dir()).unwrap();
        let path = m.registry().dir().join("loop1.json");
        std::fs::write(&path, r#"{"version":1,"device":"loop2"}"#).unwrap();
        let e = m.tuner("a").apply("loop1", &ra(512)).unwrap_err();
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        assert_eq!(m.read_ahead(), "128");
    }

    /// Many changes from two journal directories at once: one lock for the
    /// device, so one original, and the revert ends at it.
    #[test]
    fn racing_changes_from_two_directories_keep_one_original() {
        let m = std::sync::Arc::new(Machine::new());
        let threads: Vec<_> = (0..8u64)
            .map(|i| {
                let m = m.clone();
                std::thread::spawn(move || {
                    let t = m.tuner(if i % 2 == 0 { "a" } else { "b" });
                    for n in 0..5u64 {
                        let _ = t.apply("loop1", &ra(4 * (1 + i * 8 + n)));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let entries: Vec<_> = ["a", "b"]
            .iter()
            .filter_map(|j| m.journal(j).load("loop1").unwrap())
            .collect();
        assert_eq!(entries.len(), 1, "one set of originals: {entries:?}");
        assert_eq!(entries[0].original.read_ahead_kb, Some(128));
        let home = m.journal("b").home_of("loop1").unwrap();
        let t = Tuner::new(m.tree.root(), Some(home.unwrap_or_else(|| m.journal("b"))));
        let held = t.lock("loop1").unwrap();
        held.revert(&held.entry().unwrap().unwrap().original)
            .unwrap();
        drop(held);
        assert_eq!(m.read_ahead(), "128");
    }
}
