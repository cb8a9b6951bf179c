//! The real binary driven in tmux, keys sent as a terminal sends them.
//! One test binary per harness (see docs/TESTING.md); each file below is a module.

#[path = "../common/mod.rs"]
mod common;

mod before_after;
mod captured_trees;
mod chart_window;
mod colours;
mod dialogs;
mod edit;
mod editor;
mod hangup;
mod keys;
mod latency;
mod numbers;
mod pause;
mod probe;
mod processes;
mod queue_settings;
mod record_where;
mod replay;
mod session;
mod shootout_kernel;
mod signals;
mod table;
mod who_approximate;
