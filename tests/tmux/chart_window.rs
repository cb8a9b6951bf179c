//! End to end in tmux (80x24), no root: in the first seconds of
//! `blktune replay --demo` the detail pane's charts are filled across their
//! width (issue 16, item 13), not a thin strip at their right edge, and the
//! axis names the short window.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::{Tmux, blktune_bin};
use common::*;

/// The replay clock (`replay 00:07/01:30`) in seconds.
fn clock(screen: &str) -> Option<u32> {
    let at = screen.split("replay ").nth(1)?.get(..5)?;
    let (m, s) = at.split_once(':')?;
    Some(m.parse::<u32>().ok()? * 60 + s.parse::<u32>().ok()?)
}

/// Of the r_await chart's columns, the fraction that holds a bar, as a
/// reader sees it: the chart runs from the axis' first `─` to the pane's `│`.
fn filled(screen: &str) -> Option<f64> {
    let rows: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let axis = rows.iter().find(|r| {
        r.first() == Some(&'-') && r.contains(&'─') && r.iter().collect::<String>().contains("now")
    })?;
    let from = axis.iter().position(|&c| c == '─')?;
    let to = axis.iter().position(|&c| c == '│')?;
    let top = rows.iter().position(|r| r.starts_with(&['r', '_', 'a']))?;
    let end = rows.iter().position(|r| r.starts_with(&['w', '_', 'a']))?;
    let bars = (from..to)
        .filter(|&x| {
            rows[top..end]
                .iter()
                .any(|r| r.get(x).is_some_and(|c| "▁▂▃▄▅▆▇█".contains(*c)))
        })
        .count();
    Some(bars as f64 / (to - from) as f64)
}

#[test]
fn the_demo_replay_fills_its_charts_in_the_first_seconds() {
    let name = "the_demo_replay_fills_its_charts_in_the_first_seconds";
    if !require_tool(name, "tmux") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        &format!(
            "cd {} && env BLKTUNE_JOURNAL_DIR={} {} replay --demo",
            tmp.path().display(),
            tmp.path().join("journal").display(),
            blktune_bin()
        ),
        80,
        24,
    );
    // Three to ten seconds in: every window step is at most 1.5 times the
    // one before, so the bars cover two thirds of the width or more.
    let s = t.wait("the demo 3 s in, with its charts", |s| {
        clock(s).is_some_and(|c| c >= 3) && filled(s).is_some()
    });
    let at = clock(&s).unwrap();
    assert!(
        at <= 10,
        "the replay ran too far before a look: {at} s\n{s}"
    );
    let f = filled(&s).unwrap();
    assert!(
        f >= 0.6,
        "bars cover {:.0}% of the r_await chart at {at} s:\n{s}",
        f * 100.0
    );
    // The axis says how long the window is: seconds, not the two minutes.
    let axis = s
        .lines()
        .find(|l| l.starts_with('-') && l.contains("now"))
        .unwrap();
    assert!(!axis.starts_with("-2m"), "{axis}");
    t.keys(&["q"]);
    t.wait("the exit", |s| s.contains("EXIT=0"));
}
