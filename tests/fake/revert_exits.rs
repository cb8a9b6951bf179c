//! Exit codes and reports of `set` and `revert` a script can rely on (issue
//! 37): a `set` that changed something says so on stderr, with the undo
//! command, when its report cannot be printed (a full disk, a closed
//! stdout), and exits 0 as the change was made; `revert` checks every
//! journalled value with the catalogue before its first write; nothing to
//! revert is exit 0 (`--strict`: 1).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::fake::{FakeDisk, FakeTree};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Fixture {
    dir: tempfile::TempDir,
    tree: FakeTree,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(&dir.path().join("root")).unwrap();
        tree.add(&FakeDisk::new("loop5").dev(7, 5)).unwrap();
        Self { dir, tree }
    }

    fn journal(&self) -> PathBuf {
        self.dir.path().join("journal")
    }

    /// The command line, as a list of words, with the fixture's roots.
    fn words(&self, args: &[&str]) -> Vec<String> {
        let root = self.dir.path().join("root");
        let mut v: Vec<String> = vec![
            "--sysfs-root".into(),
            root.join("sys").display().to_string(),
            "--proc-root".into(),
            root.join("proc").display().to_string(),
        ];
        v.extend(args.iter().map(|s| s.to_string()));
        v
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
        c.args(self.words(args))
            .env("BLKTUNE_JOURNAL_DIR", self.journal());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Run with standard output closed (`>&-`), through a shell.
    fn run_stdout_closed(&self, args: &[&str]) -> Output {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg("exec \"$0\" \"$@\" >&-")
            .arg(env!("CARGO_BIN_EXE_blktune"))
            .args(self.words(args))
            .env("BLKTUNE_JOURNAL_DIR", self.journal());
        c.output().unwrap()
    }

    /// Every file of the fake sysfs with its content.
    fn state(&self) -> BTreeMap<PathBuf, String> {
        fn walk(p: &Path, out: &mut BTreeMap<PathBuf, String>) {
            for e in std::fs::read_dir(p).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    walk(&e.path(), out);
                } else {
                    out.insert(
                        e.path(),
                        std::fs::read_to_string(e.path()).unwrap_or_default(),
                    );
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.dir.path().join("root/sys"), &mut out);
        out
    }

    fn queue(&self, attr: &str) -> String {
        std::fs::read_to_string(self.tree.dev_dir("loop5").join("queue").join(attr))
            .unwrap()
            .trim()
            .to_string()
    }
}

