//! Scratch loop devices on the real kernel (root): the loop number is left
//! with the queue settings it had when blktune attached it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::scratch::{Creator, ScratchLoop};
use blktune_core::tuner::{Tuner, Wanted};
use common::{Reattached, require_root};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The sweep looks at every loop device: two sweeping tests at once would
/// take each other's planted leftovers.
static SWEEPS: Mutex<()> = Mutex::new(());

/// scheduler, nr_requests and every iosched tunable of `/sys/block/<name>`
/// (read_ahead_kb is left out: the kernel recomputes it at attach).
fn queue_of(name: &str) -> Vec<(String, String)> {
    let q = PathBuf::from("/sys/block").join(name).join("queue");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap().trim().to_string();
    let mut v = vec![
        ("scheduler".to_string(), read(&q.join("scheduler"))),
        ("nr_requests".to_string(), read(&q.join("nr_requests"))),
    ];
    if let Ok(rd) = std::fs::read_dir(q.join("iosched")) {
        let mut t: Vec<(String, String)> = rd
            .map(|e| {
                let e = e.unwrap();
                (e.file_name().into_string().unwrap(), read(&e.path()))
            })
            .collect();
        t.sort();
        v.extend(t);
    }
    v
}

fn active(line: &str) -> &str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(line)
}

/// Attach a new file to exactly `/dev/<name>`; `None` if a parallel test took
/// the number first.
fn reattach(name: &str, dir: &Path) -> Option<Reattached> {
    let file = dir.join("second.img");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    common::reattach(name, &file)
}

/// Create a scratch device, switch its scheduler and nr_requests through the
/// tuner, tear it down with `teardown`, then attach the same loop number to a
/// new file and compare. `Err` when a parallel test took the number.
fn round(how: &str, teardown: fn(ScratchLoop)) -> Result<(), String> {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(base).unwrap();
    let lo = ScratchLoop::create(dir.path(), 32 << 20).expect("losetup");
    let name = lo.name().to_owned();
    let file = lo.file().to_owned();
    let before = queue_of(&name);
    let was = active(&before[0].1).to_owned();
    assert_eq!(
        lo.queue_restore()
            .original()
            .and_then(|o| o.scheduler.clone()),
        Some(was.clone()),
        "recorded at attach"
    );
    let other = ["kyber", "bfq", "mq-deadline"]
        .into_iter()
        .find(|s| *s != was)
        .unwrap();
    let nr = if before[1].1 == "64" { 32 } else { 64 };
    let want = Wanted {
        scheduler: Some(other.into()),
        nr_requests: Some(nr),
        ..Wanted::default()
    };
    Tuner::new(Default::default(), None)
        .apply(&name, &want)
        .unwrap();
    let changed = queue_of(&name);
    assert_eq!(active(&changed[0].1), other);
    assert_eq!(changed[1].1, nr.to_string());

    let kept = blktune_core::scratch::settings_file(&file);
    assert_eq!(
        blktune_core::scratch::read_settings_file(&file).as_ref(),
        lo.queue_restore().original(),
        "kept next to the file for a later run"
    );
    teardown(lo);
    assert!(!file.exists() && !kept.exists());
    // Still there after the detach, with the settings put back.
    assert!(Path::new("/sys/block").join(&name).exists());
    let Some(_again) = reattach(&name, dir.path()) else {
        return Err(format!("{name} was taken by someone else after {how}"));
    };
    assert_eq!(
        queue_of(&name),
        before,
        "{name} after {how}: the settings it had when the scratch device was attached"
    );
    Ok(())
}

fn remove(lo: ScratchLoop) {
    lo.remove().unwrap();
}

fn just_drop(lo: ScratchLoop) {
    drop(lo);
}

#[test]
fn a_scratch_loop_number_keeps_the_settings_it_was_found_with() {
    if !require_root("a_scratch_loop_number_keeps_the_settings_it_was_found_with") {
        return;
    }
    for (how, f) in [("remove", remove as fn(ScratchLoop)), ("drop", just_drop)] {
        // A freed loop number may go to a parallel test before we reattach.
        let mut last = Ok(());
        for _ in 0..3 {
            last = round(how, f);
            if last.is_ok() {
                break;
            }
        }
        last.unwrap();
    }
}

