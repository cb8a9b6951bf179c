//! Crafted recordings: `blktune replay` runs as any user on any file, so no
//! number, line or count in the file may panic it, flood stderr or take
//! unbounded memory. Every input is generated here; the big ones are
//! streamed through a pipe into the binary, which runs under an
//! address-space limit (`prlimit --as`).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::require_tool;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Address space allowed to the replaying process: far below the size of
/// the big inputs.
const AS_LIMIT: u64 = 768 << 20;

const HEADER: &str = r#"{"type":"header","version":1,"tool":"blktune 0.1.0","started_wall":1767323045.0,"started":"2026-01-02T03:04:05Z","interval_s":1.0,"host":{"hostname":"h","kernel":"6.18.0","uptime_s":100.0},"devices":[{"name":"sda","major":8,"minor":0,"kind":"ssd","size_bytes":1000000}]}"#;

fn sample(t: f64, wall: f64, reads: u64) -> String {
    format!(
        r#"{{"type":"sample","t":{t:e},"wall":{wall:e},"disks":{{"sda":[{reads},0,{},{},0,0,0,0,0,{},{}]}}}}"#,
        reads * 8,
        reads,
        reads,
        reads
    )
}

/// `blktune replay ARGS` under the address-space limit, stdin fed by `feed`.
fn replay(args: &[&str], feed: impl FnOnce(&mut dyn Write) + Send + 'static) -> Output {
    let mut child = Command::new("prlimit")
        .arg(format!("--as={AS_LIMIT}"))
        .arg(env!("CARGO_BIN_EXE_blktune"))
        .arg("replay")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // The child may stop reading early (a refused file): not an error.
        feed(&mut stdin);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// Write `mib` MiB of `byte`; `false` when the reader stopped reading first.
fn write_mib(w: &mut dyn Write, byte: u8, mib: usize) -> bool {
    let chunk = vec![byte; 1 << 20];
    (0..mib).all(|_| w.write_all(&chunk).is_ok())
}

/// `blktune replay PATH --summary` on a file (no limit, no stdin).
fn summary_of(path: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["replay", path, "--summary"])
        .output()
        .unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// No panic, no abort, few stderr lines.
fn calm(o: &Output, max_lines: usize) {
    let e = err(o);
    assert!(!e.contains("panicked"), "{e}");
    assert!(o.status.code().is_some(), "killed by a signal: {e}");
    assert!(
        e.lines().count() <= max_lines,
        "{} lines: {e:.2000}",
        e.lines().count()
    );
}

fn file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

#[test]
fn a_wall_time_of_1e300_is_a_note_not_a_panic() {
    if !require_tool("a_wall_time_of_1e300_is_a_note_not_a_panic", "prlimit") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let text = [
        HEADER.to_owned(),
        sample(1.0, 1767323046.0, 10),
        sample(2.0, 1e300, 20),
        sample(3.0, 1767323048.0, 30),
    ]
    .join("\n")
        + "\n";
    let f = file(d.path(), "wall.ndjson", &text);
    let o = replay(&[&f, "--summary"], |_| {});
    calm(&o, 3);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        err(&o).contains("line 3: skipped, wall 1e300 is out of range"),
        "{}",
        err(&o)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("2 samples"), "{out}");
}

#[test]
fn negative_sample_times_are_skipped_and_start_checks_against_what_is_left() {
    if !require_tool("negative_sample_times_are_skipped", "prlimit") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let text = [
        HEADER.to_owned(),
        sample(-30.0, 1767323046.0, 10),
        sample(-20.0, 1767323047.0, 20),
    ]
    .join("\n")
        + "\n";
    let f = file(d.path(), "neg.ndjson", &text);
    let o = replay(&[&f, "--summary", "--start", "1s"], |_| {});
    calm(&o, 5);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("t -30.0 is out of range"), "{}", err(&o));
    assert!(
        err(&o).contains("--start '1s' is past the end"),
        "{}",
        err(&o)
    );
}

