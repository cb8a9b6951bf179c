//! The one transaction of a change or a restore, under the device's lock:
//! request -> validate -> journal -> write in kernel order -> read back ->
//! rollback, then the revert policy for a restore.
//!
//! The device is read once, at the start ([`QueueSettings::read`]), and what
//! was read is kept up to date instead of re-read: each write's read-back
//! replaces the value written, and a write that changes other values as a
//! side effect is followed by a read of exactly those (a scheduler switch
//! resets `nr_requests` and every tunable, kernel `elevator_switch()`;
//! writing `nr_requests` recomputes mq-deadline's `async_depth`,
//! `dd_depth_updated()`). Only a failed step reads the device whole again,
//! as it may have left anything behind.

use super::diff::{add_requested_tunables, stored_otherwise};
use super::validate::validate_original;
use super::{Kind, Outcome, Tuner, Wanted, diff, hw_queue_depth, is_no_op, resolve, validate};
use crate::device::{QueueSettings, SchedulerState, Unreadable, read_dev_numbers};
use crate::error::TuneError;
use crate::journal::{JOURNAL_VERSION, Journal, JournalEntry, SaveError};
use crate::os::{DeviceName, QueueAttr, SysRoot};
use std::io;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A write step: what to write and what to expect when reading it back.
struct Step {
    attr: QueueAttr,
    value: String,
}

impl Tuner {
    /// One transaction on the device called `name`; the caller holds its lock.
    pub(super) fn transact(
        &self,
        name: &str,
        want: &Wanted,
        kind: Kind,
    ) -> Result<Outcome, TuneError> {
        let strict = kind == Kind::Change;
        let dev = resolve(&self.root, name)?;
        // The incarnation every write below must still find (see `expecting`).
        let seq = self.root.read_diskseq(&dev);
        if let Some((_, seen)) = self.seen.as_ref().filter(|(n, _)| n == dev.as_str())
            && seq != Some(*seen)
        {
            return Err(replaced(&dev, *seen, seq));
        }
        // The one read of the device's settings; kept, never re-read (module doc).
        let before = QueueSettings::read(&self.root, &dev);
        let needs_scheduler =
            want.scheduler.is_some() || !want.tunables.is_empty() || want.nr_requests.is_some();
        if needs_scheduler
            && before.scheduler.is_none()
            && let Some(why) = before.why_unreadable(&QueueAttr::Scheduler)
        {
            // The file is there but says something we cannot parse (or
            // cannot be read): do not pretend the device has no scheduler,
            // and touch nothing. A lone `none` is a queue without one.
            return Err(refused_unreadable(&dev, &QueueAttr::Scheduler, why));
        }
        let checked;
        // The queue depth only limits nr_requests: read it only for that.
        let depth = || {
            want.nr_requests
                .and_then(|_| hw_queue_depth(&self.root, &dev))
        };
        let want = if strict {
            checked = validate(&dev, &before, depth(), want)?;
            self.originals_known(&dev, &before, &checked)?;
            &checked
        } else if want.scheduler.is_some() && before.scheduler.is_none() {
            return Err(TuneError::NoScheduler {
                dev: dev.to_string(),
            });
        } else if kind == Kind::Revert {
            checked = validate_original(&before, depth(), want).map_err(|why| {
                TuneError::BadOriginal {
                    dev: dev.to_string(),
                    dir: self.journal_dir(),
                    why: why.to_string(),
                }
            })?;
            &checked
        } else {
            want
        };
        self.check_permission(&dev, want)?;
        if is_no_op(&before, want) {
            // Nothing to write, so nothing to journal: an entry made now would
            // record the values already in force as the "original". A restore
            // that finds the device already back still settles its entry.
            if kind != Kind::Change {
                self.settle_journal(&dev, &before);
            }
            return Ok(Outcome {
                device: dev.to_string(),
                changes: Vec::new(),
                after: before.clone(),
                before,
                kernel_time: Duration::ZERO,
                stored: Vec::new(),
            });
        }
        if kind == Kind::Change
            && let Some(j) = &self.journal
        {
            self.journal_original(j, &dev, seq, &before)?;
        }
        let mut kernel_time = Duration::ZERO;
        let mut now = before.clone();
        match self.write_all(&dev, seq, want, &mut now, &mut kernel_time) {
            Ok(()) => {
                let after = now;
                if kind != Kind::Change {
                    self.settle_journal(&dev, &after);
                }
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
                // A rollback is a restore: the one policy decides whether the
                // entry goes (an entry written for this change does; an older
                // one whose original differs from `before` stays).
                if let Some(now) = restored {
                    self.settle_journal(&dev, &now);
                }
                Err(err)
            }
        }
    }

