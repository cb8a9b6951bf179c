//! Every bad input of the CLI on fake trees: one line on stderr naming the
//! device and the value, exit 2 for usage errors and 1 for failures, and the
//! tree exactly as it was. (Not-root and real-device cases: `set_real.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::fake::{FakeDisk, FakeTree};
use std::collections::BTreeMap;
use std::io::Read;
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
        tree.add(&FakeDisk::new("sda").dev(8, 0).partitions(&["sda1"]))
            .unwrap();
        tree.add(&FakeDisk::new("zram0").dev(252, 0).no_queue())
            .unwrap();
        tree.add(&FakeDisk::new("vda").dev(254, 0)).unwrap();
        Self { dir, tree }
    }

    fn journal(&self) -> PathBuf {
        self.dir.path().join("journal")
    }

    fn run(&self, args: &[&str]) -> Output {
        let root = self.dir.path().join("root");
        Command::new(env!("CARGO_BIN_EXE_blktune"))
            .args(args)
            .arg("--sysfs-root")
            .arg(root.join("sys"))
            .arg("--proc-root")
            .arg(root.join("proc"))
            .env("BLKTUNE_JOURNAL_DIR", self.journal())
            .output()
            .unwrap()
    }

    /// Every file of the fake sysfs with its content.
    fn state(&self) -> BTreeMap<PathBuf, String> {
        fn walk(p: &Path, out: &mut BTreeMap<PathBuf, String>) {
            for e in std::fs::read_dir(p).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    walk(&e.path(), out);
                } else {
                    let mut s = String::new();
                    // FIFOs and unreadable files are recorded as such.
                    let _ =
                        std::fs::File::open(e.path()).and_then(|mut f| f.read_to_string(&mut s));
                    out.insert(e.path(), s);
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.dir.path().join("root/sys"), &mut out);
        out
    }

    /// Run a command that must fail with `code`, print exactly one line that
    /// contains every one of `needles`, and leave the tree as it was.
    fn fails(&self, args: &[&str], code: i32, needles: &[&str]) -> String {
        let before = self.state();
        let o = self.run(args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(code), "{args:?}: stderr {err:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err:?}");
        assert!(err.starts_with("blktune: "), "{err:?}");
        for n in needles {
            assert!(err.contains(n), "{args:?}: {err:?} does not mention {n:?}");
        }
        assert_eq!(self.state(), before, "{args:?} changed the tree");
        assert!(
            !self.journal().exists() || std::fs::read_dir(self.journal()).unwrap().count() == 0,
            "{args:?} left a journal entry"
        );
        err
    }
}

#[test]
fn unknown_device() {
    let f = Fixture::new();
    f.fails(
        &["set", "sdz", "--scheduler", "kyber"],
        2,
        &["'sdz'", "blktune list"],
    );
    f.fails(&["watch", "-c", "1", "sdz"], 2, &["'sdz'"]);
    // Neither a device nor in the journal: a typo, like set's (exit 2).
    f.fails(
        &["revert", "sdz"],
        2,
        &["unknown device 'sdz'", "blktune list"],
    );
    // A device with nothing journalled: nothing to revert (exit 0, or 1
    // with --strict; `revert_exits.rs`).
    f.fails(
        &["revert", "--strict", "sda"],
        1,
        &["sda", "nothing to revert"],
    );
}

#[test]
fn names_with_path_tricks_never_reach_another_path() {
    let f = Fixture::new();
    // A file the tricks would reach if names were joined blindly.
    std::fs::create_dir_all(f.dir.path().join("root/sys/vda/queue")).unwrap();
    for name in [
        "../vda",
        "sda/../../vda",
        "sda/../vda",
        "..",
        ".",
        "",
        "sda\nvda",
        "sda ",
    ] {
        let err = f.fails(
            &["set", name, "--scheduler", "kyber"],
            2,
            &["unknown device"],
        );
        assert!(!err.contains('\n') || err.ends_with('\n'));
    }
    f.fails(&["revert", "../../etc/passwd"], 2, &["not a device name"]);
}

#[test]
fn partition_where_a_disk_is_needed() {
    let f = Fixture::new();
    f.fails(
        &["set", "sda1", "--scheduler", "kyber"],
        2,
        &["'sda1'", "partition", "use 'sda'"],
    );
}

