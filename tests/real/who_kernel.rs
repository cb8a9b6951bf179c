//! Who does the I/O, from the kernel (issue 35), on a real loop device this
//! test creates under fio (root only): `watch --who --json` carries a `who`
//! object naming fio with its share of the device, the text output names it
//! under the device's row, and `record --who` keeps it in every sample of
//! the recording, which replays.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;

/// A loop device of the test's own under fio's random reads; `None` (the
/// test skips) without root or fio.
fn loop_under_fio(test: &str) -> Option<(TestLoop, FioLoad)> {
    if !require_root(test) || !require_tool(test, "fio") {
        return None;
    }
    let lo = TestLoop::new(64);
    let fio = FioLoad::randread(lo.name());
    Some((lo, fio))
}

/// The busiest process of one device's `who` object: fio, named by its
/// comm, with most of the device's I/O. `what` says where it came from.
fn assert_fio_first(who: &serde_json::Value, what: &str) {
    let top = &who["processes"][0];
    assert_eq!(top["name"], "fio", "{what}: {who}");
    assert!(top["pid"].as_u64().is_some_and(|p| p > 0), "{what}: {who}");
    let share = top["share"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: no share: {who}"));
    // fio is the only one doing I/O on a loop device nobody else knows of;
    // a stray read (udev's probe at attach) may take a sliver.
    assert!(
        share > 50.0 && share <= 100.0,
        "{what}: share {share}: {who}"
    );
    assert!(top["r_s"].as_f64().unwrap() > 0.0, "{what}: {who}");
    assert!(
        who["cgroups"][0]["share"].as_f64().unwrap() > 50.0,
        "{what}: fio's cgroup: {who}"
    );
}

#[test]
fn watch_who_names_fio_with_its_share() {
    let test = "watch_who_names_fio_with_its_share";
    let Some((lo, _fio)) = loop_under_fio(test) else {
        return;
    };
    let name = lo.name().to_string();
    let j = tempfile::tempdir().unwrap();
    let o = blktune(
        &["watch", "--who", "--json", "-c", "3", "-i", "500ms", &name],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "one object per interval: {out}");
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object a line");
        assert_eq!(v["disk_device"], name.as_str());
        assert_fio_first(&v["who"], "watch --who --json");
    }

    // The text table: a `who` line under the device's row names fio.
    let o = blktune(
        &["watch", "--who", "-c", "2", "-i", "500ms", &name],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let rows: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with(&name))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    // The busiest process comes first under each row (a `(rest)` line may
    // follow with the odd stray I/O).
    for i in rows {
        let first = lines.get(i + 1).copied().unwrap_or_default();
        let words: Vec<&str> = first.split_whitespace().collect();
        assert!(
            words.starts_with(&["who", "fio"]) && first.contains('%'),
            "the interval's first who line names fio with its share: {out}"
        );
    }
}

#[test]
fn record_who_keeps_fio_in_the_samples() {
    let test = "record_who_keeps_fio_in_the_samples";
    let Some((lo, _fio)) = loop_under_fio(test) else {
        return;
    };
    let name = lo.name().to_string();
    let j = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("who.ndjson");
    let path = file.to_str().unwrap();
    let o = blktune(
        &["record", "--who", "-i", "500ms", "-d", "2s", path, &name],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    let samples: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "sample")
        .collect();
    assert!(
        samples.len() >= 3,
        "{} samples in 2 s at 500 ms",
        samples.len()
    );
    // Every sample covers an interval of fio's reads (the recorder's first
    // sample already has one: the BPF maps count from their load).
    for (i, s) in samples.iter().enumerate() {
        assert_fio_first(&s["who"][name.as_str()], &format!("sample {i}"));
    }

    // The recording replays (its `who` samples are read back, not refused).
    let o = blktune(&["replay", path, "--summary"], j.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&name), "{}", stdout(&o));
}
