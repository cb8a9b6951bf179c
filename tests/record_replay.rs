//! Recording and replay on a fake tree with scripted counters: the replay
//! must reproduce the live figures, settings and change marks exactly; bad
//! files must give the documented notes and errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune::device::{self, BlockDevice};
use blktune::diskstats::{self, Counters};
use blktune::fake::{FakeDisk, FakeTree};
use blktune::history::ChangeMark;
use blktune::record::{
    ChangeSource, FORMAT_VERSION, Player, Record, RecordError, RecordOptions, Recorder, Recording,
    summarize,
};
use blktune::sampler::{DeviceStat, RateTracker, Snapshot};
use blktune::tuner::Settings;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const SCHEDS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];
/// The live clock's time when recording starts; a dyadic value so that
/// subtracting it is exact and the replayed intervals equal the live ones.
const ORIGIN: f64 = 100.0;
const STEPS: usize = 24;
/// The step at which another process switches sda to kyber.
const OBSERVED_AT: usize = 8;
/// The step before which this process switches sda to none (TUI-style).
const OWN_AT: usize = 16;
/// The step at which a disk sdb is plugged in (a refresh step).
const HOTPLUG_AT: usize = 20;

/// What the live side saw at one tick.
struct LiveTick {
    t: f64,
    interval: Option<f64>,
    stats: BTreeMap<String, DeviceStat>,
    devices: Arc<Vec<BlockDevice>>,
}

struct Session {
    _dir: tempfile::TempDir,
    tree: FakeTree,
    file: PathBuf,
    live: Vec<LiveTick>,
    own_mark: ChangeMark,
    observed_window: (f64, f64),
}

fn counters(step: u64, scale: u64) -> Counters {
    let reads = 100 * step * step * scale;
    let writes = 40 * step * scale;
    Counters {
        rd_ios: reads,
        rd_merges: reads / 10,
        rd_sectors: reads * 8,
        rd_ticks: (reads * 3 / 2) as u32,
        wr_ios: writes,
        wr_merges: writes / 4,
        wr_sectors: writes * 256,
        wr_ticks: (writes * 7) as u32,
        in_flight: step % 5,
        io_ticks: (step * 450) as u32,
        time_in_queue: (step * 900 + reads) as u32,
        ..Counters::default()
    }
}

/// Switch a fake device's scheduler the way the kernel shows it afterwards.
fn switch(tree: &FakeTree, dev: &str, to: &str, nr: u64) {
    std::fs::write(tree.dev_dir(dev).join("queue/scheduler"), format!("{to}\n")).unwrap();
    tree.settle(dev, &SCHEDS, nr).unwrap();
}

fn tick_time(i: usize) -> f64 {
    // Uneven but exactly representable intervals around 0.5 s.
    ORIGIN + i as f64 * 0.5 + (i % 3) as f64 * 0.125
}

