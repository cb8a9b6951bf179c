//! The replay viewer's state: the shipped recording played through the
//! replay source into the same App the live view uses gives the very marks
//! and before/after figures `blktune replay --summary` prints; seeking back
//! resets and refeeds; the end pauses on the last frame.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::App;
use blktune::tui::command::{Mode, action_for};
use blktune::tui::replay::replay_app;
use blktune::tui::worker::protocol::Feed;
use blktune::tui::worker::replay::{ReplaySource, SEEK_STEP};
use blktune_core::record::{Recording, summarize};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn asset() -> Arc<Recording> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-bfq-switch.ndjson.gz");
    Arc::new(Recording::open(&p).unwrap())
}

fn feed(app: &mut App, feeds: Vec<Feed>) -> usize {
    let resets = feeds.iter().filter(|f| matches!(f, Feed::Reset)).count();
    for f in feeds {
        app.on_feed(f);
    }
    resets
}

/// Press a key in the app and hand its controls to the source.
fn key(app: &mut App, src: &mut ReplaySource, code: KeyCode, now: Instant) -> usize {
    let a = action_for(app.mode(), &KeyEvent::new(code, KeyModifiers::NONE)).unwrap();
    let mut resets = 0;
    // A replay's app asks nothing of the live worker.
    for c in app.on_action(a) {
        let c = c.to_replay().expect("a replay control");
        resets += feed(app, src.control(&c, now));
    }
    resets
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

#[test]
fn replay_gives_the_summary_marks_and_before_after() {
    let rec = asset();
    let summary = summarize(&rec, None).unwrap();
    assert!(summary.changes.len() >= 2, "{:?}", summary.changes.len());
    let t0 = Instant::now();
    let mut app = replay_app(&rec, 0.0, 1.0);
    assert_eq!(app.mode(), Mode::Replay);
    let mut src = ReplaySource::new(Arc::clone(&rec), 0.0, 1.0, t0).unwrap();
    feed(&mut app, src.begin(t0));
    // Play to the end in a few big steps (the clock runs at x1).
    for s in [10.0, 45.0, 80.0, 200.0] {
        feed(&mut app, src.step(t0 + Duration::from_secs_f64(s)));
    }
    let pos = app.replay.clone().unwrap();
    assert!(pos.ended && pos.paused, "{pos:?}");
    assert!(close(pos.at, rec.duration()));
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("end of recording"),
        "{:?}",
        app.status
    );
    for c in &summary.changes {
        let got = app.changes_with_comparison(&c.device);
        let (mark, cmp) = got
            .iter()
            .find(|(m, _)| close(m.t, c.t))
            .unwrap_or_else(|| panic!("no mark at {} on {}", c.t, c.device));
        assert_eq!(mark.label, c.label);
        assert_eq!(mark.before, c.settings_before);
        assert_eq!(mark.after, c.settings_after);
        for (side, ours, theirs) in [
            ("before", cmp.before, c.before),
            ("after", cmp.after, c.after),
        ] {
            let (o, t) = (ours.unwrap(), theirs.unwrap());
            for (what, a, b) in [
                ("r_await", o.r_await, t.r_await),
                ("w_await", o.w_await, t.w_await),
                ("util", o.util, t.util),
                ("r/s", o.r_s, t.r_s),
                ("w/s", o.w_s, t.w_s),
                ("secs", o.secs, t.secs),
            ] {
                assert!(close(a, b), "{} {side} {what}: {a} vs {b}", c.label);
            }
        }
    }
    let total: usize = app.marks.values().map(Vec::len).sum();
    assert_eq!(total, summary.changes.len());
}

