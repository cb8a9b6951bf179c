//! blktune: see and tune the Linux block-layer I/O scheduler of every disk, live.
//!
//! The engine (no terminal code): [`os`] is the one seam to `/sys` and `/proc`;
//! [`device`] discovers block devices; [`diskstats`] and [`iostat`] turn kernel
//! counters into `iostat -x` numbers; [`sampler`] does that every tick;
//! [`tuner`] changes queue settings safely and [`journal`] remembers originals.

pub mod cli;
pub mod device;
pub mod diskstats;
pub mod error;
pub mod export;
pub mod fake;
pub mod history;
pub mod host;
pub mod iostat;
pub mod journal;
pub mod load;
pub mod os;
pub mod probe;
pub mod record;
pub mod sampler;
pub mod scratch;
pub mod shootout;
pub mod tui;
pub mod tuner;
pub mod units;
