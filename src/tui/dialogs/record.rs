//! `R` where the current directory is no place for a recording (`/`, one
//! this user cannot write, or another user's): the path to record to,
//! prefilled with a per-user state directory, edited as text; Enter starts
//! the recording, Esc leaves it. Where the current directory is the user's
//! own, `R` records there at once, as before.

use super::{Overlay, Reply};
use crate::tui::command::Action;
use crate::tui::status::StatusKind;
use crate::tui::worker::protocol::LiveControl;
use std::path::{Path, PathBuf};

/// Where `R` records, as [`place`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// In this directory, without asking.
    Here(PathBuf),
    /// Ask, offering this directory, and say why the current one is not used.
    Ask { offer: PathBuf, why: String },
}

/// The facts [`place`] decides from (read by the caller).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The current directory, if it can be known.
    pub cwd: Option<PathBuf>,
    /// May this process write there?
    pub writable: bool,
    /// Is it this user's (owned by the effective uid)?
    pub owned: bool,
    /// Running as root: recordings go to [`ROOT_DIR`].
    pub root: bool,
    /// `$XDG_STATE_HOME` and `$HOME`.
    pub xdg_state_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
}

/// Where root's recordings go when the current directory will not do.
pub const ROOT_DIR: &str = "/var/lib/blktune/recordings";

/// The per-user state directory: root's [`ROOT_DIR`]; else
/// `$XDG_STATE_HOME/blktune` (an absolute one, as the XDG base directory
/// specification says), else `~/.local/state/blktune`; `None` without a home.
pub fn state_dir(f: &Facts) -> Option<PathBuf> {
    if f.root {
        return Some(PathBuf::from(ROOT_DIR));
    }
    if let Some(x) = f.xdg_state_home.as_ref().filter(|p| p.is_absolute()) {
        return Some(x.join("blktune"));
    }
    f.home
        .as_ref()
        .filter(|h| h.is_absolute())
        .map(|h| h.join(".local/state/blktune"))
}

/// Record in the current directory when it is the user's own and writable
/// and not `/`; else ask, offering the state directory ([`state_dir`]).
pub fn place(f: &Facts) -> Place {
    let why = match &f.cwd {
        None => Some("the current directory is unknown".to_string()),
        Some(c) if c == Path::new("/") => Some("the current directory is /".to_string()),
        Some(c) if !f.writable => Some(format!("{} is not writable", c.display())),
        Some(c) if !f.owned => Some(format!("{} is another user's", c.display())),
        Some(_) => None,
    };
    match (why, &f.cwd) {
        (None, Some(c)) => Place::Here(c.clone()),
        (why, cwd) => Place::Ask {
            offer: state_dir(f)
                .or_else(|| cwd.clone())
                .unwrap_or_else(|| PathBuf::from("/tmp")),
            why: why.unwrap_or_default(),
        },
    }
}

/// Longest path accepted (PATH_MAX).
const MAX_PATH: usize = 4096;

/// The open question: where to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordPath {
    /// The path as typed (prefilled with the offer and the file's name).
    pub input: String,
    /// Why the current directory is not used.
    pub why: String,
    /// The mode a missing directory is made with
    /// ([`crate::tui::worker::recorder::state_dir_mode`]).
    pub mode: u32,
}

impl RecordPath {
    /// Take an action; `None` closes (Enter with a path, or Esc).
    pub fn on_action(mut self, a: Action, reply: &mut Reply) -> Option<Overlay> {
        match a {
            Action::Cancel => {
                reply.say(StatusKind::Info, "not recording (R asks again)");
                return None;
            }
            Action::Input(c) if self.input.len() < MAX_PATH => self.input.push(c),
            Action::Backspace => {
                self.input.pop();
            }
            Action::ClearInput => self.input.clear(),
            Action::Confirm => {
                let path = PathBuf::from(self.input.trim());
                if !path.is_absolute() || path.file_name().is_none() {
                    reply.say(
                        StatusKind::Error,
                        "type an absolute path to a file (Esc: no recording)",
                    );
                    return Some(Overlay::RecordPath(self));
                }
                reply.say(
                    StatusKind::Info,
                    format!("starting to record to {}…", path.display()),
                );
                reply.send(LiveControl::Record(Some(path)));
                return None;
            }
            _ => {}
        }
        Some(Overlay::RecordPath(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(cwd: &str, writable: bool, owned: bool) -> Facts {
        Facts {
            cwd: Some(cwd.into()),
            writable,
            owned,
            root: false,
            xdg_state_home: None,
            home: Some("/home/ana".into()),
        }
    }

    #[test]
    fn the_users_own_directory_is_used_at_once() {
        assert_eq!(
            place(&facts("/home/ana/incident", true, true)),
            Place::Here("/home/ana/incident".into())
        );
    }

    #[test]
    fn slash_a_read_only_or_anothers_directory_asks_with_the_state_directory() {
        for (cwd, w, o, why) in [
            ("/", true, true, "the current directory is /"),
            ("/usr/lib", false, false, "/usr/lib is not writable"),
            ("/home/bob", true, false, "/home/bob is another user's"),
        ] {
            assert_eq!(
                place(&facts(cwd, w, o)),
                Place::Ask {
                    offer: "/home/ana/.local/state/blktune".into(),
                    why: why.into()
                },
                "{cwd}"
            );
        }
    }

    #[test]
    fn xdg_state_home_then_home_then_root_decide_the_offer() {
        let mut f = facts("/", true, true);
        f.xdg_state_home = Some("/srv/state".into());
        assert_eq!(state_dir(&f), Some("/srv/state/blktune".into()));
        // A relative one is ignored, as the specification says.
        f.xdg_state_home = Some("state".into());
        assert_eq!(state_dir(&f), Some("/home/ana/.local/state/blktune".into()));
        f.root = true;
        assert_eq!(state_dir(&f), Some(ROOT_DIR.into()));
        f.root = false;
        f.home = None;
        assert_eq!(state_dir(&f), None);
        assert!(matches!(place(&f), Place::Ask { offer, .. } if offer == Path::new("/")));
    }

    #[test]
    fn enter_records_to_an_absolute_path_and_refuses_a_relative_one() {
        let d = RecordPath {
            input: "rec.ndjson.gz".into(),
            why: String::new(),
            mode: 0o700,
        };
        let mut reply = Reply::default();
        assert!(d.on_action(Action::Confirm, &mut reply).is_some());
        assert!(reply.controls.is_empty());
        let d = RecordPath {
            input: "/var/lib/blktune/recordings/x.ndjson.gz".into(),
            why: String::new(),
            mode: 0o700,
        };
        let mut reply = Reply::default();
        assert!(d.on_action(Action::Confirm, &mut reply).is_none());
        assert_eq!(
            reply.controls,
            [LiveControl::Record(Some("/var/lib/blktune/recordings/x.ndjson.gz".into())).into()]
        );
    }
}
