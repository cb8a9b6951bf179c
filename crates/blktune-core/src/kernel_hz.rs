//! The running kernel's tick rate (`CONFIG_HZ`), on which the defaults of
//! the tunables kept in jiffies depend (bfq's `timeout_sync` is HZ/8 ticks:
//! 124 ms at HZ=250, 125 at HZ=1000, 120 at HZ=100). `getconf CLK_TCK` is
//! USER_HZ (100 everywhere), not this.
//!
//! Where it comes from, first found wins: `CONFIG_HZ=` in `<proc>/config.gz`
//! (`CONFIG_IKCONFIG_PROC`), then, on the live machine,
//! `/boot/config-<release>`; else the tick rates the kernel's own stored
//! values allow. A value kept in jiffies always reads back as a whole number
//! of ticks (`jiffies_to_msecs()`), so every such tunable of every device
//! rules out the rates under which it could not be read: 125 ms is no whole
//! number of ticks at 250, 100 or 300 Hz, so a tree showing it ticks at
//! 1000. A tunable then is at its default when it equals the default at any
//! rate still possible ([`KernelHz::is_default`]).

use crate::device::BlockDevice;
use crate::os::SysRoot;
use crate::sched;

/// The tick rates a kernel is built with (`kernel/Kconfig.hz`).
pub const USUAL_HZ: [u64; 4] = [100, 250, 300, 1000];

/// Where the tick rate was learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HzSource {
    /// `CONFIG_HZ` of the kernel's configuration (the file named).
    Config(String),
    /// The rates the stored jiffies values allow.
    Stored,
    /// Nothing narrowed it: every usual rate.
    Unknown,
}

/// The running kernel's tick rate: one value when known, else every rate
/// still possible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelHz {
    candidates: Vec<u64>,
    source: HzSource,
}

impl KernelHz {
    /// A kernel known to tick at `hz`.
    pub fn known(hz: u64) -> Self {
        Self {
            candidates: vec![hz.max(1)],
            source: HzSource::Config(format!("CONFIG_HZ={hz}")),
        }
    }

    /// Nothing known: every usual rate.
    pub fn unknown() -> Self {
        Self {
            candidates: USUAL_HZ.to_vec(),
            source: HzSource::Unknown,
        }
    }

    /// The kernel's configuration, else the rates `devices`' stored
    /// jiffies values allow (their tunables must have been read).
    pub fn read(root: &SysRoot, devices: &[BlockDevice]) -> Self {
        Self::read_config(root).unwrap_or_else(|| Self::of_devices(devices))
    }

    /// `CONFIG_HZ` of the kernel's configuration, when it can be read.
    pub fn read_config(root: &SysRoot) -> Option<Self> {
        let (hz, file) = config_hz(root)?;
        Some(Self {
            candidates: vec![hz],
            source: HzSource::Config(file),
        })
    }

    /// The rates `devices`' stored jiffies values allow ([`KernelHz::from_stored`]).
    pub fn of_devices(devices: &[BlockDevice]) -> Self {
        Self::from_stored(devices.iter().flat_map(|d| {
            d.queue
                .tunables
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
        }))
    }

    /// The usual rates at which every `(tunable, value)` kept in jiffies
    /// is a whole number of ticks; every usual rate when none narrows it
    /// (or when none is left: the values are not the kernel's).
    pub fn from_stored<'a>(values: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut candidates = USUAL_HZ.to_vec();
        let mut narrowed = false;
        for (name, value) in values {
            if !sched::is_jiffies(name) {
                continue;
            }
            let Ok(ms) = value.trim().parse::<u64>() else {
                continue;
            };
            let before = candidates.len();
            candidates.retain(|&hz| is_whole_ticks(ms, hz));
            narrowed |= candidates.len() < before;
        }
        if candidates.is_empty() {
            return Self::unknown();
        }
        Self {
            candidates,
            source: if narrowed {
                HzSource::Stored
            } else {
                HzSource::Unknown
            },
        }
    }

    /// The rates still possible, ascending (one when known).
    pub fn candidates(&self) -> &[u64] {
        &self.candidates
    }

    /// Where the rate was learned.
    pub fn source(&self) -> &HzSource {
        &self.source
    }

    /// Is `value` the default of tunable `name` (a kernel of any rate still
    /// possible sets it on a switch)? `false` for a tunable without a fixed
    /// default or one the catalogue does not know.
    pub fn is_default(&self, name: &str, value: &str) -> bool {
        let value = value.trim();
        self.candidates
            .iter()
            .any(|&hz| sched::default_at(name, hz).is_some_and(|d| d == value))
    }

    /// What a switch to `scheduler` sets each tunable with a fixed default
    /// to, at the lowest rate still possible (the one value when known).
    pub fn default_tunables(&self, scheduler: &str) -> Vec<(&'static str, String)> {
        let hz = self.candidates.first().copied().unwrap_or(250);
        sched::tunables_of(scheduler)
            .filter_map(|t| Some((t.name, sched::default_at(t.name, hz)?)))
            .collect()
    }
}

