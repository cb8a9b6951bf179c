//! Files a user names are hostile too (issue 37): a named pipe given to
//! `export --check` or `replay` is refused with one line instead of waiting
//! for a writer forever (a pipe blktune is handed still works), and a
//! recording of nothing but newlines (10 GiB gzip to 10 MB) is not read to
//! its end: blank and bad lines count toward a budget, and reading stops
//! with one note.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::fake::FakeDisk;
use common::fake_host::FakeHost;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

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

/// Run `c` with its output captured; killed and failed after `limit` (a
/// guard against a hang, not a measurement).
fn run_within(mut c: Command, limit: Duration) -> Output {
    let what = format!("{c:?}");
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::output_within(child, limit, &what)
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// One gzip member of `data` (compressed once: the best level costs little
/// on a MiB, and makes the 10 GiB file about 10 MB).
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// `lead` (if any), then 10 GiB of newlines, gzipped: one member of a MiB
/// of newlines written 10240 times (a gzip file may hold many members, and
/// blktune reads them all), so the file is about 10 MB and quick to make.
fn newlines_10_gib(path: &Path, lead: Option<&str>) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    if let Some(lead) = lead {
        f.write_all(&gzip(lead.as_bytes())).unwrap();
    }
    let member = gzip(&vec![b'\n'; 1 << 20]);
    for _ in 0..10 * 1024 {
        f.write_all(&member).unwrap();
    }
    f.flush().unwrap();
}

#[test]
fn ten_gib_of_gzipped_newlines_is_summarised_with_one_note_not_read_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blank.ndjson.gz");
    let lead = format!(
        "{HEADER}\n{}\n{}\n",
        sample(1.0, 1767323046.0, 10),
        sample(2.0, 1767323047.0, 20)
    );
    newlines_10_gib(&path, Some(&lead));
    assert!(std::fs::metadata(&path).unwrap().len() < 16 << 20);
    let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
    c.args(["replay", path.to_str().unwrap(), "--summary"]);
    // Read to its end, this took a minute per GiB.
    let o = run_within(c, Duration::from_secs(60));
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("2 samples"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // One note on the blank lines (beside the one any cut recording gets:
    // no end record).
    let blank: Vec<&str> = e.lines().filter(|l| l.contains("were blank")).collect();
    assert_eq!(blank.len(), 1, "{e}");
    assert!(blank[0].contains("read no further than line 100004"), "{e}");
    assert!(e.lines().count() <= 2, "{e}");
    // Without a header: not a recording, one line.
    let path = dir.path().join("only-blank.ndjson.gz");
    newlines_10_gib(&path, None);
    let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
    c.args(["replay", path.to_str().unwrap(), "--summary"]);
    let o = run_within(c, Duration::from_secs(60));
    let e = err(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("is not a blktune recording") && e.contains("lines are blank"),
        "{e}"
    );
}

#[test]
fn bad_lines_count_toward_the_budget_and_a_few_are_still_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.ndjson");
    let mut text = format!("{HEADER}\n{}\n", sample(1.0, 1767323046.0, 10));
    // A few bad lines among records: skipped, reading goes on.
    text.push_str("{\"type\":\"nonsense\"}\n\n   \n");
    text.push_str(&sample(2.0, 1767323047.0, 20));
    text.push('\n');
    // Then 200 000 lines that are not records.
    text.push_str(&"{}\n".repeat(200_000));
    text.push_str(&sample(3.0, 1767323048.0, 30));
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
    c.args(["replay", path.to_str().unwrap(), "--summary"]);
    let o = run_within(c, Duration::from_secs(60));
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("2 samples"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(e.contains("read no further"), "{e}");
    // The first few told, the rest counted, the stop said: a handful of lines.
    assert!(e.lines().count() <= 8, "{e}");
}

