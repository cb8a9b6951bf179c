//! A large valid recording (192 MiB by default, written by a streaming generator
//! into cargo's temporary directory, never kept in the repository) is
//! summarised and played in bounded memory: `replay --summary` under an
//! address-space limit far below the file's size, and the replay source
//! (scan, start near the end, play to the end) with its peak RSS measured.
//!
//! `BLKTUNE_BIG_MB` sets the size (default 192: the old reader needed about
//! five times a file's size, so 192 MiB already fails under the limits below,
//! and a debug build reads it in about a minute under load; 1024 passed too,
//! with a 12 MB peak for the summary and 44 MB for the replay source).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune::tui::worker::protocol::{Feed, ReplayControl};
use blktune::tui::worker::replay::ReplaySource;
use blktune_core::record::Recording;
use common::require_tool;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

/// Disks per sample: a host with a few dozen devices and partitions.
const DISKS: usize = 48;
/// Sample interval of the generated recording (seconds).
const STEP: f64 = 0.5;
/// A scheduler switch on disk0 every this many samples.
const CHANGE_EVERY: u64 = 2000;
/// Address space allowed to `replay --summary`.
const AS_LIMIT: u64 = 512 << 20;
/// Peak RSS the replay source may add while opening the file and playing
/// from near its end (the old reader took about five times the file's size).
const RSS_LIMIT_KB: u64 = 256 << 10;

