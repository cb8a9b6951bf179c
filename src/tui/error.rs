//! The TUI's one error type. The CLI turns it into words and an exit code
//! (`cli::tui_error`); nothing here knows about `anyhow`.

use blktune_core::error::TuneError;
use std::path::PathBuf;

/// Why the full-screen tuner could not start or went on no longer.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// `--device` names no device (its own exit code: 2 for a typo).
    #[error(transparent)]
    Device(#[from] TuneError),
    /// The sampler cannot read the proc tree.
    #[error("cannot read {}/diskstats", .proc_root.display())]
    Diskstats {
        proc_root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The recording cannot be played (it cannot be read again: a pipe).
    #[error(transparent)]
    Replay(#[from] blktune_core::record::RecordError),
    #[error("cannot install signal handlers")]
    Signals(#[source] std::io::Error),
    /// A worker thread could not be started (`what` names it).
    #[error("cannot start the {what} thread")]
    Thread {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot set up the terminal")]
    Setup(#[source] std::io::Error),
    /// Drawing or reading the terminal failed (it may be gone).
    #[error(transparent)]
    Terminal(Box<dyn std::error::Error + Send + Sync>),
    /// The event loop's waits kept ending at once with nothing to do: it
    /// stopped instead of spinning.
    #[error(
        "the screen's loop made no progress ({rounds} rounds in a row that waited for nothing)"
    )]
    NoProgress { rounds: u32 },
    /// The worker thread ended without being asked (a panic): stop rather
    /// than show stale figures.
    #[error("the sampler thread stopped unexpectedly")]
    WorkerStopped,
}

impl From<std::io::Error> for TuiError {
    fn from(err: std::io::Error) -> Self {
        TuiError::Terminal(Box::new(err))
    }
}
