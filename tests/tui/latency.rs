//! The kernel's latency in the TUI, on a scripted machine with synthetic
//! histograms: the p99 column, the p50/p99 chart, the before/after rows,
//! and the header's reason without tracing.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::App;
use blktune::tui::worker::latency::LatencyFeed;
use blktune::tui::worker::protocol::Feed;
use blktune_core::fake::FakeDisk;
use blktune_core::history::MIN_INTERVALS;
use blktune_core::latency::{Dir, Span};
use tui_fixture::*;

/// sda's reads under mq-deadline: p50 4 ms, 3% held to 12 ms by the
/// scheduler, 0.9 ms on the device; sdb a few reads only.
fn slow() -> Vec<(&'static str, Lat)> {
    vec![
        (
            "sda",
            Lat {
                reads: 800,
                r_ms: 4.0,
                r_tail: 0.03,
                r_tail_ms: 12.0,
                r_dev_ms: 0.9,
                writes: 40,
                w_ms: 10.0,
            },
        ),
        (
            "sdb",
            Lat {
                reads: 20,
                r_ms: 12.0,
                r_tail: 0.0,
                r_tail_ms: 0.0,
                r_dev_ms: 10.0,
                writes: 150,
                w_ms: 30.0,
            },
        ),
    ]
}

/// After the switch to kyber: the scheduler no longer holds reads.
fn fast() -> Vec<(&'static str, Lat)> {
    let mut v = slow();
    v[0].1.r_ms = 1.0;
    v[0].1.r_tail = 0.0;
    v
}

/// 60 s under mq-deadline, a switch to kyber, 20 s after it.
fn switched() -> (Machine, App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run_traced(&mut app, 60, &busy(4), &slow());
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    m.run_traced(&mut app, 20, &busy(1), &fast());
    (m, app)
}

