//! The kernel's latency histograms from the live TUI to its recording (`R`)
//! and back into the full-screen replay: a scripted session on a fake tree,
//! traced with synthetic histograms, is recorded by the live recorder and
//! replayed through the replay worker into a second App; the p99 column,
//! the latency history and the before/after rows equal the live ones, also
//! after a seek back. A recording without histograms says why there are no
//! percentiles.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::App;
use blktune::tui::command::action_for;
use blktune::tui::replay::replay_app;
use blktune::tui::worker::latency::{LatencyFeed, sample_of};
use blktune::tui::worker::protocol::Feed;
use blktune::tui::worker::recorder::{LiveRecorder, RecordEvent};
use blktune::tui::worker::replay::ReplaySource;
use blktune_core::latency::hist::Hist;
use blktune_core::latency::{DevId, DeviceInterval, Dir, Interval, Span};
use blktune_core::record::Recording;
use blktune_core::record::latency::LatencyFacts;
use blktune_core::sampler::Sampler;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tui_fixture::*;

/// Seconds before and after the switch (the before window is 60 s: the
/// replay's first frame, which has no rates, falls outside it).
const BEFORE: usize = 90;
const AFTER: usize = 20;

/// `n` I/Os of about `ms`, a fraction `tail` of them `tail_ms`.
fn hist(n: u64, ms: f64, tail: f64, tail_ms: f64) -> Hist {
    lat_hist(n, ms, tail, tail_ms).to_hist().unwrap()
}

/// What the tracer reads after one second: sda's reads (3% held to 12 ms by
/// mq-deadline before the switch) and writes, sdb's few reads; both spans.
fn interval(m: &Machine, switched: bool) -> Interval {
    let dev = |name: &str| m.devices.iter().find(|d| d.name == name).unwrap();
    let mut devices = BTreeMap::new();
    let mut add = |name: &str, hists: Vec<((Span, Dir), Hist)>| {
        let d = dev(name);
        devices.insert(
            DevId {
                major: d.major,
                minor: d.minor,
            },
            DeviceInterval {
                diskseq: d.diskseq.unwrap_or(0),
                hists: hists.into_iter().collect(),
                reset: false,
            },
        );
    };
    let (r_ms, tail) = if switched { (1.0, 0.0) } else { (4.0, 0.03) };
    add(
        "sda",
        vec![
            ((Span::Total, Dir::Read), hist(800, r_ms, tail, 12.0)),
            ((Span::Device, Dir::Read), hist(800, 0.9, 0.0, 0.0)),
            ((Span::Total, Dir::Write), hist(40, 10.0, 0.0, 0.0)),
            ((Span::Device, Dir::Write), hist(40, 8.0, 0.0, 0.0)),
            // Kept in the file, not shown by the TUI.
            ((Span::Total, Dir::Flush), hist(5, 2.0, 0.0, 0.0)),
        ],
    );
    add(
        "sdb",
        vec![
            ((Span::Total, Dir::Read), hist(20, 12.0, 0.0, 0.0)),
            ((Span::Device, Dir::Read), hist(20, 10.0, 0.0, 0.0)),
        ],
    );
    Interval { devices, lost: 0 }
}

/// A live session recorded by `R`: what the live view was sent, and the file.
struct Session {
    live: App,
    file: PathBuf,
    _m: Machine,
    _dir: tempfile::TempDir,
}

/// The live worker's order per tick: the snapshot, then the histograms of
/// its interval; the recorder gets the very interval the app is sent.
fn live_session() -> Session {
    session(None)
}

