//! The replay worker: plays a [`Recording`] into the same [`Feed`] the live
//! sampler uses, so the table, charts, change markers and before/after
//! panels are drawn by the very same code. Runs on its own thread, like the
//! live source; it never touches sysfs or the tuner.
//!
//! First it says what the recording's header says of the kernel's latency
//! ([`LatencyFeed::Tracing`], or why there are no percentiles: `not
//! recorded`). Per frame of the [`Player`] it sends the frame's change marks
//! ([`Feed::Change`]), then its snapshot ([`Feed::Snapshot`]), then the
//! histograms recorded with it ([`LatencyFeed::Sample`]), exactly the order
//! in which the live view gets a change, the next sample and its interval's
//! histograms; so the p99 column, the latency chart and the before/after
//! rows are the ones the live view showed. A seek back sends
//! [`Feed::Reset`], the latency word again, and then the frames of the last
//! [`KEEP_SECS`] before the new position ([`Player::seek_window`]). At the
//! end of the recording playback pauses on the last frame.
//!
//! The player reads the file again as it plays (a seek back reads it from
//! its start), so memory stays bounded however long the recording; a file
//! that cannot be read again (a pipe) is refused by [`ReplaySource::new`],
//! and one replaced while playing stops playback with a line in the status.

use super::latency::{LatencyFeed, recorded_feed, sample_of_recorded};
use super::procio::WhereIoFeed;
use super::protocol::{Feed, FeedTx, KEEP_SECS, ReplayControl, ReplayPosition, Shared, ToWorker};
use blktune_core::record::{Frame, Playback, Player, RecordError, Recording};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Seconds `←`/`→` move.
pub const SEEK_STEP: f64 = 10.0;
/// The speeds `]`/`[` step through (the CLI accepts any value in this range).
pub const SPEEDS: [f64; 9] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
/// How often the thread wakes to move playback on.
const TICK: Duration = Duration::from_millis(50);

/// The next speed up (`faster`) or down from `cur`.
pub fn step_speed(cur: f64, faster: bool) -> f64 {
    let found = if faster {
        SPEEDS.iter().find(|&&s| s > cur + 1e-9)
    } else {
        SPEEDS.iter().rev().find(|&&s| s < cur - 1e-9)
    };
    found.copied().unwrap_or(cur)
}

/// A recording being played into feed messages.
#[derive(Debug)]
pub struct ReplaySource {
    player: Player,
    clock: Playback,
    ended: bool,
    /// The last position sent, to send only when the header would change.
    sent: Option<ReplayPosition>,
    /// What the header says of the kernel's latency, sent first.
    latency: LatencyFeed,
}

/// A frame as the app takes it: its marks, its snapshot, and (when the
/// recording was traced) the histograms of its interval.
fn push_frame(f: Frame, traced: bool, out: &mut Vec<Feed>) {
    // An interval the recorder could not trace gets no sample: its rows
    // show `-` (not traced), never a count of 0 (idle).
    let lat = (traced && !f.untraced)
        .then(|| sample_of_recorded(&f.snapshot, &f.latency, f.lost))
        .flatten();
    out.extend(f.marks.into_iter().map(Feed::Change));
    // Said from the interval the recorder first said it in (every frame
    // after: a seek lands anywhere; the app says it once).
    if let Some(why) = f.no_dev_span.filter(|_| traced) {
        out.push(Feed::Latency(LatencyFeed::NoDeviceSpan(why)));
    }
    out.push(Feed::Snapshot(Box::new(f.snapshot)));
    if let Some(l) = lat {
        out.push(Feed::Latency(LatencyFeed::Sample(l)));
    }
    // Who did the I/O, as recorded (empty where it was not: the panel says so).
    out.push(Feed::WhereIo(WhereIoFeed::Who(f.who)));
}

impl ReplaySource {
    /// A source at `start` seconds into `rec`, playing at `speed`; the
    /// file is opened again (refused when it cannot be: a pipe).
    pub fn new(
        rec: Arc<Recording>,
        start: f64,
        speed: f64,
        now: Instant,
    ) -> Result<Self, RecordError> {
        let latency = recorded_feed(rec.header.latency.as_ref());
        Ok(Self {
            player: Player::new(rec)?,
            clock: Playback::new(now, start, speed),
            ended: false,
            sent: None,
            latency,
        })
    }

    /// Frames as the app takes them.
    fn push_frames(&self, frames: Vec<Frame>, out: &mut Vec<Feed>) {
        let traced = self.latency == LatencyFeed::Tracing;
        for f in frames {
            push_frame(f, traced, out);
        }
    }

    /// Length of the recording in seconds.
    pub fn duration(&self) -> f64 {
        self.player.duration()
    }

    /// Where playback is at `now`, within the recording.
    pub fn position(&self, now: Instant) -> ReplayPosition {
        ReplayPosition {
            at: self.clock.position(now).clamp(0.0, self.duration()),
            total: self.duration(),
            speed: self.clock.speed(),
            paused: self.clock.is_paused(),
            ended: self.ended,
        }
    }

