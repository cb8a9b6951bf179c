//! `watch` and `record` started with `&` from a script (SIGINT inherited as
//! ignored: POSIX shells start background jobs so) still stop on SIGINT, as
//! iostat does: `watch` between two intervals, dying of the signal (130),
//! `record` with its file finished (an end record, exit 0).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::wait_until;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The captured tree (no device is read).
fn tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm-6.18")
}

/// Does process `pid` ignore SIGINT (bit 1 of SigIgn, proc(5))?
fn ignores_sigint(pid: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
        .unwrap();
    mask & (1 << (libc::SIGINT - 1)) != 0
}

/// Read a number a script wrote to `file`, once it is there.
fn number_in(file: &Path) -> i32 {
    let read = || {
        std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
    };
    assert!(
        wait_until(common::TIMEOUT, || read().is_some()),
        "{} never written",
        file.display()
    );
    read().unwrap()
}

/// Ends what a test started when it fails before the processes end: each
/// pid with the start of the command name it must still have (not a pid
/// reused since).
/// The shell is waited for at the end.
struct Reap(Vec<(i32, &'static str)>, std::process::Child);

impl Drop for Reap {
    fn drop(&mut self) {
        for &(pid, comm) in &self.0 {
            let ours = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim().starts_with(comm));
            if ours {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        let _ = self.1.wait();
    }
}

/// Run `blktune ARGS` as `sh -c 'blktune ARGS > out 2> err & ...'` in
/// `dir`, with a `sleep` started the same way beside it (whose SIGINT
/// shows what the shell gave its background jobs). Returns the pid of
/// blktune once its first output is there, and a guard that kills both.
fn start_in_background(dir: &Path, args: &str, first_output: &str) -> (i32, Reap) {
    let script = format!(
        "'{bin}' --sysfs-root '{t}/sys' --proc-root '{t}/proc' {args} > out 2> err & \
         B=$!; echo $B > pid; sleep 60 & S=$!; echo $S > control; \
         wait $B; echo $? > status; kill $S",
        bin = common::tmux::blktune_bin(),
        t = tree().display(),
    );
    let sh = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = number_in(&dir.join("pid"));
    let control = number_in(&dir.join("control"));
    let reap = Reap(vec![(pid, "blktune"), (control, "sleep")], sh);
    // The shell sets "ignored" between its fork and the exec: look after it.
    assert!(
        wait_until(common::TIMEOUT, || std::fs::read_to_string(format!(
            "/proc/{control}/comm"
        ))
        .is_ok_and(|c| c.trim() == "sleep")),
        "the control sleep never ran"
    );
    assert!(
        ignores_sigint(control),
        "the shell did not start its background jobs with SIGINT ignored: the test proves nothing"
    );
    assert!(
        wait_until(common::TIMEOUT, || std::fs::read_to_string(
            dir.join(first_output)
        )
        .is_ok_and(|s| s.lines().count() >= 3)),
        "no output from: {args}"
    );
    (pid, reap)
}

/// SIGINT to `pid`; its exit status as the shell saw it.
fn interrupt(dir: &Path, pid: i32) -> i32 {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = dir.join("status");
    assert!(
        wait_until(Duration::from_secs(10), || status.exists()),
        "still running 10 s after SIGINT"
    );
    number_in(&status)
}

#[test]
fn watch_started_with_sigint_ignored_stops_on_sigint_between_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let (pid, _reap) = start_in_background(dir.path(), "watch --json --interval 200ms", "out");
    assert_eq!(interrupt(dir.path(), pid), 130, "died of SIGINT, as iostat");
    let out = std::fs::read_to_string(dir.path().join("out")).unwrap();
    assert!(out.ends_with('\n'), "a line cut short: {out:?}");
    for line in out.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect(line);
    }
}

#[test]
fn record_started_with_sigint_ignored_stops_on_sigint_and_finishes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let (pid, _reap) = start_in_background(
        dir.path(),
        "record --interval 200ms rec.ndjson",
        "rec.ndjson",
    );
    assert_eq!(interrupt(dir.path(), pid), 0);
    let rec = std::fs::read_to_string(dir.path().join("rec.ndjson")).unwrap();
    let last: serde_json::Value = serde_json::from_str(rec.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "end", "{rec}");
    assert_eq!(last["reason"], "signal");
    let said = std::fs::read_to_string(dir.path().join("out")).unwrap();
    assert!(said.contains("wrote "), "{said}");
}
