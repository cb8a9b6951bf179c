//! Host facts for headers and recordings: host name, kernel, uptime, CPU iowait.
//! All read through the [`SysRoot`] seam (`<proc>/sys/kernel/*`, `<proc>/uptime`,
//! `<proc>/stat`; see `proc(5)`).

use crate::os::SysRoot;
use serde::{Deserialize, Serialize};

/// The aggregate `cpu` line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    pub total: u64,
    pub iowait: u64,
    /// What ran: user, nice, system, irq and softirq (not idle, iowait or
    /// steal, the host's share of a VM's CPUs).
    pub busy: u64,
}

impl CpuTimes {
    /// Parse the first (`cpu `) line of `/proc/stat`.
    pub fn parse(stat: &str) -> Option<Self> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let vals: Vec<u64> = line
            .split_ascii_whitespace()
            .skip(1)
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal [guest guest_nice];
        // guest time is already inside user/nice, so only the first 8 add up.
        let iowait = *vals.get(4)?;
        let total = vals.iter().take(8).sum();
        let busy = [0, 1, 2, 5, 6].iter().filter_map(|&i| vals.get(i)).sum();
        Some(Self {
            total,
            iowait,
            busy,
        })
    }

    /// Read `/proc/stat` through the seam (`None`: unreadable or malformed).
    pub fn read(root: &SysRoot) -> Option<Self> {
        Self::parse(&root.read_proc("stat").ok()?)
    }

    /// Percentage of CPU time that was busy ([`CpuTimes::busy`]) since `prev`.
    pub fn busy_pct_since(&self, prev: &CpuTimes) -> Option<f64> {
        let total = self.total.checked_sub(prev.total)?;
        let busy = self.busy.checked_sub(prev.busy)?;
        (total > 0).then(|| busy as f64 * 100.0 / total as f64)
    }

    /// Percentage of CPU time spent in iowait since `prev`.
    pub fn iowait_pct_since(&self, prev: &CpuTimes) -> Option<f64> {
        let total = self.total.checked_sub(prev.total)?;
        let io = self.iowait.checked_sub(prev.iowait)?;
        (total > 0).then(|| io as f64 * 100.0 / total as f64)
    }
}

/// Facts about the host shown in the header and stored in recordings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HostInfo {
    pub hostname: String,
    pub kernel: String,
    pub uptime_s: f64,
}

impl HostInfo {
    /// Read what the procfs root offers; missing files give empty fields.
    pub fn read(root: &SysRoot) -> Self {
        let read = |rel: &str| root.read_proc(rel).map(|s| s.trim().to_owned()).ok();
        Self {
            hostname: read("sys/kernel/hostname").unwrap_or_default(),
            kernel: read("sys/kernel/osrelease").unwrap_or_default(),
            uptime_s: read("uptime")
                .and_then(|u| u.split_ascii_whitespace().next()?.parse().ok())
                .unwrap_or(0.0),
        }
    }
}

/// `3d 04:05` or `04:05:06` style uptime.
pub fn format_uptime(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    let (d, h, m) = (s / 86400, (s % 86400) / 3600, (s % 3600) / 60);
    if d > 0 {
        format!("{d}d {h:02}:{m:02}")
    } else {
        format!("{h:02}:{m:02}:{:02}", s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iowait_from_two_stat_samples() {
        let a = CpuTimes::parse("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4 5\n").unwrap();
        let b = CpuTimes::parse("cpu  150 0 150 800 300 0 0 0 0 0\n").unwrap();
        assert_eq!(a.total, 1000);
        // user nice system idle iowait irq softirq steal
        let c = CpuTimes::parse("cpu  10 2 30 400 50 6 7 80 0 0\n").unwrap();
        assert_eq!(c.busy, 10 + 2 + 30 + 6 + 7);
        assert_eq!(b.iowait_pct_since(&a), Some(50.0));
        assert_eq!(a.iowait_pct_since(&a), None);
        // 100 of the 400 ticks between a and b ran user or system code.
        assert_eq!(b.busy_pct_since(&a), Some(25.0));
        assert_eq!(a.busy_pct_since(&b), None);
        assert_eq!(CpuTimes::parse("garbage"), None);
    }

    #[test]
    fn uptime_formats() {
        assert_eq!(format_uptime(3661.5), "01:01:01");
        assert_eq!(
            format_uptime(3.0 * 86400.0 + 4.0 * 3600.0 + 5.0 * 60.0),
            "3d 04:05"
        );
    }
}
