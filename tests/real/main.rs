//! Tests on this machine's kernel: real loop devices of the tests' own, BPF, fio, udev (root).
//! One test binary per harness (see docs/TESTING.md); each file below is a module.

#[path = "../common/mod.rs"]
mod common;

mod bench;
mod bench_latency;
mod docs_examples;
mod export_udev;
mod exporter_prometheus;
mod exporter_unit;
mod hotplug;
mod latency_issue_program;
mod latency_load;
mod latency_noroot;
mod latency_reattach;
mod list_latency;
mod load_safety;
mod metrics_unit;
mod one_journal;
mod output_files;
mod probe;
mod queue_settings;
mod record_latency;
mod replay_asset;
mod replay_demo;
mod resize;
mod scratch;
mod set;
mod sysstat_agreement;
mod tui_probe;
mod tui_record_latency;
mod tuned_profile;
mod watch_latency;
mod where_io_goes;
mod who_kernel;
