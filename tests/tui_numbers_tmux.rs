//! Numbers that cannot mislead, end to end in tmux (issue 16, items 5 and
//! 6): the real binary on a fake tree whose counters a thread moves, and
//! `blktune replay` of a crafted recording. No root.
//!
//! - Item 5: the table's sparklines share one scale (an idle row's bars
//!   stay low beside a slow row's), and the chart's value under its name
//!   is the newest interval's, the table's, not the mean of a column.
//! - Item 6: at 60x20, 80x24 and 120x40 no number is cut into another one
//!   (`nr 2` for 256, `→10000` for →1000000).
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;
use blktune_core::diskstats::Counters;
use blktune_core::fake::{FakeDisk, FakeTree};
use common::fake_host::MovingCounters;
use common::screen::{column, row};
use common::tmux::Tmux;
use common::*;

/// The sparkline at the end of a table row: its bars, lowest `▁` to `█`.
fn sparkline(row: &str) -> Vec<char> {
    row.chars().filter(|c| ('▁'..='█').contains(c)).collect()
}

/// The value under the chart named `name` in the detail pane (`48.3ms`).
fn chart_value<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    let mut lines = screen.lines();
    lines.find(|l| l.starts_with(&format!("{name} ")))?;
    lines.next()?.split_whitespace().next()
}

/// Seconds one chart column stands for, from the axis legend `1 col = 0.2s`.
fn column_secs(screen: &str) -> Option<f64> {
    let at = screen.split("1 col = ").nth(1)?;
    at.split('s').next()?.parse().ok()
}

/// loop1 does 10 000 reads a second at 0.01 ms each (1 %util); loop10,
/// busy (100 %util), 1000 a second at an await that grows by 5 ms every
/// second (its read ticks are the integral), so every interval differs
/// from the one before and a column's mean from its newest interval.
fn idle_and_slow(ms: u64) -> Vec<common::fake_host::StatLine> {
    let quick = Counters {
        rd_ios: ms * 10,
        rd_ticks: (ms / 10) as u32,
        io_ticks: (ms / 100) as u32,
        time_in_queue: (ms / 10) as u32,
        ..Counters::default()
    };
    let slow = Counters {
        rd_ios: ms,
        rd_ticks: (ms * ms / 400) as u32,
        io_ticks: ms as u32,
        time_in_queue: (ms * ms / 400) as u32,
        ..Counters::default()
    };
    vec![("loop1", 7, 1, quick), ("loop10", 7, 10, slow)]
}

#[test]
fn an_idle_rows_sparkline_stays_low_and_the_chart_shows_the_tables_value() {
    let name = "an_idle_rows_sparkline_stays_low_and_the_chart_shows_the_tables_value";
    if !require_tool(name, "tmux") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(dir.path()).unwrap();
    for (n, minor) in [("loop1", 1), ("loop10", 10)] {
        tree.add(&FakeDisk::new(n).dev(7, minor)).unwrap();
    }
    let _counters = MovingCounters::start(&tree, idle_and_slow);
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::on_fake_tree(dir.path(), journal.path(), "--interval 100ms", 80, 24);
    // Wait until a chart column spans two intervals or more (the axis
    // says so), so that a column's mean is not its newest interval.
    let ready = |s: &str| {
        s.contains("─ ! busy  loop10 ")
            && column_secs(s).is_some_and(|c| c >= 0.2)
            && chart_value(s, "r_await").is_some()
    };
    let mut s = t.wait("loop10's charts, a column of two intervals", ready);
    // Several frames: on one a column's mean could print as its last value.
    for i in 0..5 {
        let r_await = column(&s, "r_await", 7);
        let table = r_await
            .iter()
            .find(|(d, _)| d == "loop10")
            .map(|(_, c)| c.as_str())
            .unwrap_or_else(|| panic!("no r_await of loop10:\n{s}"));
        assert_eq!(
            chart_value(&s, "r_await"),
            Some(format!("{table}ms").as_str()),
            "frame {i}: the chart's r_await is not the table's:\n{s}"
        );
        // One scale: loop1's 0.01 ms is a low bar beside loop10's tens of
        // ms (but not the idle bar), where a scale of its own would draw
        // it full height.
        let idle = sparkline(row(&s, "loop1").unwrap_or(""));
        let slow = sparkline(row(&s, "loop10").unwrap_or(""));
        assert!(
            idle.contains(&'▂') && idle.iter().all(|&c| c <= '▂'),
            "frame {i}: loop1's sparkline {idle:?}:\n{s}"
        );
        assert!(
            slow.contains(&'█'),
            "frame {i}: loop10's sparkline {slow:?}:\n{s}"
        );
        let last = s.clone();
        s = t.wait("the next frame", |s| s != last && ready(s));
    }
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}
