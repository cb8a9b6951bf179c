//! Hot-plug on a real loop device of the test's own: detached and attached
//! again to another file while `blktune watch --json -i 1s` runs. The kernel
//! keeps the node (same name in /proc/diskstats and /sys/block, size 0) and
//! only the size and diskseq change; the new device's row must come in the
//! next interval with the I/O done on it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{require_root, retry_node_races, temp_in_target};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `/dev/loopN` attached by this test; detached on drop if it still points
/// into the test's directory (never anyone else's device).
struct OwnLoop {
    name: String,
    dir: PathBuf,
}

impl OwnLoop {
    fn backing(&self) -> Option<String> {
        std::fs::read_to_string(format!("/sys/block/{}/loop/backing_file", self.name))
            .ok()
            .map(|s| s.trim().to_string())
    }

    fn ours(&self) -> bool {
        self.backing()
            .is_some_and(|b| Path::new(&b).starts_with(&self.dir))
    }

    fn detach(&self) {
        if self.ours() {
            let _ = Command::new("losetup")
                .args(["-d", &format!("/dev/{}", self.name)])
                .status();
        }
    }
}

impl Drop for OwnLoop {
    fn drop(&mut self) {
        self.detach();
    }
}

fn file(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(64 << 20).unwrap();
    p
}

fn size(name: &str) -> u64 {
    std::fs::read_to_string(format!("/sys/block/{name}/size"))
        .map_or(0, |s| s.trim().parse().unwrap_or(0))
}

#[test]
fn a_loop_re_attached_under_watch_shows_in_the_next_interval_with_its_io() {
    let name = "a_loop_re_attached_under_watch_shows_in_the_next_interval_with_its_io";
    if !require_root(name) {
        return;
    }
    // Other processes take free loop nodes: the node this test frees for a
    // moment may be gone; try again with another.
    retry_node_races(name, attempt);
}

/// One run; `false` when another process took the node after the detach.
fn attempt() -> bool {
    let dir = temp_in_target();
    let (a, b) = (file(dir.path(), "a.img"), file(dir.path(), "b.img"));
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&a)
        .output()
        .unwrap();
    assert!(out.status.success(), "losetup: {out:?}");
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let lo = OwnLoop {
        name: dev.trim_start_matches("/dev/").to_string(),
        dir: dir.path().to_path_buf(),
    };
    // Known settings first (a reused node keeps its scheduler).
    let _ = std::fs::write(format!("/sys/block/{}/queue/scheduler", lo.name), "none");

    // The default selection: every disk with a scheduler and a size, so the
    // detached device drops out and the attached one must come back.
    let mut child = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["watch", "--json", "-i", "1s", "-c", "8"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if tx.send(v).is_err() {
                break;
            }
        }
    });

    // Group the records by interval (their timestamp), acting right after
    // the first record of interval 3 (detach) and of interval 5 (attach and
    // read 1 MiB), so each action has most of an interval before the next tick.
    let mut intervals: Vec<(String, Vec<serde_json::Value>)> = Vec::new();
    let mut attached = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Ok(v) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let ts = v["timestamp"].as_str().unwrap().to_string();
        if intervals.last().is_none_or(|(t, _)| *t != ts) {
            intervals.push((ts, Vec::new()));
            match intervals.len() {
                3 => {
                    lo.detach();
                    assert_eq!(size(&lo.name), 0);
                }
                5 => {
                    let ok = Command::new("losetup")
                        .arg(&dev)
                        .arg(&b)
                        .status()
                        .is_ok_and(|s| s.success());
                    if !ok {
                        // Another process took the free node in between.
                        let _ = child.kill();
                        let _ = child.wait();
                        eprintln!("{dev} was taken by someone else after the detach");
                        return false;
                    }
                    attached = true;
                    let dd = Command::new("dd")
                        .arg(format!("if={dev}"))
                        .args(["of=/dev/null", "bs=4096", "count=256", "iflag=direct"])
                        .stderr(Stdio::null())
                        .status()
                        .unwrap();
                    assert!(dd.success());
                }
                _ => {}
            }
        }
        intervals.last_mut().unwrap().1.push(v);
    }
    let _ = child.wait();
    reader.join().unwrap();
    assert!(
        attached && intervals.len() >= 7,
        "{} intervals",
        intervals.len()
    );

    let row = |i: usize| {
        intervals[i]
            .1
            .iter()
            .find(|v| v["disk_device"] == lo.name.as_str())
            .cloned()
    };
    assert!(row(1).is_some(), "attached at the start: a row");
    // Detached after interval 3's output: gone from interval 4.
    assert!(row(3).is_none(), "interval 4: detached, yet {:?}", row(3));
    // Attached after interval 5's output: the very next interval has its
    // row, and the rows from there on add up to the 1 MiB read in 256
    // requests (under load dd may finish after that tick).
    let r = row(5).unwrap_or_else(|| {
        panic!(
            "the re-attached {} is missing from the next interval",
            lo.name
        )
    });
    assert_eq!(r["scheduler"], "none", "{r}");
    let (mut kb, mut ios) = (0.0, 0.0);
    for i in 5..intervals.len() {
        let r = row(i).unwrap_or_else(|| panic!("interval {}: no row", i + 1));
        let itv = r["interval_s"].as_f64().unwrap();
        kb += r["rkB/s"].as_f64().expect("rates, not no_data") * itv;
        ios += r["r/s"].as_f64().unwrap() * itv;
    }
    let (kb, ios) = (kb.round(), ios.round());
    assert!((1024.0..1024.0 + 256.0).contains(&kb), "read {kb} kB");
    assert!((256.0..256.0 + 64.0).contains(&ios), "{ios} reads");
    true
}
