//! The Prometheus alert rules (contrib/prometheus/blktune.rules.yml) under
//! `promtool check rules` and `promtool test rules` (their test file: the
//! p99 alert fires for a slow busy device only, the scheduler alert for a
//! device whose active scheduler is not its rule's), and the Grafana
//! dashboard's queries name only series the exporter serves. (The real
//! Prometheus evaluates every one of them in tests/real/exporter_prometheus.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;
use std::process::Command;

fn contrib(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("contrib")
        .join(rel)
}

#[test]
fn promtool_checks_and_tests_the_alert_rules() {
    if !common::require_tool("promtool_checks_and_tests_the_alert_rules", "promtool") {
        return;
    }
    for args in [
        &["check", "rules", "blktune.rules.yml"][..],
        &["test", "rules", "blktune.rules.test.yml"],
    ] {
        let o = Command::new("promtool")
            .args(args)
            .current_dir(contrib("prometheus"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "promtool {args:?}:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The `blktune_*` names in a PromQL expression.
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("blktune_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        rest = &rest[at + name.len()..];
        out.push(name);
    }
    out
}

#[test]
fn the_dashboard_queries_only_what_the_exporter_serves() {
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(contrib("grafana/blktune.json")).unwrap())
            .unwrap();
    let families = [
        "blktune_queue_info",
        "blktune_nr_requests",
        "blktune_read_ahead_bytes",
        "blktune_hw_queue_depth",
        "blktune_iosched_tunable",
        "blktune_rule_scheduler_info",
        "blktune_io_latency_seconds_bucket",
        "blktune_io_latency_seconds_count",
        "blktune_io_latency_seconds_sum",
        "blktune_io_latency_lost_total",
        "blktune_latency_tracing",
        "blktune_exporter_scrape_seconds",
    ];
    // The same names the engine writes (a rename there fails here).
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli/exporter/mod.rs"),
    )
    .unwrap()
        + &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/blktune-core/src/metrics/queue.rs"),
        )
        .unwrap()
        + &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("crates/blktune-core/src/metrics/histogram.rs"),
        )
        .unwrap();
    for f in families {
        let base = f
            .trim_end_matches("_bucket")
            .trim_end_matches("_count")
            .trim_end_matches("_sum");
        assert!(
            src.contains(&format!("\"{base}")),
            "{f} is not written by the exporter"
        );
    }
    let mut n = 0;
    for panel in dash["panels"].as_array().unwrap() {
        assert!(panel["title"].as_str().is_some_and(|t| !t.is_empty()));
        for t in panel["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            n += 1;
            for name in metric_names(expr) {
                assert!(families.contains(&name.as_str()), "{name} in {expr}");
            }
        }
    }
    assert!(n >= 8, "{n} queries");
    assert_eq!(dash["uid"], "blktune-io");
}
