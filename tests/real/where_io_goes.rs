//! Where the I/O goes, on real devices: a process writing to a loop device of
//! this test shows in the per-process sample with that device, and the loop
//! device's backing file is traced to the filesystem it lives on.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune_core::device;
use blktune_core::os::SysRoot;
use blktune_core::procio::ProcessWatch;
use blktune_core::topology::Topology;
use common::*;
use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};

/// Kills the writer on every way out of the test.
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_dd_to_our_loop_device_is_named_with_its_device() {
    if !require_root("a_dd_to_our_loop_device_is_named_with_its_device") {
        return;
    }
    let lo = TestLoop::new(64);
    let node = format!("/dev/{}", lo.name());
    // Synchronous 4 KiB writes: one long-lived process that keeps writing
    // (buffered, so the kernel accounts write_bytes to it when it dirties pages).
    let writer = Writer(
        Command::new("dd")
            .args([
                "if=/dev/zero",
                &format!("of={node}"),
                "bs=4k",
                "count=16384",
                "oflag=dsync",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("dd"),
    );
    let pid = writer.0.id();
    let root = SysRoot::default();
    let devices = device::discover(&root).unwrap();
    let by_number: BTreeMap<(u32, u32), String> = devices
        .iter()
        .map(|d| ((d.major, d.minor), d.name.clone()))
        .collect();
    let mut watch = ProcessWatch::new();
    let first = watch.sample(&root, &by_number, 20);
    assert!(first.rows.is_empty(), "no rates on the first sample");
    let mut seen = None;
    assert!(
        wait_until(TIMEOUT, || {
            std::thread::sleep(std::time::Duration::from_millis(500));
            let s = watch.sample(&root, &by_number, 20);
            assert!(!s.limited, "root sees every process");
            seen = s.rows.into_iter().find(|r| r.pid == pid);
            seen.as_ref().is_some_and(|r| r.write_bps > 0.0)
        }),
        "dd (pid {pid}) never showed writing"
    );
    let r = seen.unwrap();
    assert!(r.command.starts_with("dd "), "{r:?}");
    assert_eq!(r.user, "root");
    assert_eq!(
        r.devices.first().map(String::as_str),
        Some(lo.name()),
        "{r:?}"
    );

    // The loop device is traced to its backing file and the file's filesystem.
    let t = Topology::read(&root, &devices);
    let p = t.of(lo.name()).expect("a placement for our loop device");
    let b = p.backing.as_ref().expect("a backing file");
    assert!(b.file.contains("tmp"), "{b:?}");
    assert!(b.mount_point.is_some(), "{b:?}");
    assert!(p.lines().iter().any(|l| l.starts_with("file ")), "{p:?}");
}
