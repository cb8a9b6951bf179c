//! Device discovery on fake sysfs trees: every device type, devices without a
//! scheduler, stacked devices (dm/md with slaves and their holders), partitions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::device::{BlockDevice, DeviceKind, discover};
use blktune_core::fake::{FakeDisk, FakeTree};

/// One machine with one device of every kind blktune knows.
fn zoo(dir: &std::path::Path) -> FakeTree {
    let t = FakeTree::new(dir).unwrap();
    let disks = [
        FakeDisk::new("nvme0n1")
            .dev(259, 0)
            .model("Samsung SSD 980 PRO 1TB", None)
            .ids(Some("S5GXNF0R123456"), Some("eui.002538b111b0a1b2"))
            .active("none")
            .partitions(&["nvme0n1p1", "nvme0n1p2"]),
        FakeDisk::new("sda")
            .dev(8, 0)
            .model("Samsung SSD 870", Some("ATA"))
            .partitions(&["sda1"]),
        FakeDisk::new("sdb")
            .dev(8, 16)
            .rotational(true)
            .model("ST4000DM004-2CV1", Some("ATA"))
            .active("bfq")
            .stacked(&["dm-0"], &[]),
        FakeDisk::new("vda").dev(254, 0).rotational(true),
        FakeDisk::new("loop0").dev(7, 0).active("none"),
        FakeDisk::new("zram0").dev(252, 0).no_queue(),
        FakeDisk::new("md0")
            .dev(9, 0)
            .no_queue()
            .stacked(&[], &["sda1", "nvme0n1p2"]),
        FakeDisk::new("dm-0")
            .dev(253, 0)
            .no_queue()
            .stacked(&[], &["sdb"]),
        FakeDisk::new("mmcblk0")
            .dev(179, 0)
            .active("bfq")
            .partitions(&["mmcblk0p1"]),
        FakeDisk::new("sr0").dev(11, 0).rotational(true),
    ];
    for d in &disks {
        t.add(d).unwrap();
    }
    t
}

fn find<'a>(devs: &'a [BlockDevice], name: &str) -> &'a BlockDevice {
    devs.iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} not discovered"))
}

#[test]
fn every_device_type_is_classified() {
    let dir = tempfile::tempdir().unwrap();
    let t = zoo(dir.path());
    let devs = discover(&t.root()).unwrap();
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "dm-0", "loop0", "md0", "mmcblk0", "nvme0n1", "sda", "sdb", "sr0", "vda", "zram0"
        ],
        "sorted, partitions are not top-level devices"
    );
    let kinds = [
        ("nvme0n1", DeviceKind::Nvme),
        ("sda", DeviceKind::Ssd),
        ("sdb", DeviceKind::Hdd),
        ("vda", DeviceKind::Virtio),
        ("loop0", DeviceKind::Loop),
        ("zram0", DeviceKind::Zram),
        ("md0", DeviceKind::Md),
        ("dm-0", DeviceKind::Dm),
        ("mmcblk0", DeviceKind::Mmc),
        ("sr0", DeviceKind::Rom),
    ];
    for (name, kind) in kinds {
        assert_eq!(find(&devs, name).kind, kind, "{name}");
    }
}

#[test]
fn identity_attributes_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let t = zoo(dir.path());
    let devs = discover(&t.root()).unwrap();
    let nvme = find(&devs, "nvme0n1");
    assert_eq!((nvme.major, nvme.minor), (259, 0));
    assert_eq!(nvme.model.as_deref(), Some("Samsung SSD 980 PRO 1TB"));
    assert_eq!(nvme.serial.as_deref(), Some("S5GXNF0R123456"));
    assert_eq!(nvme.wwid.as_deref(), Some("eui.002538b111b0a1b2"));
    assert_eq!(nvme.size_bytes, 20 << 30);
    assert_eq!(nvme.rotational, Some(false));
    assert!(!nvme.removable && !nvme.read_only);
    assert_eq!(nvme.partitions, ["nvme0n1p1", "nvme0n1p2"]);
    let sdb = find(&devs, "sdb");
    assert_eq!(sdb.rotational, Some(true));
    // Vendor and model apart, as sysfs and lsblk have them.
    assert_eq!(sdb.vendor.as_deref(), Some("ATA"));
    assert_eq!(sdb.model.as_deref(), Some("ST4000DM004-2CV1"));
}

#[test]
fn blk_mq_devices_have_schedulers_and_the_active_ones_tunables() {
    let dir = tempfile::tempdir().unwrap();
    let t = zoo(dir.path());
    let devs = discover(&t.root()).unwrap();
    let sda = find(&devs, "sda");
    let s = sda.queue.scheduler.as_ref().unwrap();
    assert_eq!(s.active, "mq-deadline");
    assert_eq!(s.available, ["none", "mq-deadline", "kyber", "bfq"]);
    assert_eq!(sda.queue.nr_requests, Some(256));
    assert_eq!(sda.queue.read_ahead_kb, Some(128));
    assert_eq!(
        sda.queue.tunables.get("read_expire").map(String::as_str),
        Some("500")
    );
    assert_eq!(sda.queue.tunables.len(), 7);
    let sdb = find(&devs, "sdb");
    assert_eq!(sdb.queue.active_label(), "bfq");
    assert_eq!(
        sdb.queue.tunables.get("slice_idle").map(String::as_str),
        Some("8")
    );
    // `none` has no tunables.
    assert!(find(&devs, "loop0").queue.tunables.is_empty());
    assert_eq!(find(&devs, "loop0").queue.active_label(), "none");
}

