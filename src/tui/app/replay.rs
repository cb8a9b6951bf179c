//! The app's side of replay (position, reset, playback keys) and of `R`
//! (recording the live session). Kept apart from the live key handling so
//! the replay viewer only adds to it.

use super::{App, Overlay, StatusKind};
use crate::tui::command::Action;
use crate::tui::dialogs::record::{self, Facts, Place};
use crate::tui::worker::protocol::{Control, LiveControl, ReplayControl, ReplayPosition, Shared};
use crate::tui::worker::recorder::{RecordEvent, default_file_name, state_dir_mode};
use crate::tui::worker::replay::{SEEK_STEP, step_speed};
use std::time::SystemTime;

/// `01:23`, or `1:02:03` past an hour.
pub fn clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

impl App {
    /// A replay's position: shown in the header; the end is said once.
    pub(super) fn on_position(&mut self, p: ReplayPosition) {
        let was_ended = self.replay.as_ref().is_some_and(|r| r.ended);
        if p.ended && !was_ended {
            self.say(
                StatusKind::Info,
                "end of recording: ← seeks back, space plays again, q quits",
            );
        }
        self.paused = p.paused;
        self.replay = Some(p);
    }

    /// Forget every sample and mark (a replay seeks back and refeeds).
    pub fn reset(&mut self) {
        self.histories.clear();
        self.seed_histories();
        self.now_stats.clear();
        // The kernel's histograms too: the refed window is earlier than them.
        self.latency.clear();
        self.marks.clear();
        self.undo.clear();
        self.samples = 0;
        self.now = 0.0;
        self.iowait = None;
        self.system.clear();
        self.ab = None;
        self.pressure = None;
        self.where_io.who = None;
    }

    /// Keys of the replay viewer; the rest act as in the live view.
    pub(super) fn replay_action(&mut self, a: Action) -> Vec<Control> {
        let speed = self.replay.as_ref().map_or(1.0, |r| r.speed);
        match a {
            Action::Pause => vec![Shared::Pause(!self.paused).into()],
            Action::SeekBack => vec![ReplayControl::Seek(-SEEK_STEP).into()],
            Action::SeekForward => vec![ReplayControl::Seek(SEEK_STEP).into()],
            Action::SpeedUp | Action::SpeedDown => {
                let s = step_speed(speed, a == Action::SpeedUp);
                self.say(StatusKind::Info, format!("playing at x{s}"));
                vec![ReplayControl::Speed(s).into()]
            }
            _ => self.main_action(a),
        }
    }

    /// `R`: start recording to a new file in the current directory, or
    /// stop; where the current directory is no place for it (`/`, not
    /// writable, another user's), ask where, offering a per-user state
    /// directory ([`record::place`]).
    pub(super) fn record_action(&mut self) -> Vec<Control> {
        if self.recording.is_some() {
            self.say(StatusKind::Info, "stopping the recording…");
            return vec![LiveControl::Record(None).into()];
        }
        let name = default_file_name(&self.host.hostname, SystemTime::now());
        let facts = self.record_facts.clone().unwrap_or_else(record_facts);
        match record::place(&facts) {
            Place::Here(dir) => {
                // Absolute, so the status line says where it went.
                let path = dir.join(&name);
                self.say(
                    StatusKind::Info,
                    format!("starting to record to {}…", path.display()),
                );
                vec![LiveControl::Record(Some(path)).into()]
            }
            Place::Ask { offer, why } => {
                self.overlay = Some(Overlay::RecordPath(record::RecordPath {
                    input: offer.join(&name).to_string_lossy().into_owned(),
                    why,
                    mode: state_dir_mode(facts.root),
                }));
                Vec::new()
            }
        }
    }

    /// What the live source says about the recording.
    pub(super) fn on_record(&mut self, ev: RecordEvent) {
        match ev {
            RecordEvent::Started(p) => {
                self.say(
                    StatusKind::Done,
                    format!("recording to {} (R stops)", p.display()),
                );
                if !self.recordings.contains(&p) {
                    self.recordings.push(p.clone());
                }
                self.recording = Some(p);
            }
            RecordEvent::Stopped {
                path,
                samples,
                changes,
            } => {
                self.recording = None;
                self.say(
                    StatusKind::Done,
                    format!(
                        "recorded {samples} samples and {changes} changes to {}",
                        path.display()
                    ),
                );
            }
            RecordEvent::Failed(e) => {
                self.recording = None;
                self.say(StatusKind::Error, e);
            }
        }
    }
}

/// What decides where `R` records, read now: the current directory,
/// whether this user may write there and owns it, root or not, and the
/// state directories of the environment.
fn record_facts() -> Facts {
    use std::os::unix::fs::MetadataExt;
    let cwd = std::env::current_dir().ok();
    let euid = nix::unistd::geteuid();
    let (writable, owned) = cwd.as_ref().map_or((false, false), |c| {
        (
            nix::unistd::access(c, nix::unistd::AccessFlags::W_OK).is_ok(),
            std::fs::metadata(c).is_ok_and(|m| m.uid() == euid.as_raw()),
        )
    });
    Facts {
        cwd,
        writable,
        owned,
        root: euid.is_root(),
        xdg_state_home: std::env::var_os("XDG_STATE_HOME").map(Into::into),
        home: std::env::var_os("HOME").map(Into::into),
    }
}