/// The writing end of a pipe whose reader has already gone, as after
/// `blktune set ... | true` once `true` exited: a write fails with EPIPE.
fn pipe_without_reader() -> std::os::fd::OwnedFd {
    let (reader, writer) = nix::unistd::pipe().unwrap();
    drop(reader);
    writer
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `set >/dev/full` changed and journalled the device but said only "No
/// space left on device", exit 1, as if nothing had changed; `>&-` exited 0
/// silently. Now: exit 0 (the change was made), and one line on stderr with
/// what changed and the undo command; the same for a pipe whose reader has
/// gone (`| true`).
#[test]
fn a_set_whose_report_cannot_be_printed_says_what_changed_on_stderr() {
    let f = Fixture::new();
    let undo = format!(
        "undo with: BLKTUNE_JOURNAL_DIR={} blktune --sysfs-root",
        f.journal().display()
    );
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    for (what, o) in [
        (
            "/dev/full",
            f.command(&["set", "loop5", "-s", "kyber", "--nr-requests", "32"])
                .stdout(Stdio::from(full()))
                .output()
                .unwrap(),
        ),
        (
            "/dev/full --json",
            f.command(&["set", "loop5", "--read-ahead-kb", "256", "--json"])
                .stdout(Stdio::from(full()))
                .output()
                .unwrap(),
        ),
        (
            "| true (a pipe whose reader has gone: EPIPE)",
            f.command(&["set", "loop5", "--read-ahead-kb", "384"])
                .stdout(Stdio::from(pipe_without_reader()))
                .output()
                .unwrap(),
        ),
        (
            ">&-",
            f.run_stdout_closed(&["set", "loop5", "--read-ahead-kb", "512"]),
        ),
    ] {
        let e = err(&o);
        assert_eq!(o.status.code(), Some(0), "{what}: {e}");
        assert_eq!(e.lines().count(), 1, "{what}: {e}");
        assert!(
            e.contains("could not print the report") && e.contains("WAS changed"),
            "{what}: {e}"
        );
        assert!(
            e.contains(&undo) && e.trim_end().ends_with("revert loop5"),
            "{what}: {e}"
        );
    }
    let e = err(&f.run_stdout_closed(&["set", "loop5", "--read-ahead-kb", "1024"]));
    assert!(e.contains("standard output was closed"), "{e}");
    assert!(e.contains("read_ahead_kb 512 -> 1024"), "{e}");
    assert_eq!(f.queue("read_ahead_kb"), "1024");
    // Nothing to change: said too, not as a change.
    let o = f
        .command(&["set", "loop5", "--read-ahead-kb", "1024"])
        .stdout(Stdio::from(full()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("nothing changed"), "{}", err(&o));
    // Output sent to /dev/null is a choice, not a failure: nothing said.
    let o = f
        .command(&["set", "loop5", "--read-ahead-kb", "2048"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).is_empty(), "{}", err(&o));
    // revert: the same rule, for a closed stdout too.
    let o = f.run_stdout_closed(&["revert", "loop5"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        err(&o).contains("could not print the revert report (standard output was closed); every write was still made"),
        "{}",
        err(&o)
    );
    assert_eq!(f.queue("read_ahead_kb"), "128");
}

/// An entry whose `front_merges` is 7 (0 or 1 only) was written, then
/// reported as a partial revert; now refused before the first write.
#[test]
fn a_revert_refuses_a_journalled_value_set_would_refuse_and_writes_nothing() {
    let f = Fixture::new();
    let o = f.run(&["set", "loop5", "-s", "kyber", "--read-ahead-kb", "256"]);
    assert!(o.status.success(), "{}", err(&o));
    let path = f.journal().join("loop5.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["original"]["tunables"] = serde_json::json!([["front_merges", "7"]]);
    std::fs::write(&path, v.to_string()).unwrap();
    let before = f.state();
    for args in [vec!["revert", "loop5"], vec!["revert", "--all"]] {
        let o = f.run(&args);
        let e = err(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(
            e.contains("front_merges '7' is out of range: 0 to 1")
                && e.contains("nothing was written")
                && e.contains(&f.journal().display().to_string()),
            "{args:?}: {e}"
        );
        assert_eq!(f.state(), before, "{args:?} wrote something");
        assert!(path.exists(), "the entry is kept");
    }
}

/// A repeated revert, and `revert --all` with an empty journal, exit 0 with
/// `nothing to revert` (an ExecStop or an Ansible task on a clean machine);
/// `--strict` keeps exit 1.
#[test]
fn nothing_to_revert_is_exit_0_and_strict_keeps_exit_1() {
    let f = Fixture::new();
    let o = f.run(&["revert", "--all"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("nothing to revert"), "{}", out(&o));
    assert!(err(&o).is_empty(), "{}", err(&o));
    let o = f.run(&["revert", "--all", "--strict"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("nothing to revert"), "{}", err(&o));
    let o = f.run(&["set", "loop5", "--read-ahead-kb", "256"]);
    assert!(o.status.success(), "{}", err(&o));
    let o = f.run(&["revert", "loop5"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("read_ahead_kb  256 -> 128"), "{}", out(&o));
    for _ in 0..2 {
        let o = f.run(&["revert", "loop5"]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        assert!(
            out(&o).contains("loop5: nothing to revert (no original in the journal"),
            "{}",
            out(&o)
        );
        assert!(err(&o).is_empty(), "{}", err(&o));
    }
    let o = f.run(&["revert", "--strict", "loop5"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
    assert!(err(&o).contains("nothing to revert"), "{}", err(&o));
    // A typo is still a usage error.
    let o = f.run(&["revert", "loop55"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}
