//! The journal of original settings, so every change can be reverted, even
//! from a later process after a crash or a dropped SSH session.
//!
//! One JSON file per device in `/run/blktune/` (tmpfs: it dies with the reboot
//! that also resets sysfs). An entry is written once, before the first change
//! to a device, atomically (temp file, fsync, link or rename), and dropped by
//! the one revert policy ([`Journal::forget_if_reverted`]). It records the
//! boot id and the device's `diskseq`, so an entry for a device that was
//! re-created since is recognised as stale.
//!
//! The journal belongs to the tree it describes ([`Journal::for_root`]): the
//! real `/sys` journals in `/run/blktune`, a fake tree given with
//! `--sysfs-root` inside itself, so a captured tree never reads or writes
//! the real journal. Every entry also says which tree it is of ([`Tree`]),
//! and a journal bound to a tree refuses another tree's entries, so the
//! two never mix even in one directory (`BLKTUNE_JOURNAL_DIR`).
//!
//! Nothing in the directory is trusted blindly: the directory must be owned
//! by root or the current user and not writable by group or others, and is
//! opened without following a symlink; every file in it is opened relative
//! to that directory with `O_NOFOLLOW` and checked (a regular file of the
//! same owners, this format's version, the device its name says). Anything
//! else is an error naming the path, and the caller changes nothing.
//!
//! Every change to a device holds the device's lock ([`Journal::lock`]: an
//! exclusive `flock(2)` on `.<device>.lock`) from the journal read to the
//! last read-back, so two blktune processes (or the TUI's worker and its
//! shoot-out) never interleave their writes or lose an original. A real
//! device's lock, and the record of where its originals are, live in one
//! register every process finds whatever its journal directory
//! ([`registry`]), so a device has one lock and one set of originals.
//!
//! The files: this one holds the journal's operations and the revert
//! policy; `entry` an entry and what it says about a device; `dir` the
//! checked directory and the files reached through it;
//! `lock` the per-device `flock(2)`; `tree` which devices an entry is of;
//! `registry` the register of live devices.

mod dir;
mod entry;
mod lock;
pub mod registry;
mod tree;

use entry::implausible_original;
pub(crate) use entry::stale_reason;
pub use entry::{DeviceId, JournalEntry, Kept};
pub use lock::{DeviceLock, LockError};
pub use registry::{Registration, Registry, SaveError};
pub use tree::Tree;

use crate::device::QueueSettings;
use crate::os::{SysRoot, is_plausible_device_name};
use dir::{Dir, os_err, refused};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, renameat};
use nix::unistd::linkat;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Version of the journal file format.
pub const JOURNAL_VERSION: u32 = 1;

/// Where the journal of the real `/sys` lives unless told otherwise.
pub const DEFAULT_DIR: &str = "/run/blktune";

/// Environment variable that moves the journal (tests, unusual hosts). It
/// wins over [`Journal::for_root`]'s choice: whoever sets it chose the place.
/// A relative path is made absolute against the directory blktune started in.
pub const DIR_ENV: &str = "BLKTUNE_JOURNAL_DIR";

/// The journal of a fake tree: this directory inside its sysfs root.
pub const TREE_DIR: &str = ".blktune-journal";

/// How long a change waits for another holder of the device's lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Entries are small; anything bigger than this is not one of ours.
const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// The journal directory, and the tree whose entries it reads and writes.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
    /// The tree it is bound to (`None`: every entry is read as it is).
    tree: Option<Tree>,
    /// Is `dir` where the tree's journal is by default? Only there an entry
    /// without a tree (from a blktune before trees were recorded) is taken
    /// as the tree's: it was the only tree that wrote there.
    own: bool,
    /// The register of live devices (the live tree only).
    registry: Option<Registry>,
}

