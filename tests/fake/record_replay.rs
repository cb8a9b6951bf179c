//! Recording and replay on a fake tree with scripted counters: the replay
//! must reproduce the live figures, settings and change marks exactly.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::record_support;
use blktune_core::device::{self, BlockDevice};
use blktune_core::diskstats;
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::history::ChangeMark;
use blktune_core::record::{
    ChangeSource, FORMAT_VERSION, Player, Record, RecordError, RecordOptions, Recorder, Recording,
    summarize,
};
use blktune_core::sampler::{RateTracker, Snapshot};
use record_support::*;
use std::sync::Arc;
use std::time::SystemTime;

#[test]
fn replay_reproduces_the_live_rates_settings_and_marks() {
    let s = record_session("session.ndjson", &[]);
    let rec = open(&s.file);
    assert!(rec.notes.is_empty(), "{:?}", rec.notes);
    assert_eq!(rec.header.version, FORMAT_VERSION);
    assert_eq!(rec.header.host.hostname, "testhost");
    assert_eq!(rec.header.devices.len(), 2);
    assert_eq!(rec.end().unwrap().reason, "stopped");

    let frames: Vec<_> = Player::new(Arc::clone(&rec)).unwrap().collect();
    assert_eq!(frames.len(), s.live.len());
    let mut marks = Vec::new();
    for (f, l) in frames.iter().zip(&s.live) {
        let snap = &f.snapshot;
        assert_eq!(snap.t, l.t - ORIGIN);
        assert_eq!(snap.interval, l.interval, "at t={}", snap.t);
        assert_eq!(snap.stats, l.stats, "at t={}", snap.t);
        let q = |d: &[BlockDevice]| {
            d.iter()
                .map(|d| {
                    (
                        d.name.clone(),
                        d.model.clone(),
                        d.size_bytes,
                        d.queue.clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(q(&snap.devices), q(&l.devices), "at t={}", snap.t);
        marks.extend(f.marks.iter().map(|m| (snap.t, m.clone())));
    }
    // Some figures are real numbers, not just "no data".
    let last = &frames.last().unwrap().snapshot;
    assert!(last.ext("sda").unwrap().r_s > 0.0);
    assert!(last.ext("sdb").unwrap().r_s > 0.0);
    // The hot-plugged disk appears in the frame where the live side saw it.
    let has_sdb = |f: &blktune_core::record::Frame| f.snapshot.device("sdb").is_some();
    assert_eq!(frames.iter().position(has_sdb), Some(HOTPLUG_AT));
    assert_eq!(
        last.device("sdb")
            .unwrap()
            .queue
            .scheduler
            .as_ref()
            .unwrap()
            .active,
        "bfq"
    );

    assert_eq!(marks.len(), 2, "{marks:?}");
    let (frame_t, observed) = &marks[0];
    assert_eq!(observed.device, "sda");
    assert_eq!(observed.label, "mq-deadline→kyber");
    assert_eq!(observed.before.scheduler.as_deref(), Some("mq-deadline"));
    assert_eq!(observed.after.scheduler.as_deref(), Some("kyber"));
    let (lo, hi) = s.observed_window;
    assert!(
        observed.t > lo && observed.t < hi,
        "{} not in ({lo}, {hi})",
        observed.t
    );
    assert_eq!(*frame_t, hi, "the mark comes with the frame that saw it");
    // The change made in-process is recorded once, at its exact time.
    let (_, own) = &marks[1];
    let want = ChangeMark {
        t: s.own_mark.t - ORIGIN,
        ..s.own_mark.clone()
    };
    assert_eq!(own, &want);
    let sources: Vec<_> = rec.changes().map(|c| c.source).collect();
    assert_eq!(sources, [ChangeSource::Observed, ChangeSource::Blktune]);
}

#[test]
fn seeking_back_rebuilds_the_same_frames() {
    let s = record_session("seek.ndjson", &[]);
    let rec = open(&s.file);
    let mut p = Player::new(Arc::clone(&rec)).unwrap();
    let first = p.advance_to(6.0);
    assert_eq!(p.position(), first.last().unwrap().snapshot.t);
    assert!(first.iter().all(|f| f.snapshot.t <= 6.0));
    let rest = p.advance_to(f64::INFINITY);
    assert!(p.at_end());
    assert_eq!(first.len() + rest.len(), STEPS);
    let again = p.seek(6.0);
    assert_eq!(again.len(), first.len());
    for (a, b) in again.iter().zip(&first) {
        assert_eq!(a.snapshot.stats, b.snapshot.stats);
        assert_eq!(a.marks, b.marks);
    }
    assert_eq!(
        p.next_frame().unwrap().snapshot.stats,
        rest[0].snapshot.stats
    );
}

#[test]
fn only_named_devices_and_their_partitions_are_recorded() {
    let s = record_session("only.ndjson", &["sda"]);
    let rec = open(&s.file);
    assert_eq!(rec.header.only.as_deref(), Some(&["sda".to_string()][..]));
    let names: Vec<_> = rec.header.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["sda"]);
    for r in rec.records().unwrap() {
        if let Record::Sample(smp) = &r {
            let keys: Vec<_> = smp.disks.keys().map(String::as_str).collect();
            assert_eq!(keys, ["sda", "sda1"]);
        }
    }
    let _ = &s.tree;
}

#[test]
fn an_existing_file_is_never_truncated_without_force() {
    let s = record_session("keep.ndjson", &[]);
    let before = std::fs::read(&s.file).unwrap();
    let root = s.tree.root();
    let devs = device::discover(&root).unwrap();
    let opts = RecordOptions::default();
    let err = Recorder::create(&s.file, &root, &devs, 0.0, &opts).unwrap_err();
    assert!(matches!(err, RecordError::Exists(_)));
    assert!(err.to_string().contains("--force"), "{err}");
    assert_eq!(std::fs::read(&s.file).unwrap(), before);
    let forced = RecordOptions {
        force: true,
        ..opts
    };
    Recorder::create(&s.file, &root, &devs, 0.0, &forced)
        .unwrap()
        .finish("stopped")
        .unwrap();
    assert_eq!(open(&s.file).samples(), 0);
}

#[test]
fn summary_compares_before_and_after_each_change() {
    let s = record_session("summary.ndjson", &[]);
    let rec = open(&s.file);
    let sum = summarize(&rec, Some("testhost")).unwrap();
    assert!(!sum.other_host);
    assert_eq!(sum.samples, STEPS);
    assert_eq!(sum.changes.len(), 2);
    let c = &sum.changes[0];
    let (b, a) = (c.before.unwrap(), c.after.unwrap());
    // Reads grow quadratically in the script, so the rate is higher later.
    assert!(a.r_s > b.r_s, "{b:?} {a:?}");
    assert!(c.pct["r/s"].unwrap() > 0.0);
    // "after" of the first change stops at the second change of sda.
    assert!(a.secs <= sum.changes[1].t - c.t + 1e-9);
    let names: Vec<_> = sum.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["nvme0n1", "sda", "sdb"]);
    let sda = sum.devices.iter().find(|d| d.name == "sda").unwrap();
    assert_eq!(sda.scheduler_first.as_deref(), Some("mq-deadline"));
    assert_eq!(sda.scheduler_last.as_deref(), Some("none"));
    let text = sum.to_text();
    assert!(text.contains("mq-deadline→kyber"), "{text}");
    assert!(text.contains("r_await"), "{text}");
    // The comparison engine's word on one before and one after: one pair,
    // no interval, undecided, in the one number format.
    let v = c.verdict.as_ref().unwrap();
    assert_eq!(v.answer, blktune_core::compare::Answer::Undecided);
    let rs = v
        .effects
        .iter()
        .find(|e| e.metric == blktune_core::compare::Metric::RS)
        .unwrap();
    assert_eq!((rs.pairs, rs.lo), (1, None));
    assert!((rs.change * 100.0 - c.pct["r/s"].unwrap()).abs() < 1e-6);
    assert!(
        v.line()
            .starts_with("undecided: one before and one after give no interval (r_await "),
        "{}",
        v.line()
    );
    let json = serde_json::to_value(&sum).unwrap();
    assert_eq!(json["changes"][0]["verdict"]["answer"], "undecided");
}

// ---- gzip ----

#[test]
fn gzip_recordings_read_back_like_plain_ones() {
    let plain = record_session("same.ndjson", &[]);
    let gz = record_session("same.ndjson.gz", &[]);
    let raw = std::fs::read(&gz.file).unwrap();
    assert_eq!(&raw[..2], &[0x1f, 0x8b], "not gzip");
    let (a, b) = (open(&plain.file), open(&gz.file));
    assert!(b.notes.is_empty(), "{:?}", b.notes);
    // Only the wall-clock fields differ between the two runs.
    let strip = |r: &Record| match r {
        Record::Sample(s) => Record::Sample(blktune_core::record::Sample {
            wall: 0.0,
            ..s.clone()
        }),
        Record::End(e) => Record::End(blktune_core::record::EndRecord {
            wall: 0.0,
            ..e.clone()
        }),
        r => r.clone(),
    };
    let ra: Vec<_> = a.records().unwrap().map(|r| strip(&r)).collect();
    let rb: Vec<_> = b.records().unwrap().map(|r| strip(&r)).collect();
    assert_eq!(ra, rb);
}

#[test]
fn a_gzip_file_whose_writer_died_still_yields_its_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(&dir.path().join("tree")).unwrap();
    tree.add(&FakeDisk::new("sda")).unwrap();
    let root = tree.root();
    let devs = device::discover(&root).unwrap();
    let file = dir.path().join("killed.ndjson.gz");
    let mut rec = Recorder::create(&file, &root, &devs, 0.0, &RecordOptions::default()).unwrap();
    let mut rates = RateTracker::default();
    let mut write = |rec: &mut Recorder, i: usize| {
        let t = i as f64;
        tree.set_diskstats(&[("sda", 8, 0, counters(i as u64, 1))])
            .unwrap();
        let (lines, _) = diskstats::parse(&root.read_diskstats().unwrap());
        let interval = rates.last_interval(t);
        let stats = rates.update(t, &lines);
        rec.snapshot(&Snapshot {
            wall: SystemTime::now(),
            t,
            interval,
            devices: Arc::new(devs.clone()),
            refreshed: false,
            stats,
            iowait_pct: None,
            cpu_busy_pct: None,
            pressure: None,
            warnings: Vec::new(),
        })
        .unwrap();
    };
    for i in 1..=10 {
        write(&mut rec, i);
    }
    rec.flush().unwrap();
    for i in 11..=12 {
        write(&mut rec, i);
    }
    // The file as a killed process leaves it: no trailer, the last records unflushed.
    let snapshot = std::fs::read(&file).unwrap();
    drop(rec);
    let copy = dir.path().join("copy.ndjson.gz");
    std::fs::write(&copy, &snapshot).unwrap();
    let r = open(&copy);
    assert_eq!(r.samples(), 10, "{:?}", r.notes);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("compressed data ends early")),
        "{:?}",
        r.notes
    );
    assert!(
        r.notes.iter().any(|n| n.contains("no end record")),
        "{:?}",
        r.notes
    );
    // Cut anywhere inside the compressed data: never an error, always a prefix.
    let mut seen = Vec::new();
    for cut in (30..snapshot.len()).step_by(7).chain([snapshot.len()]) {
        std::fs::write(&copy, &snapshot[..cut]).unwrap();
        if let Ok(r) = Recording::open(&copy) {
            seen.push(r.samples());
        }
    }
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&10));
}

