//! `blktune list --format openmetrics --latency DUR` on a real loop device
//! under a read load: each device's I/O count and percentiles of the window
//! as gauges (never a histogram: issue 36), valid for promtool, with the
//! load's reads counted (issue 15).
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
fn openmetrics_latency_window_gauges_count_the_windows_reads() {
    let test = "openmetrics_latency_window_gauges_count_the_windows_reads";
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
    let dev_t = std::fs::read_to_string(format!("/sys/block/{}/dev", lo.name())).unwrap();
    let (major, minor) = dev_t.trim().split_once(':').unwrap();
    let reads = format!("{base}major=\"{major}\",minor=\"{minor}\",op=\"read\",span=\"total\"}}");
    let count = sample(&text, &format!("blktune_io_window_ios{{{reads}"))
        .unwrap_or_else(|| panic!("no window count for {}: {text}", lo.name()));
    assert!(count >= 100.0, "{count} reads in 1 s of fio");
    // Gauges of the window, never a histogram or a counter: each timer run
    // writes a new window, and a histogram going down reads as a counter
    // reset to Prometheus's rate().
    assert!(
        !text.contains(" histogram\n") && !text.contains(" counter\n"),
        "{text}"
    );
    let p50 = sample(
        &text,
        &format!("blktune_io_window_latency_p50_seconds{{{reads}"),
    )
    .unwrap();
    let p99 = sample(
        &text,
        &format!("blktune_io_window_latency_p99_seconds{{{reads}"),
    )
    .unwrap();
    assert!(0.0 < p50 && p50 <= p99, "p50 {p50} p99 {p99}");
    assert_eq!(sample(&text, "blktune_io_window_seconds "), Some(1.0));
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
    assert!(!stdout(&o).contains("blktune_io_window"));
    assert!(stdout(&o).contains("blktune_nr_requests"));
    // --latency belongs to the metrics.
    let o = blktune(&["list", "--latency", "1s"], j.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
