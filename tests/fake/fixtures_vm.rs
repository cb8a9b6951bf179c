//! Discovery on a tree captured from a real machine with
//! `tests/fixtures/capture.sh tests/fixtures/vm-6.18 vda zram0 loop1`
//! (Linux 6.18 VM: a virtio disk on mq-deadline, an unconfigured zram with no
//! scheduler, and a loop device the capturing session created and set to bfq).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::device::{DeviceKind, discover};
use blktune_core::diskstats;
use blktune_core::os::SysRoot;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm-6.18")
}

fn root() -> SysRoot {
    SysRoot::new(fixture().join("sys"), fixture().join("proc"))
}

/// The captured trees' symlinks (`sys/dev/block/MAJ:MIN`, and the links of
/// the captures of other projects) all stay inside their tree: a fixture
/// never points at the machine's own /sys.
#[test]
fn no_captured_tree_points_outside_itself() {
    fn walk(top: &Path, p: &Path) {
        for e in std::fs::read_dir(p).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                let target = std::fs::read_link(e.path()).unwrap();
                assert!(target.is_relative(), "{}", e.path().display());
                let resolved = std::fs::canonicalize(e.path()).unwrap();
                assert!(
                    resolved.starts_with(std::fs::canonicalize(top).unwrap()),
                    "{} -> {}",
                    e.path().display(),
                    target.display()
                );
            } else if t.is_dir() {
                walk(top, &e.path());
            }
        }
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for tree in [
        fixture(),
        crate::common::fixture_tree(&fixtures.join("captured/node-exporter")),
        crate::common::fixture_tree(&fixtures.join("captured/procfs")),
    ] {
        walk(&tree, &tree);
    }
}

#[test]
fn captured_devices_are_discovered_as_the_kernel_described_them() {
    let devs = discover(&root()).unwrap();
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["loop1", "vda", "zram0"]);

    let vda = &devs[1];
    assert_eq!(vda.kind, DeviceKind::Virtio);
    assert_eq!((vda.major, vda.minor), (254, 0));
    assert_eq!(vda.size_bytes, 536_870_912 * 512);
    assert_eq!(vda.serial.as_deref(), Some("overlayblk"));
    assert_eq!(
        vda.vendor.as_deref(),
        Some("0x1af4"),
        "virtio's numeric vendor id, as sysfs and lsblk show it"
    );
    assert_eq!(vda.diskseq, Some(9));
    let s = vda.queue.scheduler.as_ref().unwrap();
    assert_eq!(s.active, "mq-deadline");
    assert_eq!(s.available, ["none", "mq-deadline", "kyber", "bfq"]);
    assert_eq!(vda.queue.nr_requests, Some(256));
    assert_eq!(vda.queue.read_ahead_kb, Some(8192));
    assert_eq!(
        vda.queue.tunables.keys().collect::<Vec<_>>(),
        [
            "async_depth",
            "fifo_batch",
            "front_merges",
            "prio_aging_expire",
            "read_expire",
            "write_expire",
            "writes_starved"
        ]
    );
    assert_eq!(vda.queue.tunables["read_expire"], "500");

    let lo = &devs[0];
    assert_eq!(lo.kind, DeviceKind::Loop);
    assert_eq!((lo.major, lo.minor, lo.size_bytes), (7, 1, 64 << 20));
    assert_eq!(lo.queue.active_label(), "bfq");
    assert_eq!(lo.queue.tunables.len(), 10);
    assert_eq!(lo.queue.tunables["slice_idle"], "8");
    assert_eq!(lo.serial, None);

    let z = &devs[2];
    assert_eq!(z.kind, DeviceKind::Zram);
    assert!(!z.queue.has_scheduler());
    assert_eq!(
        (z.queue.nr_requests, z.queue.read_ahead_kb),
        (None, Some(128))
    );
    assert_eq!(z.size_bytes, 0);
}

#[test]
fn captured_diskstats_parse_with_20_columns() {
    let text = root().read_diskstats().unwrap();
    let (good, bad) = diskstats::parse(&text);
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(good.len(), 3);
    let vda = good.iter().find(|l| l.name == "vda").unwrap();
    assert!(vda.counters.flush.is_some() && vda.counters.discard.is_some());
    assert_eq!(vda.counters.rd_ios, 122_625);
}

#[test]
fn list_json_on_the_captured_tree() {
    let o = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["list", "--json", "--all", "--sysfs-root"])
        .arg(fixture().join("sys"))
        .arg("--proc-root")
        .arg(fixture().join("proc"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 3);
    assert_eq!(arr[1]["name"], "vda");
    assert_eq!(arr[1]["type"], "virtio");
    assert_eq!(arr[1]["scheduler"], "mq-deadline");
    assert_eq!(arr[1]["maj_min"], "254:0");
    assert_eq!(arr[2]["scheduler"], serde_json::Value::Null);
    // Without --all, zram (no scheduler, size 0) is left out.
    let o = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["list", "--json", "--sysfs-root"])
        .arg(fixture().join("sys"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["loop1", "vda"]);
}