#[test]
fn p99_column_chart_and_before_after_at_80x24() {
    let (_m, app) = switched();
    let term = screen(&app, 80, 24);
    let s = text(&term);
    // The table's read p99 (1 ms now) and sdb's count of 20 reads.
    assert!(s.contains("r_p99"), "{s}");
    assert!(s.contains("n=20"), "{s}");
    // zram0 has no request queue: never traced, never a count.
    let zram = s.lines().find(|l| l.contains("zram0")).unwrap();
    assert!(zram.contains(" - "), "{zram}");
    // The chart of p50/p99 has its own row label.
    assert!(s.contains("r_p99    "), "{s}");
    // Before/after: the rates first, then p99 12 ms -> 1.2 ms with its
    // change, and the writes' p99 to the last (at 80x24 they fell off the
    // bottom once); the counts are for the wider panels.
    let panel: Vec<&str> = s
        .lines()
        .filter_map(|l| l.rsplit_once('│'))
        .map(|(_, r)| r)
        .collect();
    let row = |name: &str| {
        panel
            .iter()
            .find(|r| r.split_whitespace().next() == Some(name))
            .copied()
            .unwrap_or_else(|| panic!("no {name}: {s}"))
    };
    assert!(row("r/s").contains("800"), "{s}");
    assert!(row("r_p99").contains("12.0  1.20 -90%"), "{s}");
    assert!(row("w_p99").contains("+0.0%"), "{s}");
    assert!(!s.contains("I/Os"), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn p99_column_chart_and_before_after_at_160x48() {
    let (_m, app) = switched();
    let term = screen(&app, 160, 48);
    let s = text(&term);
    assert!(s.contains("w_p99"), "{s}");
    assert!(s.contains("r_dev99"), "{s}");
    assert!(s.contains("w_p50"), "{s}");
    // The wide panel has the I/Os each direction's figures rest on, and
    // where the reads' p99 spent the time it lost.
    assert!(s.contains("  I/Os  48000 16000"), "{s}");
    assert!(s.contains("reads' p99: time in the scheduler"), "{s}");
    insta::assert_snapshot!(term.backend());
}

/// Issue 14's target "from a switch to a visible p99 change: the next
/// tick": one interval after the switch, the table's p99, the chart's
/// newest value and the before/after's `after` show the new scheduler's
/// p99; the percent waits for the intervals a change's noise is judged on.
#[test]
fn a_switch_shows_in_the_p99_at_the_next_tick() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run_traced(&mut app, 60, &busy(4), &slow());
    let sda_p99 = |app: &App| {
        let s = text(&screen(app, 80, 24));
        let row = s.lines().find(|l| l.contains("sda ")).unwrap().to_string();
        // DEVICE SCHED r/s w/s r_await w_await r_p99 ...
        row.split_whitespace().nth(6).unwrap().to_string()
    };
    assert_eq!(sda_p99(&app), "12.0", "under mq-deadline");
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    m.run_traced(&mut app, 1, &busy(1), &fast());
    let now: f64 = sda_p99(&app).parse().unwrap();
    assert!(now < 2.0, "kyber's p99 at the next tick: {now}");
    let s = text(&screen(&app, 80, 24));
    // The chart's label is the newest interval's p99.
    assert!(s.contains(&format!("{now:.2}ms")), "{s}");
    // The before/after's `after` rests on that one interval already; one
    // interval is too short a window for a change.
    let r_p99_row = |app: &App| {
        text(&screen(app, 80, 24))
            .lines()
            .find_map(|l| l.split('│').find(|c| c.starts_with("r_p99 ")))
            .unwrap()
            // The panel ends the line, and the backend quotes each line.
            .trim_end_matches(['"', ' '])
            .to_string()
    };
    assert_eq!(r_p99_row(&app), format!("r_p99    12.0 {now:>5.2} short"));
    let (_, a) = app.latency_compare("sda", 0).unwrap();
    assert_eq!(a.unwrap().intervals, 1);
    m.run_traced(&mut app, MIN_INTERVALS - 1, &busy(1), &fast());
    assert!(r_p99_row(&app).contains("-90%"), "{}", r_p99_row(&app));
}

#[test]
fn the_before_after_rows_pool_histograms_and_give_no_percent_from_few_ios() {
    let (_m, app) = switched();
    let (b, a) = app.latency_compare("sda", 0).unwrap();
    let (b, a) = (b.unwrap(), a.unwrap());
    assert_eq!((b.intervals, a.intervals), (60, 20));
    let s = text(&screen(&app, 160, 48));
    // 3% of the reads were 12 ms before the switch: the pooled p99 is one.
    let p99 = s
        .lines()
        .find_map(|l| l.split('│').find(|c| c.starts_with("r_p99 ")))
        .unwrap();
    assert!(p99.contains("12.") && p99.contains("-9"), "{p99}");
    // sdb: 20 reads a second, a p99 from 1200 reads pooled over a minute
    // is fine, but a single interval of 20 is shown as its count.
    let sdb = s.lines().find(|l| l.contains(" sdb ")).unwrap();
    assert!(sdb.contains("n=20"), "{sdb}");
}

#[test]
fn a_window_under_100_ios_shows_its_count_and_no_percent() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    let few = |ms: f64| {
        let mut v = slow();
        v[0].1.reads = 10;
        v[0].1.r_ms = ms;
        v
    };
    m.run_traced(&mut app, 5, &busy(4), &few(4.0));
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    m.run_traced(&mut app, 5, &busy(1), &few(1.0));
    let s = text(&screen(&app, 160, 48));
    let row = |name: &str| {
        s.lines()
            .find_map(|l| l.split('│').find(|c| c.starts_with(name)))
            .unwrap_or_else(|| panic!("no {name} in {s}"))
            .trim_end_matches([' ', '"'])
            .to_string()
    };
    // The count in the wide panel; no p99 from 50 I/Os; a p50, with no change.
    assert_eq!(row("  I/Os "), "  I/Os     50    50");
    assert!(
        s.lines()
            .all(|l| !l.split('│').any(|c| c.starts_with("r_p99 "))),
        "{s}"
    );
    assert!(row("r_p50 ").ends_with("few"), "{}", row("r_p50 "));
}

#[test]
fn without_tracing_the_header_says_why_and_the_column_is_a_dash() {
    let mut m = Machine::three();
    let mut app = m.app(Some("not root"));
    app.on_feed(Feed::Latency(LatencyFeed::Unavailable("not root".into())));
    m.run(&mut app, 10, &busy(4));
    let term = screen(&app, 80, 24);
    let s = text(&term);
    assert!(s.contains("no p99: not root"), "{s}");
    let sda = s.lines().find(|l| l.contains("sda ")).unwrap();
    assert!(!sda.contains("n="), "{sda}");
    assert!(!s.contains("reads "), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn without_a_word_from_the_source_there_is_no_column() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 10, &busy(4));
    let s = text(&screen(&app, 160, 48));
    assert!(!s.contains("r_p99") && !s.contains("no p99"), "{s}");
}