    fn check_permission(&self, dev: &DeviceName, want: &Wanted) -> Result<(), TuneError> {
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
        attrs.extend(want.knobs.iter().filter_map(|(k, _)| QueueAttr::knob(k)));
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

    /// Every number this change writes, itself or through a scheduler
    /// switch (which resets nr_requests), must have been read first: its
    /// original could not be journalled, nor the change undone, and the
    /// change would read as a no-op to a revert. An unreadable or malformed
    /// file refuses the change before anything is written.
    fn originals_known(
        &self,
        dev: &DeviceName,
        before: &QueueSettings,
        want: &Wanted,
    ) -> Result<(), TuneError> {
        let switch = want
            .scheduler
            .as_ref()
            .is_some_and(|s| before.scheduler.as_ref().is_none_or(|b| &b.active != s));
        let needed = [
            (
                QueueAttr::NrRequests,
                (want.nr_requests.is_some() || switch) && before.nr_requests.is_none(),
            ),
            (
                QueueAttr::ReadAheadKb,
                want.read_ahead_kb.is_some() && before.read_ahead_kb.is_none(),
            ),
        ];
        // A queue setting the change writes must have been read (its
        // original journalled); a restore writes only ones it read.
        for (name, _) in &want.knobs {
            if !before.knobs.contains_key(name) {
                return Err(TuneError::ReadFailed {
                    dev: dev.to_string(),
                    attr: format!("queue/{name}"),
                    source: io::Error::from_raw_os_error(nix::libc::ENOENT),
                });
            }
        }
        for (attr, missing) in needed {
            if !missing {
                continue;
            }
            return Err(match before.why_unreadable(&attr) {
                Some(why) => refused_unreadable(dev, &attr, why),
                // Not there at all.
                None => TuneError::ReadFailed {
                    dev: dev.to_string(),
                    attr: format!("queue/{}", attr.label()),
                    source: io::Error::from_raw_os_error(nix::libc::ENOENT),
                },
            });
        }
        Ok(())
    }

    /// Save the device's original settings before its first change
    /// ([`Journal::save_original`]: the first original wins, a stale entry of
    /// an earlier incarnation is replaced, a live device journalled in
    /// another directory is refused). Returns whether a new entry was
    /// written. `seq` is the diskseq read at the start of the change, `queue_settings`
    /// its settings.
    fn journal_original(
        &self,
        journal: &Journal,
        dev: &DeviceName,
        seq: Option<u64>,
        queue_settings: &QueueSettings,
    ) -> Result<bool, TuneError> {
        let (major, minor) = read_dev_numbers(&self.root, dev).unwrap_or((0, 0));
        let entry = JournalEntry {
            version: JOURNAL_VERSION,
            device: dev.to_string(),
            major,
            minor,
            diskseq: seq,
            boot_id: boot_id(&self.root),
            saved_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            original: Wanted::snapshot_of(queue_settings),
            tree: journal.tree().cloned(),
            pid: Some(std::process::id()),
        };
        journal.save_original(&entry).map_err(|e| match e {
            SaveError::Elsewhere { dir, .. } => TuneError::JournalledElsewhere {
                dev: dev.to_string(),
                here: journal.dir().display().to_string(),
                revert: journal
                    .sibling(dir.clone())
                    .revert_command(&self.root, &[dev.as_str()]),
                dir: dir.display().to_string(),
            },
            SaveError::Io(source) => TuneError::Journal {
                dir: journal.dir().display().to_string(),
                source,
            },
        })
    }

    /// The journal directory, for a message (empty without a journal).
    pub(super) fn journal_dir(&self) -> String {
        self.journal
            .as_ref()
            .map(|j| j.dir().display().to_string())
            .unwrap_or_default()
    }

    /// Write the scheduler, then tunables, nr_requests, read-ahead, the queue
    /// settings next to the scheduler, each
    /// only when `now` (the device as known: read once, then kept up to
    /// date, see the module doc) does not have it yet. `now` follows every write.
    fn write_all(
        &self,
        dev: &DeviceName,
        seq: Option<u64>,
        want: &Wanted,
        now: &mut QueueSettings,
        kt: &mut Duration,
    ) -> Result<(), TuneError> {
        if let Some(s) = &want.scheduler
            && now.scheduler.as_ref().is_none_or(|c| &c.active != s)
        {
            let step = Step {
                attr: QueueAttr::Scheduler,
                value: s.clone(),
            };
            let got = self.step(dev, &step, seq, now, kt)?;
            now.scheduler = SchedulerState::parse(&got);
            // The switch reset nr_requests and the tunables: read those; and
            // write-back throttling (bfq turns a default one off, leaving it
            // turns it on again: `wbt_disable_default()`, `wbt_enable_default()`).
            now.nr_requests = self.read_number(dev, &QueueAttr::NrRequests);
            now.read_again(&[QueueAttr::Scheduler, QueueAttr::NrRequests]);
            now.tunables = QueueSettings::tunables_of(&self.root, dev);
            now.knobs = QueueSettings::knobs_of(&self.root, dev);
        }
        for (name, value) in &want.tunables {
            if now.tunables.get(name).map(|v| v.trim()) == Some(value.trim()) {
                continue;
            }
            if !now.tunables.contains_key(name)
                && !self
                    .root
                    .dev_attr_exists(dev, &format!("queue/iosched/{name}"))
            {
                return Err(TuneError::UnknownTunable {
                    dev: dev.to_string(),
                    scheduler: now.active_label().into(),
                    name: name.clone(),
                    known: now.tunables.keys().cloned().collect(),
                });
            }
            let step = Step {
                attr: QueueAttr::Tunable(name.clone()),
                value: value.trim().into(),
            };
            let got = self.step(dev, &step, seq, now, kt)?;
            now.tunables.insert(name.clone(), got);
        }
        if let Some(n) = want.nr_requests
            && now.nr_requests != Some(n)
        {
            let step = Step {
                attr: QueueAttr::NrRequests,
                value: n.to_string(),
            };
            let got = self.step(dev, &step, seq, now, kt)?;
            now.nr_requests = got.trim().parse().ok();
            now.read_again(&[QueueAttr::NrRequests]);
            // mq-deadline's async_depth follows nr_requests: read the tunables.
            if now.scheduler.is_some() {
                now.tunables = QueueSettings::tunables_of(&self.root, dev);
            }
        }
        if let Some(n) = want.read_ahead_kb
            && now.read_ahead_kb != Some(n)
        {
            let step = Step {
                attr: QueueAttr::ReadAheadKb,
                value: n.to_string(),
            };
            let got = self.step(dev, &step, seq, now, kt)?;
            now.read_ahead_kb = got.trim().parse().ok();
            now.read_again(&[QueueAttr::ReadAheadKb]);
        }
        // The queue settings next to the scheduler last: after the switch,
        // which may have turned write-back throttling off or on again.
        for (name, value) in &want.knobs {
            let Some(attr) = QueueAttr::knob(name) else {
                continue;
            };
            if now.knobs.get(name).map(|v| v.trim()) == Some(value.trim()) {
                continue;
            }
            let step = Step {
                attr,
                value: value.trim().into(),
            };
            let got = self.step(dev, &step, seq, now, kt)?;
            now.knobs.insert(name.clone(), got.trim().to_string());
        }
        Ok(())
    }

    /// A numeric queue attribute (`None`: unreadable).
    fn read_number(&self, dev: &DeviceName, attr: &QueueAttr) -> Option<u64> {
        self.root
            .read_queue_attr(dev, attr)
            .ok()
            .and_then(|v| v.trim().parse().ok())
    }

    /// One write and its read-back, after checking the diskseq; returns
    /// what the kernel read back. `now` is the device as known before it.
    fn step(
        &self,
        dev: &DeviceName,
        step: &Step,
        seq: Option<u64>,
        now: &QueueSettings,
        kt: &mut Duration,
    ) -> Result<String, TuneError> {
        // Never write to another device that took the name since the change
        // began (a loop device detached and re-attached: new diskseq).
        if let Some(seen) = seq {
            let now = self.root.read_diskseq(dev);
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
                && now.active_label() == "none"
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
                SchedulerState::parse(&got).is_some_and(|s| s.active == step.value)
            }
            // Some tunables are kept in jiffies and read back rounded, and
            // -1 (wbt_lat_usec) or 0 (max_sectors_kb) read back the kernel's
            // default: the kernel accepted the write, so what it stored is
            // the truth (the outcome says what it stored).
            QueueAttr::Tunable(_) | QueueAttr::Knob(_) => true,
            _ => got.trim() == step.value,
        };
        if ok {
            Ok(got)
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
    /// error. Also returns the device's settings when it is now as it was
    /// before (`None`: it is not, or it cannot be told).
    fn roll_back(
        &self,
        dev: &DeviceName,
        seq: Option<u64>,
        before: &QueueSettings,
        mut err: TuneError,
    ) -> (TuneError, Option<QueueSettings>) {
        if matches!(err, TuneError::Replaced { .. }) {
            // Its message says it already: nothing goes onto the new device.
            return (err, None);
        }
        let original = Wanted::snapshot_of(before);
        let (note, restored) = if !self.root.device_dir(dev).exists() {
            ("nothing to roll back: the device is gone".to_string(), None)
        } else if let Some(s) = seq.filter(|s| self.root.read_diskseq(dev) != Some(*s)) {
            (
                format!(
                    "nothing rolled back: the device was re-created, another device has the name now (diskseq {s}, now {})",
                    diskseq_text(self.root.read_diskseq(dev))
                ),
                None,
            )
        } else {
            // A failed step may have left anything behind: read it all.
            let mut now = QueueSettings::read(&self.root, dev);
            if Wanted::snapshot_of(&now) == original {
                ("nothing was changed".to_string(), Some(now))
            } else {
                let mut kt = Duration::ZERO;
                match self.write_all(dev, seq, &original, &mut now, &mut kt) {
                    Ok(()) => (
                        "rolled back to the previous settings".to_string(),
                        Some(now),
                    ),
                    Err(e) => (
                        format!(
                            "ROLLBACK FAILED ({e}); run '{}'",
                            self.revert_command(dev.as_str())
                        ),
                        None,
                    ),
                }
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

/// A change refused because a setting's file gave no value in the read
/// before it ([`QueueSettings::unreadable`]).
fn refused_unreadable(dev: &DeviceName, attr: &QueueAttr, why: &Unreadable) -> TuneError {
    TuneError::ReadFailed {
        dev: dev.to_string(),
        attr: format!("queue/{}", attr.label()),
        source: why.to_io_error(),
    }
}

/// A diskseq for a message: the number, or `none` (no file, a kernel before 5.15).
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

/// The running kernel's boot id, to tell a stale journal from a live one.
pub fn boot_id(root: &SysRoot) -> Option<String> {
    root.read_proc("sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests;
