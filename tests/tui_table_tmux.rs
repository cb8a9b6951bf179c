//! End to end in tmux at 120x40: the real binary on this machine,
//! `--read-only` (it changes nothing), sorted with `o`, `>` and `<` as a
//! user types them; the arrow moves along the headings on screen.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;
use common::tmux::{Tmux, blktune_bin};
use common::*;

/// The line of column headings.
fn headings(screen: &str) -> &str {
    screen
        .lines()
        .find(|l| l.contains("DEVICE") && l.contains("%util"))
        .unwrap_or("")
}

#[test]
fn o_and_the_angle_keys_move_the_sort_arrow_along_the_headings() {
    let name = "o_and_the_angle_keys_move_the_sort_arrow_along_the_headings";
    if !require_tool(name, "tmux") {
        return;
    }
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        &format!(
            "env BLKTUNE_JOURNAL_DIR='{}' '{}' --read-only --interval 250ms",
            journal.path().display(),
            blktune_bin()
        ),
        120,
        40,
    );
    t.wait("the table sorted by name", |s| {
        headings(s).contains("DEVICE↓") && s.contains("every 250ms")
    });
    t.keys(&["o"]);
    let s = t.wait("the arrow on %util", |s| headings(s).contains("↓%util"));
    assert!(s.contains("sorted by %util (largest first)"), "{s}");
    assert!(!headings(&s).contains("DEVICE↓"), "{s}");
    // Two keys in one read of the terminal: > twice walks right past
    // %util to await (the sparkline), then wraps to the name.
    t.keys(&[">", ">"]);
    t.wait("the arrow back on DEVICE", |s| {
        headings(s).contains("DEVICE↓") && s.contains("sorted by name (A to Z)")
    });
    t.keys(&["<", "<"]);
    t.wait("the arrow on %util again", |s| {
        headings(s).contains("↓%util")
    });
    t.keys(&["<"]);
    let s = t.wait("the arrow on aqu-sz", |s| headings(s).contains("↓aqu-sz"));
    assert_eq!(headings(&s).matches('↓').count(), 1, "{s}");
    // F6 is o: after aqu-sz comes await.
    t.keys(&["F6"]);
    t.wait("the arrow on await", |s| headings(s).contains("await↓"));
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}
