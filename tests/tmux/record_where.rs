//! `R` started from `/` (or any directory that is not the user's) asks
//! where to record, offering the per-user state directory; the path can be
//! edited (a missing directory is made: 0700, root's 0750); Esc records
//! nothing, also when the terminal delivers Esc and Enter in one read; the
//! quit summary names every recording made (issue 35, item 5). On a fake
//! tree: no root needed (as root, the user's case runs as nobody).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::fake_host::{self, MovingCounters};
use common::tmux::Tmux;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const PROMPT: &str = "rec35$";

/// A fake machine with one busy loop device, a home for the user and the
/// moving counters (kept while the test runs).
struct Machine {
    tree: tempfile::TempDir,
    out: tempfile::TempDir,
    _counters: MovingCounters,
}

impl Machine {
    fn new() -> Self {
        let (tree, fake) = fake_host::loop_tree([1]);
        let counters = MovingCounters::start(&fake, |ms| {
            vec![(
                "loop1",
                7,
                1,
                blktune_core::diskstats::Counters {
                    rd_ios: ms,
                    ..Default::default()
                },
            )]
        });
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(out.path().join("home")).unwrap();
        Machine {
            tree,
            out,
            _counters: counters,
        }
    }

    fn home(&self) -> PathBuf {
        self.out.path().join("home")
    }

