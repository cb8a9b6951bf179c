//! Per-I/O block latency from the kernel: histograms kept by a small BPF
//! program (`bpf/latency.bpf.c`), read once per tick.
//!
//! For every disk (by major:minor and diskseq), direction (read, write,
//! discard, flush) and span, the kernel counts I/Os in log-linear slots
//! ([`hist`]). Spans:
//! - [`Span::Total`]: from the request's start to its completion, the time
//!   r_await averages (`block/blk-mq.c`, `blk_account_io_done`);
//! - [`Span::Device`]: from issue to the driver to completion. Total minus
//!   device is the time spent in the scheduler.
//!
//! [`Tracer`] loads the program and reads the cumulative histograms, and
//! how many completions it could not count (`lost`: a new histogram could
//! not be allocated, so counts can come out short by that many);
//! [`Intervals`] turns two readings into the histograms of the interval
//! between them; [`Summary`] gives p50/p90/p99/p99.9/max with the count, and
//! shows a count instead of a p99 below [`MIN_IOS_FOR_P99`] I/Os.

mod btf_slim;
pub mod hist;
mod intervals;
mod sparse;
mod summary;
mod tracer;
pub mod who;

pub use hist::{Hist, Reset};
pub use intervals::{DeviceInterval, Interval, Intervals};
pub use sparse::{Pool, SparseError, SparseHist};
pub use summary::{
    IoLatency, KernelFigures, MIN_IOS_FOR_P99, MIN_IOS_FOR_P999, Percentiles, Summary, Tail,
};
pub use tracer::{IssueProgram, Tracer, Unavailable, no_device_span_note};

use std::collections::BTreeMap;
use std::fmt;

/// A block device number as userspace writes it (`/sys/block/*/dev`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevId {
    pub major: u32,
    pub minor: u32,
}

impl DevId {
    /// From the kernel's internal dev_t (`major << 20 | minor`, `include/linux/kdev_t.h`).
    pub fn from_kernel(dev: u64) -> Self {
        Self {
            major: (dev >> 20) as u32,
            minor: (dev & 0xf_ffff) as u32,
        }
    }

    /// The kernel's internal dev_t.
    pub fn to_kernel(self) -> u64 {
        u64::from(self.major) << 20 | u64::from(self.minor)
    }
}

impl fmt::Display for DevId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

/// The direction of an I/O, grouped as diskstats groups them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dir {
    Read,
    Write,
    Discard,
    Flush,
}

impl Dir {
    /// All four, in diskstats' order.
    pub const ALL: [Dir; 4] = [Dir::Read, Dir::Write, Dir::Discard, Dir::Flush];

    /// Position in [`Dir::ALL`] (the BPF program's number for it).
    pub fn index(self) -> usize {
        self as usize
    }

    /// iostat's one-letter prefix: `r`, `w`, `d`, `f` (as in r_await).
    pub fn prefix(self) -> &'static str {
        ["r", "w", "d", "f"][self.index()]
    }
}

/// Which part of an I/O's life is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Span {
    /// Start to completion: what r_await averages.
    Total,
    /// Issue to the driver to completion: the device alone.
    Device,
}

/// The cumulative histograms of one device, as read from the kernel.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeviceHists {
    /// The disk's diskseq: a new one means a new device under the same number.
    pub diskseq: u64,
    /// One histogram per span and direction that has seen I/O.
    pub hists: BTreeMap<(Span, Dir), Hist>,
}

/// One reading of the kernel's counts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Readings {
    /// Every traced device's cumulative histograms.
    pub devices: BTreeMap<DevId, DeviceHists>,
    /// Completions the kernel could not count (no room for a new
    /// histogram), of any device, since the program was loaded: summed
    /// over the CPUs modulo 2^64.
    pub lost: u64,
}

/// The key of a device's histograms of one direction in the BPF map:
/// `dev_t << 8 | dir` (the value holds both spans, see [`hist::SPANS_LEN`]).
pub fn map_id(dev: DevId, dir: Dir) -> u64 {
    dev.to_kernel() << 8 | dir.index() as u64
}

/// The device and direction of a map key; `None` for an unknown one.
pub fn parse_map_id(id: u64) -> Option<(DevId, Dir)> {
    let dir = *Dir::ALL.get((id & 0xff) as usize)?;
    Some((DevId::from_kernel(id >> 8), dir))
}

/// The value of a `#define` in the BPF program's source, for the tests
/// that keep Rust's constants in step with the program's.
#[cfg(test)]
fn bpf_define(name: &str) -> &'static str {
    include_str!("../../bpf/latency.bpf.c")
        .lines()
        .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
        .map(str::trim)
        .unwrap_or_else(|| panic!("#define {name} not found"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn kernel_dev_t_is_major_shifted_by_20() {
        // loop0 as the block tracepoints print it (FIELD-NOTES: 7340032).
        assert_eq!(DevId { major: 7, minor: 0 }.to_kernel(), 7_340_032);
        assert_eq!(
            DevId::from_kernel(259 << 20 | 3),
            DevId {
                major: 259,
                minor: 3
            }
        );
        assert_eq!(
            DevId {
                major: 8,
                minor: 16
            }
            .to_string(),
            "8:16"
        );
    }

    #[test]
    fn unknown_map_keys_are_refused() {
        let dev = DevId { major: 7, minor: 2 };
        assert_eq!(parse_map_id(dev.to_kernel() << 8 | 4), None);
        assert_eq!(parse_map_id(dev.to_kernel() << 8 | 0xff), None);
        assert_eq!(Dir::Flush.prefix(), "f");
    }

    proptest! {
        #[test]
        fn map_keys_round_trip(major in 0u32..4096, minor in 0u32..(1 << 20), d in 0usize..4) {
            let dev = DevId { major, minor };
            let dir = Dir::ALL[d];
            prop_assert_eq!(parse_map_id(map_id(dev, dir)), Some((dev, dir)));
        }
    }
}