impl Journal {
    /// A journal in `dir`, bound to no tree: its entries are read as they
    /// are. [`Journal::for_root`], and [`crate::tuner::Tuner::new`] for a
    /// journal made this way, bind it to a tree.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            tree: None,
            own: false,
            registry: None,
        }
    }

    /// The journal of the tree `root` describes, bound to it:
    /// `$BLKTUNE_JOURNAL_DIR` when set (made absolute); else `/run/blktune`
    /// for the real `/sys` and `/proc`; else [`TREE_DIR`] inside the given
    /// sysfs root, so a fake tree never reads or writes the real journal.
    /// (With the real `/sys` but another `/proc` that is
    /// `/sys/.blktune-journal`, which cannot be made: changes are refused,
    /// as they would go to real devices against a fake `/proc`.)
    pub fn for_root(root: &SysRoot) -> Self {
        Self::choose(std::env::var_os(DIR_ENV).map(PathBuf::from), root).bound_to(root)
    }

    /// Where [`Journal::for_root`] puts the journal of `root` when
    /// `$BLKTUNE_JOURNAL_DIR` is not set.
    pub fn default_for(root: &SysRoot) -> Self {
        Self::choose(None, root).bound_to(root)
    }

    fn choose(env: Option<PathBuf>, root: &SysRoot) -> Self {
        match env {
            Some(dir) if !dir.as_os_str().is_empty() => Self::new(one_spelling(&dir)),
            _ if root.is_live() => Self::new(DEFAULT_DIR),
            _ => Self::new(one_spelling(&root.sysfs().join(TREE_DIR))),
        }
    }

    /// This journal bound to the tree `root` describes (see [`Tree`]); one
    /// already bound stays as it is. The live tree also gets the register
    /// of live devices, unless one was given ([`Journal::with_registry`]).
    pub fn bound_to(mut self, root: &SysRoot) -> Self {
        if self.tree.is_some() {
            return self;
        }
        let tree = Tree::of(root);
        self.own = self.dir == Self::choose(None, root).dir;
        if tree.is_live() && self.registry.is_none() {
            self.registry = Some(Registry::live());
        }
        self.tree = Some(tree);
        self
    }

    /// This journal with `registry` as its register of live devices (tests,
    /// which register a fake tree's devices in a directory of their own).
    pub fn with_registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The tree it is bound to, if any.
    pub fn tree(&self) -> Option<&Tree> {
        self.tree.as_ref()
    }

    /// The register of live devices it uses, if any.
    pub fn registry(&self) -> Option<&Registry> {
        self.registry.as_ref()
    }

    /// Where a device's lock is taken: the register for a live device
    /// (one lock whatever the journal directory), else the journal directory.
    pub fn lock_dir(&self) -> &Path {
        self.registry.as_ref().map_or(&self.dir, Registry::dir)
    }

    /// Another journal directory, bound as this one is.
    pub fn sibling(&self, dir: PathBuf) -> Self {
        Self {
            own: self.tree.as_ref().is_some_and(Tree::is_live) && dir == Path::new(DEFAULT_DIR),
            dir,
            tree: self.tree.clone(),
            registry: self.registry.clone(),
        }
    }

    /// The entry file name of a device. Names that are not plausible kernel
    /// names (`../x`, `a/b`) are refused, so no input reaches a file outside
    /// the journal.
    fn file_name(device: &str) -> io::Result<String> {
        if !is_plausible_device_name(device) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("'{}' is not a device name", device.escape_debug()),
            ));
        }
        Ok(format!("{device}.json"))
    }

    /// The entry of a device, if any, checked: a trusted regular file (not a
    /// symlink), this format's version, the device its name says, and (for
    /// a bound journal) of its tree: another tree's entry, or one without a
    /// tree outside the tree's own journal, is refused, never applied.
    pub fn load(&self, device: &str) -> io::Result<Option<JournalEntry>> {
        let name = Self::file_name(device)?;
        let Some(dir) = self.open_dir(false)? else {
            return Ok(None);
        };
        self.load_in(&dir, device, &name)
    }

    fn load_in(&self, dir: &Dir, device: &str, name: &str) -> io::Result<Option<JournalEntry>> {
        let path = dir.at(name);
        let Some(mut f) = dir.open_trusted(name)? else {
            return Ok(None);
        };
        let mut text = String::new();
        Read::by_ref(&mut f)
            .take(MAX_ENTRY_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        // The version first, so a newer format is named as such, not as bad JSON.
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| refused(&path, format!("not a journal entry ({e})")))?;
        match v.get("version").and_then(serde_json::Value::as_u64) {
            Some(n) if n == u64::from(JOURNAL_VERSION) => {}
            Some(n) => {
                return Err(refused(
                    &path,
                    format!("format version {n}, this blktune reads version {JOURNAL_VERSION}"),
                ));
            }
            None => return Err(refused(&path, "not a journal entry (no version)")),
        }
        let e: JournalEntry = serde_json::from_value(v)
            .map_err(|e| refused(&path, format!("not a journal entry ({e})")))?;
        if e.device != device {
            return Err(refused(
                &path,
                format!("names device '{}', not '{device}'", e.device.escape_debug()),
            ));
        }
        if let Some(why) = self.not_of_this_tree(&e) {
            return Err(refused(&path, why));
        }
        if let Some(why) = implausible_original(&e.original) {
            return Err(refused(&path, why));
        }
        Ok(Some(e))
    }

    /// Why `journal_entry` is not an entry of the tree this journal is bound to.
    fn not_of_this_tree(&self, journal_entry: &JournalEntry) -> Option<String> {
        let mine = self.tree.as_ref()?;
        match &journal_entry.tree {
            Some(theirs) if theirs != mine => Some(format!(
                "the original of '{}' in {theirs}, not of {mine}; left in place (revert it with {})",
                journal_entry.device,
                match theirs {
                    Tree::Live => "blktune revert, without --sysfs-root".to_string(),
                    Tree::Files(sys) => format!("--sysfs-root {}", sys.display()),
                }
            )),
            None if !self.own => Some(format!(
                "written by an earlier blktune without the tree it is of, and this is not the \
                 own journal of {mine}: whose original it is cannot be told; left in place"
            )),
            _ => None,
        }
    }

    /// Write `entry` unless the device already has one (the first original
    /// wins: a second change must not overwrite the true original).
    /// Returns whether it wrote. Two processes racing for the same device
    /// cannot both win: the entry is published with `link(2)`, which never
    /// replaces an existing file.
    pub fn save_if_absent(&self, entry: &JournalEntry) -> io::Result<bool> {
        let name = Self::file_name(&entry.device)?;
        self.publish(entry, |dir, tmp| {
            let r = linkat(&dir.fd, tmp, &dir.fd, name.as_str(), AtFlags::empty());
            match r {
                Ok(()) => Ok(true),
                Err(Errno::EEXIST) => Ok(false),
                Err(e) => Err(os_err(&dir.at(&name), e)),
            }
        })
    }

    /// Replace a stale entry (see [`JournalEntry::stale_reason`]) with `entry`,
    /// atomically (temp file, fsync, rename).
    pub fn replace(&self, entry: &JournalEntry) -> io::Result<()> {
        let name = Self::file_name(&entry.device)?;
        self.publish(entry, |dir, tmp| {
            renameat(&dir.fd, tmp, &dir.fd, name.as_str()).map_err(|e| os_err(&dir.at(&name), e))
        })
    }

    /// Write `entry` to a fsynced temp file in the journal directory, hand it
    /// to `put` (link or rename into place), then fsync the directory. The
    /// temp file is removed whatever happens (after a rename it is gone).
    fn publish<T>(
        &self,
        entry: &JournalEntry,
        put: impl FnOnce(&Dir, &str) -> io::Result<T>,
    ) -> io::Result<T> {
        let json = serde_json::to_vec_pretty(entry).map_err(io::Error::other)?;
        let Some(dir) = self.open_dir(true)? else {
            return Err(refused(&self.dir, "cannot be created"));
        };
        let tmp = dir.write_temp(&entry.device, &json)?;
        let out = put(&dir, &tmp);
        let _ = dir.unlink(&tmp);
        let out = out?;
        dir.sync()?;
        Ok(out)
    }

    /// Every entry, sorted by device. Unreadable or refused files are
    /// reported, not skipped silently.
    pub fn list(&self) -> io::Result<Vec<Result<JournalEntry, (String, io::Error)>>> {
        let Some(dir) = self.open_dir(false)? else {
            return Ok(Vec::new());
        };
        Ok(dir
            .json_stems()?
            .into_iter()
            .filter_map(|n| {
                let r = Self::file_name(&n).and_then(|file| self.load_in(&dir, &n, &file));
                match r {
                    Ok(Some(e)) => Some(Ok(e)),
                    Ok(None) => None,
                    Err(e) => Some(Err((n, e))),
                }
            })
            .collect())
    }

    /// Remove a device's entry, and its registration when it points here.
    pub fn remove(&self, device: &str) -> io::Result<()> {
        let name = Self::file_name(device)?;
        let Some(dir) = self.open_dir(false)? else {
            return Ok(());
        };
        dir.unlink(&name)?;
        dir.sync()?;
        if let Some(registry) = &self.registry {
            // A registration left behind names a journal without the entry:
            // it counts for nothing (see `registry`), so a failure here loses nothing.
            let _ = registry.forget(device, &self.dir);
        }
        Ok(())
    }

    /// The one revert policy: **a device's entry is dropped when the device's
    /// settings equal the journalled originals after a revert** (any restore
    /// of earlier settings: `blktune revert`, the TUI's `u` and `U`,
    /// `--revert-on-exit`, the shoot-out's restore, a rolled-back change).
    /// Then nothing is left to revert, so `revert` and `export` no longer
    /// name the device. When it still differs (an undo back to a state that
    /// was itself a change, or a value the kernel would not take back) the
    /// entry stays, so the true original can still be put back. Call it with
    /// the device's lock held and `now` read after the last write.
    pub fn forget_if_reverted(&self, device: &str, now: &QueueSettings) -> io::Result<Kept> {
        let Some(entry) = self.load(device)? else {
            return Ok(Kept::None);
        };
        let differs = entry.differences(now);
        if !differs.is_empty() {
            return Ok(Kept::Differs(differs));
        }
        self.remove(device)?;
        Ok(Kept::Dropped)
    }

    /// The command that reverts `devices` from this journal: it names the
    /// directory when it is not where `root`'s journal is by default (sudo
    /// drops `BLKTUNE_JOURNAL_DIR`), and a fake tree's roots (without them
    /// the command would go to the real devices).
    pub fn revert_command(&self, root: &SysRoot, devices: &[&str]) -> String {
        let env = if self.dir == Self::choose(None, root).dir {
            String::new()
        } else {
            format!("{DIR_ENV}={} ", shell_word(&self.dir.to_string_lossy()))
        };
        let roots = if root.is_live() {
            String::new()
        } else {
            format!(
                "--sysfs-root {} --proc-root {} ",
                shell_word(&root.sysfs().to_string_lossy()),
                shell_word(&root.procfs().to_string_lossy())
            )
        };
        format!("{env}blktune {roots}revert {}", devices.join(" "))
    }
}

