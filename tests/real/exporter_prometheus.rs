//! `blktune exporter`, proven by its real consumer: Debian's `prometheus`
//! server (its own config and storage in a temp dir, 127.0.0.1 and a free
//! port, killed on drop) scrapes the exporter every 2 s while fio reads
//! this test's own loop device; then Prometheus's HTTP API answers
//! `histogram_quantile(0.99, rate(blktune_io_latency_seconds_bucket{...}[W]))`,
//! and it must agree with `blktune watch --json`'s r_p99 over the same
//! seconds within the histogram's bucket resolution. Every query of the
//! Grafana dashboard and the alert rules is also asked, and must be valid
//! PromQL that finds the series.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed and reaped on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Wait for a child with piped output: its output.
fn watch_output(child: &mut Child) -> std::process::Output {
    let mut out = Vec::new();
    let mut err = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
    let status = child.wait().unwrap();
    std::process::Output {
        status,
        stdout: out,
        stderr: err,
    }
}

/// A port nobody listens on now (bound and released: a small race, fine here).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `path` from 127.0.0.1:`port`: the body.
fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    // Prometheus answers an HTTP/1.0 request as HTTP/1.0.
    let code = head.split(' ').nth(1)?;
    (code == "200").then(|| body.to_owned())
}

/// `query` in the URL's query string (percent-encoded).
fn encoded(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus's instant query API: the result vector.
fn query(port: u16, q: &str) -> Vec<serde_json::Value> {
    let body = get(port, &format!("/api/v1/query?query={}", encoded(q)))
        .unwrap_or_else(|| panic!("query failed: {q}"));
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{q}: {v}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

/// The first sample's value of a query, if any.
fn value(port: u16, q: &str) -> Option<f64> {
    query(port, q)
        .first()
        .and_then(|r| r["value"][1].as_str().and_then(|s| s.parse().ok()))
        .filter(|v: &f64| v.is_finite())
}

/// The `expr` of every panel target of the Grafana dashboard and every rule.
fn contrib_queries() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("contrib/grafana/blktune.json")).unwrap(),
    )
    .unwrap();
    let mut out: Vec<String> = dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_owned))
        .collect();
    let rules = std::fs::read_to_string(root.join("contrib/prometheus/blktune.rules.yml")).unwrap();
    // `expr: >-` blocks: the indented lines after.
    let mut lines = rules.lines().peekable();
    while let Some(l) = lines.next() {
        if l.trim() == "expr: >-" || l.trim() == "expr: |" {
            let mut e = String::new();
            while let Some(n) = lines.peek() {
                if n.trim().is_empty() || n.trim_start().len() + 10 > n.len() {
                    break;
                }
                e.push_str(n.trim());
                e.push(' ');
                lines.next();
            }
            out.push(e.trim().to_owned());
        } else if let Some(e) = l.trim().strip_prefix("expr: ") {
            out.push(e.trim_matches('\'').to_owned());
        }
    }
    out
}