/// The count of reads of each interval of a device's latency history.
fn read_counts(app: &App, name: &str) -> Vec<u64> {
    let h = app.latency_points(name).unwrap();
    // One interval after the other, none twice, none missing.
    assert!(
        h.iter()
            .zip(h.iter().skip(1))
            .all(|(a, b)| (b.t - a.t - 1.0).abs() < 1e-9),
        "{name}: {:?}",
        h.iter().map(|p| p.t).collect::<Vec<_>>()
    );
    h.iter()
        .map(|p| p.dev.get(Span::Total, Dir::Read).map_or(0, |c| c.count()))
        .collect()
}

/// Each device's history holds every traced interval from its first on:
/// its histograms where it did I/O, none where it did not (the worker
/// sends only devices with I/O), and no interval of a device without a
/// request queue.
#[test]
fn a_latency_history_has_every_traced_interval_busy_or_idle() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run_traced(&mut app, 3, &busy(1), &slow());
    m.run_traced(&mut app, 2, &[], &[]);
    m.run_traced(&mut app, 1, &busy(1), &slow());
    assert_eq!(read_counts(&app, "sda"), [800, 800, 800, 0, 0, 800]);
    assert_eq!(read_counts(&app, "sdb"), [20, 20, 20, 0, 0, 20]);
    assert!(app.latency_points("zram0").is_none());
    let n = |app: &App| app.latency_now("sda", Dir::Read);
    assert_eq!(n(&app).unwrap().unwrap().n, 800);
    // An idle interval: traced, without reads (not "untraced").
    m.run_traced(&mut app, 1, &[], &[]);
    assert_eq!(n(&app), Some(None));
    // Before/after a change pools the same intervals, idle ones counted.
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    m.run_traced(&mut app, 2, &busy(1), &fast());
    let (before, after) = app.latency_compare("sda", 0).unwrap();
    let (before, after) = (before.unwrap(), after.unwrap());
    assert_eq!((before.intervals, after.intervals), (7, 2));
    let reads = |w: &blktune::tui::app::Window| w.count(Span::Total, Dir::Read);
    assert_eq!((reads(&before), reads(&after)), (3200, 1600));
}

/// Past 64 devices only the selected (and changed) devices keep long
/// histories; the others keep the last 24 intervals. A device whose busy
/// intervals were dropped while it kept the short history never shows
/// those intervals as idle when it is selected later.
#[test]
fn a_short_latency_history_never_shows_dropped_io_as_idle() {
    let disks: Vec<FakeDisk> = (0..70)
        .map(|i| FakeDisk::new(&format!("d{i}")).dev(8, i * 16))
        .collect();
    let mut m = Machine::new(&disks);
    let mut app = m.app(None);
    assert_eq!(app.selected.as_deref(), Some("d0"));
    let lat = |reads| Lat {
        reads,
        r_ms: 1.0,
        r_tail: 0.0,
        r_tail_ms: 0.0,
        r_dev_ms: 0.5,
        writes: 0,
        w_ms: 0.0,
    };
    // d1 does I/O throughout; d2 for the first 10 intervals only.
    for i in 0..100 {
        let mut l = vec![("d0", lat(5)), ("d1", lat(7))];
        if i < 10 {
            l.push(("d2", lat(9)));
        }
        m.run_traced(&mut app, 1, &[], &l);
    }
    assert_eq!(read_counts(&app, "d0"), vec![5; 100]);
    let d1 = read_counts(&app, "d1");
    assert!((24..=26).contains(&d1.len()), "{}", d1.len());
    assert!(d1.iter().all(|&n| n == 7), "{d1:?}");
    // Selected now, d2 shows what it kept: its reads of the first 10
    // intervals (t = 1..10) were dropped, so those intervals are not
    // part of its history (never shown as idle); the rest are idle.
    app.selected = Some("d2".into());
    let d2 = read_counts(&app, "d2");
    assert!(d2.len() >= 24, "{}", d2.len());
    assert!(d2.iter().all(|&n| n == 0), "{d2:?}");
    let first = app.latency_points("d2").unwrap()[0].t;
    assert!(first > 10.0, "{first}");
    // Short again for an unselected device that did I/O in the last
    // intervals: its busy intervals are all there.
    app.selected = Some("d0".into());
    for _ in 0..3 {
        m.run_traced(&mut app, 1, &[], &[("d2", lat(9))]);
    }
    let d2 = read_counts(&app, "d2");
    assert!((24..=26).contains(&d2.len()), "{}", d2.len());
    assert_eq!(d2[d2.len() - 3..], [9, 9, 9]);
    assert!(d2[..d2.len() - 3].iter().all(|&n| n == 0), "{d2:?}");
}
