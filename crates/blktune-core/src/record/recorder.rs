//! The recorder: turns live [`Snapshot`]s and change marks into records.
//!
//! Used by `blktune record` and by the TUI's `R` key alike:
//!
//! ```text
//! let mut rec = Recorder::create(path, sampler.root(), sampler.devices(), last_snapshot.t, &opts)?;
//! rec.snapshot(&snap)?;       // after every sampler tick
//! rec.change(&mark)?;         // after every change the TUI made through the Tuner
//! rec.finish("stopped")?;     // on R again, or on quit
//! ```
//!
//! Changes are recorded two ways. A change made in the recording process is
//! passed in with [`Recorder::change`] and recorded at its exact time
//! (`source: blktune`). Every other change (for example `blktune set` run from
//! another shell while `blktune record` runs) shows up as different settings
//! when the sampler re-reads them; the recorder then writes a `settings`
//! record and a `change` record (`source: observed`) placed in the middle of
//! the interval in which it appeared. A change passed in with
//! [`Recorder::change`] is not recorded a second time when it is observed.

use super::RecordError;
use super::format::{
    ChangeRecord, ChangeSource, DeviceFacts, DevicesRecord, EndRecord, FORMAT_VERSION, Header,
    HostFacts, Record, Sample, SettingsRecord, counters_to_fields,
};
use super::latency::{self, LatencyFacts};
use super::writer::RecordWriter;
use crate::device::{BlockDevice, QueueSettings};
use crate::history::ChangeMark;
use crate::host::HostInfo;
use crate::latency::{DevId, Interval};
use crate::os::SysRoot;
use crate::sampler::Snapshot;
use crate::tuner::{self, Outcome, Wanted};
use crate::units::rfc3339;
use crate::who::WhoByDevice;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How to record.
#[derive(Debug, Clone, Default)]
pub struct RecordOptions {
    /// Overwrite an existing file.
    pub force: bool,
    /// Record only these whole devices (and their partitions); empty: all.
    pub only: Vec<String>,
    /// The sample interval, stored in the header.
    pub interval: Duration,
    /// The sampler checks every device's settings again within this time
    /// ([`crate::sampler::Sampler::refresh_every`]): a change made by
    /// another process happened at most this long before it was read, and
    /// is placed in the middle of that span.
    pub checked_within: Duration,
}

/// What a finished recording holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordStats {
    pub samples: u64,
    pub changes: u64,
}

/// A recording in progress.
#[derive(Debug)]
pub struct Recorder {
    writer: RecordWriter,
    origin: f64,
    only: Option<BTreeSet<String>>,
    facts: Vec<DeviceFacts>,
    queues: BTreeMap<String, QueueSettings>,
    /// Stat names recorded: the devices and their partitions.
    names: BTreeSet<String>,
    /// Devices with size 0 (unattached loop nodes), left out of the
    /// recording: a machine can have hundreds of them, and their counters
    /// say nothing.
    empty: BTreeSet<String>,
    /// Recording time of the last snapshot whose settings were read.
    last_settings_t: f64,
    /// [`RecordOptions::checked_within`], in seconds.
    checked_within: f64,
    last_t: f64,
    /// The settings changes made in this process should lead to.
    expected: BTreeMap<String, Wanted>,
    stats: RecordStats,
    /// The header says samples carry the kernel's histograms.
    traced: bool,
    /// Why the issue program could not be attached, for the next sample.
    no_dev_span: Option<String>,
    /// ... said already (once per recording).
    said_no_dev_span: bool,
    /// Who did the I/O, for the next sample ([`Recorder::who`]).
    who: WhoByDevice,
}