    /// The command line that starts blktune from `/` with this machine's
    /// home; `as_user`: as a user other than root (root runs it as nobody,
    /// who owns the home then).
    fn command(&self, as_user: bool) -> String {
        let mut prefix = String::new();
        if as_user && nix::unistd::geteuid().is_root() {
            for p in [self.tree.path(), self.out.path()] {
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            let nobody = nix::unistd::Uid::from_raw(65534);
            nix::unistd::chown(&self.home(), Some(nobody), None).unwrap();
            prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups ".into();
        }
        format!(
            "cd / && {prefix}env HOME={home} XDG_STATE_HOME= BLKTUNE_JOURNAL_DIR={home}/journal \
             {bin} --read-only --sysfs-root {sys} --proc-root {proc} --interval 100ms",
            home = self.home().display(),
            bin = common::tmux::blktune_bin(),
            sys = self.tree.path().join("sys").display(),
            proc = self.tree.path().join("proc").display(),
        )
    }
}

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// The files in `dir` (none when it is not there).
fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[test]
fn r_from_slash_asks_where_and_the_summary_names_every_recording() {
    let name = "r_from_slash_asks_where_and_the_summary_names_every_recording";
    if !require_tool(name, "tmux") {
        return;
    }
    let m = Machine::new();
    let t = Tmux::shell(PROMPT, 100, 30);
    t.line(&m.command(false));
    t.wait("the TUI", |s| s.contains("loop1"));
    t.keys(&["R"]);
    // Root's offer is /var/lib/blktune/recordings; as another user, the
    // home's state directory.
    let root = nix::unistd::geteuid().is_root();
    let offer = if root {
        "/var/lib/blktune/recordings/blktune-".to_string()
    } else {
        format!("{}/.local/state/blktune/blktune-", m.home().display())
    };
    let s = t.wait("the question where to record", |s| {
        s.contains("record where?")
            && s.contains("the current directory is /")
            && s.contains(&offer)
    });
    println!("100x30, R from /:\n{s}");
    // Somewhere the test owns, in a directory that is not there yet.
    let first = m.out.path().join("made/first.ndjson.gz");
    t.keys(&["C-u"]);
    t.wait("the path cleared", |s| !s.contains(&offer));
    t.literal(&first.display().to_string());
    t.keys(&["Enter"]);
    t.wait("recording to the typed path", |s| s.contains("● REC"));
    t.keys(&["R"]);
    t.wait("the recording stopped", |s| !s.contains("● REC"));
    assert_eq!(
        mode_of(&m.out.path().join("made")),
        if root { 0o750 } else { 0o700 }
    );
    // A second one, to a file of its own.
    let second = m.out.path().join("made/second.ndjson.gz");
    t.keys(&["R"]);
    t.wait("the question again", |s| s.contains("record where?"));
    t.keys(&["C-u"]);
    t.wait("the path cleared", |s| !s.contains(&offer));
    t.literal(&second.display().to_string());
    t.keys(&["Enter"]);
    t.wait("recording again", |s| s.contains("● REC"));
    t.keys(&["q"]);
    let s = t.wait("the summary", |s| {
        s.trim_end().ends_with(PROMPT) && s.contains("replay with")
    });
    println!("the summary:\n{s}");
    for p in [&first, &second] {
        assert!(
            s.contains(&format!("blktune: recorded to {}", p.display())),
            "{s}"
        );
        assert!(p.exists(), "{}", p.display());
    }
    assert!(
        s.contains(&format!("replay with: blktune replay {}", second.display())),
        "{s}"
    );
}

#[test]
fn esc_records_nothing_even_when_enter_comes_in_the_same_read() {
    let name = "esc_records_nothing_even_when_enter_comes_in_the_same_read";
    if !require_tool(name, "tmux") || !require_tool(name, "setpriv") {
        return;
    }
    let m = Machine::new();
    let t = Tmux::shell(PROMPT, 80, 24);
    t.line(&m.command(true));
    t.wait("the TUI", |s| s.contains("loop1"));
    let state = m.home().join(".local/state/blktune");
    t.keys(&["R"]);
    t.wait("the question where to record", |s| {
        s.contains("record where?") && s.contains(".local/state/blktune/blktune-")
    });
    t.keys(&["Escape"]);
    let s = t.wait("the question gone", |s| {
        !s.contains("record where?") && s.contains("not recording")
    });
    assert!(!s.contains("● REC"), "{s}");
    // Esc and Enter in one packet (a fast typist, an SSH link) read as
    // Alt+Enter: the Esc cancels and the Enter confirms nothing.
    t.keys(&["R"]);
    t.wait("the question again", |s| s.contains("record where?"));
    t.keys(&["Escape", "Enter"]);
    t.wait("the question gone", |s| !s.contains("record where?"));
    t.wait_redraws("the TUI running on", 3);
    let s = t.capture();
    assert!(!s.contains("● REC"), "{s}");
    t.keys(&["q"]);
    let s = t.wait("the shell", |s| s.trim_end().ends_with(PROMPT));
    assert!(!s.contains("recorded to"), "{s}");
    assert!(!state.exists(), "nothing made: {:?}", files_in(&state));
}

#[test]
fn enter_records_in_the_users_state_directory_made_for_them_only() {
    let name = "enter_records_in_the_users_state_directory_made_for_them_only";
    if !require_tool(name, "tmux") || !require_tool(name, "setpriv") {
        return;
    }
    let m = Machine::new();
    let t = Tmux::shell(PROMPT, 80, 24);
    t.line(&m.command(true));
    t.wait("the TUI", |s| s.contains("loop1"));
    t.keys(&["R"]);
    let s = t.wait("the question where to record", |s| {
        s.contains("record where?") && s.contains("a missing directory is made (mode 0700)")
    });
    println!("80x24, R from / as a user:\n{s}");
    t.keys(&["Enter"]);
    t.wait("recording", |s| s.contains("● REC"));
    t.keys(&["q"]);
    let s = t.wait("the summary", |s| {
        s.trim_end().ends_with(PROMPT) && s.contains("replay with")
    });
    println!("the summary:\n{s}");
    let state = m.home().join(".local/state/blktune");
    let files = files_in(&state);
    assert_eq!(files.len(), 1, "{files:?}");
    let rec = &files[0];
    assert!(
        rec.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("blktune-"),
        "{rec:?}"
    );
    // The terminal wraps a long path: read the summary's lines joined.
    let joined = t.capture_joined();
    assert!(
        joined.contains(&format!("blktune: recorded to {}", rec.display())),
        "{joined}"
    );
    for d in [".local", ".local/state", ".local/state/blktune"] {
        assert_eq!(mode_of(&m.home().join(d)), 0o700, "{d}");
    }
    // A recording the user can replay.
    assert!(std::fs::metadata(rec).unwrap().len() > 0);
}
