//! `set` and `revert` on real loop devices these tests create (root only).
//! Every test works on its own `TestLoop`; no other device is touched.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Give a fresh loop device a known, non-default original state, so that a
/// revert that merely resets to defaults would be caught.
fn known_original(lo: &TestLoop) -> Vec<(String, String)> {
    lo.set_queue("scheduler", "mq-deadline");
    // read_expire is kept in jiffies: a whole second reads back exactly at any HZ.
    lo.set_queue("iosched/read_expire", "1000");
    lo.set_queue("iosched/fifo_batch", "7");
    lo.set_queue("nr_requests", "100");
    lo.set_queue("read_ahead_kb", "512");
    let s = lo.settings();
    assert!(s.contains(&("iosched/read_expire".into(), "1000".into())));
    s
}

/// `blktune set DEV ARGS` with the journal `j`; it must succeed.
fn set(lo: &TestLoop, j: &Path, args: &[&str]) -> Output {
    let mut all = vec!["set", lo.name()];
    all.extend(args);
    let o = blktune(&all, j);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o
}

/// `blktune revert DEV` with the journal `j`; it must succeed.
fn revert(lo: &TestLoop, j: &Path) -> Output {
    let o = blktune(&["revert", lo.name()], j);
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

#[test]
fn set_switches_scheduler_and_orders_nr_requests_after_it() {
    if !require_root("set_switches_scheduler_and_orders_nr_requests_after_it") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let orig_sched = lo.active_scheduler();
    let orig_nr = lo.queue("nr_requests");
    let o = set(
        &lo,
        j.path(),
        &["--scheduler", "kyber", "--nr-requests", "64"],
    );
    assert_eq!(lo.active_scheduler(), "kyber");
    assert_eq!(
        lo.queue("nr_requests"),
        "64",
        "nr_requests must be written after the switch"
    );
    assert!(
        stdout(&o).contains(&format!("scheduler    {orig_sched} -> kyber")),
        "{}",
        stdout(&o)
    );
    revert(&lo, j.path());
    assert_eq!(lo.active_scheduler(), orig_sched);
    assert_eq!(lo.queue("nr_requests"), orig_nr);
}

#[test]
fn set_writes_tunables_of_the_new_scheduler_and_prints_them() {
    if !require_root("set_writes_tunables_of_the_new_scheduler_and_prints_them") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    lo.set_queue("scheduler", "none");
    let o = set(
        &lo,
        j.path(),
        &[
            "-s",
            "kyber",
            "-t",
            "read_lat_nsec=1000000",
            "--nr-requests",
            "32",
            "--read-ahead-kb",
            "256",
        ],
    );
    assert_eq!(lo.queue("iosched/read_lat_nsec"), "1000000");
    assert_eq!(lo.queue("nr_requests"), "32");
    assert_eq!(lo.queue("read_ahead_kb"), "256");
    let out = stdout(&o);
    for want in [
        "scheduler              none -> kyber",
        "iosched/read_lat_nsec  - -> 1000000",
        "nr_requests            128 -> 32",
        "-> 256",
    ] {
        assert!(out.contains(want), "{want:?} missing in:\n{out}");
    }
}

#[test]
fn a_value_the_kernel_would_refuse_after_the_switch_is_refused_before_it() {
    if !require_root("a_value_the_kernel_would_refuse_after_the_switch_is_refused_before_it") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let original = known_original(&lo);
    // kyber's latency targets are unsigned: the kernel would accept the
    // switch to kyber, then refuse '-1' with EINVAL, a mid-change failure
    // and a rollback. The catalogue knows the range, so nothing is switched.
    // (Rollback itself: cli_errors' a_failing_step_rolls_back_and_drops_its_journal_entry.)
    let o = blktune(
        &[
            "set",
            lo.name(),
            "--scheduler",
            "kyber",
            "--tunable",
            "read_lat_nsec=-1",
        ],
        j.path(),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("'{}'", lo.name()))
            && err.contains("read_lat_nsec '-1' is out of range: 0 to 18446744073709551615 ns"),
        "{err}"
    );
    assert_eq!(lo.settings(), original);
    assert_eq!(
        std::fs::read_dir(j.path()).unwrap().count(),
        0,
        "a refused change leaves no journal entry"
    );
}

