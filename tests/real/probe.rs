//! The latency probe on a real loop device (root only): read-only O_DIRECT
//! opens, the configured rate, and `blktune watch --probe`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune_core::os::SysRoot;
use blktune_core::probe::Probe;
use common::*;
use std::time::Duration;

/// Flags (octal in fdinfo) of every open fd of this process on `dev`.
fn open_flags_on(dev: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(target) = std::fs::read_link(e.path()) else {
            continue;
        };
        if target.to_str() != Some(dev) {
            continue;
        }
        let info = std::fs::read_to_string(format!(
            "/proc/self/fdinfo/{}",
            e.file_name().to_string_lossy()
        ))
        .unwrap_or_default();
        if let Some(f) = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        {
            v.push(f);
        }
    }
    v
}

#[test]
fn probe_reads_at_its_rate_read_only_with_o_direct() {
    if !require_root("probe_reads_at_its_rate_read_only_with_o_direct") {
        return;
    }
    let lo = TestLoop::new(16);
    let dev = format!("/dev/{}", lo.name());
    let before = std::fs::read(&dev).unwrap();
    let root = SysRoot::default();
    let p = Probe::start(&root, &[lo.name().to_string(), "nosuchdev".into()], 40.0);
    std::thread::sleep(Duration::from_millis(300));
    let _ = p.take();
    std::thread::sleep(Duration::from_millis(1000));
    let flags = open_flags_on(&dev);
    let stats = p.take();
    p.stop();

    assert_eq!(flags.len(), 1, "one open of {dev}: {flags:?}");
    assert_eq!(
        flags[0] & libc::O_ACCMODE as u32,
        libc::O_RDONLY as u32,
        "read-only"
    );
    assert_ne!(flags[0] & libc::O_DIRECT as u32, 0, "O_DIRECT");

    let s = &stats[lo.name()];
    assert_eq!(s.errors, 0, "{s:?}");
    assert!(
        (25.0..=55.0).contains(&s.reads_per_sec),
        "about 40 reads/s: {s:?}"
    );
    // Every read's latency, so windows can pool them; about 40 reads: a
    // count, a median and a max, no p99.
    let l = s.reads_ns.figures();
    assert_eq!(l.n, s.reads, "{l:?}");
    assert!(
        l.p50.unwrap() > 0.0 && l.max.unwrap() >= l.p50.unwrap(),
        "{l:?}"
    );
    assert_eq!(l.p99, None, "a p99 of {} reads: {l:?}", l.n);
    let bad = &stats["nosuchdev"];
    assert_eq!(bad.reads, 0);
    assert!(
        bad.error.as_deref().unwrap().contains("not a block device"),
        "{bad:?}"
    );

    assert_eq!(
        std::fs::read(&dev).unwrap(),
        before,
        "the probe changed nothing"
    );
}

#[test]
fn watch_probe_shows_percentiles_next_to_diskstats() {
    if !require_root("watch_probe_shows_percentiles_next_to_diskstats") {
        return;
    }
    let lo = TestLoop::new(16);
    let j = tempfile::tempdir().unwrap();
    let o = blktune(
        &[
            "watch",
            "--probe",
            "--probe-rate",
            "20",
            "-c",
            "3",
            "-i",
            "500ms",
            lo.name(),
        ],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("probe: 20.0 read-only direct 4 KiB reads/s"),
        "{out}"
    );
    assert!(
        out.lines()
            .next()
            .unwrap()
            .contains("above the block layer"),
        "{out}"
    );
    let header = out.lines().find(|l| l.starts_with("Device")).unwrap();
    assert!(
        header.ends_with("pr_n  pr_p50  pr_p99  pr_max pr_r/s"),
        "{header}"
    );
    let last = out
        .lines()
        .rev()
        .find(|l| l.starts_with(lo.name()))
        .unwrap();
    let cells: Vec<&str> = last.split_whitespace().collect();
    let rate: f64 = cells[cells.len() - 1].parse().unwrap();
    let max: f64 = cells[cells.len() - 2].parse().unwrap();
    let n: u64 = cells[cells.len() - 5].parse().unwrap();
    let r_s: f64 = cells[2].parse().unwrap();
    assert!((10.0..=30.0).contains(&rate), "{last}");
    assert!(max > 0.0 && (5..=15).contains(&n), "{last}");
    // About 10 reads: no p99 (it would be the slowest read).
    assert_eq!(cells[cells.len() - 3], "-", "{last}");
    assert!(r_s >= 10.0, "the probe's reads show in r/s: {last}");

    let o = blktune(
        &[
            "watch",
            "--probe",
            "--json",
            "-c",
            "2",
            "-i",
            "500ms",
            lo.name(),
        ],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let last: serde_json::Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v["probe"].as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&last),
        ["errors", "max", "n", "p50", "p99", "reads_per_sec"],
        "{last}"
    );
    // About 2.5 reads in the interval: their count, median and max; no p99.
    let p = &last["probe"];
    assert!(p["n"].as_u64().unwrap() > 0, "{last}");
    assert!(
        p["max"].as_f64().unwrap() >= p["p50"].as_f64().unwrap(),
        "{last}"
    );
    assert!(p["p99"].is_null(), "{last}");

    // 100 reads/s over 2 s intervals: enough reads for a p99.
    let o = blktune(
        &[
            "watch",
            "--probe",
            "--probe-rate",
            "100",
            "--json",
            "-c",
            "3",
            "-i",
            "1500ms",
            lo.name(),
        ],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let recs: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // (The probe starts with the first interval: that one may have no reads.)
    for r in recs.iter().filter(|r| !r["probe"].is_null()) {
        let p = &r["probe"];
        let n = p["n"].as_u64().unwrap();
        assert_eq!(p["p99"].is_null(), n < 100, "{r}");
    }
    let full = &recs.last().unwrap()["probe"];
    assert!(full["n"].as_u64().unwrap() >= 100, "{full}");
    let (p50, p99, max) = (
        full["p50"].as_f64().unwrap(),
        full["p99"].as_f64().unwrap(),
        full["max"].as_f64().unwrap(),
    );
    assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{full}");
}
