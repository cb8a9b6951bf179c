//! Every journal entry is bound to its tree (issue 37): two trees sharing a
//! journal directory (`BLKTUNE_JOURNAL_DIR`) and a device name never read or
//! write each other's entries, the journal directory is made absolute, every
//! undo hint names a journal directory that is not the default, and
//! `blktune status` says what was changed, from which originals, since
//! when, by which process and where. (The live tree against a fake one, and
//! two journal directories of one real device: `tests/real/one_journal.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::journal::{Journal, Tree};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fake tree with `loop2` (7:2, diskseq 42, as a captured tree carries
/// them) in a directory of its own.
struct Tree2 {
    dir: tempfile::TempDir,
    tree: FakeTree,
}

impl Tree2 {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(&dir.path().join("root")).unwrap();
        let mut d = FakeDisk::new("loop2").dev(7, 2);
        d.diskseq = Some(42);
        tree.add(&d).unwrap();
        Self { dir, tree }
    }

    fn sys(&self) -> PathBuf {
        self.dir.path().join("root/sys")
    }

    /// `blktune --sysfs-root .. --proc-root .. ARGS` with `journal` as
    /// `BLKTUNE_JOURNAL_DIR` (`None`: unset), run in `cwd`.
    fn run_in(&self, cwd: &Path, args: &[&str], journal: Option<&Path>) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
        c.current_dir(cwd)
            .arg("--sysfs-root")
            .arg(self.sys())
            .arg("--proc-root")
            .arg(self.dir.path().join("root/proc"))
            .args(args)
            .env_remove("BLKTUNE_JOURNAL_DIR");
        if let Some(j) = journal {
            c.env("BLKTUNE_JOURNAL_DIR", j);
        }
        c.output().unwrap()
    }

    fn run(&self, args: &[&str], journal: Option<&Path>) -> Output {
        self.run_in(self.dir.path(), args, journal)
    }

    fn queue(&self, attr: &str) -> String {
        std::fs::read_to_string(self.tree.dev_dir("loop2").join("queue").join(attr))
            .unwrap()
            .trim()
            .to_string()
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Two trees, one journal directory, one device name, the same number and
/// diskseq: the second tree's revert refuses the first tree's entry (one
/// line, nothing written, the entry kept), in both directions; each tree's
/// own revert still works.
#[test]
fn a_trees_entry_is_never_applied_to_another_tree_sharing_the_journal() {
    let (a, b) = (Tree2::new(), Tree2::new());
    let j = tempfile::tempdir().unwrap();
    let o = a.run(
        &["set", "loop2", "-s", "bfq", "--read-ahead-kb", "4096"],
        Some(j.path()),
    );
    assert!(o.status.success(), "{}", err(&o));
    let entry = j.path().join("loop2.json");
    let e = Journal::new(j.path()).load("loop2").unwrap().unwrap();
    assert_eq!(
        e.tree,
        Some(Tree::Files(std::fs::canonicalize(a.sys()).unwrap())),
        "the entry says which tree it is of"
    );
    assert_eq!(e.pid.map(|p| p > 0), Some(true));
    let b_before = (b.queue("scheduler"), b.queue("read_ahead_kb"));
    for args in [
        vec!["revert", "loop2"],
        vec!["revert", "--all"],
        vec!["set", "loop2", "--read-ahead-kb", "256"],
    ] {
        let o = b.run(&args, Some(j.path()));
        let e = err(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(
            e.contains(&entry.display().to_string()) && e.contains("the tree"),
            "{args:?}: {e}"
        );
        assert_eq!(
            (b.queue("scheduler"), b.queue("read_ahead_kb")),
            b_before,
            "{args:?} wrote the other tree's values"
        );
        assert!(entry.exists(), "{args:?} consumed the other tree's entry");
    }
    // Its own tree reverts it.
    let o = a.run(&["revert", "loop2"], Some(j.path()));
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(a.queue("read_ahead_kb"), "128");
    assert!(!entry.exists());
}

/// A relative `BLKTUNE_JOURNAL_DIR` is made absolute at start (the same
/// directory from any other directory), and the undo hint names it.
#[test]
fn a_relative_journal_directory_is_absolute_in_the_hint_and_the_same_from_elsewhere() {
    let t = Tree2::new();
    let work = t.dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let o = t.run_in(
        &work,
        &["set", "loop2", "--read-ahead-kb", "256"],
        Some(Path::new("rel/j")),
    );
    assert!(o.status.success(), "{}", err(&o));
    let abs = std::fs::canonicalize(&work).unwrap().join("rel/j");
    let hint = format!(
        "undo with: BLKTUNE_JOURNAL_DIR={} blktune --sysfs-root ",
        abs.display()
    );
    assert!(out(&o).contains(&hint), "{}", out(&o));
    assert!(abs.join("loop2.json").exists());
    // The hint, run from elsewhere, reverts it.
    let o = t.run_in(t.dir.path(), &["revert", "loop2"], Some(&abs));
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(t.queue("read_ahead_kb"), "128");
    // The tree's own journal is the default: no variable in the hint.
    let o = t.run(&["set", "loop2", "--read-ahead-kb", "256"], None);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!out(&o).contains("BLKTUNE_JOURNAL_DIR"), "{}", out(&o));
    assert!(
        out(&o).contains("undo with: blktune --sysfs-root"),
        "{}",
        out(&o)
    );
}

/// `status`: nothing, then each change with its originals, since, pid,
/// journal directory and revert command (text and JSON), then nothing again.
#[test]
fn status_says_what_was_changed_from_which_originals_since_when_by_whom_and_where() {
    let t = Tree2::new();
    let j = tempfile::tempdir().unwrap();
    let jdir = std::fs::canonicalize(j.path()).unwrap();
    let o = t.run(&["status"], Some(&jdir));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        out(&o).starts_with("nothing changed by blktune"),
        "{}",
        out(&o)
    );
    assert!(out(&o).contains(&jdir.display().to_string()), "{}", out(&o));
    let o = t.run(
        &["set", "loop2", "-s", "kyber", "--nr-requests", "32"],
        Some(&jdir),
    );
    assert!(o.status.success(), "{}", err(&o));
    let o = t.run(&["status"], Some(&jdir));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    for want in [
        format!("journal {}", jdir.display()),
        "loop2: changed since 20".into(),
        "by pid ".into(),
        "original  scheduler=mq-deadline".into(),
        "scheduler mq-deadline→kyber".into(),
        "nr_requests 256→32".into(),
        format!(
            "revert    BLKTUNE_JOURNAL_DIR={} blktune --sysfs-root",
            jdir.display()
        ),
    ] {
        assert!(text.contains(&want), "{want:?} missing in:\n{text}");
    }
    let o = t.run(&["status", "--json"], Some(&jdir));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["journal"], jdir.display().to_string());
    assert_eq!(
        v["tree"]["files"],
        std::fs::canonicalize(t.sys())
            .unwrap()
            .display()
            .to_string()
    );
    let d = &v["devices"][0];
    assert_eq!(d["device"], "loop2");
    assert_eq!(d["journal"], jdir.display().to_string());
    assert_eq!(d["original"]["scheduler"], "mq-deadline");
    assert!(d["pid"].as_u64().is_some_and(|p| p > 0), "{d}");
    assert!(d["since"].as_str().is_some_and(|s| s.ends_with('Z')), "{d}");
    assert!(d["stale"].is_null(), "{d}");
    assert!(
        d["differs"]
            .as_array()
            .unwrap()
            .contains(&"scheduler mq-deadline→kyber".into()),
        "{d}"
    );
    assert!(
        d["revert"].as_str().unwrap().ends_with("revert loop2"),
        "{d}"
    );
    // A refused entry is named and makes the exit code 1.
    std::fs::write(jdir.join("loop9.json"), "{").unwrap();
    let o = t.run(&["status"], Some(&jdir));
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(out(&o).contains("refused: 'loop9'"), "{}", out(&o));
    std::fs::remove_file(jdir.join("loop9.json")).unwrap();
    // Reverted: nothing again.
    let o = t.run(&["revert", "--all"], Some(&jdir));
    assert!(o.status.success(), "{}", err(&o));
    let o = t.run(&["status", "--json"], Some(&jdir));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["devices"].as_array().unwrap().len(), 0, "{v}");
}
