//! blktune: see and tune the Linux block-layer I/O scheduler of every disk, live.
//!
//! This crate is the front end: [`cli`] (one module per subcommand) and [`tui`]
//! (the full-screen tuner). Everything that reads or changes the machine is
//! the engine crate, `blktune_core`, which knows nothing of terminals.

pub mod cli;
pub mod tui;
