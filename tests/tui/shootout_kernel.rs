//! The shoot-out dialog's results (`b`) show the kernel's percentiles of
//! the device's own I/O per scheduler, as `blktune bench` does: the reads'
//! count, p50 and p99 (and the writes' when there were any), a count in
//! place of a p99 under 100 I/Os, and one line saying why when there are
//! none. Snapshots at 80x24 and 120x40 on a fake shoot-out feed.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use crate::common::tui_fixture;
use blktune::tui::app::App;
use blktune::tui::worker::protocol::Feed;
use blktune::tui::worker::shootout::ShootOutFeed;
use blktune_core::latency::Hist;
use blktune_core::shootout::{DwellHists, Figures, Goal, ShootoutResult, fake_result};
use blktune_core::tuner::Wanted;
use crossterm::event::KeyCode;
use tui_fixture::*;

/// `n` I/Os, one in fifty of them `tail_ms` slow and the rest `ms`.
fn hist(n: u64, ms: f64, tail_ms: f64) -> Hist {
    let mut h = Hist::empty();
    for i in 0..n {
        let v = if i % 50 == 49 { tail_ms } else { ms };
        h.record((v * 1e6) as u64);
    }
    h
}

/// One dwell's histograms: reads, and writes when `writes` > 0.
fn dwell(reads: u64, ms: f64, tail_ms: f64, writes: u64) -> DwellHists {
    DwellHists {
        reads: hist(reads, ms, tail_ms),
        writes: hist(writes, 3.0, 12.0),
        dev_reads: hist(reads, ms * 0.8, tail_ms * 0.8),
        dev_writes: hist(writes, 2.5, 10.0),
    }
}

/// A one-round shoot-out of sda's four schedulers; traced or not.
fn result(traced: bool) -> ShootoutResult {
    let fig = |r_await: f64, r_s: f64| Figures {
        r_s,
        w_s: 40.0,
        mb_s: 3.4,
        r_await,
        w_await: 10.0,
        aqu_sz: 3.0,
        util: 88.0,
        load: None,
    };
    let k = |d: DwellHists| traced.then_some(d);
    let mut r = fake_result(
        "sda",
        Goal::ReadLatency,
        &[
            (
                "none",
                vec![(fig(4.2, 790.0), k(dwell(3950, 4.0, 9.5, 200)))],
            ),
            (
                "mq-deadline",
                vec![(fig(4.0, 800.0), k(dwell(4000, 3.8, 12.0, 200)))],
            ),
            // Few reads in the dwell: a count instead of a p99.
            ("kyber", vec![(fig(1.1, 812.0), k(dwell(42, 1.0, 2.0, 60)))]),
            (
                "bfq",
                vec![(fig(6.5, 610.0), k(dwell(3050, 6.0, 25.0, 200)))],
            ),
        ],
    );
    r.original = Wanted {
        scheduler: Some("mq-deadline".into()),
        ..Wanted::default()
    };
    r.final_settings = "original settings restored (scheduler=mq-deadline)".into();
    r
}

/// The app with the shoot-out's result in its dialog.
fn done(traced: bool) -> (Machine, App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 3, &busy(4));
    press(&mut app, &chars("b"));
    press(&mut app, &[KeyCode::Enter]);
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Ok(Box::new(result(
        traced,
    ))))));
    (m, app)
}

/// The results table's cells of scheduler `name`, by column label.
fn row(screen: &str, name: &str) -> std::collections::BTreeMap<String, String> {
    common::shootout_row(screen, name)
        .unwrap_or_else(|| panic!("no results table or no row for {name}:\n{screen}"))
}

#[test]
fn results_show_the_kernels_p50_and_p99_with_counts() {
    let (_m, app) = done(true);
    let s = text(&screen(&app, 80, 24));
    let none = row(&s, "none");
    assert_eq!(none["r_n"], "3950", "{s}");
    // 2 % of the reads at 9.5 ms: the p99 sits on them, the p50 at 4 ms
    // (to the histogram's 2 %).
    assert!(none["r_p50"].starts_with("4.0"), "{s}");
    assert_eq!(none["r_p99"], "9.50", "{s}");
    // 42 reads: their count, never a p99.
    let kyber = row(&s, "kyber");
    assert_eq!(
        (kyber["r_n"].as_str(), kyber["r_p99"].as_str()),
        ("42", "n=42")
    );
    // No room for the writes' p99 at 80 columns; there is at 120.
    assert!(!none.contains_key("w_p99"), "{s}");
    let wide = text(&screen(&app, 120, 40));
    let kyber = row(&wide, "kyber");
    assert_eq!(
        (kyber["w_n"].as_str(), kyber["w_p99"].as_str()),
        ("60", "n=60")
    );
    assert_eq!(row(&wide, "none")["w_p99"], "12.0", "{wide}");
    assert!(s.contains("no p99 under 100 I/Os"), "{s}");
}

#[test]
fn without_bpf_the_results_say_why_in_a_few_words() {
    let (_m, app) = done(false);
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("no kernel percentiles: needs root"), "{s}");
    assert!(!s.contains("r_p99"), "{s}");
}

#[test]
fn snapshot_shoot_out_kernel_results_80x24() {
    let (_m, app) = done(true);
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn snapshot_shoot_out_kernel_results_120x40() {
    let (_m, app) = done(true);
    insta::assert_snapshot!(screen(&app, 120, 40).backend());
}
