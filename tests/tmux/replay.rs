//! End to end in tmux (80x24): the replay viewer as user nobody on the
//! shipped recording, `R` recording a live session on a loop device this
//! test creates, and `blktune demo` (quit and SIGTERM). Root only (setpriv,
//! losetup); skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::{Tmux, alive};
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Seconds of the header's `replay MM:SS/`.
fn position(screen: &str) -> Option<u64> {
    let at = screen.split("replay ").nth(1)?.split('/').next()?;
    let (m, s) = at.split_once(':')?;
    Some(m.trim().parse::<u64>().ok()? * 60 + s.parse::<u64>().ok()?)
}

fn shq(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn replay_as_nobody_shows_the_switch_and_seeks() {
    if !require_root("replay_as_nobody_shows_the_switch_and_seeks")
        || !require_tool("replay_as_nobody", "tmux")
        || !require_tool("replay_as_nobody", "setpriv")
    {
        return;
    }
    // Copies that user nobody can read and run.
    let dir = tempfile::tempdir().unwrap();
    let bin = public_binary(dir.path());
    let demo = dir.path().join("demo.ndjson.gz");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-bfq-switch.ndjson.gz"),
        &demo,
    )
    .unwrap();
    std::fs::set_permissions(&demo, std::fs::Permissions::from_mode(0o644)).unwrap();
    let t = Tmux::start(
        &format!(
            "cd / && setpriv --reuid=nobody --regid=nogroup --clear-groups {} replay {} --speed 10",
            shq(&bin),
            shq(&demo)
        ),
        80,
        24,
    );
    let s = t.wait("the switch marker and the before/after panel", |s| {
        s.contains("mq-deadline→bfq") && s.contains("before") && s.contains("after")
    });
    assert!(s.contains("replay "), "{s}");
    assert!(
        s.contains("-10s") && s.contains("faster"),
        "replay hints:\n{s}"
    );
    let footer = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(!footer.contains("sched"), "no change keys in replay:\n{s}");
    // Pause, then ← moves the position back exactly 10 s.
    t.keys(&["p"]);
    let s = t.wait("the pause", |s| s.contains(" ‖"));
    // Paused, the seek lands exactly 10 s back (at x10 a playing replay
    // moves a second every 100 ms while the key travels) and stays paused.
    let p0 = position(&s).unwrap();
    t.keys(&["Left"]);
    let s = t.wait("the seek back", |s| {
        position(s) == Some(p0.saturating_sub(10))
    });
    assert!(s.contains(" ‖"), "still paused after a seek:\n{s}");
    // Play to the end: it pauses there and says so.
    t.keys(&["]", "]", "p"]);
    let s = t.wait("the end", |s| s.contains("end of recording"));
    assert!(s.contains("01:30/01:30") || s.contains("■ end"), "{s}");
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

/// `replay --demo` as a trainer plays it: the banner says when the
/// recording switches to bfq and back, then what the panel measured of each
/// switch (one pair: values, no direction), and moves on as the replay
/// passes each switch (issue 16, item 13; issue 32, item 5). No root.
#[test]
fn replay_demo_says_when_the_recording_switches_and_what_to_watch() {
    if !require_tool("replay_demo_hint", "tmux") {
        return;
    }
    let t = Tmux::start(
        &format!(
            "cd / && {} replay --demo --speed 10",
            common::tmux::blktune_bin()
        ),
        80,
        24,
    );
    let s = t.wait("the hint before the first switch", |s| {
        s.contains("DEMO loop2: at 00:30 bfq; at 01:00 mq-deadline")
    });
    assert!(s.contains("replay 00:"), "{s}");
    let s = t.wait("the hint after the switch to bfq", |s| {
        s.contains("DEMO loop2: bfq since 00:30: r_") && s.contains("mq-deadline→bfq")
    });
    // No direction from one pair (the footer's `] faster` is a key).
    let banner = s.lines().nth(1).unwrap();
    assert!(
        !banner.contains("slower") && !banner.contains("faster"),
        "{s}"
    );
    t.wait("the hint after the switch back", |s| {
        s.contains("DEMO loop2: mq-deadline since 01:00: r_")
    });
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

#[test]
fn r_records_the_live_session_to_a_file_replay_reads() {
    if !require_root("r_records_the_live_session") || !require_tool("r_records", "tmux") {
        return;
    }
    let lo = TestLoop::new(64);
    let cwd = tempfile::tempdir().unwrap();
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        &format!(
            "cd {} && BLKTUNE_JOURNAL_DIR={} {} --device {} --interval 250ms",
            shq(cwd.path()),
            shq(journal.path()),
            env!("CARGO_BIN_EXE_blktune"),
            lo.name()
        ),
        80,
        24,
    );
    t.wait("the first sample", |s| {
        s.contains(lo.name()) && s.contains("r_await")
    });
    t.keys(&["R"]);
    let s = t.wait("the REC mark", |s| s.contains("● REC"));
    // The status names the whole path, so the admin knows where it went.
    assert!(
        s.contains(&format!("recording to {}/blktune-", cwd.path().display())),
        "{s}"
    );
    // A switch while recording is recorded as a change (none → kyber).
    assert_eq!(lo.active_scheduler(), "none");
    t.keys(&["s"]);
    t.wait("the picker", |s| s.contains("scheduler of"));
    t.keys(&["Down", "Down", "Enter"]);
    t.wait("the switch", |s| {
        s.contains(&format!("{}: none→kyber", lo.name())) && s.contains("(kernel")
    });
    // A few samples after the switch in the file, counted on screen.
    t.wait_redraws("samples after the switch", 3);
    t.keys(&["R"]);
    let s = t.wait("the stop", |s| s.contains("recorded "));
    assert!(!s.contains("● REC"), "{s}");
    t.keys(&["u"]);
    t.wait("the undo", |s| s.contains("undo: "));
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
    let files: Vec<PathBuf> = std::fs::read_dir(cwd.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("blktune-") && name.ends_with(".ndjson.gz"),
        "{name}"
    );
    let o = blktune(&["replay", &shq(&files[0]), "--summary"], journal.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("ended (stopped)"), "{out}");
    assert!(out.contains(&format!("{} at", lo.name())), "{out}");
    assert!(out.contains("none→kyber"), "{out}");
    assert_eq!(lo.active_scheduler(), "none", "undo restored it");
}

/// The demo's device, from its hint line `DEMO loopN: ...`.
fn demo_device(screen: &str) -> Option<String> {
    let rest = screen.split("DEMO ").nth(1)?;
    Some(rest.split(':').next()?.trim().to_string())
}

/// The backing file of a loop device per `losetup -a`, if attached.
fn backing(dev: &str) -> Option<String> {
    let o = Command::new("losetup").arg("-a").output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find(|l| l.starts_with(&format!("/dev/{dev}:")) && l.contains("blktune-scratch-"))
        // `/dev/loop1: [65024]:123 (/path/file.img)`, or `... (/path/file.img
        // (deleted))` once the file is gone while the device is still attached.
        .and_then(|l| {
            let path = l.split_once(" (")?.1.strip_suffix(')')?;
            Some(path.strip_suffix(" (deleted)").unwrap_or(path).to_string())
        })
}

fn sysfs_scheduler(dev: &str) -> String {
    let line = std::fs::read_to_string(format!("/sys/block/{dev}/queue/scheduler")).unwrap();
    line.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']').map(str::to_string))
        .unwrap_or(line)
}

