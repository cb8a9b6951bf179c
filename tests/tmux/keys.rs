//! End to end in tmux (80x24) on loop devices this test creates: keys typed
//! fast (several in one read of the terminal, as over SSH or on a loaded
//! machine) and the filter never change a device the user did not choose.
//! Root only; skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::{Tmux, blktune_bin};
use common::*;

/// The screen with its rows joined by single spaces (the status line wraps).
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The device table's row of `dev`, marked (`▶`) or not.
fn row<'a>(screen: &'a str, dev: &str) -> Option<&'a str> {
    screen.lines().find(|l| {
        let mut c = l.chars();
        c.next();
        c.as_str().starts_with(&format!("{dev} ")) && !l.contains("sched ")
    })
}

/// blktune on `lo` (selected with --device) in a fresh pane, once its row is marked.
fn start(lo: &TestLoop, journal: &std::path::Path) -> Tmux {
    let t = Tmux::start(
        &format!(
            "env BLKTUNE_JOURNAL_DIR={} {} --device {} --interval 250ms",
            journal.display(),
            blktune_bin(),
            lo.name()
        ),
        80,
        24,
    );
    t.wait("the TUI with our loop device selected", |s| {
        s.contains("every 250ms") && s.contains(&format!("▶{} ", lo.name()))
    });
    t
}

/// q, then exit 0.
fn quit(tmux: &Tmux) {
    tmux.keys(&["q"]);
    tmux.wait("exit 0", |s| s.contains("EXIT=0"));
}

/// `s Down`, then `Escape Enter` in ONE send-keys (crossterm reads Alt+Enter):
/// the picker closes and nothing is applied; the same for `n 64` in the editor.
#[test]
fn esc_glued_to_enter_cancels_the_picker_and_the_editor() {
    let name = "esc_glued_to_enter_cancels_the_picker_and_the_editor";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let lo = TestLoop::new(32);
    let dev = lo.name().to_string();
    let before = lo.settings();
    let journal = tempfile::tempdir().unwrap();
    let t = start(&lo, journal.path());
    let applied = |s: &str| flat(s).contains(&format!("{dev}: none→"));

    t.keys(&["s"]);
    t.wait("the picker", |s| s.contains(&format!("scheduler of {dev}")));
    t.keys(&["Down"]);
    t.wait("the cursor on mq-deadline", |s| {
        s.contains("▶   mq-deadline")
    });
    t.keys(&["Escape", "Enter"]);
    // Glued (the usual case): Esc only, and a word about the Enter. Had the
    // terminal split them, Enter would reopen the picker on the active one.
    let s = t.wait("the Esc taken, or the switch (the bug)", |s| {
        (flat(s).contains("took the Esc only") && !s.contains("scheduler of"))
            || s.contains("▶ ● none")
            || applied(s)
    });
    assert!(!applied(&s), "Esc+Enter applied the switch:\n{s}");
    let how = if flat(&s).contains("took the Esc only") {
        "in one read (Alt+Enter)"
    } else {
        "in two reads"
    };
    println!("Esc and Enter arrived {how}");
    assert_eq!(lo.settings(), before, "nothing changed; screen:\n{s}");
    if s.contains("scheduler of") {
        t.keys(&["Escape"]);
        t.wait("the picker closed", |s| !s.contains("scheduler of"));
    }

    t.keys(&["n"]);
    t.wait("the editor", |s| {
        s.contains(&format!("nr_requests of {dev}"))
    });
    t.keys(&["BSpace"; 6]);
    t.literal("64");
    t.wait("64 accepted in the editor", |s| s.contains("✓ valid"));
    t.keys(&["Escape", "Enter"]);
    let s = t.wait("the editor closed", |s| {
        !s.contains(&format!("nr_requests of {dev}"))
    });
    assert!(
        !flat(&s).contains("nr_requests 128→64"),
        "Esc+Enter applied 64:\n{s}"
    );
    assert_eq!(lo.settings(), before, "nothing changed; screen:\n{s}");
    quit(&t);
    assert_eq!(lo.settings(), before);
    assert_eq!(std::fs::read_dir(journal.path()).unwrap().count(), 0);
}