#[test]
fn a_jump_returns_a_bounded_batch_and_keeps_the_marks_of_frames_left_out() {
    use blktune_core::record::MAX_BATCH_STATS;
    use std::fmt::Write as _;
    const DISKS: usize = 3000;
    const SAMPLES: usize = 100;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.ndjson");
    let mut text = String::from(
        r#"{"type":"header","version":1,"tool":"blktune 0.1.0","started_wall":1767323045.0,"started":"2026-01-02T03:04:05Z","interval_s":1.0,"host":{"hostname":"h","kernel":"6.18.0","uptime_s":100.0},"devices":[{"name":"d0","major":8,"minor":0,"kind":"ssd","size_bytes":1000000}]}"#,
    );
    text.push('\n');
    for i in 0..SAMPLES {
        if i == 1 {
            text.push_str(r#"{"type":"change","t":0.5,"device":"d0","label":"none→kyber","source":"observed","before":{"scheduler":"none","tunables":[]},"after":{"scheduler":"kyber","tunables":[]}}"#);
            text.push('\n');
        }
        write!(
            text,
            r#"{{"type":"sample","t":{i},"wall":{},"disks":{{"#,
            1.7e9 + i as f64
        )
        .unwrap();
        for d in 0..DISKS {
            let sep = if d > 0 { "," } else { "" };
            write!(text, r#"{sep}"d{d}":[{i},0,{i},{i},0,0,0,0,0,{i},{i}]"#).unwrap();
        }
        text.push_str("}}\n");
    }
    std::fs::write(&path, text).unwrap();
    let rec = open(&path);
    assert_eq!(rec.samples(), SAMPLES);
    let want = MAX_BATCH_STATS / DISKS;
    for jump in ["advance", "seek"] {
        let mut p = Player::new(Arc::clone(&rec)).unwrap();
        let got = match jump {
            "advance" => p.advance_to(f64::INFINITY),
            _ => p.seek_window(f64::INFINITY, f64::INFINITY),
        };
        assert_eq!(got.len(), want, "{jump}");
        assert_eq!(got.last().unwrap().snapshot.t, (SAMPLES - 1) as f64);
        let marks: Vec<_> = got.iter().flat_map(|f| &f.marks).collect();
        assert_eq!(marks.len(), 1, "{jump}");
        assert_eq!(
            got[0].marks.len(),
            1,
            "{jump}: the mark comes with the first frame"
        );
        assert!(p.at_end());
    }
}

// ---- the summary's percents follow the noise rules ----

/// A recording of sda alone, one sample a second: reads at `r_before` ms
/// for `before` intervals, a switch to kyber seen in sysfs, then `after`
/// intervals at `r_after` ms. Each figure alternates a little around its
/// level (a spread, as a real device has); writes do not move.
fn switch_recording(
    name: &str,
    before: usize,
    r_before: f64,
    after: usize,
    r_after: f64,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(&dir.path().join("tree")).unwrap();
    tree.add(&FakeDisk::new("sda")).unwrap();
    let root = tree.root();
    let file = dir.path().join(name);
    let mut devices = Arc::new(device::discover(&root).unwrap());
    let opts = RecordOptions {
        force: false,
        only: Vec::new(),
        interval: std::time::Duration::from_secs(1),
        checked_within: std::time::Duration::from_secs(1),
    };
    let mut rec = Recorder::create(&file, &root, &devices, ORIGIN, &opts).unwrap();
    let mut rates = RateTracker::default();
    let mut c = blktune_core::diskstats::Counters::default();
    for i in 0..=before + after {
        if i > 0 {
            let ms = if i <= before { r_before } else { r_after };
            let wobble = if i % 2 == 0 { 1.02 } else { 0.98 };
            let reads = 1000;
            c.rd_ios += reads;
            c.rd_sectors += reads * 8;
            c.rd_ticks += (reads as f64 * ms * wobble) as u32;
            c.wr_ios += 100;
            c.wr_sectors += 100 * 8;
            c.wr_ticks += 700;
            c.io_ticks += 900;
            c.time_in_queue += (reads as f64 * ms) as u32 + 700;
        }
        tree.set_diskstats(&[("sda", 8, 0, c)]).unwrap();
        // The switch happens during the first interval after `before`.
        if i == before + 1 {
            switch(&tree, "sda", "kyber", 256);
            devices = Arc::new(device::discover(&root).unwrap());
        }
        let t = ORIGIN + i as f64;
        let (lines, _) = diskstats::parse(&root.read_diskstats().unwrap());
        let interval = rates.last_interval(t);
        let stats = rates.update(t, &lines);
        rec.snapshot(&Snapshot {
            wall: SystemTime::now(),
            t,
            interval,
            devices: Arc::clone(&devices),
            refreshed: true,
            stats,
            iowait_pct: None,
            cpu_busy_pct: None,
            pressure: None,
            warnings: Vec::new(),
        })
        .unwrap();
    }
    rec.finish("stopped").unwrap();
    (dir, file)
}

/// The summary text's row of `label` under the first change.
fn summary_row(text: &str, label: &str) -> String {
    text.lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label} row:\n{text}"))
        .to_string()
}

#[test]
fn the_summary_gives_no_percent_from_a_one_second_before() {
    // One interval (1 s) before the switch, then 20 s of 1 ms reads: a
    // 5 ms -> 1 ms drop, but "before" is one interval long.
    let (_dir, file) = switch_recording("short.ndjson", 1, 5.0, 20, 1.0);
    let sum = summarize(&open(&file), None).unwrap();
    assert_eq!(sum.changes.len(), 1, "{:?}", sum.changes);
    let c = &sum.changes[0];
    assert_eq!(c.before.unwrap().intervals, 1);
    assert_eq!(c.pct["r_await"], None, "{:?}", c.pct);
    assert!(c.pct.values().all(Option::is_none), "{:?}", c.pct);
    assert_eq!(c.change["r_await"], "short");
    let text = sum.to_text();
    let r = summary_row(&text, "r_await");
    assert!(r.ends_with("short") && !r.contains('%'), "{r}\n{text}");
    // The JSON says the same: no percent, the word.
    let v = serde_json::to_value(&sum).unwrap();
    assert!(v["changes"][0]["pct"]["r_await"].is_null(), "{v}");
    assert_eq!(v["changes"][0]["change"]["r_await"], "short");
}

#[test]
fn the_summary_gives_a_percent_for_a_clear_change_and_marks_noise() {
    let (_dir, file) = switch_recording("clear.ndjson", 20, 5.0, 20, 1.0);
    let sum = summarize(&open(&file), None).unwrap();
    let c = &sum.changes[0];
    let p = c.pct["r_await"].unwrap();
    assert!((p + 80.0).abs() < 1.0, "{p}");
    let text = sum.to_text();
    // The means with their spread, the percent as the TUI shows it.
    let r = summary_row(&text, "r_await");
    assert!(
        r.contains("5.00±0.10 ms") && r.ends_with("-80%"),
        "{r}\n{text}"
    );
    // Writes did not move: inside the noise, marked, and no percent in the JSON.
    let w = summary_row(&text, "w_await");
    assert!(w.ends_with("~+0%"), "{w}\n{text}");
    assert_eq!(c.pct["w_await"], None);
    assert!(text.contains("~ a move inside the noise"), "{text}");
}
