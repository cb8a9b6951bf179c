//! `blktune watch --json` on a real loop device under reads: the kernel
//! percentiles' counts (`r_n`) are the device's reads, interval by interval,
//! as diskstats counts them (`r/s` times the interval). `watch` reads no
//! identity file, so this is also what proves it finds a device's
//! histograms from the numbers in diskstats (issue 14; found at 0 before).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;
use std::process::{Command, Stdio};

/// A loop device of the test's own under fio's random reads; `None` (the
/// test skips) without root or fio.
fn loop_under_reads(test: &str) -> Option<(TestLoop, FioLoad)> {
    if !require_root(test) || !require_tool(test, "fio") {
        return None;
    }
    let lo = TestLoop::new(64);
    let fio = FioLoad::randread(lo.name());
    Some((lo, fio))
}

#[test]
fn watch_json_counts_every_read_of_the_device() {
    let Some((lo, _fio)) = loop_under_reads("watch_json_counts_every_read_of_the_device") else {
        return;
    };
    let name = lo.name().to_string();
    let j = tempfile::tempdir().unwrap();
    let o = blktune(&["watch", "--json", "-i", "1s", "-c", "3", &name], j.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let mut traced = 0;
    let mut counted = 0.0;
    // The first interval's histograms start at the program's load, not at
    // the first diskstats read: its count is checked only for being there.
    for (i, line) in stdout(&o).lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object a line");
        assert_eq!(v["disk_device"], name.as_str());
        let r_n = v["r_n"]
            .as_u64()
            .unwrap_or_else(|| panic!("no r_n: {line}"));
        let n = v["r/s"].as_f64().unwrap() * v["interval_s"].as_f64().unwrap();
        // The map is read a moment after diskstats, a moment that varies
        // when fio keeps both CPUs busy: some I/Os either way (2% + 200
        // failed once in ten runs).
        assert!(
            i == 0 && r_n > 0 || (r_n as f64 - n).abs() <= 0.1 * n + 200.0,
            "r_n {r_n} against {n:.0} reads in diskstats: {line}"
        );
        if r_n >= 100 {
            assert!(
                v["r_p99"].as_f64().is_some(),
                "no p99 over {r_n} I/Os: {line}"
            );
        }
        traced += r_n;
        counted += n;
    }
    assert!(counted >= 300.0, "fio did {counted:.0} reads in 3 s");
    assert!(traced > 0, "no read traced");
}

/// A second `watch` on the same device at once counts the same: two
/// programs, two maps, no interference (and the device-number lookup is not
/// a first-come thing).
#[test]
fn two_watches_at_once_both_count() {
    let Some((lo, _fio)) = loop_under_reads("two_watches_at_once_both_count") else {
        return;
    };
    let name = lo.name().to_string();
    let j = tempfile::tempdir().unwrap();
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_blktune"))
            .env("BLKTUNE_JOURNAL_DIR", j.path())
            .args(["watch", "--json", "-i", "1s", "-c", "2", &name])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("blktune")
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let total: u64 = stdout(&o)
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["r_n"]
                    .as_u64()
                    .unwrap()
            })
            .sum();
        assert!(total > 0, "no read traced: {}", stdout(&o));
    }
}

/// `watch --latency`'s text table as root under reads: each interval's row
/// ends with the read p99 and the device's read p99 in ms (fio does
/// thousands of reads a second), and the write cells say there were none
/// (`n=0`), not a p99 of nothing.
#[test]
fn watch_latency_table_shows_the_read_p99_and_the_write_count() {
    let Some((lo, _fio)) =
        loop_under_reads("watch_latency_table_shows_the_read_p99_and_the_write_count")
    else {
        return;
    };
    let name = lo.name().to_string();
    let j = tempfile::tempdir().unwrap();
    let o = blktune(
        &["watch", "--latency", "-i", "1s", "-c", "3", &name],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let header = out.lines().find(|l| l.contains("r_p99")).expect("a header");
    assert!(
        header
            .trim_end()
            .ends_with("r_p99    w_p99  r_dev99  w_dev99"),
        "{header}"
    );
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with(&name)).collect();
    assert_eq!(rows.len(), 3, "{out}");
    for row in rows {
        let cells: Vec<&str> = row.split_whitespace().rev().take(4).collect();
        // Reversed: w_dev99, r_dev99, w_p99, r_p99.
        for (i, what) in [(3, "r_p99"), (1, "r_dev99")] {
            let ms: f64 = cells[i]
                .parse()
                .unwrap_or_else(|_| panic!("{what} is not a number: {row}"));
            assert!(ms > 0.0 && ms < 10_000.0, "{what} {ms}: {row}");
        }
        assert_eq!((cells[2], cells[0]), ("n=0", "n=0"), "no writes: {row}");
    }
}
