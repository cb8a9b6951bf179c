//! The one-way protocol between the app and its worker: the worker sends
//! [`Feed`] messages (snapshots, answers, progress); the app returns
//! [`Control`] messages. The live worker is [`super::live`], the replay
//! worker [`super::replay`]; neither knows the app, and the app does no I/O.

use super::latency::LatencyFeed;
use super::recorder::RecordEvent;
use super::shootout::{ShootOutFeed, ShootOutRequest};
use blktune_core::error::TuneError;
use blktune_core::history::ChangeMark;
use blktune_core::probe::ProbeStats;
use blktune_core::sampler::Snapshot;
use blktune_core::tuner::{Outcome, Wanted};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

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
    /// The answer to a [`Control::Apply`].
    Applied(Box<ApplyReport>),
    /// Replay only: where playback is.
    Position(ReplayPosition),
    /// The source cannot read (diskstats vanished); shown in the status line.
    Error(String),
    /// From the shoot-out thread ([`Control::StartShootOut`]).
    ShootOut(ShootOutFeed),
    /// The answer to a [`Control::WriteExport`]: the path written, or why not.
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

/// What the app tells a source.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    Interval(Duration),
    Pause(bool),
    Apply(ApplyRequest),
    /// Re-read device settings now (someone else changed them).
    Refresh,
    /// Replay only: move the position by this many seconds.
    Seek(f64),
    /// Replay only: play at this speed.
    Speed(f64),
    /// Live only: start recording to this file (`Some`) or stop (`None`).
    Record(Option<std::path::PathBuf>),
    Stop,
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
    /// Live only: probe this device from now on (the probe starts if it is
    /// not running); `None` stops the probe and closes its device.
    Probe(Option<String>),
}

/// How writing an exported file went wrong (the answer to [`Control::WriteExport`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// The file exists and `force` was not given.
    Exists(String),
    /// Any other failure, as one line.
    Failed(String),
}