fn start_demo(dir: &Path, journal: &Path) -> (Tmux, String, String) {
    let t = Tmux::start(
        &format!(
            "BLKTUNE_JOURNAL_DIR={} {} demo --size 64M --interval 250ms --dir {}",
            shq(journal),
            env!("CARGO_BIN_EXE_blktune"),
            shq(dir)
        ),
        80,
        24,
    );
    let s = t.wait("the demo hint and the device selected", |s| {
        s.contains("press s and pick bfq")
            && demo_device(s).is_some_and(|d| s.contains(&format!("▶{d} ")))
    });
    let dev = demo_device(&s).unwrap();
    let file = backing(&dev).unwrap_or_else(|| panic!("{dev} is not a scratch device"));
    assert!(Path::new(&file).exists());
    assert_eq!(sysfs_scheduler(&dev), "mq-deadline");
    (t, dev, file)
}

fn assert_cleaned(dev: &str, file: &str) {
    // Compared with the file: a parallel test may take the freed number.
    assert_ne!(backing(dev).as_deref(), Some(file), "{dev} still attached");
    assert!(!Path::new(file).exists(), "{file} left behind");
}

#[test]
fn demo_switches_its_scratch_device_and_cleans_up_on_quit() {
    if !require_root("demo_quit") || !require_tool("demo_quit", "tmux") {
        return;
    }
    let base = option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let dir = tempfile::tempdir_in(base).unwrap();
    let journal = tempfile::tempdir().unwrap();
    let (t, dev, file) = start_demo(dir.path(), journal.path());
    t.keys(&["s"]);
    t.wait("the picker", |s| s.contains(&format!("scheduler of {dev}")));
    t.keys(&["Down", "Enter"]);
    // What the panel measured, never a promise (issue 32, item 5).
    let s = t.wait("the after hint", |s| {
        s.contains(&format!("DEMO {dev}: kyber: "))
    });
    assert_eq!(sysfs_scheduler(&dev), "kyber");
    assert!(s.contains("mq-deadline→kyber"), "{s}");
    t.keys(&["q"]);
    let s = t.wait("the demo's end", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0") && s.contains("demo over"), "{s}");
    assert_cleaned(&dev, &file);
}

#[test]
fn demo_cleans_up_on_sigterm_and_sighup() {
    if !require_root("demo_signals") || !require_tool("demo_signals", "tmux") {
        return;
    }
    let base = option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    for sig in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGHUP,
    ] {
        let dir = tempfile::tempdir_in(&base).unwrap();
        let journal = tempfile::tempdir().unwrap();
        let (t, dev, file) = start_demo(dir.path(), journal.path());
        let kids = t.children();
        assert_eq!(kids.len(), 1, "{kids:?}");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(kids[0]), sig).unwrap();
        let s = t.wait(&format!("the demo's end on {sig}"), |s| s.contains("EXIT="));
        assert!(s.contains("demo over"), "{sig}: {s}");
        assert_cleaned(&dev, &file);
    }
}

#[test]
fn demo_cleans_up_when_its_terminal_vanishes() {
    if !require_root("demo_vanish") || !require_tool("demo_vanish", "tmux") {
        return;
    }
    let base = option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let dir = tempfile::tempdir_in(base).unwrap();
    let journal = tempfile::tempdir().unwrap();
    let (t, dev, file) = start_demo(dir.path(), journal.path());
    let pid = t.children()[0];
    // The server goes with the pane; no signal reaches the child of `sh -c`.
    t.kill_server();
    wait_until(TIMEOUT, || {
        !alive(pid) && backing(&dev).as_deref() != Some(file.as_str())
    });
    assert!(!alive(pid), "the demo outlived its terminal");
    assert_cleaned(&dev, &file);
}

#[test]
fn demo_as_non_root_says_so_in_one_line() {
    if !require_root("demo_non_root") || !require_tool("demo_non_root", "setpriv") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = public_binary(dir.path());
    let o = as_nobody(&bin)
        .arg("demo")
        .current_dir("/")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("needs root"), "{err}");
}
