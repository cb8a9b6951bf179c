//! The latency probe in the detail pane, on a fake machine with scripted
//! reads: every figure with the count of reads it rests on, a window's
//! figures pooled from all its reads (never a mean of per-interval
//! percentiles), no p99 under 100 reads and then no percent change; and
//! the probe switched on and off through the live source.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use crate::state::status;
use blktune::tui::app::App;
use blktune::tui::command::Mode;
use blktune::tui::worker::live::LiveSource;
use blktune::tui::worker::protocol::{Control, Feed, LiveControl, Shared};
use blktune_core::diskstats::Counters;
use blktune_core::sampler::Sampler;
use crossterm::event::KeyCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};
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

#[test]
fn probe_follows_the_selection_and_its_figures_land_in_the_state() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    app.enable_probe(5.0);
    // The baseline (the first snapshot) selected sda.
    assert_eq!(
        app.probe_control(),
        Some(Control::Live(LiveControl::Probe(Some("sda".into()))))
    );
    assert_eq!(app.probe_control(), None, "said once");
    m.run(&mut app, 1, &busy(4));
    assert_eq!(app.probe_control(), None, "the same device");

    let st = probe_stats(5.0, &[0.2, 0.3, 0.3, 1.2, 2.0], None);
    m.run_probed(&mut app, 3, &busy(4), "sda", &st);
    let h = &app.probe.as_ref().unwrap().history["sda"];
    assert_eq!(h.len(), 3);
    let last = h.back().unwrap();
    let f = last.figures();
    assert_eq!(
        (f.n, f.p50, f.p99, f.max, last.reads_per_sec, last.errors),
        (5, Some(0.3), None, Some(2.0), 5.0, 0)
    );
    // On the sample timeline: the same ends and lengths as diskstats' points.
    let probe_t: Vec<(f64, f64)> = h.iter().map(|p| (p.t, p.itv)).collect();
    let disk_t: Vec<(f64, f64)> = app.histories["sda"]
        .points()
        .iter()
        .skip(1)
        .map(|p| (p.t, p.itv))
        .collect();
    assert_eq!(probe_t, disk_t);
    assert!(!app.probe.as_ref().unwrap().history.contains_key("sdb"));

    // Moving the selection re-targets the probe, in the key's own answer
    // (by %util sdb is the row above sda).
    assert_eq!(
        press(&mut app, &[KeyCode::Up]),
        vec![Control::Live(LiveControl::Probe(Some("sdb".into())))]
    );
    assert_eq!(
        press(&mut app, &[KeyCode::Down, KeyCode::Up]),
        vec![
            Control::Live(LiveControl::Probe(Some("sda".into()))),
            Control::Live(LiveControl::Probe(Some("sdb".into())))
        ]
    );
    // Keys that leave the selection alone say nothing to the probe: a sort
    // (by aqu-sz: sdb first) keeps it, and Up at the top moves nothing.
    assert!(press(&mut app, &chars("o")).is_empty());
    assert!(press(&mut app, &[KeyCode::Up]).is_empty());
    assert_eq!(
        press(&mut app, &[KeyCode::Down]),
        vec![Control::Live(LiveControl::Probe(Some("sda".into())))]
    );
    // Typing a filter never moves the selection, nor the probe; the row
    // the user then picks under it does, and stays picked after Esc.
    let mut ctl = press(&mut app, &chars("/sdb"));
    ctl.extend(press(&mut app, &[KeyCode::Enter]));
    assert!(ctl.is_empty(), "{ctl:?}");
    assert_eq!(app.selected.as_deref(), Some("sda"));
    let ctl = press(&mut app, &[KeyCode::Down, KeyCode::Esc]);
    assert_eq!(
        ctl,
        vec![Control::Live(LiveControl::Probe(Some("sdb".into())))]
    );
    assert_eq!(app.selected.as_deref(), Some("sdb"));
    m.run_probed(&mut app, 1, &busy(4), "sdb", &st);
    assert!(app.probe.as_ref().unwrap().latest("sdb").is_some());
    // A vanished device leaves nothing selected and stops the probe; the
    // event loop asks probe_control() after every batch of feeds.
    m.tree.remove("sdb").unwrap();
    m.refresh();
    m.run(&mut app, 1, &busy(4));
    assert_eq!(app.selected, None);
    assert_eq!(
        app.probe_control(),
        Some(Control::Live(LiveControl::Probe(None)))
    );
    let ctl = press(&mut app, &[KeyCode::Down]);
    let now = app.selected.clone().unwrap();
    assert_ne!(now, "sdb");
    assert_eq!(
        ctl,
        vec![Control::Live(LiveControl::Probe(Some(now.clone())))]
    );
    assert!(
        !app.probe.as_ref().unwrap().history.contains_key("sdb"),
        "a vanished device's probe history goes"
    );

    // An error shows up as the newest point's error, not as a crash.
    let denied = probe_stats(0.0, &[], Some("cannot open /dev/X for reading"));
    m.run_probed(&mut app, 1, &busy(4), &now, &denied);
    let p = app.probe.as_ref().unwrap().latest(&now).unwrap();
    assert_eq!(p.error.as_deref(), Some("cannot open /dev/X for reading"));
    assert_eq!((p.figures().n, p.errors), (0, 5));
}