/// A loop device this test attached over `file`; detached on drop.
fn attach(file: &Path) -> Reattached {
    std::fs::File::create(file)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let o = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    Reattached {
        name: String::from_utf8_lossy(&o.stdout)
            .trim()
            .trim_start_matches("/dev/")
            .to_owned(),
        file: file.canonicalize().unwrap(),
    }
}

fn bound_to(file: &Path) -> bool {
    let o = Command::new("losetup")
        .arg("-j")
        .arg(file)
        .output()
        .unwrap();
    !o.stdout.is_empty()
}

fn own_pidns() -> u64 {
    let l = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let l = l.to_string_lossy();
    l.trim_start_matches("pid:[")
        .trim_end_matches(']')
        .parse()
        .unwrap()
}

/// A bench that fails right after the sweep (an unknown scheduler is refused
/// before the scratch device is created): the quickest scratch run there is.
fn quick_scratch_run(dir: &Path, path: &Path) -> String {
    let o = common::blktune(
        &[
            "bench",
            "--scratch",
            "16M",
            "--scratch-dir",
            dir.to_str().unwrap(),
            "--schedulers",
            "none,nosuch",
        ],
        path,
    );
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    common::stderr(&o)
}

#[test]
fn a_scratch_run_sweeps_a_dead_runs_device_and_nothing_else() {
    if !require_root("a_scratch_run_sweeps_a_dead_runs_device_and_nothing_else") {
        return;
    }
    let _one_at_a_time = SWEEPS.lock().unwrap_or_else(|e| e.into_inner());
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(&base).unwrap();
    let j = tempfile::tempdir().unwrap();
    // A pid that is gone: a child that has exited and been reaped.
    let dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    let mut dead = dead;
    dead.wait().unwrap();
    let ns = own_pidns();
    let creator = |pid, start| Creator {
        pid,
        start,
        pidns: ns,
    };
    let gone_file = dir.path().join(creator(dead_pid, 1).file_name(1));
    let orphan = dir.path().join(creator(dead_pid, 1).file_name(2));
    // This test process: alive, so its files are not leftovers.
    let me = Creator::current(&Default::default()).unwrap();
    let live_file = dir.path().join(me.file_name(3));
    let foreign = dir.path().join("disk.img");
    let gone_dev = attach(&gone_file);
    let live_dev = attach(&live_file);
    let foreign_dev = attach(&foreign);
    std::fs::write(&orphan, "").unwrap();

    let err = quick_scratch_run(dir.path(), j.path());
    let gone_name = gone_dev.name.as_str();
    assert!(
        err.lines().any(|l| l
            == format!(
                "blktune: removed leftover scratch device {gone_name} ({}, process {dead_pid} is gone)",
                gone_file.display()
            )),
        "{err}"
    );
    assert!(
        err.lines().any(|l| l
            == format!(
                "blktune: removed leftover scratch file {} (process {dead_pid} is gone)",
                orphan.display()
            )),
        "{err}"
    );
    assert!(!bound_to(&gone_file) && !gone_file.exists() && !orphan.exists());
    // The live run's and the foreign device are untouched.
    assert!(bound_to(&live_file) && live_file.exists(), "{err}");
    assert!(bound_to(&foreign) && foreign.exists(), "{err}");
    drop((live_dev, foreign_dev));
    std::mem::forget(gone_dev); // already detached by the sweep
    assert!(common::loop_gone(dir.path()), "losetup -a is clean");
}

/// The scratch file in `dir` and the loop device bound to it, if any.
fn scratch_in(dir: &Path) -> Option<(PathBuf, String)> {
    let file = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "img"))?;
    let o = Command::new("losetup")
        .arg("-j")
        .arg(&file)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let dev = out
        .split(':')
        .next()?
        .trim()
        .strip_prefix("/dev/")?
        .to_owned();
    Some((file, dev))
}

