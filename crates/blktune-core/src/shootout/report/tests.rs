//! Unit tests of the parent module.

use super::super::fake_result;
use super::super::figures::Figures;
use super::super::kernel::DwellHists;
use super::super::kernel::tests::hist;
use super::*;

fn runs(ms: f64, n: usize, dwell: Option<(u64, u64)>) -> Vec<(Figures, Option<DwellHists>)> {
    (0..n)
        .map(|i| {
            let f = Figures {
                r_s: 1000.0,
                r_await: ms * (1.0 + 0.02 * (i % 2) as f64),
                ..Figures::default()
            };
            let d = dwell.map(|(reads, ns)| DwellHists {
                reads: hist(reads, ns),
                dev_reads: hist(reads, ns / 2),
                ..DwellHists::default()
            });
            (f, d)
        })
        .collect()
}

#[test]
fn the_table_pools_each_configuration_and_ends_with_the_verdict() {
    let r = fake_result(
        "loop3",
        Goal::ReadLatency,
        &[("none", runs(2.0, 4, None)), ("kyber", runs(1.0, 4, None))],
    );
    let t = table(&r);
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with("configuration  rounds"), "{t}");
    assert!(
        lines[0].contains("r_await") && !lines[0].contains("p99"),
        "{t}"
    );
    assert!(
        lines[1].starts_with("none") && lines[1].contains("2.02"),
        "{t}"
    );
    assert!(
        !lines[..4].iter().any(|l| l.contains('±')),
        "no spread rows: the verdict has the intervals: {t}"
    );
    assert!(
        t.contains("for display only: the verdict rests on the rounds' pairs"),
        "{t}"
    );
    assert!(
        t.contains("r_await of kyber against each other configuration: 4 pairs each,\n  95.0% intervals (5% over 1 comparison, look 1 of 1); minimum effect ±5%\n  none  -50% ("),
        "{t}"
    );
    assert!(
        t.contains("winner for read-latency (r_await): kyber, -50% ("),
        "{t}"
    );
    assert!(t.ends_with("original settings restored\n"), "{t}");
}

#[test]
fn sub_millisecond_means_keep_three_figures() {
    assert_eq!(value_decimals(2, &[Some(1.1), Some(2.1)]), 2);
    assert_eq!(value_decimals(2, &[Some(0.62), Some(0.8)]), 3);
    assert_eq!(value_decimals(1, &[Some(5000.0), None]), 1);
    assert_eq!(value_decimals(2, &[Some(0.0), None]), 2);
    assert_eq!(value_decimals(2, &[Some(0.0312)]), 4);
}

#[test]
fn the_kernel_table_shows_counts_and_no_p99_under_100_ios() {
    let r = fake_result(
        "loop3",
        Goal::P99,
        &[
            ("none", runs(2.0, 2, Some((4000, 3_000_000)))),
            ("kyber", runs(1.0, 2, Some((21, 1_000_000)))),
        ],
    );
    let t = table(&r);
    let line = |start: &str| {
        t.lines()
            .skip_while(|l| !l.starts_with("kernel"))
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start} row in {t}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        line("kernel"),
        ["kernel", "r_n", "r_p50", "r_p99", "r_p99.9", "r_dev99"]
    );
    let none = line("none  ");
    assert_eq!(none[1], "8000", "{t}");
    assert!(none[3].starts_with("3.0"), "{t}");
    assert!(none[5].starts_with("1.5"), "{t}");
    // 42 reads pooled: a count instead of a p99.
    assert_eq!(line("kyber  ")[1..], ["42", "1.004", "n=42", "-", "-"]);
    assert!(
        t.contains("the kernel's latency of every I/O on loop3"),
        "{t}"
    );
    assert!(
        t.contains("kyber: 42 reads, too few for a p99 (needs 100): not ranked"),
        "{t}"
    );
    assert!(
        t.contains("no winner for p99 (kernel r_p99): only none measured it, nothing to compare"),
        "{t}"
    );
    // JSON: the pooled figures per configuration, p99 null under 100.
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["kernel"]["traced"], true);
    assert_eq!(v["configurations"][1]["kernel"]["reads"]["n"], 42);
    assert!(v["configurations"][1]["kernel"]["reads"]["p99"].is_null());
    assert_eq!(v["verdict"]["metric"], "kernel_r_p99");
    let back: ShootoutResult = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
}

#[test]
fn without_the_kernel_one_line_says_why() {
    let r = fake_result(
        "loop3",
        Goal::ReadLatency,
        &[("none", runs(2.0, 2, None)), ("kyber", runs(1.0, 2, None))],
    );
    let t = table(&r);
    assert!(
        t.contains("no kernel latency percentiles: needs root\n"),
        "{t}"
    );
    // An old result without the `kernel` key still reads.
    let mut v = serde_json::to_value(&r).unwrap();
    v.as_object_mut().unwrap().remove("kernel");
    let back: ShootoutResult = serde_json::from_value(v).unwrap();
    assert!(!back.kernel.traced);
}

#[test]
fn json_has_stable_keys() {
    let r = fake_result(
        "loop3",
        Goal::ReadLatency,
        &[("none", runs(2.0, 4, None)), ("kyber", runs(1.0, 4, None))],
    );
    let v: serde_json::Value = serde_json::to_value(&r).unwrap();
    assert_eq!(v["goal"], "read-latency");
    assert_eq!(v["verdict"]["winner"], "kyber");
    assert_eq!(v["verdict"]["winner_settings"]["scheduler"], "kyber");
    assert_eq!(v["configurations"][0]["configuration"], "none");
    assert_eq!(v["configurations"][0]["metrics"][3]["metric"], "r_await");
    assert_eq!(v["measurements"][0]["block"], 1);
    assert_eq!(v["analysis"]["outcome"]["kind"], "winner");
    assert_eq!(v["analysis"]["comparisons"][0]["goal"]["answer"], "better");
    let back: ShootoutResult = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
}
