//! Typed errors of the tuner and the device lookups. Messages name the device
//! and the value in quotes and say what to do next; `main` adds nothing.

use std::io;

/// What went wrong while validating or applying a change.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error("unknown device '{name}': no such entry under {sysfs}/block (see 'blktune list')")]
    UnknownDevice { name: String, sysfs: String },

    #[error(
        "'{name}' is a partition of '{parent}'; queue settings belong to the whole disk: use '{parent}'"
    )]
    Partition { name: String, parent: String },

    #[error(
        "'{dev}' has no I/O scheduler (no queue/scheduler: a bio-based device such as zram, md or dm); only read_ahead_kb can be set"
    )]
    NoScheduler { dev: String },

    #[error("'{dev}': unknown scheduler '{name}'; available: {}", .available.join(", "))]
    UnknownScheduler {
        dev: String,
        name: String,
        available: Vec<String>,
    },

    #[error("'{dev}': {what} '{value}' is {why}")]
    BadValue {
        dev: String,
        what: String,
        value: String,
        why: String,
    },

    #[error("'{dev}': scheduler '{scheduler}' has no tunable '{name}'; its tunables: {}", if .known.is_empty() { "none".to_string() } else { .known.join(", ") })]
    UnknownTunable {
        dev: String,
        scheduler: String,
        name: String,
        known: Vec<String>,
    },

    #[error(
        "'{dev}': permission denied writing {path}: changing queue settings needs root (try sudo); nothing was changed"
    )]
    PermissionDenied { dev: String, path: String },

    #[error("'{dev}' vanished during the change{}", rollback_note(.rollback))]
    Vanished {
        dev: String,
        rollback: Option<String>,
    },

    #[error("'{dev}': writing '{value}' to {attr} failed: {source}{}", rollback_note(.rollback))]
    WriteFailed {
        dev: String,
        attr: String,
        value: String,
        source: io::Error,
        rollback: Option<String>,
    },

    #[error("'{dev}': wrote '{wanted}' to {attr} but the kernel reads back '{got}'{}", rollback_note(.rollback))]
    ReadBack {
        dev: String,
        attr: String,
        wanted: String,
        got: String,
        rollback: Option<String>,
    },

    #[error(
        "'{dev}' was re-created while blktune was changing it (diskseq {seen}, now {now}: detached and re-attached, another device under the same name); stopped before writing to it, and nothing is restored onto the new device"
    )]
    Replaced { dev: String, seen: u64, now: String },

    #[error("'{dev}': cannot read {attr}: {source}")]
    ReadFailed {
        dev: String,
        attr: String,
        source: io::Error,
    },

    #[error("cannot use the journal of original settings in {dir}: {source}; nothing was changed")]
    Journal { dir: String, source: io::Error },

    #[error(
        "'{dev}' was changed by blktune with its originals journalled in {dir}, not in {here}: nothing was changed; revert it first ('{revert}') or change it with that journal"
    )]
    JournalledElsewhere {
        dev: String,
        dir: String,
        here: String,
        revert: String,
    },

    #[error(
        "'{dev}': the original in the journal {dir} is refused: {why}; nothing was written, the entry is kept"
    )]
    BadOriginal {
        dev: String,
        dir: String,
        /// The catalogue's words ([`crate::sched::ValueError`]).
        why: String,
    },

    /// Another change to the device holds its lock (see `journal::Journal::lock`).
    #[error("{0}")]
    Busy(String),
}

fn rollback_note(r: &Option<String>) -> String {
    match r {
        Some(r) => format!("; {r}"),
        None => String::new(),
    }
}

impl TuneError {
    /// Exit code for the CLI: 2 for bad input, 1 for failures.
    pub fn exit_code(&self) -> i32 {
        match self {
            TuneError::UnknownDevice { .. }
            | TuneError::Partition { .. }
            | TuneError::NoScheduler { .. }
            | TuneError::UnknownScheduler { .. }
            | TuneError::BadValue { .. }
            | TuneError::UnknownTunable { .. } => 2,
            _ => 1,
        }
    }
}
