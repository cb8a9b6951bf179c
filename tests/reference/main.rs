//! blktune's kernel percentiles against a bpftrace reference over the same
//! I/Os (root). A harness of its own, run alone after the others: bpftrace's
//! tracepoint programs are skipped on a CPU where another process reads a
//! BPF map (blktune's tracer in a concurrent test does, every tick), so the
//! reference must have the machine's BPF to itself.

#[path = "../common/mod.rs"]
mod common;

mod latency_agreement;
