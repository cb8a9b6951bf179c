//! Tests of the CLI and the engine on fake and captured trees: no root, no terminal.
//! One test binary per harness (see docs/TESTING.md); each file below is a module.

#[path = "../common/mod.rs"]
mod common;

mod alert_rules;
mod bench_verdicts;
mod bounded_readers;
mod captured_trees;
mod cli_errors;
mod dash_stdio;
mod discovery;
mod docs_examples;
mod docs_figures;
mod export_check;
mod export_cli;
mod export_fleet;
mod export_golden;
mod exporter_http;
mod fixtures_vm;
mod hostile_files;
mod import_graph;
mod journal_cli;
mod journal_trees;
mod list_fleet;
mod man_completions;
mod no_crossterm_reader;
mod record_cli;
mod record_damaged;
mod record_empty_devices;
mod record_replay;
mod replay_big;
mod replay_crafted;
mod revert_exits;
mod sigint;
mod stacks;
mod terminal_text;
mod watch;
