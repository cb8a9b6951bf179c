//! The kernel's BTF mapped read-only: blktune's only unsafe code.

use super::open_attr::on_sysfs;
use std::fs;
use std::io::{self, Read};
use std::path::Path;

/// The bytes of the kernel's BTF, which never change while the system runs:
/// mapped read-only where the kernel allows it (6.16 on), which costs no copy
/// and no fresh pages (about 5 ms of CPU for the 5.5 MB of
/// `/sys/kernel/btf/vmlinux` here); else read whole.
#[derive(Debug)]
pub(crate) enum ImmutableFile {
    Mapped(Mapping),
    Read(Vec<u8>),
}

impl ImmutableFile {
    /// `/sys/kernel/btf/vmlinux`.
    pub(crate) fn kernel_btf() -> io::Result<Self> {
        Self::open(Path::new("/sys/kernel/btf/vmlinux"))
    }

    /// Read `path`; map it instead only when it is a regular file on sysfs,
    /// whose files the kernel owns (no process can change or shorten them
    /// under the mapping). Private: the only sysfs file mapped is the
    /// kernel's BTF ([`Self::kernel_btf`]), whose content is fixed for as
    /// long as the system runs.
    fn open(path: &Path) -> io::Result<Self> {
        let file = fs::File::open(path)?;
        let meta = file.metadata()?;
        let on_sysfs = on_sysfs(&file);
        let len = usize::try_from(meta.len())
            .ok()
            .and_then(std::num::NonZeroUsize::new);
        if let (Some(len), true, true) = (len, meta.is_file(), on_sysfs)
            && let Ok(m) = Mapping::new(&file, len)
        {
            return Ok(Self::Mapped(m));
        }
        read_file_bytes(file).map(Self::Read)
    }
}

impl std::ops::Deref for ImmutableFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Self::Mapped(m) => m.bytes(),
            Self::Read(v) => v,
        }
    }
}

fn read_file_bytes(mut file: fs::File) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    file.read_to_end(&mut v)?;
    Ok(v)
}

/// A private read-only mapping of a whole file, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    at: std::ptr::NonNull<std::ffi::c_void>,
    len: std::num::NonZeroUsize,
}

// The only unsafe code in blktune: a mapping and the slice over it.
#[allow(unsafe_code)]
impl Mapping {
    fn new(file: &fs::File, len: std::num::NonZeroUsize) -> io::Result<Self> {
        use nix::sys::mman::{MapFlags, ProtFlags, mmap};
        // SAFETY: a new mapping at an address the kernel picks, of a file
        // opened for reading, read-only and private: it overlaps no memory
        // Rust knows of, and nothing writes through it.
        let at = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ,
                MapFlags::MAP_PRIVATE,
                file,
                0,
            )
        }?;
        Ok(Self { at, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes mapped readable at `at` for as long as `self`
        // lives (unmapped only in `drop`); their content does not change:
        // `ImmutableFile::open` maps only the kernel's BTF, a sysfs file no
        // process can write or shorten, and pages of a private read-only
        // mapping are never written by this process.
        unsafe { std::slice::from_raw_parts(self.at.as_ptr().cast::<u8>(), self.len.get()) }
    }
}

#[allow(unsafe_code)]
impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, unmapped once; no slice of it
        // outlives `self` (`bytes` borrows it).
        let _ = unsafe { nix::sys::mman::munmap(self.at, self.len.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file not on sysfs is read, never mapped (another process could
    /// change it under the mapping); so are procfs and empty files.
    #[test]
    fn only_sysfs_files_are_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let content: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        fs::write(&path, &content).unwrap();
        let f = ImmutableFile::open(&path).unwrap();
        assert!(matches!(f, ImmutableFile::Read(_)), "{f:?}");
        assert_eq!(&*f, &content[..]);
        fs::write(&path, b"").unwrap();
        let f = ImmutableFile::open(&path).unwrap();
        assert!(
            matches!(&f, ImmutableFile::Read(v) if v.is_empty()),
            "{f:?}"
        );
        let f = ImmutableFile::open(Path::new("/proc/self/stat")).unwrap();
        assert!(matches!(f, ImmutableFile::Read(_)));
        assert!(f.starts_with(std::process::id().to_string().as_bytes()));
        assert!(ImmutableFile::open(&dir.path().join("missing")).is_err());
    }

    /// The kernel's BTF reads as its bytes, mapped on kernels from 6.16 on
    /// (older ones refuse the mapping, and it is read).
    #[test]
    fn the_kernels_btf_is_mapped_from_6_16_on() {
        let Ok(read) = fs::read("/sys/kernel/btf/vmlinux") else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let f = ImmutableFile::kernel_btf().unwrap();
        assert!(*f == *read);
        let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut v = release
            .split(['.', '-'])
            .map(|p| p.parse::<u32>().unwrap_or(0));
        let version = (v.next().unwrap_or(0), v.next().unwrap_or(0));
        if version >= (6, 16) {
            assert!(
                matches!(f, ImmutableFile::Mapped(_)),
                "not mapped on {release}"
            );
        }
    }
}
