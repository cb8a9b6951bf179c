//! Who does the I/O and where it goes, as the live worker gets it: its hook
//! after each diskstats sample.
//!
//! - who, from the kernel ([`WhoWatch`]): while the app shows the panel (`i`
//!   sends [`WhereIo::show_processes`] through the worker's control
//!   channel) and the kernel tracer runs, the tracer attributes every
//!   request to its submitter ([`Tracer::set_who`]) and the hook reads it
//!   each tick; hidden, attribution is switched off, so no I/O pays for it.
//! - processes ([`ProcessWatch`]): the approximate `/proc/<pid>/io` view,
//!   sampled only while the panel is shown and the kernel cannot say (no
//!   BPF: not root, `--no-bpf`; a kernel without `block_io_start`); hidden,
//!   the hook holds no watch at all, so a tick costs nothing (no scan of
//!   `/proc`).
//! - placement ([`Topology`]): read at the first tick and again when the
//!   device list changes (hot-plug, a loop device attached) or the mount
//!   table does (checked every [`MOUNTS_EVERY`]), never per tick.

use blktune_core::device::BlockDevice;
use blktune_core::os::SysRoot;
use blktune_core::procio::{ProcessSample, ProcessWatch};
use blktune_core::sampler::Snapshot;
use blktune_core::shootout::SharedTracer;
use blktune_core::topology::{DeviceNode, Topology, partition_numbers};
use blktune_core::who::{WhoByDevice, WhoWatch};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Processes sent per sample (more than any screen shows).
pub const TOP: usize = 40;

/// How often the mount table is compared for a new placement.
pub const MOUNTS_EVERY: Duration = Duration::from_secs(5);

/// What the hook tells the app.
#[derive(Debug, Clone)]
pub enum WhereIoFeed {
    /// The busiest processes of the interval just sampled (panel shown only).
    Processes(ProcessSample),
    /// Where each device's I/O goes (at start and when it changed).
    Placement(Arc<Topology>),
    /// From the kernel: who did each device's I/O in the interval just
    /// sampled (panel shown and the tracer running).
    Who(WhoByDevice),
    /// The kernel cannot say who does the I/O (no tracer, or attribution
    /// could not start: why); the panel shows the `/proc` view.
    NoWho(String),
}

/// What identifies the device list for placement: names, numbers, sizes,
/// `diskseq`, partitions and stacking (not the queue settings, which the
/// sampler re-reads often and which change no placement).
type DeviceKey = Vec<(
    String,
    u32,
    u32,
    u64,
    Option<u64>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
)>;

fn device_key(devices: &[BlockDevice]) -> DeviceKey {
    devices
        .iter()
        .map(|d| {
            (
                d.name.clone(),
                d.major,
                d.minor,
                d.size_bytes,
                d.diskseq,
                d.partitions.clone(),
                d.holders.clone(),
                d.slaves.clone(),
            )
        })
        .collect()
}

/// The live worker's hook: who does the I/O while shown, placement on change.
#[derive(Debug, Default)]
pub struct WhereIo {
    /// Is the panel shown?
    shown: bool,
    /// The kernel tracer, once it runs ([`WhereIo::set_tracer`]).
    tracer: Option<SharedTracer>,
    /// Why the kernel cannot say who does the I/O (`None`: it can, or has
    /// not been asked yet); told to the app once per opening.
    no_who: Option<String>,
    /// `Some` only while the panel is shown and the kernel attributes.
    who: Option<WhoWatch>,
    /// The last interval's attribution, for the recording.
    last_who: Option<WhoByDevice>,
    /// `Some` only while the panel is shown and the kernel cannot say.
    watch: Option<ProcessWatch>,
    /// The device list the placement was read for (compared by pointer first).
    devices: Option<Arc<Vec<BlockDevice>>>,
    key: DeviceKey,
    /// The mount table the placement was read with, and when it was checked.
    mounts: Option<String>,
    mounts_checked: Option<Instant>,
    /// major:minor of every device and partition, for telling the device of
    /// a process's open files; read with the placement.
    by_number: BTreeMap<(u32, u32), String>,
    /// Process samples taken (for tests: none while hidden).
    samples: u64,
}

impl WhereIo {
    /// The kernel tracer runs: the panel asks it who does the I/O.
    pub fn set_tracer(&mut self, tracer: SharedTracer) {
        self.tracer = Some(tracer);
    }