#[test]
fn seeking_back_resets_and_keeps_earlier_marks_only() {
    let rec = asset();
    let first = rec.changes().next().unwrap().t;
    let t0 = Instant::now();
    let mut app = replay_app(&rec, 0.0, 1.0);
    let mut src = ReplaySource::new(Arc::clone(&rec), 0.0, 1.0, t0).unwrap();
    feed(&mut app, src.begin(t0));
    let t = t0 + Duration::from_secs_f64(first + 5.0);
    feed(&mut app, src.step(t));
    // Pause, so positions are exact.
    assert_eq!(key(&mut app, &mut src, KeyCode::Char(' '), t), 0);
    let p0 = app.replay.clone().unwrap();
    assert!(p0.paused);
    let dev = rec.changes().next().unwrap().device.clone();
    assert_eq!(app.marks[&dev].len(), 1);
    let samples_before = app.samples;
    // ← goes back past the change: reset, refeed, the mark is gone.
    assert_eq!(key(&mut app, &mut src, KeyCode::Left, t), 1);
    let p1 = app.replay.clone().unwrap();
    assert!(close(p1.at, p0.at - SEEK_STEP), "{p0:?} {p1:?}");
    assert!(app.marks.get(&dev).is_none_or(Vec::is_empty));
    assert!(app.samples < samples_before);
    assert!(app.last_change(&dev).is_none());
    // → plays forward through it again, no reset: the mark is back.
    assert_eq!(key(&mut app, &mut src, KeyCode::Right, t), 0);
    assert!(close(app.replay.clone().unwrap().at, p0.at));
    assert_eq!(app.marks[&dev].len(), 1);
    assert!(app.last_change(&dev).unwrap().1.after.is_some());
    // Speed keys step through the list and reach the source.
    key(&mut app, &mut src, KeyCode::Char(']'), t);
    assert_eq!(app.replay.clone().unwrap().speed, 2.0);
    key(&mut app, &mut src, KeyCode::Char('-'), t);
    key(&mut app, &mut src, KeyCode::Char('-'), t);
    assert_eq!(app.replay.clone().unwrap().speed, 0.5);
    // Change keys are not bound in replay mode.
    assert_eq!(
        action_for(
            Mode::Replay,
            &KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE)
        ),
        None
    );
}

#[test]
fn start_offset_feeds_history_up_to_it() {
    let rec = asset();
    let first = rec.changes().next().unwrap();
    let t0 = Instant::now();
    let start = first.t + 10.0;
    let mut app = replay_app(&rec, start, 4.0);
    let mut src = ReplaySource::new(Arc::clone(&rec), start, 4.0, t0).unwrap();
    feed(&mut app, src.begin(t0));
    assert!(close(app.replay.clone().unwrap().at, start));
    assert_eq!(app.selected.as_deref(), Some(first.device.as_str()));
    assert_eq!(app.marks[&first.device].len(), 1);
    assert!(app.now <= start && app.now > start - 1.0);
}

