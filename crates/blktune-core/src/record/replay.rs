//! Replay: a recording read into memory and a [`Player`] that turns it back
//! into what the live sampler produces, frame by frame.
//!
//! A [`Frame`] holds a [`Snapshot`] recomputed from the recorded counters with
//! the same [`RateTracker`] the live sampler uses (so every figure is the one
//! the live view showed), plus the [`ChangeMark`]s recorded since the previous
//! frame. A consumer feeds frames to its state exactly as it feeds live
//! snapshots and the marks of its own changes. Seeking back rewinds and
//! re-runs from the start: the consumer clears its history and takes the
//! frames [`Player::seek`] returns (rate computation is cheap).
//!
//! A viewer's loop, in outline:
//!
//! ```text
//! let rec = Arc::new(Recording::open(path)?);      // rec.notes: show them once
//! let mut player = Player::new(Arc::clone(&rec));
//! for f in player.seek(start) { app.ingest(f) }     // history up to --start
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
use super::format::{ChangeRecord, DeviceFacts, EndRecord, Header, Record, fields_to_counters};
use super::reader::RecordReader;
use crate::device::{BlockDevice, QueueSettings};
use crate::diskstats::DiskStatsLine;
use crate::history::ChangeMark;
use crate::sampler::{RateTracker, Snapshot};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

/// A whole recording, read and checked.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The file name, for messages.
    pub name: String,
    pub header: Header,
    /// Every record after the header, in file order (samples in rising `t`).
    pub records: Vec<Record>,
    /// One line per problem met while reading (cut-off end, skipped lines).
    pub notes: Vec<String>,
}

impl Recording {
    /// Read a recording file (plain or gzip).
    pub fn open(path: &Path) -> Result<Self, RecordError> {
        Ok(Self::from_reader(RecordReader::open(path)?))
    }

    /// Read the rest of an opened recording.
    pub fn from_reader(mut reader: RecordReader) -> Self {
        let header = reader.header().clone();
        let mut records = Vec::new();
        let mut last_t = f64::NEG_INFINITY;
        let mut dropped = 0usize;
        for r in reader.by_ref() {
            if let Record::Sample(s) = &r {
                // Rates need time to move forward; a sample that does not is unusable.
                if !(s.t.is_finite() && s.t > last_t) {
                    dropped += 1;
                    continue;
                }
                last_t = s.t;
            }
            records.push(r);
        }
        let name = reader.name().to_owned();
        let mut notes = reader.take_notes();
        if dropped > 0 {
            notes.push(format!(
                "{name}: skipped {dropped} sample(s) whose time did not move forward"
            ));
        }
        let mut rec = Self {
            name,
            header,
            records,
            notes,
        };
        if rec.end().is_none() {
            rec.notes.push(format!(
                "{}: no end record (the recorder was killed or is still running); it stops at {:.1}s",
                rec.name,
                rec.duration()
            ));
        }
        rec
    }

    /// Time of the last sample (seconds since the start).
    pub fn duration(&self) -> f64 {
        self.records
            .iter()
            .rev()
            .find_map(|r| match r {
                Record::Sample(s) => Some(s.t),
                _ => None,
            })
            .unwrap_or(0.0)
    }

    /// Time of the first sample.
    pub fn first_t(&self) -> f64 {
        self.records
            .iter()
            .find_map(|r| match r {
                Record::Sample(s) => Some(s.t),
                _ => None,
            })
            .unwrap_or(0.0)
    }

    /// Number of samples.
    pub fn samples(&self) -> usize {
        self.records
            .iter()
            .filter(|r| matches!(r, Record::Sample(_)))
            .count()
    }

    /// Every change, in time order.
    pub fn changes(&self) -> impl Iterator<Item = &ChangeRecord> {
        self.records.iter().filter_map(|r| match r {
            Record::Change(c) => Some(c),
            _ => None,
        })
    }

    /// The `end` record, when the recorder stopped cleanly.
    pub fn end(&self) -> Option<&EndRecord> {
        self.records.iter().rev().find_map(|r| match r {
            Record::End(e) => Some(e),
            _ => None,
        })
    }

    /// Was this recorded on a host with another name than `local`?
    pub fn is_from_other_host(&self, local: &str) -> bool {
        !self.header.host.hostname.is_empty() && self.header.host.hostname != local
    }
}

/// What the player produces per recorded sample: what the live sampler
/// would have sent, plus the change marks to add before it.
#[derive(Debug, Clone)]
pub struct Frame {
    pub snapshot: Snapshot,
    /// Changes recorded since the previous frame, oldest first.
    pub marks: Vec<ChangeMark>,
}

