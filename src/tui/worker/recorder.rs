//! `R` in the live TUI: recording the session to a file. The [`Recorder`]
//! lives in the live source thread (it sees every snapshot and every change
//! the tuner made, at their exact times); the app only asks to start or stop
//! and shows what [`RecordEvent`]s tell it.
//!
//! While the kernel tracer runs, each snapshot is recorded with the
//! histograms of the same interval (read right after it), so a replay of
//! the file shows the percentiles the live view showed.

use blktune_core::atomic_file;
use blktune_core::history::ChangeMark;
use blktune_core::latency::Interval;
use blktune_core::record::latency::LatencyFacts;
use blktune_core::record::{RecordOptions, Recorder};
use blktune_core::sampler::{Sampler, Snapshot};
use blktune_core::units::rfc3339;
use blktune_core::who::WhoByDevice;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What happened to the live recording; shown in the header and status line.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordEvent {
    /// Recording to this file.
    Started(PathBuf),
    /// Recording stopped cleanly.
    Stopped {
        path: PathBuf,
        samples: u64,
        changes: u64,
    },
    /// It could not start, or a write failed (the recording is then stopped).
    Failed(String),
}

/// The recorder of the live source, if `R` started one.
#[derive(Debug, Default)]
pub struct LiveRecorder {
    rec: Option<Recorder>,
    /// A failed write to report with the next snapshot.
    failed: Option<String>,
}

impl LiveRecorder {
    /// Is a recording being written?
    pub fn is_active(&self) -> bool {
        self.rec.is_some()
    }

    /// Start recording to `path` (never overwriting a file); `origin` is the
    /// newest snapshot's time, which becomes `t` = 0. `latency` is what the
    /// header says of the kernel's histograms (`None`: tracing was never
    /// asked for).
    pub fn start(
        &mut self,
        path: &Path,
        sampler: &Sampler,
        origin: f64,
        interval: Duration,
        latency: Option<LatencyFacts>,
    ) -> Option<RecordEvent> {
        if let Some(r) = &self.rec {
            return Some(RecordEvent::Failed(format!(
                "already recording to '{}'",
                r.path().display()
            )));
        }
        // A directory offered or typed at `R` may not be there yet: made
        // for this user (root: and its group) only, never through a symlink
        // (a recording names devices and settings).
        if let Some(dir) = path.parent().filter(|d| {
            !d.as_os_str().is_empty()
                && std::fs::symlink_metadata(d)
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        }) && let Err(e) =
            atomic_file::private_dir(dir, state_dir_mode(nix::unistd::geteuid().is_root()))
        {
            return Some(RecordEvent::Failed(format!("cannot record: {e}")));
        }
        let opts = RecordOptions {
            force: false,
            only: Vec::new(),
            interval,
            checked_within: sampler.refresh_every(),
        };
        Some(
            match Recorder::create_traced(
                path,
                sampler.root(),
                sampler.devices(),
                origin,
                &opts,
                latency,
            ) {
                Ok(r) => {
                    self.rec = Some(r);
                    RecordEvent::Started(path.to_owned())
                }
                Err(e) => RecordEvent::Failed(format!("cannot record: {e}")),
            },
        )
    }

    /// Record one snapshot with the tracer's histograms of its interval
    /// (`None`: not traced); a failure (now or from [`LiveRecorder::change`])
    /// stops the recording and is returned.
    pub fn snapshot(&mut self, s: &Snapshot, traced: Option<&Interval>) -> Option<RecordEvent> {
        if let Some(r) = &mut self.rec
            && self.failed.is_none()
            && let Err(e) = r.snapshot_traced(s, traced)
        {
            self.failed = Some(e.to_string());
        }
        let why = self.failed.take()?;
        // The file keeps what was written; an end record may not fit either.
        if let Some(r) = self.rec.take() {
            let _ = r.finish("stopped");
        }
        Some(RecordEvent::Failed(format!("recording stopped: {why}")))
    }

    /// Who did the I/O in the interval of the next snapshot: recorded with it.
    pub fn who(&mut self, who: WhoByDevice) {
        if let Some(r) = &mut self.rec {
            r.who(who);
        }
    }

    /// The kernel's issue program could not be attached (`why`): the
    /// recording says so with its next sample (once).
    pub fn no_device_span(&mut self, why: &str) {
        if let Some(r) = &mut self.rec {
            r.no_device_span(why);
        }
    }

    /// Record a change made through the tuner, at its exact time.
    pub fn change(&mut self, mark: &ChangeMark) {
        if let Some(r) = &mut self.rec
            && let Err(e) = r.change(mark)
        {
            self.failed = Some(e.to_string());
        }
    }

    /// Stop and close the file; `None` when not recording.
    pub fn stop(&mut self) -> Option<RecordEvent> {
        let r = self.rec.take()?;
        let path = r.path().to_owned();
        Some(match r.finish("stopped") {
            Ok(st) => RecordEvent::Stopped {
                path,
                samples: st.samples,
                changes: st.changes,
            },
            Err(e) => RecordEvent::Failed(format!("recording stopped: {e}")),
        })
    }
}

/// The mode of a directory `R` makes: 0700 for a user's state directory
/// (the XDG base directory specification asks for it), 0750 for root's
/// `/var/lib/blktune/recordings` (the admin group may read recordings).
pub fn state_dir_mode(root: bool) -> u32 {
    if root { 0o750 } else { 0o700 }
}

/// `blktune-<host>-<YYYYmmdd-HHMMSS>.ndjson.gz` (UTC), in the current directory.
pub fn default_file_name(host: &str, now: SystemTime) -> PathBuf {
    let stamp: String = rfc3339(now)
        .chars()
        .take(19)
        .filter(char::is_ascii_digit)
        .collect();
    let (date, time) = stamp.split_at(stamp.len().min(8));
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let host = if host.is_empty() { "host".into() } else { host };
    PathBuf::from(format!("blktune-{host}-{date}-{time}.ndjson.gz"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn default_name_has_host_and_utc_stamp() {
        // 2026-11-22 04:20:56 UTC
        let t = UNIX_EPOCH + Duration::from_secs(1_795_321_256);
        assert_eq!(
            default_file_name("db/1", t),
            PathBuf::from("blktune-db_1-20261122-042056.ndjson.gz")
        );
        assert!(
            default_file_name("", t)
                .to_string_lossy()
                .starts_with("blktune-host-")
        );
    }
}
