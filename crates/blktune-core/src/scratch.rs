//! Scratch loop devices that blktune creates itself: a sparse temp file and a
//! loop device over it (`losetup --direct-io=on`), both removed when the guard
//! drops. The only block devices blktune ever writes data to are these.
//!
//! A loop device keeps its queue settings (scheduler, nr_requests,
//! read_ahead_kb, `queue/iosched/*`) across detach and attach: its gendisk
//! stays registered while unbound (`drivers/block/loop.c`; seen on 6.18, where
//! `/sys/block/loopN` outlives `losetup -d`). So the guard records the
//! settings right after attaching and puts them back before detaching, and
//! the next user of that loop number finds it as this run found it.

use crate::device::QueueSettings;
use crate::error::TuneError;
use crate::os::SysRoot;
use crate::tuner::{Tuner, Wanted};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

mod sweep;

pub use sweep::{Creator, Leftover, Observed, leftovers, observe, sweep};

/// Prefix of scratch backing files, so leftovers are recognisable.
pub const FILE_PREFIX: &str = "blktune-scratch-";

/// Suffix of the file next to a scratch file that keeps its loop device's
/// queue settings as found at attach, so that a later run can put them back
/// if this one is killed before its guard runs.
pub const SETTINGS_SUFFIX: &str = ".queue.json";

/// The settings file of a scratch file (`<file>.queue.json`).
pub fn settings_file(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(SETTINGS_SUFFIX);
    PathBuf::from(s)
}

/// Keep `settings` next to `file`. A new file only (`O_EXCL`): never through
/// a link someone planted in a shared temp dir.
fn write_settings_file(file: &Path, settings: &Wanted) -> io::Result<()> {
    let json = serde_json::to_vec(settings).map_err(io::Error::other)?;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(settings_file(file))?;
    io::Write::write_all(&mut f, &json)
}

