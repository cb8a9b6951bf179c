//! Which devices a journal entry is of: the running kernel's, or a tree of
//! files given with `--sysfs-root` (a captured machine, a test). Every entry
//! says which; a journal bound to one tree refuses another tree's entries, so
//! a captured tree (which carries the real device's number, diskseq and boot
//! id) can never put its values on the real device, nor a fake tree's revert
//! consume a real device's original, whatever `BLKTUNE_JOURNAL_DIR` says.

use crate::os::SysRoot;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The devices an entry's originals were read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tree {
    /// The running kernel's devices: `/sys`, or any sysfs mount.
    Live,
    /// A tree of files: its sysfs directory, absolute (symlinks resolved).
    Files(PathBuf),
}

impl Tree {
    /// The tree `root` describes. A sysfs root that is a sysfs mount (`/sys`
    /// bind-mounted elsewhere, `--sysfs-root /sys/`) is the live tree: its
    /// writes reach the real devices, whatever its path.
    pub fn of(root: &SysRoot) -> Self {
        if root.is_live() || is_sysfs(root.sysfs()) {
            return Self::Live;
        }
        Self::Files(absolute(root.sysfs()))
    }

    /// Is it the running kernel's devices?
    pub fn is_live(&self) -> bool {
        matches!(self, Self::Live)
    }
}

impl std::fmt::Display for Tree {
    /// `this machine's devices`, or `the tree /abs/sys`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Live => f.write_str("this machine's devices"),
            Self::Files(p) => write!(f, "the tree {}", p.display()),
        }
    }
}

/// Is `path` the root of a sysfs mount?
fn is_sysfs(path: &Path) -> bool {
    nix::sys::statfs::statfs(path)
        .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::SYSFS_MAGIC)
}

/// `path` made absolute, symlinks resolved where it exists (so one tree
/// reached by two spellings is one tree); as given when neither works.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_sysfs_is_live_wherever_it_is_and_a_fake_tree_is_its_absolute_path() {
        assert_eq!(Tree::of(&SysRoot::default()), Tree::Live);
        // The real /sys spelled another way, or with a fake /proc: still the real devices.
        assert_eq!(Tree::of(&SysRoot::new("/sys/", "/proc")), Tree::Live);
        assert_eq!(Tree::of(&SysRoot::new("/sys", "/tmp/p")), Tree::Live);
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path().join("sys");
        std::fs::create_dir(&sys).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&sys, &link).unwrap();
        let want = Tree::Files(std::fs::canonicalize(&sys).unwrap());
        assert_eq!(Tree::of(&SysRoot::new(&sys, "/proc")), want);
        assert_eq!(Tree::of(&SysRoot::new(&link, "/proc")), want, "one tree");
        assert!(want.to_string().starts_with("the tree /"), "{want}");
        assert_eq!(Tree::Live.to_string(), "this machine's devices");
        assert_eq!(
            serde_json::to_string(&Tree::Live).unwrap(),
            r#""live""#,
            "readable in the entry"
        );
        assert_eq!(
            serde_json::to_string(&Tree::Files("/x/sys".into())).unwrap(),
            r#"{"files":"/x/sys"}"#
        );
    }
}