/// `export --check FIFO` waited for a writer forever; now one line, exit 1,
/// and the pipes blktune is handed (`/dev/stdin`, `<(...)`) still work.
#[test]
fn a_named_pipe_is_refused_by_export_check_and_replay_and_a_handed_pipe_is_read() {
    let h = FakeHost::new(&[FakeDisk::new("sda").dev(8, 0)]);
    let fifo = h.path("rules.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let fifo_arg = fifo.to_str().unwrap();
    let replay = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
        c.args(["replay", fifo_arg, "--summary"]);
        c
    };
    for (args, c) in [
        (
            "export --check",
            h.command(&["export", "--check", fifo_arg]),
        ),
        ("replay", replay()),
    ] {
        let o = run_within(c, Duration::from_secs(30));
        let e = err(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(
            e.contains(fifo_arg) && e.contains("named pipe"),
            "{args:?}: {e}"
        );
    }
    // A rules file given as a pipe: read as it comes.
    let rules = h.path("61-x.rules");
    std::fs::write(
        &rules,
        "ACTION==\"add\", KERNEL==\"sda\", ATTR{queue/scheduler}=\"kyber\"\n",
    )
    .unwrap();
    let mut c = h.command(&["export", "--check", "/dev/stdin"]);
    c.stdin(Stdio::from(std::fs::File::open(&rules).unwrap()));
    let o = c.output().unwrap();
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", err(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 rule"));
    let mut c = Command::new("bash");
    c.arg("-c").arg(format!(
        "exec \"$0\" \"$@\" --check <(cat '{}')",
        rules.display()
    ));
    c.arg(env!("CARGO_BIN_EXE_blktune"))
        .args(h.command(&["export"]).get_args())
        .envs(h.command(&[]).get_envs().filter_map(|(k, v)| Some((k, v?))));
    let o = run_within(c, Duration::from_secs(30));
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", err(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("1 rule"),
        "{}",
        err(&o)
    );
}

/// A named pipe where blktune reads a file it found (a journal entry, a
/// rules file of udev's directories, a udev database entry, tuned's active
/// profile) blocks no reader: the journal's is refused with one line naming
/// it (exit 1, nothing changed), the others read as empty.
#[test]
fn a_named_pipe_in_the_journal_the_rules_or_the_udev_database_blocks_no_reader() {
    let h = FakeHost::new(&[FakeDisk::new("sda").dev(8, 0)]);
    let fifo = |p: &Path| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    };
    let entry = h.path("journal/sda.json");
    fifo(&entry);
    let scheduler =
        || std::fs::read_to_string(h.tree.dev_dir("sda").join("queue/scheduler")).unwrap();
    let before = scheduler();
    // The journal's commands take no --udev-db: the host's trees and journal.
    let journal_command = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
        c.arg("--sysfs-root")
            .arg(h.path("sys"))
            .arg("--proc-root")
            .arg(h.path("proc"))
            .args(args)
            .env("BLKTUNE_JOURNAL_DIR", h.path("journal"));
        c
    };
    for args in [
        vec!["revert", "sda"],
        vec!["revert", "--all"],
        vec!["status"],
        vec!["set", "sda", "-s", "kyber"],
    ] {
        let o = run_within(journal_command(&args), Duration::from_secs(30));
        let e = err(&o);
        let text = format!("{}{e}", String::from_utf8_lossy(&o.stdout));
        assert_eq!(o.status.code(), Some(1), "{args:?}: {text}");
        assert!(
            text.contains(&format!("{}: not a regular file", entry.display())),
            "{args:?}: {text}"
        );
        assert_eq!(scheduler(), before, "{args:?} changed the device");
    }
    std::fs::remove_file(&entry).unwrap();
    // udev's and tuned's files under --config-root, the udev database.
    let config = h.path("config");
    for rel in [
        "etc/udev/rules.d/99-fifo.rules",
        "run/udev/rules.d/98-fifo.rules",
        "usr/lib/udev/rules.d/97-fifo.rules",
        "etc/tuned/active_profile",
    ] {
        fifo(&config.join(rel));
    }
    fifo(&h.path("udev-data/b8:0"));
    let rules = h.path("61-x.rules");
    std::fs::write(
        &rules,
        "ACTION==\"add\", KERNEL==\"sda\", ATTR{queue/scheduler}=\"kyber\"\n",
    )
    .unwrap();
    let config_arg = config.to_str().unwrap();
    for args in [
        vec![
            "export",
            "--check",
            rules.to_str().unwrap(),
            "--config-root",
            config_arg,
        ],
        vec!["export", "sda", "--config-root", config_arg],
        vec!["list", "--json"],
    ] {
        let o = run_within(h.command(&args), Duration::from_secs(30));
        assert!(
            matches!(o.status.code(), Some(0 | 3)),
            "{args:?}: {}",
            err(&o)
        );
    }
}
