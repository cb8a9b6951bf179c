//! The built-in load generator (no fio needed): worker threads issuing
//! O_DIRECT I/O with a chosen mix, timing every I/O into a [`Histogram`].
//!
//! Safety first: writes go only to a [`Scratch`] device this process created
//! (see [`safety`]); any other device gets read-only mixes, and the CLI asks
//! for `--allow-read-load` even for those.
//!
//! Library use (the TUI's demo and shoot-out call exactly this):
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use blktune_core::load::{Load, LoadOptions, Mix, Scratch, Target};
//! let root = blktune_core::os::SysRoot::default();
//! let scratch = Scratch::create(std::path::Path::new("/var/tmp"), 256 << 20)?;
//! let target = Target::writable(&root, scratch.name())?;
//! let load = Load::start(&target, &LoadOptions::new(Mix::Mixed), None)?;
//! // ... show the device; load.stats() gives live figures ...
//! let report = load.stop();      // or just drop it
//! drop(scratch);                 // detaches the loop device, deletes the file
//! # let _ = report; Ok(()) }
//! ```

mod generator;
pub mod hist;
pub mod safety;

pub(crate) use generator::{AlignedBuf, Rng};
pub use generator::{Load, LoadOptions, LoadStats, OpStats};
pub use hist::{Histogram, LatencySummary};
pub use safety::{Scratch, Target};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What the workers do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mix {
    /// 4 KiB random reads.
    RandRead,
    /// 4 KiB random reads plus 1 MiB sequential writes on separate threads.
    Mixed,
    /// 4 KiB random I/O, half reads and half writes.
    RandRw,
}

impl Mix {
    /// Every mix, for help texts.
    pub const ALL: [Mix; 3] = [Mix::RandRead, Mix::Mixed, Mix::RandRw];

    /// The name on the command line.
    pub fn label(self) -> &'static str {
        match self {
            Mix::RandRead => "randread",
            Mix::Mixed => "mixed",
            Mix::RandRw => "randrw",
        }
    }

    /// Does this mix write?
    pub fn writes(self) -> bool {
        !matches!(self, Mix::RandRead)
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for Mix {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Mix::ALL
            .into_iter()
            .find(|m| m.label() == text)
            .ok_or_else(|| format!("unknown load '{text}'; choose randread, mixed or randrw"))
    }
}

/// Why a load could not start.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("unknown device '{name}' (see 'blktune list')")]
    UnknownDevice { name: String },

    #[error("refusing to write to '{dev}': {why}")]
    WriteRefused { dev: String, why: String },

    #[error("'{dev}' is too small for a load ({size} bytes; at least 8 MiB)")]
    TooSmall { dev: String, size: u64 },

    #[error("cannot open {path} for {mode} with O_DIRECT: {source}")]
    Open {
        path: String,
        mode: &'static str,
        source: std::io::Error,
    },

    #[error(
        "'{dev}' was re-created (diskseq {seen}, now {now}: detached and re-attached); the load does not run on another device"
    )]
    Replaced { dev: String, seen: u64, now: String },

    #[error("cannot start a load thread: {0}")]
    Thread(std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_names_round_trip() {
        for m in Mix::ALL {
            assert_eq!(m.label().parse::<Mix>(), Ok(m));
        }
        assert!("write".parse::<Mix>().unwrap_err().contains("'write'"));
        assert!(!Mix::RandRead.writes());
        assert!(Mix::Mixed.writes() && Mix::RandRw.writes());
    }
}
