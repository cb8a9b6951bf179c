//! End to end in tmux (80x24): `p` freezes the screen while the worker
//! samples on, and `p` again shows the samples taken meanwhile (issue 16,
//! item 8). On a loop device this test creates; root only, skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::Tmux;
use common::*;
use std::time::{Duration, Instant};

const PROMPT: &str = "pause16$";

#[test]
fn pause_freezes_the_screen_and_resume_shows_the_samples_taken_meanwhile() {
    let name = "pause_freezes_the_screen_and_resume_shows_the_samples_taken_meanwhile";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let lo = TestLoop::new(32);
    let dev = lo.name().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::shell(PROMPT, 80, 24);
    t.line(&format!(
        "env BLKTUNE_JOURNAL_DIR={} {} --read-only --device {dev} --interval 250ms",
        tmp.path().join("journal").display(),
        common::tmux::blktune_bin()
    ));
    t.wait("the TUI", |s| s.contains(&format!("▶{dev} ")));
    t.keys(&["p"]);
    let frozen = t.wait("the pause", |s| {
        s.contains("PAUSED") && s.contains("sampling goes on")
    });
    // Two seconds pass: eight intervals the worker samples, the screen keeps still.
    let until = Instant::now() + Duration::from_secs(2);
    assert!(!wait_until(Duration::from_secs(3), || {
        Instant::now() > until && t.capture() != frozen
    }));
    t.keys(&["p"]);
    let s = t.wait("the resume", |s| s.contains("samples taken while paused"));
    let n: usize = s
        .split("resumed: ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{s}"));
    assert!(n >= 4, "the worker sampled on while paused: {n}\n{s}");
    t.keys(&["q"]);
    t.wait("the prompt back", |s| s.trim_end().ends_with(PROMPT));
}
