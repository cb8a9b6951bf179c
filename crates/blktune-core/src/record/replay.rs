//! Replay: a [`Player`] that reads a [`Recording`] again, streaming, and
//! turns it back into what the live sampler produces, frame by frame.
//!
//! A [`Frame`] holds a [`Snapshot`] recomputed from the recorded counters with
//! the same [`RateTracker`] the live sampler uses (so every figure is the one
//! the live view showed), plus the [`ChangeMark`]s recorded since the previous
//! frame. A consumer feeds frames to its state exactly as it feeds live
//! snapshots and the marks of its own changes. Seeking back rewinds and
//! re-reads the file from the start: the consumer clears its history and
//! takes the frames [`Player::seek_window`] returns (a bounded batch).
//! Memory is bounded: the player holds one frame ahead, samples less than
//! [`MIN_FRAME_GAP`] apart are merged, a batch holds at most
//! [`MAX_BATCH_STATS`] device statistics.
//!
//! A viewer's loop, in outline:
//!
//! ```text
//! let rec = Arc::new(Recording::open(path)?);      // rec.notes: show them once
//! let mut player = Player::new(Arc::clone(&rec))?;  // reads the file again
//! for f in player.seek_window(start, KEEP) { app.ingest(f) }  // history up to --start
//! let mut clock = Playback::new(Instant::now(), start, speed);
//! every UI tick:
//!     for f in player.advance_to(clock.position(now)) { app.ingest(f) }
//!     header shows player.position() / player.duration()
//! key ←: app.clear(); for f in player.seek_window(pos - 10.0, KEEP) { app.ingest(f) }; clock.jump(now, pos - 10.0)
//! key →: for f in player.advance_to(pos + 10.0) { app.ingest(f) }; clock.jump(now, pos + 10.0)
//! key space / + / -: clock.toggle_pause(now) / clock.set_speed(now, ...)
//! ```
//!
//! where `app.ingest(f)` adds `f.marks` to the change marks and then takes
//! `f.snapshot` like a live snapshot. Like the live sampler's baseline read,
//! the first frame of a recording has no rates (nothing to compare it with).

use super::RecordError;
use super::format::{DeviceFacts, Record, Sample, fields_to_counters};
use super::latency::{self, DeviceLat};
use super::reader::RecordReader;
use super::recording::{MAX_CHANGES, Recording};
use crate::device::{BlockDevice, QueueSettings};
use crate::diskstats::DiskStatsLine;
use crate::history::ChangeMark;
use crate::pressure::{IoPressure, Pressure};
use crate::record::check::MAX_DEVICES;
use crate::sampler::{RateTracker, Snapshot};
use crate::who::WhoByDevice;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

/// Samples closer than this to the previous frame are merged into the next
/// one (seconds). The counters are cumulative, so the merged interval's
/// rates are exact; what is lost is detail no screen can show, and a
/// recording sampled every millisecond cannot fill memory with frames.
pub const MIN_FRAME_GAP: f64 = 0.05;

/// Most device statistics (frames x disks) one [`Player::seek_window`] or
/// [`Player::advance_to`] returns; older frames are left out (their change
/// marks are kept), so a jump costs bounded memory however many disks.
pub const MAX_BATCH_STATS: usize = 1 << 18;

/// What the player produces per recorded sample: what the live sampler
/// would have sent, plus the change marks to add before it.
#[derive(Debug, Clone)]
pub struct Frame {
    pub snapshot: Snapshot,
    /// Changes recorded since the previous frame, oldest first.
    pub marks: Vec<ChangeMark>,
    /// The kernel's latency histograms of the frame's interval, by whole
    /// device (those of samples merged into it pooled); empty when none
    /// were recorded.
    pub latency: BTreeMap<String, DeviceLat>,
    /// Completions of the frame's interval that no histogram counted.
    pub lost: u64,
    /// In a traced recording: (part of) the frame's interval was not
    /// traced, so a device without histograms is not known to be idle.
    pub untraced: bool,
    /// The kernel's issue program could not be attached at or before this
    /// frame's interval, in the recorder's words: no device span from then on.
    pub no_dev_span: Option<String>,
    /// Who did each device's I/O, as recorded with the frame's sample (the
    /// last one's, for samples merged into it); empty when not recorded.
    pub who: WhoByDevice,
}

