//! The export dialog's rule cites the kernel's p99 of the change (issue
//! 14: "export's measured comment cites p99"): the read and write p99
//! before and after, each window's histograms pooled, with the counts; a
//! count alone from under 100 I/Os, and no percent from it.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, Overlay};
use blktune::tui::worker::protocol::Feed;
use tui_fixture::*;

/// sda's reads: `reads` a second of ~`r_ms` ms, a fraction `tail` held
/// to 12 ms by the scheduler; 40 writes a second of ~10 ms.
fn sda(reads: u64, r_ms: f64, tail: f64) -> Vec<(&'static str, Lat)> {
    vec![(
        "sda",
        Lat {
            reads,
            r_ms,
            r_tail: tail,
            r_tail_ms: 12.0,
            r_dev_ms: 0.9,
            writes: 40,
            w_ms: 10.0,
        },
    )]
}

/// `before` seconds of `b`, a switch of sda, `after` seconds of `a`; the
/// export dialog opened on sda.
fn exported(
    before: usize,
    b: &[(&str, Lat)],
    after: usize,
    a: &[(&str, Lat)],
) -> (Machine, App, String) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run_traced(&mut app, before, &busy(4), b);
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    m.run_traced(&mut app, after, &busy(1), a);
    press(&mut app, &chars("e"));
    let Some(Overlay::Export(d)) = &app.overlay else {
        panic!("no export dialog: {:?}", app.overlay);
    };
    let text = d.preview.as_ref().unwrap().text.clone();
    (m, app, text)
}

/// The rule file's `measured:` line.
fn measured(rule: &str) -> &str {
    rule.lines()
        .find(|l| l.contains("measured: after mq-deadline→kyber"))
        .unwrap_or_else(|| panic!("no measured line:\n{rule}"))
}

#[test]
fn the_rule_cites_the_pooled_read_p99_before_and_after_with_counts() {
    // A minute with 3% of reads held to 12 ms, then 20 s without.
    let (_m, app, rule) = exported(60, &sda(800, 4.0, 0.03), 20, &sda(800, 1.0, 0.0));
    let l = measured(&rule);
    // Pooled over 60 and 20 intervals: 48000 and 16000 reads; the p99 of
    // the window is one of the held reads (the mean of per-interval p99s
    // would be the same here, but a count of 800 would not be).
    assert!(l.contains("read p99 12."), "{l}");
    assert!(l.contains("(n=48000→16000) (-9"), "{l}");
    // Writes did not move: their p99 is cited, its move is noise.
    assert!(l.contains("write p99 "), "{l}");
    assert!(l.contains("(n=2400→800) (inside the noise)"), "{l}");
    // The same figures as the before/after panel's pooled windows.
    let (b, a) = app.latency_compare("sda", 0).unwrap();
    let (b, a) = (b.unwrap(), a.unwrap());
    let p = |w: &blktune::tui::app::Window| {
        w.percentiles(
            blktune_core::latency::Span::Total,
            blktune_core::latency::Dir::Read,
        )
        .unwrap()
        .p99
    };
    assert!(
        l.contains(&format!("read p99 {:.3}→{:.3} ms", p(&b), p(&a))),
        "{l}"
    );
}

#[test]
fn too_few_ios_give_a_count_and_no_p99() {
    // 10 reads a second: 50 before, 100 after the switch... but only 50
    // in the 5 s window before, so no p99 and no percent from it.
    let (_m, _app, rule) = exported(5, &sda(10, 4.0, 0.0), 10, &sda(10, 1.0, 0.0));
    let l = measured(&rule);
    assert!(l.contains("read p99 n=50→"), "{l}");
    assert!(l.contains("(n=50→100)"), "{l}");
    let read = l.split("read p99").nth(1).unwrap();
    let read = read.split(", ").next().unwrap();
    assert!(!read.contains('%'), "{l}");
    // Writes: 40 a second, 200 and 400 I/Os: a p99 each.
    assert!(l.contains("write p99 1"), "{l}");
}