#[test]
fn revert_restores_every_original_and_the_first_original_wins() {
    if !require_root("revert_restores_every_original_and_the_first_original_wins") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let original = known_original(&lo);
    set(
        &lo,
        j.path(),
        &[
            "-s",
            "kyber",
            "--nr-requests",
            "64",
            "--read-ahead-kb",
            "1024",
        ],
    );
    // A second change must not replace the journalled original.
    set(&lo, j.path(), &["-s", "bfq", "-t", "slice_idle=0"]);
    assert_eq!(lo.active_scheduler(), "bfq");
    assert_ne!(lo.settings(), original);
    let o = revert(&lo, j.path());
    assert_eq!(lo.settings(), original);
    assert!(stdout(&o).contains("bfq -> mq-deadline"), "{}", stdout(&o));
    // The entry is gone: a second revert has nothing to do (exit 0; 1 with --strict).
    let o = blktune(&["revert", lo.name()], j.path());
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("nothing to revert"), "{}", stdout(&o));
    let o = blktune(&["revert", "--strict", lo.name()], j.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nothing to revert"), "{}", stderr(&o));
}

#[test]
fn the_journal_survives_a_killed_process() {
    if !require_root("the_journal_survives_a_killed_process") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let original = known_original(&lo);
    let entry = j.path().join(format!("{}.json", lo.name()));
    // Start a change and SIGKILL the process the moment its journal entry
    // exists: the entry is written before the first sysfs write, so the
    // process dies before or in the middle of its writes (a scheduler switch
    // takes tens of ms: it drains and freezes the queue).
    let mut child = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args([
            "set",
            lo.name(),
            "-s",
            "kyber",
            "-t",
            "read_lat_nsec=3000000",
            "--nr-requests",
            "48",
            "--read-ahead-kb",
            "2048",
        ])
        .env("BLKTUNE_JOURNAL_DIR", j.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + TIMEOUT;
    while !entry.exists() {
        assert!(Instant::now() < deadline, "no journal entry appeared");
        if let Some(st) = child.try_wait().unwrap() {
            panic!("blktune ended ({st}) before its journal entry was seen");
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    child.kill().unwrap(); // SIGKILL
    let st = child.wait().unwrap();
    let mid = lo.settings();
    eprintln!(
        "killed ({st}); state at the kill: {}",
        if mid == original {
            "nothing written yet"
        } else {
            "mid-change or done"
        }
    );
    // The entry is complete JSON with the true original.
    let text = std::fs::read_to_string(&entry).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["original"]["scheduler"], "mq-deadline");
    assert_eq!(v["original"]["nr_requests"], 100);
    assert_eq!(v["original"]["read_ahead_kb"], 512);
    assert_eq!(v["original"]["tunables"][0][0], "async_depth");
    // A new process puts everything back.
    let o = blktune(&["revert", "--all"], j.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lo.settings(), original);
    assert!(!entry.exists());
    let leftovers: Vec<_> = std::fs::read_dir(j.path()).unwrap().collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn not_root_gets_one_line_and_nothing_changes() {
    if !require_root("not_root_gets_one_line_and_nothing_changes")
        || !require_tool("not_root_gets_one_line_and_nothing_changes", "setpriv")
    {
        return;
    }
    let lo = TestLoop::new(64);
    lo.set_queue("scheduler", "mq-deadline");
    let before = lo.settings();
    let bin_dir = tempfile::tempdir().unwrap();
    let bin = public_binary(bin_dir.path());
    let j = tempfile::tempdir().unwrap();
    for args in [
        vec!["set", lo.name(), "--scheduler", "kyber"],
        vec!["set", lo.name(), "--nr-requests", "64"],
        vec!["set", lo.name(), "--read-ahead-kb", "256"],
        vec!["set", lo.name(), "--tunable", "read_expire=100"],
    ] {
        let o = as_nobody(&bin)
            .args(&args)
            .env("BLKTUNE_JOURNAL_DIR", j.path().join("j"))
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("'{}'", lo.name()))
                && err.contains("permission denied")
                && err.contains("needs root"),
            "{err}"
        );
        assert_eq!(lo.settings(), before, "{args:?} changed something");
    }
    // Reading works for anyone.
    let o = as_nobody(&bin).args(["list", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(lo.name()));
}

#[test]
fn reverting_a_re_created_device_writes_nothing_and_says_how_to_restore() {
    if !require_root("reverting_a_re_created_device_writes_nothing_and_says_how_to_restore") {
        return;
    }
    retry_node_races(
        "reverting_a_re_created_device_writes_nothing_and_says_how_to_restore",
        revert_re_created,
    );
}

/// One run; `false` when another process took the loop node between the
/// detach and the re-attach.
fn revert_re_created() -> bool {
    // Change a loop device, detach it, attach another file under the same
    // name: the kernel gives it a new diskseq, so it is another device and
    // the old original must not be applied to it. But a loop device keeps
    // its nr_requests across a plain detach and attach, so blktune's change
    // can still be in force: revert must say so, with the command that
    // restores it.
    let lo = TestLoop::new(64);
    let name = lo.name().to_string();
    let j = tempfile::tempdir().unwrap();
    set(&lo, j.path(), &["--nr-requests", "64"]);
    let wbt = lo.queue("wbt_lat_usec");
    let base = temp_in_target();
    let file = tempfile::NamedTempFile::new_in(base.path()).unwrap();
    file.as_file().set_len(32 << 20).unwrap();
    lo.dev.remove().unwrap_or_else(|e| panic!("detach: {e}"));
    let Some(_guard) = common::reattach(&name, file.path()) else {
        // Someone else took the name in between: try again.
        eprintln!("{name} was taken by another process");
        return false;
    };
    let nr = format!("/sys/block/{name}/queue/nr_requests");
    // A loop device detached with plain `losetup -d` keeps blktune's value
    // into its next attachment; the test helper's detach put the original
    // back, so give the new (our own) device the changed value by hand.
    // The new attachment starts with whatever scheduler the last user of
    // this loopN left; give it the original one (before nr_requests: a
    // switch resets it) so that only nr_requests differs.
    std::fs::write(format!("/sys/block/{name}/queue/scheduler"), "none").unwrap();
    // Write-back throttling too (a last user's bfq turned it off).
    std::fs::write(format!("/sys/block/{name}/queue/wbt_lat_usec"), &wbt).unwrap();
    std::fs::write(&nr, "64").unwrap();
    let nr_now = std::fs::read_to_string(&nr).unwrap();
    let o = blktune(&["revert", &name], j.path());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("'{name}' is not the device blktune changed"))
            && err.contains("diskseq")
            && err.contains("nr_requests=128"),
        "{err}"
    );
    let cmd = err
        .lines()
        .find_map(|l| l.split_once("to restore them: sudo blktune "))
        .map(|(_, c)| c.to_string())
        .unwrap_or_else(|| panic!("no command: {err}"));
    assert_eq!(cmd, format!("set {name} --nr-requests 128"));
    assert!(
        !j.path().join(format!("{name}.json")).exists(),
        "the stale entry is dropped"
    );
    assert_eq!(
        std::fs::read_to_string(&nr).unwrap(),
        nr_now,
        "the new device was left alone"
    );
    // The printed command does what it says.
    let args: Vec<&str> = cmd.split_whitespace().collect();
    let o = blktune(&args, j.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&nr).unwrap().trim(), "128");
    true
}

