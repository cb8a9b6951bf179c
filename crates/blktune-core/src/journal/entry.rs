//! A journal entry: the original settings of one device, who it was
//! (number, diskseq, boot), which tree it is of and who wrote it; whether it
//! still describes the device of that name, and how the device differs from it.

use super::Tree;
use crate::device::{BlockDevice, QueueSettings};
use crate::wanted::Wanted;
use serde::{Deserialize, Serialize};

/// The original settings of one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub version: u32,
    pub device: String,
    pub major: u32,
    pub minor: u32,
    #[serde(default)]
    pub diskseq: Option<u64>,
    #[serde(default)]
    pub boot_id: Option<String>,
    /// Seconds since the Unix epoch when the entry was written.
    pub saved_at: f64,
    pub original: Wanted,
    /// Which devices it is of (`None`: written by a blktune before trees were
    /// recorded; see [`Journal::load`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<Tree>,
    /// The process that made the first change (`None`: not recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

impl JournalEntry {
    /// Why this entry no longer describes the device now called by its name
    /// (so applying it would put another device's settings on this one), or
    /// `None` when it still does. `current` is `None` when the device is gone;
    /// `boot_id` is the running kernel's.
    pub fn stale_reason(
        &self,
        current: Option<&BlockDevice>,
        boot_id: Option<&str>,
    ) -> Option<&'static str> {
        self.stale_for(current.map(DeviceId::from), boot_id)
    }

    /// [`JournalEntry::stale_reason`] against the device's identity only
    /// (what the tuner reads, instead of everything about the device).
    pub fn stale_for(
        &self,
        current: Option<DeviceId>,
        boot_id: Option<&str>,
    ) -> Option<&'static str> {
        let saved = (
            self.major,
            self.minor,
            self.diskseq,
            self.boot_id.as_deref(),
        );
        stale_reason(saved, current, boot_id)
    }

    /// The identity of the device it was read from.
    pub fn device_id(&self) -> DeviceId {
        DeviceId {
            major: self.major,
            minor: self.minor,
            diskseq: self.diskseq,
        }
    }

    /// For a stale entry: may settings blktune wrote to the earlier device of
    /// this name still be in force on the device there now? Yes when it was
    /// re-created in this boot (a loop device keeps its scheduler and
    /// nr_requests across detach and attach); no when it is gone or the
    /// machine rebooted since.
    pub fn may_linger(&self, current: Option<&BlockDevice>, boot_id: Option<&str>) -> bool {
        let rebooted = matches!(
            (self.boot_id.as_deref(), boot_id),
            (Some(saved), Some(now)) if saved != now
        );
        current.is_some() && !rebooted
    }

    /// The journalled values that `now` does not have, as `name journalled→now`
    /// (empty: the device is exactly as journalled).
    pub fn differences(&self, now: &QueueSettings) -> Vec<String> {
        let o = &self.original;
        let mut out = Vec::new();
        let mut check = |name: &str, want: Option<&str>, got: Option<&str>| {
            if let Some(w) = want
                && got.map(str::trim) != Some(w.trim())
            {
                out.push(format!("{name} {w}→{}", got.unwrap_or("-").trim()));
            }
        };
        let active = now.scheduler.as_ref().map(|s| s.active.as_str());
        check("scheduler", o.scheduler.as_deref(), active);
        for (k, v) in &o.tunables {
            check(k, Some(v), now.tunables.get(k).map(String::as_str));
        }
        let n = |v: Option<u64>| v.map(|n| n.to_string());
        check(
            "nr_requests",
            n(o.nr_requests).as_deref(),
            n(now.nr_requests).as_deref(),
        );
        check(
            "read_ahead_kb",
            n(o.read_ahead_kb).as_deref(),
            n(now.read_ahead_kb).as_deref(),
        );
        for (k, v) in &o.knobs {
            check(k, Some(v), now.knobs.get(k).map(String::as_str));
        }
        out
    }
}

/// Why a device saved as `(major, minor, diskseq, boot id)` is not the
/// device `current` of the boot `boot_id` (`None`: it is). An unknown
/// diskseq or boot id on either side is no difference.
pub(crate) fn stale_reason(
    (major, minor, diskseq, saved_boot): (u32, u32, Option<u64>, Option<&str>),
    current: Option<DeviceId>,
    boot_id: Option<&str>,
) -> Option<&'static str> {
    let Some(d) = current else {
        return Some("the device is gone");
    };
    if let (Some(saved), Some(now)) = (saved_boot, boot_id)
        && saved != now
    {
        return Some("it was saved before the last reboot");
    }
    if let (Some(saved), Some(now)) = (diskseq, d.diskseq)
        && saved != now
    {
        return Some("the device was re-created since (diskseq changed)");
    }
    if (d.major, d.minor) != (major, minor) {
        return Some("the device number changed");
    }
    None
}