#[test]
fn probe_off_has_no_state_and_sends_nothing() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    assert!(app.probe.is_none());
    assert_eq!(app.probe_control(), None);
    assert!(press(&mut app, &[KeyCode::Down, KeyCode::Down]).is_empty());
    // Figures that arrive anyway are dropped.
    let st = probe_stats(5.0, &[0.2, 0.3, 0.3, 1.2, 2.0], None);
    m.run_probed(&mut app, 2, &busy(4), "zram0", &st);
    assert!(app.probe.is_none());
    assert!(app.probe_compare("sda", 0).is_none());
}

#[test]
fn live_source_probe_error_reaches_the_app_without_a_crash() {
    // A disk in the fake tree has no node in /dev: the probe cannot open it,
    // like a user who may not open /dev/X; the error comes back as figures.
    let name = "blkprobetest0";
    assert!(!std::path::Path::new("/dev").join(name).exists());
    let m = Machine::new(&[blktune_core::fake::FakeDisk::new(name).dev(8, 0)]);
    m.tree
        .set_diskstats(&[(name, 8, 0, Counters::default())])
        .unwrap();
    let root = m.tree.root();
    let (ftx, frx) = mpsc::channel();
    let (ctx, crx) = mpsc::channel();
    let handle = LiveSource::new(
        Sampler::new(root).unwrap(),
        None,
        Duration::from_millis(100),
    )
    .with_probe_rate(20.0)
    .spawn(ftx, crx)
    .unwrap();
    let mut app = m.app(Some("--read-only"));
    app.enable_probe(20.0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut error = None;
    while error.is_none() {
        assert!(Instant::now() < deadline, "no probe error came back");
        if let Ok(f) = frx.recv_timeout(Duration::from_millis(50)) {
            app.on_feed(f);
        }
        if let Some(c) = app.probe_control() {
            ctx.send(c.to_live().unwrap()).unwrap();
        }
        error = app
            .probe
            .as_ref()
            .and_then(|p| p.latest(name))
            .and_then(|p| p.error.clone());
    }
    let e = error.unwrap();
    assert!(
        e.contains(&format!("cannot open /dev/{name} for reading")),
        "{e}"
    );
    ctx.send(Shared::Stop.into()).unwrap();
    handle.join().unwrap();
}

#[test]
fn p_turns_the_probe_on_and_off_in_the_live_view_only() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    app.probe_rate = 2.0;
    m.run(&mut app, 2, &busy(4));
    assert!(app.probe.is_none());
    // On: at the configured rate, pointed at the selected device at once.
    assert_eq!(
        press(&mut app, &chars("P")),
        vec![Control::Live(LiveControl::Probe(Some("sda".into())))]
    );
    assert_eq!(app.probe.as_ref().unwrap().rate, 2.0);
    assert!(
        status(&app).contains("probe on: 2.0 read-only"),
        "{}",
        status(&app)
    );
    let st = probe_stats(2.0, &[0.3, 2.0], None);
    m.run_probed(&mut app, 2, &busy(4), "sda", &st);
    assert!(text(&screen(&app, 80, 24)).contains("probe: 2.0/s direct 4 KiB reads"));
    // Off: the source is told to stop, and nothing of it is left on screen.
    assert_eq!(
        press(&mut app, &chars("P")),
        vec![Control::Live(LiveControl::Probe(None))]
    );
    assert!(app.probe.is_none());
    assert_eq!(status(&app), "probe off");
    let s = text(&screen(&app, 80, 24));
    assert!(!s.contains("direct 4 KiB") && !s.contains("p99"), "{s}");
    assert!(press(&mut app, &[KeyCode::Down]).is_empty());
    // Read-only mode allows it: it only reads.
    let mut app = m.app(Some("not root"));
    m.run(&mut app, 1, &busy(4));
    assert_eq!(
        press(&mut app, &chars("P")),
        vec![Control::Live(LiveControl::Probe(Some("sda".into())))]
    );
    // A replay has no such key.
    app.on_feed(Feed::Position(
        blktune::tui::worker::protocol::ReplayPosition {
            at: 0.0,
            total: 10.0,
            speed: 1.0,
            paused: false,
            ended: false,
        },
    ));
    assert_eq!(app.mode(), Mode::Replay);
    assert!(press(&mut app, &chars("P")).is_empty());
    assert!(app.probe.is_some(), "P did nothing in the replay");
}
