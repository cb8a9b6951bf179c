//! The latency probe in the detail pane, on a fake machine with scripted
//! reads: every figure with the count of reads it rests on, a window's
//! figures pooled from all its reads (never a mean of per-interval
//! percentiles), no p99 under 100 reads and then no percent change.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::App;
use blktune::tui::worker::protocol::Feed;
use tui_fixture::*;

/// Five reads of `fast` ms and one of `tail` ms: one second of the probe at 5 reads/s.
fn second(fast: [f64; 4], tail: f64) -> Vec<f64> {
    let mut v = fast.to_vec();
    v.push(tail);
    v
}

/// sda with the probe on at 5 reads/s: 40 s under mq-deadline (reads of
/// 0.6 to 2 ms, and 6.5 ms in every tenth second), then a switch to kyber
/// and `after` seconds of reads of 0.3 to 1.5 ms.
fn probe_app(after: usize) -> (Machine, App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    app.enable_probe(5.0);
    for i in 1..=40 {
        let tail = if i % 10 == 0 { 6.5 } else { 2.0 };
        let st = probe_stats(5.0, &second([0.6, 0.7, 0.8, 0.9], tail), None);
        m.run_probed(&mut app, 1, &busy(6), "sda", &st);
    }
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    let fast = probe_stats(5.0, &second([0.3, 0.4, 0.4, 0.5], 1.5), None);
    m.run_probed(&mut app, after, &busy(2), "sda", &fast);
    (m, app)
}

#[test]
fn probe_rows_show_their_counts_at_80x24() {
    let (_m, app) = probe_app(20);
    let term = screen(&app, 80, 24);
    let s = text(&term);
    // What it is, in two lines of the 33-column panel.
    assert!(s.contains("probe: 5.0/s direct 4 KiB reads"), "{s}");
    assert!(s.contains("above the block layer (in r/s)"), "{s}");
    assert!(s.contains("ms       n   p50   p99   max"), "{s}");
    // The newest second: 5 reads, so a median and a max but no p99.
    assert!(s.contains("1s       5  0.40     -  1.50"), "{s}");
    // The last minute pools its 300 reads: the 297th fastest is a 6.5 ms
    // read (a mean of the seconds' "p99" would say 2.1 ms).
    assert!(s.contains("60s    300  0.70  6.50  6.50"), "{s}");
    // Before and after the switch: the counts, and the p99 of each window's
    // pooled reads (200 before: the 198th is 6.5 ms; 100 after: the 99th
    // is 1.5 ms).
    assert!(s.contains("pr_n         200     100"), "{s}");
    assert!(s.contains("pr_p99      6.50    1.50   -77%"), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn probe_rows_at_120x40_have_r_await_beside_them() {
    let (_m, app) = probe_app(20);
    let term = screen(&app, 120, 40);
    let s = text(&term);
    assert!(s.contains("probe: 5.0/s direct 4 KiB reads  "), "{s}");
    assert!(s.contains("above the block layer (in r/s)"), "{s}");
    assert!(s.contains("ms       n   p50   p99   max r_await"), "{s}");
    assert!(s.contains("1s       5  0.40     -  1.50    2.00"), "{s}");
    assert!(s.contains("60s    300  0.70  6.50  6.50    4.67"), "{s}");
    assert!(s.contains("pr_n         200     100"), "{s}");
    assert!(s.contains("pr_p99      6.50    1.50   -77%"), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn under_100_reads_after_a_switch_there_is_a_count_and_no_percent() {
    // 10 s after the switch: 50 reads.
    let (_m, app) = probe_app(10);
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("pr_n         200      50"), "{s}");
    assert!(s.contains("pr_p99      6.50    n=50    few"), "{s}");
    assert!(!s.contains("pr_p99      6.50    1.50"), "{s}");
    // The minute's window: 250 reads, enough for a p99.
    assert!(s.contains("60s    250"), "{s}");
}

#[test]
fn probe_error_is_a_line_in_the_panel() {
    let mut m = Machine::three();
    let mut app = m.app(Some("not root"));
    app.enable_probe(5.0);
    let denied = probe_stats(
        0.0,
        &[],
        Some("cannot open /dev/sda for reading: Permission denied (os error 13)"),
    );
    m.run_probed(&mut app, 10, &busy(4), "sda", &denied);
    let term = screen(&app, 80, 24);
    let s = text(&term);
    assert!(s.contains("probe: 0.0/s direct 4 KiB reads"), "{s}");
    assert!(s.contains("probe: cannot open /dev/sda for"), "{s}");
    assert!(s.contains("reading: Permission denied (os"), "{s}");
    assert!(s.contains("error 13)"), "{s}");
    assert!(!s.contains("p99"), "no table without a read: {s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn probe_off_shows_nothing_of_it() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 30, &busy(4));
    assert!(app.probe.is_none());
    for (w, h) in [(80, 24), (160, 48)] {
        // Above the footer, which offers `P probe`.
        let s = text(&screen(&app, w, h));
        let above = s
            .lines()
            .take(h as usize - 1)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!above.contains("probe") && !above.contains("pr_"), "{s}");
    }
    // Probe on but no figures yet: what it is, and that it is starting.
    let mut m = Machine::three();
    let mut app = m.app(None);
    app.enable_probe(2.5);
    m.run(&mut app, 3, &busy(4));
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("probe: 2.5/s direct 4 KiB reads"), "{s}");
    assert!(s.contains("above the block layer: starting"), "{s}");
    assert!(!s.contains("p99"), "{s}");
}
