//! Without root (or with --no-bpf) `watch` makes no BPF call at all, says
//! once why there are no kernel percentiles, and everything else, exit codes
//! included, is as before (issue 14).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{TestLoop, as_nobody, public_binary, require_root, require_tool, temp_in_target};
use std::path::Path;
use std::process::{Command, Output};

/// Run `cmd` under `strace -f -e trace=bpf`; its output and the bpf() calls seen.
fn traced(cmd: Command, log: &Path) -> (Output, Vec<String>) {
    let (out, calls) = common::strace(&cmd, "bpf", log);
    let calls = calls
        .lines()
        .filter(|l| l.contains("bpf("))
        .map(str::to_string)
        .collect();
    (out, calls)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn without_root_no_bpf_is_attempted_and_the_reason_is_shown() {
    let t = "without_root_no_bpf_is_attempted_and_the_reason_is_shown";
    if !require_root(t) || !require_tool(t, "strace") || !require_tool(t, "setpriv") {
        return;
    }
    let lo = TestLoop::new(16);
    let dir = temp_in_target();
    let bin = public_binary(dir.path());
    let log = dir.path().join("strace.log");

    // JSON as nobody: the numbers as ever, the percentiles null, one line why.
    let mut c = as_nobody(&bin);
    c.args(["watch", "--json", "-i", "100ms", "-c", "2", lo.name()]);
    let (o, calls) = traced(c, &log);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(calls.is_empty(), "bpf() called as nobody: {calls:?}");
    assert_eq!(
        text(&o.stderr),
        "blktune: no kernel latency percentiles: needs root\n"
    );
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), 2);
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["r/s"].is_number() && v["r_await"].is_number(), "{line}");
        for key in [
            "r_p50",
            "r_p99",
            "r_p999",
            "r_max",
            "r_n",
            "w_p99",
            "f_n",
            "r_dev_p99",
        ] {
            assert!(v[key].is_null(), "{key} in {line}");
        }
    }

    // The text table with --latency: dashes, the same one line.
    let mut c = as_nobody(&bin);
    c.args(["watch", "--latency", "-i", "100ms", "-c", "1", lo.name()]);
    let (o, calls) = traced(c, &log);
    assert_eq!(o.status.code(), Some(0));
    assert!(calls.is_empty(), "{calls:?}");
    assert_eq!(
        text(&o.stderr),
        "blktune: no kernel latency percentiles: needs root\n"
    );
    let out = text(&o.stdout);
    assert!(out.contains("r_p99") && out.contains("w_dev99"), "{out}");
    let row = out.lines().find(|l| l.starts_with(lo.name())).unwrap();
    assert!(
        row.trim_end().ends_with("-        -        -        -"),
        "{row}"
    );

    // A recording as nobody: made all the same, with no bpf() call and one
    // line why it has no histograms.
    let rec_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        rec_dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let rec = rec_dir.path().join("nobody.btrec");
    let mut c = as_nobody(&bin);
    c.arg("record")
        .arg(&rec)
        .args(["-i", "100ms", "-d", "300ms", lo.name()]);
    let (o, calls) = traced(c, &log);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        calls.is_empty(),
        "bpf() called by record as nobody: {calls:?}"
    );
    assert_eq!(
        text(&o.stderr),
        "blktune: no kernel latency histograms recorded: needs root\n"
    );
    assert!(rec.metadata().unwrap().len() > 0);

    // Exit codes unchanged: a usage error is still 2, before any tracing.
    let mut c = as_nobody(&bin);
    c.args(["watch", "--json", "-c", "1", "nosuchdevice"]);
    let (o, calls) = traced(c, &log);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(calls.is_empty());

    // Plain watch never traces, root or not: nothing to show the numbers in.
    let mut c = Command::new(&bin);
    c.args(["watch", "-i", "100ms", "-c", "1", lo.name()]);
    let (o, calls) = traced(c, &log);
    assert_eq!(o.status.code(), Some(0));
    assert!(calls.is_empty(), "{calls:?}");
    assert_eq!(text(&o.stderr), "");
}

#[test]
fn no_bpf_makes_no_bpf_call_even_as_root() {
    let t = "no_bpf_makes_no_bpf_call_even_as_root";
    if !require_root(t) || !require_tool(t, "strace") {
        return;
    }
    let lo = TestLoop::new(16);
    let dir = temp_in_target();
    let log = dir.path().join("strace.log");
    let run = |no_bpf: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
        if no_bpf {
            c.arg("--no-bpf");
        }
        c.args(["watch", "--json", "-i", "100ms", "-c", "1", lo.name()]);
        traced(c, &log)
    };
    let (o, calls) = run(true);
    assert_eq!(o.status.code(), Some(0));
    assert!(calls.is_empty(), "{calls:?}");
    // The user asked for it: no message; the fields are null.
    assert_eq!(text(&o.stderr), "");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["r_p99"].is_null() && v["r_n"].is_null());
    // As root without the flag, the program is loaded (so the check above
    // can fail) and the counts are numbers.
    let (o, calls) = run(false);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(!calls.is_empty(), "as root the BPF program is loaded");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["r_n"].is_u64(), "{v}");
}
