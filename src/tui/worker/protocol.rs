//! The one-way protocol between the app and its worker: the worker sends
//! [`Feed`] messages (snapshots, answers, progress); the app returns
//! [`Control`] messages. The live worker is [`super::live`], the replay
//! worker [`super::replay`]; neither knows the app, and the app does no I/O.

use super::ab::{AbFeed, AbRequest};
use super::latency::LatencyFeed;
use super::recorder::RecordEvent;
use super::shootout::{ShootOutFeed, ShootOutRequest};
use crate::tui::wake::Waker;
use blktune_core::error::TuneError;
use blktune_core::history::ChangeMark;
use blktune_core::probe::ProbeStats;
use blktune_core::sampler::Snapshot;
use blktune_core::tuner::{Outcome, Wanted};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::{Sender, SyncSender, TrySendError};
use std::time::Duration;

/// Seconds of history the app keeps per device (the charts show up to
/// this); a seek back of the replay worker sends this much before the new
/// position.
pub const KEEP_SECS: f64 = 600.0;

/// Position of a replay, shown in the header instead of live facts.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayPosition {
    /// Seconds from the start of the recording.
    pub at: f64,
    /// Length of the recording in seconds.
    pub total: f64,
    /// Playback speed factor (1.0 = real time).
    pub speed: f64,
    /// Is playback paused (by a key, or at the end)?
    pub paused: bool,
    /// Has playback reached the last frame?
    pub ended: bool,
}

/// What a source tells the app.
#[derive(Debug)]
pub enum Feed {
    /// One sample of every device.
    Snapshot(Box<Snapshot>),
    /// A change that happened (recorded, or made by someone else).
    Change(ChangeMark),
    /// The answer to a [`LiveControl::Apply`].
    Applied(Box<ApplyReport>),
    /// Replay only: where playback is.
    Position(ReplayPosition),
    /// The source cannot read (diskstats vanished); shown in the status line.
    Error(String),
    /// From the shoot-out thread ([`LiveControl::StartShootOut`]).
    ShootOut(ShootOutFeed),
    /// The answer to a [`LiveControl::WriteExport`]: the path written, or why not.
    ExportWritten(Result<PathBuf, WriteError>),
    /// Replay only: forget history and marks (a seek back follows with frames).
    Reset,
    /// Recording of the live session (`R`) started, stopped or failed.
    Record(RecordEvent),
    /// Live, while the probe runs (`--probe`, `P`): its reads in the
    /// interval of the snapshot just sent.
    Probe(ProbeSample),
    /// Live: whether the kernel's latency is traced (and why not), then
    /// each interval's histograms after its snapshot.
    Latency(LatencyFeed),
    /// Live: the busiest processes (while the app asks), and placement.
    WhereIo(super::procio::WhereIoFeed),
    /// From the A/B thread ([`LiveControl::StartAb`]).
    Ab(AbFeed),
}

/// What the latency probe saw in one sample interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSample {
    /// End of the interval on the sampler's clock (the snapshot's `t`).
    pub t: f64,
    /// Length of the interval in seconds (the snapshot's interval).
    pub itv: f64,
    /// Per probed device (only the one the app asked for).
    pub stats: BTreeMap<String, ProbeStats>,
}

/// What kind of change a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyKind {
    /// A new setting, validated by the tuner.
    Change,
    /// Back to the settings before the last change.
    Undo,
    /// Back to the settings before the session's first change.
    RevertAll,
}

/// A change the app wants made.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyRequest {
    pub id: u64,
    pub device: String,
    /// The device's `diskseq` when the user chose the change; `None` when
    /// the kernel has none (before 5.15). A device that has another one now
    /// was replaced under the same name, and the change is refused.
    pub diskseq: Option<u64>,
    pub settings: Wanted,
    pub kind: ApplyKind,
}

/// How a request went.
#[derive(Debug)]
pub struct ApplyReport {
    pub request: ApplyRequest,
    /// The outcome and its mark on the sampler's clock, or why not (the
    /// app shows its words; it is never turned into a string on the way).
    pub result: Result<(Outcome, ChangeMark), ApplyError>,
}

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The session is read-only (`--read-only`, or not root): no tuner.
    #[error("read-only: changes are disabled")]
    ReadOnly,
    /// The tuner refused or failed (nothing written, or rolled back).
    #[error(transparent)]
    Tune(#[from] TuneError),
}