#[test]
fn live_recorder_never_overwrites_and_records_what_it_is_given() {
    use blktune::tui::worker::recorder::{LiveRecorder, RecordEvent};
    use blktune_core::sampler::Sampler;
    let m = tui_fixture::Machine::three();
    let mut sampler = Sampler::new(m.tree.root()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("taken.ndjson.gz");
    std::fs::write(&existing, b"keep me").unwrap();
    let mut rec = LiveRecorder::default();
    match rec.start(&existing, &sampler, 0.0, Duration::from_secs(1), None) {
        Some(RecordEvent::Failed(e)) => assert!(e.contains("already exists"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");
    let path = dir.path().join("new.ndjson.gz");
    let s0 = sampler.tick().unwrap();
    assert_eq!(
        rec.start(&path, &sampler, s0.t, Duration::from_secs(1), None),
        Some(RecordEvent::Started(path.clone()))
    );
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(20));
        let s = sampler.tick().unwrap();
        assert_eq!(rec.snapshot(&s, None), None);
    }
    match rec.stop() {
        Some(RecordEvent::Stopped { samples, .. }) => assert_eq!(samples, 3),
        other => panic!("{other:?}"),
    }
    assert_eq!(rec.stop(), None, "stopping twice is a no-op");
    let back = Recording::open(&path).unwrap();
    assert_eq!(back.samples(), 3);
    assert_eq!(back.end().unwrap().reason, "stopped");
}

#[test]
fn replay_screen_at_80x24_has_position_marker_and_panel() {
    let rec = asset();
    let first = rec.changes().next().unwrap().t;
    let t0 = Instant::now();
    let start = first + 15.0;
    let mut app = replay_app(&rec, start, 1.0);
    let mut src = ReplaySource::new(Arc::clone(&rec), start, 1.0, t0).unwrap();
    feed(&mut app, src.begin(t0));
    let screen = tui_fixture::text(&tui_fixture::screen(&app, 80, 24));
    let at = start.round() as u64;
    assert!(
        screen.contains(&format!("replay {:02}:{:02}/01:3", at / 60, at % 60)),
        "{screen}"
    );
    assert!(screen.contains("mq-deadline→bfq"), "{screen}");
    assert!(
        screen.contains("before") && screen.contains("after"),
        "{screen}"
    );
    assert!(
        screen.contains("-10s") && !screen.contains("sched  n nr"),
        "{screen}"
    );
}

#[test]
fn the_replay_worker_never_panics_on_negative_or_huge_times() {
    use blktune::tui::worker::protocol::{Control, ReplayControl, Shared};
    use std::sync::mpsc;
    // Negative, far-out-of-range and extreme-but-valid times: the reader
    // skips the first two kinds, the worker plays what is left.
    let header = r#"{"type":"header","version":1,"tool":"blktune 0.1.0","started_wall":1767323045.0,"started":"2026-01-02T03:04:05Z","interval_s":1.0,"host":{"hostname":"h","kernel":"6.18.0","uptime_s":100.0},"devices":[{"name":"sda","major":8,"minor":0,"kind":"ssd","size_bytes":1000000}]}"#;
    let sample = |t: &str, wall: &str, n: u64| {
        format!(
            r#"{{"type":"sample","t":{t},"wall":{wall},"disks":{{"sda":[{n},0,{},{n},0,0,0,0,0,{n},{n}]}}}}"#,
            n * 8
        )
    };
    let change = |t: &str| {
        format!(
            r#"{{"type":"change","t":{t},"device":"sda","label":"none→kyber","source":"observed","before":{{"scheduler":"none","tunables":[]}},"after":{{"scheduler":"kyber","tunables":[]}}}}"#
        )
    };
    let lines = [
        header.to_owned(),
        sample("-30.0", "1767323015.0", 1),
        sample("-1e300", "1767323016.0", 2),
        sample("1.0", "1767323046.0", 3),
        change("-5.0"),
        change("1e300"),
        sample("2.0", "1e300", 4),
        sample("1e300", "1767323047.0", 5),
        sample("3.0", "-1767323048.0", 6),
        sample("4.0", "1767323049.0", 7),
        change("4.5"),
        // The latest time a recording may have: 30 years in.
        sample("1e9", "1767323050.0", 8),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("times.ndjson");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let rec = Arc::new(Recording::open(&path).unwrap());
    assert_eq!(rec.samples(), 3, "{:?}", rec.notes);
    assert_eq!(rec.duration(), 1e9);
    assert!(
        rec.notes
            .iter()
            .any(|n| n.contains("t -30.0 is out of range")),
        "{:?}",
        rec.notes
    );

    let (feed_tx, feed_rx) = mpsc::channel();
    let (ctl_tx, ctl_rx) = mpsc::channel();
    let handle = ReplaySource::new(Arc::clone(&rec), 0.0, 64.0, Instant::now())
        .unwrap()
        .spawn(feed_tx, ctl_rx)
        .unwrap();
    for c in [
        Control::Replay(ReplayControl::Seek(-1e12)),
        Control::Replay(ReplayControl::Seek(1e12)),
        Control::Shared(Shared::Pause(false)),
        Control::Replay(ReplayControl::Seek(-f64::MAX)),
        Control::Replay(ReplayControl::Seek(f64::MAX)),
        Control::Replay(ReplayControl::Speed(64.0)),
        Control::Replay(ReplayControl::Seek(-10.0)),
        Control::Shared(Shared::Pause(true)),
        Control::Shared(Shared::Pause(false)),
    ] {
        ctl_tx.send(c.to_replay().unwrap()).unwrap();
    }
    // Wait until the worker has taken every control and reached the end.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut positions = Vec::new();
    let mut frames = 0;
    loop {
        match feed_rx.recv_timeout(Duration::from_secs(1)) {
            Ok(Feed::Position(p)) => {
                let ended = p.ended;
                positions.push(p);
                if ended && positions.len() > 3 {
                    break;
                }
            }
            Ok(Feed::Snapshot(_)) => frames += 1,
            Ok(Feed::Error(e)) => panic!("{e}"),
            Ok(_) => {}
            Err(_) => assert!(Instant::now() < deadline, "{positions:?}"),
        }
    }
    ctl_tx.send(Shared::Stop.into()).unwrap();
    drop(feed_rx);
    handle.join().expect("the replay worker panicked");
    assert!(frames >= 3, "{frames}");
    for p in &positions {
        assert!(p.at.is_finite() && (0.0..=1e9).contains(&p.at), "{p:?}");
        assert_eq!(p.total, 1e9);
    }
}

/// `replay --demo`: the banner row says when the recording switches, and
/// past a switch what the panel measured of it (the same figures as the
/// panel's rows, one pair, no direction), moving on as the position passes
/// each switch (issue 16, item 13; issue 32, item 5).
#[test]
fn the_demo_replay_hint_follows_the_recordings_switches() {
    let rec = asset();
    let t0 = Instant::now();
    let screen_at = |start: f64, width: u16| {
        let mut app = replay_app(&rec, start, 1.0);
        app.demo = blktune::tui::app::demo::Demo::recorded(&rec);
        let mut src = ReplaySource::new(Arc::clone(&rec), start, 1.0, t0).unwrap();
        feed(&mut app, src.begin(t0));
        tui_fixture::text(&tui_fixture::screen(&app, width, 24))
    };
    // The banner: the row below the header.
    let banner = |s: &str| {
        let line = s.lines().nth(1).unwrap();
        line.trim_matches('"').trim_end().to_string()
    };
    let before = banner(&screen_at(5.0, 80));
    assert_eq!(before, " DEMO loop2: at 00:30 bfq; at 01:00 mq-deadline");
    // 15 s after the switch to bfq: the reads' p99 as the panel has it.
    let wide = screen_at(45.0, 160);
    let between = banner(&wide);
    let p99 = wide
        .lines()
        .map(|l| l.rsplit('│').next().unwrap())
        .find(|l| l.starts_with("r_p99 "))
        .unwrap();
    let cells: Vec<&str> = p99.split_whitespace().collect();
    assert!(
        between.starts_with(&format!(
            " DEMO loop2: bfq since 00:30: r_p99 {}->{} ms",
            cells[1], cells[2]
        )),
        "{between}\n{wide}"
    );
    assert!(
        between.contains("(one pair); at 01:00 mq-deadline"),
        "{between}"
    );
    // No direction from one pair, and no A/B offered in a replay.
    for word in ["slower", "faster", "A decides"] {
        assert!(!between.contains(word), "{between}");
    }
    // At 80 columns a shorter form, never one cut in half.
    let narrow = banner(&screen_at(45.0, 80));
    assert!(
        narrow.starts_with(" DEMO loop2: bfq since 00:30: r_p99 "),
        "{narrow}"
    );
    assert!(
        narrow.ends_with(" mq-deadline") || narrow.ends_with("(one pair)"),
        "{narrow}"
    );
    let after = banner(&screen_at(75.0, 80));
    assert!(
        after.starts_with(" DEMO loop2: mq-deadline since 01:00: r_"),
        "{after}"
    );
    // A recording that is not the demo has no hint line.
    let app = replay_app(&rec, 5.0, 1.0);
    let s = tui_fixture::text(&tui_fixture::screen(&app, 80, 24));
    assert!(!s.contains("DEMO"), "{s}");
}