    /// Everything up to the start position (the first call after `new`).
    pub fn begin(&mut self, now: Instant) -> Vec<Feed> {
        let mut out = vec![Feed::Latency(self.latency.clone())];
        let at = self.clock.position(now);
        let frames = self.player.seek_window(at, KEEP_SECS);
        self.push_frames(frames, &mut out);
        self.reread_error(&mut out);
        self.finish_step(now, &mut out);
        out
    }

    /// The file could not be read again (replaced while playing): say so.
    fn reread_error(&self, out: &mut Vec<Feed>) {
        if let Some(e) = self.player.error() {
            out.push(Feed::Error(e.to_owned()));
        }
    }

    /// Frames due by `now`, the end pause, and the position when it changed.
    pub fn step(&mut self, now: Instant) -> Vec<Feed> {
        let mut out = Vec::new();
        let at = self.clock.position(now);
        let frames = self.player.advance_to(at);
        self.push_frames(frames, &mut out);
        self.finish_step(now, &mut out);
        out
    }

    fn finish_step(&mut self, now: Instant, out: &mut Vec<Feed>) {
        let end = self.duration();
        if !self.ended && self.player.at_end() && self.clock.position(now) >= end {
            self.ended = true;
            self.clock.jump(now, end);
            if !self.clock.is_paused() {
                self.clock.toggle_pause(now);
            }
        }
        let pos = self.position(now);
        let shown = |p: &ReplayPosition| (p.at.floor(), p.speed, p.paused, p.ended);
        if self.sent.as_ref().map(shown) != Some(shown(&pos)) {
            self.sent = Some(pos.clone());
            out.push(Feed::Position(pos));
        }
    }

    /// Go to `target` seconds: forward plays the frames in between, back
    /// resets the app and replays a window before `target`.
    fn seek_to(&mut self, now: Instant, target: f64, out: &mut Vec<Feed>) {
        let target = target.clamp(0.0, self.duration());
        if target + 1e-9 < self.player.position() {
            out.push(Feed::Reset);
            out.push(Feed::Latency(self.latency.clone()));
            let frames = self.player.seek_window(target, KEEP_SECS);
            self.push_frames(frames, out);
            self.reread_error(out);
        } else {
            let frames = self.player.advance_to(target);
            self.push_frames(frames, out);
        }
        self.clock.jump(now, target);
        if self.ended && target < self.duration() {
            // The end paused playback, not the user: play on from there.
            self.ended = false;
            if self.clock.is_paused() {
                self.clock.toggle_pause(now);
            }
        }
    }

    /// Act on a key's request; returns what to send.
    pub fn control(&mut self, c: &ToWorker<ReplayControl>, now: Instant) -> Vec<Feed> {
        let mut out = Vec::new();
        match *c {
            ToWorker::Own(ReplayControl::Seek(delta)) => {
                let at = self.clock.position(now);
                self.seek_to(now, at + delta, &mut out);
            }
            ToWorker::Shared(Shared::Pause(p)) => {
                if self.ended && !p {
                    // Play again from the start, like a media player.
                    self.seek_to(now, 0.0, &mut out);
                } else if self.clock.is_paused() != p {
                    self.clock.toggle_pause(now);
                }
            }
            ToWorker::Own(ReplayControl::Speed(s)) => self.clock.set_speed(now, s),
            ToWorker::Shared(Shared::Stop) => {}
        }
        self.finish_step(now, &mut out);
        out
    }

    /// Run on a new thread until [`Shared::Stop`] or the app hangs up.
    pub fn spawn(
        mut self,
        feed: impl Into<FeedTx>,
        control: Receiver<ToWorker<ReplayControl>>,
    ) -> std::io::Result<JoinHandle<()>> {
        let feed = feed.into();
        std::thread::Builder::new()
            .name("blktune-replay".into())
            .spawn(move || {
                let send = |v: Vec<Feed>| v.into_iter().all(|f| feed.send(f).is_ok());
                if !send(self.begin(Instant::now())) {
                    return;
                }
                loop {
                    let out = match control.recv_timeout(TICK) {
                        Ok(ToWorker::Shared(Shared::Stop))
                        | Err(RecvTimeoutError::Disconnected) => return,
                        Ok(c) => self.control(&c, Instant::now()),
                        Err(RecvTimeoutError::Timeout) => self.step(Instant::now()),
                    };
                    if !send(out) {
                        return;
                    }
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_step_within_the_list() {
        assert_eq!(step_speed(1.0, true), 2.0);
        assert_eq!(step_speed(1.0, false), 0.5);
        assert_eq!(step_speed(3.0, true), 4.0);
        assert_eq!(step_speed(3.0, false), 2.0);
        assert_eq!(step_speed(64.0, true), 64.0);
        assert_eq!(step_speed(0.25, false), 0.25);
    }
}
