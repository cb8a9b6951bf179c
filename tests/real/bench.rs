//! `blktune bench` on real loop devices (root only): a full shoot-out on a
//! scratch device, restores on DEVICEs, refusals, and clean-up after
//! SIGTERM and after a failed run.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Every queue setting blktune may touch, as the kernel reports it.
fn queue_state(name: &str) -> BTreeMap<String, String> {
    let q = PathBuf::from(format!("/sys/block/{name}/queue"));
    let mut m = BTreeMap::new();
    for a in ["scheduler", "nr_requests", "read_ahead_kb"] {
        m.insert(
            a.to_string(),
            std::fs::read_to_string(q.join(a)).unwrap().trim().into(),
        );
    }
    if let Ok(rd) = std::fs::read_dir(q.join("iosched")) {
        for e in rd {
            let e = e.unwrap();
            let v = std::fs::read_to_string(e.path()).unwrap_or_default();
            m.insert(
                format!("iosched/{}", e.file_name().to_string_lossy()),
                v.trim().into(),
            );
        }
    }
    m
}

fn dir_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

/// `bench --scratch SIZE --scratch-dir DIR` followed by `rest`.
fn scratch_bench<'a>(size: &'a str, dir: &'a Path, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["bench", "--scratch", size, "--scratch-dir"];
    args.push(dir.to_str().unwrap());
    args.extend(rest);
    args
}

/// The scratch device and its file in `dir` are both gone.
fn assert_scratch_removed(dir: &Path) {
    assert!(loop_gone(dir), "scratch loop device left behind");
    assert!(dir_is_empty(dir), "scratch file left behind");
}

/// Give `lo` custom settings (`--scheduler S`, `-t NAME=VALUE`,
/// `--nr-requests N`, written in that order as blktune would) straight
/// through sysfs, so that a restore to defaults would show; the queue state
/// after it. Not with `blktune set`: a device changed with one journal
/// directory is refused a change (the bench's) from another, as it has one
/// set of originals (issue 37); these are the device's own settings.
fn customise(lo: &TestLoop, args: &[&str]) -> BTreeMap<String, String> {
    for pair in args.chunks(2) {
        match pair {
            ["--scheduler", s] => lo.set_queue("scheduler", s),
            ["-t", kv] => {
                let (k, v) = kv.split_once('=').unwrap();
                lo.set_queue(&format!("iosched/{k}"), v);
            }
            ["--nr-requests", n] => lo.set_queue("nr_requests", n),
            other => panic!("customise: {other:?}"),
        }
    }
    queue_state(lo.name())
}

