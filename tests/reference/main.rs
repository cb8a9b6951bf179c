//! blktune's kernel percentiles against a reference from the kernel's own
//! trace events (a tracefs instance) over the same I/Os (root). A harness of
//! its own, run alone after the others, so the only load on the machine
//! while it measures is its own fio.

#[path = "../common/mod.rs"]
mod common;

mod latency_agreement;