#[test]
fn a_no_op_set_says_already_and_journals_nothing() {
    if !require_root("a_no_op_set_says_already_and_journals_nothing") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let entry = j.path().join(format!("{}.json", lo.name()));
    let o = set(
        &lo,
        j.path(),
        &["--scheduler", "none", "--nr-requests", "128"],
    );
    assert_eq!(
        stdout(&o).trim(),
        format!(
            "{}: already scheduler=none nr_requests=128; nothing changed",
            lo.name()
        )
    );
    assert!(!entry.exists(), "a no-op made a journal entry");
    set(&lo, j.path(), &["--nr-requests", "64"]);
    let saved = std::fs::read_to_string(&entry).unwrap();
    set(&lo, j.path(), &["--nr-requests", "64"]);
    assert_eq!(std::fs::read_to_string(&entry).unwrap(), saved);
    revert(&lo, j.path());
    assert_eq!(lo.queue("nr_requests"), "128", "the first original wins");
}

#[test]
fn nr_requests_above_the_tag_depth_under_none_is_refused_before_writing() {
    if !require_root("nr_requests_above_the_tag_depth_under_none_is_refused_before_writing") {
        return;
    }
    let lo = TestLoop::new(64);
    lo.set_queue("scheduler", "kyber");
    let before = lo.settings();
    let j = tempfile::tempdir().unwrap();
    let tags = std::fs::read_to_string(format!("/sys/block/{}/mq/0/nr_tags", lo.name()))
        .unwrap()
        .trim()
        .to_string();
    let over = (tags.parse::<u64>().unwrap() + 1).to_string();
    let o = blktune(
        &[
            "set",
            lo.name(),
            "--scheduler",
            "none",
            "--nr-requests",
            &over,
        ],
        j.path(),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("'{over}'")) && err.contains(&format!("4 to {tags}")),
        "{err}"
    );
    assert_eq!(lo.settings(), before, "nothing was written");
    assert!(std::fs::read_dir(j.path()).unwrap().next().is_none());
    // The depth is the limit: exactly it is fine, and with a scheduler more is.
    set(
        &lo,
        j.path(),
        &["--scheduler", "none", "--nr-requests", &tags],
    );
    set(
        &lo,
        j.path(),
        &["--scheduler", "kyber", "--nr-requests", &over],
    );
    assert_eq!(lo.queue("nr_requests"), over);
    revert(&lo, j.path());
}

