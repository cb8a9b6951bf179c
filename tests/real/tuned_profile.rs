//! `export --format tuned`, proven by Debian's tuned (2.20) itself: its own
//! profile loader, merger, instance sorting and device assignment apply the
//! exported profile (tests/real/tuned_apply.py, narrowed to the disk and
//! sysfs units and to this test's own loop devices), and sysfs is read back.
//!
//! The included profile's `[disk]` (devices=*) used to claim every disk
//! before the exported `[disk_loopN]` ("no matching devices available").
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Is Debian's tuned (its Python modules) installed? Missing under CI=true fails.
fn require_tuned(test: &str) -> bool {
    let ok = Command::new("/usr/bin/python3")
        .args(["-c", "import tuned.units"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: needs Debian's tuned (.ci/install-deps installs it)");
    }
    eprintln!("SKIPPED {test}: tuned is not installed");
    false
}

/// Export a tuned profile for `dev` into `<dir>/profiles/blktune/tuned.conf`,
/// with `active` as tuned's active profile (none: no active_profile file).
fn export_profile(dir: &Path, dev: &str, active: Option<&str>) -> String {
    let config = dir.join("config");
    std::fs::create_dir_all(config.join("etc/tuned")).unwrap();
    if let Some(p) = active {
        std::fs::write(config.join("etc/tuned/active_profile"), format!("{p}\n")).unwrap();
    }
    let profile = dir.join("profiles/blktune");
    std::fs::create_dir_all(&profile).unwrap();
    let o = blktune(
        &[
            "export",
            dev,
            "-s",
            "mq-deadline",
            "--nr-requests",
            "64",
            "--read-ahead-kb",
            "512",
            "--match",
            "kernel",
            "--format",
            "tuned",
            "--config-root",
            config.to_str().unwrap(),
            "-o",
            profile.join("tuned.conf").to_str().unwrap(),
        ],
        &dir.join("journal"),
    );
    assert!(o.status.success(), "export: {}", stderr(&o));
    std::fs::read_to_string(profile.join("tuned.conf")).unwrap()
}

/// Run tuned's own code on the profile; its JSON report.
fn tuned_apply(dir: &Path, devices: &[&str], hotplug: &[&str]) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/real/tuned_apply.py");
    let o = Command::new("/usr/bin/python3")
        .arg(script)
        .arg(dir.join("profiles"))
        .arg("blktune")
        .arg("--devices")
        .arg(devices.join(","))
        .arg("--hotplug")
        .arg(hotplug.join(","))
        .output()
        .unwrap();
    assert!(o.status.success(), "tuned_apply.py: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
}

/// The devices tuned gave `instance`.
fn got(report: &Value, phase: &str, instance: &str) -> Vec<String> {
    report[phase][instance]
        .as_array()
        .unwrap_or_else(|| panic!("no instance {instance} in {report}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// Known settings before tuned runs: none, 128 requests, 128 KiB read-ahead.
fn reset(lo: &TestLoop) {
    lo.set_queue("scheduler", "none");
    lo.set_queue("nr_requests", "128");
    lo.set_queue("read_ahead_kb", "128");
}

#[test]
fn tuned_gives_the_exported_disk_instance_its_device_over_an_included_disk() {
    if !require_root("tuned_profile") || !require_tuned("tuned_profile") {
        return;
    }
    let ours = TestLoop::new(16);
    let other = TestLoop::new(16);
    for lo in [&ours, &other] {
        reset(lo);
    }
    let dir = temp_in_target();
    let text = export_profile(dir.path(), ours.name(), Some("throughput-performance"));
    assert!(
        text.contains("\ninclude=throughput-performance\n"),
        "{text}"
    );

    let report = tuned_apply(dir.path(), &[ours.name(), other.name()], &[]);
    let disk_ours = format!("disk_{}", ours.name());
    // Ours claims its device first; the included [disk] keeps the other disk.
    assert_eq!(
        got(&report, "initial", &disk_ours),
        [ours.name()],
        "{report}"
    );
    assert_eq!(got(&report, "initial", "disk"), [other.name()], "{report}");
    // Applied by tuned: the scheduler, the read-ahead, and nr_requests after
    // the switch (the sysfs instance comes after the disk one).
    assert_eq!(ours.active_scheduler(), "mq-deadline");
    assert_eq!(ours.queue("read_ahead_kb"), "512");
    assert_eq!(ours.queue("nr_requests"), "64");
    // The other disk got the included profile's [disk] (readahead=>4096),
    // and keeps its scheduler.
    assert_eq!(other.queue("read_ahead_kb"), "4096");
    assert_eq!(other.active_scheduler(), "none");
}

#[test]
fn without_an_active_profile_nothing_is_included_and_a_hotplugged_disk_is_claimed() {
    if !require_root("tuned_profile") || !require_tuned("tuned_profile") {
        return;
    }
    let ours = TestLoop::new(16);
    let other = TestLoop::new(16);
    for lo in [&ours, &other] {
        reset(lo);
    }
    let dir = temp_in_target();
    let text = export_profile(dir.path(), ours.name(), None);
    assert!(!text.contains("\ninclude="), "{text}");

    // Our disk appears after the profile is applied: tuned hands the add
    // event to the first instance (in priority order) that matches it.
    let report = tuned_apply(dir.path(), &[other.name()], &[ours.name()]);
    let disk_ours = format!("disk_{}", ours.name());
    let sysfs_ours = format!("sysfs_{}", ours.name());
    // Nothing but the profile's own units: no CPU governor, no sysctls.
    assert_eq!(report["dropped_units"], serde_json::json!([]), "{report}");
    assert_eq!(report["order"], serde_json::json!([disk_ours, sysfs_ours]));
    assert_eq!(got(&report, "initial", &disk_ours), Vec::<String>::new());
    assert_eq!(
        got(&report, "after_hotplug", &disk_ours),
        [ours.name()],
        "{report}"
    );
    assert_eq!(ours.active_scheduler(), "mq-deadline");
    assert_eq!(ours.queue("read_ahead_kb"), "512");
    // The other disk: no instance wants it, nothing changed.
    assert_eq!(other.active_scheduler(), "none");
    assert_eq!(other.queue("read_ahead_kb"), "128");
    assert_eq!(other.queue("nr_requests"), "128");
}
