//! `blktune record` under a fio read load on a loop device this test
//! creates keeps the kernel's latency histograms per interval, and
//! `replay --summary --json` shows the percentiles of exactly those
//! histograms pooled. Root only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::latency::{Hist, Percentiles, SparseHist};
use common::{FioLoad, TestLoop, blktune, require_root, require_tool, stderr, stdout};

#[test]
fn a_recording_under_load_replays_the_p99_it_recorded() {
    let test = "a_recording_under_load_replays_the_p99_it_recorded";
    if !require_root(test) || !require_tool(test, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lat.ndjson");
    let _fio = FioLoad::randread(lo.name());
    let o = blktune(
        &[
            "record",
            file.to_str().unwrap(),
            "-i",
            "500ms",
            "-d",
            "3s",
            lo.name(),
        ],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));

    // What was recorded: the header says traced, and the samples after the
    // first (which has no interval to compare with) pooled.
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    let header = lines.next().unwrap();
    assert_eq!(header["latency"]["traced"], true, "{header}");
    let mut pooled = Hist::empty();
    let mut samples = 0;
    for v in lines.filter(|v| v["type"] == "sample") {
        samples += 1;
        if samples == 1 {
            continue;
        }
        let r: SparseHist = serde_json::from_value(v["lat"][lo.name()]["r"].clone()).unwrap();
        pooled.add(&r.to_hist().unwrap());
    }
    assert!(samples >= 5, "{samples} samples in 3 s at 500 ms");
    let want = Percentiles::of(&pooled).unwrap();
    assert!(want.n >= 100, "fio's reads: {want:?}");

    // The replay shows the same.
    let o = blktune(
        &["replay", file.to_str().unwrap(), "--summary", "--json"],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(s["latency"]["traced"], true);
    let reads = &s["devices"][0]["latency"]["reads"];
    // Equal up to JSON's decimal round trip (serde_json's default float parsing).
    let same = |k: &str, v: f64| (reads[k].as_f64().unwrap() - v).abs() <= v * 1e-12;
    assert_eq!(reads["n"].as_u64(), Some(want.n), "{reads}");
    assert!(
        same("p99", want.p99) && same("p50", want.p50),
        "{reads} vs {want:?}"
    );
    let o = blktune(&["replay", file.to_str().unwrap(), "--summary"], j.path());
    let t = stdout(&o);
    assert!(
        t.contains(&format!(
            "kernel latency: reads p50 {:.3} p99 {:.3} ms (n={}",
            want.p50, want.p99, want.n
        )),
        "{t}"
    );
}
