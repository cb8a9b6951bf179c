//! End to end in tmux at 120x40 on our own loop device under a read load:
//! after a switch the before/after panel shows each mean with its spread
//! (`±`) and marks a difference inside the noise (`~`), as a user sees it
//! (issue 16, item 7). Root only (losetup, fio); skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::{Tmux, blktune_bin};
use common::*;

/// The before/after rows (right of the charts' `│`) of figure `name`.
fn row<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    screen.lines().find_map(|l| {
        l.rsplit_once('│')
            .map(|(_, r)| r)
            .filter(|r| r.starts_with(name))
    })
}

#[test]
fn the_before_after_panel_shows_the_spread_and_marks_the_noise() {
    let name = "the_before_after_panel_shows_the_spread_and_marks_the_noise";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let _load = FioLoad::randread(&dev);
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        &format!(
            "env NO_COLOR=1 BLKTUNE_JOURNAL_DIR='{}' '{}' --device {dev} --interval 250ms",
            journal.path().display(),
            blktune_bin()
        ),
        120,
        40,
    );
    t.wait("our device selected", |s| s.contains(&format!("▶{dev} ")));
    // Some intervals before the switch, counted in redraws.
    t.wait_redraws("samples before the switch", 8);
    assert_eq!(lo.active_scheduler(), "none");
    t.keys(&["s"]);
    t.wait("the picker", |s| s.contains("scheduler of"));
    t.keys(&["Down", "Enter"]);
    t.wait("the switch", |s| s.contains("none→mq-deadline"));
    // Enough intervals after it for a percent (under three: `short`).
    let s = t.wait("the panel with a spread and a move inside the noise", |s| {
        row(s, "r_await").is_some_and(|r| r.contains('±') && !r.contains("short"))
            && s.lines()
                .filter_map(|l| l.rsplit_once('│').map(|(_, r)| r))
                .any(|r| r.contains('~'))
    });
    assert!(s.contains("before") && s.contains("after"), "{s}");
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}
