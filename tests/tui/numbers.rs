//! Numbers are never cut into other numbers (issue 16, item 6): at 60x20,
//! 80x24, 120x40 and 200x50 every figure of the detail pane (title, charts,
//! before/after, earlier changes, tunables) is shown whole or replaced by
//! `…`. The check: every run of digits on the screen is a whole number the
//! app could show, i.e. it is never directly followed by a cut.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use crate::common::tui_fixture;
use blktune::tui::worker::protocol::Feed;
use blktune_core::fake::FakeDisk;
use common::screen::assert_numbers_whole;
use tui_fixture::*;

/// sda with nr_requests 256 and three changes, the newest two with long
/// values (`→1000000`).
fn session() -> (Machine, blktune::tui::app::App) {
    session_of("sda")
}

fn session_of(name: &str) -> (Machine, blktune::tui::app::App) {
    let mut d = FakeDisk::new(name).dev(8, 0).active("mq-deadline");
    d.nr_requests = 256;
    let mut m = Machine::new(&[d]);
    let mut app = m.app(None);
    let load = busy(4)
        .into_iter()
        .map(|(_, l)| (name, l))
        .take(1)
        .collect::<Vec<_>>();
    m.run(&mut app, 20, &load);
    for label in [
        "mq-deadline→kyber",
        "read_ahead_kb 128→1000000",
        "nr_requests 128→1000000",
    ] {
        app.on_feed(Feed::Change(m.mark(
            "sda",
            label,
            "mq-deadline",
            "mq-deadline",
        )));
        m.run(&mut app, 12, &busy(7));
    }
    (m, app)
}

#[test]
fn every_number_is_whole_or_an_ellipsis_at_every_size() {
    let (_m, app) = session();
    for (w, h) in [(60, 20), (80, 24), (120, 40), (200, 50)] {
        let screen = text(&screen(&app, w, h));
        assert_numbers_whole(&screen, "1000000", &format!("{w}x{h}"));
        for line in screen.lines() {
            // The title's nr_requests: whole or gone.
            if let Some((_, rest)) = line
                .strip_prefix("─ sda")
                .and_then(|l| l.split_once(" nr "))
            {
                let v = rest.split_whitespace().next().unwrap_or("");
                assert!(v == "256" || v.starts_with('…'), "{w}x{h}: {line}");
            }
        }
    }
}

/// Around 60 columns the title ends in the middle of `nr 256`: at every
/// width it reads `nr 256` or `nr …`, never `nr 2` or `nr 25`.
#[test]
fn the_title_never_reads_nr_2_at_any_width() {
    // A longer name than sda: the title reaches nr_requests near 60 columns.
    let (_m, app) = session_of("nvme0n1");
    for w in 50..70 {
        let screen = text(&screen(&app, w, 20));
        // Narrow screens may show no detail pane.
        let Some(title) = screen.lines().find(|l| l.contains("─ nvme0n1")) else {
            continue;
        };
        if let Some((_, rest)) = title.split_once(" nr ") {
            let v: String = rest
                .chars()
                .take_while(|c| *c != ' ' && *c != '─')
                .collect();
            assert!(v == "256" || v == "…", "{w} columns: {title}");
        }
    }
}

/// The chart's value under its name is the newest interval's, as in the
/// table (issue 16, item 5/7): not the mean of a column of several intervals.
#[test]
fn the_chart_shows_the_last_intervals_value_as_the_table_does() {
    let mut m = Machine::new(&[FakeDisk::new("sda").dev(8, 0)]);
    let mut app = m.app(None);
    m.run(&mut app, 30, &busy(4));
    m.run(&mut app, 1, &busy(9));
    let screen = text(&screen(&app, 80, 24));
    let chart_row = screen
        .lines()
        .find(|l| l.starts_with("\"9.00ms") || l.starts_with("9.00ms"))
        .unwrap_or_else(|| panic!("no 9.00ms under r_await:\n{screen}"));
    assert!(!chart_row.is_empty());
}

