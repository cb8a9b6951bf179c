//! What one tick of the sampler produced.

use super::stats::DeviceStats;
use crate::device::BlockDevice;
use crate::iostat::ExtStats;
use crate::natural::natural_cmp;
use crate::pressure::IoPressure;
use std::sync::Arc;
use std::time::SystemTime;

/// What one tick produced.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Wall-clock time of the diskstats read.
    pub wall: SystemTime,
    /// Monotonic seconds since the sampler started.
    pub t: f64,
    /// Seconds since the previous tick (`None` on the first).
    pub interval: Option<f64>,
    /// Whole devices and their cached settings; shared until the next refresh.
    pub devices: Arc<Vec<BlockDevice>>,
    /// Did this tick re-read device info and settings?
    pub refreshed: bool,
    /// Statistics of every line of diskstats (partitions included), by name.
    pub stats: DeviceStats,
    /// CPU iowait percentage over the interval, from `<proc>/stat`.
    pub iowait_pct: Option<f64>,
    /// CPU busy percentage over the interval (user, nice, system, irq,
    /// softirq of all CPUs' time, [`crate::host::CpuTimes::busy`]): a
    /// saturated CPU is in every latency measured meanwhile.
    pub cpu_busy_pct: Option<f64>,
    /// The system's I/O pressure (PSI, `<proc>/pressure/io`), where the
    /// kernel has it.
    pub pressure: Option<IoPressure>,
    /// Lines of diskstats that could not be parsed, as messages.
    pub warnings: Vec<String>,
}

impl Snapshot {
    /// The statistics of a device, if this interval has them.
    pub fn ext(&self, name: &str) -> Option<&ExtStats> {
        self.stats.get(name).and_then(|s| s.stats.as_ref().ok())
    }

    /// The cached info of a whole device.
    pub fn device(&self, name: &str) -> Option<&BlockDevice> {
        // The sampler publishes devices in natural order: a binary search,
        // and a plain search for lists built otherwise (replay, tests).
        match self
            .devices
            .binary_search_by(|d| natural_cmp(&d.name, name))
        {
            Ok(i) => self.devices.get(i),
            Err(_) => self.devices.iter().find(|d| d.name == name),
        }
    }
}