#[test]
fn revert_all_as_an_ordinary_user_is_one_line_and_fails() {
    if !require_root("revert_all_as_an_ordinary_user_is_one_line_and_fails")
        || !require_tool(
            "revert_all_as_an_ordinary_user_is_one_line_and_fails",
            "setpriv",
        )
    {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    set(&lo, j.path(), &["--nr-requests", "64"]);
    let bin_dir = tempfile::tempdir().unwrap();
    let bin = public_binary(bin_dir.path());
    // Both a private journal directory and a readable one with private entries.
    for mode in [0o700, 0o755] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(j.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        let o = as_nobody(&bin)
            .args(["revert", "--all"])
            .env("BLKTUNE_JOURNAL_DIR", j.path())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{mode:o}: {err}");
        assert_eq!(err.lines().count(), 1, "{mode:o}: {err}");
        assert!(
            err.contains("permission denied") && err.contains("needs root"),
            "{err}"
        );
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    }
    assert_eq!(lo.queue("nr_requests"), "64");
    revert(&lo, j.path());
    // Nothing left: says so and exits 0 (1 with --strict).
    let o = blktune(&["revert", "--all"], j.path());
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("nothing to revert"), "{}", stdout(&o));
    let o = blktune(&["revert", "--all", "--strict"], j.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nothing to revert"), "{}", stderr(&o));
}

/// Issue 11 item 10 / issue 13: a value the kernel would clamp is refused
/// with its range before anything is written; one it rounds is said.
#[test]
fn a_clamped_value_is_refused_and_a_rounded_one_is_said() {
    if !require_root("a_clamped_value_is_refused_and_a_rounded_one_is_said") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    lo.set_queue("scheduler", "mq-deadline");
    let before = lo.settings();
    let o = blktune(&["set", lo.name(), "-t", "front_merges=7"], j.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("front_merges '7' is out of range: 0 to 1"),
        "{}",
        stderr(&o)
    );
    let o = blktune(
        &[
            "set",
            lo.name(),
            "-s",
            "bfq",
            "-t",
            "slice_idle=9999999999999999999",
        ],
        j.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(lo.settings(), before, "nothing may be written");
    assert!(std::fs::read_dir(j.path()).unwrap().next().is_none());
    let o = set(&lo, j.path(), &["-t", "read_expire=250"]);
    let stored = lo.queue("iosched/read_expire");
    let line = format!(
        "{}: kernel rounded read_expire 250 -> {stored} ms",
        lo.name()
    );
    if stored == "250" {
        assert!(!stdout(&o).contains("kernel rounded"), "{}", stdout(&o));
    } else {
        assert!(stdout(&o).contains(&line), "{}", stdout(&o));
    }
    revert(&lo, j.path());
}

/// Is there no entry, temp or lock file in the journal `j`?
fn journal_is_empty(j: &Path) -> Result<(), Vec<std::ffi::OsString>> {
    let names: Vec<_> = std::fs::read_dir(j)
        .map(|rd| rd.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    if names.is_empty() { Ok(()) } else { Err(names) }
}

#[test]
fn two_sets_at_once_never_lose_the_original() {
    if !require_root("two_sets_at_once_never_lose_the_original") {
        return;
    }
    // The reproduction: A and B, started 0-40 ms apart, change the
    // same device. In the issue A's change failed mid-way (timeout_sync=-1)
    // and its rollback deleted the entry B relied on, or B's rollback undid
    // A's switch: 9 runs in 30 ended changed with an empty journal. The
    // catalogue now refuses that value before any write, so here both
    // changes succeed; whichever takes the device's lock second waits for
    // the first, and a revert always ends at the original.
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let original = lo.settings();
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_blktune"))
            .args(args)
            .env("BLKTUNE_JOURNAL_DIR", j.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for run in 0..20u64 {
        let a = spawn(&["set", lo.name(), "-s", "bfq", "-t", "slice_idle=0"]);
        std::thread::sleep(Duration::from_millis(run * 2 % 41));
        let b = spawn(&[
            "set",
            lo.name(),
            "-s",
            "kyber",
            "--nr-requests",
            "64",
            "--read-ahead-kb",
            "512",
        ]);
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        // The second waits for the first's lock: both changes are made.
        assert!(a.status.success(), "run {run}: A: {}", stderr(&a));
        assert!(b.status.success(), "run {run}: B: {}", stderr(&b));
        let last = lo.active_scheduler();
        assert!(last == "kyber" || last == "bfq", "run {run}: {last}");
        let e = blktune_core::journal::Journal::new(j.path())
            .load(lo.name())
            .unwrap()
            .unwrap_or_else(|| panic!("run {run}: the original was lost"));
        assert_eq!(e.original.scheduler.as_deref(), Some("none"), "run {run}");
        let o = blktune(&["revert", "--all"], j.path());
        assert!(o.status.success(), "run {run}: {}", stderr(&o));
        assert_eq!(
            lo.settings(),
            original,
            "run {run}: not back at the original"
        );
        journal_is_empty(j.path()).unwrap_or_else(|n| panic!("run {run}: left {n:?}"));
    }
}

#[test]
fn a_killed_runs_temp_file_never_blocks_a_later_set() {
    if !require_root("a_killed_runs_temp_file_never_blocks_a_later_set") {
        return;
    }
    // A run killed between writing its temp file and publishing it leaves
    // `.loopN.json.tmp<pid>`; a later run that gets the same pid failed
    // with 'File exists'. Plant one for each of the next pids.
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for pid in last..last + 300 {
        std::fs::write(j.path().join(format!(".{}.json.tmp{pid}", lo.name())), "{").unwrap();
    }
    set(&lo, j.path(), &["--nr-requests", "64"]);
    assert_eq!(lo.queue("nr_requests"), "64");
    revert(&lo, j.path());
    assert_eq!(lo.queue("nr_requests"), "128");
    journal_is_empty(j.path()).unwrap_or_else(|n| panic!("left {n:?}"));
}

#[test]
fn revert_all_with_a_closed_stdout_puts_every_device_back() {
    if !require_root("revert_all_with_a_closed_stdout_puts_every_device_back") {
        return;
    }
    let (l1, l2) = (TestLoop::new(64), TestLoop::new(64));
    let j = tempfile::tempdir().unwrap();
    let run = |stdout: Stdio| {
        Command::new(env!("CARGO_BIN_EXE_blktune"))
            .args(["revert", "--all"])
            .env("BLKTUNE_JOURNAL_DIR", j.path())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    };
    // A reader that went away (`blktune revert --all | head -0`), and a full disk.
    for how in ["closed pipe", "/dev/full"] {
        let (o1, o2) = (l1.settings(), l2.settings());
        set(&l1, j.path(), &["-s", "kyber", "--nr-requests", "64"]);
        set(&l2, j.path(), &["--read-ahead-kb", "1024"]);
        let stdout = match how {
            "closed pipe" => {
                let (r, w) = std::io::pipe().unwrap();
                drop(r);
                Stdio::from(w)
            }
            _ => Stdio::from(std::fs::File::create("/dev/full").unwrap()),
        };
        let o = run(stdout);
        let err = stderr(&o);
        assert_eq!(l1.settings(), o1, "{how}: {err}");
        assert_eq!(l2.settings(), o2, "{how}: {err}");
        journal_is_empty(j.path()).unwrap_or_else(|n| panic!("{how}: left {n:?}"));
        // Everything was put back: exit 0; a full disk is worth a line.
        assert_eq!(o.status.code(), Some(0), "{how}: {err}");
        if how == "/dev/full" {
            assert!(err.contains("could not print"), "{err}");
        }
    }
}

/// Every file of `dev` (under `/sys/block/DEV/`) a traced run opened, in
/// order, from `strace -f -e trace=openat,open` output.
fn opened_under(trace: &str, dev: &str) -> Vec<String> {
    let prefix = format!("\"/sys/block/{dev}/");
    trace
        .lines()
        .filter(|l| l.contains("openat(") || l.contains("open("))
        .filter_map(|l| {
            let start = l.find(&prefix)? + 1;
            let len = l[start..].find('"')?;
            Some(l[start..start + len].to_string())
        })
        .collect()
}

#[test]
fn a_change_reads_the_device_once_and_keeps_what_it_read() {
    let test = "a_change_reads_the_device_once_and_keeps_what_it_read";
    if !require_root(test) || !require_tool(test, "strace") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let t = tempfile::tempdir().unwrap();
    let trace = t.path().join("trace");
    let o = Command::new("strace")
        .args(["-f", "-e", "trace=openat,open", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_blktune"))
        .args(["set", lo.name(), "-s", "kyber"])
        .env("BLKTUNE_JOURNAL_DIR", j.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lo.active_scheduler(), "kyber");
    let opens = opened_under(&std::fs::read_to_string(&trace).unwrap(), lo.name());
    let sched = format!("/sys/block/{}/queue/scheduler", lo.name());
    let n_sched = opens.iter().filter(|p| **p == sched).count();
    // Read once, write, read back: nothing re-read.
    assert!(
        n_sched <= 3,
        "queue/scheduler opened {n_sched} times: {opens:#?}"
    );
    // The first read (scheduler, nr_requests, read_ahead_kb, iosched/, the
    // queue settings), the device number for the journal, a diskseq check
    // before each write, and after the switch what it reset (nr_requests,
    // the new tunables, the queue settings: bfq turns write-back
    // throttling off).
    let knobs = blktune_core::sched::QUEUE_KNOBS.len();
    assert!(
        opens.len() <= 16 + 2 * knobs,
        "{} opens under the device: {opens:#?}",
        opens.len()
    );
    // What it kept is still the truth: the output shows the reset nr_requests.
    assert!(stdout(&o).contains("nr_requests"), "{}", stdout(&o));
    // What it kept after writes with side effects is what the kernel has:
    // the switch resets the tunables, nr_requests=64 recomputes
    // mq-deadline's async_depth (64 on 6.18).
    let o = set(
        &lo,
        j.path(),
        &[
            "-s",
            "mq-deadline",
            "-t",
            "fifo_batch=8",
            "--nr-requests",
            "64",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let after = &v["after"];
    let mut kept = vec![
        (
            "scheduler".to_string(),
            after["scheduler"].as_str().unwrap().to_string(),
        ),
        ("nr_requests".into(), after["nr_requests"].to_string()),
        ("read_ahead_kb".into(), after["read_ahead_kb"].to_string()),
    ];
    for (k, val) in after["tunables"].as_object().unwrap() {
        kept.push((format!("iosched/{k}"), val.as_str().unwrap().to_string()));
    }
    assert_eq!(kept, lo.settings(), "kept != read: {v:#}");
    revert(&lo, j.path());
    assert_eq!(lo.active_scheduler(), "none");
}
