use super::open_attr::on_sysfs;
use super::*;

#[test]
fn names_with_path_tricks_are_refused() {
    for bad in ["", ".", "..", "../vda", "sda/queue", "a b", "x\0y", "sda\n"] {
        assert!(!is_plausible_device_name(bad), "{bad:?}");
    }
    for good in [
        "sda",
        "nvme0n1",
        "loop3",
        "dm-0",
        "cciss!c0d0",
        "md127",
        "mmcblk0",
    ] {
        assert!(is_plausible_device_name(good), "{good:?}");
    }
}

#[test]
fn device_needs_an_entry_under_block() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("sys/block/sda/queue")).unwrap();
    fs::create_dir_all(dir.path().join("sys/vda")).unwrap();
    let root = SysRoot::new(dir.path().join("sys"), dir.path().join("proc"));
    assert!(root.device("sda").is_some());
    assert!(root.device("sdb").is_none());
    assert!(root.device("../vda").is_none());
    assert!(root.device("..").is_none());
}

#[test]
fn tunable_paths_cannot_escape_iosched() {
    let root = SysRoot::new("/s", "/p");
    let dev = DeviceName("sda".into());
    assert_eq!(
        root.queue_attr_path(&dev, &QueueAttr::Tunable("read_expire".into())),
        Some(PathBuf::from("/s/block/sda/queue/iosched/read_expire"))
    );
    assert_eq!(
        root.queue_attr_path(&dev, &QueueAttr::Tunable("../../x".into())),
        None
    );
    assert_eq!(
        root.queue_attr_path(&dev, &QueueAttr::Tunable(String::new())),
        None
    );
}