/// Unix seconds of a wall-clock time.
pub fn unix_secs(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Recorder {
    /// Create the file and write the header and every device's settings.
    ///
    /// `origin` is the snapshot clock's time that becomes `t` = 0 (the TUI
    /// passes its newest snapshot's `t`); `devices` are the live devices.
    pub fn create(
        path: &Path,
        root: &SysRoot,
        devices: &[BlockDevice],
        origin: f64,
        opts: &RecordOptions,
    ) -> Result<Self, RecordError> {
        Self::create_traced(path, root, devices, origin, opts, None)
    }

    /// [`Recorder::create`] saying in the header whether the kernel's latency
    /// histograms will be passed to [`Recorder::snapshot_traced`] (and why not).
    pub fn create_traced(
        path: &Path,
        root: &SysRoot,
        devices: &[BlockDevice],
        origin: f64,
        opts: &RecordOptions,
        latency: Option<LatencyFacts>,
    ) -> Result<Self, RecordError> {
        let traced = latency.as_ref().is_some_and(|l| l.traced);
        let only: Option<BTreeSet<String>> =
            (!opts.only.is_empty()).then(|| opts.only.iter().cloned().collect());
        if let Some(only) = &only
            && let Some(missing) = only.iter().find(|n| !devices.iter().any(|d| &d.name == *n))
        {
            return Err(RecordError::UnknownDevice(missing.clone()));
        }
        let writer = RecordWriter::create(path, opts.force)?;
        let host = HostInfo::read(root);
        let now = SystemTime::now();
        let mut rec = Self {
            writer,
            origin,
            only,
            facts: Vec::new(),
            queues: BTreeMap::new(),
            names: BTreeSet::new(),
            empty: BTreeSet::new(),
            last_settings_t: 0.0,
            checked_within: opts.checked_within.as_secs_f64(),
            last_t: 0.0,
            no_dev_span: None,
            said_no_dev_span: false,
            who: WhoByDevice::new(),
            expected: BTreeMap::new(),
            stats: RecordStats {
                samples: 0,
                changes: 0,
            },
            traced,
        };
        rec.set_empty(devices);
        let wanted = rec.wanted(devices);
        rec.set_facts(&wanted);
        rec.writer.write(&Record::Header(Header {
            version: FORMAT_VERSION,
            tool: format!("blktune {}", env!("CARGO_PKG_VERSION")),
            started_wall: unix_secs(now),
            started: rfc3339(now),
            interval_s: opts.interval.as_secs_f64(),
            host: HostFacts {
                hostname: host.hostname,
                kernel: host.kernel,
                uptime_s: host.uptime_s,
                boot_id: tuner::boot_id(root),
            },
            devices: rec.facts.clone(),
            only: rec.only.as_ref().map(|o| o.iter().cloned().collect()),
            latency,
        }))?;
        for d in &wanted {
            rec.write_settings(0.0, d)?;
        }
        // A file that exists always has a readable header.
        rec.writer.flush()?;
        Ok(rec)
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// Counts so far.
    pub fn stats(&self) -> RecordStats {
        self.stats
    }

    /// The devices recorded: those of `only` (even empty ones, as asked),
    /// or every device with a size.
    fn wanted<'a>(&self, devices: &'a [BlockDevice]) -> Vec<&'a BlockDevice> {
        devices
            .iter()
            .filter(|d| match &self.only {
                Some(o) => o.contains(&d.name),
                None => d.size_bytes > 0,
            })
            .collect()
    }

    /// Remember which devices are empty, so their counters stay out.
    fn set_empty(&mut self, devices: &[BlockDevice]) {
        self.empty = devices
            .iter()
            .filter(|d| d.size_bytes == 0)
            .map(|d| d.name.clone())
            .collect();
    }

    fn set_facts(&mut self, wanted: &[&BlockDevice]) {
        self.facts = wanted.iter().map(|d| DeviceFacts::of(d)).collect();
        self.names = wanted
            .iter()
            .flat_map(|d| std::iter::once(d.name.clone()).chain(d.partitions.iter().cloned()))
            .collect();
    }

    fn write_settings(&mut self, t: f64, d: &BlockDevice) -> Result<(), RecordError> {
        self.queues.insert(d.name.clone(), d.queue.clone());
        self.writer.write(&Record::Settings(SettingsRecord {
            t,
            device: d.name.clone(),
            queue: d.queue.clone(),
        }))
    }

    /// Record one sampler tick (and any settings change it read).
    pub fn snapshot(&mut self, s: &Snapshot) -> Result<(), RecordError> {
        self.snapshot_traced(s, None)
    }

    /// Record one sampler tick with the kernel's latency histograms of the
    /// same interval (read just after it), for the recorded whole devices.
    /// A device's histograms go in only when their diskseq is the device's
    /// now (never an earlier device's under the same number). In a traced
    /// recording, an interval without them (`None` after the first sample:
    /// the read failed, or tracing stopped) is marked `untraced`, so that
    /// a replay shows it as not traced rather than idle.
    pub fn snapshot_traced(
        &mut self,
        s: &Snapshot,
        traced: Option<&Interval>,
    ) -> Result<(), RecordError> {
        let t = s.t - self.origin;
        if s.refreshed {
            self.settings_from(t, &s.devices)?;
        }
        let disks = s
            .stats
            .iter()
            .filter(|(name, _)| match self.only {
                Some(_) => self.names.contains(*name),
                None => !self.empty.contains(*name),
            })
            .map(|(name, st)| (name.clone(), counters_to_fields(&st.counters)))
            .collect();
        let lat = match traced {
            Some(i) => self
                .wanted(&s.devices)
                .into_iter()
                .filter_map(|d| {
                    let dev = DevId {
                        major: d.major,
                        minor: d.minor,
                    };
                    let l = latency::of_interval(i.device(dev, d.diskseq)?);
                    (!l.is_empty()).then(|| (d.name.clone(), l))
                })
                .collect(),
            None => BTreeMap::new(),
        };
        let who = self.take_who();
        self.writer.write(&Record::Sample(Sample {
            t,
            wall: unix_secs(s.wall),
            iowait_pct: s.iowait_pct,
            cpu_busy_pct: s.cpu_busy_pct,
            psi_some_pct: s.pressure.and_then(|p| p.some_pct),
            disks,
            lat,
            lost: traced.map_or(0, |i| i.lost),
            untraced: self.traced && traced.is_none() && s.interval.is_some(),
            no_dev_span: self.no_dev_span.take(),
            psi: s.pressure.map(|p| p.file),
            who,
        }))?;
        self.stats.samples += 1;
        self.last_t = t;
        Ok(())
    }

    /// Who did the I/O in the interval the next sample ends (the kernel's
    /// attribution, while it is on): written with it, for the recorded
    /// devices.
    pub fn who(&mut self, who: WhoByDevice) {
        self.who = who;
    }

    fn take_who(&mut self) -> WhoByDevice {
        let mut w = std::mem::take(&mut self.who);
        if self.only.is_some() {
            w.retain(|name, _| self.names.contains(name));
        }
        w
    }

    /// The kernel's issue program could not be attached (`why`): the next
    /// sample says so, once per recording, so that a replay shows `no dev
    /// span` from there on as the live screen did.
    pub fn no_device_span(&mut self, why: &str) {
        if !std::mem::replace(&mut self.said_no_dev_span, true) {
            self.no_dev_span = Some(why.to_owned());
        }
    }

    fn settings_from(&mut self, t: f64, devices: &[BlockDevice]) -> Result<(), RecordError> {
        self.set_empty(devices);
        let wanted = self.wanted(devices);
        let facts: Vec<DeviceFacts> = wanted.iter().map(|d| DeviceFacts::of(d)).collect();
        if facts != self.facts {
            self.set_facts(&wanted);
            self.writer
                .write(&Record::Devices(DevicesRecord { t, devices: facts }))?;
        }
        // The change happened since the settings were last read, and after
        // the sampler's last check of them: a snapshot reads as refreshed
        // only when something changed, so the last refreshed one can be
        // long ago.
        let since = self.last_settings_t.max(t - self.checked_within);
        let seen_t = (since + t) / 2.0;
        for d in wanted {
            match self.queues.get(&d.name).cloned() {
                Some(old) if old == d.queue => continue,
                Some(old) => {
                    let expected = self.expected.remove(&d.name);
                    let after = Wanted::snapshot_of(&d.queue);
                    if !expected.is_some_and(|e| agrees(&e, &after)) {
                        self.write_observed(seen_t, d, &old)?;
                    }
                }
                None => {}
            }
            self.write_settings(t, d)?;
        }
        self.last_settings_t = t;
        Ok(())
    }

    fn write_observed(
        &mut self,
        t: f64,
        d: &BlockDevice,
        old: &QueueSettings,
    ) -> Result<(), RecordError> {
        let changes = tuner::diff(old, &d.queue);
        if changes.is_empty() {
            // Only something blktune does not show changed (the list of schedulers).
            return Ok(());
        }
        let label = Outcome {
            device: d.name.clone(),
            changes,
            before: old.clone(),
            after: d.queue.clone(),
            kernel_time: Duration::ZERO,
            stored: Vec::new(),
        }
        .label();
        self.stats.changes += 1;
        self.writer.write(&Record::Change(ChangeRecord {
            t,
            device: d.name.clone(),
            label,
            source: ChangeSource::Observed,
            before: Wanted::snapshot_of(old),
            after: Wanted::snapshot_of(&d.queue),
        }))
    }

    /// Record a change made through blktune in this process, at its exact
    /// time. `mark.after` should be `Wanted::snapshot_of(&outcome.after)`.
    /// Call it as soon as the [`crate::tuner::Tuner`] returns, before the
    /// next snapshot, so that the snapshot that reads the new settings is
    /// not recorded as another (observed) change.
    pub fn change(&mut self, mark: &ChangeMark) -> Result<(), RecordError> {
        if self
            .only
            .as_ref()
            .is_some_and(|o| !o.contains(&mark.device))
        {
            return Ok(());
        }
        self.expected
            .insert(mark.device.clone(), mark.after.clone());
        self.stats.changes += 1;
        self.writer.write(&Record::Change(ChangeRecord {
            t: mark.t - self.origin,
            device: mark.device.clone(),
            label: mark.label.clone(),
            source: ChangeSource::Blktune,
            before: mark.before.clone(),
            after: mark.after.clone(),
        }))
    }

    /// Push everything recorded so far to the file now (the TUI can call
    /// this when playback of the live view pauses; it also happens by itself
    /// at least every [`super::FLUSH_EVERY`] while records are written).
    pub fn flush(&mut self) -> Result<(), RecordError> {
        self.writer.flush()
    }

    /// Write the `end` record and close the file. `reason`: `duration`,
    /// `signal` or `stopped`.
    pub fn finish(mut self, reason: &str) -> Result<RecordStats, RecordError> {
        self.writer.write(&Record::End(EndRecord {
            t: self.last_t,
            wall: unix_secs(SystemTime::now()),
            reason: reason.to_owned(),
            samples: self.stats.samples,
        }))?;
        self.writer.finish()?;
        Ok(self.stats)
    }
}