/// `blktune --device A`, then `/` and B's name: A stays selected but
/// hidden, no row is marked, `s` refuses; Esc brings the selection back on A.
#[test]
fn the_filter_never_moves_the_selection_onto_another_device() {
    let name = "the_filter_never_moves_the_selection_onto_another_device";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let a = TestLoop::new(32);
    let b = TestLoop::new(32);
    let (da, db) = (a.name().to_string(), b.name().to_string());
    let (before_a, before_b) = (a.settings(), b.settings());
    let journal = tempfile::tempdir().unwrap();
    let t = start(&a, journal.path());

    // `/` and B's name in one packet, as a fast typist sends them.
    let mut keys = vec!["/"];
    let typed: Vec<String> = db.chars().map(String::from).collect();
    keys.extend(typed.iter().map(String::as_str));
    t.keys(&keys);
    let s = t.wait("only B's row (and its namesakes) under the filter", |s| {
        s.contains(&format!("filter: {db}")) && row(s, &db).is_some() && row(s, &da).is_none()
    });
    assert!(
        !s.lines().any(|l| l.starts_with('▶')),
        "no row is marked (B is not selected):\n{s}"
    );
    t.wait("A marked as selected and hidden", |s| {
        s.contains(&format!("{da} (selected) is hidden by the filter"))
    });
    t.keys(&["Enter"]);
    t.wait("the filter kept", |s| {
        s.contains(&format!("filter: {db}  (Esc clears)"))
    });
    t.keys(&["s"]);
    let s = t.wait("s refused", |s| {
        flat(s).contains(&format!("'{da}' is selected but hidden by the filter"))
    });
    assert!(!s.contains("scheduler of"), "{s}");
    t.keys(&["Escape"]);
    t.wait("the selection back on A", |s| {
        s.contains(&format!("▶{da} ")) && !s.contains("filter:")
    });
    t.keys(&["s"]);
    t.wait("the picker of A", |s| {
        s.contains(&format!("scheduler of {da}"))
    });
    t.keys(&["Escape"]);
    t.wait("the picker closed", |s| !s.contains("scheduler of"));
    quit(&t);
    assert_eq!(a.settings(), before_a);
    assert_eq!(b.settings(), before_b);
}

/// The help at 80x24, keys typed in packets: `? End` shows its last line;
/// Downs past the end and one Up move it back at once (the scroll ran on
/// past the end, unseen, and Up then seemed to do nothing).
#[test]
fn help_end_then_downs_and_up_in_one_packet() {
    let name = "help_end_then_downs_and_up_in_one_packet";
    if !require_tool(name, "tmux") {
        return;
    }
    let last = blktune::tui::render::overlay::help_lines(
        blktune::tui::render::Theme { color: false },
        false,
    )
    .last()
    .unwrap()
    .to_string();
    let last: String = last.trim().chars().take(30).collect();
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        &format!(
            "env BLKTUNE_JOURNAL_DIR='{}' '{}' --read-only",
            journal.path().display(),
            blktune_bin()
        ),
        80,
        24,
    );
    t.wait("the table", |s| s.contains("DEVICE"));
    t.keys(&["?", "End"]);
    t.wait("the help's last line", |s| {
        s.contains("help  ↑↓") && s.contains(&last)
    });
    t.keys(&["Down", "Down", "Down", "Up"]);
    t.wait("the help one line up from its end", |s| {
        s.contains("help  ↑↓") && !s.contains(&last)
    });
    t.keys(&["Home"]);
    t.wait("the help's first lines", |s| s.contains("│Keys"));
    t.keys(&["Escape"]);
    t.wait("the help closed", |s| !s.contains("help  ↑↓"));
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}
