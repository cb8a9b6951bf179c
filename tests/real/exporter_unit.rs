//! contrib/systemd/blktune-exporter.service: `systemd-analyze verify` finds
//! nothing, `systemd-analyze security --offline` rates the sandbox at most
//! 2.0 (OK), and its capability bounding set is what the tracer needs: the
//! exporter run as root with only those capabilities (setpriv, as systemd
//! bounds them) traces I/O, and without CAP_PERFMON it cannot.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const UNIT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/contrib/systemd/blktune-exporter.service"
);

/// The exporter run with only `caps` (lower-case names as setpriv takes
/// them); its `blktune_latency_tracing` line.
fn tracing_with(caps: &[String]) -> String {
    let bounding = format!(
        "--bounding-set=-all,{}",
        caps.iter()
            .map(|c| format!("+{c}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut child = Command::new("setpriv")
        .args([&bounding, "--inh-caps=-all", "--no-new-privs"])
        .arg(env!("CARGO_BIN_EXE_blktune"))
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("blktune exporter: listening on http://")
        .and_then(|a| a.strip_suffix("/metrics"))
        .map(str::to_owned);
    let answer = addr.and_then(|addr| {
        let mut s = TcpStream::connect(&addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        Some(out)
    });
    let _ = child.kill();
    let _ = child.wait();
    let answer = answer.unwrap_or_else(|| panic!("no answer ({line:?})"));
    answer
        .lines()
        .find(|l| l.starts_with("blktune_latency_tracing{"))
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned()
}

#[test]
fn the_exporter_unit_verifies_and_its_capabilities_are_enough() {
    let test = "the_exporter_unit_verifies_and_its_capabilities_are_enough";
    if !require_root(test)
        || !require_tool(test, "systemd-analyze")
        || !require_tool(test, "setpriv")
    {
        return;
    }
    let unit = std::fs::read_to_string(UNIT).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let installed = dir.path().join("blktune-exporter.service");
    std::fs::write(
        &installed,
        unit.replace("/usr/bin/blktune", env!("CARGO_BIN_EXE_blktune")),
    )
    .unwrap();
    let o = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&installed)
        .output()
        .unwrap();
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success() && said.trim().is_empty(), "{said}");
    let o = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--threshold=20"])
        .arg(&installed)
        .output()
        .unwrap();
    assert!(o.status.success(), "exposure above 2.0:\n{}", stdout(&o));
    eprintln!("{}", stdout(&o).lines().last().unwrap_or_default());
    assert!(!unit.contains("ReadWritePaths"), "it writes nowhere");

    // The unit's bounding set, as setpriv names the capabilities.
    let caps: Vec<String> = unit
        .lines()
        .find_map(|l| l.strip_prefix("CapabilityBoundingSet="))
        .unwrap()
        .split_whitespace()
        .map(|c| c.trim_start_matches("CAP_").to_lowercase())
        .collect();
    assert!(caps.contains(&"bpf".to_string()) && caps.contains(&"perfmon".to_string()));
    let with = tracing_with(&caps);
    assert!(with.ends_with("} 1"), "with {caps:?}: {with}");
    // Without CAP_PERFMON the program cannot be loaded: the unit needs it.
    let fewer: Vec<String> = caps.iter().filter(|c| *c != "perfmon").cloned().collect();
    let without = tracing_with(&fewer);
    assert!(without.ends_with("} 0"), "with {fewer:?}: {without}");
}