/// Turns records, in file order, into frames: settings and device lists
/// are applied as they come, changes become marks, samples become
/// snapshots. Memory stays bounded: one sample's counters, the current
/// devices and settings, the marks since the last frame.
#[derive(Debug)]
pub(super) struct Frames {
    rates: RateTracker,
    facts: Vec<DeviceFacts>,
    queues: BTreeMap<String, QueueSettings>,
    devices: Arc<Vec<BlockDevice>>,
    dirty: bool,
    marks: Vec<ChangeMark>,
    /// Change records met so far (marks after [`MAX_CHANGES`] are dropped).
    changes: usize,
    /// Time of the last sample taken; a sample not after it is left out.
    last_t: f64,
    /// Time of the last frame made.
    framed_t: Option<f64>,
    /// A sample too close to the last frame: framed only if it is the last.
    held: Option<Sample>,
    /// Latency histograms of samples held back since the last frame: they
    /// belong to the next frame's interval.
    held_lat: BTreeMap<String, DeviceLat>,
    /// ... and their lost completions and untraced intervals.
    held_lost: u64,
    held_untraced: bool,
    /// Why the issue program could not be attached, from the sample that
    /// said so on.
    no_dev_span: Option<String>,
    /// The system's pressure file of the last sample framed, and its time:
    /// the next frame's interval share comes from the two totals.
    last_psi: Option<(f64, Pressure)>,
    /// Samples after this time are not played (the end the scan saw).
    until: f64,
    /// A sample after `until` was met: nothing more to play.
    pub(super) past_end: bool,
}

impl Frames {
    /// Frames of a recording whose header lists `facts`, up to `until`.
    pub(super) fn new(facts: Vec<DeviceFacts>, until: f64) -> Self {
        Self {
            rates: RateTracker::default(),
            facts,
            queues: BTreeMap::new(),
            devices: Arc::new(Vec::new()),
            dirty: true,
            marks: Vec::new(),
            changes: 0,
            last_t: f64::NEG_INFINITY,
            framed_t: None,
            held: None,
            held_lat: BTreeMap::new(),
            held_lost: 0,
            held_untraced: false,
            no_dev_span: None,
            last_psi: None,
            until,
            past_end: false,
        }
    }

    /// Take the next record; a frame when it was a sample to show.
    pub(super) fn push(&mut self, r: Record) -> Option<Frame> {
        match r {
            Record::Header(_) | Record::End(_) => {}
            Record::Settings(s) => {
                if self.queues.len() >= MAX_DEVICES && !self.queues.contains_key(&s.device) {
                    // Settings of names never listed cannot pile up.
                    let facts = &self.facts;
                    self.queues
                        .retain(|name, _| facts.iter().any(|f| &f.name == name));
                }
                self.queues.insert(s.device, s.queue);
                self.dirty = true;
            }
            Record::Devices(d) => {
                self.facts = d.devices;
                self.dirty = true;
            }
            Record::Change(c) => {
                self.changes += 1;
                if self.changes <= MAX_CHANGES {
                    self.marks.push(ChangeMark {
                        device: c.device,
                        t: c.t,
                        label: c.label,
                        before: c.before,
                        after: c.after,
                    });
                }
            }
            Record::Sample(s) => {
                // Rates need time to move forward; a sample that does not is unusable.
                if !(s.t.is_finite() && s.t > self.last_t) {
                    return None;
                }
                if s.t > self.until + 1e-9 {
                    self.past_end = true;
                    return None;
                }
                self.last_t = s.t;
                if self.framed_t.is_some_and(|f| s.t - f < MIN_FRAME_GAP) {
                    let mut s = s;
                    latency::merge(&mut self.held_lat, std::mem::take(&mut s.lat));
                    // Taken, as its histograms are: the held sample may
                    // still be framed itself (the last one).
                    self.held_lost = self.held_lost.saturating_add(std::mem::take(&mut s.lost));
                    self.held_untraced |= std::mem::take(&mut s.untraced);
                    self.take_no_dev_span(&mut s);
                    self.held = Some(s);
                    return None;
                }
                self.held = None;
                return Some(self.frame(s));
            }
        }
        None
    }

    /// At the end of the records: the last sample, if it was held back.
    pub(super) fn finish(&mut self) -> Option<Frame> {
        let s = self.held.take()?;
        Some(self.frame(s))
    }

    fn rebuild_devices(&mut self) {
        let devs = self
            .facts
            .iter()
            .map(|f| f.to_device(self.queues.get(&f.name).cloned().unwrap_or_default()))
            .collect();
        self.devices = Arc::new(devs);
    }