/// One spelling of a journal directory, from the start: absolute (a hint
/// or a registration naming it must mean the same directory from any
/// other directory), its parent's symlinks resolved (`/var/run/blktune` is
/// `/run/blktune`), its own name kept (a symlink there is refused when it
/// is opened, never followed).
fn one_spelling(dir: &Path) -> PathBuf {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) => {
            std::fs::canonicalize(parent).map_or(abs.clone(), |p| p.join(name))
        }
        _ => abs,
    }
}

/// `text` as one shell word: as it is when it is plain, else in single quotes.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,=@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
pub(super) mod test_support {
    use super::*;
    use crate::wanted::Wanted;
    use std::fs;

    pub fn entry(dev: &str, nr: u64) -> JournalEntry {
        JournalEntry {
            version: JOURNAL_VERSION,
            device: dev.into(),
            major: 7,
            minor: 0,
            diskseq: Some(9),
            boot_id: None,
            saved_at: 0.0,
            original: Wanted {
                scheduler: Some("none".into()),
                nr_requests: Some(nr),
                ..Wanted::default()
            },
            tree: None,
            pid: None,
        }
    }

    pub fn chmod(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    pub fn is_root() -> bool {
        nix::unistd::geteuid().is_root()
    }

    /// The error's message, which must name `path`.
    pub fn names_path(err: &io::Error, path: &Path) -> String {
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
        msg
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{entry, names_path};
    use super::*;
    use std::fs;

    #[test]
    fn first_original_wins_and_remove_clears() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("j"));
        assert!(j.save_if_absent(&entry("loop0", 128)).unwrap());
        assert!(!j.save_if_absent(&entry("loop0", 64)).unwrap());
        assert_eq!(
            j.load("loop0").unwrap().unwrap().original.nr_requests,
            Some(128)
        );
        assert_eq!(j.list().unwrap().len(), 1);
        j.remove("loop0").unwrap();
        assert!(j.load("loop0").unwrap().is_none());
        j.remove("loop0").unwrap();
        // no temp files are left behind
        assert_eq!(fs::read_dir(dir.path().join("j")).unwrap().count(), 0);
    }