#[test]
fn prometheus_histogram_quantile_agrees_with_watch_p99() {
    let test = "prometheus_histogram_quantile_agrees_with_watch_p99";
    if !require_root(test) || !require_tool(test, "prometheus") || !require_tool(test, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let name = lo.name().to_owned();
    let dir = temp_in_target();
    let journal = dir.path().join("journal");

    // The exporter, on a free port it prints.
    let mut exporter = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .env("BLKTUNE_JOURNAL_DIR", &journal)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(exporter.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _exporter = Killed(exporter);
    let exporter_addr = line
        .trim()
        .strip_prefix("blktune exporter: listening on http://")
        .and_then(|a| a.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_owned();

    // Prometheus: scrape every 2 s, its own storage, a free port.
    let prom_port = free_port();
    std::fs::write(
        dir.path().join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\n  evaluation_interval: 2s\n\
             rule_files: ['{rules}']\n\
             scrape_configs:\n  - job_name: blktune\n    static_configs:\n      - targets: ['{exporter_addr}']\n",
            rules = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("contrib/prometheus/blktune.rules.yml")
                .display()
        ),
    )
    .unwrap();
    let prometheus = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            dir.path().join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _prometheus = Killed(prometheus);
    assert!(
        wait_until(Duration::from_secs(20), || get(prom_port, "/-/ready")
            .is_some()),
        "prometheus did not become ready"
    );

    // The exporter serves a device's read histogram once it has seen a
    // read, and Prometheus counts a series from its first sample: a few
    // reads first, then wait until Prometheus has the series (its first
    // scrape also comes seconds after it is ready: target updates are
    // throttled to 5 s), so that the range below begins with a sample from
    // before the load, not inside it.
    let pre = Command::new("dd")
        .arg(format!("if=/dev/{name}"))
        .args(["of=/dev/null", "bs=4k", "count=16", "iflag=direct"])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(pre.success());
    let count_of = |span: &str| {
        format!("blktune_io_latency_seconds_count{{device=\"{name}\",op=\"read\",span=\"{span}\"}}")
    };
    assert!(
        wait_until(Duration::from_secs(30), || value(
            prom_port,
            &count_of("total")
        )
        .is_some_and(|n| n >= 16.0)),
        "prometheus never scraped {name}'s reads"
    );
    // The same I/Os for both: watch's one 20 s interval starts (its
    // tracer loaded) well within 4 s, fio runs 10 s inside it and stops 6 s
    // before its end; Prometheus's range runs from before watch started to
    // a few scrapes after fio stopped. Nothing else reads this loop device,
    // so both count exactly fio's reads (r_n against the count's increase
    // below says so), and the quantiles differ only by how each places the
    // rank inside a slot or a bucket, not by different seconds of load.
    let started = Instant::now();
    let watch = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["watch", "--json", "-i", "20s", "-c", "1", &name])
        .env("BLKTUNE_JOURNAL_DIR", &journal)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut watch = Killed(watch);
    std::thread::sleep(Duration::from_secs(4));
    let fio = FioLoad::randread(&name);
    std::thread::sleep(Duration::from_secs(10));
    drop(fio);
    let o = watch_output(&mut watch.0);
    assert!(o.status.success(), "{}", stderr(&o));
    let rec: serde_json::Value = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["disk_device"] == name.as_str())
        .unwrap_or_else(|| panic!("no record of {name}: {}", stdout(&o)));
    // Two scrapes after watch's interval ended, then a range back to
    // before watch started.
    std::thread::sleep(Duration::from_secs(4));
    let secs = started.elapsed().as_secs() + 2;
    // One bucket: histogram_quantile and watch place the quantile alike
    // (rank q*n, the first bucket or slot whose cumulative count reaches
    // it, linear inside it), and every bucket is a whole number of the
    // kernel's slots, so with the same counts both answers lie in the same
    // bucket and differ by at most its upper bound over its lower one
    // (rate()'s extrapolation scales every bucket alike: no change). The
    // bounds at the default 2 per power of two are 2^e x (1, 1.5, 2): the
    // widest ratio is 1.5, read from the exporter's own bounds below.
    let bounds = blktune_core::metrics::histogram::bounds_ns(
        blktune_core::metrics::histogram::DEFAULT_PER_OCTAVE,
    );
    let one_bucket = bounds
        .windows(2)
        .map(|w| w[1] as f64 / w[0] as f64)
        .fold(1.0, f64::max);
    assert!((1.49..=1.51).contains(&one_bucket), "{one_bucket}");
    for (span, key) in [("total", "r_p99"), ("device", "r_dev_p99")] {
        let watch_p99_ms = rec[key]
            .as_f64()
            .unwrap_or_else(|| panic!("no {key}: {rec}"));
        let sel = format!("device=\"{name}\",op=\"read\",span=\"{span}\"");
        let q = format!(
            "histogram_quantile(0.99, rate(blktune_io_latency_seconds_bucket{{{sel}}}[{secs}s]))"
        );
        let prom_p99_ms = value(prom_port, &q).unwrap_or_else(|| panic!("no answer to {q}")) * 1e3;
        let ratio = prom_p99_ms / watch_p99_ms;
        eprintln!(
            "{name}: watch {key} {watch_p99_ms:.3} ms, Prometheus histogram_quantile {prom_p99_ms:.3} ms (ratio {ratio:.3}) over {secs} s"
        );
        assert!(
            (1.0 / one_bucket..=one_bucket).contains(&ratio),
            "watch {key} {watch_p99_ms} ms vs Prometheus {prom_p99_ms} ms (more than one bucket, {one_bucket}, apart): {q}"
        );
    }
    let sel = format!("device=\"{name}\",op=\"read\",span=\"total\"");
    // The same I/Os: the count's increase over Prometheus's stored samples
    // (first and last of the range, not rate(), which extrapolates to the
    // range's edges) is watch's r_n.
    let samples = query(
        prom_port,
        &format!("blktune_io_latency_seconds_count{{{sel}}}[{secs}s]"),
    );
    let points: Vec<f64> = samples[0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[1].as_str().unwrap().parse::<f64>().unwrap())
        .collect();
    assert!(points.len() >= 3, "{points:?}");
    let counted = points[points.len() - 1] - points[0];
    let r_n = rec["r_n"].as_f64().unwrap();
    assert!(
        r_n > 1000.0 && (counted - r_n).abs() <= r_n * 0.001,
        "Prometheus counted {counted} reads (its samples: {points:?}), watch r_n {r_n}"
    );
    // The settings series and the scheduler info.
    let sched = query(
        prom_port,
        &format!("blktune_queue_info{{device=\"{name}\"}}"),
    );
    assert_eq!(sched.len(), 1, "{sched:?}");
    assert_eq!(
        sched[0]["metric"]["scheduler"],
        lo.active_scheduler().as_str()
    );
    assert_eq!(value(prom_port, "max(blktune_latency_tracing)"), Some(1.0));

    // Every query of the dashboard and the alert rules is valid PromQL
    // (Prometheus answers "success"), and the dashboard's find our series.
    let queries = contrib_queries();
    assert!(queries.len() >= 6, "{queries:?}");
    for q in &queries {
        let q = q
            .replace("$device", &name)
            .replace("$instance", &exporter_addr)
            .replace("$__rate_interval", "30s")
            .replace("$quantile", "0.99");
        query(prom_port, &q);
    }
    // The alert rules loaded into this Prometheus are healthy.
    let rules = get(prom_port, "/api/v1/rules").unwrap();
    let v: serde_json::Value = serde_json::from_str(&rules).unwrap();
    let groups = v["data"]["groups"].as_array().unwrap();
    assert!(!groups.is_empty(), "{v}");
    for g in groups {
        for r in g["rules"].as_array().unwrap() {
            assert_ne!(r["health"], "err", "{r}");
        }
    }
}
