//! The journal as the CLI sees it, on fake trees: a journal belongs to the
//! tree it describes, nothing in it is trusted blindly, and a device another
//! change holds is refused with the holder's pid. (Real loop devices, the
//! race of two `set`s and a closed stdout: `set_real.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::journal::{Journal, TREE_DIR};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// A fake tree with one disk. Its name is unique to this run, so even a
/// blktune that wrongly used the real journal could not touch a real entry.
struct Tree {
    dir: tempfile::TempDir,
    tree: FakeTree,
    dev: String,
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(&dir.path().join("root")).unwrap();
        let dev = format!("fkj{}", std::process::id());
        tree.add(&FakeDisk::new(&dev).dev(8, 0)).unwrap();
        Self { dir, tree, dev }
    }

    fn sys(&self) -> PathBuf {
        self.dir.path().join("root/sys")
    }

    /// `blktune ARGS --sysfs-root .. --proc-root ..`, with `journal` as
    /// `BLKTUNE_JOURNAL_DIR` (`None`: the variable unset).
    fn run(&self, args: &[&str], journal: Option<&Path>) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
        c.args(args)
            .arg("--sysfs-root")
            .arg(self.sys())
            .arg("--proc-root")
            .arg(self.dir.path().join("root/proc"))
            .env_remove("BLKTUNE_JOURNAL_DIR");
        if let Some(j) = journal {
            c.env("BLKTUNE_JOURNAL_DIR", j);
        }
        c.output().unwrap()
    }

    fn read_ahead(&self) -> String {
        std::fs::read_to_string(self.tree.dev_dir(&self.dev).join("queue/read_ahead_kb"))
            .unwrap()
            .trim()
            .to_string()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Removes a file on drop (what a wrong blktune would leave in the real journal).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_fake_tree_journals_inside_itself_never_in_run_blktune() {
    let t = Tree::new();
    let real = Path::new(blktune_core::journal::DEFAULT_DIR).join(format!("{}.json", t.dev));
    let _cleanup = RemoveOnDrop(real.clone());
    let o = t.run(&["set", &t.dev, "--read-ahead-kb", "256"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!real.exists(), "a fake tree wrote the real journal");
    let own = Journal::new(t.sys().join(TREE_DIR));
    let e = own.load(&t.dev).unwrap().expect("journalled in the tree");
    assert_eq!(e.original.read_ahead_kb, Some(128));
    // Its revert reads the same journal (and export would too).
    let o = t.run(&["revert", "--all"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(t.read_ahead(), "128");
    assert!(own.list().unwrap().is_empty());
}

#[test]
fn a_journal_directory_others_can_write_is_refused_and_nothing_changes() {
    let t = Tree::new();
    let j = t.dir.path().join("j");
    std::fs::create_dir(&j).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&j, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = t.run(&["set", &t.dev, "--read-ahead-kb", "256"], Some(&j));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&j.display().to_string()) && err.contains("writable by group or others"),
        "{err}"
    );
    assert_eq!(t.read_ahead(), "128", "nothing changed");
    assert_eq!(std::fs::read_dir(&j).unwrap().count(), 0, "nothing written");
}

#[test]
fn a_forged_entry_is_refused_not_applied() {
    let t = Tree::new();
    let j = t.dir.path().join("j");
    std::fs::create_dir(&j).unwrap();
    let entry = j.join(format!("{}.json", t.dev));
    let forged = |version: u32, device: &str| {
        serde_json::json!({
            "version": version, "device": device, "major": 8, "minor": 0,
            "saved_at": 0.0, "original": {"read_ahead_kb": 4}
        })
        .to_string()
    };
    for (text, why) in [
        (forged(99, &t.dev), "version 99".to_string()),
        (forged(1, "sdz"), "'sdz'".to_string()),
    ] {
        std::fs::write(&entry, text).unwrap();
        for args in [
            vec!["revert", t.dev.as_str()],
            vec!["set", t.dev.as_str(), "--read-ahead-kb", "256"],
        ] {
            let o = t.run(&args, Some(&j));
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(
                err.contains(&entry.display().to_string()) && err.contains(&why),
                "{args:?}: {err}"
            );
            assert_eq!(t.read_ahead(), "128", "{args:?} changed the device");
        }
        // export (of the journal's devices) refuses it too.
        let o = t.run(&["export"], Some(&j));
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(&why), "{}", stderr(&o));
        // revert --all names it and leaves it in place.
        let o = t.run(&["revert", "--all"], Some(&j));
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(&why), "{}", stderr(&o));
        assert!(entry.exists());
        assert_eq!(t.read_ahead(), "128");
    }
    // An entry that is a symlink to a file with forged originals.
    let target = t.dir.path().join("elsewhere.json");
    std::fs::write(&target, forged(1, &t.dev)).unwrap();
    std::fs::remove_file(&entry).unwrap();
    std::os::unix::fs::symlink(&target, &entry).unwrap();
    let o = t.run(&["revert", &t.dev], Some(&j));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert_eq!(t.read_ahead(), "128");
}

#[test]
fn a_dangling_symlink_for_the_journal_is_an_error_not_an_empty_journal() {
    let t = Tree::new();
    let j = t.dir.path().join("j");
    std::os::unix::fs::symlink(t.dir.path().join("nowhere"), &j).unwrap();
    for args in [
        vec!["revert", "--all"],
        vec!["set", t.dev.as_str(), "--read-ahead-kb", "256"],
        vec!["export"],
    ] {
        let o = t.run(&args, Some(&j));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(&j.display().to_string()) && err.contains("symbolic link"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(t.read_ahead(), "128");
    assert!(!t.dir.path().join("nowhere").exists());
}

#[test]
fn a_device_another_change_holds_is_refused_with_the_holders_pid() {
    let t = Tree::new();
    let j = t.dir.path().join("j");
    let held = Journal::new(&j)
        .lock(&t.dev, Duration::ZERO)
        .expect("take the lock");
    let o = t.run(&["set", &t.dev, "--read-ahead-kb", "256"], Some(&j));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "'{}' is being changed by another blktune (pid {})",
            t.dev,
            std::process::id()
        )),
        "{err}"
    );
    assert!(err.contains("nothing was changed"), "{err}");
    assert_eq!(t.read_ahead(), "128");
    drop(held);
    let o = t.run(&["set", &t.dev, "--read-ahead-kb", "256"], Some(&j));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = t.run(&["revert", &t.dev], Some(&j));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_dir(&j).unwrap().count(),
        0,
        "no entry, temp or lock file left"
    );
}