/// `CONFIG_HZ` and the file it came from: `<proc>/config.gz`, else on the
/// live machine `/boot/config-<release>`.
fn config_hz(root: &SysRoot) -> Option<(u64, String)> {
    if let Some(hz) = root
        .read_proc_gz("config.gz", CONFIG_MAX)
        .and_then(|t| parse_config_hz(&t))
    {
        return Some((hz, format!("{}/config.gz", root.procfs().display())));
    }
    if !root.is_live() {
        return None;
    }
    let release = root.read_proc("sys/kernel/osrelease").ok()?;
    let release = release.trim();
    if !crate::os::is_plausible_device_name(release) {
        return None;
    }
    let path = format!("/boot/config-{release}");
    let text = crate::text::read_capped(std::path::Path::new(&path), CONFIG_MAX).ok()?;
    Some((parse_config_hz(&text)?, path))
}

/// Can a kernel ticking at `hz` show `ms` for a value it keeps in jiffies:
/// is it `jiffies_to_msecs(j)` (j * 1000 / hz, rounded up) of some whole j?
fn is_whole_ticks(ms: u64, hz: u64) -> bool {
    let j = ms.saturating_mul(hz) / 1000;
    [j, j + 1]
        .iter()
        .any(|&j| j.saturating_mul(1000).div_ceil(hz) == ms)
}

/// A kernel configuration is a few hundred KiB; more is not one.
const CONFIG_MAX: u64 = 4 << 20;

/// The value of the `CONFIG_HZ=` line of a kernel configuration.
pub fn parse_config_hz(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
        .filter(|&hz| (24..=10_000).contains(&hz))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_hz_is_read_from_the_config_line() {
        let text =
            "# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_SCHED_HRTICK=y\n";
        assert_eq!(parse_config_hz(text), Some(250));
        assert_eq!(parse_config_hz("CONFIG_HZ_1000=y\n"), None);
        assert_eq!(parse_config_hz("CONFIG_HZ=lots\n"), None);
        assert_eq!(parse_config_hz("CONFIG_HZ=0\n"), None);
    }

    /// What the kernel stores at each rate rules the others out: the
    /// procfs capture's bfq disk (timeout_sync 125) ticks at 1000.
    #[test]
    fn stored_jiffies_values_narrow_the_rate() {
        let hz = KernelHz::from_stored([("timeout_sync", "125"), ("slice_idle", "8")]);
        assert_eq!(hz.candidates(), [1000]);
        assert_eq!(hz.source(), &HzSource::Stored);
        assert!(hz.is_default("timeout_sync", "125"));
        assert!(!hz.is_default("timeout_sync", "124"));
        // 124 is a whole number of ticks at 250, 300 and 1000 Hz: its
        // default at 250 and 300, so untouched.
        let hz = KernelHz::from_stored([("timeout_sync", "124"), ("read_expire", "500")]);
        assert_eq!(hz.candidates(), [250, 300, 1000]);
        assert!(hz.is_default("timeout_sync", "124"));
        assert!(hz.is_default("read_expire", "500"));
        assert!(!hz.is_default("read_expire", "252"));
        // 123 ms is no whole number of ticks at 100 or 250 Hz (but 37 at 300
        // reads 124, and at 1000 anything reads).
        assert!(is_whole_ticks(124, 300) && !is_whole_ticks(125, 300));
        assert!(!is_whole_ticks(125, 250) && is_whole_ticks(128, 250));
        assert!(is_whole_ticks(120, 100) && !is_whole_ticks(125, 100));
        // Nothing in jiffies: nothing ruled out.
        let hz = KernelHz::from_stored([("slice_idle", "8"), ("fifo_batch", "16")]);
        assert_eq!(hz.candidates(), USUAL_HZ);
        assert_eq!(hz.source(), &HzSource::Unknown);
        assert!(KernelHz::unknown().is_default("timeout_sync", "120"));
    }

    #[test]
    fn defaults_follow_the_known_rate() {
        for (hz, timeout) in [(100, "120"), (250, "124"), (300, "124"), (1000, "125")] {
            let k = KernelHz::known(hz);
            assert!(k.is_default("timeout_sync", timeout), "{hz}");
            assert!(k.is_default("read_expire", "500"), "{hz}");
            assert!(k.is_default("write_expire", "5000"), "{hz}");
            let bfq = k.default_tunables("bfq");
            assert!(
                bfq.iter()
                    .any(|(n, v)| *n == "timeout_sync" && v == timeout),
                "{hz}: {bfq:?}"
            );
            assert!(!k.is_default("async_depth", "192"), "derived: no default");
        }
    }
}
