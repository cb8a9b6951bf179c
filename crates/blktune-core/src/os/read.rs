//! Reads through the seam: whole, bounded, and never blocking on a FIFO a
//! hostile tree (`--sysfs-root`, `--proc-root`) put in a file's place.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

/// Read a whole sysfs attribute: open, one read, close. `fs::read_to_string`
/// would first stat the file for a size hint (sysfs answers 4096 whatever
/// the content) and read again to see the end: two wasted syscalls. A sysfs
/// attribute is at most a page and comes whole from the first read
/// (`Documentation/filesystems/sysfs.rst`), so a short read is the end.
pub(super) fn read_attr(path: &Path) -> io::Result<String> {
    read_file(open_nonblocking(path)?)
}

/// Open for reading without blocking: every file read through the seam may
/// belong to a hostile tree (`--sysfs-root`), where a FIFO in a file's place
/// would otherwise hang blktune; opened this way it reads as empty. On
/// sysfs, procfs and regular files `O_NONBLOCK` changes nothing.
pub(super) fn open_nonblocking(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Open a file the user named (a recording, a rules file to check) for
/// reading, never waiting in `open(2)` for a FIFO's writer: a named pipe
/// (FIFO) in the file system is refused with one line, as its writer may
/// never come; a pipe blktune was handed (`/dev/stdin`, `<(zcat f)`: pipefs,
/// or the FIFO that is standard input) is read as it comes, like any other
/// file (blocking again once open).
pub fn open_named_file(path: &Path) -> io::Result<fs::File> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let f = open_nonblocking(path)?;
    let meta = f.metadata()?;
    if meta.file_type().is_fifo() && !is_handed_pipe(&f, &meta) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a named pipe (FIFO): not read, its writer may never come \
             (to read one, give it as standard input: ... /dev/stdin < FIFO)",
        ));
    }
    let flags = fcntl(f.as_fd(), FcntlArg::F_GETFL).map_err(io::Error::from)?;
    let blocking = OFlag::from_bits_truncate(flags) & !OFlag::O_NONBLOCK;
    fcntl(f.as_fd(), FcntlArg::F_SETFL(blocking)).map_err(io::Error::from)?;
    Ok(f)
}

/// Is the FIFO `f` one blktune was handed (an anonymous pipe, or its own
/// standard input), rather than a named pipe it was pointed at?
fn is_handed_pipe(f: &fs::File, meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // The "pipefs" magic (linux/magic.h): pipes made by pipe(2), never a
    // name in a file system.
    const PIPEFS_MAGIC: nix::sys::statfs::FsType = nix::sys::statfs::FsType(0x5049_5045);
    let anonymous = nix::sys::statfs::fstatfs(f).is_ok_and(|s| s.filesystem_type() == PIPEFS_MAGIC);
    let stdin = nix::sys::stat::fstat(std::io::stdin())
        .is_ok_and(|st| (st.st_dev, st.st_ino) == (meta.dev(), meta.ino()));
    anonymous || stdin
}

/// [`read_attr`] of an open file.
pub(super) fn read_file(mut f: fs::File) -> io::Result<String> {
    read_page(|buf, _| f.read(buf))
}

/// Up to a page through `read(buf, offset)`, as [`read_attr`] reads it.
pub(super) fn read_page(
    mut read: impl FnMut(&mut [u8], usize) -> io::Result<usize>,
) -> io::Result<String> {
    let mut buf = [0u8; 4096];
    let mut len = 0;
    while len < buf.len() {
        match read(&mut buf[len..], len) {
            Ok(0) => break,
            Ok(n) => {
                len += n;
                // A regular file (a fake tree) of less than a page also ends here.
                if len < buf.len() {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(buf[..len].to_vec())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// The most read of a file of `/proc` ([`read_into`]): diskstats of ten
/// thousand devices with their partitions is a few MiB; a file that goes on
/// past this (a `--proc-root` tree's, linked to `/dev/zero`) is refused.
const MAX_PROC_FILE: usize = 64 << 20;

/// Append a file's whole content to `buf`, without a stat for a size hint,
/// in reads as large as the buffer's spare room (diskstats of a thousand
/// devices is about 100 KiB: a few reads, not twenty-five); at most
/// [`MAX_PROC_FILE`] bytes.
pub(super) fn read_into(path: &Path, buf: &mut String) -> io::Result<()> {
    let mut f = open_nonblocking(path)?;
    let mut bytes = std::mem::take(buf).into_bytes();
    let start = bytes.len();
    let res = loop {
        let len = bytes.len();
        if len - start > MAX_PROC_FILE {
            bytes.truncate(start);
            break Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("larger than {} MiB", MAX_PROC_FILE >> 20),
            ));
        }
        let room = (bytes.capacity() - len)
            .max(16 << 10)
            .min(MAX_PROC_FILE + 1 - (len - start));
        bytes.resize(len + room, 0);
        match f.read(&mut bytes[len..]) {
            Ok(0) => {
                bytes.truncate(len);
                break Ok(());
            }
            Ok(n) => bytes.truncate(len + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => bytes.truncate(len),
            Err(e) => {
                bytes.truncate(len);
                break Err(e);
            }
        }
    };
    match String::from_utf8(bytes) {
        Ok(s) => {
            *buf = s;
            res
        }
        Err(e) => {
            let mut v = e.into_bytes();
            v.clear();
            *buf = String::from_utf8(v).unwrap_or_default();
            Err(io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
        }
    }
}
