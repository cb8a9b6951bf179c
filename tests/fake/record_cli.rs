//! `blktune record` and `blktune replay` as processes, on a fake tree.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune_core::diskstats::Counters;
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::record::{ChangeSource, Record, Recording};
use common::{stderr, stdout};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Fixture {
    dir: tempfile::TempDir,
    tree: FakeTree,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(&dir.path().join("tree")).unwrap();
        tree.add(&FakeDisk::new("sda")).unwrap();
        tree.set_diskstats(&[(
            "sda",
            8,
            0,
            Counters {
                rd_ios: 10,
                ..Counters::default()
            },
        )])
        .unwrap();
        Self { dir, tree }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let root = self.dir.path().join("tree");
        let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
        c.arg("--sysfs-root")
            .arg(root.join("sys"))
            .arg("--proc-root")
            .arg(root.join("proc"))
            .args(args)
            .env("BLKTUNE_JOURNAL_DIR", self.dir.path().join("journal"));
        c
    }

    fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// Wait until the file holds at least `total` sample lines (plain files only).
fn wait_for_samples(path: &Path, total: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.matches("\"type\":\"sample\"").count() >= total {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} never got {total} samples", path.display());
}

#[test]
fn record_refuses_to_overwrite_without_force() {
    let f = Fixture::new();
    let file = f.path("old.ndjson");
    std::fs::write(&file, "precious\n").unwrap();
    let o = f
        .cmd(&[
            "record",
            file.to_str().unwrap(),
            "-i",
            "100ms",
            "--duration",
            "200ms",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious\n");

    let o = f
        .cmd(&[
            "record",
            file.to_str().unwrap(),
            "--force",
            "--interval",
            "100ms",
            "--duration",
            "300ms",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("wrote 3 samples"), "{}", stdout(&o));
    let rec = Recording::open(&file).unwrap();
    assert_eq!(rec.samples(), 3);
    assert_eq!(rec.end().unwrap().reason, "duration");
}

#[test]
fn record_refuses_unknown_devices_in_one_line() {
    let f = Fixture::new();
    let file = f.path("x.ndjson");
    let o = f
        .cmd(&["record", file.to_str().unwrap(), "sdz"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("'sdz'"), "{err}");
    assert!(!file.exists(), "nothing is created for a bad command line");
    let o = f
        .cmd(&[
            "record",
            file.to_str().unwrap(),
            "-i",
            "1s",
            "--duration",
            "200ms",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("shorter than the interval"),
        "{}",
        stderr(&o)
    );
    assert!(!file.exists());
}

#[test]
fn record_stops_cleanly_on_sigterm_and_records_outside_changes() {
    let f = Fixture::new();
    let file = f.path("live.ndjson");
    let child = f.spawn(&["record", file.to_str().unwrap(), "-i", "100ms", "sda"]);
    wait_for_samples(&file, 10);
    // The recording time of the newest sample before the switch.
    let before: f64 = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["type"] == "sample")
        .find_map(|r| r["t"].as_f64())
        .unwrap();
    // Another process switches the scheduler while we record.
    // Atomically, as the kernel does: the recorder must never read half a file.
    let q = f.tree.dev_dir("sda").join("queue");
    std::fs::write(q.join(".scheduler.tmp"), "kyber\n").unwrap();
    std::fs::rename(q.join(".scheduler.tmp"), q.join("scheduler")).unwrap();
    f.tree
        .settle("sda", &["none", "mq-deadline", "kyber", "bfq"], 256)
        .unwrap();
    let n = std::fs::read_to_string(&file)
        .unwrap()
        .matches("\"type\":\"sample\"")
        .count();
    wait_for_samples(&file, n + 3);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rec = Recording::open(&file).unwrap();
    assert!(rec.notes.is_empty(), "{:?}", rec.notes);
    assert_eq!(rec.end().unwrap().reason, "signal");
    assert!(matches!(
        rec.records().unwrap().last(),
        Some(Record::End(_))
    ));
    let changes: Vec<_> = rec.changes().collect();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].label, "mq-deadline→kyber");
    assert_eq!(changes[0].source, ChangeSource::Observed);
    assert!(changes[0].t > 0.0 && changes[0].t < rec.duration());
    // Placed where it happened: after the last sample before it, less the
    // span the sampler checks settings in (half an interval, 50 ms here),
    // not halfway back to the recording's start.
    assert!(
        changes[0].t >= before - 0.05,
        "the change at {} s, the switch after {before} s",
        changes[0].t
    );
}

#[test]
fn a_killed_gzip_recording_reads_up_to_its_last_flush() {
    let f = Fixture::new();
    let file = f.path("killed.ndjson.gz");
    let mut child = f.spawn(&["record", file.to_str().unwrap(), "-i", "100ms"]);
    // The writer flushes at least every 2 s: kill it once a flush holds 10
    // samples (polled, so a busy machine's slow start does not matter).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !Recording::open(&file).is_ok_and(|r| r.samples() >= 10) {
        assert!(Instant::now() < deadline, "no flush with 10 samples");
        assert!(child.try_wait().unwrap().is_none(), "record ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    let _ = child.wait();
    let rec = Recording::open(&file).unwrap();
    assert!(
        rec.samples() >= 10,
        "{} samples, {:?}",
        rec.samples(),
        rec.notes
    );
    assert!(rec.end().is_none());
    assert!(
        rec.notes
            .iter()
            .any(|n| n.contains("compressed data ends early")),
        "{:?}",
        rec.notes
    );
    // And the CLI shows it, with the notes on stderr.
    let o = f
        .cmd(&["replay", file.to_str().unwrap(), "--summary"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("note:"), "{}", stderr(&o));
    assert!(stdout(&o).contains("no end record"), "{}", stdout(&o));
}

#[test]
fn replay_of_a_bad_file_is_one_clear_line() {
    let f = Fixture::new();
    let file = f.path("future.ndjson");
    std::fs::write(&file, "{\"type\":\"header\",\"version\":9}\n").unwrap();
    let o = f
        .cmd(&["replay", file.to_str().unwrap(), "--summary"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("version 9") && err.contains("version 1"),
        "{err}"
    );
    let o = f
        .cmd(&["replay", f.path("missing").to_str().unwrap(), "--summary"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("missing"), "{}", stderr(&o));
}

#[test]
fn replay_without_summary_says_where_the_viewer_will_be_and_checks_start() {
    let f = Fixture::new();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-bfq-switch.ndjson.gz");
    let demo = demo.to_str().unwrap();
    let o = f.cmd(&["replay", demo, "--speed", "4"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--summary"), "{err}");
    let o = f
        .cmd(&["replay", demo, "--start", "10m", "--summary"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("past the end"), "{}", stderr(&o));
    let o = f.cmd(&["replay", demo, "--speed", "0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("out of range"), "{}", stderr(&o));
}

/// Issue 15: `-` is standard output for `record` and standard input for
/// `replay --summary`, so `record - | replay - --summary` works; the
/// full-screen replay, which reads its file twice, refuses `-` in one line.
#[test]
fn a_dash_records_to_stdout_and_replays_from_stdin() {
    let f = Fixture::new();
    let rec = f
        .cmd(&["record", "-", "-i", "100ms", "-d", "300ms"])
        .current_dir(f.dir.path())
        .output()
        .unwrap();
    assert!(rec.status.success(), "{}", stderr(&rec));
    assert!(!f.path("-").exists(), "no file named '-'");
    let ndjson = stdout(&rec);
    assert!(ndjson.starts_with("{\"type\":\"header\""), "{ndjson}");
    assert!(
        !ndjson.contains("recording to"),
        "messages stay out of the stream"
    );
    assert!(
        stderr(&rec).contains("recording to standard output"),
        "{}",
        stderr(&rec)
    );

    let mut replay = f
        .cmd(&["replay", "-", "--summary"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    replay
        .stdin
        .take()
        .unwrap()
        .write_all(ndjson.as_bytes())
        .unwrap();
    let o = replay.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("device    sda"), "{}", stdout(&o));

    let o = f
        .cmd(&["replay", "-"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}