    /// Start (`true`) or stop sampling who does the I/O. Stopping switches
    /// the kernel's attribution off and drops the `/proc` watch and its
    /// table of every process; the next start begins without rates.
    pub fn show_processes(&mut self, on: bool) {
        if on == self.shown {
            return;
        }
        self.shown = on;
        self.no_who = None;
        self.who = None;
        self.last_who = None;
        self.watch = None;
        if !on {
            // Without a tracer there is nothing to switch off.
            let _ = self.set_kernel_who(false);
        }
    }

    /// Switch the tracer's attribution on or off; why not when it cannot be.
    fn set_kernel_who(&self, on: bool) -> Result<(), String> {
        let tracer = self
            .tracer
            .as_ref()
            .ok_or("the kernel tracer does not run")?;
        let mut t = tracer.lock().map_err(|_| "tracer poisoned")?;
        t.set_who(on)
    }

    /// Is the panel's sampling on (the kernel's or `/proc`'s)?
    pub fn sampling(&self) -> bool {
        self.who.is_some() || self.watch.is_some()
    }

    /// The attribution of the interval just sampled, once (for the recording).
    pub fn take_who(&mut self) -> Option<WhoByDevice> {
        self.last_who.take()
    }

    /// Process samples taken since this hook was made.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// After the sample `s`: send what changed through `send` (which says
    /// whether the app is still there); `false` when it hung up.
    pub fn tick(
        &mut self,
        root: &SysRoot,
        s: &Snapshot,
        mut send: impl FnMut(WhereIoFeed) -> bool,
    ) -> bool {
        if let Some(t) = self.placement(root, &s.devices)
            && !send(WhereIoFeed::Placement(Arc::new(t)))
        {
            return false;
        }
        if !self.shown {
            return true;
        }
        if self.who.is_none() && self.watch.is_none() {
            // Just opened: the kernel if it can, else `/proc`.
            match self.set_kernel_who(true) {
                Ok(()) => self.who = Some(WhoWatch::new(root)),
                Err(why) => {
                    self.watch = Some(ProcessWatch::new());
                    self.no_who = Some(why);
                }
            }
        }
        if let Some(why) = self.no_who.take()
            && !send(WhereIoFeed::NoWho(why))
        {
            return false;
        }
        self.samples += 1;
        if let Some(who) = self.who.as_mut() {
            let reading = match self.tracer.as_ref().map(|t| t.lock()) {
                Some(Ok(t)) => t.read_who(),
                _ => Err("tracer poisoned".into()),
            };
            match reading {
                Ok(r) => {
                    let Some(w) = who.sample(r, s) else {
                        return true;
                    };
                    self.last_who = Some(w.clone());
                    return send(WhereIoFeed::Who(w));
                }
                // Reading failed: the `/proc` view from the next tick on.
                Err(why) => {
                    let _ = self.set_kernel_who(false);
                    self.who = None;
                    self.watch = Some(ProcessWatch::new());
                    return send(WhereIoFeed::NoWho(why));
                }
            }
        }
        let Some(watch) = self.watch.as_mut() else {
            return true;
        };
        send(WhereIoFeed::Processes(watch.sample(
            root,
            &self.by_number,
            TOP,
        )))
    }

