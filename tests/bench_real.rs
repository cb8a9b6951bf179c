//! `blktune bench` on real loop devices (root only): a full shoot-out on a
//! scratch device, restores on DEVICEs, refusals, and clean-up after
//! SIGTERM and after a failed run.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;
use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn temp_in_target() -> tempfile::TempDir {
    let base =
        std::env::var_os("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    tempfile::tempdir_in(base).unwrap()
}

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

/// Wait up to 3 s for any loop device over a file in `dir` to go away.
fn loop_gone(dir: &Path) -> bool {
    for _ in 0..30 {
        if !loop_over(dir) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn dir_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn shootout_on_a_scratch_device_measures_every_scheduler_in_every_round() {
    if !require_root("shootout_on_a_scratch_device_measures_every_scheduler_in_every_round") {
        return;
    }
    let dir = temp_in_target();
    let j = tempfile::tempdir().unwrap();
    let scratch_dir = dir.path().to_str().unwrap();
    let o = blktune(
        &[
            "bench",
            "--scratch",
            "256M",
            "--scratch-dir",
            scratch_dir,
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
                m["round"].as_u64().unwrap(),
                m["scheduler"].as_str().unwrap(),
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
        "round 2 runs in reverse"
    );
    let mut w_total = 0.0;
    let mut load_writes = 0;
    for m in ms {
        let f = &m["figures"];
        let s = m["scheduler"].as_str().unwrap();
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
    let scheds = v["schedulers"].as_array().unwrap();
    assert_eq!(scheds.len(), 4);
    for s in scheds {
        assert_eq!(s["rounds"].as_array().unwrap().len(), 2, "{s}");
    }
    let winner = v["verdict"]["winner"].as_str().unwrap();
    assert!(["none", "mq-deadline", "kyber", "bfq"].contains(&winner));
    assert!(v["verdict"]["advantage_pct"].as_f64().is_some());
    assert!(
        v["final_settings"]
            .as_str()
            .unwrap()
            .starts_with("original settings restored"),
        "{v}"
    );
    assert!(loop_gone(dir.path()), "scratch loop device left behind");
    assert!(dir_is_empty(dir.path()), "scratch file left behind");
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
    let js = tempfile::tempdir().unwrap();
    // Custom settings, so a restore to defaults would show.
    let o = blktune(
        &[
            "set",
            lo.name(),
            "--scheduler",
            "mq-deadline",
            "-t",
            "read_expire=100",
            "--nr-requests",
            "48",
        ],
        js.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let before = queue_state(lo.name());
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
    assert!(out.contains("winner for p99 (p99): "), "{out}");
    assert!(out.lines().any(|l| l.starts_with("kyber")), "{out}");
    assert_eq!(queue_state(lo.name()), before, "settings restored exactly");
    assert!(dir_is_empty(j.path()));
    // Loop devices keep queue settings across detach: leave it as found.
    assert!(blktune(&["revert", lo.name()], js.path()).status.success());
}

#[test]
fn export_is_not_wired_yet_and_says_so_after_restoring() {
    if !require_root("export_is_not_wired_yet_and_says_so_after_restoring") {
        return;
    }
    let lo = TestLoop::new(16);
    let j = tempfile::tempdir().unwrap();
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
        ],
        j.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("udev export is not available in this build"),
        "{}",
        stderr(&o)
    );
    assert_eq!(queue_state(lo.name()), before);
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
    let child = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(args)
        .env("BLKTUNE_JOURNAL_DIR", journal)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !ready() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "bench never got going"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Into the measurement of the first scheduler.
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
        &[
            "bench",
            "--scratch",
            "64M",
            "--scratch-dir",
            dir.path().to_str().unwrap(),
            "--dwell",
            "10s",
            "--schedulers",
            "none,kyber",
        ],
        j.path(),
        || loop_over(dir.path()),
    );
    assert_eq!(code, Some(130), "{err}");
    assert!(
        err.contains("cancelled; original settings restored"),
        "{err}"
    );
    assert!(loop_gone(dir.path()), "scratch loop device left behind");
    assert!(dir_is_empty(dir.path()), "scratch file left behind");
    assert!(dir_is_empty(j.path()));
}

#[test]
fn ctrl_c_mid_bench_restores_the_device_settings() {
    if !require_root("ctrl_c_mid_bench_restores_the_device_settings") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let js = tempfile::tempdir().unwrap();
    let o = blktune(
        &[
            "set",
            lo.name(),
            "--scheduler",
            "bfq",
            "--nr-requests",
            "40",
        ],
        js.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let before = queue_state(lo.name());
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
    assert!(blktune(&["revert", lo.name()], js.path()).status.success());
}

#[test]
fn a_failed_bench_removes_its_scratch_device() {
    if !require_root("a_failed_bench_removes_its_scratch_device") {
        return;
    }
    let dir = temp_in_target();
    let j = tempfile::tempdir().unwrap();
    let o = blktune(
        &[
            "bench",
            "--scratch",
            "32M",
            "--scratch-dir",
            dir.path().to_str().unwrap(),
            "--schedulers",
            "none,nosuch",
        ],
        j.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // The message names the scratch loop device: it existed when the run failed.
    let err = stderr(&o);
    assert!(
        err.starts_with("blktune: 'loop") && err.contains("unknown scheduler 'nosuch'"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(loop_gone(dir.path()));
    assert!(dir_is_empty(dir.path()));
}
