//! One journal per real device (issue 37), on loop devices these tests
//! create (root only):
//! - a fake tree's entry (a captured tree carries the real device's number,
//!   diskseq and boot id) is never applied to the real device, and a fake
//!   tree's revert never consumes a real device's entry, whatever
//!   `BLKTUNE_JOURNAL_DIR` says;
//! - two journal directories (a shell with `BLKTUNE_JOURNAL_DIR`, another
//!   where sudo dropped it) keep one lock and one set of originals: a change
//!   from the second is refused naming the first, a revert from either puts
//!   the true original back, also when the changes race;
//! - `status` from any journal directory shows a device journalled in another.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::journal::Journal;
use common::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `blktune ARGS` on the real tree with `journal` as the journal directory
/// (`None`: the variable unset, as after `sudo`: `/run/blktune`).
fn run(args: &[&str], journal: Option<&Path>) -> Output {
    command(args, journal).output().unwrap()
}

fn command(args: &[&str], journal: Option<&Path>) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
    c.args(args).env_remove("BLKTUNE_JOURNAL_DIR");
    if let Some(j) = journal {
        c.env("BLKTUNE_JOURNAL_DIR", j);
    }
    c
}

/// The loop device's `major:minor` and diskseq, from sysfs.
fn identity(lo: &TestLoop) -> ((u32, u32), u64) {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/sys/block/{}/{f}", lo.name()))
            .unwrap()
            .trim()
            .to_string()
    };
    let dev = read("dev");
    let (ma, mi) = dev.split_once(':').unwrap();
    (
        (ma.parse().unwrap(), mi.parse().unwrap()),
        read("diskseq").parse().unwrap(),
    )
}

/// A fake tree of `lo` as `tests/fixtures/capture.sh` would capture it:
/// its name, number, diskseq and this boot's id.
fn captured(lo: &TestLoop, dir: &Path) -> FakeTree {
    let tree = FakeTree::new(dir).unwrap();
    let ((major, minor), seq) = identity(lo);
    let mut d = FakeDisk::new(lo.name()).dev(major, minor);
    d.diskseq = Some(seq);
    tree.add(&d).unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    std::fs::write(dir.join("proc/sys/kernel/random/boot_id"), boot).unwrap();
    tree
}

fn fake_run(dir: &Path, args: &[&str], journal: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blktune"))
        .arg("--sysfs-root")
        .arg(dir.join("sys"))
        .arg("--proc-root")
        .arg(dir.join("proc"))
        .args(args)
        .env("BLKTUNE_JOURNAL_DIR", journal)
        .output()
        .unwrap()
}

