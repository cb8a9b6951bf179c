//! The latency probe on a real loop device (root only): read-only O_DIRECT
//! opens, the configured rate, and `blktune watch --probe`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;
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
    let l = s.latency.unwrap();
    assert!(
        l.count == s.reads && l.p50 > 0.0 && l.p99 >= l.p50 && l.max >= l.p99,
        "{l:?}"
    );
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
    assert!(out.starts_with("probe: 20.0 read-only"), "{out}");
    let header = out.lines().find(|l| l.starts_with("Device")).unwrap();
    assert!(
        header.ends_with("pr_p50  pr_p99  pr_max pr_r/s"),
        "{header}"
    );
    let last = out
        .lines()
        .rev()
        .find(|l| l.starts_with(lo.name()))
        .unwrap();
    let cells: Vec<&str> = last.split_whitespace().collect();
    let rate: f64 = cells[cells.len() - 1].parse().unwrap();
    let p99: f64 = cells[cells.len() - 3].parse().unwrap();
    let r_s: f64 = cells[2].parse().unwrap();
    assert!((10.0..=30.0).contains(&rate), "{last}");
    assert!(p99 > 0.0, "{last}");
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
    assert!(last["probe"]["reads"].as_u64().unwrap() > 0, "{last}");
    assert!(last["probe"]["p99"].as_f64().unwrap() > 0.0, "{last}");
}
