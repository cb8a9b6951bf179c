//! `blktune list --format openmetrics --latency DUR` on a real loop device
//! under a read load: each device's read and write latency histogram of the
//! window, valid for promtool, with the load's reads counted (issue 15).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;

/// The value of the first sample line starting with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn openmetrics_latency_histograms_count_the_windows_reads() {
    let test = "openmetrics_latency_histograms_count_the_windows_reads";
    if !require_root(test) || !require_tool(test, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let _fio = FioLoad::randread(lo.name());
    let j = tempfile::tempdir().unwrap();
    let o = blktune(
        &["list", "--format", "openmetrics", "--latency", "1s"],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let base = format!("device=\"{}\",", lo.name());
    let count = sample(&text, &format!("blktune_io_latency_seconds_count{{{base}"))
        .unwrap_or_else(|| panic!("no histogram for {}: {text}", lo.name()));
    assert!(count >= 100.0, "{count} reads in 1 s of fio");
    let inf = text
        .lines()
        .find(|l| l.contains(&base) && l.contains("op=\"read\"") && l.contains("le=\"+Inf\""))
        .unwrap_or_else(|| panic!("no +Inf bucket: {text}"));
    assert!(inf.ends_with(&format!(" {count}")), "{inf}");
    // Buckets are cumulative: never decreasing.
    let mut last = 0.0;
    for l in text
        .lines()
        .filter(|l| l.contains(&base) && l.contains("op=\"read\"") && l.contains("_bucket"))
    {
        let v: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(v >= last, "{l}");
        last = v;
    }
    if require_tool(test, "promtool") {
        assert_promtool_accepts(&text);
    }
    // Without the kernel (--no-bpf) the gauges are still there, and no histogram.
    let o = blktune(
        &[
            "--no-bpf",
            "list",
            "--format",
            "openmetrics",
            "--latency",
            "1s",
        ],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("blktune_io_latency_seconds"));
    assert!(stdout(&o).contains("blktune_nr_requests"));
    // --latency belongs to the metrics.
    let o = blktune(&["list", "--latency", "1s"], j.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