#[test]
fn a_gzip_of_junk_lines_gives_a_few_notes_and_a_count() {
    if !require_tool(
        "a_gzip_of_junk_lines_gives_a_few_notes_and_a_count",
        "prlimit",
    ) {
        return;
    }
    // A header, then two million junk lines: a few hundred KB compressed.
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    writeln!(gz, "{HEADER}").unwrap();
    writeln!(gz, "{}", sample(1.0, 1767323046.0, 10)).unwrap();
    for _ in 0..2_000_000 {
        gz.write_all(b"{\"type\":\"sample\",\"t\":\x1b[2J junk}\n")
            .unwrap();
    }
    let bytes = gz.finish().unwrap();
    assert!(bytes.len() < 1 << 20, "{}", bytes.len());
    let o = replay(&["/dev/stdin", "--summary"], move |w| {
        let _ = w.write_all(&bytes);
    });
    calm(&o, 10);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // Bad lines count toward the reader's budget (issue 37): it stops after
    // 100 000 of them with one note, instead of reading two million.
    assert!(
        err(&o).contains("99996 more problem(s) like these"),
        "{}",
        err(&o)
    );
    assert!(
        err(&o).contains(
            "read no further than line 100003: 100001 lines were blank, too long or not records"
        ),
        "{}",
        err(&o)
    );
}

#[test]
fn one_huge_line_is_skipped_without_being_stored() {
    if !require_tool("one_huge_line_is_skipped_without_being_stored", "prlimit") {
        return;
    }
    // 900 MiB without a newline after a valid start: more than the address space.
    let o = replay(&["/dev/stdin", "--summary"], |w| {
        let _ = writeln!(w, "{HEADER}");
        let _ = writeln!(w, "{}", sample(1.0, 1767323046.0, 10));
        let _ = w.write_all(b"{\"type\":\"sample\",\"t\":");
        if !write_mib(w, b'7', 900) {
            return;
        }
        let _ = w.write_all(b"}\n");
        let _ = writeln!(w, "{}", sample(3.0, 1767323048.0, 30));
    });
    calm(&o, 3);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        err(&o).contains("line 3: skipped, longer than 4 MiB"),
        "{}",
        err(&o)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 samples"));
}

/// Data that never ends a line (`/dev/zero`, `yes | tr -d '\n'`) is not
/// read forever: after a valid start, reading stops with a note once a line
/// has gone on for over 1 GiB; as the first line, at 4 MiB.
#[test]
fn a_line_without_end_is_not_read_forever() {
    if !require_tool("a_line_without_end_is_not_read_forever", "prlimit") {
        return;
    }
    let o = replay(&["/dev/stdin", "--summary"], |w| {
        let _ = writeln!(w, "{HEADER}");
        let _ = writeln!(w, "{}", sample(1.0, 1767323046.0, 10));
        let _ = writeln!(w, "{}", sample(2.0, 1767323047.0, 20));
        // Until the reader stops reading (the pipe breaks); 3 GiB at most, so
        // that a reader that does not stop fails the test instead of hanging.
        write_mib(w, b'x', 3072);
    });
    // That note, and that the recording has no end record.
    calm(&o, 2);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        err(&o).contains("line 4: no end of line in its first 1 GiB: read no further"),
        "{}",
        err(&o)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 samples"));
    // The first line: refused at its limit, not read to an end it has not.
    let child = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["replay", "/dev/zero", "--summary"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = common::output_within(
        child,
        std::time::Duration::from_secs(60),
        "replay /dev/zero --summary",
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("its first line is longer than 4 MiB"),
        "{}",
        err(&o)
    );
}

#[test]
fn a_file_of_junk_is_one_line_and_exit_1() {
    if !require_tool("a_file_of_junk_is_one_line_and_exit_1", "prlimit") {
        return;
    }
    // No newline at all in 1 GiB: the header line alone is too long.
    let o = replay(&["/dev/stdin", "--summary"], |w| {
        write_mib(w, b'{', 1024);
    });
    calm(&o, 1);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("is not a blktune recording: its first line is longer than 4 MiB"),
        "{}",
        err(&o)
    );
}

#[test]
fn the_full_screen_replay_refuses_a_pipe_it_would_have_to_read_twice() {
    if !require_tool("the_full_screen_replay_refuses_a_pipe", "mkfifo") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("rec.fifo");
    let ok = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(ok.success());
    // No writer: a reader that opened it would wait for ever.
    let mut child = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .arg("replay")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("replay blocked on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    calm(&o, 1);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("is not a regular file"), "{}", err(&o));
    assert!(err(&o).contains("--summary reads it once"), "{}", err(&o));
}

/// Without a terminal there is nothing to play on: said before the file is
/// opened, so a long recording is not indexed first (and a damaged one is
/// not reported for nothing).
#[test]
fn the_full_screen_replay_without_a_terminal_does_not_read_the_file_first() {
    let d = tempfile::tempdir().unwrap();
    // A header cut short, then junk: opening it would note the damage.
    let f = file(
        d.path(),
        "cut.ndjson",
        &format!("{}\n{{junk\n", &HEADER[..60]),
    );
    // `blktune replay PATH` with no terminal: one line on stderr, exit 1.
    let refused = |path: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_blktune"))
            .args(["replay", path])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        calm(&o, 1);
        assert_eq!(o.status.code(), Some(1), "{}", err(&o));
        err(&o)
    };
    let e = refused(&f);
    assert!(
        e.contains("needs a terminal") && e.contains("--summary"),
        "{e}"
    );
    // A file that is not there is still named as such.
    let e = refused(&format!("{f}.missing"));
    assert!(e.contains("No such file"), "{e}");
}