/// Overlays too: the revert question lists each change; a line wider than
/// the box ends in `…`, not in a cut number.
#[test]
fn overlay_lines_keep_their_numbers_whole() {
    let (m, mut app) = session();
    let mark = m.mark(
        "sda",
        // At 60 columns the box's edge falls inside the last 1000000.
        "x 1→1000000, read_ahead_kb 128→1000000, ra 1→1000000",
        "mq-deadline",
        "mq-deadline",
    );
    app.undo.insert("sda".into(), vec![mark]);
    press(&mut app, &chars("U"));
    assert!(app.overlay.is_some(), "no revert question");
    for (w, h) in [(60, 20), (80, 24), (120, 40)] {
        let screen = text(&screen(&app, w, h));
        assert!(screen.contains("revert every change?"), "{screen}");
        assert_numbers_whole(&screen, "1000000", &format!("{w}x{h}"));
    }
}

/// A diff as wide as its column (`~+8284%` in the demo's kyber→bfq) keeps
/// a space before it: never `37.5~+8284%`, read as one number.
#[test]
fn a_wide_diff_never_touches_the_value_before_it() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 30, &busy(1));
    let mark = m.switch("sda", "mq-deadline→bfq", "mq-deadline", "bfq");
    app.on_feed(Feed::Change(mark));
    m.run(&mut app, 30, &busy(101));
    for (w, h) in [(60, 20), (80, 24), (120, 40), (200, 50)] {
        let s = text(&screen(&app, w, h));
        let row = s
            .lines()
            .find(|l| l.contains("│r_await "))
            .unwrap_or_else(|| panic!("{w}x{h}: no before/after:\n{s}"));
        // The engine's number format: beyond +9999% it says so.
        assert!(row.contains(" >+9999%"), "{w}x{h}: {row}");
        assert!(!row.contains("+10000%"), "{w}x{h}: {row}");
        for line in s.lines() {
            let c: Vec<char> = line.chars().collect();
            assert!(
                !c.windows(2)
                    .any(|p| p[0].is_ascii_digit() && matches!(p[1], '+' | '~')),
                "{w}x{h}: a figure touches the next: {line}"
            );
        }
    }
}

/// The p99 chart's value under its name is the newest interval's, as in
/// the table's r_p99 column, not the p99 of a column of pooled intervals
/// (seen live: table 4.87, chart 4.00).
#[test]
fn the_p99_chart_shows_the_last_intervals_p99_as_the_table_does() {
    let lat = |tail_ms: f64| {
        vec![(
            "sda",
            Lat {
                reads: 800,
                r_ms: 4.0,
                r_tail: 0.03,
                r_tail_ms: tail_ms,
                r_dev_ms: 0.9,
                writes: 40,
                w_ms: 10.0,
            },
        )]
    };
    let mut m = Machine::new(&[FakeDisk::new("sda").dev(8, 0)]);
    let mut app = m.app(None);
    m.run_traced(&mut app, 120, &busy(4), &lat(12.0));
    m.run_traced(&mut app, 1, &busy(4), &lat(30.0));
    let s = text(&screen(&app, 80, 24));
    let lines: Vec<&str> = s.lines().map(|l| l.trim_matches('"')).collect();
    let head: Vec<&str> = lines[1].split_whitespace().collect();
    let col = head.iter().position(|h| *h == "r_p99").unwrap();
    let row: Vec<&str> = lines[2]
        .trim_start_matches('▶')
        .split_whitespace()
        .collect();
    let table = row[col];
    let at = lines.iter().position(|l| l.starts_with("r_p99 ")).unwrap();
    let chart = lines[at + 1].split_whitespace().next().unwrap();
    assert_eq!(chart, format!("{table}ms"), "{s}");
    assert!(table.starts_with("30"), "{s}");
}