#[test]
fn device_without_a_scheduler() {
    let f = Fixture::new();
    f.fails(
        &["set", "zram0", "--scheduler", "kyber"],
        2,
        &["'zram0'", "no I/O scheduler"],
    );
    f.fails(&["set", "zram0", "--nr-requests", "64"], 2, &["'zram0'"]);
    f.fails(
        &["set", "zram0", "--tunable", "read_expire=1"],
        2,
        &["'zram0'"],
    );
    // read_ahead_kb is the one thing such a device has.
    let o = f.run(&["set", "zram0", "--read-ahead-kb", "256"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn unknown_scheduler_lists_the_available_ones() {
    let f = Fixture::new();
    f.fails(
        &["set", "sda", "--scheduler", "cfq"],
        2,
        &["'sda'", "'cfq'", "none, mq-deadline, kyber, bfq"],
    );
}

#[test]
fn values_out_of_range() {
    let f = Fixture::new();
    f.fails(
        &["set", "sda", "--nr-requests", "0"],
        2,
        &["'sda'", "nr_requests", "'0'", "4 to 2048"],
    );
    f.fails(
        &["set", "sda", "--nr-requests", "5000"],
        2,
        &["'sda'", "'5000'"],
    );
    f.fails(
        &["set", "sda", "--read-ahead-kb", "3"],
        2,
        &["'sda'", "read_ahead_kb", "'3'", "page"],
    );
    f.fails(
        &["set", "sda", "--read-ahead-kb", "4194304"],
        2,
        &["'sda'", "'4194304'"],
    );
    f.fails(
        &["set", "sda", "--tunable", "read_expire=soon"],
        2,
        &["'sda'", "read_expire", "'soon'"],
    );
    // clap's own parse errors are usage errors too (exit 2) and name the value.
    f.fails(&["set", "sda", "--nr-requests", "-1"], 2, &["'-1'"]);
    f.fails(&["set", "sda", "--nr-requests", "many"], 2, &["'many'"]);
    f.fails(
        &["set", "sda", "--tunable", "read_expire"],
        2,
        &["'read_expire'"],
    );
    f.fails(&["set", "sda"], 2, &["needs at least one of"]);
    f.fails(&["watch", "-i", "1ms", "sda"], 2, &["'1ms'"]);
    f.fails(&["watch", "-i", "soon", "sda"], 2, &["'soon'"]);
    // The probe's rate, in watch and in the tuner (checked before any screen).
    f.fails(
        &["watch", "--probe", "--probe-rate", "500", "sda"],
        2,
        &["'500'", "0.1 to 100"],
    );
    f.fails(&["--probe", "--probe-rate", "0"], 2, &["'0'", "0.1 to 100"]);
    f.fails(&["--probe-rate", "5"], 2, &["--probe"]);
}

#[test]
fn unknown_tunable_names_the_scheduler_and_its_tunables() {
    let f = Fixture::new();
    f.fails(
        &["set", "sda", "--tunable", "slice_idle=0"],
        2,
        &["'sda'", "'mq-deadline'", "'slice_idle'", "read_expire"],
    );
    // Tunables belong to the target scheduler, not the active one.
    f.fails(
        &[
            "set",
            "sda",
            "--scheduler",
            "kyber",
            "--tunable",
            "read_expire=100",
        ],
        2,
        &["'kyber'", "'read_expire'", "read_lat_nsec"],
    );
    f.fails(
        &["set", "sda", "--tunable", "../../../dev=1"],
        2,
        &["'sda'", "'../../../dev'"],
    );
}

#[test]
fn malformed_queue_files_fail_clearly() {
    let f = Fixture::new();
    std::fs::write(
        f.tree.dev_dir("sda").join("queue/scheduler"),
        "garbage\0here\n",
    )
    .unwrap();
    f.fails(
        &["set", "sda", "--scheduler", "kyber"],
        1,
        &["'sda'", "queue/scheduler", "unexpected content"],
    );
    // list still works and shows what it can, and says what it could not read.
    let o = f.run(&["list", "--all"]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("'sda': cannot read queue/scheduler: unexpected content 'garbage\\0here")
            && !err.contains("not listed"),
        "{err}"
    );
}

#[test]
fn malformed_diskstats_fail_clearly_and_odd_lines_are_skipped() {
    let f = Fixture::new();
    f.tree
        .set_diskstats_raw("this is not\na diskstats file\n")
        .unwrap();
    f.fails(
        &["watch", "-i", "100ms", "-c", "1", "sda"],
        1,
        &["diskstats", "expected 14, 18 or 20 columns"],
    );
    // One bad line among good ones: a warning once, numbers for the rest.
    f.tree
        .set_diskstats_raw("   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\nbroken line\n")
        .unwrap();
    let o = f.run(&["watch", "--json", "-i", "100ms", "-c", "2", "sda"]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("line 2"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.lines().count(), 2);
    // An unreadable diskstats (a directory) is a failure.
    let ds = f.dir.path().join("root/proc/diskstats");
    std::fs::remove_file(&ds).unwrap();
    std::fs::create_dir(&ds).unwrap();
    f.fails(&["watch", "-c", "1"], 1, &["diskstats"]);
}

#[test]
fn a_failing_step_rolls_back_and_drops_its_journal_entry() {
    let f = Fixture::new();
    // kyber's read_lat_nsec is a symlink to a file of ours: blktune never
    // writes through one, so the step after the scheduler switch fails.
    let target = f.dir.path().join("elsewhere");
    std::fs::write(&target, "12345\n").unwrap();
    let lat = f.tree.dev_dir("sda").join("queue/iosched/read_lat_nsec");
    std::os::unix::fs::symlink(&target, &lat).unwrap();
    let o = f.run(&[
        "set",
        "sda",
        "--scheduler",
        "kyber",
        "--tunable",
        "read_lat_nsec=64000",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("'sda'") && err.contains("'64000'") && err.contains("read_lat_nsec"),
        "{err}"
    );
    assert!(err.contains("rolled back"), "{err}");
    let sched = std::fs::read_to_string(f.tree.dev_dir("sda").join("queue/scheduler")).unwrap();
    assert_eq!(sched.trim(), "mq-deadline", "the scheduler was put back");
    assert_eq!(std::fs::read_dir(f.journal()).unwrap().count(), 0);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "12345\n");
}

/// A number the change writes, or a scheduler switch resets, that cannot be
/// read: its original could not be journalled. Refused before any write.
#[test]
fn an_unreadable_original_refuses_the_change() {
    let f = Fixture::new();
    // nr_requests as a directory: a switch would reset it.
    let nr = f.tree.dev_dir("sda").join("queue/nr_requests");
    std::fs::remove_file(&nr).unwrap();
    std::fs::create_dir(&nr).unwrap();
    f.fails(
        &["set", "sda", "--scheduler", "kyber"],
        1,
        &["'sda'", "queue/nr_requests"],
    );
    // read_ahead_kb that says something else than a number.
    let f = Fixture::new();
    let ra = f.tree.dev_dir("sda").join("queue/read_ahead_kb");
    std::fs::write(&ra, "abc\n").unwrap();
    f.fails(
        &["set", "sda", "--read-ahead-kb", "256"],
        1,
        &["'sda'", "queue/read_ahead_kb", "unexpected content 'abc"],
    );
    assert_eq!(std::fs::read_dir(f.journal()).map_or(0, |d| d.count()), 0);
}

#[test]
fn the_journal_is_written_before_anything_is_changed() {
    let f = Fixture::new();
    // A file where the journal directory should be: the journal cannot be written.
    std::fs::write(f.journal(), "").unwrap();
    let before = f.state();
    let o = f.run(&["set", "sda", "--scheduler", "kyber"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("journal") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(f.state(), before);
}

#[test]
fn list_json_into_a_closed_pipe_ends_quietly() {
    let f = Fixture::new();
    // Many devices, so the JSON is larger than a pipe buffer.
    for i in 0..400 {
        f.tree
            .add(&FakeDisk::new(&format!("loop{i}")).dev(7, i))
            .unwrap();
    }
    let root = f.dir.path().join("root");
    let mut child = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["list", "--json", "--all", "--sysfs-root"])
        .arg(root.join("sys"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    assert_eq!(&first, b"[");
    drop(child.stdout.take()); // like `head -1` exiting
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // and through a real shell pipeline
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "'{}' list --json --all --sysfs-root '{}' | head -1; echo \"rc=${{PIPESTATUS[0]}}\"",
            env!("CARGO_BIN_EXE_blktune"),
            root.join("sys").display()
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "[\nrc=0\n");
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn every_command_has_help_with_examples_and_there_is_a_version() {
    for cmd in [&[][..], &["list"], &["watch"], &["set"], &["revert"]] {
        let mut args: Vec<&str> = cmd.to_vec();
        args.push("--help");
        let o = Command::new(env!("CARGO_BIN_EXE_blktune"))
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success());
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("Examples:"), "{args:?}: {out}");
        assert!(out.contains("blktune "), "{args:?}");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("blktune {}", env!("CARGO_PKG_VERSION"))
    );
}

/// A hostile tree with a FIFO in an attribute's place (here `diskseq`,
/// which every change reads) never hangs blktune: every read through the
/// seam opens without blocking, so the FIFO reads as empty. (This test used
/// to pause blktune on such a FIFO to unplug the device between the journal
/// write and the first write; that pause is exactly what can no longer
/// happen. The tuner's own tests cover a device vanishing mid-change.)
#[test]
fn a_fifo_in_a_fake_tree_never_hangs_a_command() {
    let f = Fixture::new();
    let fifo = f.tree.dev_dir("sda").join("diskseq");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let root = f.dir.path().join("root");
    for args in [
        &["set", "sda", "--scheduler", "kyber"][..],
        &["list", "--json"],
        &["watch", "-c", "1", "-i", "100ms"],
    ] {
        let child = Command::new(env!("CARGO_BIN_EXE_blktune"))
            .args(args)
            .arg("--sysfs-root")
            .arg(root.join("sys"))
            .arg("--proc-root")
            .arg(root.join("proc"))
            .env("BLKTUNE_JOURNAL_DIR", f.journal())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let o = common::output_within(
            child,
            std::time::Duration::from_secs(30),
            &format!("{args:?} on a FIFO"),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.lines().count() <= 1, "{args:?}: {err}");
    }
}

#[test]
fn each_command_refuses_the_interval_its_help_does_not_offer() {
    let f = Fixture::new();
    // The tuner (and the demo, which runs it) samples at most every 10 s;
    // watch and record go up to an hour. Refused before anything starts.
    for (args, v) in [
        (&["-i", "11s"][..], "'11s'"),
        (&["--interval", "10001ms"], "'10001ms'"),
        (&["demo", "-i", "20s"], "'20s'"),
    ] {
        f.fails(args, 2, &[v, "100ms to 10s"]);
    }
    f.fails(&["-i", "50ms"], 2, &["'50ms'", "100ms to 10s"]);
    f.fails(&["watch", "-i", "2h", "sda"], 2, &["'2h'", "100ms to 1h"]);
    f.fails(
        &["record", "-i", "3601s", "/dev/null"],
        2,
        &["'3601s'", "100ms to 1h"],
    );
}

#[test]
fn watch_count_zero_is_a_usage_error() {
    let f = Fixture::new();
    f.fails(&["watch", "-c", "0", "sda"], 2, &["'0'", "at least 1"]);
    f.fails(&["watch", "-c", "x", "sda"], 2, &["'x'"]);
}

#[test]
fn set_json_shows_the_queue_as_list_json_does_and_ms_as_a_number() {
    let f = Fixture::new();
    let o = f.run(&["set", "sda", "--read-ahead-kb", "256", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let set: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let o = f.run(&["list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let sda = list
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "sda")
        .unwrap();
    let after = set["after"].as_object().unwrap();
    for (k, v) in after {
        assert_eq!(&sda[k], v, "after.{k} differs from list --json");
    }
    let keys: Vec<&str> = after.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "nr_requests",
            "read_ahead_kb",
            "scheduler",
            "schedulers",
            "tunables"
        ]
    );
    assert_eq!(set["before"]["read_ahead_kb"], 128);
    assert!(set["kernel_time_ms"].is_f64(), "{set}");
    assert!(set.get("kernel_time").is_none());
    assert_eq!(
        set["changes"],
        serde_json::json!([{"attr": "read_ahead_kb", "before": "128", "after": "256"}])
    );
}

#[test]
fn list_all_shows_the_size_of_partitions() {
    let f = Fixture::new();
    let o = f.run(&["list", "--all"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let row = out
        .lines()
        .find(|l| l.starts_with("└─sda1"))
        .unwrap_or_else(|| panic!("{out}"));
    // The fake disk is 20 GiB with one partition over all of it.
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[..3], ["└─sda1", "part", "20G"], "{out}");
}

#[test]
fn a_bad_option_value_points_to_its_subcommands_help() {
    let f = Fixture::new();
    for (args, cmd) in [
        (&["set", "sda", "--nr-requests", "abc"][..], "set"),
        (&["watch", "-i", "x", "sda"], "watch"),
        (&["bench", "--dwell", "x", "sda"], "bench"),
        (&["set", "sda", "--bogus"], "set"),
    ] {
        f.fails(args, 2, &[&format!("(see 'blktune {cmd} --help')")]);
    }
    // An option of the tuner itself points to the top-level help.
    f.fails(&["-i", "x"], 2, &["(see 'blktune --help')"]);
}

/// A disk whose scheduler file does not parse is not listed as if it had
/// none without a word: `list` names the file on stderr.
#[test]
fn list_says_why_a_disk_with_a_malformed_scheduler_file_is_left_out() {
    let f = Fixture::new();
    std::fs::write(
        f.tree.dev_dir("sda").join("queue/scheduler"),
        "none mq-deadline kyber\n",
    )
    .unwrap();
    let o = f.run(&["list"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("'sda': cannot read queue/scheduler: unexpected content")
            && err.contains("not listed (--all lists it)"),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&o.stdout).contains("sda "));
    // `--all` lists it, with the same reason, from the read it listed.
    let o = f.run(&["list", "--all"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(
        err,
        "blktune: warning: 'sda': cannot read queue/scheduler: unexpected content \
         'none mq-deadline kyber'\n"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("sda "));
}