/// A tree given with --sysfs-root is not trusted: an attribute that is a
/// symlink, a FIFO or a device node is not written (and a FIFO does not
/// hang the write); a regular file is.
#[test]
fn only_regular_attribute_files_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("block/sda/queue");
    fs::create_dir_all(&q).unwrap();
    let root = SysRoot::new(dir.path(), "/proc");
    let dev = DeviceName("sda".into());
    let write = |attr: QueueAttr| root.write_queue_attr(&dev, &attr, "64");
    fs::write(q.join("nr_requests"), "256\n").unwrap();
    write(QueueAttr::NrRequests).unwrap();
    assert_eq!(fs::read_to_string(q.join("nr_requests")).unwrap(), "64");
    let target = dir.path().join("target");
    fs::write(&target, "untouched").unwrap();
    std::os::unix::fs::symlink(&target, q.join("read_ahead_kb")).unwrap();
    assert!(write(QueueAttr::ReadAheadKb).is_err());
    assert_eq!(fs::read_to_string(&target).unwrap(), "untouched");
    nix::unistd::mkfifo(&q.join("scheduler"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert!(write(QueueAttr::Scheduler).is_err());
    // A character device (/dev/null's numbers) where root can make one.
    let node = q.join("iosched/read_expire");
    fs::create_dir_all(node.parent().unwrap()).unwrap();
    if nix::sys::stat::mknod(
        &node,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::S_IRWXU,
        nix::sys::stat::makedev(1, 3),
    )
    .is_ok()
    {
        let e = write(QueueAttr::Tunable("read_expire".into())).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}

/// Reading a hostile tree never hangs: a FIFO in an attribute's place
/// reads as empty (then fails to parse), by the queue directory too.
#[test]
fn a_fifo_attribute_does_not_hang_a_read() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("block/sda/queue");
    fs::create_dir_all(&q).unwrap();
    nix::unistd::mkfifo(&q.join("nr_requests"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    nix::unistd::mkfifo(&q.join("scheduler"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let root = SysRoot::new(dir.path(), "/proc");
    let got = crate::fake::within("a read of a FIFO", move || {
        let dev = DeviceName("sda".into());
        let by_dir = root.queue_dir(&dev).unwrap().read(&QueueAttr::NrRequests);
        let by_path = root.read_queue_attr(&dev, &QueueAttr::Scheduler);
        (by_dir.ok(), by_path.ok())
    });
    assert_eq!(got, (Some(String::new()), Some(String::new())));
    // An attribute a udev rule names, read in a device's lineage.
    let lineage = dir.path().join("devices/x");
    fs::create_dir_all(&lineage).unwrap();
    nix::unistd::mkfifo(&lineage.join("vendor"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let root = SysRoot::new(dir.path(), "/proc");
    let got = crate::fake::within("a lineage read of a FIFO", move || {
        root.read_lineage_attr(&lineage, "vendor").ok()
    });
    assert_eq!(got, Some(String::new()));
}

/// A kept attribute reads its content now, each time from the start;
/// a FIFO or any other file that is not regular is read once, never
/// kept (nor does keeping it open hang). (Off sysfs only this crate's unit
/// tests keep files open: `only_sysfs_files_are_kept`.)
#[test]
fn a_kept_attribute_reads_afresh_and_only_regular_files_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("block/sda/queue");
    fs::create_dir_all(&q).unwrap();
    fs::write(q.join("scheduler"), "none [kyber]\n").unwrap();
    let root = SysRoot::new(dir.path(), "/proc");
    let dev = DeviceName("sda".into());
    let kept = |h: io::Result<Opened>| match h.unwrap() {
        Opened::Kept(h) => h,
        Opened::ReadOnce(s) => panic!("not kept: {s}"),
    };
    let file = kept(root.open_queue_attr(&dev, &QueueAttr::Scheduler));
    assert_eq!(file.read().unwrap(), "none [kyber]");
    assert_eq!(file.read().unwrap(), "none [kyber]", "from the start again");
    // Written in place, as sysfs shows a write (a longer and a shorter value).
    fs::write(q.join("scheduler"), "none kyber [mq-deadline]\n").unwrap();
    assert_eq!(file.read().unwrap(), "none kyber [mq-deadline]");
    fs::write(q.join("scheduler"), "[none]\n").unwrap();
    assert_eq!(file.read().unwrap(), "[none]");
    let by_dir = kept(
        root.queue_dir(&dev)
            .unwrap()
            .open_attr(&QueueAttr::Scheduler),
    );
    assert_eq!(by_dir.read().unwrap(), "[none]");

    nix::unistd::mkfifo(&q.join("nr_requests"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let got = crate::fake::within("keeping a FIFO open", move || {
        let by_path = root.open_queue_attr(&dev, &QueueAttr::NrRequests);
        let by_dir = root
            .queue_dir(&dev)
            .unwrap()
            .open_attr(&QueueAttr::NrRequests);
        [by_path, by_dir].map(|h| match h.unwrap() {
            Opened::ReadOnce(s) => s,
            Opened::Kept(_) => "kept".into(),
        })
    });
    assert_eq!(got, [String::new(), String::new()], "read once, as empty");
}

/// Outside this crate's unit tests a file is kept only on sysfs: a
/// tree given with `--sysfs-root` is read by path, where a file renamed
/// over (or a swapped directory or symlink) shows at the next read.
#[test]
fn only_sysfs_files_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scheduler");
    fs::write(&path, "[none]\n").unwrap();
    assert!(!on_sysfs(&fs::File::open(&path).unwrap()));
    let sysfs = fs::File::open("/sys/kernel/mm/transparent_hugepage/enabled")
        .or_else(|_| fs::File::open("/sys/kernel/btf/vmlinux"))
        .unwrap();
    assert!(on_sysfs(&sysfs));
}

#[test]
fn partition_sizes_in_one_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = SysRoot::new(dir.path(), dir.path());
    assert_eq!(root.read_partition_sizes(), None);
    fs::write(
        dir.path().join("partitions"),
        "major minor  #blocks  name\n\n 254        0  268435456 vda\n   7        1          0 loop1\n garbage\n",
    )
    .unwrap();
    let m = root.read_partition_sizes().unwrap();
    assert_eq!(m["vda"], 268_435_456 * 1024);
    assert_eq!(m["loop1"], 512, "listed means not empty");
    assert_eq!(m.len(), 2);
}

#[test]
fn writes_never_create_files() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("block/sda/queue")).unwrap();
    let root = SysRoot::new(dir.path(), dir.path());
    let dev = root.device("sda").unwrap();
    assert!(
        root.write_queue_attr(&dev, &QueueAttr::NrRequests, "64")
            .is_err()
    );
    assert!(!dir.path().join("block/sda/queue/nr_requests").exists());
}