fn size_mb() -> u64 {
    std::env::var("BLKTUNE_BIG_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(192)
}

fn settings(at: f64, sched: &str) -> String {
    format!(
        r#"{{"type":"settings","t":{at},"device":"disk0","queue":{{"scheduler":{{"active":"{sched}","available":["none","mq-deadline","kyber","bfq"]}},"nr_requests":256,"read_ahead_kb":128,"tunables":{{}}}}}}"#
    )
}

fn change(at: f64, from: &str, to: &str) -> String {
    format!(
        r#"{{"type":"change","t":{at},"device":"disk0","label":"{from}→{to}","source":"observed","before":{{"scheduler":"{from}","tunables":[],"nr_requests":256,"read_ahead_kb":128}},"after":{{"scheduler":"{to}","tunables":[],"nr_requests":256,"read_ahead_kb":128}}}}"#
    )
}

/// Write a valid recording of about `mb` MiB to `path`, streaming; returns
/// the number of samples.
fn generate(path: &Path, mb: u64) -> u64 {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let devices: Vec<String> = (0..DISKS)
        .map(|i| {
            format!(
                r#"{{"name":"disk{i}","major":8,"minor":{},"kind":"ssd","size_bytes":1000000000}}"#,
                i * 16
            )
        })
        .collect();
    writeln!(
        w,
        r#"{{"type":"header","version":1,"tool":"blktune 0.1.0","started_wall":1767323045.0,"started":"2026-01-02T03:04:05Z","interval_s":{STEP},"host":{{"hostname":"big","kernel":"6.18.0","uptime_s":100.0}},"devices":[{}]}}"#,
        devices.join(",")
    )
    .unwrap();
    writeln!(w, "{}", settings(0.0, "mq-deadline")).unwrap();
    let scheds = ["mq-deadline", "kyber"];
    let (mut written, target) = (0u64, mb << 20);
    let mut i = 0u64;
    let mut line = String::new();
    while written < target {
        let t = i as f64 * STEP;
        if i > 0 && i.is_multiple_of(CHANGE_EVERY) {
            let k = (i / CHANGE_EVERY) as usize;
            let (from, to) = (scheds[(k + 1) % 2], scheds[k % 2]);
            let c = change(t - STEP / 2.0, from, to);
            let s = settings(t, to);
            writeln!(w, "{c}\n{s}").unwrap();
            written += (c.len() + s.len() + 2) as u64;
        }
        line.clear();
        line.push_str(&format!(
            r#"{{"type":"sample","t":{t},"wall":{},"iowait_pct":1.5,"disks":{{"#,
            1767323045.0 + t
        ));
        for d in 0..DISKS as u64 {
            let reads = i * (100 + d);
            let writes = i * (10 + d);
            if d > 0 {
                line.push(',');
            }
            line.push_str(&format!(
                r#""disk{d}":[{reads},{},{},{},{writes},0,{},{},{},{},{}]"#,
                reads / 10,
                reads * 8,
                (reads / 3) % (1 << 31),
                writes * 256,
                (writes * 7) % (1 << 31),
                i % 5,
                (i * 450) % (1 << 31),
                (i * 900 + reads) % (1 << 31)
            ));
        }
        line.push_str("}}\n");
        w.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
        i += 1;
    }
    let t = (i - 1) as f64 * STEP;
    writeln!(
        w,
        r#"{{"type":"end","t":{t},"wall":{},"reason":"duration","samples":{i}}}"#,
        1767323045.0 + t
    )
    .unwrap();
    w.flush().unwrap();
    i
}

/// The big file, generated once per test binary run and removed after.
struct Big {
    path: PathBuf,
    samples: u64,
}

impl Big {
    fn new(name: &str) -> Self {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
        let samples = generate(&path, size_mb());
        Self { path, samples }
    }
}

impl Drop for Big {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// This process's peak resident set (kB), from `/proc/self/status`.
fn vm_hwm_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Its current resident set (kB).
fn vm_rss_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_large_valid_recording_is_summarised_and_played_in_bounded_memory() {
    // It measures its own process's peak RSS.
    if !common::in_own_process(
        module_path!(),
        "a_large_valid_recording_is_summarised_and_played_in_bounded_memory",
    ) {
        return;
    }
    if !require_tool("a_large_valid_recording_is_summarised", "prlimit") {
        return;
    }
    let big = Big::new("replay-big.ndjson");
    let len = std::fs::metadata(&big.path).unwrap().len();
    assert!(len >= size_mb() << 20, "{len}");
    let duration = (big.samples - 1) as f64 * STEP;
    let changes = (big.samples - 1) / CHANGE_EVERY;

    // 1. `replay --summary` in one pass, under an address-space limit.
    let t0 = Instant::now();
    let o = Command::new("prlimit")
        .arg(format!("--as={AS_LIMIT}"))
        .arg(env!("CARGO_BIN_EXE_blktune"))
        .args(["replay", big.path.to_str().unwrap(), "--summary", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.is_empty(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["samples"].as_u64(), Some(big.samples));
    assert_eq!(v["duration_s"].as_f64(), Some(duration));
    let cs = v["changes"].as_array().unwrap();
    assert_eq!(cs.len() as u64, changes);
    for c in cs {
        for side in ["before", "after"] {
            // 60 s before (the window), up to the next change after.
            assert!(c[side]["secs"].as_f64().unwrap() >= 59.0, "{side}: {c}");
            assert!(c[side]["r/s"].as_f64().is_none());
            assert!(c[side]["r_s"].as_f64().unwrap() > 0.0, "{side}: {c}");
        }
    }
    eprintln!("summary of {} MiB: {:?}", len >> 20, t0.elapsed());

    // 2. The replay source: scan, begin near the end, play on, in bounded RSS.
    let base = vm_rss_kb();
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let t0 = Instant::now();
    let rec = Arc::new(Recording::open(&big.path).unwrap());
    assert!(rec.notes.is_empty(), "{:?}", rec.notes);
    assert_eq!(rec.samples() as u64, big.samples);
    let start = duration - 30.0;
    let now = Instant::now();
    let mut src = ReplaySource::new(Arc::clone(&rec), start, 1.0, now).unwrap();
    let first = src.begin(now);
    let snaps = |v: &[Feed]| v.iter().filter(|f| matches!(f, Feed::Snapshot(_))).count();
    // Up to the start, a window of history (KEEP_SECS), not the whole file.
    let n = snaps(&first);
    assert!(n > 100 && n <= 1201, "{n}");
    drop(first);
    // Forward through the last 30 s to the end (a seek back is the same
    // window after a rewind: tests/record_replay.rs covers its bound).
    let fwd = src.control(&ReplayControl::Seek(40.0).into(), now);
    assert_eq!(snaps(&fwd), 60);
    assert!(
        fwd.iter()
            .any(|f| matches!(f, Feed::Position(p) if p.ended))
    );
    let peak = vm_hwm_kb();
    eprintln!(
        "replay source over {} MiB: {:?}, peak RSS {} kB over a base of {base} kB",
        len >> 20,
        t0.elapsed(),
        peak
    );
    assert!(
        peak < base + RSS_LIMIT_KB,
        "peak RSS {peak} kB, base {base} kB"
    );
}
