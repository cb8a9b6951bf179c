//! Scratch loop devices on the real kernel (root): the loop number is left
//! with the queue settings it had when blktune attached it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use blktune::scratch::ScratchLoop;
use blktune::tuner::{Settings, Tuner};
use common::require_root;
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// A loop device this test attached to a chosen number; detached on drop.
struct Reattached(String);

impl Drop for Reattached {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

/// Attach a new file to exactly `/dev/<name>`; `None` if a parallel test took
/// the number first.
fn reattach(name: &str, dir: &Path) -> Option<Reattached> {
    let file = dir.join("second.img");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let dev = format!("/dev/{name}");
    let ok = Command::new("losetup")
        .arg(&dev)
        .arg(&file)
        .status()
        .unwrap()
        .success();
    ok.then_some(Reattached(dev))
}

/// Create a scratch device, switch its scheduler and nr_requests through the
/// tuner, tear it down with `teardown`, then attach the same loop number to a
/// new file and compare. `Err` when a parallel test took the number.
fn round(how: &str, teardown: fn(ScratchLoop)) -> Result<(), String> {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(base).unwrap();
    let lo = ScratchLoop::create(dir.path(), 32 << 20).expect("losetup");
    let name = lo.name().to_owned();
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
    let want = Settings {
        scheduler: Some(other.into()),
        nr_requests: Some(nr),
        ..Settings::default()
    };
    Tuner::new(Default::default(), None)
        .apply(&name, &want)
        .unwrap();
    let changed = queue_of(&name);
    assert_eq!(active(&changed[0].1), other);
    assert_eq!(changed[1].1, nr.to_string());

    teardown(lo);
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
