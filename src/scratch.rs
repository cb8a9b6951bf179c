//! Scratch loop devices that blktune creates itself: a sparse temp file and a
//! loop device over it (`losetup --direct-io=on`), both removed when the guard
//! drops. The only block devices blktune ever writes data to are these.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Prefix of scratch backing files, so leftovers are recognisable.
pub const FILE_PREFIX: &str = "blktune-scratch-";

/// A loop device over a temp file; detached and deleted on drop.
#[derive(Debug)]
pub struct ScratchLoop {
    name: String,
    file: PathBuf,
    detached: bool,
}

impl ScratchLoop {
    /// Create a `size`-byte sparse file in `dir` and attach it with direct I/O.
    /// Needs root (losetup).
    pub fn create(dir: &Path, size: u64) -> io::Result<Self> {
        let file = dir.join(format!(
            "{FILE_PREFIX}{}-{}.img",
            std::process::id(),
            unique()
        ));
        let f = fs::File::create(&file)?;
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
        Ok(Self {
            name,
            file,
            detached: false,
        })
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

    /// Detach and delete now, reporting errors (drop does the same silently).
    pub fn remove(mut self) -> io::Result<()> {
        self.cleanup()
    }

    fn cleanup(&mut self) -> io::Result<()> {
        if self.detached {
            return Ok(());
        }
        self.detached = true;
        let mut result = Ok(());
        // A busy device (a reader still closing) can refuse briefly: retry.
        for attempt in 0..20 {
            match Command::new("losetup")
                .arg("-d")
                .arg(self.dev_path())
                .output()
            {
                Ok(o) if o.status.success() => break,
                Ok(o) if attempt == 19 => {
                    result = Err(io::Error::other(format!(
                        "losetup -d {} failed: {}",
                        self.name,
                        String::from_utf8_lossy(&o.stderr).trim()
                    )));
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
                _ => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
        // On a device that is still open (an fio just killed, whose direct
        // I/O is completing), LOOP_CLR_FD only marks it autoclear and returns
        // at once; wait a little for the real detach so that callers (and
        // `losetup -a` checks) see it gone.
        let backing = PathBuf::from("/sys/block")
            .join(&self.name)
            .join("loop/backing_file");
        for _ in 0..50 {
            if !backing.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = fs::remove_file(&self.file);
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
