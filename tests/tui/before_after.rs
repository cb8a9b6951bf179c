//! The before/after of a change as the comparison engine reads it (issue
//! 32): one window before and one after are one pair, so every figure has
//! its change and the windows' own interval and the call stays undecided;
//! what else changed in the same windows is said before the numbers (a
//! backing disk that slowed tenfold makes it unreliable); `A` alternates
//! the change's two configurations and the engine decides.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, Overlay};
use blktune::tui::command::Mode;
use blktune::tui::worker::ab::{AbFeed, AbOutcome, AbProgress};
use blktune::tui::worker::procio::WhereIoFeed;
use blktune::tui::worker::protocol::{Control, Feed, LiveControl};
use blktune_core::compare::design::block_order;
use blktune_core::compare::{Metric, Round, Sample};
use blktune_core::fake::FakeDisk;
use blktune_core::shootout::Phase;
use blktune_core::topology::{DeviceNode, Mount, Topology};
use std::collections::BTreeMap;
use std::sync::Arc;
use tui_fixture::*;

/// sda under load, a change, then `after` intervals at `r_after` ms (each
/// interval's await wobbles by one ms, as a real one does).
fn changed(after: usize, r_after: u32) -> (Machine, App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    for i in 0..20 {
        let mut l = busy(4 + i % 2);
        l[0].1.reads = if i % 2 == 0 { 780 } else { 820 };
        l[0].1.read_ms = l[0].1.reads as u32 * (4 + i % 2);
        m.run(&mut app, 1, &l);
    }
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    for i in 0..after {
        let mut l = busy(r_after + (i % 2) as u32);
        // The reads' rate wobbles too, by 5 %.
        l[0].1.reads = if i % 2 == 0 { 780 } else { 820 };
        l[0].1.read_ms = l[0].1.reads as u32 * (r_after + (i % 2) as u32);
        m.run(&mut app, 1, &l);
    }
    (m, app)
}

/// The side panel's lines (right of the charts' last `│`).
fn panel(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .filter_map(|l| {
            l.rsplit_once('│')
                .map(|(_, r)| r.trim_end_matches('"').trim_end())
        })
        .collect()
}

/// The panel as one line of words (a wrapped line joined to the one before).
fn words(screen: &str) -> String {
    panel(screen)
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The panel row of figure `name`.
fn row<'a>(screen: &'a str, name: &str) -> &'a str {
    panel(screen)
        .into_iter()
        .find(|r| r.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} row:\n{screen}"))
}

/// The interval `(lo..hi)` of a row, in percent.
fn interval(r: &str) -> Option<(f64, f64)> {
    let inside = r.split_once('(')?.1.split_once(')')?.0;
    let (lo, hi) = inside.split_once("..")?;
    Some((lo.parse().ok()?, hi.parse().ok()?))
}

#[test]
fn a_window_under_three_intervals_states_no_change() {
    let (_m, app) = changed(2, 20);
    for (w, h) in [(80, 24), (120, 40)] {
        let s = text(&screen(&app, w, h));
        let r = row(&s, "r_await");
        assert!(
            r.ends_with("short") && !r.contains('%'),
            "{w}x{h}: {r}\n{s}"
        );
    }
}

#[test]
fn at_80x24_a_switch_has_rates_with_before_after_and_the_interval_and_no_call() {
    let (_m, app) = changed(12, 20);
    let s = text(&screen(&app, 80, 24));
    // Reads per second: before, after, the change and its interval.
    let r = row(&s, "r/s");
    let cells: Vec<&str> = r.split_whitespace().collect();
    assert_eq!(cells[1], "800", "{r}");
    assert_eq!(cells[2], "800", "{r}");
    let (lo, hi) = interval(r).unwrap_or_else(|| panic!("{r}\n{s}"));
    assert!(lo < 0.0 && hi > 0.0, "{r}");
    // The awaits: 4-5 ms before, 20-21 ms after, an interval clear of 0.
    let (lo, hi) = interval(row(&s, "r_await")).unwrap();
    assert!(lo > 200.0 && hi > lo, "{lo}..{hi}\n{s}");
    // One pair: said undecided, never "faster" or "better".
    let p = words(&s);
    assert!(p.contains("undecided"), "{s}");
    for word in ["faster", "slower", "better", "worse"] {
        assert!(!p.contains(word), "{word}: {s}");
    }
    // What else was measured in the same windows, before the numbers.
    let steady = panel(&s).iter().position(|l| l.contains("steady: load"));
    let rates = panel(&s).iter().position(|l| l.starts_with("r/s"));
    assert!(steady.is_some() && steady < rates, "{s}");
}

#[test]
fn a_move_inside_the_windows_noise_has_an_interval_across_zero() {
    // 4-5 ms before, 4-5 after.
    let (_m, app) = changed(12, 4);
    let s = text(&screen(&app, 120, 40));
    let (lo, hi) = interval(row(&s, "r_await")).unwrap();
    assert!(lo < 0.0 && hi > 0.0, "{lo}..{hi}\n{s}");
}

#[test]
fn the_rule_files_measured_text_has_no_percent_from_a_short_window() {
    let (_m, mut app) = changed(2, 20);
    press(&mut app, &chars("e"));
    let Some(Overlay::Export(d)) = &app.overlay else {
        panic!("no export dialog: {:?}", app.overlay);
    };
    let text = format!("{d:?}");
    assert!(text.contains("r_await"), "{text}");
    assert!(!text.contains("%)"), "{text}");
}