/// What the app asks of whichever worker runs (`App::on_key` returns a
/// `Vec` of these); the event loop hands each to the worker as its
/// [`ToWorker`] message, through [`ControlSink`].
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// For either worker.
    Shared(Shared),
    /// For the live worker only.
    Live(LiveControl),
    /// For the replay worker only.
    Replay(ReplayControl),
}

/// The controls both workers take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shared {
    /// Stop sampling (live) or playing (replay), or go on.
    Pause(bool),
    /// End the worker's thread (as the app hanging up does).
    Stop,
}

/// What only the live worker takes: changes, writes, recording, probe and
/// shoot-out.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveControl {
    Interval(Duration),
    Apply(ApplyRequest),
    /// Re-read device settings now (someone else changed them).
    Refresh,
    /// Start recording to this file (`Some`) or stop (`None`).
    Record(Option<PathBuf>),
    /// Write an exported rules file (atomic; an existing file only with `force`).
    WriteExport {
        path: PathBuf,
        text: String,
        force: bool,
    },
    /// Start a shoot-out on its own thread (answers with [`Feed::ShootOut`]).
    StartShootOut(ShootOutRequest),
    /// Cancel the running shoot-out (it restores the originals).
    CancelShootOut,
    /// Start an A/B of a change on its own thread (answers with [`Feed::Ab`]).
    StartAb(Box<AbRequest>),
    /// Stop the running A/B (it restores the user's choice).
    CancelAb,
    /// Probe this device from now on (the probe starts if it is not
    /// running); `None` stops the probe and closes its device.
    Probe(Option<String>),
    /// Sample the busiest processes each tick (the `i` panel), or stop.
    Processes(bool),
    /// The table's rows on screen now: their settings are checked every
    /// period, the rest less often (see `Sampler::set_in_view`).
    InView(Vec<String>),
}

/// What only the replay worker takes. It has no change, write or recording
/// to be asked for: a replay cannot be sent one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ReplayControl {
    /// Move the position by this many seconds.
    Seek(f64),
    /// Play at this speed.
    Speed(f64),
}

/// What a worker's channel carries: a shared control or one of its own
/// (`K`: [`LiveControl`] or [`ReplayControl`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ToWorker<K> {
    Shared(Shared),
    Own(K),
}

impl From<Shared> for Control {
    fn from(c: Shared) -> Self {
        Control::Shared(c)
    }
}

impl From<LiveControl> for Control {
    fn from(c: LiveControl) -> Self {
        Control::Live(c)
    }
}

impl From<ReplayControl> for Control {
    fn from(c: ReplayControl) -> Self {
        Control::Replay(c)
    }
}

impl<K> From<Shared> for ToWorker<K> {
    fn from(c: Shared) -> Self {
        ToWorker::Shared(c)
    }
}

impl From<LiveControl> for ToWorker<LiveControl> {
    fn from(c: LiveControl) -> Self {
        ToWorker::Own(c)
    }
}

impl From<ReplayControl> for ToWorker<ReplayControl> {
    fn from(c: ReplayControl) -> Self {
        ToWorker::Own(c)
    }
}

impl Control {
    /// The live worker's message; `None` for a replay's control.
    pub fn to_live(self) -> Option<ToWorker<LiveControl>> {
        match self {
            Control::Shared(s) => Some(ToWorker::Shared(s)),
            Control::Live(c) => Some(ToWorker::Own(c)),
            Control::Replay(_) => None,
        }
    }

    /// The replay worker's message; `None` for a live control (a change, a
    /// write, a recording, the probe, a shoot-out).
    pub fn to_replay(self) -> Option<ToWorker<ReplayControl>> {
        match self {
            Control::Shared(s) => Some(ToWorker::Shared(s)),
            Control::Replay(c) => Some(ToWorker::Own(c)),
            Control::Live(_) => None,
        }
    }
}

/// Where a worker sends its [`Feed`]: the app's channel, and the loop's
/// [`Waker`] poked after each message (and when the worker ends), so the
/// loop takes it in at once instead of at its next look.
#[derive(Debug, Clone)]
pub struct FeedTx {
    tx: Tx,
    wake: Option<Waker>,
}

/// The app's channel: bounded on a real terminal, so that a loop that
/// stops taking messages in (stuck on a terminal that takes no output)
/// holds a worker back instead of letting the messages pile up in memory.
#[derive(Debug, Clone)]
enum Tx {
    Unbounded(Sender<Feed>),
    Bounded(SyncSender<Feed>),
}