/// Who a device is: its number and incarnation, what an entry is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceId {
    pub major: u32,
    pub minor: u32,
    /// `None` on a kernel before 5.15.
    pub diskseq: Option<u64>,
}

impl From<&BlockDevice> for DeviceId {
    fn from(d: &BlockDevice) -> Self {
        Self {
            major: d.major,
            minor: d.minor,
            diskseq: d.diskseq,
        }
    }
}

/// What the revert policy did with a device's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// There was no entry.
    None,
    /// The device equals the journalled originals: the entry is gone.
    Dropped,
    /// The device still differs (these values, `journalled→now`): kept.
    Differs(Vec<String>),
}

/// What an original read from sysfs can never look like: a scheduler name
/// that is not an identifier, a tunable whose name or value is not one the
/// kernel shows (a whole number). Such an entry was not written by blktune
/// and is not written to sysfs on its word.
pub(super) fn implausible_original(w: &Wanted) -> Option<String> {
    if let Some(s) = w.scheduler.as_deref()
        && !crate::os::is_plausible_scheduler_name(s)
    {
        return Some(format!(
            "scheduler '{}' is not a scheduler's name",
            s.escape_debug()
        ));
    }
    for (k, v) in &w.tunables {
        if !crate::os::is_plausible_tunable_name(k) || !crate::sched::is_integer_text(v) {
            return Some(format!(
                "tunable '{}' = '{}' is not a tunable's name and number",
                k.escape_debug(),
                v.escape_debug()
            ));
        }
    }
    for (k, v) in &w.knobs {
        if crate::os::QueueAttr::knob(k).is_none() || !crate::sched::is_integer_text(v) {
            return Some(format!(
                "queue setting '{}' = '{}' is not one blktune sets and a number",
                k.escape_debug(),
                v.escape_debug()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::Journal;
    use super::super::test_support::{entry, names_path};

    #[test]
    fn stale_entries_are_recognised() {
        use crate::fake::{FakeDisk, FakeTree};
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        let mut d = FakeDisk::new("loop0").dev(7, 0);
        d.diskseq = Some(9);
        t.add(&d).unwrap();
        let root = t.root();
        let dev = crate::device::BlockDevice::read(&root, &root.device("loop0").unwrap());
        let mut e = entry("loop0", 128);
        e.boot_id = Some("b1".into());
        assert_eq!(e.stale_reason(Some(&dev), Some("b1")), None);
        assert_eq!(e.stale_reason(Some(&dev), None), None);
        assert!(e.stale_reason(None, Some("b1")).unwrap().contains("gone"));
        assert!(
            e.stale_reason(Some(&dev), Some("b2"))
                .unwrap()
                .contains("reboot")
        );
        assert!(!e.may_linger(None, Some("b1")), "gone");
        assert!(!e.may_linger(Some(&dev), Some("b2")), "rebooted");
        e.diskseq = Some(8);
        assert!(e.may_linger(Some(&dev), Some("b1")), "re-created");
        assert!(
            e.stale_reason(Some(&dev), Some("b1"))
                .unwrap()
                .contains("diskseq")
        );
        e.diskseq = None;
        e.minor = 5;
        assert!(
            e.stale_reason(Some(&dev), Some("b1"))
                .unwrap()
                .contains("number")
        );
    }

    /// An original sysfs could never have shown (a terminal escape as the
    /// scheduler, a word as a tunable's value) is refused, not written back.
    #[test]
    fn an_implausible_original_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("j"));
        let mut e = entry("loop0", 128);
        e.original.scheduler = Some("\u{1b}[2J".into());
        j.save_if_absent(&e).unwrap();
        let err = j.load("loop0").unwrap_err();
        let msg = names_path(&err, &dir.path().join("j/loop0.json"));
        assert!(msg.contains("is not a scheduler's name"), "{msg}");
        assert!(!msg.contains('\u{1b}'), "{msg}");
        j.remove("loop0").unwrap();
        let mut e = entry("loop0", 128);
        e.original.scheduler = Some("mq-deadline".into());
        e.original.tunables = vec![("read_expire".into(), "500; rm".into())];
        j.save_if_absent(&e).unwrap();
        assert!(j.load("loop0").is_err());
        j.remove("loop0").unwrap();
        e.original.tunables = vec![("read_expire".into(), "500\n".into())];
        j.save_if_absent(&e).unwrap();
        assert!(j.load("loop0").unwrap().is_some());
    }
}