/// Record a scripted session, computing the live figures the way the
/// sampler does (same parser, same RateTracker), with synthetic times.
fn record_session(name: &str, only: &[&str]) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(&dir.path().join("tree")).unwrap();
    tree.add(
        &FakeDisk::new("sda")
            .model("Fake SSD", Some("ACME"))
            .partitions(&["sda1"]),
    )
    .unwrap();
    tree.add(&FakeDisk::new("nvme0n1").dev(259, 0).active("none"))
        .unwrap();
    let root = tree.root();
    let file = dir.path().join(name);
    let mut devices = Arc::new(device::discover(&root).unwrap());
    let opts = RecordOptions {
        force: false,
        only: only.iter().map(|s| s.to_string()).collect(),
        interval: Duration::from_millis(500),
    };
    let mut rec = Recorder::create(&file, &root, &devices, ORIGIN, &opts).unwrap();
    let mut rates = RateTracker::default();
    let mut live = Vec::new();
    let mut own_mark = None;
    let mut observed_window = (0.0, 0.0);
    let mut last_refresh_t = ORIGIN;
    for i in 0..STEPS {
        let t = tick_time(i);
        let s = i as u64;
        let mut lines = vec![
            ("sda", 8, 0, counters(s, 3)),
            ("sda1", 8, 1, counters(s, 2)),
            ("nvme0n1", 259, 0, counters(s * 2, 5)),
        ];
        if i >= HOTPLUG_AT {
            if i == HOTPLUG_AT {
                tree.add(&FakeDisk::new("sdb").dev(8, 16).active("bfq"))
                    .unwrap();
            }
            lines.push(("sdb", 8, 16, counters(s - 10, 1)));
        }
        tree.set_diskstats(&lines).unwrap();
        let mut refreshed = i % 4 == 0;
        if i == OBSERVED_AT {
            // Another process (blktune set in another shell) switches sda.
            switch(&tree, "sda", "kyber", 256);
            refreshed = true;
            observed_window = (last_refresh_t - ORIGIN, t - ORIGIN);
        }
        if i == OWN_AT {
            // This process switches sda, between two ticks, and says so.
            let dev = root.device("sda").unwrap();
            let before = Settings::snapshot_of(&device::QueueSettings::read(&root, &dev));
            switch(&tree, "sda", "none", 128);
            let after = Settings::snapshot_of(&device::QueueSettings::read(&root, &dev));
            let mark = ChangeMark {
                device: "sda".into(),
                t: t - 0.25,
                label: "kyber→none, nr_requests 256→128".into(),
                before,
                after,
            };
            rec.change(&mark).unwrap();
            own_mark = Some(mark);
            refreshed = true;
        }
        if refreshed {
            devices = Arc::new(device::discover(&root).unwrap());
            last_refresh_t = t;
        }
        let (lines, bad) = diskstats::parse(&root.read_diskstats().unwrap());
        assert!(bad.is_empty());
        let interval = rates.last_interval(t);
        let stats = rates.update(t, &lines);
        let snap = Snapshot {
            wall: SystemTime::now(),
            t,
            interval,
            devices: Arc::clone(&devices),
            refreshed,
            stats: stats.clone(),
            iowait_pct: Some(i as f64),
            warnings: Vec::new(),
        };
        rec.snapshot(&snap).unwrap();
        live.push(LiveTick {
            t,
            interval,
            stats,
            devices: Arc::clone(&devices),
        });
    }
    let stats = rec.finish("stopped").unwrap();
    assert_eq!(stats.samples, STEPS as u64);
    Session {
        _dir: dir,
        tree,
        file,
        live,
        own_mark: own_mark.unwrap(),
        observed_window,
    }
}

fn open(path: &Path) -> Arc<Recording> {
    Arc::new(Recording::open(path).unwrap())
}