#[test]
fn a_scratch_run_sweeps_what_a_sigkilled_bench_left() {
    if !require_root("a_scratch_run_sweeps_what_a_sigkilled_bench_left") {
        return;
    }
    let _one_at_a_time = SWEEPS.lock().unwrap_or_else(|e| e.into_inner());
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(&base).unwrap();
    let j = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["bench", "--scratch", "32M", "--scratch-dir"])
        .arg(dir.path())
        .args([
            "--schedulers",
            "kyber,bfq",
            "--dwell",
            "10s",
            "--settle",
            "0s",
        ])
        .env("BLKTUNE_JOURNAL_DIR", j.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t = std::time::Instant::now();
    let too_long = || {
        assert!(t.elapsed().as_secs() < 20, "bench never got going");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let (file, name) = loop {
        match scratch_in(dir.path()) {
            Some(s) => break s,
            None => too_long(),
        }
    };
    // What the scratch guard found at attach, kept next to the file.
    let original = loop {
        match blktune_core::scratch::read_settings_file(&file) {
            Some(o) => break o,
            None => too_long(),
        }
    };
    let was = original.scheduler.clone().unwrap();
    // Killed once the bench switched away from it (to kyber or bfq).
    while active(&queue_of(&name)[0].1) == was {
        too_long();
    }
    child.kill().unwrap(); // SIGKILL: no guard runs
    child.wait().unwrap();
    assert!(common::loop_over(dir.path()), "the kill left the device");

    let err = quick_scratch_run(dir.path(), j.path());
    assert!(
        err.lines().any(|l| l
            == format!(
                "blktune: removed leftover scratch device {name} ({}, process {pid} is gone)",
                file.display()
            )),
        "{err}"
    );
    assert!(common::loop_gone(dir.path()), "losetup -a is clean: {err}");
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "the scratch file and its settings file are gone"
    );
    // The loop number is back on what the killed run found (if no parallel
    // test took it first, in which case that test's own guard rules it).
    if let Some(_again) = reattach(&name, dir.path()) {
        let q = queue_of(&name);
        assert_eq!(active(&q[0].1), was, "{err}");
        assert_eq!(Some(q[1].1.parse().unwrap()), original.nr_requests);
    }
}

/// Another process detaches our scratch device and attaches its own file
/// under the same loop number (loop numbers are shared by the whole
/// machine): the guard must neither put "our" settings onto that device nor
/// detach it. It used to do both, which in the test suite detached a
/// parallel test's device and failed it.
#[test]
fn a_scratch_guard_leaves_a_device_attached_by_someone_else_alone() {
    let t = "a_scratch_guard_leaves_a_device_attached_by_someone_else_alone";
    if !require_root(t) {
        return;
    }
    common::retry_node_races(t, || {
        let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let dir = tempfile::tempdir_in(base).unwrap();
        let lo = ScratchLoop::create(dir.path(), 32 << 20).expect("losetup");
        let name = lo.name().to_owned();
        // Our scratch device has its own scheduler, which its guard would
        // put back at teardown.
        Tuner::new(Default::default(), None)
            .apply(
                &name,
                &Wanted {
                    scheduler: Some("kyber".into()),
                    ..Wanted::default()
                },
            )
            .unwrap();
        let st = Command::new("losetup")
            .arg("-d")
            .arg(format!("/dev/{name}"))
            .status()
            .unwrap();
        assert!(st.success());
        let Some(_theirs) = reattach(&name, dir.path()) else {
            eprintln!("{name} was taken by another process after the detach");
            drop(lo);
            return false;
        };
        // "Their" device, with settings of its own.
        let q = PathBuf::from("/sys/block").join(&name).join("queue");
        std::fs::write(q.join("scheduler"), "bfq").unwrap();
        std::fs::write(q.join("nr_requests"), "100").unwrap();
        let theirs = queue_of(&name);
        let err = lo
            .remove()
            .expect_err("the guard says it left the device alone");
        assert!(err.to_string().contains("left alone"), "{err}");
        let backing = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
            .expect("their device is still attached");
        assert!(backing.contains("second.img"), "{backing}");
        assert_eq!(queue_of(&name), theirs, "their settings are untouched");
        true
    });
}
