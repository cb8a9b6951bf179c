//! The sampler on the real tree, with a loop device of the test's own: a
//! resize shows at the next tick (the kernel's change uevent), and a
//! scheduler switched behind blktune's back (no uevent at all) within 5 s
//! of ticks at 1 s (the settings round-robin). Root only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::device::QueueSettings;
use blktune_core::os::SysRoot;
use blktune_core::sampler::{Sampler, Snapshot};
use common::{TestLoop, require_root};
use std::process::Command;
use std::time::{Duration, Instant};

fn device<'a>(s: &'a Snapshot, name: &str) -> &'a blktune_core::device::BlockDevice {
    s.devices
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} not in the snapshot"))
}

#[test]
fn a_resized_device_shows_its_new_size_at_the_next_tick() {
    if !require_root("a_resized_device_shows_its_new_size_at_the_next_tick") {
        return;
    }
    let lo = TestLoop::new(16);
    let name = lo.name().to_string();
    let mut sampler = Sampler::new(SysRoot::default()).unwrap();
    let s = sampler.tick().unwrap();
    assert_eq!(device(&s, &name).size_bytes, 16 << 20);

    std::fs::OpenOptions::new()
        .write(true)
        .open(lo.dev.file())
        .unwrap()
        .set_len(48 << 20)
        .unwrap();
    let st = Command::new("losetup")
        .arg("-c")
        .arg(lo.dev.dev_path())
        .status()
        .unwrap();
    assert!(st.success(), "losetup -c");
    assert_eq!(
        std::fs::read_to_string(format!("/sys/block/{name}/size"))
            .unwrap()
            .trim(),
        (48u64 << 20 >> 9).to_string(),
        "the kernel took the new size"
    );
    // The change event is sent before `losetup -c` returns; give the socket
    // a moment, as the interval between two ticks would.
    std::thread::sleep(Duration::from_millis(200));
    let s = sampler.tick().unwrap();
    assert_eq!(
        device(&s, &name).size_bytes,
        48 << 20,
        "the next tick after the resize"
    );
}

#[test]
fn a_scheduler_switched_behind_blktunes_back_shows_within_5_s() {
    if !require_root("a_scheduler_switched_behind_blktunes_back_shows_within_5_s") {
        return;
    }
    let lo = TestLoop::new(16);
    let name = lo.name().to_string();
    let mut sampler = Sampler::new(SysRoot::default()).unwrap();
    let active = |s: &Snapshot| {
        device(s, &name)
            .queue
            .scheduler
            .as_ref()
            .map(|sc| sc.active.clone())
    };
    let s = sampler.tick().unwrap();
    assert_eq!(active(&s).as_deref(), Some("none"));

    // Someone else switches it: no uevent, only the round-robin can see it.
    lo.set_queue("scheduler", "kyber");
    let switched = Instant::now();
    let mut seen = None;
    for _ in 0..7 {
        std::thread::sleep(Duration::from_secs(1));
        let s = sampler.tick().unwrap();
        if active(&s).as_deref() == Some("kyber") {
            seen = Some(switched.elapsed());
            break;
        }
    }
    let seen = seen.expect("the switch never showed in 7 ticks at 1 s");
    // Five ticks at 1 s, plus the time the ticks themselves take.
    assert!(seen <= Duration::from_millis(5_500), "shown after {seen:?}");
}

/// The round-robin reads a scheduler line through the file kept open since
/// the first read: on real sysfs each read from the start shows the value
/// now, every switch made since (and none of them made through it).
#[test]
fn a_held_scheduler_file_shows_every_switch_on_sysfs() {
    if !require_root("a_held_scheduler_file_shows_every_switch_on_sysfs") {
        return;
    }
    let lo = TestLoop::new(16);
    let root = SysRoot::default();
    let dev = root.device(lo.name()).unwrap();
    let mut held = None;
    let active = |held: &mut Option<_>| {
        QueueSettings::read_scheduler_kept(&root, &dev, held, true)
            .unwrap()
            .map(|s| s.active)
    };
    assert_eq!(active(&mut held).as_deref(), Some("none"));
    assert!(held.is_some(), "held from the first read");
    for s in ["kyber", "mq-deadline", "bfq", "none"] {
        lo.set_queue("scheduler", s);
        assert_eq!(active(&mut held).as_deref(), Some(s));
    }
    let h = held.as_ref().unwrap();
    lo.set_queue("scheduler", "kyber");
    // The whole line, whatever order the schedulers were registered in.
    let line = h.read().unwrap();
    assert!(
        line.contains("[kyber]") && line.contains("none") && line.contains("bfq"),
        "{line}"
    );
}