/// Does the observed state have every value a change asked for?
fn agrees(expected: &Wanted, seen: &Wanted) -> bool {
    fn same<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
        a.is_none() || a == b
    }
    same(&expected.scheduler, &seen.scheduler)
        && same(&expected.nr_requests, &seen.nr_requests)
        && same(&expected.read_ahead_kb, &seen.read_ahead_kb)
        && expected
            .tunables
            .iter()
            .all(|kv| seen.tunables.contains(kv))
        && expected.knobs.iter().all(|kv| seen.knobs.contains(kv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_setting_other_than_the_one_asked_for_is_no_agreement() {
        let wbt = |v: &str| Wanted {
            scheduler: Some("kyber".into()),
            knobs: vec![("wbt_lat_usec".into(), v.into())],
            ..Wanted::default()
        };
        assert!(agrees(&wbt("3000"), &wbt("3000")));
        assert!(!agrees(&wbt("3000"), &wbt("2000")));
        // What the change did not ask for may be anything.
        let sched_only = Wanted {
            scheduler: Some("kyber".into()),
            ..Wanted::default()
        };
        assert!(agrees(&sched_only, &wbt("2000")));
    }

    /// A fake tree with sda and sdb, a sampler's first tick of it, and a
    /// recorder of `only` (empty: every device) writing `file`.
    fn recording(
        dir: &Path,
        only: &[&str],
    ) -> (crate::fake::FakeTree, crate::sampler::Sampler, Recorder) {
        use crate::diskstats::Counters;
        use crate::fake::{FakeDisk, FakeTree};
        let tree = FakeTree::new(&dir.join("tree")).unwrap();
        tree.add(&FakeDisk::new("sda")).unwrap();
        tree.add(&FakeDisk::new("sdb").dev(8, 16)).unwrap();
        tree.set_diskstats(&[
            ("sda", 8, 0, Counters::default()),
            ("sdb", 8, 16, Counters::default()),
        ])
        .unwrap();
        let mut sampler = crate::sampler::Sampler::new(tree.root()).unwrap();
        let first = sampler.tick().unwrap();
        let opts = RecordOptions {
            interval: Duration::from_secs(1),
            only: only.iter().map(|n| n.to_string()).collect(),
            ..RecordOptions::default()
        };
        let rec = Recorder::create(
            &dir.join("rec.ndjson"),
            &tree.root(),
            &first.devices,
            first.t,
            &opts,
        )
        .unwrap();
        (tree, sampler, rec)
    }

    /// The `sample` records of a finished recording, as JSON.
    fn samples(file: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["type"] == "sample")
            .collect()
    }

    /// One process row of `who`: fio, pid 4242, in `/db.slice`, 1000 reads/s.
    fn fio_row() -> crate::who::WhoRow {
        crate::who::WhoRow {
            pid: Some(4242),
            name: "fio".into(),
            cgroup: Some("/db.slice".into()),
            r_s: 1000.0,
            w_s: 0.0,
            o_s: 0.0,
            rkb_s: 4000.0,
            wkb_s: 0.0,
            share: Some(97.5),
            r_p99: Some(1.25),
            r_n: 1000,
            io_some: None,
            io_full: None,
            io_avg10: false,
        }
    }

    #[test]
    fn a_sample_keeps_the_pressure_and_who_its_snapshot_carries() {
        use crate::pressure::{IoPressure, Pressure, Stall};
        use crate::who::DeviceWho;
        let dir = tempfile::tempdir().unwrap();
        let (_tree, mut sampler, mut rec) = recording(dir.path(), &[]);
        let stall = |avg10: f64, total_us: u64| Stall {
            avg10,
            avg60: 1.5,
            avg300: 0.5,
            total_us,
        };
        let pressure = IoPressure {
            file: Pressure {
                some: stall(13.13, 1_234_567),
                full: Some(stall(4.5, 456_789)),
            },
            some_pct: Some(12.5),
            full_pct: Some(4.25),
        };
        let mut snap = sampler.tick().unwrap();
        snap.pressure = Some(pressure);
        let fio = DeviceWho {
            processes: vec![fio_row()],
            cgroups: vec![crate::who::WhoRow {
                pid: None,
                name: "db.slice".into(),
                ..fio_row()
            }],
            rest_s: 25.0,
            rest_share: Some(2.5),
        };
        rec.who(WhoByDevice::from([("sda".to_string(), fio.clone())]));
        rec.snapshot(&snap).unwrap();
        // The next sample has neither: no pressure file, nobody attributed
        // (the who of an interval is written once, with its own sample).
        rec.snapshot(&sampler.tick().unwrap()).unwrap();
        let file = rec.path().to_path_buf();
        rec.finish("stopped").unwrap();

        let s = samples(&file);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0]["psi_some_pct"], 12.5, "{}", s[0]);
        let psi: Pressure = serde_json::from_value(s[0]["psi"].clone()).unwrap();
        assert_eq!(psi, pressure.file, "the file as read, totals included");
        let who: WhoByDevice = serde_json::from_value(s[0]["who"].clone()).unwrap();
        assert_eq!(who, WhoByDevice::from([("sda".to_string(), fio)]));
        assert_eq!(s[0]["who"]["sda"]["processes"][0]["name"], "fio");
        for key in ["psi", "psi_some_pct", "who"] {
            assert!(s[1].get(key).is_none(), "{key} in {}", s[1]);
        }
    }

    #[test]
    fn who_is_kept_only_for_the_devices_recorded() {
        use crate::who::DeviceWho;
        let dir = tempfile::tempdir().unwrap();
        let (_tree, mut sampler, mut rec) = recording(dir.path(), &["sdb"]);
        let row = DeviceWho {
            processes: vec![fio_row()],
            ..DeviceWho::default()
        };
        rec.who(WhoByDevice::from([
            ("sda".to_string(), row.clone()),
            ("sdb".to_string(), row),
        ]));
        rec.snapshot(&sampler.tick().unwrap()).unwrap();
        let file = rec.path().to_path_buf();
        rec.finish("stopped").unwrap();
        let s = samples(&file);
        let names: Vec<&String> = s[0]["who"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["sdb"], "{}", s[0]);
    }
}