#[test]
fn a_fake_trees_entry_never_reaches_the_real_device_nor_a_real_entry_the_fake_tree() {
    if !require_root(
        "a_fake_trees_entry_never_reaches_the_real_device_nor_a_real_entry_the_fake_tree",
    ) {
        return;
    }
    let lo = TestLoop::new(64);
    lo.set_queue("scheduler", "mq-deadline");
    lo.set_queue("read_ahead_kb", "128");
    let original = lo.settings();
    let fake = tempfile::tempdir().unwrap();
    let _tree = captured(&lo, fake.path());
    let j = tempfile::tempdir().unwrap();
    let entry = j.path().join(format!("{}.json", lo.name()));
    // The first direction: the fake tree journals in J...
    let o = fake_run(
        fake.path(),
        &["set", lo.name(), "-s", "bfq", "--read-ahead-kb", "4096"],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(entry.exists());
    // ...and a real revert with J refuses its entry: one line, nothing written.
    for args in [vec!["revert", lo.name()], vec!["revert", "--all"]] {
        let o = run(&args, Some(j.path()));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(&entry.display().to_string()) && err.contains("in the tree"),
            "{args:?}: {err}"
        );
        assert_eq!(
            lo.settings(),
            original,
            "{args:?}: the fake tree's values reached the device"
        );
        assert!(entry.exists(), "{args:?}");
    }
    // Nor does a real change take the fake entry for its original.
    let o = run(
        &["set", lo.name(), "--read-ahead-kb", "256"],
        Some(j.path()),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(lo.settings(), original);
    // The fake tree reverts its own entry.
    let o = fake_run(fake.path(), &["revert", lo.name()], j.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!entry.exists());

    // The other direction: a real entry in J...
    let o = run(
        &["set", lo.name(), "--read-ahead-kb", "512"],
        Some(j.path()),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // ...is not consumed by the fake tree's revert (nor its change).
    for args in [
        vec!["revert", lo.name()],
        vec!["set", lo.name(), "--read-ahead-kb", "1024"],
    ] {
        let o = fake_run(fake.path(), &args, j.path());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("this machine's devices"), "{args:?}: {err}");
        assert!(entry.exists(), "{args:?}: the real original was consumed");
    }
    // The real original is still there for the real revert.
    let o = run(&["revert", lo.name()], Some(j.path()));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lo.settings(), original);

    // Whatever BLKTUNE_JOURNAL_DIR says: the fake tree pointed at the real
    // journal, /run/blktune, neither consumes nor replaces a real entry...
    let run_blktune = Path::new("/run/blktune");
    let live = run_blktune.join(format!("{}.json", lo.name()));
    let o = run(&["set", lo.name(), "--read-ahead-kb", "512"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let real_entry = std::fs::read(&live).unwrap();
    for args in [
        vec!["revert", lo.name()],
        vec!["revert", "--all"],
        vec!["set", lo.name(), "--read-ahead-kb", "1024"],
    ] {
        let o = fake_run(fake.path(), &args, run_blktune);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("this machine's devices"), "{args:?}: {err}");
        assert_eq!(std::fs::read(&live).unwrap(), real_entry, "{args:?}");
    }
    let o = run(&["revert", lo.name()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lo.settings(), original);
    // ...and its own entry there is never applied by the real revert.
    let o = fake_run(
        fake.path(),
        &["set", lo.name(), "--read-ahead-kb", "4096"],
        run_blktune,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(live.exists());
    let o = run(&["revert", lo.name()], None);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("in the tree"), "{}", stderr(&o));
    assert_eq!(
        lo.settings(),
        original,
        "the fake tree's values reached the device"
    );
    let o = fake_run(fake.path(), &["revert", lo.name()], run_blktune);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!live.exists());
}

#[test]
fn two_journal_directories_of_one_device_keep_one_lock_and_one_original() {
    if !require_root("two_journal_directories_of_one_device_keep_one_lock_and_one_original") {
        return;
    }
    let lo = TestLoop::new(64);
    lo.set_queue("scheduler", "mq-deadline");
    let original = lo.settings();
    let j = tempfile::tempdir().unwrap();
    // One shell with BLKTUNE_JOURNAL_DIR=J...
    let o = run(
        &["set", lo.name(), "-s", "bfq", "--read-ahead-kb", "512"],
        Some(j.path()),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let changed = lo.settings();
    // ...another where sudo dropped it (/run/blktune): refused, naming J.
    let o = run(&["set", lo.name(), "-s", "kyber"], None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&j.path().display().to_string()) && err.contains("nothing was changed"),
        "{err}"
    );
    assert!(
        err.contains("BLKTUNE_JOURNAL_DIR="),
        "the hint names J: {err}"
    );
    assert_eq!(lo.settings(), changed, "the second change was made");
    // status from the default directory shows where it is.
    let o = run(&["status", "--json"], None);
    assert!(o.status.code().is_some(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mine: Vec<&serde_json::Value> = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["device"] == lo.name())
        .collect();
    assert_eq!(mine.len(), 1, "{v}");
    assert_eq!(mine[0]["journal"], j.path().display().to_string());
    assert_eq!(mine[0]["original"]["scheduler"], "mq-deadline");
    assert!(mine[0]["pid"].as_u64().is_some(), "{v}");
    let text = stdout(&run(&["status"], None));
    assert!(
        text.contains(&format!("  {}: changed since", lo.name())),
        "{text}"
    );
    // `revert --all` reverts its own journal directory (here an empty one
    // of its own: `/run/blktune` may hold what other runs on this machine
    // left) and points to status for the others.
    let empty = tempfile::tempdir().unwrap();
    let o = run(&["revert", "--all"], Some(empty.path()));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("'blktune status' also shows changes journalled in other directories"),
        "{}",
        stdout(&o)
    );
    assert_eq!(lo.settings(), changed);
    // Both reverts: the one without J takes the originals from J.
    let o = run(&["revert", lo.name()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!(
            "originals are journalled in {}",
            j.path().display()
        )),
        "{}",
        stdout(&o)
    );
    assert_eq!(lo.settings(), original);
    let o = run(&["revert", lo.name()], Some(j.path()));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("nothing to revert"), "{}", stdout(&o));
    assert_eq!(lo.settings(), original, "not back at the original");
    assert!(
        Journal::new(j.path()).list().unwrap().is_empty()
            && Journal::new("/run/blktune")
                .load(lo.name())
                .unwrap()
                .is_none(),
        "an entry is left"
    );
}

