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
