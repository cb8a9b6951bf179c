//! Attribute files kept open to be read again with one `pread`.

use super::read::{read_file, read_page};
use std::fs;
use std::io;

/// An attribute file kept open: read again with one `pread` from its start
/// instead of a path walk, an open and a close (in a loop on one device
/// here, about 1 µs against 5 to 8; `watch` at 1000 devices took a tenth
/// less CPU). Only sysfs files are kept: sysfs makes the value anew for each
/// read from offset 0 and never moves a file, so a kept file shows every
/// change made since, and a device removed makes its reads fail (`ENODEV`:
/// the holder opens the file again). A tree given with `--sysfs-root` is
/// read by path: its files can be replaced under their names (renamed over,
/// a directory or a symlink swapped) where an open file would not see it.
/// A kept file costs a descriptor, and the kernel a page, while it lives.
#[derive(Debug)]
pub struct OpenAttr {
    file: fs::File,
}

/// What opening a file to keep it open gave.
#[derive(Debug)]
pub enum Opened {
    Kept(OpenAttr),
    /// Not a file to keep open (not on sysfs, or not a regular file): its
    /// content, trimmed, from the one open.
    ReadOnce(String),
}

/// Is this file on sysfs?
pub(super) fn on_sysfs(file: &fs::File) -> bool {
    nix::sys::statfs::fstatfs(file)
        .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::SYSFS_MAGIC)
}

impl OpenAttr {
    pub(super) fn open(file: fs::File) -> io::Result<Opened> {
        // Never keep a FIFO or a device node open (a tape rewinds on close,
        // a kept CD-ROM does not eject). sysfs has neither (only
        // directories, attributes and links), so a file on it is kept
        // without a second look: one call per file, a thousand at start on
        // a big machine. The crate's own unit tests keep regular files of
        // temporary trees, to test the holders.
        let keep = on_sysfs(&file) || (cfg!(test) && file.metadata()?.is_file());
        if keep {
            return Ok(Opened::Kept(Self { file }));
        }
        Ok(Opened::ReadOnce(read_file(file)?.trim().to_owned()))
    }

    /// A kept file whose every read fails (tests of its holder): open for
    /// writing only.
    #[cfg(test)]
    pub(crate) fn failing() -> Self {
        let f = tempfile::NamedTempFile::new().unwrap();
        let file = fs::OpenOptions::new().write(true).open(f.path()).unwrap();
        Self { file }
    }

    /// The file's content now, trimmed.
    pub fn read(&self) -> io::Result<String> {
        use std::os::unix::fs::FileExt;
        Ok(read_page(|buf, at| self.file.read_at(buf, at as u64))?
            .trim()
            .to_owned())
    }
}

/// Descriptors this process may spend on [`OpenAttr`]s: half of what its
/// soft `RLIMIT_NOFILE` leaves after 256 for everything else, and at most
/// 4096 (each costs the kernel a page on sysfs).
pub fn spare_descriptors() -> usize {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_or(1024, |(soft, _)| soft);
    usize::try_from(soft.saturating_sub(256) / 2)
        .unwrap_or(usize::MAX)
        .min(4096)
}
