//! What loading the kernel latency tracer reads (issue 12: `watch --json`'s
//! CPU at start): the kernel's BTF is read once, by blktune, which has aya
//! parse only the slim blob of the types it needs. aya 0.14's loader read
//! and parsed all of it once more when it was made (vendor/README.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;
use std::process::Command;

#[test]
fn the_tracer_reads_the_kernels_btf_once() {
    let t = "the_tracer_reads_the_kernels_btf_once";
    if !require_root(t) || !require_tool(t, "strace") {
        return;
    }
    let lo = TestLoop::new(16);
    let dir = temp_in_target();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_blktune"));
    cmd.args(["watch", "--json", "-i", "100ms", "-c", "1", lo.name()]);
    let (o, calls) = strace(&cmd, "open,openat", &dir.path().join("strace.log"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The tracer was loaded: the count is a number, not null.
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["r_n"].is_u64(), "{v}\n{}", stderr(&o));
    let opens: Vec<&str> = (calls.lines())
        .filter(|l| l.contains("\"/sys/kernel/btf/vmlinux\""))
        .collect();
    assert_eq!(opens.len(), 1, "{opens:#?}");
}
