//! Writing the exported file, through [`crate::atomic_file`]: atomic (temp
//! file, fsync, then into place), never through a symlink, and an existing
//! name is replaced only with `force` and only when it is a regular file of
//! this user or root (a device node, FIFO, socket or symlink is refused).
//! Errors name the path the caller gave, never the temp file.

use super::ExportError;
use crate::atomic_file::{self, WriteError};
use std::path::Path;

impl From<WriteError> for ExportError {
    fn from(write_error: WriteError) -> Self {
        match write_error {
            WriteError::Exists(p) => ExportError::AlreadyExists {
                path: p.display().to_string(),
            },
            WriteError::NotReplaceable { path, why } => ExportError::BadPath {
                path: path.display().to_string(),
                why: format!("{why}; {}", atomic_file::REPLACE_RULE),
            },
            WriteError::BadPath { path, why } => ExportError::BadPath {
                path: path.display().to_string(),
                why,
            },
            WriteError::Io { path, source } => ExportError::Io {
                path: path.display().to_string(),
                source,
            },
        }
    }
}

/// Write `text` to `path` atomically; an existing regular file is replaced only with `force`.
pub fn write_rules(path: &Path, text: &str, force: bool) -> Result<(), ExportError> {
    Ok(atomic_file::write(path, text.as_bytes(), 0o644, force)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::FileTypeExt;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn writes_a_new_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("61-blktune.rules");
        write_rules(&p, "hello\n", false).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "hello\n");
        assert_eq!(entries(d.path()), ["61-blktune.rules"]);
    }

    #[test]
    fn refuses_to_clobber_and_leaves_the_old_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("61-blktune.rules");
        fs::write(&p, "old\n").unwrap();
        fs::write(d.path().join("60-other.rules"), "other\n").unwrap();
        let e = write_rules(&p, "new\n", false).unwrap_err();
        assert!(matches!(e, ExportError::AlreadyExists { .. }), "{e}");
        assert_eq!(fs::read_to_string(&p).unwrap(), "old\n");
        assert_eq!(entries(d.path()), ["60-other.rules", "61-blktune.rules"]);
        write_rules(&p, "new\n", true).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new\n");
        assert_eq!(
            fs::read_to_string(d.path().join("60-other.rules")).unwrap(),
            "other\n"
        );
        assert_eq!(entries(d.path()), ["60-other.rules", "61-blktune.rules"]);
    }

    #[test]
    fn failure_leaves_no_temp_file() {
        let d = tempfile::tempdir().unwrap();
        // A directory in the way: rename onto it fails even with force.
        let p = d.path().join("x.rules");
        fs::create_dir(&p).unwrap();
        assert!(write_rules(&p, "x", true).is_err());
        assert_eq!(entries(d.path()), ["x.rules"]);
        // A missing directory: nothing is created, and the error names the path given.
        let q = d.path().join("missing/61.rules");
        let e = write_rules(&q, "x", false).unwrap_err();
        assert!(matches!(e, ExportError::BadPath { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.starts_with(&q.display().to_string()), "{msg}");
        assert!(!msg.contains(".blktune-"), "{msg}");
        assert_eq!(entries(d.path()), ["x.rules"]);
    }

    #[test]
    fn force_refuses_a_fifo_with_a_usage_error() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = write_rules(&p, "x\n", true).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains("is a FIFO"), "{e}");
        assert!(fs::symlink_metadata(&p).unwrap().file_type().is_fifo());
        assert_eq!(entries(d.path()), ["out"]);
    }
}
