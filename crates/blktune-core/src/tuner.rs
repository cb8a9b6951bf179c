//! The tuner: changes a device's scheduler, its tunables, nr_requests and
//! read_ahead_kb as one change.
//!
//! Order matters: switching the scheduler resets `nr_requests` and every
//! `queue/iosched/*` tunable (kernel `block/elevator.c`, `elevator_switch()`;
//! `Documentation/ABI/stable/sysfs-block`), so the order is scheduler, then
//! its tunables, then nr_requests, then read_ahead_kb. Every value is
//! validated first, read back after writing, and if any step fails what was
//! already changed is put back. The device's original settings are journalled
//! before its first change.

pub use crate::device::hw_queue_depth;
use crate::device::{BlockDevice, QueueSettings};
use crate::error::TuneError;
use crate::journal::{JOURNAL_VERSION, Journal, JournalEntry};
use crate::os::{DeviceName, QueueAttr, SysRoot, is_plausible_tunable_name};
use crate::sched;
use serde::{Deserialize, Serialize};
use std::io;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Wanted settings; `None` (or an absent tunable) means "leave as it is".
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Settings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// Tunables of the target scheduler, applied in this order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tunables: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead_kb: Option<u64>,
}

impl Settings {
    /// Every current setting of a device, to restore it later.
    pub fn snapshot_of(q: &QueueSettings) -> Self {
        Self {
            scheduler: q.scheduler.as_ref().map(|s| s.active.clone()),
            tunables: q
                .tunables
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            nr_requests: q.scheduler.as_ref().and(q.nr_requests),
            read_ahead_kb: q.read_ahead_kb,
        }
    }

    /// Does this ask for nothing?
    pub fn is_empty(&self) -> bool {
        self.scheduler.is_none()
            && self.tunables.is_empty()
            && self.nr_requests.is_none()
            && self.read_ahead_kb.is_none()
    }

    /// One-line summary: `scheduler=kyber nr_requests=64`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = &self.scheduler {
            parts.push(format!("scheduler={s}"));
        }
        for (k, v) in &self.tunables {
            parts.push(format!("{k}={v}"));
        }
        if let Some(n) = self.nr_requests {
            parts.push(format!("nr_requests={n}"));
        }
        if let Some(n) = self.read_ahead_kb {
            parts.push(format!("read_ahead_kb={n}"));
        }
        parts.join(" ")
    }
}

/// One value that changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueChange {
    /// `scheduler`, `nr_requests`, `read_ahead_kb` or `iosched/<name>`.
    pub attr: String,
    pub before: String,
    pub after: String,
}

/// A value the kernel stored as something else than what was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// `nr_requests`, `read_ahead_kb` or a tunable's name.
    pub attr: String,
    pub wrote: String,
    pub stored: String,
}

impl Stored {
    /// `kernel rounded read_expire 250 -> 252 ms`
    pub fn line(&self) -> String {
        sched::stored_note(&self.attr, &self.wrote, &self.stored)
    }
}

/// The result of a successful change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub device: String,
    /// Every value that differs between before and after, in write order.
    pub changes: Vec<ValueChange>,
    pub before: QueueSettings,
    pub after: QueueSettings,
    /// Time spent in the kernel's writes (a scheduler switch drains the queue).
    pub kernel_time: Duration,
    /// Values the kernel read back as something else than was written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stored: Vec<Stored>,
}

impl Outcome {
    /// `mq-deadline→kyber, nr_requests 256→64`, for status lines and chart
    /// markers. A tunable the old scheduler did not have (written after a
    /// switch, e.g. when a revert restores the original scheduler's values)
    /// reads `read_expire=500`, not `iosched/read_expire -→500`.
    pub fn label(&self) -> String {
        if self.changes.is_empty() {
            return "no change".into();
        }
        let label = self.label_changes();
        if self.stored.is_empty() {
            return label;
        }
        let notes: Vec<String> = self.stored.iter().map(Stored::line).collect();
        format!("{label} ({})", notes.join("; "))
    }