/// Changes racing from two journal directories: whichever takes the
/// device's one lock first journals the original, the other is refused or
/// finds it; the reverts always end at the original.
#[test]
fn racing_changes_from_two_journal_directories_never_lose_the_original() {
    if !require_root("racing_changes_from_two_journal_directories_never_lose_the_original") {
        return;
    }
    let lo = TestLoop::new(64);
    let original = lo.settings();
    let (j1, j2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let spawn = |args: &[&str], j: &Path| {
        command(args, Some(j))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for run_no in 0..10u64 {
        let a = spawn(
            &["set", lo.name(), "-s", "bfq", "--read-ahead-kb", "512"],
            j1.path(),
        );
        std::thread::sleep(std::time::Duration::from_millis(run_no * 3 % 23));
        let b = spawn(
            &["set", lo.name(), "-s", "kyber", "--nr-requests", "64"],
            j2.path(),
        );
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        assert!(
            a.status.success() || b.status.success(),
            "run {run_no}: neither: {} / {}",
            stderr(&a),
            stderr(&b)
        );
        let entries = [j1.path(), j2.path()]
            .iter()
            .filter(|j| Journal::new(j).load(lo.name()).unwrap().is_some())
            .count();
        assert_eq!(entries, 1, "run {run_no}: one set of originals");
        for j in [j1.path(), j2.path()] {
            let o = run(&["revert", lo.name()], Some(j));
            assert_eq!(o.status.code(), Some(0), "run {run_no}: {}", stderr(&o));
        }
        assert_eq!(
            lo.settings(),
            original,
            "run {run_no}: not back at the original"
        );
    }
}

/// Not root: the register of live devices (root's, mode 0700) cannot be
/// read, so `status` says so in one line and exits 1; a change of a real
/// device (root's anyway) is refused before anything is written.
#[test]
fn status_and_set_as_an_ordinary_user_are_one_line_and_change_nothing() {
    if !require_root("status_and_set_as_an_ordinary_user_are_one_line_and_change_nothing")
        || !require_tool(
            "status_and_set_as_an_ordinary_user_are_one_line_and_change_nothing",
            "setpriv",
        )
    {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    // The register exists (a root change made it), root's and private.
    let o = run(
        &["set", lo.name(), "--read-ahead-kb", "256"],
        Some(j.path()),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let before = lo.settings();
    let bin_dir = tempfile::tempdir().unwrap();
    let bin = public_binary(bin_dir.path());
    let o = as_nobody(&bin)
        .arg("status")
        .env_remove("BLKTUNE_JOURNAL_DIR")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("permission denied") && err.contains("needs root"),
        "{err}"
    );
    let mine = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(mine.path(), Some(65534), Some(65534)).unwrap();
    let o = as_nobody(&bin)
        .args(["set", lo.name(), "--read-ahead-kb", "512"])
        .env("BLKTUNE_JOURNAL_DIR", mine.path())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("permission denied") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(lo.settings(), before);
    assert_eq!(
        std::fs::read_dir(mine.path()).unwrap().count(),
        0,
        "nothing journalled"
    );
    let o = run(&["revert", lo.name()], Some(j.path()));
    assert!(o.status.success(), "{}", stderr(&o));
}