/// Messages a bounded feed holds before its worker waits for room: a few
/// seconds of a live session's ticks.
pub const FEED_BOUND: usize = 64;

impl FeedTx {
    /// Send on `tx`, waking the loop through `wake` if there is one.
    pub fn new(tx: Sender<Feed>, wake: Option<Waker>) -> Self {
        Self {
            tx: Tx::Unbounded(tx),
            wake,
        }
    }

    /// Send on the bounded `tx` (made with [`FEED_BOUND`]): when it is full,
    /// wake the loop and wait for room.
    pub fn bounded(tx: SyncSender<Feed>, wake: Option<Waker>) -> Self {
        Self {
            tx: Tx::Bounded(tx),
            wake,
        }
    }

    /// Send one message and wake the loop; `Err` once the app hung up.
    pub fn send(&self, f: Feed) -> Result<(), AppGone> {
        let sent = self.send_quietly(f);
        self.wake();
        sent
    }

    /// Send one message of several, the last of which (or a [`FeedTx::wake`])
    /// wakes the loop.
    pub fn send_quietly(&self, f: Feed) -> Result<(), AppGone> {
        match &self.tx {
            Tx::Unbounded(tx) => tx.send(f).map_err(|_| AppGone),
            Tx::Bounded(tx) => match tx.try_send(f) {
                Ok(()) => Ok(()),
                // Full: what is in it was sent quietly; the loop takes it now.
                Err(TrySendError::Full(f)) => {
                    self.wake();
                    tx.send(f).map_err(|_| AppGone)
                }
                Err(TrySendError::Disconnected(_)) => Err(AppGone),
            },
        }
    }

    /// Wake the loop for what was sent quietly.
    pub fn wake(&self) {
        if let Some(w) = &self.wake {
            w.wake();
        }
    }
}

/// The app hung up: a worker stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppGone;

/// Without a waker (tests, whose loop looks every [`crate::tui::event_loop::POLL`]).
impl From<Sender<Feed>> for FeedTx {
    fn from(tx: Sender<Feed>) -> Self {
        Self::new(tx, None)
    }
}

impl Drop for FeedTx {
    /// A worker that ends (or panics) is noticed at once.
    fn drop(&mut self) {
        self.wake();
    }
}

/// Where the event loop puts the app's controls: the channel of the worker
/// that runs, which takes only what is meant for it (the other kind is
/// dropped, as a worker would ignore it).
pub trait ControlSink {
    /// Hand `c` on; a worker that hung up is noticed on the feed.
    fn send_control(&self, c: Control);
}

impl ControlSink for Sender<ToWorker<LiveControl>> {
    fn send_control(&self, c: Control) {
        if let Some(m) = c.to_live() {
            let _ = self.send(m);
        }
    }
}

impl ControlSink for Sender<ToWorker<ReplayControl>> {
    fn send_control(&self, c: Control) {
        if let Some(m) = c.to_replay() {
            let _ = self.send(m);
        }
    }
}

/// As is (tests that look at what the app asked for).
impl ControlSink for Sender<Control> {
    fn send_control(&self, c: Control) {
        let _ = self.send(c);
    }
}

/// How writing an exported file went wrong (the answer to [`LiveControl::WriteExport`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// The file exists and `force` was not given.
    Exists(String),
    /// Any other failure, as one line.
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn each_worker_gets_only_its_own_controls_and_the_shared_ones() {
        let (live, live_rx) = mpsc::channel::<ToWorker<LiveControl>>();
        let (replay, replay_rx) = mpsc::channel::<ToWorker<ReplayControl>>();
        let apply = LiveControl::Apply(ApplyRequest {
            id: 1,
            device: "sda".into(),
            diskseq: None,
            settings: Wanted::default(),
            kind: ApplyKind::Change,
        });
        for c in [
            Control::from(apply.clone()),
            ReplayControl::Seek(10.0).into(),
            Shared::Pause(true).into(),
        ] {
            live.send_control(c.clone());
            replay.send_control(c);
        }
        let got: Vec<_> = live_rx.try_iter().collect();
        assert_eq!(got, [ToWorker::Own(apply), Shared::Pause(true).into()]);
        let got: Vec<_> = replay_rx.try_iter().collect();
        assert_eq!(
            got,
            [
                ToWorker::Own(ReplayControl::Seek(10.0)),
                Shared::Pause(true).into()
            ]
        );
    }
}
