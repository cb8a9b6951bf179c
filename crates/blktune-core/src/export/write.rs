//! Atomic, no-clobber writing of the exported file.
//!
//! The text goes to a temp file in the target's directory (same filesystem, so
//! the final step is atomic), is fsynced, then moved into place: with `force`
//! by `rename(2)` (replaces the old file in one step), without it by `link(2)`,
//! which fails with EEXIST if the name appeared meanwhile, so an existing file
//! is never replaced by accident. The temp name starts with `.` and does not
//! end in `.rules`, so udevd ignores it while it exists. On any failure the
//! temp file is removed and the target is untouched; errors name the path the
//! caller gave, never the temp file.

use super::ExportError;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

fn io_err(path: &Path, source: io::Error) -> ExportError {
    ExportError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn exists(path: &Path) -> ExportError {
    ExportError::AlreadyExists {
        path: path.display().to_string(),
    }
}

/// Write `text` to `path` atomically; an existing `path` is replaced only with `force`.
pub fn write_rules(path: &Path, text: &str, force: bool) -> Result<(), ExportError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| ExportError::BadPath {
            path: path.display().to_string(),
            why: "not a file name".into(),
        })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    match fs::symlink_metadata(path) {
        Ok(_) if !force => return Err(exists(path)),
        Ok(m) if m.is_dir() => {
            return Err(ExportError::BadPath {
                path: path.display().to_string(),
                why: "is a directory".into(),
            });
        }
        _ => {}
    }
    if !dir.is_dir() {
        return Err(ExportError::BadPath {
            path: path.display().to_string(),
            why: format!(
                "the directory '{}' does not exist; create it first or choose another path",
                dir.display()
            ),
        });
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(format!(
        ".{name}.blktune-{}-{nanos}.tmp",
        std::process::id()
    ));
    let result = write_tmp(&tmp, text)
        .map_err(|e| io_err(path, e))
        .and_then(|()| {
            if force {
                fs::rename(&tmp, path).map_err(|e| io_err(path, e))
            } else {
                match fs::hard_link(&tmp, path) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(exists(path)),
                    Err(e) => Err(io_err(path, e)),
                }
            }
        });
    // After rename the temp name is gone; after link (or a failure) it must go.
    let _ = fs::remove_file(&tmp);
    result?;
    // Make the new directory entry durable too.
    if let Ok(d) = fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn write_tmp(tmp: &Path, text: &str) -> io::Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