/// [`live_session`], where the issue program's attach fails before tick
/// `fail_at` (as the live worker tells both: the app and the recorder).
fn session(fail_at: Option<usize>) -> Session {
    let mut m = Machine::three();
    let mut live = m.app(None);
    live.on_feed(Feed::Latency(LatencyFeed::Tracing));
    let sampler = Sampler::new(m.tree.root()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.ndjson.gz");
    let mut rec = LiveRecorder::default();
    let traced = LatencyFacts {
        traced: true,
        unavailable: None,
    };
    assert_eq!(
        rec.start(&file, &sampler, 0.0, Duration::from_secs(1), Some(traced)),
        Some(RecordEvent::Started(file.clone()))
    );
    let tick = |m: &mut Machine, live: &mut App, rec: &mut LiveRecorder, switched| {
        let s = m.step(1.0, &busy(if switched { 1 } else { 4 }));
        let i = interval(m, switched);
        let sample = sample_of(&i, &s).unwrap();
        assert_eq!(rec.snapshot(&s, Some(&i)), None);
        live.on_feed(Feed::Snapshot(Box::new(s)));
        live.on_feed(Feed::Latency(LatencyFeed::Sample(sample)));
    };
    for i in 0..BEFORE {
        if fail_at == Some(i) {
            let why = "block_rq_issue: EPERM".to_string();
            rec.no_device_span(&why);
            live.on_feed(Feed::Latency(LatencyFeed::NoDeviceSpan(why)));
        }
        // Told again (by `R`'s start after a shoot-out's dwell failed, then
        // by the tick that takes the failure): the file still says it once.
        if fail_at.is_some_and(|f| i == f + 1) {
            rec.no_device_span("block_rq_issue: EPERM");
        }
        tick(&mut m, &mut live, &mut rec, false);
    }
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    rec.change(&mark);
    live.on_feed(Feed::Change(mark));
    for _ in 0..AFTER {
        tick(&mut m, &mut live, &mut rec, true);
    }
    assert!(matches!(rec.stop(), Some(RecordEvent::Stopped { .. })));
    Session {
        live,
        file,
        _m: m,
        _dir: dir,
    }
}

/// A recording's text (it is gzip-compressed).
fn unzipped(file: &Path) -> String {
    let out = std::process::Command::new("zcat")
        .arg(file)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// The recording played to its end into a replay App.
fn replayed(file: &Path) -> (App, ReplaySource, Instant) {
    let rec = Arc::new(Recording::open(file).unwrap());
    let mut app = replay_app(&rec, 0.0, 1.0);
    let t0 = Instant::now();
    let mut src = ReplaySource::new(Arc::clone(&rec), 0.0, 1.0, t0).unwrap();
    for f in src.begin(t0) {
        app.on_feed(f);
    }
    let end = t0 + Duration::from_secs(1000);
    for f in src.step(end) {
        app.on_feed(f);
    }
    assert!(app.replay.as_ref().unwrap().ended);
    (app, src, end)
}

/// The before/after panel's cell starting with `name` (160x48).
fn cell(app: &App, name: &str) -> String {
    let s = text(&screen(app, 160, 48));
    s.lines()
        .find_map(|l| l.split('│').find(|c| c.starts_with(name)))
        .unwrap_or_else(|| panic!("no {name} in {s}"))
        .trim_end_matches([' ', '"'])
        .to_string()
}

/// The table row of a device (160x48), from its name to the end.
fn row(app: &App, dev: &str) -> String {
    let s = text(&screen(app, 160, 48));
    let l = s
        .lines()
        .find(|l| l.contains(&format!(" {dev} ")))
        .unwrap_or_else(|| panic!("no {dev} in {s}"));
    l[l.find(dev).unwrap()..].to_string()
}

#[test]
fn a_replay_shows_the_p99_and_before_after_rows_the_live_view_showed() {
    let s = live_session();
    // The file has sda's histograms, flushes included.
    let text_of = unzipped(&s.file);
    let header = text_of.lines().next().unwrap();
    assert!(header.contains(r#""latency":{"traced":true}"#), "{header}");
    let sample = text_of.lines().find(|l| l.contains(r#""t":5.0"#)).unwrap();
    for k in [r#""r":"#, r#""r_dev":"#, r#""w":"#, r#""f":"#] {
        assert!(sample.contains(k), "{k} in {sample}");
    }

    let (replay, _src, _) = replayed(&s.file);
    assert_eq!(
        replay.latency.tracing,
        blktune::tui::app::Tracing::On,
        "the header's word"
    );
    // The pooled windows around the switch are the live ones, exactly.
    let want = s.live.latency_compare("sda", 0).unwrap();
    let got = replay.latency_compare("sda", 0).unwrap();
    assert_eq!(got, want);
    let (b, a) = (got.0.unwrap(), got.1.unwrap());
    assert_eq!((b.intervals, a.intervals), (60, AFTER));
    // On screen: the before/after rows, filled, and the table's p99 column.
    for name in [
        "  I/Os ", "r_p50 ", "r_p99 ", "r_p99.9 ", "r_dev99 ", "w_dev99 ",
    ] {
        assert_eq!(cell(&replay, name), cell(&s.live, name), "{name}");
    }
    // And the engine's reading of them, controls included.
    assert_eq!(
        replay.change_verdict("sda", 0),
        s.live.change_verdict("sda", 0)
    );
    let p99 = cell(&replay, "r_p99 ");
    assert!(p99.contains("12.") && p99.contains("-9"), "{p99}");
    for dev in ["sda", "sdb"] {
        assert_eq!(row(&replay, dev), row(&s.live, dev), "{dev}");
    }
    assert!(
        row(&replay, "sdb").contains("n=20"),
        "{}",
        row(&replay, "sdb")
    );
    let small = text(&screen(&replay, 80, 24));
    assert!(
        small.contains("r_p99") && !small.contains("no p99"),
        "{small}"
    );
}

#[test]
fn a_seek_back_refeeds_the_histograms_of_the_window_only() {
    let s = live_session();
    let (mut replay, mut src, end) = replayed(&s.file);
    // ← from the end: reset, then the window up to 10 s before it.
    let a = action_for(
        replay.mode(),
        &KeyEvent::new(KeyCode::Left, KeyModifiers::NONE),
    )
    .unwrap();
    let mut resets = 0;
    for c in replay.on_action(a) {
        for f in src.control(&c.to_replay().unwrap(), end) {
            resets += usize::from(matches!(f, Feed::Reset));
            replay.on_feed(f);
        }
    }
    assert_eq!(resets, 1);
    let at = replay.now;
    assert!((at - (BEFORE + AFTER - 10) as f64).abs() < 1e-9, "{at}");
    // Every point once, none after the new position.
    let h = replay.latency_points("sda").unwrap();
    assert!(h.iter().all(|p| p.t <= at + 1e-9));
    assert!(h.iter().zip(h.iter().skip(1)).all(|(a, b)| a.t < b.t));
    let (b, a) = replay.latency_compare("sda", 0).unwrap();
    let want = s.live.latency_compare("sda", 0).unwrap().0;
    assert_eq!(b, want, "the before window is the live one");
    assert_eq!(a.unwrap().intervals, AFTER - 10);
    assert_eq!(replay.latency.tracing, blktune::tui::app::Tracing::On);
    assert!(cell(&replay, "r_p99 ").contains("12."));
}

#[test]
fn a_recording_without_histograms_says_they_were_not_recorded() {
    // A recording made by a build that did not record histograms: its
    // header has no latency facts at all.
    let m = Machine::three();
    let sampler = Sampler::new(m.tree.root()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.ndjson");
    let mut rec = LiveRecorder::default();
    rec.start(&p, &sampler, 0.0, Duration::from_secs(1), None);
    let mut m = m;
    for _ in 0..5 {
        let s = m.step(1.0, &busy(4));
        assert_eq!(rec.snapshot(&s, None), None);
    }
    rec.stop();
    let rec = Recording::open(&p).unwrap();
    assert!(rec.header.latency.is_none());
    let (app, _, _) = replayed(&p);
    let s = text(&screen(&app, 160, 48));
    assert!(s.contains("no p99: not recorded"), "{s}");
    assert!(app.latency.is_empty());
    let dev = &rec.devices()[0].name;
    assert!(!row(&app, dev).contains("n="), "{}", row(&app, dev));
}

#[test]
fn an_untraced_recording_gives_the_recorders_reason() {
    let m = Machine::three();
    let sampler = Sampler::new(m.tree.root()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("untraced.ndjson");
    let mut rec = LiveRecorder::default();
    let why = LatencyFacts {
        traced: false,
        unavailable: Some("needs root".into()),
    };
    rec.start(&file, &sampler, 0.0, Duration::from_secs(1), Some(why));
    let mut m = m;
    for _ in 0..5 {
        let s = m.step(1.0, &busy(4));
        assert_eq!(rec.snapshot(&s, None), None);
    }
    rec.stop();
    let (app, _, _) = replayed(&file);
    let s = text(&screen(&app, 160, 48));
    assert!(s.contains("no p99: not recorded (needs root)"), "{s}");
    assert!(app.latency.is_empty());
}

/// Tracing stopped while `R` recorded (the live worker then has no interval
/// to give): those samples say so, and the replay shows them as not traced
/// (`-`), not as idle; the completions the kernel could not count come
/// back as the live header's `lost`.
#[test]
fn intervals_recorded_after_tracing_stopped_replay_as_not_traced() {
    let mut m = Machine::three();
    let sampler = Sampler::new(m.tree.root()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stopped.ndjson");
    let mut rec = LiveRecorder::default();
    let traced = LatencyFacts {
        traced: true,
        unavailable: None,
    };
    rec.start(&file, &sampler, 0.0, Duration::from_secs(1), Some(traced));
    let mut traced_until = 0.0;
    for _ in 0..10 {
        let s = m.step(1.0, &busy(4));
        let i = Interval {
            lost: 2,
            ..interval(&m, false)
        };
        assert_eq!(rec.snapshot(&s, Some(&i)), None);
        traced_until = s.t;
    }
    for _ in 0..3 {
        let s = m.step(1.0, &busy(4));
        assert_eq!(rec.snapshot(&s, None), None);
    }
    rec.stop();
    let text_of_file = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text_of_file.matches("\"untraced\":true").count(), 3);
    let (app, _, _) = replayed(&file);
    assert!(app.now > traced_until + 1.0);
    assert_eq!(
        app.latency_now("sda", Dir::Read),
        None,
        "not traced, not idle"
    );
    let h = app.latency_points("sda").unwrap();
    assert!(h.back().unwrap().t <= traced_until + 1e-9, "no point after");
    // The first sample has no rates in a replay (nothing before it to
    // compare): its interval is not shown, nor its lost completions.
    assert_eq!(app.latency.lost, 18);
    let s = text(&screen(&app, 160, 48));
    assert!(s.contains("lost 18 I/Os"), "{s}");
}

/// The issue program's failure is in the recording, once, with the sample
/// after it; a replay says `no dev span` in its header from there on, as
/// the live view did, also after a seek back (the frames after it carry
/// it); a recording without the failure says nothing of it.
#[test]
fn a_failed_issue_program_is_recorded_and_replayed() {
    let s = session(Some(30));
    let text_of = unzipped(&s.file);
    let said: Vec<&str> = (text_of.lines())
        .filter(|l| l.contains("no_dev_span"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains(r#""no_dev_span":"block_rq_issue: EPERM""#),
        "{}",
        said[0]
    );
    let header = |app: &App| {
        text(&screen(app, 160, 48))
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    assert!(
        header(&s.live).contains("no dev span"),
        "{}",
        header(&s.live)
    );

    let (mut replay, mut src, end) = replayed(&s.file);
    assert!(replay.latency.no_device_span);
    assert!(
        header(&replay).contains("no dev span"),
        "{}",
        header(&replay)
    );
    // ← from the end: the window refed from 10 s before it still says it;
    // back before the failure (t = 30 s), it no longer does.
    let left = action_for(
        replay.mode(),
        &KeyEvent::new(KeyCode::Left, KeyModifiers::NONE),
    )
    .unwrap();
    let mut back = |replay: &mut App| {
        for c in replay.on_action(left) {
            for f in src.control(&c.to_replay().unwrap(), end) {
                replay.on_feed(f);
            }
        }
    };
    back(&mut replay);
    assert!(replay.latency.no_device_span);
    while replay.now > 25.0 {
        back(&mut replay);
    }
    assert!(!replay.latency.no_device_span, "at {}", replay.now);
    assert!(
        !header(&replay).contains("no dev span"),
        "{}",
        header(&replay)
    );

    // `blktune replay`'s summary says it too, in text and JSON.
    let (_, sum) = blktune_core::record::summarize_file(&s.file, None).unwrap();
    assert!(
        sum.to_text().contains(
            "no device span from some point on: the issue program could \
             not be attached (block_rq_issue: EPERM)"
        ),
        "{}",
        sum.to_text()
    );
    let v = serde_json::to_value(&sum).unwrap();
    assert_eq!(v["latency_no_dev_span"], "block_rq_issue: EPERM");

    let clean_session = live_session();
    let (_, sum) = blktune_core::record::summarize_file(&clean_session.file, None).unwrap();
    assert!(
        serde_json::to_value(&sum)
            .unwrap()
            .get("latency_no_dev_span")
            .is_none()
    );
    let (clean, _, _) = replayed(&clean_session.file);
    assert!(!clean.latency.no_device_span);
    assert!(
        !header(&clean).contains("no dev span"),
        "{}",
        header(&clean)
    );
}
