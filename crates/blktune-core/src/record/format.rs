//! The serde types of a recording, one per line kind. See the module
//! documentation of [`crate::record`] for the field-by-field description.

use super::latency::{DeviceLat, LatencyFacts};
use crate::device::{BlockDevice, DeviceKind, QueueSettings};
use crate::pressure::Pressure;
use crate::tuner::Wanted;
use crate::who::WhoByDevice;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The recording format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// One line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Record {
    /// The first line.
    Header(Header),
    /// One diskstats read.
    Sample(Sample),
    /// A device's queue settings (at the start, and whenever they differ).
    Settings(SettingsRecord),
    /// The set of whole devices changed (hot-plug).
    Devices(DevicesRecord),
    /// A change of queue settings, to mark on the charts.
    Change(ChangeRecord),
    /// The recording ended cleanly.
    End(EndRecord),
}

/// Facts about the recording and the host it was made on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format version; readers refuse versions newer than [`FORMAT_VERSION`].
    pub version: u32,
    /// `blktune 0.1.0`.
    pub tool: String,
    /// Unix seconds when the recording started (`t` = 0).
    pub started_wall: f64,
    /// The same instant as RFC 3339 UTC, for people reading the file.
    pub started: String,
    /// The requested sample interval in seconds.
    pub interval_s: f64,
    pub host: HostFacts,
    /// The whole devices being recorded, by name.
    pub devices: Vec<DeviceFacts>,
    /// The devices asked for on the command line; `None`: every device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<String>>,
    /// Whether samples carry the kernel's latency histograms (`None`: a
    /// recording made before they existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyFacts>,
}

/// The host a recording was made on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostFacts {
    pub hostname: String,
    /// `uname -r` (`<proc>/sys/kernel/osrelease`).
    pub kernel: String,
    /// Seconds since boot when the recording started.
    pub uptime_s: f64,
    /// `<proc>/sys/kernel/random/boot_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

/// What does not change about a whole device while it exists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceFacts {
    pub name: String,
    pub major: u32,
    pub minor: u32,
    pub kind: DeviceKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    pub size_bytes: u64,
    /// `None`: the device has no `queue/rotational` (older recordings say
    /// `false` for that).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    #[serde(default)]
    pub removable: bool,
    #[serde(default)]
    pub read_only: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holders: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slaves: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diskseq: Option<u64>,
    /// The hardware queue depth (`mq/*/nr_tags`); absent in older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw_queue_depth: Option<u64>,
    /// A dm, md or NVMe multipath device's type, name and uuid (its paths
    /// for a head); absent in older recordings and for other devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<crate::stack::Stack>,
}

impl DeviceFacts {
    /// The recordable facts of a live device (serial and WWID are left out:
    /// a recording is meant to be handed around).
    pub fn of(d: &BlockDevice) -> Self {
        Self {
            name: d.name.clone(),
            major: d.major,
            minor: d.minor,
            kind: d.kind,
            model: d.model.clone(),
            vendor: d.vendor.clone(),
            size_bytes: d.size_bytes,
            rotational: d.rotational,
            removable: d.removable,
            read_only: d.read_only,
            partitions: d.partitions.clone(),
            holders: d.holders.clone(),
            slaves: d.slaves.clone(),
            diskseq: d.diskseq,
            hw_queue_depth: d.hw_queue_depth,
            stack: d.stack.clone(),
        }
    }

    /// A device as replay shows it, with the given queue settings.
    pub fn to_device(&self, queue: QueueSettings) -> BlockDevice {
        BlockDevice {
            name: self.name.clone(),
            major: self.major,
            minor: self.minor,
            kind: self.kind,
            model: self.model.clone(),
            vendor: self.vendor.clone(),
            serial: None,
            wwid: None,
            nguid: None,
            eui: None,
            size_bytes: self.size_bytes,
            size_unknown: false,
            read_only: self.read_only,
            removable: self.removable,
            rotational: self.rotational,
            holders: self.holders.clone(),
            slaves: self.slaves.clone(),
            partitions: self.partitions.clone(),
            diskseq: self.diskseq,
            queue,
            hw_queue_depth: self.hw_queue_depth,
            stack: self.stack.clone(),
            scsi_type: None,
            hidden: false,
        }
    }
}