    /// Keep a sample's word that the issue program failed (the first; the
    /// reader checked its length).
    fn take_no_dev_span(&mut self, s: &mut Sample) {
        if let Some(why) = s.no_dev_span.take() {
            self.no_dev_span.get_or_insert(why);
        }
    }

    fn frame(&mut self, mut s: Sample) -> Frame {
        self.take_no_dev_span(&mut s);
        let mut lat = std::mem::take(&mut self.held_lat);
        let lost = std::mem::take(&mut self.held_lost).saturating_add(s.lost);
        let untraced = std::mem::take(&mut self.held_untraced) || s.untraced;
        latency::merge(&mut lat, std::mem::take(&mut s.lat));
        let mut warnings = Vec::new();
        let lines: Vec<DiskStatsLine> = s
            .disks
            .into_iter()
            .filter_map(|(name, fields)| match fields_to_counters(&fields) {
                Ok(counters) => Some(DiskStatsLine {
                    major: 0,
                    minor: 0,
                    name,
                    counters,
                }),
                Err(e) => {
                    warnings.push(format!("{name} at {:.1}s: {e}", s.t));
                    None
                }
            })
            .collect();
        let refreshed = self.dirty;
        if self.dirty {
            self.rebuild_devices();
            self.dirty = false;
        }
        let interval = self.rates.last_interval(s.t);
        let stats = self.rates.update(s.t, &lines);
        self.framed_t = Some(s.t);
        let pressure = s.psi.map(|file| {
            let prev = self.last_psi.as_ref();
            IoPressure::since(file, prev.map(|(_, p)| p), prev.map(|(t, _)| s.t - t))
        });
        self.last_psi = s.psi.map(|p| (s.t, p));
        Frame {
            snapshot: Snapshot {
                // The reader checked the range; never panic on it anyway.
                wall: Duration::try_from_secs_f64(s.wall)
                    .ok()
                    .and_then(|d| UNIX_EPOCH.checked_add(d))
                    .unwrap_or(UNIX_EPOCH),
                t: s.t,
                interval,
                devices: Arc::clone(&self.devices),
                refreshed,
                stats,
                iowait_pct: s.iowait_pct,
                cpu_busy_pct: s.cpu_busy_pct,
                // The pressure file where it was recorded; else (this
                // branch's recordings) the interval's share alone.
                pressure: pressure.or_else(|| {
                    s.psi_some_pct.map(|p| IoPressure {
                        some_pct: Some(p),
                        ..IoPressure::default()
                    })
                }),
                warnings,
            },
            marks: std::mem::take(&mut self.marks),
            latency: lat,
            lost,
            untraced,
            no_dev_span: self.no_dev_span.clone(),
            who: s.who,
        }
    }
}

/// Plays a [`Recording`] back, frame by frame, reading the file again as
/// it goes (never more than the next frame ahead).
#[derive(Debug)]
pub struct Player {
    rec: Arc<Recording>,
    /// `None` once the records are exhausted (or could not be read again).
    reader: Option<RecordReader>,
    frames: Frames,
    /// The next frame, read ahead to know its time.
    ahead: Option<Frame>,
    position: f64,
    /// Why the file could not be read again, after a rewind.
    error: Option<String>,
}

impl Player {
    /// A player at the start of `rec`; the file is opened again (refused
    /// for a pipe, or a file replaced since `rec` was read).
    pub fn new(rec: Arc<Recording>) -> Result<Self, RecordError> {
        let reader = rec.reopen()?;
        let frames = Frames::new(rec.header.devices.clone(), rec.duration());
        Ok(Self {
            rec,
            reader: Some(reader),
            frames,
            ahead: None,
            position: 0.0,
            error: None,
        })
    }

    /// The recording being played.
    pub fn recording(&self) -> &Arc<Recording> {
        &self.rec
    }

    /// Time of the last frame produced (0 before the first).
    pub fn position(&self) -> f64 {
        self.position
    }

    /// Time of the last sample.
    pub fn duration(&self) -> f64 {
        self.rec.duration()
    }

    /// Why the file could not be read again (the player then stays at its end).
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Has every frame been produced?
    pub fn at_end(&mut self) -> bool {
        self.fill();
        self.ahead.is_none()
    }

