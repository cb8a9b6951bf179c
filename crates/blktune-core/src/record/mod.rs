//! Recordings: what blktune sampled, saved to a file and played back later,
//! on any machine, without root.
//!
//! # File format (version 1)
//!
//! Newline-delimited JSON (one object per line), gzip-compressed when the
//! file name ends in `.gz`. Every object has a `"type"`. Times `t` are
//! monotonic seconds since the recording started; `wall` is Unix seconds.
//!
//! **`header`** (always the first line)
//! - `version`: format version, `1`. A reader refuses a higher version.
//! - `tool`: `blktune 0.1.0`.
//! - `started_wall`, `started`: when `t` was 0, as Unix seconds and RFC 3339 UTC.
//! - `interval_s`: the requested sample interval.
//! - `host`: `hostname`, `kernel` (osrelease), `uptime_s` at the start, `boot_id`.
//! - `devices`: the whole devices recorded, each with `name`, `major`, `minor`,
//!   `kind` (`nvme`, `ssd`, `hdd`, `virtio`, `loop`, `zram`, `md`, `dm`, `mmc`,
//!   `other`), `model`, `vendor`, `size_bytes`, `rotational`, `removable`,
//!   `read_only`, `partitions`, `holders`, `slaves`, `diskseq` (empty and
//!   absent values are left out). Serial numbers and WWIDs are not recorded.
//! - `only`: the devices named on the command line, when there were any.
//!
//! **`sample`** (one per tick)
//! - `t`, `wall`: when `/proc/diskstats` was read.
//! - `iowait_pct`: CPU iowait over the interval, when known.
//! - `psi` (added later; absent in older recordings and where the kernel has
//!   no PSI): `/proc/pressure/io` as read with the sample: `some` and `full`
//!   (`full` absent before Linux 5.13), each `avg10`, `avg60`, `avg300`
//!   (percent) and `total_us` (stalled microseconds since boot). Replay
//!   takes each interval's stalled share from two samples' totals.
//! - `who` (added later; present only while the kernel attributed I/O, the
//!   TUI's `i` panel open or `record --who`): device name to who did its
//!   I/O in the interval the sample ends: `processes` and `cgroups`, each at
//!   most 10 rows, busiest first, and `rest_s`, `rest_share` (requests per
//!   second, and their percent of the device's, that no process row has).
//!   A row has `pid` (absent for write-back and cgroups), `name` (a
//!   process's name, `write-back` for a kernel worker's requests, a
//!   cgroup's unit name), `cgroup` (the cgroup v2 path, `/` the root),
//!   `r_s`, `w_s`, `o_s` (reads, writes, other requests per second),
//!   `rkB_s`, `wkB_s`, `share` (percent of the device's requests), `r_p99`
//!   (ms, absent under 100 reads), `r_n` (reads), and for a cgroup
//!   `io_some`, `io_full` (percent of the interval its tasks stalled on
//!   I/O, from its `io.pressure`).
//! - `disks`: device name (partitions included) to its raw counters: the
//!   numbers of its `/proc/diskstats` line after the name, in the kernel's
//!   order (11, 15 or 17 of them; kernel `Documentation/admin-guide/iostats.rst`):
//!   reads, reads merged, sectors read, ms reading, writes, writes merged,
//!   sectors written, ms writing, in flight, ms doing I/O, weighted ms,
//!   [discards, discards merged, sectors discarded, ms discarding,
//!   [flushes, ms flushing]]. Rates are recomputed from these on replay, so
//!   the first sample has none (nothing to compare it with).
//!
//! **`settings`** (every device at `t` = 0, then whenever a device's settings differ)
//! - `t`, `device`, `queue`: `scheduler` (`active`, `available`, or null when the
//!   device has none), `nr_requests`, `read_ahead_kb`, `tunables` (the active
//!   scheduler's `queue/iosched/*`, name to value), `knobs` (added later,
//!   absent in older recordings: the queue settings next to the scheduler,
//!   `wbt_lat_usec`, `nomerges`, `rq_affinity`, `max_sectors_kb`,
//!   `add_random`, `iostats`, `max_hw_sectors_kb`, name to value).
//!
//! **`devices`** (when the set of whole devices changed: hot-plug)
//! - `t`, `devices`: the full list, as in the header.
//!
//! **`change`** (a change of settings, marked on replay's charts)
//! - `t`, `device`, `label` (`mq-deadline→kyber, nr_requests 256→64`).
//! - `source`: `blktune` when made through blktune in the recording process
//!   (exact time), `observed` when the recorder saw the settings differ: made
//!   by another process (such as `blktune set` from another shell) at some
//!   moment of the interval around `t`, which is placed in its middle.
//! - `before`, `after`: the device's whole settings (`scheduler`, `tunables`
//!   as `[name, value]` pairs, `nr_requests`, `read_ahead_kb`, and `knobs`,
//!   the settable queue settings as `[name, value]` pairs, where recorded).
//!
//! **`end`** (the recorder stopped cleanly)
//! - `t` (of the last sample), `wall`, `reason` (`duration`, `signal`,
//!   `stopped`), `samples`.
//!
//! The writer flushes at least every 2 seconds (a gzip sync flush), so a
//! killed recorder leaves a file that reads up to its last seconds. Readers
//! use everything readable: a cut-off last line is dropped, a corrupt line is
//! skipped, and each such problem is reported in one line.
//!
//! Reading never keeps the whole file: [`Recording::open`] scans it once
//! and keeps what a viewer needs, [`Player`] reads it again as it plays,
//! and [`summarize_file`] summarises it in one pass (a pipe works).