#[test]
fn zram_md_and_dm_have_no_scheduler_but_keep_read_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let t = zoo(dir.path());
    let devs = discover(&t.root()).unwrap();
    for name in ["zram0", "md0", "dm-0"] {
        let d = find(&devs, name);
        assert!(!d.queue.has_scheduler(), "{name}");
        assert_eq!(d.queue.active_label(), "-");
        assert_eq!(d.queue.nr_requests, None, "{name}");
        assert_eq!(d.queue.read_ahead_kb, Some(128), "{name}");
        assert!(d.queue.tunables.is_empty(), "{name}");
    }
}

#[test]
fn old_kernels_plain_none_means_no_scheduler() {
    let dir = tempfile::tempdir().unwrap();
    let t = FakeTree::new(dir.path()).unwrap();
    t.add(&FakeDisk::new("md1").dev(9, 1)).unwrap();
    std::fs::write(t.dev_dir("md1").join("queue/scheduler"), "none\n").unwrap();
    let devs = discover(&t.root()).unwrap();
    assert!(!devs[0].queue.has_scheduler());
}

#[test]
fn stacked_devices_point_at_the_disks_whose_schedulers_matter() {
    let dir = tempfile::tempdir().unwrap();
    let t = zoo(dir.path());
    let devs = discover(&t.root()).unwrap();
    let dm = find(&devs, "dm-0");
    assert_eq!(dm.slaves, ["sdb"]);
    assert!(dm.holders.is_empty());
    // The slave knows its holder, and it is the one with a scheduler.
    let sdb = find(&devs, "sdb");
    assert_eq!(sdb.holders, ["dm-0"]);
    assert!(sdb.queue.has_scheduler());
    let md = find(&devs, "md0");
    assert_eq!(md.slaves, ["nvme0n1p2", "sda1"]);
}

#[test]
fn partitions_resolve_to_their_disk() {
    let dir = tempfile::tempdir().unwrap();
    let t = zoo(dir.path());
    let root = t.root();
    assert_eq!(
        root.parent_of_partition("mmcblk0p1").unwrap().as_str(),
        "mmcblk0"
    );
    assert_eq!(root.parent_of_partition("sda1").unwrap().as_str(), "sda");
    assert!(root.parent_of_partition("sda9").is_none());
    assert!(root.device("sda1").is_none(), "a partition is not a disk");
    let err = blktune_core::tuner::resolve(&root, "sda1").unwrap_err();
    assert!(err.to_string().contains("use 'sda'"), "{err}");
}

#[test]
fn malformed_attribute_files_give_no_value_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let t = FakeTree::new(dir.path()).unwrap();
    t.add(&FakeDisk::new("sda")).unwrap();
    let d = t.dev_dir("sda");
    for (f, junk) in [
        ("dev", "eight:zero\n"),
        ("size", "-1\n"),
        ("queue/nr_requests", "lots\n"),
        ("queue/read_ahead_kb", "\u{0}\u{1}\n"),
        ("queue/scheduler", "[[[\n"),
        ("diskseq", "x"),
    ] {
        std::fs::write(d.join(f), junk).unwrap();
    }
    // a directory where a file should be
    std::fs::remove_file(d.join("ro")).unwrap();
    std::fs::create_dir(d.join("ro")).unwrap();
    let devs = discover(&t.root()).unwrap();
    let sda = &devs[0];
    assert_eq!((sda.major, sda.minor, sda.size_bytes), (0, 0, 0));
    assert_eq!(sda.queue.nr_requests, None);
    assert_eq!(sda.queue.read_ahead_kb, None);
    assert!(!sda.read_only);
    assert_eq!(sda.diskseq, None);
}

#[test]
fn the_hardware_queue_depth_is_the_smallest_nr_tags_and_list_json_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = FakeTree::new(dir.path()).unwrap();
    t.add(&FakeDisk::new("nvme0n1").dev(259, 0).hw_queue_depth(1023))
        .unwrap();
    // A second hardware queue with a smaller depth: the kernel's limit is the smallest.
    let q1 = t.dev_dir("nvme0n1").join("mq/1");
    std::fs::create_dir_all(&q1).unwrap();
    std::fs::write(q1.join("nr_tags"), "64\n").unwrap();
    t.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
    let devs = discover(&t.root()).unwrap();
    assert_eq!(find(&devs, "nvme0n1").hw_queue_depth, Some(64));
    assert_eq!(find(&devs, "sda").hw_queue_depth, None, "no mq/ directory");

    let o = std::process::Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["list", "--json", "--sysfs-root"])
        .arg(dir.path().join("sys"))
        .arg("--proc-root")
        .arg(dir.path().join("proc"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let depth = |name: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .unwrap()["hw_queue_depth"]
            .clone()
    };
    assert_eq!(depth("nvme0n1"), 64);
    assert_eq!(depth("sda"), serde_json::Value::Null);
}