#[test]
fn replay_reproduces_the_live_rates_settings_and_marks() {
    let s = record_session("session.ndjson", &[]);
    let rec = open(&s.file);
    assert!(rec.notes.is_empty(), "{:?}", rec.notes);
    assert_eq!(rec.header.version, FORMAT_VERSION);
    assert_eq!(rec.header.host.hostname, "testhost");
    assert_eq!(rec.header.devices.len(), 2);
    assert_eq!(rec.end().unwrap().reason, "stopped");

    let frames: Vec<_> = Player::new(Arc::clone(&rec)).collect();
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
    let has_sdb = |f: &blktune::record::Frame| f.snapshot.device("sdb").is_some();
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
    let mut p = Player::new(Arc::clone(&rec));
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
    for r in &rec.records {
        if let Record::Sample(smp) = r {
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
    let sum = summarize(&rec, Some("testhost"));
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
}

// ---- damaged and foreign files ----

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_cut_off_last_line_is_dropped_with_a_note() {
    let s = record_session("cut.ndjson", &[]);
    let mut bytes = std::fs::read(&s.file).unwrap();
    let full = open(&s.file);
    // Drop the end record and half of the last sample, as a kill mid-write does.
    let lines = lines_of(&s.file);
    let end_len = lines.last().unwrap().len() + 1;
    bytes.truncate(bytes.len() - end_len - 40);
    std::fs::write(&s.file, &bytes).unwrap();
    let cut = open(&s.file);
    assert_eq!(cut.samples(), full.samples() - 1);
    let n = lines.len() - 1;
    assert!(
        cut.notes
            .iter()
            .any(|m| m.contains(&format!("line {n} is cut off"))),
        "{:?}",
        cut.notes
    );
    assert!(cut.notes.iter().any(|m| m.contains("no end record")));
    // Everything before is intact and plays.
    assert_eq!(Player::new(cut).count(), STEPS - 1);
}

#[test]
fn a_corrupt_line_in_the_middle_is_skipped_and_named() {
    let s = record_session("corrupt.ndjson", &[]);
    let mut lines = lines_of(&s.file);
    let idx = lines.iter().position(|l| l.contains("\"sample\"")).unwrap() + 5;
    assert!(lines[idx].contains("\"sample\""));
    lines[idx] = lines[idx][..30].to_string() + "\u{0}garbage";
    lines.insert(idx + 2, "{\"type\":\"hologram\",\"t\":1}".into());
    // A sample whose sda counters have a wrong count is used for the other devices.
    let bad = lines
        .iter()
        .rposition(|l| l.contains("\"sample\""))
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&lines[bad]).unwrap();
    let mut v = v;
    v["disks"]["sda"].as_array_mut().unwrap().push(0.into());
    lines[bad] = v.to_string();
    std::fs::write(&s.file, lines.join("\n") + "\n").unwrap();
    let rec = open(&s.file);
    assert_eq!(rec.samples(), STEPS - 1);
    assert_eq!(rec.notes.len(), 2, "{:?}", rec.notes);
    assert!(
        rec.notes[0].contains(&format!("line {}:", idx + 1)),
        "{:?}",
        rec.notes
    );
    assert!(
        rec.notes[1].contains(&format!("line {}:", idx + 3)),
        "{:?}",
        rec.notes
    );
    assert!(rec.end().is_some());
    // The interval after the gap is simply longer; rates stay right.
    let frames: Vec<_> = Player::new(rec).collect();
    let warned: Vec<_> = frames
        .iter()
        .filter(|f| !f.snapshot.warnings.is_empty())
        .collect();
    assert_eq!(warned.len(), 1);
    let w = &warned[0].snapshot.warnings[0];
    assert!(w.starts_with("sda at ") && w.contains("found 18"), "{w}");
    assert!(warned[0].snapshot.stats.contains_key("nvme0n1"));
    assert!(!warned[0].snapshot.stats.contains_key("sda"));
}

#[test]
fn a_newer_version_is_refused_naming_both_versions() {
    let s = record_session("future.ndjson", &[]);
    let mut lines = lines_of(&s.file);
    lines[0] = lines[0].replace("\"version\":1", "\"version\":7");
    std::fs::write(&s.file, lines.join("\n") + "\n").unwrap();
    let err = Recording::open(&s.file).unwrap_err();
    assert!(
        matches!(
            err,
            RecordError::Version {
                found: 7,
                supported: 1,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("version 7") && msg.contains("version 1"),
        "{msg}"
    );
}

#[test]
fn files_that_are_not_recordings_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    for (name, content, why) in [
        ("empty", "", "empty"),
        ("text", "hello\n", "not JSON"),
        ("json", "{\"type\":\"sample\",\"t\":0}\n", "not a header"),
        ("nover", "{\"type\":\"header\"}\n", "no version"),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        let err = Recording::open(&p).unwrap_err();
        assert!(
            matches!(err, RecordError::NotARecording { .. }),
            "{name}: {err:?}"
        );
        assert!(err.to_string().contains(why), "{name}: {err}");
    }
}

#[test]
fn a_recording_from_another_host_plays_and_says_so() {
    let s = record_session("other.ndjson", &[]);
    let lines = lines_of(&s.file);
    let other = lines[0].replace("\"hostname\":\"testhost\"", "\"hostname\":\"db-7\"");
    assert_ne!(other, lines[0]);
    let mut all = vec![other];
    all.extend_from_slice(&lines[1..]);
    std::fs::write(&s.file, all.join("\n") + "\n").unwrap();
    let rec = open(&s.file);
    assert!(rec.notes.is_empty());
    assert!(rec.is_from_other_host("testhost"));
    let sum = summarize(&rec, Some("testhost"));
    assert!(sum.other_host);
    assert!(
        sum.to_text()
            .contains("db-7, Linux 6.18.0-test (recorded on another host)")
    );
    assert_eq!(Player::new(rec).count(), STEPS);
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
        Record::Sample(s) => Record::Sample(blktune::record::Sample {
            wall: 0.0,
            ..s.clone()
        }),
        Record::End(e) => Record::End(blktune::record::EndRecord {
            wall: 0.0,
            ..e.clone()
        }),
        r => r.clone(),
    };
    let ra: Vec<_> = a.records.iter().map(strip).collect();
    let rb: Vec<_> = b.records.iter().map(strip).collect();
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
