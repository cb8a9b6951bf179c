//! The full-screen tuner on ratatui's TestBackend: screens, keys and state, no terminal.
//! One test binary per harness (see docs/TESTING.md); each file below is a module.

#[path = "../common/mod.rs"]
mod common;

mod ab_worker;
mod before_after;
mod colours;
mod devices;
mod dialogs;
mod editor;
mod event_loop;
mod export_p99;
mod first_frame;
mod keys;
mod latency;
mod no_progress;
mod numbers;
mod pause;
mod probe;
mod processes;
mod queue_settings;
mod record_where;
mod replay_latency;
mod replay_state;
mod screens;
mod shootout_kernel;
mod sizes;
mod sort_p99;
mod stacks;
mod state;
mod table;
