//! The cgroup v2 tree under the sysfs root, read-only: where it is mounted
//! (`fs/cgroup` on a host with only v2, `fs/cgroup/unified` on a hybrid
//! one, whose v1 controllers have `fs/cgroup` to themselves), the id of
//! each cgroup (its directory's inode number: the kernel's `cgroup_id()`,
//! what BPF's `bpf_get_current_cgroup_id()` returns), and a cgroup's
//! `io.pressure`.
//!
//! The tree may be hostile like any other (`--sysfs-root`): the walk is
//! bounded in directories and depth, follows no symlink, and names that are
//! not plain single path components are skipped.

use super::SysRoot;
use super::read::read_attr;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most cgroups one walk looks at (a Kubernetes node has a few thousand).
pub const MAX_CGROUPS: usize = 20_000;
/// Deepest cgroup looked at (the kernel's default `cgroup.max.depth` is unlimited;
/// systemd and Kubernetes nest 4 to 6 deep).
pub const MAX_DEPTH: usize = 16;

/// The cgroup v2 tree of a sysfs root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupTree {
    dir: PathBuf,
}

impl CgroupTree {
    /// The tree, where it is mounted: `fs/cgroup` when that is the v2 root
    /// itself (it has `cgroup.controllers`), else `fs/cgroup/unified` (a
    /// hybrid hierarchy); `None` without either.
    pub fn find(root: &SysRoot) -> Option<Self> {
        ["fs/cgroup", "fs/cgroup/unified"]
            .into_iter()
            .map(|rel| root.sysfs().join(rel))
            .find(|d| d.join("cgroup.controllers").is_file())
            .map(|dir| Self { dir })
    }

    /// Where it is.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every cgroup's id and path (`/` the root, `/system.slice/x.service`),
    /// at most [`MAX_CGROUPS`], none deeper than [`MAX_DEPTH`].
    pub fn walk(&self) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        let mut todo = vec![(self.dir.clone(), String::new(), 0usize)];
        while let Some((dir, path, depth)) = todo.pop() {
            if out.len() >= MAX_CGROUPS {
                break;
            }
            let Ok(meta) = fs::symlink_metadata(&dir) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            out.push((
                meta.ino(),
                if path.is_empty() {
                    "/".into()
                } else {
                    path.clone()
                },
            ));
            if depth >= MAX_DEPTH {
                continue;
            }
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten().take(MAX_CGROUPS) {
                let Ok(name) = e.file_name().into_string() else {
                    continue;
                };
                // Only directories are cgroups; a file type that needs a stat
                // is checked when popped.
                if e.file_type().is_ok_and(|t| t.is_dir()) && is_plain_name(&name) {
                    todo.push((e.path(), format!("{path}/{name}"), depth + 1));
                }
            }
        }
        out
    }

    /// The `io.pressure` file of the cgroup at `path` (as [`CgroupTree::walk`]
    /// gives it); the root has none on most kernels (use `/proc/pressure/io`).
    pub fn read_io_pressure(&self, path: &str) -> io::Result<String> {
        read_attr(&self.file_of(path, "io.pressure")?)
    }

    fn file_of(&self, path: &str, file: &str) -> io::Result<PathBuf> {
        let mut p = self.dir.clone();
        for part in path.split('/').filter(|s| !s.is_empty()) {
            if !is_plain_name(part) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a cgroup path",
                ));
            }
            p.push(part);
        }
        p.push(file);
        Ok(p)
    }
}

/// A single path component that is not `.` or `..`, without control
/// characters.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 255
        && !name.contains('/')
        && !name.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hybrid_tree_is_found_under_unified_and_walked_with_inode_ids() {
        let d = tempfile::tempdir().unwrap();
        let sys = d.path().join("sys");
        let u = sys.join("fs/cgroup/unified");
        fs::create_dir_all(u.join("system.slice/postgresql.service")).unwrap();
        fs::create_dir_all(u.join("user.slice")).unwrap();
        fs::write(u.join("cgroup.controllers"), "").unwrap();
        fs::write(
            u.join("system.slice/postgresql.service/io.pressure"),
            "some avg10=1.00 avg60=0.50 avg300=0.10 total=12\n",
        )
        .unwrap();
        // A v1 controller beside it is no v2 root.
        fs::create_dir_all(sys.join("fs/cgroup/blkio")).unwrap();
        let root = SysRoot::new(&sys, d.path().join("proc"));
        let t = CgroupTree::find(&root).unwrap();
        assert_eq!(t.dir(), u);
        let mut got = t.walk();
        got.sort_by(|a, b| a.1.cmp(&b.1));
        let paths: Vec<&str> = got.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/",
                "/system.slice",
                "/system.slice/postgresql.service",
                "/user.slice"
            ]
        );
        let ino = fs::metadata(u.join("system.slice/postgresql.service"))
            .unwrap()
            .ino();
        assert_eq!(got[2].0, ino);
        assert!(
            t.read_io_pressure("/system.slice/postgresql.service")
                .unwrap()
                .starts_with("some")
        );
        assert!(t.read_io_pressure("/../../etc").is_err());
    }

    #[test]
    fn a_pure_v2_tree_is_its_own_root_and_none_without_one() {
        let d = tempfile::tempdir().unwrap();
        let sys = d.path().join("sys");
        let root = SysRoot::new(&sys, d.path().join("proc"));
        assert_eq!(CgroupTree::find(&root), None);
        fs::create_dir_all(sys.join("fs/cgroup")).unwrap();
        fs::write(sys.join("fs/cgroup/cgroup.controllers"), "io memory\n").unwrap();
        assert_eq!(
            CgroupTree::find(&root).unwrap().dir(),
            sys.join("fs/cgroup")
        );
    }

    #[test]
    fn the_walk_follows_no_symlink_and_stops_at_its_depth() {
        let d = tempfile::tempdir().unwrap();
        let sys = d.path().join("sys");
        let top = sys.join("fs/cgroup");
        let mut deep = top.clone();
        for i in 0..MAX_DEPTH + 4 {
            deep.push(format!("d{i}"));
        }
        fs::create_dir_all(&deep).unwrap();
        fs::write(top.join("cgroup.controllers"), "").unwrap();
        std::os::unix::fs::symlink("/", top.join("escape")).unwrap();
        let root = SysRoot::new(&sys, d.path().join("proc"));
        let got = CgroupTree::find(&root).unwrap().walk();
        assert_eq!(got.len(), MAX_DEPTH + 1);
        assert!(got.iter().all(|(_, p)| !p.contains("escape")));
    }
}