/// One read of `/proc/diskstats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Monotonic seconds since the recording started.
    pub t: f64,
    /// Unix seconds of the read.
    pub wall: f64,
    /// CPU iowait % over the interval, when `<proc>/stat` was readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iowait_pct: Option<f64>,
    /// CPU busy % over the interval (user, nice, system, irq, softirq).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_busy_pct: Option<f64>,
    /// PSI io `some` % over the interval (`/proc/pressure/io`), where the
    /// kernel has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_some_pct: Option<f64>,
    /// Raw counters by device name (partitions included): the numbers of a
    /// diskstats line after the name, in the kernel's order (11, 15 or 17).
    pub disks: BTreeMap<String, Vec<u64>>,
    /// The kernel's latency histograms of the interval this sample ends, by
    /// whole device (only those with I/O).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lat: BTreeMap<String, DeviceLat>,
    /// Completions of that interval no histogram counted (the kernel had
    /// no room for a new one), of any device.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost: u64,
    /// In a traced recording: that interval's histograms could not be read
    /// (tracing stopped, or a read failed), so a device without `lat` was
    /// not traced then, rather than idle.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untraced: bool,
    /// The kernel's issue program could not be attached, in these words,
    /// once, in the first sample after it failed: from this interval on a
    /// device the kernel does not time the issue of has no device span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_dev_span: Option<String>,
    /// The system's I/O pressure file (`/proc/pressure/io`) as read with
    /// this sample, where the kernel has PSI; replay takes each interval's
    /// stalled share from two samples' totals, as the live view does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi: Option<Pressure>,
    /// Who did each whole device's I/O in the interval this sample ends
    /// (the kernel's attribution, while it was on), by device.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub who: WhoByDevice,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A device's full queue settings at `t`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingsRecord {
    pub t: f64,
    pub device: String,
    pub queue: QueueSettings,
}

/// The whole devices present from `t` on (after hot-plug).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevicesRecord {
    pub t: f64,
    pub devices: Vec<DeviceFacts>,
}

/// Who made a change, as far as the recorder can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeSource {
    /// Made through blktune in the recording process (the TUI), time exact.
    Blktune,
    /// Seen in sysfs: another process (such as `blktune set`) made it some
    /// time in the interval around `t`.
    Observed,
}

/// A change of a device's queue settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeRecord {
    pub t: f64,
    pub device: String,
    /// `mq-deadline→kyber, nr_requests 256→64`.
    pub label: String,
    pub source: ChangeSource,
    pub before: Wanted,
    pub after: Wanted,
}

/// Why a recording ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndRecord {
    pub t: f64,
    pub wall: f64,
    /// `duration`, `signal` or `stopped`.
    pub reason: String,
    pub samples: u64,
}

// The counters of a sample are a diskstats line's numbers after the name.
pub use crate::diskstats::{counters_to_fields, fields_to_counters};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diskstats::{Counters, DiscardCounters, FlushCounters};

    #[test]
    fn counters_round_trip_for_every_kernel_layout() {
        let full = Counters {
            rd_ios: 1,
            rd_merges: 2,
            rd_sectors: 3,
            rd_ticks: 4,
            wr_ios: 5,
            wr_merges: 6,
            wr_sectors: 7,
            wr_ticks: u32::MAX,
            in_flight: 9,
            io_ticks: 10,
            time_in_queue: 11,
            discard: Some(DiscardCounters {
                ios: 12,
                merges: 13,
                sectors: 14,
                ticks: 15,
            }),
            flush: Some(FlushCounters { ios: 16, ticks: 17 }),
        };
        for c in [
            full,
            Counters {
                flush: None,
                ..full
            },
            Counters {
                flush: None,
                discard: None,
                ..full
            },
        ] {
            let f = counters_to_fields(&c);
            assert_eq!(fields_to_counters(&f), Ok(c));
        }
        assert_eq!(counters_to_fields(&full)[16], 17);
        assert!(fields_to_counters(&[1; 12]).is_err());
        let mut wide = vec![0; 11];
        wide[3] = 1 << 32;
        assert!(fields_to_counters(&wide).unwrap_err().contains("counter 4"));
    }

    /// A stack's type, name and uuid travel in a recording (a replay names
    /// `dm-0` `vg0-root` as the live screen did); an older recording has
    /// none, and an unknown rotation stays unknown.
    #[test]
    fn a_stacks_facts_round_trip_and_older_facts_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let t = crate::fake::FakeTree::new(dir.path()).unwrap();
        t.add(
            &crate::fake::FakeDisk::new("dm-0")
                .dev(253, 0)
                .dm("vg0-root", "LVM-abc", &["sda"]),
        )
        .unwrap();
        let root = t.root();
        let d = BlockDevice::read(&root, &root.device("dm-0").unwrap());
        let facts = DeviceFacts::of(&d);
        let json = serde_json::to_string(&facts).unwrap();
        let back: DeviceFacts = serde_json::from_str(&json).unwrap();
        let replayed = back.to_device(d.queue.clone());
        assert_eq!(replayed.stack_name(), Some("vg0-root"));
        assert_eq!(replayed.type_name(), "lvm");
        let old =
            r#"{"name":"sda","major":8,"minor":0,"kind":"ssd","size_bytes":1,"rotational":false}"#;
        let old: DeviceFacts = serde_json::from_str(old).unwrap();
        assert_eq!((old.stack, old.rotational), (None, Some(false)));
    }

    #[test]
    fn records_are_tagged_with_their_type() {
        let r = Record::End(EndRecord {
            t: 1.5,
            wall: 2.0,
            reason: "signal".into(),
            samples: 3,
        });
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.starts_with(r#"{"type":"end","t":1.5"#), "{s}");
        assert_eq!(serde_json::from_str::<Record>(&s).unwrap(), r);
    }
}
