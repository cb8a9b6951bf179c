//! The shipped demo recording plays anywhere: read by the library, and
//! summarised by the binary as an unprivileged user.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune_core::record::{ChangeSource, Player, Recording};
use common::{require_root, require_tool, stderr};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

fn asset() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-bfq-switch.ndjson.gz")
}

#[test]
fn the_demo_is_a_clean_recording_with_a_bfq_switch_and_back() {
    let size = std::fs::metadata(asset()).unwrap().len();
    // The kernel's latency histograms take about 1.3 KiB a sample gzipped.
    assert!(
        size < 320 * 1024,
        "the demo should stay small, it is {size} bytes"
    );
    let rec = Arc::new(Recording::open(&asset()).unwrap());
    assert!(rec.notes.is_empty(), "{:?}", rec.notes);
    assert_eq!(rec.end().unwrap().reason, "duration");
    assert!(rec.duration() > 60.0);
    let changes: Vec<_> = rec.changes().collect();
    assert!(
        changes[0].label.starts_with("mq-deadline→bfq"),
        "{changes:?}"
    );
    assert!(
        changes[1].label.starts_with("bfq→mq-deadline"),
        "{changes:?}"
    );
    assert_eq!(changes[0].source, ChangeSource::Observed);
    // Placed where it was made (the script switches 30 s and 60 s in).
    assert!((changes[0].t - 30.0).abs() < 2.0, "{changes:?}");
    // With the kernel's latency histograms, so a replay shows p99.
    assert!(
        rec.header.latency.as_ref().is_some_and(|l| l.traced),
        "{:?}",
        rec.header.latency
    );
    // Under load all the way: every frame after the first has figures.
    let dev = &rec.header.devices[0].name;
    let frames: Vec<_> = Player::new(Arc::clone(&rec)).unwrap().collect();
    assert!(
        frames[1..]
            .iter()
            .all(|f| f.snapshot.ext(dev).is_some_and(|s| s.r_s > 0.0))
    );
}

#[test]
fn replay_summary_of_the_demo_runs_as_nobody() {
    if !require_root("replay_summary_of_the_demo_runs_as_nobody")
        || !require_tool("replay_summary_of_the_demo_runs_as_nobody", "setpriv")
    {
        return;
    }
    // A copy of the binary and the asset that user nobody can read.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("blktune");
    let demo = dir.path().join("demo.ndjson.gz");
    common::copy_binary(&bin);
    std::fs::copy(asset(), &demo).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&demo, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = |extra: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(&bin)
            .arg("replay")
            .arg(&demo)
            .arg("--summary")
            .args(extra)
            .env_remove("BLKTUNE_JOURNAL_DIR")
            .output()
            .unwrap()
    };
    let o = run(&["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &v["changes"][0];
    assert!(
        c["label"].as_str().unwrap().starts_with("mq-deadline→bfq"),
        "{c}"
    );
    assert_eq!(c["settings_before"]["scheduler"], "mq-deadline");
    assert_eq!(c["settings_after"]["scheduler"], "bfq");
    for side in ["before", "after"] {
        assert!(c[side]["r_await"].as_f64().unwrap() > 0.0, "{side}: {c}");
        assert!(c[side]["secs"].as_f64().unwrap() > 10.0, "{side}: {c}");
    }
    assert!(c["pct"]["r_await"].as_f64().is_some(), "{c}");
    assert_eq!(v["devices"][0]["kind"], "loop");

    let o = run(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("mq-deadline→bfq"), "{text}");
    assert!(text.contains("r_await"), "{text}");
}