    /// A new placement when the devices or the mounts changed since the last one.
    fn placement(&mut self, root: &SysRoot, devices: &Arc<Vec<BlockDevice>>) -> Option<Topology> {
        let same_list = self
            .devices
            .as_ref()
            .is_some_and(|d| Arc::ptr_eq(d, devices));
        let mut changed = self.devices.is_none();
        if !same_list {
            let key = device_key(devices);
            changed |= key != self.key;
            self.key = key;
            self.devices = Some(Arc::clone(devices));
        }
        let now = Instant::now();
        let due = self
            .mounts_checked
            .is_none_or(|t| now.duration_since(t) >= MOUNTS_EVERY);
        if changed || due {
            self.mounts_checked = Some(now);
            let mounts = root.read_proc("self/mountinfo").ok();
            changed |= mounts != self.mounts;
            self.mounts = mounts;
        }
        if !changed {
            return None;
        }
        // Partitions too, so that a file on sda1 names sda1.
        let nodes: Vec<DeviceNode> = devices.iter().map(DeviceNode::from).collect();
        self.by_number = partition_numbers(root, &nodes)
            .into_iter()
            .map(|(n, (part, _))| (n, part))
            .chain(
                devices
                    .iter()
                    .filter(|d| (d.major, d.minor) != (0, 0))
                    .map(|d| ((d.major, d.minor), d.name.clone())),
            )
            .collect();
        Some(Topology::read(root, devices))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blktune_core::fake::{FakeDisk, FakeTree};
    use std::time::UNIX_EPOCH;

    fn snapshot(devices: Arc<Vec<BlockDevice>>) -> Snapshot {
        Snapshot {
            wall: UNIX_EPOCH,
            t: 1.0,
            interval: Some(1.0),
            devices,
            refreshed: false,
            stats: Default::default(),
            iowait_pct: None,
            cpu_busy_pct: None,
            pressure: None,
            warnings: Vec::new(),
        }
    }

    fn feeds(hook: &mut WhereIo, root: &SysRoot, s: &Snapshot) -> Vec<WhereIoFeed> {
        let mut out = Vec::new();
        assert!(hook.tick(root, s, |f| {
            out.push(f);
            true
        }));
        out
    }

    fn processes(v: &[WhereIoFeed]) -> usize {
        v.iter()
            .filter(|f| matches!(f, WhereIoFeed::Processes(_)))
            .count()
    }

    #[test]
    fn processes_are_sampled_only_while_the_panel_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(dir.path()).unwrap();
        tree.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
        let root = tree.root();
        let devices = Arc::new(blktune_core::device::discover(&root).unwrap());
        let s = snapshot(Arc::clone(&devices));
        let mut hook = WhereIo::default();
        // Hidden: many ticks, no watch, no sample, no process message.
        for _ in 0..5 {
            assert_eq!(processes(&feeds(&mut hook, &root, &s)), 0);
        }
        assert!(!hook.sampling());
        assert_eq!(hook.samples(), 0);
        // Shown: one sample per tick.
        hook.show_processes(true);
        assert_eq!(processes(&feeds(&mut hook, &root, &s)), 1);
        assert_eq!(processes(&feeds(&mut hook, &root, &s)), 1);
        assert_eq!(hook.samples(), 2);
        // Hidden again: the watch is gone and ticks sample nothing.
        hook.show_processes(false);
        assert!(!hook.sampling());
        for _ in 0..3 {
            assert_eq!(processes(&feeds(&mut hook, &root, &s)), 0);
        }
        assert_eq!(hook.samples(), 2);
    }

    #[test]
    fn open_files_are_told_by_whole_disk_and_partition_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(dir.path()).unwrap();
        tree.add(&FakeDisk::new("sda").dev(8, 0).partitions(&["sda1", "sda2"]))
            .unwrap();
        let root = tree.root();
        let devices = Arc::new(blktune_core::device::discover(&root).unwrap());
        let mut hook = WhereIo::default();
        feeds(&mut hook, &root, &snapshot(devices));
        let names: Vec<(&(u32, u32), &str)> = hook
            .by_number
            .iter()
            .map(|(k, v)| (k, v.as_str()))
            .collect();
        assert_eq!(
            names,
            [(&(8, 0), "sda"), (&(8, 1), "sda1"), (&(8, 2), "sda2")]
        );
    }

    #[test]
    fn placement_is_sent_at_start_and_when_the_devices_change_not_per_tick() {
        let dir = tempfile::tempdir().unwrap();
        let tree = FakeTree::new(dir.path()).unwrap();
        tree.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
        let root = tree.root();
        let devices = Arc::new(blktune_core::device::discover(&root).unwrap());
        let mut hook = WhereIo::default();
        let placements = |hook: &mut WhereIo, d: &Arc<Vec<BlockDevice>>| {
            feeds(hook, &root, &snapshot(Arc::clone(d)))
                .iter()
                .filter(|f| matches!(f, WhereIoFeed::Placement(_)))
                .count()
        };
        assert_eq!(placements(&mut hook, &devices), 1, "at start");
        assert_eq!(placements(&mut hook, &devices), 0, "same list");
        // Republished with the same devices (a settings refresh): nothing.
        let same = Arc::new(devices.as_ref().clone());
        assert_eq!(placements(&mut hook, &same), 0, "settings refresh");
        // Hot-plug: a new device.
        tree.add(&FakeDisk::new("loop3").dev(7, 3)).unwrap();
        let more = Arc::new(blktune_core::device::discover(&root).unwrap());
        assert_eq!(placements(&mut hook, &more), 1, "hot-plug");
    }
}
