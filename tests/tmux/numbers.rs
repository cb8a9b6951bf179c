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
use crate::common;
use blktune_core::diskstats::{self, Counters};
use blktune_core::fake::{FakeDisk, FakeTree};
use common::fake_host::MovingCounters;
use common::screen::{assert_numbers_whole, column, row};
use common::tmux::{Tmux, blktune_bin};
use common::*;
use std::path::{Path, PathBuf};

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
    let (dir, tree) = fake_host::loop_tree([1, 10]);
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

/// A recording of `name` (nr_requests 256) busy for a minute, with the
/// changes of `tui_numbers`' session: a switch, then two with long values
/// (`→1000000`), twelve seconds apart.
fn long_values_recording(dir: &Path, name: &'static str) -> PathBuf {
    use blktune_core::device::{self, QueueSettings};
    use blktune_core::history::ChangeMark;
    use blktune_core::record::{RecordOptions, Recorder};
    use blktune_core::sampler::{RateTracker, Snapshot};
    use blktune_core::tuner::Wanted;
    use std::sync::Arc;
    let tree = FakeTree::new(&dir.join("tree")).unwrap();
    let mut d = FakeDisk::new(name).dev(8, 0).active("mq-deadline");
    d.nr_requests = 256;
    tree.add(&d).unwrap();
    let root = tree.root();
    let devices = Arc::new(device::discover(&root).unwrap());
    let settings = Wanted::snapshot_of(&QueueSettings::read(&root, &root.device(name).unwrap()));
    let file = dir.join("long-values.ndjson");
    let opts = RecordOptions {
        force: false,
        only: Vec::new(),
        interval: std::time::Duration::from_secs(1),
        checked_within: std::time::Duration::from_millis(250),
    };
    let mut rec = Recorder::create(&file, &root, &devices, 0.0, &opts).unwrap();
    let mut rates = RateTracker::default();
    let mut ticks = 0u64;
    let changes = [
        (20, "mq-deadline→kyber"),
        (32, "read_ahead_kb 128→1000000"),
        (44, "nr_requests 128→1000000"),
    ];
    for i in 0..60u64 {
        let t = i as f64;
        // Reads at an await that steps up at each change: the before/after
        // and the earlier changes show percentages.
        let step = changes.iter().filter(|(at, _)| *at < i).count() as u64;
        let reads = 500 * i;
        ticks += if i == 0 { 0 } else { 500 * (2 + step) };
        let c = Counters {
            rd_ios: reads,
            rd_sectors: reads * 8,
            rd_ticks: ticks as u32,
            io_ticks: (i * 700) as u32,
            time_in_queue: ticks as u32,
            ..Counters::default()
        };
        tree.set_diskstats(&[(name, 8, 0, c)]).unwrap();
        let (lines, _) = diskstats::parse(&root.read_diskstats().unwrap());
        let snap = Snapshot {
            wall: std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000 + i),
            t,
            interval: rates.last_interval(t),
            devices: Arc::clone(&devices),
            refreshed: i == 0,
            stats: rates.update(t, &lines),
            iowait_pct: None,
            cpu_busy_pct: None,
            pressure: None,
            warnings: Vec::new(),
        };
        rec.snapshot(&snap).unwrap();
        if let Some((_, label)) = changes.iter().find(|(at, _)| *at == i) {
            rec.change(&ChangeMark {
                device: name.into(),
                t: t + 0.5,
                label: (*label).into(),
                before: settings.clone(),
                after: settings.clone(),
            })
            .unwrap();
        }
    }
    rec.finish("stopped").unwrap();
    file
}

/// Replayed to its end at 60x20, 80x24 and 120x40, the detail pane of a
/// device with nr_requests 256 and changes to 1000000: every run of digits
/// on the screen is whole (never followed by a cut), the title reads
/// `nr 256` or `nr …` (never `nr 2`, `nr 25`), and a value after an arrow
/// is 1000000 or gone, never `→10000`.
#[test]
fn no_number_is_cut_at_60x20_80x24_and_120x40() {
    let name = "no_number_is_cut_at_60x20_80x24_and_120x40";
    if !require_tool(name, "tmux") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // sdaa (the 27th SCSI disk): at 60 columns the title's room ends
    // inside `nr 256`, where a plain cut would read `nr 25`.
    let file = long_values_recording(dir.path(), "sdaa");
    for (w, h) in [(60, 20), (80, 24), (120, 40)] {
        let t = Tmux::start(
            &format!("'{}' replay '{}' --speed 64", blktune_bin(), file.display()),
            w,
            h,
        );
        let s = t.wait(&format!("{w}x{h}: the end of the replay"), |s| {
            s.contains("end of recording") && s.contains("─ sdaa ")
        });
        let title = s.lines().find(|l| l.starts_with("─ sdaa ")).unwrap();
        let nr: String = title
            .split(" nr ")
            .nth(1)
            .unwrap_or_else(|| panic!("{w}x{h}: no nr in the title: {title}"))
            .chars()
            .take_while(|c| !matches!(c, ' ' | '─'))
            .collect();
        assert!(nr == "256" || nr == "…", "{w}x{h}: {title}");
        if w >= 80 {
            assert_eq!(nr, "256", "{w}x{h}: room for it: {title}");
        }
        if w >= 120 {
            // The earlier changes list has room for the long value.
            assert!(s.contains("read_ahead_kb 128→1000000\n"), "{s}");
        }
        assert_numbers_whole(&s, "1000000", &format!("{w}x{h}"));
        t.keys(&["q"]);
        t.wait("exit 0", |s| s.contains("EXIT=0"));
    }
}
