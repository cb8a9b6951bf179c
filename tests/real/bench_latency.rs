//! `blktune bench --load none` on a loop device this test creates, while a
//! fio read load it starts runs on it: the shoot-out shows the kernel's
//! percentiles of the device's own I/O per scheduler, with their counts,
//! `--goal p99` ranks by them, and `--json` carries them. Without BPF one
//! line says why, and a passive `--goal p99` is refused. Root only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{FioLoad, TestLoop, blktune, require_root, require_tool, stderr, stdout};

/// The rows of the kernel table (after its `kernel` header), split in cells.
fn kernel_rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip_while(|l| !l.starts_with("kernel "))
        .take_while(|l| !l.is_empty() && !l.starts_with('('))
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

#[test]
fn a_passive_bench_under_fio_shows_the_kernels_p99_with_counts_per_scheduler() {
    let test = "a_passive_bench_under_fio_shows_the_kernels_p99_with_counts_per_scheduler";
    if !require_root(test) || !require_tool(test, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let _fio = FioLoad::randread(lo.name());
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "bench",
            lo.name(),
            "--load",
            "none",
            "--dwell",
            "1s",
            "--settle",
            "0s",
            "--rounds",
            "1",
            "--schedulers",
            "none,mq-deadline",
            "--goal",
            "p99",
        ];
        a.extend(extra);
        a
    };

    // The table: per scheduler the read count and a p99 (fio's thousands
    // of reads a second are far more than 100).
    let o = blktune(&args(&[]), j.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    let rows = kernel_rows(&t);
    assert_eq!(
        rows.first().map(|r| r[..4].join(" ")),
        Some("kernel r_n r_p50 r_p99".to_string()),
        "{t}"
    );
    for sched in ["none", "mq-deadline"] {
        let row = rows
            .iter()
            .find(|r| r[0] == sched)
            .unwrap_or_else(|| panic!("no {sched} row: {t}"));
        let n: u64 = row[1].parse().unwrap();
        assert!(n >= 100, "{sched}: {n} reads in 1 s of fio: {t}");
        let p99: f64 = row[3]
            .parse()
            .unwrap_or_else(|_| panic!("{sched}: no p99: {t}"));
        assert!(p99 > 0.0, "{t}");
    }
    // The verdict ranks by the kernel's per-round p99 and says how many
    // I/Os each round's p99 rests on.
    assert!(t.contains("kernel r_p99 of "), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("  (kernel r_p99 from ")
                && l.contains(" I/Os per round, median ")),
        "{t}"
    );
    assert!(t.contains("winner for p99 (kernel r_p99): "), "{t}");
    assert_eq!(lo.active_scheduler(), "none", "restored");

    // The same as JSON.
    let o = blktune(&args(&["--json"]), j.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["kernel"]["traced"], true, "{v}");
    for s in v["configurations"].as_array().unwrap() {
        let reads = &s["kernel"]["reads"];
        assert!(reads["n"].as_u64().unwrap() >= 100, "{s}");
        assert!(reads["p99"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["kernel"]["dev_reads"]["p99"].is_f64(), "{s}");
    }
    for m in v["measurements"].as_array().unwrap() {
        assert!(m["kernel"]["reads"]["n"].as_u64().unwrap() >= 100, "{m}");
    }
    assert_eq!(v["verdict"]["metric"], "kernel_r_p99", "{v}");
    let ios = &v["analysis"]["comparisons"][0]["goal"]["ios"];
    assert!(ios["min"].as_u64().unwrap() >= 100, "{v}");

    // Without BPF: one line says why; a passive p99 goal has nothing to rank by.
    let mut no_bpf = vec!["--no-bpf"];
    no_bpf.extend(args(&[]));
    let o = blktune(&no_bpf, j.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--goal p99 without a --load needs the kernel's percentiles, and there are none here (disabled by --no-bpf)"),
        "{}",
        stderr(&o)
    );
    let o = blktune(
        &[
            "--no-bpf",
            "bench",
            lo.name(),
            "--load",
            "none",
            "--dwell",
            "500ms",
            "--settle",
            "0s",
            "--rounds",
            "1",
            "--schedulers",
            "none",
        ],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains("\nno kernel latency percentiles: disabled by --no-bpf\n"),
        "{t}"
    );
    assert!(kernel_rows(&t).is_empty(), "{t}");
    assert_eq!(lo.active_scheduler(), "none", "restored");
}
