//! The per-device lock: an exclusive `flock(2)` on `.<device>.lock`, held
//! from the journal read to the last read-back: in the register of live
//! devices for a real device (one lock whatever the journal directory),
//! else in the journal directory ([`Journal::lock_dir`]).

use super::Journal;
use super::dir::{Dir, os_err, refused, untrusted};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, Flock, FlockArg, OFlag, openat};
use nix::sys::stat::{Mode, SFlag, fstat, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

impl Journal {
    /// Take the device's lock (see the module doc), waiting up to `wait`
    /// for another holder. Leftover temp files of a killed run of this
    /// device are removed once it is held (no live writer can own them).
    pub fn lock(&self, device: &str, wait: Duration) -> Result<DeviceLock, LockError> {
        Self::file_name(device).map_err(LockError::Io)?;
        let dir = Dir::open(self.lock_dir(), true).map_err(LockError::Io)?;
        let Some(dir) = dir else {
            return Err(LockError::Io(refused(self.lock_dir(), "cannot be created")));
        };
        let name = format!(".{device}.lock");
        let path = dir.at(&name);
        let deadline = Instant::now() + wait;
        let flags = OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        loop {
            let fd = openat(
                &dir.fd,
                name.as_str(),
                flags,
                Mode::from_bits_truncate(0o600),
            )
            .map_err(|e| match e {
                Errno::ELOOP => LockError::Io(refused(&path, "is a symbolic link")),
                e => LockError::Io(os_err(&path, e)),
            })?;
            let st = fstat(&fd).map_err(|e| LockError::Io(os_err(&path, e)))?;
            if let Some(why) = untrusted(&st, SFlag::S_IFREG, "regular file") {
                return Err(LockError::Io(refused(&path, why)));
            }
            match Flock::lock(File::from(fd), FlockArg::LockExclusiveNonblock) {
                Ok(mut held) => {
                    // The holder before us may have unlinked the file before
                    // we locked it: then the lock is on a dead inode; retry.
                    let same = fstatat(&dir.fd, name.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                        .is_ok_and(|now| (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino));
                    if !same {
                        continue;
                    }
                    let pid = format!("{}\n", std::process::id());
                    let _ = held
                        .set_len(0)
                        .and_then(|()| held.rewind())
                        .and_then(|()| held.write_all(pid.as_bytes()));
                    let lock = DeviceLock {
                        file: Some(held),
                        dir,
                        name,
                        device: device.to_string(),
                    };
                    clean_temps(&lock.dir, device);
                    if self.lock_dir() != self.dir
                        && let Ok(Some(journal)) = self.open_dir(false)
                    {
                        clean_temps(&journal, device);
                    }
                    return Ok(lock);
                }
                Err((_, Errno::EWOULDBLOCK)) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err((mut f, Errno::EWOULDBLOCK)) => {
                    let mut text = String::new();
                    let _ = Read::by_ref(&mut f).take(32).read_to_string(&mut text);
                    return Err(LockError::Busy {
                        device: device.to_string(),
                        pid: text.trim().parse().ok(),
                        path,
                    });
                }
                Err((_, e)) => return Err(LockError::Io(os_err(&path, e))),
            }
        }
    }
}

/// Why a device's lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process (or another task of this one) holds it.
    #[error("'{device}' is being changed by {}; nothing was changed: try again when it has finished (lock: {})", holder(*.pid), .path.display())]
    Busy {
        device: String,
        pid: Option<u32>,
        path: PathBuf,
    },
    /// The journal directory or the lock file cannot be used.
    #[error("{0}")]
    Io(io::Error),
}

fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(p) if p == std::process::id() => {
            format!("this blktune (pid {p}: its shoot-out or another change)")
        }
        Some(p) => format!("another blktune (pid {p})"),
        None => "another blktune".to_string(),
    }
}

/// A device's lock, held until dropped. The lock file is removed while
/// still held, so the directory keeps no lock files; a waiter that had
/// opened it notices (the inode is gone) and takes a fresh one.
#[derive(Debug)]
pub struct DeviceLock {
    file: Option<Flock<File>>,
    dir: Dir,
    name: String,
    device: String,
}

impl DeviceLock {
    /// The device it locks.
    pub fn device(&self) -> &str {
        &self.device
    }
}

/// Remove `.<device>.json.tmp*` in `dir`, left by a run that was killed
/// between writing its temp file and publishing it.
fn clean_temps(dir: &Dir, device: &str) {
    let prefix = format!(".{device}.json.tmp");
    if let Ok(names) = dir.names() {
        for n in names.iter().filter(|n| n.starts_with(&prefix)) {
            let _ = dir.unlink(n);
        }
    }
}

impl Drop for DeviceLock {
    fn drop(&mut self) {
        let _ = unlinkat(&self.dir.fd, self.name.as_str(), UnlinkatFlags::NoRemoveDir);
        // Closing the file releases the lock.
        drop(self.file.take());
    }
}

#[cfg(test)]
mod tests {
    use super::super::dir::temp_name;
    use super::super::test_support::entry;
    use super::*;
    use std::fs;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_killed_runs_temp_file_never_blocks_a_save_and_is_cleaned_under_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        // What a killed run with our pid (pid reuse) would have left, in the
        // old naming and in the new one.
        let old = dir
            .path()
            .join(format!(".loop1.json.tmp{}", std::process::id()));
        fs::write(&old, "{").unwrap();
        let new = dir.path().join(temp_name("loop1"));
        fs::write(&new, "{").unwrap();
        assert!(j.save_if_absent(&entry("loop1", 1)).unwrap());
        assert!(j.load("loop1").unwrap().is_some());
        let lock = j.lock("loop1", Duration::ZERO).unwrap();
        assert!(!old.exists() && !new.exists(), "temps cleaned");
        drop(lock);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["loop1.json"], "no temp or lock file left");
    }

    #[test]
    fn a_held_lock_makes_a_second_taker_wait_then_name_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("j"));
        let held = j.lock("sda", Duration::ZERO).unwrap();
        assert_eq!(held.device(), "sda");
        let t = Instant::now();
        let e = j.lock("sda", Duration::from_millis(200)).unwrap_err();
        assert!(t.elapsed() >= Duration::from_millis(200), "it waited");
        let msg = e.to_string();
        assert!(
            matches!(&e, LockError::Busy { pid: Some(p), .. } if *p == std::process::id()),
            "{msg}"
        );
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        assert!(msg.contains("nothing was changed"), "{msg}");
        // Another device is not blocked.
        drop(j.lock("sdb", Duration::ZERO).unwrap());
        // A waiter gets the lock once the holder lets go.
        let j2 = j.clone();
        let waiter = std::thread::spawn(move || j2.lock("sda", Duration::from_secs(10)).map(drop));
        std::thread::sleep(Duration::from_millis(100));
        drop(held);
        waiter.join().unwrap().unwrap();
        assert_eq!(
            fs::read_dir(j.dir()).unwrap().count(),
            0,
            "no lock file left"
        );
    }

    #[test]
    fn many_takers_never_hold_one_lock_together() {
        use std::sync::atomic::AtomicUsize;
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        let inside = std::sync::Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (j, inside) = (j.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let l = j.lock("sda", Duration::from_secs(30)).unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(l);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