    fn label_changes(&self) -> String {
        self.changes
            .iter()
            .map(|c| {
                let short = c.attr.strip_prefix("iosched/");
                match short {
                    _ if c.attr == "scheduler" => format!("{}→{}", c.before, c.after),
                    Some(name) if c.before == "-" => format!("{name}={}", c.after),
                    _ => format!("{} {}→{}", c.attr, c.before, c.after),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Resolve user input to a whole device, with the errors the CLI shows.
pub fn resolve(root: &SysRoot, name: &str) -> Result<DeviceName, TuneError> {
    if let Some(d) = root.device(name) {
        return Ok(d);
    }
    if let Some(parent) = root.parent_of_partition(name) {
        return Err(TuneError::Partition {
            name: name.into(),
            parent: parent.to_string(),
        });
    }
    Err(TuneError::UnknownDevice {
        name: name.chars().take(64).collect(),
        sysfs: root.sysfs().display().to_string(),
    })
}

/// Check a request against the device's current settings and its hardware
/// queue depth (`hw_depth`, [`hw_queue_depth`]), without writing: every
/// value through the scheduler catalogue ([`crate::sched`]), the one check
/// the CLI, the TUI, export and the shoot-out share. `Ok` is the request to
/// write, tunable values in plain decimal.
pub fn validate(
    dev: &DeviceName,
    q: &QueueSettings,
    hw_depth: Option<u64>,
    want: &Settings,
) -> Result<Settings, TuneError> {
    let needs_queue =
        want.scheduler.is_some() || !want.tunables.is_empty() || want.nr_requests.is_some();
    let sched = match (&q.scheduler, needs_queue) {
        (None, true) => {
            return Err(TuneError::NoScheduler {
                dev: dev.to_string(),
            });
        }
        (s, _) => s,
    };
    let target = want
        .scheduler
        .clone()
        .or_else(|| sched.as_ref().map(|s| s.active.clone()))
        .unwrap_or_default();
    if let (Some(name), Some(s)) = (&want.scheduler, sched)
        && !s.available.contains(name)
    {
        return Err(TuneError::UnknownScheduler {
            dev: dev.to_string(),
            name: name.chars().take(32).collect(),
            available: s.available.clone(),
        });
    }
    let bad = |e: sched::ValueError| TuneError::BadValue {
        dev: dev.to_string(),
        what: e.what,
        value: e.value,
        why: e.why,
    };
    if let Some(n) = want.nr_requests {
        sched::check_nr_requests(n, &target, hw_depth).map_err(bad)?;
    }
    if let Some(n) = want.read_ahead_kb {
        sched::check_read_ahead_kb(n, sched::page_kb()).map_err(bad)?;
    }
    let mut out = want.clone();
    if !want.tunables.is_empty() {
        // The active scheduler's tunables are what sysfs lists; another one's are the kernel's.
        let known: Vec<String> = if sched.as_ref().is_some_and(|s| s.active == target) {
            q.tunables.keys().cloned().collect()
        } else {
            sched::known_tunables(&target)
                .iter()
                .map(|s| s.to_string())
                .collect()
        };
        out.tunables.clear();
        for (name, value) in &want.tunables {
            if !is_plausible_tunable_name(name) || !known.contains(name) {
                return Err(TuneError::UnknownTunable {
                    dev: dev.to_string(),
                    scheduler: target.clone(),
                    name: name.chars().take(64).collect(),
                    known,
                });
            }
            let v = sched::check_tunable(name, value).map_err(bad)?;
            out.tunables.push((name.clone(), v));
        }
    }
    Ok(out)
}

/// Applies changes to one [`SysRoot`], journalling originals.
#[derive(Debug, Clone)]
pub struct Tuner {
    root: SysRoot,
    journal: Option<Journal>,
    /// The device incarnation the caller saw (name, diskseq): see [`Tuner::expecting`].
    seen: Option<(String, u64)>,
}

/// A write step: what to write and what to expect when reading it back.
struct Step {
    attr: QueueAttr,
    value: String,
}

impl Tuner {
    /// A tuner that journals originals in `journal` (`None`: no journal, for restores).
    pub fn new(root: SysRoot, journal: Option<Journal>) -> Self {
        Self {
            root,
            journal,
            seen: None,
        }
    }

    /// Only touch `device` while its `diskseq` is the one the caller saw
    /// (kernel 5.15+: a new number on every attach, so a loop device detached
    /// and re-attached under the same name is another device). Every change
    /// checks the diskseq before each of its writes anyway, against the one
    /// it read first; this also ties the first write to what the caller saw.
    /// `None` (a kernel without diskseq) leaves only the per-change check.
    pub fn expecting(mut self, device: &str, diskseq: Option<u64>) -> Self {
        self.seen = diskseq.map(|d| (device.to_owned(), d));
        self
    }

    /// The diskseq given to [`Tuner::expecting`].
    pub fn seen_diskseq(&self) -> Option<u64> {
        self.seen.as_ref().map(|(_, s)| *s)
    }

    /// The sysfs/procfs root.
    pub fn root(&self) -> &SysRoot {
        &self.root
    }

    /// The journal, if any.
    pub fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    /// Validate and apply `want` to the device called `name`.
    pub fn apply(&self, name: &str, want: &Settings) -> Result<Outcome, TuneError> {
        self.apply_checked(name, want, true)
    }

    /// Put a device back to `original` (journal entries, undo), without
    /// journalling and without range checks: the values came from the kernel.
    pub fn restore(&self, name: &str, original: &Settings) -> Result<Outcome, TuneError> {
        let tuner = Tuner {
            journal: None,
            ..self.clone()
        };
        tuner.apply_checked(name, original, false)
    }

    fn apply_checked(
        &self,
        name: &str,
        want: &Settings,
        strict: bool,
    ) -> Result<Outcome, TuneError> {
        let dev = resolve(&self.root, name)?;
        // The incarnation every write below must still find (see `expecting`).
        let seq = read_diskseq(&self.root, &dev);
        if let Some((_, seen)) = self.seen.as_ref().filter(|(n, _)| n == dev.as_str())
            && seq != Some(*seen)
        {
            return Err(replaced(&dev, *seen, seq));
        }
        let before = QueueSettings::read(&self.root, &dev);
        let needs_scheduler = want.scheduler.is_some() || !want.tunables.is_empty();
        if needs_scheduler
            && before.scheduler.is_none()
            && let Ok(raw) = self.root.read_queue_attr(&dev, &QueueAttr::Scheduler)
        {
            // The file is there but says something we cannot parse: do not
            // pretend the device has no scheduler, and touch nothing.
            return Err(TuneError::ReadFailed {
                dev: dev.to_string(),
                attr: "queue/scheduler".into(),
                source: io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "unexpected content '{}'",
                        raw.chars().take(64).collect::<String>().escape_debug()
                    ),
                ),
            });
        }
        let checked;
        let want = if strict {
            checked = validate(&dev, &before, hw_queue_depth(&self.root, &dev), want)?;
            &checked
        } else if want.scheduler.is_some() && before.scheduler.is_none() {
            return Err(TuneError::NoScheduler {
                dev: dev.to_string(),
            });
        } else {
            want
        };
        self.check_permission(&dev, want)?;
        if is_no_op(&before, want) {
            // Nothing to write, so nothing to journal: an entry made now would
            // record the values already in force as the "original".
            return Ok(Outcome {
                device: dev.to_string(),
                changes: Vec::new(),
                after: before.clone(),
                before,
                kernel_time: Duration::ZERO,
                stored: Vec::new(),
            });
        }
        let journalled = match &self.journal {
            Some(j) => self.journal_original(j, &dev, &before)?,
            None => false,
        };
        let mut kernel_time = Duration::ZERO;
        match self.write_all(&dev, seq, want, &mut kernel_time) {
            Ok(()) => {
                let after = QueueSettings::read(&self.root, &dev);
                let mut changes = diff(&before, &after);
                add_requested_tunables(&mut changes, &before, &after, want);
                Ok(Outcome {
                    device: dev.to_string(),
                    changes,
                    stored: stored_otherwise(want, &after),
                    before,
                    after,
                    kernel_time,
                })
            }
            Err(err) => {
                let (err, restored) = self.roll_back(&dev, seq, &before, err);
                // The entry written for this change is not needed once the
                // device is back as it was; an older entry stays.
                if journalled
                    && restored
                    && let Some(j) = &self.journal
                {
                    let _ = j.remove(dev.as_str());
                }
                Err(err)
            }
        }
    }

    fn check_permission(&self, dev: &DeviceName, want: &Settings) -> Result<(), TuneError> {
        let mut attrs = Vec::new();
        if want.scheduler.is_some() {
            attrs.push(QueueAttr::Scheduler);
        }
        if want.nr_requests.is_some() {
            attrs.push(QueueAttr::NrRequests);
        }
        if want.read_ahead_kb.is_some() {
            attrs.push(QueueAttr::ReadAheadKb);
        }
        // Tunables of the active scheduler exist now; a new scheduler's only
        // after the switch, which the scheduler check above already covers.
        if want.scheduler.is_none() {
            attrs.extend(
                want.tunables
                    .iter()
                    .map(|(name, _)| QueueAttr::Tunable(name.clone())),
            );
        }
        for attr in attrs {
            if !self.root.can_write_queue_attr(dev, &attr) {
                let path = self
                    .root
                    .queue_attr_path(dev, &attr)
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                if !self.root.device_dir(dev).exists() {
                    return Err(TuneError::Vanished {
                        dev: dev.to_string(),
                        rollback: None,
                    });
                }
                return Err(TuneError::PermissionDenied {
                    dev: dev.to_string(),
                    path,
                });
            }
        }
        Ok(())
    }

    /// Save the device's original settings before its first change.
    /// Returns whether a new entry was written. An entry left from an
    /// earlier incarnation of the device (another boot, another diskseq) is
    /// replaced: it is not this device's original.
    fn journal_original(
        &self,
        j: &Journal,
        dev: &DeviceName,
        q: &QueueSettings,
    ) -> Result<bool, TuneError> {
        let info = BlockDevice::read(&self.root, dev);
        let boot = boot_id(&self.root);
        let entry = JournalEntry {
            version: JOURNAL_VERSION,
            device: dev.to_string(),
            major: info.major,
            minor: info.minor,
            diskseq: info.diskseq,
            boot_id: boot.clone(),
            saved_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            original: Settings::snapshot_of(q),
        };
        let err = |source| TuneError::Journal {
            dir: j.dir().display().to_string(),
            source,
        };
        match j.load(dev.as_str()) {
            Ok(Some(old)) if old.stale_reason(Some(&info), boot.as_deref()).is_none() => Ok(false),
            // Stale or unreadable: this device's original must be recorded.
            Ok(Some(_)) | Err(_) => j.replace(&entry).map(|()| true).map_err(err),
            Ok(None) => j.save_if_absent(&entry).map_err(err),
        }
    }

    /// Write the scheduler, then (against fresh reads) tunables, nr_requests, read-ahead.
    fn write_all(
        &self,
        dev: &DeviceName,
        seq: Option<u64>,
        want: &Settings,
        kt: &mut Duration,
    ) -> Result<(), TuneError> {
        let current = QueueSettings::read(&self.root, dev);
        if let Some(s) = &want.scheduler
            && current.scheduler.as_ref().is_none_or(|c| &c.active != s)
        {
            self.step(
                dev,
                &Step {
                    attr: QueueAttr::Scheduler,
                    value: s.clone(),
                },
                seq,
                kt,
            )?;
        }
        // Re-read: the switch reset nr_requests and the tunables.
        let current = QueueSettings::read(&self.root, dev);
        for (name, value) in &want.tunables {
            if current.tunables.get(name).map(|v| v.trim()) != Some(value.trim()) {
                if !self
                    .root
                    .dev_attr_exists(dev, &format!("queue/iosched/{name}"))
                {
                    return Err(TuneError::UnknownTunable {
                        dev: dev.to_string(),
                        scheduler: current.active_label().into(),
                        name: name.clone(),
                        known: current.tunables.keys().cloned().collect(),
                    });
                }
                self.step(
                    dev,
                    &Step {
                        attr: QueueAttr::Tunable(name.clone()),
                        value: value.trim().into(),
                    },
                    seq,
                    kt,
                )?;
            }
        }
        if let Some(n) = want.nr_requests
            && current.nr_requests != Some(n)
        {
            self.step(
                dev,
                &Step {
                    attr: QueueAttr::NrRequests,
                    value: n.to_string(),
                },
                seq,
                kt,
            )?;
        }
        if let Some(n) = want.read_ahead_kb
            && current.read_ahead_kb != Some(n)
        {
            self.step(
                dev,
                &Step {
                    attr: QueueAttr::ReadAheadKb,
                    value: n.to_string(),
                },
                seq,
                kt,
            )?;
        }
        Ok(())
    }

    /// One write and its read-back.
    fn step(
        &self,
        dev: &DeviceName,
        step: &Step,
        seq: Option<u64>,
        kt: &mut Duration,
    ) -> Result<(), TuneError> {
        // Never write to another device that took the name since the change
        // began (a loop device detached and re-attached: new diskseq).
        if let Some(seen) = seq {
            let now = read_diskseq(&self.root, dev);
            if now != Some(seen) && self.root.device_dir(dev).exists() {
                return Err(replaced(dev, seen, now));
            }
        }
        let t = Instant::now();
        let res = self.root.write_queue_attr(dev, &step.attr, &step.value);
        *kt += t.elapsed();
        if let Err(source) = res {
            if !self.root.device_dir(dev).exists() {
                return Err(TuneError::Vanished {
                    dev: dev.to_string(),
                    rollback: None,
                });
            }
            if source.kind() == io::ErrorKind::PermissionDenied {
                let path = self
                    .root
                    .queue_attr_path(dev, &step.attr)
                    .map(|p| p.display().to_string());
                return Err(TuneError::PermissionDenied {
                    dev: dev.to_string(),
                    path: path.unwrap_or_default(),
                });
            }
            // EINVAL on nr_requests with `none` has one usual cause (kernel
            // `blk_mq_update_nr_requests`): say it, as no pre-check can know the depth.
            let source = if step.attr == QueueAttr::NrRequests
                && source.raw_os_error() == Some(nix::libc::EINVAL)
                && QueueSettings::read(&self.root, dev).active_label() == "none"
            {
                io::Error::new(
                    source.kind(),
                    format!(
                        "{source}: without a scheduler nr_requests cannot exceed the hardware queue depth"
                    ),
                )
            } else {
                source
            };
            return Err(TuneError::WriteFailed {
                dev: dev.to_string(),
                attr: step.attr.label(),
                value: step.value.clone(),
                source,
                rollback: None,
            });
        }
        let got = self
            .root
            .read_queue_attr(dev, &step.attr)
            .map_err(|source| {
                if self.root.device_dir(dev).exists() {
                    TuneError::ReadFailed {
                        dev: dev.to_string(),
                        attr: step.attr.label(),
                        source,
                    }
                } else {
                    TuneError::Vanished {
                        dev: dev.to_string(),
                        rollback: None,
                    }
                }
            })?;
        let ok = match &step.attr {
            QueueAttr::Scheduler => {
                crate::device::SchedulerState::parse(&got).is_some_and(|s| s.active == step.value)
            }
            // Some tunables are kept in jiffies and read back rounded; the
            // kernel accepted the write, so what it stored is the truth.
            QueueAttr::Tunable(_) => true,
            _ => got.trim() == step.value,
        };
        if ok {
            Ok(())
        } else {
            Err(TuneError::ReadBack {
                dev: dev.to_string(),
                attr: step.attr.label(),
                wanted: step.value.clone(),
                got,
                rollback: None,
            })
        }
    }

    /// Put `before` back after a failed step and attach what happened to the
    /// error. Also says whether the device is now as it was before.
    fn roll_back(
        &self,
        dev: &DeviceName,
        seq: Option<u64>,
        before: &QueueSettings,
        mut err: TuneError,
    ) -> (TuneError, bool) {
        if matches!(err, TuneError::Replaced { .. }) {
            // Its message says it already: nothing goes onto the new device.
            return (err, false);
        }
        let original = Settings::snapshot_of(before);
        let now = QueueSettings::read(&self.root, dev);
        let (note, restored) = if !self.root.device_dir(dev).exists() {
            (
                "nothing to roll back: the device is gone".to_string(),
                false,
            )
        } else if let Some(s) = seq.filter(|s| read_diskseq(&self.root, dev) != Some(*s)) {
            (
                format!(
                    "nothing rolled back: another device has the name now (diskseq {s}, now {})",
                    diskseq_text(read_diskseq(&self.root, dev))
                ),
                false,
            )
        } else if Settings::snapshot_of(&now) == original {
            ("nothing was changed".to_string(), true)
        } else {
            let mut kt = Duration::ZERO;
            match self.write_all(dev, seq, &original, &mut kt) {
                Ok(()) => ("rolled back to the previous settings".to_string(), true),
                Err(e) => (
                    format!("ROLLBACK FAILED ({e}); run 'blktune revert {dev}'"),
                    false,
                ),
            }
        };
        match &mut err {
            TuneError::WriteFailed { rollback, .. }
            | TuneError::ReadBack { rollback, .. }
            | TuneError::Vanished { rollback, .. } => *rollback = Some(note),
            _ => {}
        }
        (err, restored)
    }
}

/// The device's diskseq now (`None`: no such file, a kernel before 5.15).
pub fn read_diskseq(root: &SysRoot, dev: &DeviceName) -> Option<u64> {
    root.read_dev_attr(dev, "diskseq")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

fn diskseq_text(seq: Option<u64>) -> String {
    seq.map_or_else(|| "none".into(), |s| s.to_string())
}

fn replaced(dev: &DeviceName, seen: u64, now: Option<u64>) -> TuneError {
    TuneError::Replaced {
        dev: dev.to_string(),
        seen,
        now: diskseq_text(now),
    }
}

/// The values of `want` the kernel stored as something else (jiffies
/// rounding, a page-rounded read-ahead, a raised nr_requests), as read back.
fn stored_otherwise(want: &Settings, after: &QueueSettings) -> Vec<Stored> {
    let mut out = Vec::new();
    let mut check = |attr: &str, wrote: String, got: Option<String>| {
        if let Some(got) = got.map(|g| g.trim().to_owned())
            && got != wrote.trim()
        {
            out.push(Stored {
                attr: attr.into(),
                wrote: wrote.trim().into(),
                stored: got,
            });
        }
    };
    for (name, value) in &want.tunables {
        check(name, value.clone(), after.tunables.get(name).cloned());
    }
    if let Some(n) = want.nr_requests {
        check(
            "nr_requests",
            n.to_string(),
            after.nr_requests.map(|n| n.to_string()),
        );
    }
    if let Some(n) = want.read_ahead_kb {
        check(
            "read_ahead_kb",
            n.to_string(),
            after.read_ahead_kb.map(|n| n.to_string()),
        );
    }
    out
}

/// List tunables the caller asked for even when [`diff`] hides them (after a
/// switch, tunables of the new scheduler have no "before"): the user should
/// see every value they set.
fn add_requested_tunables(
    changes: &mut Vec<ValueChange>,
    before: &QueueSettings,
    after: &QueueSettings,
    want: &Settings,
) {
    for (name, _) in &want.tunables {
        let attr = format!("iosched/{name}");
        if changes.iter().any(|c| c.attr == attr) {
            continue;
        }
        let b = before.tunables.get(name);
        let a = after.tunables.get(name);
        if b == a {
            continue;
        }
        let entry = ValueChange {
            attr,
            before: b.cloned().unwrap_or_else(|| "-".into()),
            after: a.cloned().unwrap_or_else(|| "-".into()),
        };
        // Keep the write order: scheduler, tunables, nr_requests, read_ahead_kb.
        let at = changes
            .iter()
            .position(|c| c.attr == "nr_requests" || c.attr == "read_ahead_kb")
            .unwrap_or(changes.len());
        changes.insert(at, entry);
    }
}

/// Would applying `want` to a device in state `q` write nothing? (Every
/// requested value is already in force; a scheduler switch never is a no-op,
/// as it resets the others.)
pub fn is_no_op(q: &QueueSettings, want: &Settings) -> bool {
    let active = q.scheduler.as_ref().map(|s| s.active.as_str());
    want.scheduler.as_deref().is_none_or(|s| Some(s) == active)
        && want
            .tunables
            .iter()
            .all(|(k, v)| q.tunables.get(k).map(|c| c.trim()) == Some(v.trim()))
        && want.nr_requests.is_none_or(|n| q.nr_requests == Some(n))
        && want
            .read_ahead_kb
            .is_none_or(|n| q.read_ahead_kb == Some(n))
}

/// The running kernel's boot id, to tell a stale journal from a live one.
pub fn boot_id(root: &SysRoot) -> Option<String> {
    root.read_proc("sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Every value that differs, in the safe write order.
pub fn diff(before: &QueueSettings, after: &QueueSettings) -> Vec<ValueChange> {
    let mut out = Vec::new();
    let mut push = |attr: &str, b: Option<String>, a: Option<String>| {
        if b != a {
            out.push(ValueChange {
                attr: attr.into(),
                before: b.unwrap_or_else(|| "-".into()),
                after: a.unwrap_or_else(|| "-".into()),
            });
        }
    };
    let b_s = before.scheduler.as_ref().map(|s| s.active.clone());
    let a_s = after.scheduler.as_ref().map(|s| s.active.clone());
    let switched = b_s != a_s;
    push("scheduler", b_s, a_s);
    // After a switch the old tunables are gone and the new ones are defaults:
    // only list tunables that both schedulers have or that were set.
    for (k, v) in &after.tunables {
        match before.tunables.get(k) {
            Some(old) if old != v => {
                push(&format!("iosched/{k}"), Some(old.clone()), Some(v.clone()))
            }
            None if !switched => push(&format!("iosched/{k}"), None, Some(v.clone())),
            _ => {}
        }
    }
    push(
        "nr_requests",
        before.nr_requests.map(|n| n.to_string()),
        after.nr_requests.map(|n| n.to_string()),
    );
    push(
        "read_ahead_kb",
        before.read_ahead_kb.map(|n| n.to_string()),
        after.read_ahead_kb.map(|n| n.to_string()),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeDisk, FakeTree};

    fn setup() -> (tempfile::TempDir, FakeTree, Tuner) {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(&dir.path().join("root")).unwrap();
        t.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
        let tuner = Tuner::new(t.root(), Some(Journal::new(dir.path().join("j"))));
        (dir, t, tuner)
    }

    #[test]
    fn a_label_names_new_tunables_by_value_and_changed_ones_by_before_and_after() {
        let change = |attr: &str, before: &str, after: &str| ValueChange {
            attr: attr.into(),
            before: before.into(),
            after: after.into(),
        };
        let o = Outcome {
            device: "sda".into(),
            changes: vec![
                change("scheduler", "bfq", "mq-deadline"),
                change("iosched/read_expire", "-", "250"),
                change("iosched/fifo_batch", "16", "8"),
                change("nr_requests", "64", "256"),
            ],
            before: QueueSettings::default(),
            after: QueueSettings::default(),
            kernel_time: Duration::ZERO,
            stored: Vec::new(),
        };
        assert_eq!(
            o.label(),
            "bfq→mq-deadline, read_expire=250, iosched/fifo_batch 16→8, nr_requests 64→256"
        );
    }

    #[test]
    fn a_stale_journal_entry_is_replaced_by_the_true_original() {
        let (_d, _t, tuner) = setup();
        let j = tuner.journal().unwrap();
        let old = JournalEntry {
            version: JOURNAL_VERSION,
            device: "sda".into(),
            major: 8,
            minor: 0,
            diskseq: None,
            boot_id: Some("an-earlier-boot".into()),
            saved_at: 0.0,
            original: Settings {
                scheduler: Some("bfq".into()),
                ..Settings::default()
            },
        };
        j.save_if_absent(&old).unwrap();
        tuner
            .apply(
                "sda",
                &Settings {
                    read_ahead_kb: Some(256),
                    ..Settings::default()
                },
            )
            .unwrap();
        let e = j.load("sda").unwrap().unwrap();
        assert_eq!(e.original.scheduler.as_deref(), Some("mq-deadline"));
        assert_eq!(e.original.read_ahead_kb, Some(128));
        assert_eq!(
            e.boot_id.as_deref(),
            Some("00000000-0000-0000-0000-000000000001")
        );
    }

    #[test]
    fn a_live_entry_is_kept_on_a_second_change() {
        let (_d, _t, tuner) = setup();
        let ra = |n| Settings {
            read_ahead_kb: Some(n),
            ..Settings::default()
        };
        tuner.apply("sda", &ra(256)).unwrap();
        let o = tuner.apply("sda", &ra(512)).unwrap();
        assert_eq!(o.changes[0].before, "256");
        let e = tuner.journal().unwrap().load("sda").unwrap().unwrap();
        assert_eq!(
            e.original.read_ahead_kb,
            Some(128),
            "the first original wins"
        );
    }

    #[test]
    fn a_no_op_writes_no_journal_entry_and_keeps_an_existing_one() {
        let (_d, _t, tuner) = setup();
        let j = tuner.journal().unwrap();
        let same = Settings {
            scheduler: Some("mq-deadline".into()),
            read_ahead_kb: Some(128),
            ..Settings::default()
        };
        let o = tuner.apply("sda", &same).unwrap();
        assert!(o.changes.is_empty(), "{:?}", o.changes);
        assert!(j.load("sda").unwrap().is_none(), "a no-op journalled");
        let ra = |n| Settings {
            read_ahead_kb: Some(n),
            ..Settings::default()
        };
        tuner.apply("sda", &ra(256)).unwrap();
        let saved = j.load("sda").unwrap().unwrap();
        let o = tuner.apply("sda", &ra(256)).unwrap();
        assert!(o.changes.is_empty());
        assert_eq!(
            j.load("sda").unwrap().unwrap(),
            saved,
            "the original is kept"
        );
    }

    #[test]
    fn nr_requests_above_the_tag_depth_under_none_is_refused_before_writing() {
        let (_d, t, tuner) = setup();
        let root = t.root();
        let dev = root.device("sda").unwrap();
        for (q, tags) in [("0", "64"), ("1", "32")] {
            let dir = root.device_dir(&dev).join("mq").join(q);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("nr_tags"), format!("{tags}\n")).unwrap();
        }
        assert_eq!(hw_queue_depth(&root, &dev), Some(32));
        let want = |s: &str, n| Settings {
            scheduler: Some(s.into()),
            nr_requests: Some(n),
            ..Settings::default()
        };
        let e = tuner.apply("sda", &want("none", 33)).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        let msg = e.to_string();
        assert!(msg.contains("'33'") && msg.contains("4 to 32"), "{msg}");
        assert_eq!(
            QueueSettings::read(&root, &dev).active_label(),
            "mq-deadline"
        );
        assert!(tuner.journal().unwrap().load("sda").unwrap().is_none());
        // With a scheduler the tags are the scheduler's: the depth is no limit.
        tuner.apply("sda", &want("kyber", 1024)).unwrap();
    }

    #[test]
    fn validation_rejects_before_anything_is_read_back() {
        let (_d, t, _tuner) = setup();
        let root = t.root();
        let dev = root.device("sda").unwrap();
        let q = QueueSettings::read(&root, &dev);
        let ok = Settings {
            scheduler: Some("kyber".into()),
            tunables: vec![("read_lat_nsec".into(), "1000".into())],
            nr_requests: Some(2048),
            read_ahead_kb: Some(0),
        };
        assert!(validate(&dev, &q, None, &ok).is_ok());
        for bad in [
            Settings {
                nr_requests: Some(3),
                ..ok.clone()
            },
            Settings {
                nr_requests: Some(2049),
                ..ok.clone()
            },
            Settings {
                read_ahead_kb: Some(sched::READ_AHEAD_KB_MAX + sched::page_kb()),
                ..ok.clone()
            },
            Settings {
                scheduler: Some("cfq".into()),
                ..ok.clone()
            },
            Settings {
                tunables: vec![("read_expire".into(), "1".into())],
                ..ok.clone()
            },
            Settings {
                tunables: vec![("read_lat_nsec".into(), "1e6".into())],
                ..ok.clone()
            },
            Settings {
                tunables: vec![("read_lat_nsec".into(), "".into())],
                ..ok.clone()
            },
        ] {
            let e = validate(&dev, &q, None, &bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(e.to_string().starts_with("'sda'"), "{e}");
        }
    }

    #[test]
    fn a_value_the_kernel_would_clamp_or_wrap_is_refused_before_any_write() {
        let (_d, t, tuner) = setup();
        let root = t.root();
        let dev = root.device("sda").unwrap();
        let before = QueueSettings::read(&root, &dev);
        let tunable = |s: Option<&str>, k: &str, v: &str| Settings {
            scheduler: s.map(Into::into),
            tunables: vec![(k.into(), v.into())],
            ..Settings::default()
        };
        let e = tuner
            .apply("sda", &tunable(None, "front_merges", "7"))
            .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "'sda': front_merges '7' is out of range: 0 to 1"
        );
        // Another scheduler's tunable is checked before the switch.
        let e = tuner
            .apply(
                "sda",
                &tunable(Some("bfq"), "slice_idle", "9999999999999999999"),
            )
            .unwrap_err();
        assert!(e.to_string().contains("0 to 4294 ms"), "{e}");
        assert_eq!(QueueSettings::read(&root, &dev), before);
        assert!(tuner.journal().unwrap().load("sda").unwrap().is_none());
        // What is written is plain decimal (mq-deadline would read 010 as octal 8).
        let o = tuner
            .apply("sda", &tunable(None, "read_expire", "0250"))
            .unwrap();
        assert_eq!(
            QueueSettings::read(&root, &dev).tunables["read_expire"],
            "250"
        );
        assert!(o.stored.is_empty(), "{:?}", o.stored);
    }

    #[test]
    fn what_the_kernel_stored_otherwise_is_one_line_each() {
        let mut after = QueueSettings::default();
        after.tunables.insert("read_expire".into(), "252".into());
        after.tunables.insert("fifo_batch".into(), "8".into());
        after.read_ahead_kb = Some(4);
        let want = Settings {
            tunables: vec![
                ("read_expire".into(), "250".into()),
                ("fifo_batch".into(), "8".into()),
            ],
            read_ahead_kb: Some(6),
            ..Settings::default()
        };
        let lines: Vec<String> = stored_otherwise(&want, &after)
            .iter()
            .map(Stored::line)
            .collect();
        assert_eq!(
            lines,
            [
                "kernel rounded read_expire 250 -> 252 ms",
                "kernel rounded read_ahead_kb 6 -> 4 KiB"
            ]
        );
        let o = Outcome {
            device: "sda".into(),
            changes: vec![ValueChange {
                attr: "iosched/read_expire".into(),
                before: "500".into(),
                after: "252".into(),
            }],
            before: QueueSettings::default(),
            stored: stored_otherwise(&want, &after),
            after,
            kernel_time: Duration::ZERO,
        };
        assert_eq!(
            o.label(),
            "iosched/read_expire 500→252 (kernel rounded read_expire 250 -> 252 ms; \
             kernel rounded read_ahead_kb 6 -> 4 KiB)"
        );
    }

    #[test]
    fn a_device_re_created_since_the_caller_looked_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(&dir.path().join("root")).unwrap();
        let mut disk = FakeDisk::new("loop3").dev(7, 3);
        disk.diskseq = Some(15);
        t.add(&disk).unwrap();
        let root = t.root();
        let dev = root.device("loop3").unwrap();
        let before = QueueSettings::read(&root, &dev);
        let j = Journal::new(dir.path().join("j"));
        let kyber = Settings {
            scheduler: Some("kyber".into()),
            ..Settings::default()
        };
        let tuner = Tuner::new(root.clone(), Some(j.clone())).expecting("loop3", Some(14));
        let e = tuner.apply("loop3", &kyber).unwrap_err();
        assert!(matches!(e, TuneError::Replaced { seen: 14, .. }), "{e}");
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("diskseq 14, now 15"), "{e}");
        assert!(
            e.to_string()
                .contains("nothing is restored onto the new device"),
            "{e}"
        );
        // A restore through that tuner is refused as well.
        let e = tuner
            .restore("loop3", &Settings::snapshot_of(&before))
            .unwrap_err();
        assert!(matches!(e, TuneError::Replaced { .. }), "{e}");
        assert_eq!(QueueSettings::read(&root, &dev), before);
        assert!(j.load("loop3").unwrap().is_none());
        // The incarnation the caller saw is written to.
        let tuner = Tuner::new(root.clone(), Some(j)).expecting("loop3", Some(15));
        tuner.apply("loop3", &kyber).unwrap();
        assert_eq!(QueueSettings::read(&root, &dev).active_label(), "kyber");
    }
}