/// The settings kept next to `file`, if that is a regular file of this
/// user (in a shared temp dir, anyone else's file is not evidence).
pub fn read_settings_file(file: &Path) -> Option<Wanted> {
    use std::os::unix::fs::MetadataExt;
    let path = settings_file(file);
    let meta = fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.uid() != nix::unistd::geteuid().as_raw() || meta.len() > 64 << 10 {
        return None;
    }
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

/// A loop device over a temp file; its queue settings put back, then
/// detached and deleted on drop.
#[derive(Debug)]
pub struct ScratchLoop {
    name: String,
    file: PathBuf,
    restore: QueueRestore,
    detached: bool,
}

/// A scratch device's queue settings as found at attach, and the way to put
/// them back and detach; cloneable, so a watchdog thread can tear the device
/// down without the guard.
///
/// Both act only while the loop node is still the one we attached: another
/// process may detach it and attach its own file under the same name (loop
/// numbers are shared by the whole machine), and that device is not ours to
/// write to or detach.
#[derive(Debug, Clone)]
pub struct QueueRestore {
    root: SysRoot,
    name: String,
    /// Our backing file: the node is ours only while bound to it.
    file: PathBuf,
    /// `diskseq` at attach (kernel 5.15+; a new number on every attach and
    /// detach of a loop device).
    diskseq: Option<u64>,
    /// `None` when the settings could not be read (nothing to put back).
    original: Option<Wanted>,
}

impl QueueRestore {
    /// Record the current settings and identity of `name` (just attached
    /// over `file`) under `root`.
    pub fn record(root: &SysRoot, name: &str, file: &Path) -> Self {
        let dev = root.device(name);
        let original = dev
            .as_ref()
            .map(|d| Wanted::snapshot_of(&QueueSettings::read(root, d)));
        Self {
            root: root.clone(),
            name: name.to_owned(),
            file: file.to_owned(),
            diskseq: dev.as_ref().and_then(|d| root.read_diskseq(d)),
            original,
        }
    }

    /// Is `name` still the device we attached: bound to our file, under the
    /// diskseq it had at attach (when the kernel has diskseq)?
    pub fn still_ours(&self) -> bool {
        let Some(dev) = self.root.device(&self.name) else {
            return false;
        };
        // Documentation/ABI/testing/sysfs-block-loop: present while bound.
        let bound_to_ours = self
            .root
            .read_dev_attr(&dev, "loop/backing_file")
            .is_ok_and(|b| sweep::backing_path(b.trim_end_matches('\n')) == self.file);
        bound_to_ours && self.diskseq == self.root.read_diskseq(&dev)
    }

    /// Put the settings back and detach, if the node is still ours; an error
    /// says what was left alone or failed. Does not wait for the kernel to
    /// finish a detach of a device that is still open.
    pub fn teardown(&self) -> io::Result<()> {
        if !self.still_ours() {
            return Err(io::Error::other(format!(
                "{} is no longer our scratch device (detached, or another file attached \
                 under that name): left alone",
                self.name
            )));
        }
        // Settings first: after the detach the loop number is free for
        // someone else, whose settings must not be touched.
        let mut result = self.run().map_err(|e| {
            io::Error::other(format!(
                "cannot put back the queue settings of {}: {e}",
                self.name
            ))
        });
        // A busy device (a reader still closing) can refuse briefly: retry,
        // while it is still ours.
        for attempt in 0..20 {
            if attempt > 0 && !self.still_ours() {
                break;
            }
            match Command::new("losetup")
                .arg("-d")
                .arg(Path::new("/dev").join(&self.name))
                .output()
            {
                Ok(o) if o.status.success() => break,
                Ok(o) if attempt == 19 => {
                    result = result.and(Err(io::Error::other(format!(
                        "losetup -d {} failed: {}",
                        self.name,
                        String::from_utf8_lossy(&o.stderr).trim()
                    ))));
                }
                Err(e) => {
                    result = result.and(Err(e));
                    break;
                }
                _ => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
        result
    }

    /// The settings recorded at attach.
    pub fn original(&self) -> Option<&Wanted> {
        self.original.as_ref()
    }

    /// Put the recorded settings back through the [`Tuner`] (scheduler,
    /// tunables, nr_requests, read_ahead_kb; unchanged values are not written).
    /// No journal: the device is ours.
    pub fn run(&self) -> Result<(), TuneError> {
        match &self.original {
            Some(o) => Tuner::new(self.root.clone(), None)
                .expecting(&self.name, self.diskseq)
                .restore(&self.name, o)
                .map(drop),
            None => Ok(()),
        }
    }
}

impl ScratchLoop {
    /// Create a `size`-byte sparse file in `dir` and attach it with direct I/O.
    /// Needs root (losetup).
    pub fn create(dir: &Path, size: u64) -> io::Result<Self> {
        // The real kernel's sysfs and procfs: losetup attaches a real
        // device, whatever roots the rest of the run reads.
        let root = SysRoot::default();
        // Named after this process (pid, start time, pid namespace), so a
        // later run can tell a killed run's leftovers from a live one's; a
        // name without them is never swept.
        let file = dir.join(match Creator::current(&root) {
            Some(c) => c.file_name(unique()),
            None => format!("{FILE_PREFIX}{}-{}.img", std::process::id(), unique()),
        });
        // A new file only: in a shared temp dir an existing name (or a
        // planted symlink) must not be truncated and attached.
        let f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file)?;
        f.set_len(size)?;
        drop(f);
        let out = Command::new("losetup")
            .args(["--find", "--show", "--direct-io=on"])
            .arg(&file)
            .output();
        let out = match out {
            Ok(o) if o.status.success() => o,
            Ok(o) => {
                let _ = fs::remove_file(&file);
                return Err(io::Error::other(format!(
                    "losetup failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                )));
            }
            Err(e) => {
                let _ = fs::remove_file(&file);
                return Err(io::Error::new(e.kind(), format!("cannot run losetup: {e}")));
            }
        };
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let name = dev.trim_start_matches("/dev/").to_owned();
        let restore = QueueRestore::record(&root, &name, &file);
        if let Some(o) = restore.original() {
            // Best effort: without it a killed run's settings stay behind.
            let _ = write_settings_file(&file, o);
        }
        Ok(Self {
            name,
            file,
            restore,
            detached: false,
        })
    }

    /// The queue settings found at attach, and the way to put them back (for
    /// a watchdog that must tear the device down without the guard).
    pub fn queue_restore(&self) -> QueueRestore {
        self.restore.clone()
    }

    /// The kernel name (`loop3`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `/dev/loop3`.
    pub fn dev_path(&self) -> PathBuf {
        PathBuf::from("/dev").join(&self.name)
    }

    /// The backing file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Put the queue settings back, detach and delete now, reporting errors
    /// (drop does the same silently). A failed restore still detaches and
    /// deletes, and is reported.
    pub fn remove(mut self) -> io::Result<()> {
        self.cleanup()
    }

    fn cleanup(&mut self) -> io::Result<()> {
        if self.detached {
            return Ok(());
        }
        self.detached = true;
        let result = self.restore.teardown();
        // On a device that is still open (an fio just killed, whose direct
        // I/O is completing), LOOP_CLR_FD only marks it autoclear and returns
        // at once; wait a little for the real detach so that callers (and
        // `losetup -a` checks) see it gone.
        for _ in 0..50 {
            if !self.restore.still_ours() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = fs::remove_file(&self.file);
        let _ = fs::remove_file(settings_file(&self.file));
        result
    }
}

impl Drop for ScratchLoop {
    fn drop(&mut self) {
        let _ = self.cleanup();
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    t ^ (N.fetch_add(1, Ordering::Relaxed) << 32)
}