#[test]
fn shootout_on_a_scratch_device_measures_every_scheduler_in_every_round() {
    if !require_root("shootout_on_a_scratch_device_measures_every_scheduler_in_every_round") {
        return;
    }
    let dir = temp_in_target();
    let j = tempfile::tempdir().unwrap();
    let o = blktune(
        &scratch_bench(
            "256M",
            dir.path(),
            &[
                "--dwell",
                "3s",
                "--rounds",
                "2",
                "--schedulers",
                "none,mq-deadline,kyber,bfq",
                "--load",
                "mixed",
                "--json",
            ],
        ),
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["scratch"], true);
    assert_eq!(v["load"]["mix"], "mixed");
    let ms = v["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 8);
    let order: Vec<(u64, &str)> = ms
        .iter()
        .map(|m| {
            (
                m["block"].as_u64().unwrap(),
                m["configuration"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            (1, "none"),
            (1, "mq-deadline"),
            (1, "kyber"),
            (1, "bfq"),
            (2, "bfq"),
            (2, "kyber"),
            (2, "mq-deadline"),
            (2, "none"),
        ],
        "block 2 runs in reverse"
    );
    let mut w_total = 0.0;
    let mut load_writes = 0;
    for m in ms {
        let f = &m["figures"];
        let s = m["configuration"].as_str().unwrap();
        assert!(
            m["settings"].as_str().unwrap().starts_with(s),
            "measured under {s}: {m}"
        );
        assert!(f["r_s"].as_f64().unwrap() > 0.0, "{s}: {f}");
        // Writes are not asserted per measurement: bfq gives sync reads
        // priority and can starve the 1 MiB writer for a whole 3 s dwell on a
        // loaded machine (seen here); that is a real result, not a bug.
        // Across the whole run the writer must have been measured.
        w_total += f["w_s"].as_f64().unwrap();
        assert!(f["mb_s"].as_f64().unwrap() > 0.0, "{s}: {f}");
        assert!(f["util"].as_f64().unwrap() > 0.0, "{s}: {f}");
        let reads = &f["load"]["reads"];
        assert!(reads["count"].as_u64().unwrap() > 0, "{s}: {f}");
        let (p50, p99, p999) = (
            reads["p50"].as_f64().unwrap(),
            reads["p99"].as_f64().unwrap(),
            reads["p999"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p99 >= p50 && p999 >= p99, "{s}: {reads}");
        assert!(
            p99 < 10_000.0,
            "{s}: a p99 over 10 s is not plausible: {reads}"
        );
        // `writes` is null when the writer completed nothing in this dwell.
        load_writes += f["load"]["writes"]["count"].as_u64().unwrap_or(0);
        assert_eq!(f["load"]["errors"], 0);
        assert!((m["dwell_s"].as_f64().unwrap() - 3.0).abs() < 0.5);
    }
    assert!(w_total > 0.0, "no write was measured in the whole run");
    assert!(load_writes > 0, "the load's writer completed nothing");
    let scheds = v["configurations"].as_array().unwrap();
    assert_eq!(scheds.len(), 4);
    for s in scheds {
        assert_eq!(s["rounds"].as_array().unwrap().len(), 2, "{s}");
    }
    // The engine looked once, at the end, at the leader against the three
    // others; a winner only if it decided one.
    let a = &v["analysis"];
    assert_eq!(
        (a["look"].as_u64(), a["looks"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(a["comparisons"].as_array().unwrap().len(), 3, "{a}");
    let headline = v["verdict"]["headline"].as_str().unwrap();
    match v["verdict"]["winner"].as_str() {
        Some(w) => {
            assert!(headline.starts_with(&format!("winner for read-latency (r_await): {w}, ")))
        }
        None => assert!(
            headline.starts_with("no winner for read-latency (r_await): "),
            "{headline}"
        ),
    }
    // Every round carries its controls: the load on the device and the system.
    for m in ms {
        assert!(m["controls"]["load"]["iops"].as_f64().unwrap() > 0.0, "{m}");
        assert!(
            m["controls"]["system"]["cpu_busy_pct"].as_f64().is_some(),
            "{m}"
        );
    }
    assert!(
        v["final_settings"]
            .as_str()
            .unwrap()
            .starts_with("original settings restored"),
        "{v}"
    );
    assert_scratch_removed(dir.path());
    assert!(
        dir_is_empty(j.path()),
        "the bench's journal entry is cleared"
    );
}

#[test]
fn read_load_bench_on_a_device_restores_its_custom_settings() {
    if !require_root("read_load_bench_on_a_device_restores_its_custom_settings") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let before = customise(
        &lo,
        &[
            "--scheduler",
            "mq-deadline",
            "-t",
            "read_expire=100",
            "--nr-requests",
            "48",
        ],
    );
    assert_eq!(before["iosched/read_expire"], "100");

    // Refusals first: nothing may change.
    let o = blktune(
        &["bench", lo.name(), "--load", "mixed", "--dwell", "1s"],
        j.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("refusing to write to '{}'", lo.name()))
            && stderr(&o).contains("created itself"),
        "{}",
        stderr(&o)
    );
    let o = blktune(
        &["bench", lo.name(), "--load", "randread", "--dwell", "1s"],
        j.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--allow-read-load"), "{}", stderr(&o));
    assert_eq!(queue_state(lo.name()), before);

    let o = blktune(
        &[
            "bench",
            lo.name(),
            "--load",
            "randread",
            "--allow-read-load",
            "--dwell",
            "1s",
            "--settle",
            "200ms",
            "--rounds",
            "1",
            "--schedulers",
            "none,kyber",
            "--goal",
            "p99",
        ],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // Root with BPF: ranked by the kernel's p99 of the device's reads (one
    // round each gives no interval: no winner).
    assert!(out.contains("no winner for p99 (kernel r_p99): "), "{out}");
    assert!(out.lines().any(|l| l.starts_with("kyber")), "{out}");
    assert_eq!(queue_state(lo.name()), before, "settings restored exactly");
    assert!(dir_is_empty(j.path()));
}

/// `--export` writes only a winner the comparison decided: an idle device
/// (nothing to measure) gives none, and no file is written. (A decided
/// winner's rule, and its refusal to clobber: `tests/fake/bench_verdicts.rs`.)
#[test]
fn export_writes_no_rule_without_a_decided_winner() {
    if !require_root("export_writes_no_rule_without_a_decided_winner") {
        return;
    }
    let lo = TestLoop::new(16);
    let j = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let rules = out.path().join("61-blktune-test.rules");
    let before = queue_state(lo.name());
    let o = blktune(
        &[
            "bench",
            lo.name(),
            "--load",
            "none",
            "--dwell",
            "500ms",
            "--settle",
            "0s",
            "--rounds",
            "1",
            "--schedulers",
            "none,kyber",
            "--export",
            "--export-output",
            rules.to_str().unwrap(),
        ],
        j.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "no rule written: the shoot-out decided no winner (no winner for read-latency"
        ),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("no winner for read-latency (r_await): "),
        "{}",
        stdout(&o)
    );
    assert!(!rules.exists());
    assert_eq!(queue_state(lo.name()), before);
    assert!(dir_is_empty(j.path()));
}

#[test]
fn write_loads_on_the_vm_disk_are_refused_before_anything_changes() {
    if !require_root("write_loads_on_the_vm_disk_are_refused_before_anything_changes") {
        return;
    }
    if !Path::new("/sys/block/vda").exists() {
        eprintln!("SKIPPED: no vda here");
        return;
    }
    let j = tempfile::tempdir().unwrap();
    let before = queue_state("vda");
    for load in ["mixed", "randrw"] {
        let o = blktune(&["bench", "vda", "--load", load], j.path());
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("refusing to write to 'vda'"),
            "{}",
            stderr(&o)
        );
        assert_eq!(stderr(&o).lines().count(), 1, "one line: {}", stderr(&o));
    }
    assert_eq!(queue_state("vda"), before);
    assert!(dir_is_empty(j.path()));
}

/// Spawn `blktune bench ARGS`, wait for `ready`, send `sig`, return (exit code, stderr).
fn signal_midway(
    sig: Signal,
    args: &[&str],
    journal: &Path,
    ready: impl Fn() -> bool,
) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(args)
        .env("BLKTUNE_JOURNAL_DIR", journal)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ended = None;
    let going = wait_until(TIMEOUT, || {
        ended = child.try_wait().unwrap();
        ended.is_some() || ready()
    });
    if let Some(st) = ended {
        let o = child.wait_with_output().unwrap();
        panic!("bench ended ({st}) before it got going: {}", stderr(&o));
    }
    assert!(going, "bench never got going");
    // Aim at the measurement of the first scheduler. Not a wait for a
    // condition: the handler is installed first, so a signal at any moment
    // must cancel cleanly; a late one (busy machine) is just as valid.
    std::thread::sleep(Duration::from_millis(1500));
    kill(Pid::from_raw(child.id() as i32), sig).unwrap();
    let o = child.wait_with_output().unwrap();
    (o.status.code(), stderr(&o))
}

#[test]
fn sigterm_mid_bench_removes_the_scratch_device_and_file() {
    if !require_root("sigterm_mid_bench_removes_the_scratch_device_and_file") {
        return;
    }
    let dir = temp_in_target();
    let j = tempfile::tempdir().unwrap();
    let (code, err) = signal_midway(
        Signal::SIGTERM,
        &scratch_bench(
            "64M",
            dir.path(),
            &["--dwell", "10s", "--schedulers", "none,kyber"],
        ),
        j.path(),
        || loop_over(dir.path()),
    );
    assert_eq!(code, Some(130), "{err}");
    assert!(
        err.contains("cancelled; original settings restored"),
        "{err}"
    );
    assert_scratch_removed(dir.path());
    assert!(dir_is_empty(j.path()));
}

#[test]
fn ctrl_c_mid_bench_restores_the_device_settings() {
    if !require_root("ctrl_c_mid_bench_restores_the_device_settings") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let before = customise(&lo, &["--scheduler", "bfq", "--nr-requests", "40"]);
    let name = lo.name().to_string();
    let (code, err) = signal_midway(
        Signal::SIGINT,
        &[
            "bench",
            lo.name(),
            "--load",
            "randread",
            "--allow-read-load",
            "--dwell",
            "10s",
            "--schedulers",
            "none,kyber",
        ],
        j.path(),
        // Switched away from bfq: the bench is under way.
        || !queue_state(&name)["scheduler"].contains("[bfq]"),
    );
    assert_eq!(code, Some(130), "{err}");
    assert_eq!(queue_state(lo.name()), before);
    assert!(dir_is_empty(j.path()));
}

#[test]
fn an_unknown_scheduler_is_refused_before_a_scratch_device_is_made() {
    if !require_root("an_unknown_scheduler_is_refused_before_a_scratch_device_is_made") {
        return;
    }
    // The list of schedulers comes from any loop device: make sure there is one.
    let _lo = TestLoop::new(16);
    let dir = temp_in_target();
    let j = tempfile::tempdir().unwrap();
    let o = blktune(
        &scratch_bench("32M", dir.path(), &["--schedulers", "none,cfq"]),
        j.path(),
    );
    // A sweep of a killed earlier run's device may say so first; the error is one line.
    let err: String = stderr(&o)
        .lines()
        .filter(|l| !l.starts_with("blktune: removed leftover"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    // No device is named: the check ran before the scratch device existed.
    assert!(
        err.starts_with("blktune: unknown scheduler 'cfq' for a scratch loop device; available: ")
            && err.contains("mq-deadline"),
        "{err}"
    );
    assert_scratch_removed(dir.path());
}

#[test]
fn not_root_is_exit_1_for_bench_and_demo_alike() {
    if !require_root("not_root_is_exit_1_for_bench_and_demo_alike")
        || !require_tool("not_root_is_exit_1_for_bench_and_demo_alike", "setpriv")
    {
        return;
    }
    let bin_dir = tempfile::tempdir().unwrap();
    let bin = public_binary(bin_dir.path());
    let dir = temp_in_target();
    let d = dir.path().to_str().unwrap();
    for args in [
        vec!["bench", "--scratch", "32M", "--scratch-dir", d],
        vec!["demo", "--dir", d],
    ] {
        let o = as_nobody(&bin).args(&args).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("needs root"), "{args:?}: {err}");
    }
    assert_scratch_removed(dir.path());
}

#[test]
fn not_root_bench_of_a_device_is_one_line_and_changes_nothing() {
    if !require_root("not_root_bench_of_a_device_is_one_line_and_changes_nothing")
        || !require_tool(
            "not_root_bench_of_a_device_is_one_line_and_changes_nothing",
            "setpriv",
        )
    {
        return;
    }
    let lo = TestLoop::new(16);
    let before = lo.settings();
    let bin_dir = tempfile::tempdir().unwrap();
    let bin = public_binary(bin_dir.path());
    let o = as_nobody(&bin)
        .args(["bench", lo.name(), "--dwell", "1s", "--rounds", "1"])
        .env("BLKTUNE_JOURNAL_DIR", bin_dir.path())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("needs root") && err.contains(lo.name()),
        "{err}"
    );
    assert!(!err.contains("RESTORE"), "{err}");
    assert_eq!(lo.settings(), before);
}

/// Issue 11 item 8: a device detached and re-attached (to another file)
/// during a bench is another device (new diskseq): the bench stops, says so,
/// exits non-zero, and writes nothing to the new device, not even the restore.
#[test]
fn a_device_re_created_mid_bench_stops_it_and_gets_nothing_written() {
    if !require_root("a_device_re_created_mid_bench_stops_it_and_gets_nothing_written")
        || !require_tool(
            "a_device_re_created_mid_bench_stops_it_and_gets_nothing_written",
            "losetup",
        )
    {
        return;
    }
    retry_node_races(
        "a_device_re_created_mid_bench_stops_it_and_gets_nothing_written",
        re_created_mid_bench,
    );
}

/// One run; `false` when another process took the loop node between the
/// detach and the re-attach.
fn re_created_mid_bench() -> bool {
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    lo.set_queue("scheduler", "bfq");
    let name = lo.name().to_string();
    let dev = format!("/dev/{name}");
    let child = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args([
            "bench",
            &name,
            "--schedulers",
            "mq-deadline,kyber",
            "--settle",
            "1s",
            "--dwell",
            "2s",
        ])
        .env("BLKTUNE_JOURNAL_DIR", j.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Switched away from bfq: the bench is under way (a passive bench holds
    // no file open, so the detach is immediate).
    assert!(
        wait_until(TIMEOUT, || !queue_state(&name)["scheduler"]
            .contains("[bfq]")),
        "bench never got going"
    );
    // Opened the bench still while its device is swapped, so that it sees
    // the new device only once that has its own settings.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let signal = |s| nix::sys::signal::kill(pid, s).unwrap();
    signal(nix::sys::signal::Signal::SIGSTOP);
    let detach = Command::new("losetup")
        .arg("-d")
        .arg(&dev)
        .output()
        .unwrap();
    assert!(
        detach.status.success(),
        "{}",
        String::from_utf8_lossy(&detach.stderr)
    );
    let other_dir = temp_in_target();
    let other = other_dir.path().join("other.img");
    std::fs::File::create(&other)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    // Only a device of our own gets settings: the freed number may have
    // gone to another process, and then nothing is written to it.
    let again = common::reattach(&name, &other);
    if again.is_some() {
        // The new device's own settings.
        lo.set_queue("scheduler", "none");
        lo.set_queue("nr_requests", "100");
    }
    signal(nix::sys::signal::Signal::SIGCONT);
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    if again.is_none() {
        // Another process took the free loop number first: try again.
        eprintln!("{dev} was taken before the re-attach");
        return false;
    }
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("re-created"), "{err}");
    assert!(
        err.contains("nothing was restored onto the new device"),
        "{err}"
    );
    let now = queue_state(&name);
    assert!(now["scheduler"].contains("[none]"), "{now:?}\n{err}");
    assert_eq!(now["nr_requests"], "100", "{err}");
    true
}