/// Plays a [`Recording`] back, frame by frame.
#[derive(Debug, Clone)]
pub struct Player {
    rec: Arc<Recording>,
    next: usize,
    rates: RateTracker,
    facts: Vec<DeviceFacts>,
    queues: BTreeMap<String, QueueSettings>,
    devices: Arc<Vec<BlockDevice>>,
    dirty: bool,
    position: f64,
}

impl Player {
    /// A player at the start of `rec`.
    pub fn new(rec: Arc<Recording>) -> Self {
        let facts = rec.header.devices.clone();
        Self {
            rec,
            next: 0,
            rates: RateTracker::default(),
            facts,
            queues: BTreeMap::new(),
            devices: Arc::new(Vec::new()),
            dirty: true,
            position: 0.0,
        }
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

    /// Has every frame been produced?
    pub fn at_end(&self) -> bool {
        !self.rec.records[self.next..]
            .iter()
            .any(|r| matches!(r, Record::Sample(_)))
    }

    /// Back to the start.
    pub fn rewind(&mut self) {
        *self = Self::new(Arc::clone(&self.rec));
    }

    /// Every frame with a time at or before `t` not yet produced.
    pub fn advance_to(&mut self, t: f64) -> Vec<Frame> {
        let mut out = Vec::new();
        while let Some(next_t) = self.next_sample_t() {
            if next_t > t + 1e-9 {
                break;
            }
            match self.next_frame() {
                Some(f) => out.push(f),
                None => break,
            }
        }
        out
    }

    /// Rewind and produce every frame up to `t`: the consumer clears its
    /// state and feeds them all.
    pub fn seek(&mut self, t: f64) -> Vec<Frame> {
        self.seek_window(t, f64::INFINITY)
    }

    /// Like [`Player::seek`], but only the frames of the last `keep_secs`
    /// before `t` are returned (what a bounded history would keep anyway),
    /// so seeking in a long recording stays light. The change marks of the
    /// frames left out come with the first frame returned.
    pub fn seek_window(&mut self, t: f64, keep_secs: f64) -> Vec<Frame> {
        self.rewind();
        let mut out: Vec<Frame> = Vec::new();
        let mut carried = Vec::new();
        while let Some(next_t) = self.next_sample_t() {
            if next_t > t + 1e-9 {
                break;
            }
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
            out.push(f);
        }
        if let (Some(last), false) = (out.last_mut(), carried.is_empty()) {
            carried.append(&mut last.marks);
            last.marks = carried;
        }
        out
    }

    /// Time of the next frame, if any.
    pub fn next_sample_t(&self) -> Option<f64> {
        self.rec.records[self.next..].iter().find_map(|r| match r {
            Record::Sample(s) => Some(s.t),
            _ => None,
        })
    }

    fn rebuild_devices(&mut self) {
        let devs = self
            .facts
            .iter()
            .map(|f| f.to_device(self.queues.get(&f.name).cloned().unwrap_or_default()))
            .collect();
        self.devices = Arc::new(devs);
    }

    /// The next frame; `None` at the end. Changes after the last sample
    /// come with no frame, as nothing was measured after them.
    pub fn next_frame(&mut self) -> Option<Frame> {
        let rec = Arc::clone(&self.rec);
        let mut marks = Vec::new();
        while let Some(r) = rec.records.get(self.next) {
            self.next += 1;
            match r {
                Record::Header(_) | Record::End(_) => {}
                Record::Settings(s) => {
                    self.queues.insert(s.device.clone(), s.queue.clone());
                    self.dirty = true;
                }
                Record::Devices(d) => {
                    self.facts = d.devices.clone();
                    self.dirty = true;
                }
                Record::Change(c) => marks.push(ChangeMark {
                    device: c.device.clone(),
                    t: c.t,
                    label: c.label.clone(),
                    before: c.before.clone(),
                    after: c.after.clone(),
                }),
                Record::Sample(s) => {
                    let mut warnings = Vec::new();
                    let lines: Vec<DiskStatsLine> = s
                        .disks
                        .iter()
                        .filter_map(|(name, fields)| match fields_to_counters(fields) {
                            Ok(counters) => Some(DiskStatsLine {
                                major: 0,
                                minor: 0,
                                name: name.clone(),
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
                    self.position = s.t;
                    return Some(Frame {
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
                            warnings,
                        },
                        marks,
                    });
                }
            }
        }
        None
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
