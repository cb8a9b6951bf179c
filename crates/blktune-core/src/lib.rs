//! blktune's engine: everything that reads or changes the machine, and the
//! math on it, with no terminal code (no ratatui, crossterm or clap; check
//! with `cargo tree -p blktune-core -e normal`).
//!
//! [`os`] is the one seam to `/sys` and `/proc`; [`device`] discovers block
//! devices; [`diskstats`] and [`iostat`] turn kernel counters into `iostat -x`
//! numbers; [`sampler`] does that every tick, hearing hot-plug through
//! [`uevent`], and [`history`] keeps it;
//! [`tuner`] changes queue settings safely and [`journal`] remembers the
//! originals; [`export`] writes and checks udev rules; [`record`] writes and
//! replays sessions; [`shootout`] runs every scheduler in turn under a
//! [`load`] on a device or a [`scratch`] loop device, and [`compare`] says
//! whether one configuration beat another; [`probe`] times reads.

pub mod atomic_file;
pub mod before_after;
pub mod compare;
pub mod device;
pub mod devname;
pub mod diskstats;
pub mod error;
pub mod export;
#[cfg(any(test, feature = "testing"))]
pub mod fake;
pub mod history;
pub mod host;
pub mod iostat;
pub mod journal;
pub mod kernel_hz;
pub mod latency;
pub mod load;
pub mod metrics;
pub mod natural;
pub mod os;
pub mod pressure;
pub mod probe;
pub mod procio;
pub mod record;
pub mod sampler;
pub mod sched;
pub mod scratch;
pub mod shootout;
pub mod stack;
pub mod text;
pub mod topology;
pub mod traced;
pub mod tuner;
pub mod uevent;
pub mod units;
pub mod wanted;
pub mod who;