    #[test]
    fn corrupt_entries_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("sda.json"), "{not json").unwrap();
        let j = Journal::new(dir.path());
        let l = j.list().unwrap();
        assert!(matches!(&l[0], Err((n, _)) if n == "sda"));
    }

    #[test]
    fn path_like_names_never_reach_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("j"));
        std::fs::write(dir.path().join("x.json"), "{}").unwrap();
        for bad in ["../x", "a/b", "..", "", "x\n"] {
            assert!(j.load(bad).is_err(), "{bad:?}");
            assert!(j.remove(bad).is_err(), "{bad:?}");
            assert!(j.save_if_absent(&entry(bad, 1)).is_err(), "{bad:?}");
        }
        assert!(dir.path().join("x.json").exists());
    }

    #[test]
    fn replace_overwrites_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        j.save_if_absent(&entry("sda", 128)).unwrap();
        j.replace(&entry("sda", 64)).unwrap();
        assert_eq!(
            j.load("sda").unwrap().unwrap().original.nr_requests,
            Some(64)
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn the_policy_drops_an_entry_only_when_the_device_is_back_at_the_originals() {
        use crate::device::SchedulerState;
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        let q = |active: &str, nr: u64| QueueSettings {
            scheduler: Some(SchedulerState {
                active: active.into(),
                available: vec!["none".into(), "kyber".into()],
            }),
            nr_requests: Some(nr),
            ..QueueSettings::default()
        };
        assert_eq!(
            j.forget_if_reverted("sda", &q("none", 128)).unwrap(),
            Kept::None
        );
        j.save_if_absent(&entry("sda", 128)).unwrap();
        assert_eq!(
            j.forget_if_reverted("sda", &q("kyber", 128)).unwrap(),
            Kept::Differs(vec!["scheduler none→kyber".into()])
        );
        assert_eq!(
            j.forget_if_reverted("sda", &q("none", 64)).unwrap(),
            Kept::Differs(vec!["nr_requests 128→64".into()])
        );
        assert!(j.load("sda").unwrap().is_some());
        assert_eq!(
            j.forget_if_reverted("sda", &q("none", 128)).unwrap(),
            Kept::Dropped
        );
        assert!(j.load("sda").unwrap().is_none());
    }

    #[test]
    fn a_fake_tree_has_its_own_journal_and_the_variable_wins() {
        let live = SysRoot::default();
        assert_eq!(Journal::choose(None, &live).dir(), Path::new(DEFAULT_DIR));
        let fake = SysRoot::new("/tmp/captured/sys", "/tmp/captured/proc");
        assert_eq!(
            Journal::choose(None, &fake).dir(),
            Path::new("/tmp/captured/sys/.blktune-journal")
        );
        // Only /proc faked: the journal is not the real one either.
        let half = SysRoot::new("/sys", "/tmp/captured/proc");
        assert_ne!(Journal::choose(None, &half).dir(), Path::new(DEFAULT_DIR));
        assert_eq!(
            Journal::choose(Some("/tmp/j".into()), &fake).dir(),
            Path::new("/tmp/j")
        );
        assert_eq!(
            Journal::choose(Some("".into()), &live).dir(),
            Path::new(DEFAULT_DIR)
        );
    }

    /// A journal bound to a tree reads only that tree's entries: another
    /// tree's is refused (a captured tree carries the real device's number,
    /// diskseq and boot id, so nothing else tells them apart), and one
    /// without a tree only in the tree's own journal.
    #[test]
    fn a_bound_journal_refuses_another_trees_entries() {
        let dir = tempfile::tempdir().unwrap();
        let fake = SysRoot::new(dir.path().join("sys"), dir.path().join("proc"));
        std::fs::create_dir(dir.path().join("sys")).unwrap();
        let shared = dir.path().join("j");
        let live = Journal::new(&shared)
            .with_registry(Registry::new(dir.path().join("live")))
            .bound_to(&SysRoot::default());
        let files = Journal::new(&shared).bound_to(&fake);
        assert_eq!(live.tree(), Some(&Tree::Live));
        let mut e = entry("loop2", 128);
        e.tree = files.tree().cloned();
        files.save_if_absent(&e).unwrap();
        assert_eq!(files.load("loop2").unwrap().unwrap(), e);
        let msg = names_path(&live.load("loop2").unwrap_err(), &shared.join("loop2.json"));
        assert!(
            msg.contains("in the tree /") && msg.contains("not of this machine's devices"),
            "{msg}"
        );
        assert!(msg.contains("--sysfs-root"), "{msg}");
        // And the other way round.
        let mut e = entry("loop3", 64);
        e.tree = Some(Tree::Live);
        live.save_if_absent(&e).unwrap();
        let msg = names_path(
            &files.load("loop3").unwrap_err(),
            &shared.join("loop3.json"),
        );
        assert!(msg.contains("in this machine's devices"), "{msg}");
        // Both listed as refused by the other; an unbound journal reads all.
        assert!(live.list().unwrap()[0].is_err());
        assert!(files.list().unwrap()[1].is_err());
        assert_eq!(Journal::new(&shared).list().unwrap().len(), 2);
        // Without a tree: refused outside the tree's own journal...
        live.save_if_absent(&entry("loop4", 1)).unwrap();
        let msg = names_path(&live.load("loop4").unwrap_err(), &shared.join("loop4.json"));
        assert!(msg.contains("cannot be told"), "{msg}");
        // ...taken inside it (where a blktune before trees wrote only its own).
        let own = Journal::default_for(&fake);
        assert_eq!(own.dir(), dir.path().join("sys").join(TREE_DIR));
        own.save_if_absent(&entry("loop4", 1)).unwrap();
        assert!(own.load("loop4").unwrap().is_some());
    }

    #[test]
    fn the_revert_command_names_a_journal_that_is_not_the_default_and_a_fake_trees_roots() {
        let live = SysRoot::default();
        assert_eq!(
            Journal::default_for(&live).revert_command(&live, &["loop1"]),
            "blktune revert loop1"
        );
        assert_eq!(
            Journal::new("/tmp/my j's").revert_command(&live, &["loop1", "loop2"]),
            "BLKTUNE_JOURNAL_DIR='/tmp/my j'\\''s' blktune revert loop1 loop2"
        );
        let fake = SysRoot::new("/t/sys", "/t/proc");
        assert_eq!(
            Journal::default_for(&fake).revert_command(&fake, &["sda"]),
            "blktune --sysfs-root /t/sys --proc-root /t/proc revert sda"
        );
    }

    #[test]
    fn a_journal_directory_has_one_absolute_spelling() {
        let live = SysRoot::default();
        let j = Journal::choose(Some("rel/j".into()), &live);
        assert!(j.dir().is_absolute(), "{}", j.dir().display());
        assert_eq!(j.dir(), std::env::current_dir().unwrap().join("rel/j"));
        // A symlinked parent is resolved; the directory's own name is kept.
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("a")).unwrap();
        std::os::unix::fs::symlink(real.join("a"), real.join("b")).unwrap();
        std::os::unix::fs::symlink(real.join("a"), real.join("c")).unwrap();
        assert_eq!(
            Journal::choose(Some(real.join("b/j")), &live).dir(),
            real.join("a/j")
        );
        assert_eq!(
            Journal::choose(Some(real.join("c")), &live).dir(),
            real.join("c")
        );
    }
}
