//! The load generator on real loop devices (root only): it runs on its own
//! scratch device, and refuses to write anywhere else.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune_core::load::{Load, LoadError, LoadOptions, Mix, Scratch, Target};
use blktune_core::os::SysRoot;
use common::*;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::time::Duration;

fn refusal(root: &SysRoot, name: &str) -> String {
    match Target::writable(root, name) {
        Err(e @ LoadError::WriteRefused { .. }) => e.to_string(),
        other => panic!("expected a refusal for {name}, got {other:?}"),
    }
}

#[test]
fn mixed_load_on_own_scratch_measures_reads_and_writes() {
    if !require_root("mixed_load_on_own_scratch_measures_reads_and_writes") {
        return;
    }
    let dir = temp_in_target();
    let root = SysRoot::default();
    let s = Scratch::create(dir.path(), 64 << 20).unwrap();
    let target = Target::writable(&root, s.name()).unwrap();
    assert!(target.writes_allowed());
    let mut opts = LoadOptions::new(Mix::Mixed);
    opts.duration = Some(Duration::from_millis(1500));
    let load = Load::start(&target, &opts, None).unwrap();
    assert!(
        wait_until(TIMEOUT, || load.is_finished()),
        "load never ended"
    );
    let st = load.stop();
    assert_eq!(st.first_error, None);
    assert!(st.reads.ios > 0 && st.writes.ios > 0, "{st:?}");
    assert_eq!(st.writes.bytes, st.writes.ios << 20, "1 MiB writes");
    assert_eq!(st.reads.bytes, st.reads.ios * 4096, "4 KiB reads");
    let r = st.reads.hist.summary_ms().unwrap();
    assert!(r.p99 > 0.0 && r.p99 >= r.p50 && r.max >= r.p999, "{r:?}");
    assert!(
        st.elapsed >= Duration::from_millis(1400),
        "{:?}",
        st.elapsed
    );
    assert!(st.read_iops() > 0.0 && st.mb_s() > 0.0);

    let mut opts = LoadOptions::new(Mix::RandRw);
    opts.duration = Some(Duration::from_millis(500));
    let st = Load::start(&target, &opts, None).unwrap();
    assert!(wait_until(TIMEOUT, || st.is_finished()), "load never ended");
    let st = st.stop();
    assert_eq!(st.first_error, None);
    assert!(st.reads.ios > 0 && st.writes.ios > 0, "{st:?}");
    // Writes keep clear of the head: still no signature, still writable.
    assert!(Target::writable(&root, s.name()).is_ok());

    let file = s.file().to_owned();
    drop(target);
    drop(s);
    assert!(!file.exists(), "scratch file removed on drop");
    assert!(loop_gone(dir.path()), "loop device detached on drop");
}

#[test]
fn writes_are_refused_to_devices_the_generator_did_not_create() {
    if !require_root("writes_are_refused_to_devices_the_generator_did_not_create") {
        return;
    }
    let root = SysRoot::default();
    // Created by this test, not by the generator: read-only only.
    let lo = TestLoop::new(16);
    let before = std::fs::read(format!("/dev/{}", lo.name())).unwrap();
    assert!(refusal(&root, lo.name()).contains("created itself"));
    let ro = Target::read_only(&root, lo.name()).unwrap();
    for mix in [Mix::Mixed, Mix::RandRw] {
        match Load::start(&ro, &LoadOptions::new(mix), None) {
            Err(LoadError::WriteRefused { why, .. }) => assert!(why.contains("writes"), "{why}"),
            other => panic!("{mix}: expected a refusal, got {other:?}"),
        }
    }
    // A read load is fine and leaves the data untouched.
    let mut opts = LoadOptions::new(Mix::RandRead);
    opts.duration = Some(Duration::from_millis(300));
    let st = Load::start(&ro, &opts, None).unwrap();
    assert!(wait_until(TIMEOUT, || st.is_finished()), "load never ended");
    let st = st.stop();
    assert!(st.reads.ios > 0 && st.writes.ios == 0);
    assert_eq!(
        std::fs::read(format!("/dev/{}", lo.name())).unwrap(),
        before
    );

    // The VM's disk: refused from sysfs/procfs facts alone, never opened for writing.
    if root.device("vda").is_some() {
        let why = refusal(&root, "vda");
        assert!(why.starts_with("refusing to write to 'vda'"), "{why}");
    }
}

#[test]
fn own_scratch_with_a_signature_is_refused() {
    if !require_root("own_scratch_with_a_signature_is_refused") {
        return;
    }
    let dir = temp_in_target();
    let root = SysRoot::default();
    let s = Scratch::create(dir.path(), 16 << 20).unwrap();
    assert!(
        Target::writable(&root, s.name()).is_ok(),
        "a blank one is fine"
    );
    // The test writes signatures into a device it (through the generator) created.
    let dev = std::fs::OpenOptions::new()
        .write(true)
        .open(s.dev_path())
        .unwrap();
    let put = |off: u64, bytes: &[u8]| {
        dev.write_all_at(bytes, off).unwrap();
        dev.sync_all().unwrap();
    };
    put(1080, &[0x53, 0xEF]);
    assert!(refusal(&root, s.name()).contains("ext2/3/4 filesystem"));
    put(1080, &[0, 0]);
    put(510, &[0x55, 0xAA]);
    assert!(refusal(&root, s.name()).contains("MBR partition table"));
    put(510, &[0, 0]);
    put(512, b"EFI PART");
    assert!(refusal(&root, s.name()).contains("GPT"));
    put(512, &[0; 8]);
    assert!(Target::writable(&root, s.name()).is_ok(), "blank again");
    let mut f = &dev;
    f.flush().unwrap();
    drop(dev);
    drop(s);
    assert!(loop_gone(dir.path()));
}