/// A newline in a recorded host, kernel or model name would forge lines of
/// the summary (an ESC was already escaped): shown as `\u000a`.
#[test]
fn names_from_the_file_cannot_forge_summary_lines() {
    let dir = tempfile::tempdir().unwrap();
    let header = HEADER
        .replace(r#""hostname":"h""#, r#""hostname":"h\nFORGED host line""#)
        .replace(r#""kernel":"6.18.0""#, r#""kernel":"6.18\nFORGED kernel""#)
        .replace(
            r#""kind":"ssd""#,
            r#""kind":"ssd","model":"M\nFORGED model""#,
        );
    let text = format!(
        "{header}\n{}\n{}\n",
        sample(1.0, 1767323046.0, 10),
        sample(2.0, 1767323047.0, 20)
    );
    let path = file(dir.path(), "forged.ndjson", &text);
    let o = summary_of(&path);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.lines().any(|l| l.starts_with("FORGED")),
        "a forged line:\n{out}"
    );
    assert!(out.contains(r"h\u000aFORGED host line"), "{out}");
    assert!(out.contains(r"M\u000aFORGED model"), "{out}");
}

/// A version that is there but is no version (-1, 0, a string, 2^64) is
/// named as such, not as a missing one; version 0 is not taken as 1.
#[test]
fn a_header_version_that_is_no_version_is_named() {
    let dir = tempfile::tempdir().unwrap();
    for v in ["-1", "0", "\"1\"", "18446744073709551616"] {
        let text = format!(
            "{}\n{}\n",
            HEADER.replace(r#""version":1"#, &format!(r#""version":{v}"#)),
            sample(1.0, 1767323046.0, 10)
        );
        let path = file(dir.path(), "v.ndjson", &text);
        let o = summary_of(&path);
        assert_eq!(o.status.code(), Some(1), "{v}: {}", err(&o));
        assert!(
            err(&o).contains("is not a format version (1 and up)"),
            "{v}: {}",
            err(&o)
        );
        assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
    }
}

/// A gzip file whose data is damaged before its first line is said to be
/// damaged, not empty; an empty file is empty.
#[test]
fn damaged_gzip_is_not_called_empty() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.ndjson.gz");
    std::fs::write(
        &bad,
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbagegarbage",
    )
    .unwrap();
    let empty = file(dir.path(), "empty.ndjson", "");
    for (path, says) in [
        (
            bad.to_str().unwrap(),
            "its data ends or is damaged before its first line",
        ),
        (empty.as_str(), "it is empty"),
    ] {
        let o = summary_of(path);
        assert_eq!(o.status.code(), Some(1), "{}", err(&o));
        assert!(err(&o).contains(says), "{}", err(&o));
    }
}

/// Junk after the gzip stream, or a bad checksum at its end, is damage,
/// not a killed recorder (which only cuts the stream short).
#[test]
fn damage_after_the_gzip_data_is_not_called_a_killed_recorder() {
    let dir = tempfile::tempdir().unwrap();
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    writeln!(gz, "{HEADER}").unwrap();
    writeln!(gz, "{}", sample(1.0, 1767323046.0, 10)).unwrap();
    writeln!(gz, "{}", sample(2.0, 1767323047.0, 20)).unwrap();
    let good = gz.finish().unwrap();
    let mut junk = good.clone();
    junk.extend_from_slice(b"this is not gzip at all");
    let mut crc = good.clone();
    let at = crc.len() - 8;
    crc[at] ^= 0xff;
    let mut cut = good.clone();
    cut.truncate(good.len() - 4);
    for (name, bytes, says) in [
        (
            "junk.ndjson.gz",
            junk,
            "compressed data is damaged after line",
        ),
        (
            "crc.ndjson.gz",
            crc,
            "compressed data is damaged after line",
        ),
        (
            "cut.ndjson.gz",
            cut,
            "compressed data ends early (the recorder was killed)",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let o = summary_of(path.to_str().unwrap());
        assert_eq!(o.status.code(), Some(0), "{name}: {}", err(&o));
        assert!(err(&o).contains(says), "{name}: {}", err(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("2 samples"),
            "{name}"
        );
    }
}