/// loop0 on a file on vda, with vda's await `vda_ms` after the switch.
fn loop_over_vda(vda_ms: u32) -> (Machine, App) {
    let mut m = Machine::new(&[
        FakeDisk::new("vda").dev(253, 0),
        FakeDisk::new("loop0").dev(7, 0).active("mq-deadline"),
    ]);
    let mut app = m.app_with(None, Some("loop0".into()));
    let nodes: Vec<DeviceNode> = m.devices.iter().map(DeviceNode::from).collect();
    let mounts = [Mount {
        major: 253,
        minor: 0,
        mount_point: "/".into(),
        fs_type: "ext4".into(),
        source: "/dev/vda".into(),
    }];
    let backing = BTreeMap::from([("loop0".to_string(), "/var/tmp/img".to_string())]);
    let topo = Topology::build(&nodes, &mounts, &backing, &BTreeMap::new());
    assert_eq!(topo.underneath("loop0", &nodes), ["vda"]);
    app.on_feed(Feed::WhereIo(WhereIoFeed::Placement(Arc::new(topo))));
    let at = |r_await: u32, vda: u32, i: usize| {
        let w = (i % 2) as u32;
        vec![
            ("loop0", load(4000, r_await + w, 100, 2, 90)),
            ("vda", load(50, vda, 50, vda, 40)),
        ]
    };
    for i in 0..15 {
        m.run(&mut app, 1, &at(1, 1, i));
    }
    let mark = m.switch("loop0", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    for i in 0..10 {
        m.run(&mut app, 1, &at(3, vda_ms, i));
    }
    (m, app)
}

#[test]
fn the_disk_under_a_loop_device_slowing_tenfold_is_named_and_the_result_unreliable() {
    let (_m, app) = loop_over_vda(10);
    for (w, h) in [(80, 24), (120, 40)] {
        let s = text(&screen(&app, w, h));
        let p = words(&s);
        assert!(
            p.contains("UNRELIABLE: vda (under loop0) slowed too: await 1.0 -> 10.0 ms"),
            "{w}x{h}:\n{s}"
        );
        assert!(p.contains("the switch is not the only change"), "{s}");
        // Said before the numbers, and never a win.
        let alarm = panel(&s).iter().position(|l| l.starts_with("UNRELIABLE"));
        let rates = panel(&s).iter().position(|l| l.starts_with("r/s"));
        assert!(alarm < rates, "{s}");
        assert!(!p.contains("better"), "{s}");
    }
    // vda steady: named as checked, nothing unreliable.
    let (_m, app) = loop_over_vda(1);
    let s = text(&screen(&app, 80, 24));
    assert!(!s.contains("UNRELIABLE"), "{s}");
    assert!(words(&s).contains("vda"), "{s}");
}

#[test]
fn a_alternates_the_change_then_the_engine_decides_and_esc_stops_it() {
    let (m, mut app) = changed(12, 20);
    // Read-only sessions refuse it.
    let mut ro = m.app(Some("not root"));
    assert!(press(&mut ro, &chars("A")).is_empty());
    // `A` asks the worker for the A/B of the last change.
    let out = press(&mut app, &chars("A"));
    let Some(Control::Live(LiveControl::StartAb(req))) = out.first() else {
        panic!("{out:?}");
    };
    assert_eq!(req.device, "sda");
    assert_eq!(req.configs[0].scheduler.as_deref(), Some("mq-deadline"));
    assert_eq!(req.configs[1].scheduler.as_deref(), Some("kyber"));
    assert_eq!(mode(&app), Mode::Ab);
    // Change keys do nothing while it runs.
    assert!(press(&mut app, &chars("s")).is_empty());
    assert!(app.overlay.is_none());
    // The worker's progress shows in the panel.
    app.on_feed(Feed::Ab(AbFeed::Progress(AbProgress {
        step: 3,
        steps: 12,
        config: Some(1),
        phase: Phase::Measuring,
        time_left: std::time::Duration::from_secs(50),
    })));
    let s = text(&screen(&app, 80, 24));
    assert!(
        words(&s).contains("A/B round 3 of 12: after, measuring, 50s left"),
        "{s}"
    );
    // Six blocks, A B | B A: before (config 0) reads at 4-5 ms, after at 8-9.
    let mut rounds = Vec::new();
    for block in 0..6 {
        for config in block_order(&[0, 1], block) {
            let mut r = Round::new(config, block, rounds.len() as f64 * 6.0);
            let ms = if config == 0 { 4.0 } else { 8.0 } + (block % 2) as f64 * 0.5;
            r.values.insert(Metric::RAwait, Sample::of(ms));
            r.values.insert(Metric::RS, Sample::of(4000.0 / ms));
            rounds.push(r);
        }
    }
    app.on_feed(Feed::Ab(AbFeed::Done(Ok(AbOutcome {
        rounds,
        restored: "original settings restored (scheduler=kyber)".into(),
    }))));
    assert_eq!(mode(&app), Mode::Main);
    let s = text(&screen(&app, 120, 40));
    let r = row(&s, "r_await");
    assert!(r.ends_with("worse"), "{r}\n{s}");
    assert!(
        words(&s).contains("A/B, 6 pairs of rounds: after worse on"),
        "{s}"
    );
    assert!(
        s.contains("original settings restored (scheduler=kyber)"),
        "{s}"
    );
    // A new A/B, stopped by Esc: the worker is told, the screen says so.
    let out = press(&mut app, &chars("A"));
    assert!(matches!(
        out.first(),
        Some(Control::Live(LiveControl::StartAb(_)))
    ));
    let out = press(&mut app, &[crossterm::event::KeyCode::Esc]);
    assert_eq!(out, [Control::Live(LiveControl::CancelAb)]);
    assert!(text(&screen(&app, 80, 24)).contains("restoring your choice"));
}