    /// Back to the start: the file is read again from its beginning.
    pub fn rewind(&mut self) {
        self.ahead = None;
        self.position = 0.0;
        self.frames = Frames::new(self.rec.header.devices.clone(), self.rec.duration());
        match self.rec.reopen() {
            Ok(r) => {
                self.reader = Some(r);
                self.error = None;
            }
            Err(e) => {
                self.reader = None;
                self.error = Some(e.to_string());
            }
        }
    }

    /// Every frame with a time at or before `t` not yet produced (at most
    /// [`MAX_BATCH_STATS`] statistics' worth: the latest frames).
    pub fn advance_to(&mut self, t: f64) -> Vec<Frame> {
        self.collect(t, f64::INFINITY)
    }

    /// Rewind and produce every frame up to `t`: the consumer clears its
    /// state and feeds them all.
    pub fn seek(&mut self, t: f64) -> Vec<Frame> {
        self.seek_window(t, f64::INFINITY)
    }

    /// Like [`Player::seek`], but only the frames of the last `keep_secs`
    /// before `t` are returned (what a bounded history would keep anyway),
    /// and at most [`MAX_BATCH_STATS`] statistics' worth, so seeking in a
    /// long recording stays light. The change marks of the frames left out
    /// come with the first frame returned.
    pub fn seek_window(&mut self, t: f64, keep_secs: f64) -> Vec<Frame> {
        self.rewind();
        self.collect(t, keep_secs)
    }

    fn collect(&mut self, t: f64, keep_secs: f64) -> Vec<Frame> {
        let cost = |f: &Frame| f.snapshot.stats.len().max(1);
        let mut out: VecDeque<Frame> = VecDeque::new();
        let mut total = 0usize;
        let mut carried = Vec::new();
        while self.next_sample_t().is_some_and(|n| n <= t + 1e-9) {
            let Some(mut f) = self.next_frame() else {
                break;
            };
            if f.snapshot.t < t - keep_secs {
                carried.append(&mut f.marks);
                continue;
            }
            if !carried.is_empty() {
                carried.append(&mut f.marks);
                f.marks = std::mem::take(&mut carried);
            }
            total += cost(&f);
            out.push_back(f);
            while total > MAX_BATCH_STATS && out.len() > 1 {
                let Some(old) = out.pop_front() else { break };
                total -= cost(&old);
                if let Some(front) = out.front_mut() {
                    let mut marks = old.marks;
                    marks.append(&mut front.marks);
                    front.marks = marks;
                }
            }
        }
        if let (Some(last), false) = (out.back_mut(), carried.is_empty()) {
            carried.append(&mut last.marks);
            last.marks = carried;
        }
        out.into()
    }

    /// Time of the next frame, if any.
    pub fn next_sample_t(&mut self) -> Option<f64> {
        self.fill();
        self.ahead.as_ref().map(|f| f.snapshot.t)
    }

    /// Read ahead to the next frame.
    fn fill(&mut self) {
        let Self {
            reader,
            frames,
            ahead,
            ..
        } = self;
        if ahead.is_some() {
            return;
        }
        if let Some(r) = reader.as_mut() {
            for rec in r.by_ref() {
                if let Some(f) = frames.push(rec) {
                    *ahead = Some(f);
                    return;
                }
                if frames.past_end {
                    break;
                }
            }
            // Records exhausted: what is left is the held-back last sample.
            *reader = None;
        }
        *ahead = frames.finish();
    }

    /// The next frame; `None` at the end. Changes after the last sample
    /// come with no frame, as nothing was measured after them.
    pub fn next_frame(&mut self) -> Option<Frame> {
        self.fill();
        let f = self.ahead.take()?;
        self.position = f.snapshot.t;
        Some(f)
    }
}

impl Iterator for Player {
    type Item = Frame;

    fn next(&mut self) -> Option<Frame> {
        self.next_frame()
    }
}

/// The replay clock: maps wall time to a position in the recording, with a
/// speed and a pause. Pure: every call takes `now`.
#[derive(Debug, Clone, Copy)]
pub struct Playback {
    anchor_wall: Instant,
    anchor_pos: f64,
    speed: f64,
    paused: bool,
}

impl Playback {
    /// Start at `pos` (seconds into the recording) at `speed`.
    pub fn new(now: Instant, pos: f64, speed: f64) -> Self {
        Self {
            anchor_wall: now,
            anchor_pos: pos,
            speed,
            paused: false,
        }
    }

