//! A fake machine for the CLI and export tests: a generated sysfs/proc tree,
//! a udev database and a journal directory of its own, and the binary run
//! against it (never the real tree or the real journal).

use blktune_core::device::{self, BlockDevice};
use blktune_core::export::{ExportItem, Format, RenderOptions, UdevDb};
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::tuner::Wanted;
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

/// A fake tree of loop devices `loop<minor>` (major 7, idle queues) in a
/// temporary directory of its own, for the screen tests.
pub fn loop_tree(minors: impl IntoIterator<Item = u32>) -> (tempfile::TempDir, FakeTree) {
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(dir.path()).unwrap();
    for minor in minors {
        tree.add(&FakeDisk::new(&format!("loop{minor}")).dev(7, minor))
            .unwrap();
    }
    (dir, tree)
}

/// The fake machine; everything lives in its temporary directory.
pub struct FakeHost {
    pub dir: tempfile::TempDir,
    pub tree: FakeTree,
}

impl FakeHost {
    /// A tree with these disks, an empty udev database and journal.
    pub fn new(disks: &[FakeDisk]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(dir.path()).unwrap();
        for d in disks {
            tree.add(d).unwrap();
        }
        for sub in ["udev-data", "journal", "out"] {
            fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Self { dir, tree }
    }

    /// A path inside the host's directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The file `name` in the host's output directory (`out/`).
    pub fn out(&self, name: &str) -> PathBuf {
        self.path("out").join(name)
    }

    /// What the output directory holds, sorted.
    pub fn out_entries(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.path("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    /// Write the udev database entry `key` (`b8:0`).
    pub fn udev(&self, key: &str, entry: &str) {
        fs::write(self.path("udev-data").join(key), entry).unwrap();
    }

    /// Run the binary on this host: its trees, udev database and journal,
    /// and a fixed clock for generated files.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// The command [`FakeHost::run`] runs.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
        c.arg("--sysfs-root")
            .arg(self.path("sys"))
            .arg("--proc-root")
            .arg(self.path("proc"))
            .args(args)
            .arg("--udev-db")
            .arg(self.path("udev-data"))
            .env("BLKTUNE_JOURNAL_DIR", self.path("journal"))
            .env("SOURCE_DATE_EPOCH", "1767323045");
        c
    }

    /// Run and require success; its stdout.
    pub fn stdout(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    pub fn devices(&self) -> Vec<BlockDevice> {
        device::discover(&self.tree.root()).unwrap()
    }

    pub fn udev_db(&self) -> UdevDb {
        UdevDb::new(self.path("udev-data"))
    }

    /// What `export` would be given for `name` set to `s`.
    pub fn item(&self, name: &str, s: Wanted) -> ExportItem {
        let d = self.devices().into_iter().find(|d| d.name == name).unwrap();
        let env = self.udev_db().properties(d.major, d.minor);
        ExportItem::new(d, s, env)
    }

    /// Render options as the golden files were made: fixed host, version
    /// and time.
    pub fn golden_opts(&self, format: Format) -> RenderOptions {
        let devices = self.devices();
        RenderOptions {
            strategy: None,
            format,
            host: "goldenhost".into(),
            version: "0.0.0-golden".into(),
            generated: Some("2026-01-02T03:04:05.000Z".into()),
            output: None,
            host_udev_env: self.udev_db().properties_of(&devices),
            host_devices: devices,
            tuned_include: None,
        }
    }
}

/// kyber with one tunable, nr_requests 64 and read-ahead 256: the change the
/// export tests write out.
pub fn kyber() -> Wanted {
    Wanted {
        scheduler: Some("kyber".into()),
        tunables: vec![("read_lat_nsec".into(), "1000000".into())],
        nr_requests: Some(64),
        read_ahead_kb: Some(256),
        knobs: Vec::new(),
    }
}

/// A thread that rewrites a fake tree's `/proc/diskstats` every 20 ms from
/// the milliseconds since it started, as a busy machine's counters move;
/// until dropped, by a panicking test too (so a failed test ends).
pub struct MovingCounters {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// One `/proc/diskstats` line: name, major, minor and its counters.
pub type StatLine = (&'static str, u32, u32, blktune_core::diskstats::Counters);

impl MovingCounters {
    /// Write `lines(ms)` now (at 0 ms, before the program under test reads
    /// it) and then every 20 ms.
    pub fn start(tree: &FakeTree, lines: impl Fn(u64) -> Vec<StatLine> + Send + 'static) -> Self {
        use std::sync::atomic::Ordering;
        tree.set_diskstats(&lines(0)).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tree, stopped) = (tree.clone(), std::sync::Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            while !stopped.load(Ordering::Relaxed) {
                tree.set_diskstats(&lines(start.elapsed().as_millis() as u64))
                    .unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for MovingCounters {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A RAID + LVM + multipath + NVMe server, as sysfs shows one (this
/// kernel has no dm or md module to make them): md0 (raid1) on sda1 and
/// sdb1; LUKS `luks-root` (dm-0) on sda2, and on it the LVs `vg0-root`
/// (dm-1) and `vg0-home` (dm-2); the request-based multipath map `mpatha`
/// (dm-3, its own scheduler) over the paths sdc and sdd; the NVMe native
/// multipath head nvme0n1 (no scheduler) over its hidden paths nvme0c0n1
/// and nvme0c1n1. The stacks have no scheduler but read-ahead, and ids.
pub fn stack_disks() -> Vec<FakeDisk> {
    let md_uuid = "3f2e1d0c-4b5a-6978-8796-a5b4c3d2e1f0";
    let nvme_wwid = "eui.0025388b91b1a2b3";
    vec![
        FakeDisk::new("sda")
            .dev(8, 0)
            .model("SAMSUNG MZ7LH960", Some("ATA"))
            .partitions(&["sda1", "sda2"])
            .stacked(&["dm-0", "md0"], &[]),
        FakeDisk::new("sdb")
            .dev(8, 16)
            .model("SAMSUNG MZ7LH960", Some("ATA"))
            .partitions(&["sdb1"])
            .stacked(&["md0"], &[]),
        FakeDisk::new("sdc")
            .dev(8, 32)
            .model("LUN", Some("NETAPP"))
            .rotational(true)
            .stacked(&["dm-3"], &[]),
        FakeDisk::new("sdd")
            .dev(8, 48)
            .model("LUN", Some("NETAPP"))
            .rotational(true)
            .stacked(&["dm-3"], &[]),
        FakeDisk::new("md0")
            .dev(9, 0)
            .no_queue()
            .attr("md/level", "raid1")
            .attr("md/uuid", md_uuid)
            .stacked(&[], &["sda1", "sdb1"]),
        FakeDisk::new("dm-0")
            .dev(253, 0)
            .dm("luks-root", "CRYPT-LUKS2-6a5b4c3d2e1f-luks-root", &["sda2"])
            .stacked(&["dm-1", "dm-2"], &["sda2"]),
        FakeDisk::new("dm-1").dev(253, 1).dm(
            "vg0-root",
            "LVM-Qm3vYk0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3aB4cD5eF6gH7iJ8",
            &["dm-0"],
        ),
        FakeDisk::new("dm-2").dev(253, 2).dm(
            "vg0-home",
            "LVM-Qm3vYk0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3aZZZZZZZZZZZZ",
            &["dm-0"],
        ),
        // Request-based: a queue and a scheduler of its own.
        FakeDisk::new("dm-3")
            .dev(253, 3)
            .attr("dm/name", "mpatha")
            .attr("dm/uuid", "mpath-3600a098038303053453f463045756f4b")
            .stacked(&[], &["sdc", "sdd"]),
        FakeDisk::new("nvme0n1")
            .dev(259, 0)
            .no_queue()
            .ids(None, Some(nvme_wwid))
            .attr("multipath/nvme0c0n1", "")
            .attr("multipath/nvme0c1n1", ""),
        FakeDisk::new("nvme0c0n1")
            .dev(259, 1)
            .active("none")
            .ids(None, Some(nvme_wwid))
            .attr("hidden", "1"),
        FakeDisk::new("nvme0c1n1")
            .dev(259, 2)
            .active("none")
            .ids(None, Some(nvme_wwid))
            .attr("hidden", "1"),
    ]
}