mod check;
mod format;
pub mod latency;
mod reader;
mod recorder;
mod recording;
mod replay;
mod summary;
mod writer;

pub use check::{MAX_DEVICES, MAX_LINE};
pub use format::{
    ChangeRecord, ChangeSource, DeviceFacts, DevicesRecord, EndRecord, FORMAT_VERSION, Header,
    HostFacts, Record, Sample, SettingsRecord, counters_to_fields, fields_to_counters,
};
pub use reader::{RecordReader, SHOWN_NOTES};
pub use recorder::{RecordOptions, RecordStats, Recorder, unix_secs};
pub use recording::{MAX_CHANGES, Recording};
pub use replay::{Frame, MAX_BATCH_STATS, MIN_FRAME_GAP, Playback, Player};
pub use summary::{
    BEFORE_WINDOW, ChangeSummary, DeviceSummary, Summary, summarize, summarize_file,
};
pub use writer::{FLUSH_EVERY, RecordWriter, is_gzip_name, is_stdio};

use std::path::{Path, PathBuf};

/// What can go wrong with a recording file.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("'{}' already exists; pass --force to overwrite it", .0.display())]
    Exists(PathBuf),
    #[error("'{}': {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("'{name}' is not a blktune recording: {why}")]
    NotARecording { name: String, why: String },
    #[error(
        "'{name}' is a version {found} recording; this blktune reads version {supported}: use a newer blktune"
    )]
    Version {
        name: String,
        found: u64,
        supported: u32,
    },
    #[error("unknown device '{0}': not a whole block device here")]
    UnknownDevice(String),
    /// The file name is taken by something blktune must not replace (a
    /// symlink, device node, FIFO, another user's file) or has no directory.
    #[error("{0}")]
    Refused(String),
}

impl From<crate::atomic_file::WriteError> for RecordError {
    fn from(e: crate::atomic_file::WriteError) -> Self {
        use crate::atomic_file::WriteError;
        match e {
            WriteError::Exists(p) => RecordError::Exists(p),
            WriteError::Io { path, source } => RecordError::Io { path, source },
            e => RecordError::Refused(e.to_string()),
        }
    }
}

impl RecordError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        RecordError::Io {
            path: path.to_owned(),
            source,
        }
    }
}