    /// The position at `now`.
    pub fn position(&self, now: Instant) -> f64 {
        if self.paused {
            return self.anchor_pos;
        }
        let dt = now
            .saturating_duration_since(self.anchor_wall)
            .as_secs_f64();
        self.anchor_pos + dt * self.speed
    }

    fn reanchor(&mut self, now: Instant) {
        self.anchor_pos = self.position(now);
        self.anchor_wall = now;
    }

    /// Playback speed (1.0 = real time).
    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// Change speed from `now` on.
    pub fn set_speed(&mut self, now: Instant, speed: f64) {
        self.reanchor(now);
        self.speed = speed;
    }

    /// Is playback paused?
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Pause or resume.
    pub fn toggle_pause(&mut self, now: Instant) {
        self.reanchor(now);
        self.paused = !self.paused;
    }

    /// Jump to `pos` (clamped at 0), keeping speed and pause.
    pub fn jump(&mut self, now: Instant, pos: f64) {
        self.anchor_wall = now;
        self.anchor_pos = pos.max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::record::format::Sample;

    fn sample(t: f64) -> Record {
        // 6400 reads a second (100 every 1/64 s), whatever the interval.
        let reads = (t * 64.0) as u64 * 100;
        let mut disks = BTreeMap::new();
        disks.insert(
            "sda".to_owned(),
            vec![reads, 0, reads * 8, reads, 0, 0, 0, 0, 0, 0, 0],
        );
        Record::Sample(Sample {
            t,
            wall: 1.7e9 + t,
            iowait_pct: None,
            cpu_busy_pct: None,
            psi_some_pct: None,
            disks,
            lat: BTreeMap::new(),
            lost: 0,
            untraced: false,
            no_dev_span: None,
            psi: None,
            who: Default::default(),
        })
    }

    /// A sample's pressure file and who did the I/O come back with its
    /// frame; the interval's stalled share from two samples' totals.
    #[test]
    fn pressure_and_who_are_replayed_with_their_sample() {
        use crate::pressure::{Pressure, Stall};
        use crate::who::DeviceWho;
        let psi = |total_us| Pressure {
            some: Stall {
                avg10: 12.5,
                total_us,
                ..Stall::default()
            },
            full: None,
        };
        let with = |t: f64, total_us: u64, who: bool| match sample(t) {
            Record::Sample(x) => Record::Sample(Sample {
                psi: Some(psi(total_us)),
                who: if who {
                    BTreeMap::from([(
                        "sda".to_string(),
                        DeviceWho {
                            rest_s: 3.0,
                            ..DeviceWho::default()
                        },
                    )])
                } else {
                    BTreeMap::new()
                },
                ..x
            }),
            r => r,
        };
        let mut f = Frames::new(Vec::new(), f64::INFINITY);
        let first = f.push(with(1.0, 1_000_000, false)).unwrap();
        let p = first.snapshot.pressure.unwrap();
        assert_eq!(p.file.some.avg10, 12.5);
        assert_eq!(p.some_pct, None, "no share without an earlier total");
        assert!(first.who.is_empty());
        let second = f.push(with(3.0, 2_000_000, true)).unwrap();
        // 1 s stalled in 2 s.
        assert_eq!(second.snapshot.pressure.unwrap().some_pct, Some(50.0));
        assert_eq!(second.who["sda"].rest_s, 3.0);
        // An older recording has neither.
        let mut f = Frames::new(Vec::new(), f64::INFINITY);
        let old = f.push(sample(1.0)).unwrap();
        assert!(old.snapshot.pressure.is_none() && old.who.is_empty());
    }

    #[test]
    fn samples_closer_than_the_gap_are_merged_and_rates_stay_right() {
        let mut f = Frames::new(Vec::new(), f64::INFINITY);
        // Every 1/64 s: a frame every fourth sample (1/16 s >= MIN_FRAME_GAP).
        let mut made = Vec::new();
        for i in 0..=21 {
            if let Some(fr) = f.push(sample(f64::from(i) / 64.0)) {
                made.push(fr);
            }
        }
        // A sample that goes back in time is left out.
        assert!(f.push(sample(0.1)).is_none());
        made.extend(f.finish());
        let ts: Vec<f64> = made.iter().map(|f| f.snapshot.t).collect();
        assert_eq!(
            ts,
            [
                0.0,
                4.0 / 64.0,
                8.0 / 64.0,
                12.0 / 64.0,
                16.0 / 64.0,
                20.0 / 64.0,
                21.0 / 64.0
            ]
        );
        for fr in &made[1..] {
            let r_s = fr.snapshot.ext("sda").unwrap().r_s;
            assert!((r_s - 6400.0).abs() < 1e-6, "{r_s} at {}", fr.snapshot.t);
        }
        assert_eq!(made[1].snapshot.interval, Some(4.0 / 64.0));
    }

    /// The recorder says once that the issue program failed; every frame
    /// from that sample on carries its words (a seek lands anywhere), also
    /// when the sample that said it was merged into a later frame.
    #[test]
    fn a_failed_issue_program_is_carried_from_the_sample_that_said_it() {
        let said = |t: f64| match sample(t) {
            Record::Sample(s) => Record::Sample(Sample {
                no_dev_span: Some("block_rq_issue: EPERM".into()),
                ..s
            }),
            r => r,
        };
        let mut f = Frames::new(Vec::new(), f64::INFINITY);
        let mut made: Vec<Frame> = Vec::new();
        for i in 0..12 {
            // Said at 5/64 s: merged into the frame of 8/64 s.
            let t = f64::from(i) / 64.0;
            made.extend(f.push(if i == 5 { said(t) } else { sample(t) }));
        }
        made.extend(f.finish());
        let got: Vec<(f64, bool)> = (made.iter())
            .map(|fr| (fr.snapshot.t * 64.0, fr.no_dev_span.is_some()))
            .collect();
        assert_eq!(got, [(0.0, false), (4.0, false), (8.0, true), (11.0, true)]);
        assert_eq!(
            made[3].no_dev_span.as_deref(),
            Some("block_rq_issue: EPERM")
        );
    }

    /// A merged frame's lost completions are its samples' sum, and it is
    /// untraced when any of them was; the last sample, held and then
    /// framed itself, is not counted twice.
    #[test]
    fn merged_samples_add_their_lost_and_untraced_counts_once() {
        let marked = |t: f64, lost: u64, untraced: bool| match sample(t) {
            Record::Sample(s) => Record::Sample(Sample {
                lost,
                untraced,
                ..s
            }),
            r => r,
        };
        let mut f = Frames::new(Vec::new(), f64::INFINITY);
        let mut made: Vec<Frame> = Vec::new();
        for (i, (lost, untraced)) in [(1, false), (2, false), (4, true), (8, false), (16, false)]
            .into_iter()
            .enumerate()
        {
            made.extend(f.push(marked(f64::from(i as u32) / 64.0, lost, untraced)));
        }
        made.extend(f.finish());
        let got: Vec<(u64, bool)> = made.iter().map(|fr| (fr.lost, fr.untraced)).collect();
        // Frames at 0 and 4/64 (1/64 to 3/64 merged into it).
        assert_eq!(got, [(1, false), (2 + 4 + 8 + 16, true)]);
        let mut f = Frames::new(Vec::new(), f64::INFINITY);
        let mut made: Vec<Frame> = Vec::new();
        made.extend(f.push(marked(0.0, 1, false)));
        made.extend(f.push(marked(1.0 / 64.0, 2, true)));
        made.extend(f.finish());
        let got: Vec<(u64, bool)> = made.iter().map(|fr| (fr.lost, fr.untraced)).collect();
        assert_eq!(got, [(1, false), (2, true)], "the held last sample once");
    }

    #[test]
    fn samples_after_the_end_seen_are_not_played() {
        let mut f = Frames::new(Vec::new(), 2.0);
        assert!(f.push(sample(1.0)).is_some());
        assert!(f.push(sample(2.0)).is_some());
        assert!(!f.past_end);
        assert!(f.push(sample(3.0)).is_none());
        assert!(f.past_end);
    }

    #[test]
    fn playback_clock_follows_speed_pause_and_jumps() {
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let mut p = Playback::new(t0, 10.0, 2.0);
        assert_eq!(p.position(at(1.0)), 12.0);
        p.toggle_pause(at(1.0));
        assert_eq!(p.position(at(5.0)), 12.0);
        p.toggle_pause(at(5.0));
        assert_eq!(p.position(at(6.0)), 14.0);
        p.set_speed(at(6.0), 0.5);
        assert_eq!(p.position(at(8.0)), 15.0);
        p.jump(at(8.0), -3.0);
        assert_eq!(p.position(at(8.0)), 0.0);
        assert_eq!(p.position(at(10.0)), 1.0);
    }
}
