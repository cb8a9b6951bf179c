//! `blktune list`: the devices and their queue settings.

use super::common::{QueueJson, lost_note, shown_by_default};
use super::metrics;
use super::{Global, Out, UsageError};
use anyhow::Context;
use blktune_core::atomic_file::is_stdio;
use blktune_core::device::{self, BlockDevice, human_size};
use blktune_core::export::{StableIds, UdevDb, scan_by_id};
use blktune_core::os::SysRoot;
use blktune_core::topology::stacks;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Output format of `blktune list`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    /// A table for people.
    #[default]
    Table,
    /// An array of objects (the same as --json).
    Json,
    /// OpenMetrics text for node_exporter's textfile collector.
    Openmetrics,
}

/// Arguments of `blktune list`.
#[derive(Debug, Default, clap::Args)]
pub struct ListArgs {
    /// Print JSON (an array of objects) instead of a table (= --format json).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// table, json, or openmetrics (node_exporter textfile collector).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<ListFormat>,

    /// With --format openmetrics: write FILE atomically (for the textfile
    /// collector's directory) instead of standard output (`-`: standard
    /// output). Only a regular file is replaced.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Also list partitions, devices without a queue and empty devices
    /// (unattached loop devices).
    #[arg(long)]
    pub all: bool,

    /// The udev database (ID_WWN, ID_SERIAL, by-id links); default
    /// /run/udev/data, none with another --sysfs-root.
    #[arg(long, value_name = "DIR")]
    pub udev_db: Option<PathBuf>,

    /// With --format openmetrics (root): also trace every I/O for DUR (1s,
    /// 10s; at most 1min) and write each device's I/O count, mean and
    /// percentiles of that window as gauges (blktune_io_window_*; for
    /// cumulative histograms run `blktune exporter`).
    #[arg(long, value_name = "DUR", value_parser = parse_latency_window)]
    pub latency: Option<std::time::Duration>,
}

/// `--latency`: 100ms to 1min (a metrics run must end).
fn parse_latency_window(text: &str) -> Result<std::time::Duration, String> {
    let d = blktune_core::units::parse_duration(text)?;
    if !(std::time::Duration::from_millis(100)..=std::time::Duration::from_secs(60)).contains(&d) {
        return Err(format!(
            "latency window '{text}' is out of range: 100ms to 1min"
        ));
    }
    Ok(d)
}

/// Trace every I/O for `window` and return what the kernel saw in it;
/// `None` (one line on stderr saying why) when the kernel cannot be traced.
fn trace_window(global: &Global, window: std::time::Duration) -> Option<metrics::Window> {
    use blktune_core::traced::{LatencyReads, TraceNote};
    let say = |what: &str| {
        let _ = writeln!(
            std::io::stderr(),
            "blktune: {}",
            blktune_core::text::printable(what)
        );
    };
    let mut latency = LatencyReads::start(global.no_bpf, global.root().is_live());
    if let Some(why) = latency.unavailable() {
        say(&format!("no latency histograms: {why}"));
        return None;
    }
    latency.baseline();
    std::thread::sleep(window);
    let (interval, notes) = latency.read_interval();
    for note in &notes {
        match note {
            TraceNote::NoDeviceSpan(why) => {
                say(&blktune_core::latency::no_device_span_note(why));
            }
            TraceNote::Stopped(why) => say(&format!("no latency histograms: {why}")),
        }
    }
    let interval = interval?;
    if let Some(note) = lost_note(interval.lost) {
        let _ = writeln!(std::io::stderr(), "blktune: {note}");
    }
    Some(metrics::Window {
        interval,
        length: window,
    })
}

impl ListArgs {
    /// The chosen format (`--json` is `--format json`).
    pub fn format(&self) -> ListFormat {
        if self.json {
            ListFormat::Json
        } else {
            self.format.unwrap_or_default()
        }
    }
}

/// Where /dev/disk/by-id is scanned when the udev database names no links.
const BY_ID_DIR: &str = "/dev/disk/by-id";

/// The stable ids of every device: udev database first, sysfs after; the
/// by-id links of the live host are scanned when the database has none.
pub fn stable_ids(
    root: &SysRoot,
    db: &UdevDb,
    devs: &[BlockDevice],
) -> BTreeMap<String, StableIds> {
    devs.iter()
        .map(|d| {
            let env = db.properties(d.major, d.minor);
            let mut links = db.links(d.major, d.minor);
            if links.is_empty() && root.is_live() {
                links = scan_by_id(Path::new(BY_ID_DIR), &d.name);
            }
            (d.name.clone(), StableIds::of(d, &env, &links))
        })
        .collect()
}

/// One device in `blktune list --json`. Stable keys; documented in the README.
/// Unknown is `null`, never a guess (a missing `size` file is no 0).
#[derive(Debug, Serialize)]
pub struct ListEntry<'a> {
    /// The kernel name (`sda`, `dm-0`): what every blktune command takes.
    pub name: &'a str,
    /// `8:0`; `null` when the `dev` file is missing.
    pub maj_min: Option<String>,
    /// blktune's class: nvme, ssd, hdd, disk (rotation unknown), rom,
    /// virtio, loop, zram, md, dm, mmc, other.
    #[serde(rename = "type")]
    pub class: &'a str,
    /// lsblk's TYPE: disk, rom, loop, lvm, crypt, mpath, raid1, linear, dm, md...
    pub kind: String,
    /// A stack's own name: `dm/name` (`vg0-root`, `mpathA`), md's `MD_DEVNAME`.
    pub stack_name: Option<&'a str>,
    /// A stack's uuid: `dm/uuid` (`LVM-...`, `mpath-3600...`), `md/uuid`.
    pub uuid: Option<&'a str>,
    /// `device/vendor`, apart from the model as lsblk shows them.
    pub vendor: Option<&'a str>,
    /// `device/model`.
    pub model: Option<&'a str>,
    pub serial: Option<&'a str>,
    /// ID_WWN_WITH_EXTENSION, else ID_WWN (udev database), else sysfs `wwid`.
    pub wwn: Option<String>,
    /// ID_SERIAL from the udev database.
    pub id_serial: Option<String>,
    /// The device's /dev/disk/by-id/ link (`wwn-` preferred).
    pub by_id: Option<String>,
    /// `null` when the `size` file is missing or unreadable.
    pub size_bytes: Option<u64>,
    /// `null` without `queue/rotational`.
    pub rotational: Option<bool>,
    pub removable: bool,
    pub read_only: bool,
    #[serde(flatten)]
    pub queue: QueueJson<'a>,
    /// The most nr_requests the kernel takes under `none` (`mq/*/nr_tags`),
    /// `null` without a blk-mq queue.
    pub hw_queue_depth: Option<u64>,
    /// Devices stacked on this one (`holders/`).
    pub holders: &'a [String],
    /// Devices this one is stacked on (`slaves/`; partitions by their names).
    pub slaves: &'a [String],
    /// An NVMe multipath head's paths (hidden devices).
    pub paths: &'a [String],
    /// The devices whose schedulers order this one's I/O: itself when it has
    /// a scheduler, else the disks under the stack.
    pub scheduled_on: Vec<String>,
    pub partitions: &'a [String],
}

impl<'a> ListEntry<'a> {
    /// The entry of `device` with its stable ids; `devs` are every device read
    /// (to say which disks schedule a stack's I/O).
    pub fn with_ids(
        device: &'a BlockDevice,
        ids: Option<&StableIds>,
        devs: &[BlockDevice],
    ) -> Self {
        let ids = ids.cloned().unwrap_or_default();
        Self {
            wwn: ids.wwn,
            id_serial: ids.id_serial,
            by_id: ids.by_id,
            scheduled_on: stacks::scheduled_on(devs, &device.name),
            ..Self::from(device)
        }
    }
}

impl<'a> From<&'a BlockDevice> for ListEntry<'a> {
    fn from(device: &'a BlockDevice) -> Self {
        let stack = device.stack.as_ref();
        Self {
            name: &device.name,
            maj_min: (device.major, device.minor)
                .ne(&(0, 0))
                .then(|| format!("{}:{}", device.major, device.minor)),
            class: device.kind.label(),
            kind: device.type_name(),
            stack_name: device.stack_name(),
            uuid: stack.and_then(|s| s.uuid.as_deref()),
            vendor: device.vendor.as_deref(),
            model: device.model.as_deref(),
            serial: device.serial.as_deref(),
            wwn: device.wwid.clone(),
            id_serial: None,
            by_id: None,
            size_bytes: (!device.size_unknown).then_some(device.size_bytes),
            rotational: device.rotational,
            removable: device.removable,
            read_only: device.read_only,
            queue: QueueJson::from(&device.queue),
            hw_queue_depth: device.hw_queue_depth,
            holders: &device.holders,
            slaves: &device.slaves,
            paths: stack.map_or(&[], |s| s.paths.as_slice()),
            scheduled_on: if device.queue.has_scheduler() {
                vec![device.name.clone()]
            } else {
                Vec::new()
            },
            partitions: &device.partitions,
        }
    }
}

/// `none [mq-deadline] kyber bfq`, or `-`.
pub fn scheduler_line(device: &BlockDevice) -> String {
    match &device.queue.scheduler {
        None => "-".into(),
        Some(s) => s
            .available
            .iter()
            .map(|n| {
                if *n == s.active {
                    format!("[{n}]")
                } else {
                    n.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// The size in bytes of each partition of `devs` (its own `size` file, in
/// 512-byte sectors like the disk's); unreadable ones are left out.
pub fn partition_sizes(root: &SysRoot, devs: &[BlockDevice]) -> BTreeMap<String, u64> {
    let mut sizes = BTreeMap::new();
    for d in devs {
        let Some(dev) = root.device(&d.name) else {
            continue;
        };
        for p in d
            .partitions
            .iter()
            .filter(|p| blktune_core::os::is_plausible_device_name(p))
        {
            let size = root
                .read_dev_attr(&dev, &format!("{p}/size"))
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok());
            if let Some(sectors) = size {
                sizes.insert(p.clone(), sectors.saturating_mul(512));
            }
        }
    }
    sizes
}

/// The text table, as a tree the way lsblk draws one: disks at the top,
/// their partitions (`--all`, or when a stack sits on one) and the stacks
/// on them below (a stack on two disks under both), with the stack's name
/// after its kernel name. `part_sizes` gives the partitions' sizes.
pub fn table(devs: &[BlockDevice], all: bool, part_sizes: &BTreeMap<String, u64>) -> String {
    let opt = |v: Option<u64>| v.map_or_else(|| "-".into(), |n| n.to_string());
    let text = |v: Option<&str>| v.map_or_else(|| "-".to_string(), str::to_owned);
    let mut rows = vec![[
        "DEVICE".to_string(),
        "TYPE".into(),
        "SIZE".into(),
        "VENDOR".into(),
        "MODEL".into(),
        "SCHEDULERS".into(),
        "NR_REQ".into(),
        "RA_KB".into(),
    ]];
    let shown = |d: &BlockDevice| all || shown_by_default(d);
    for r in stacks::tree(devs, &shown, all) {
        if r.partition {
            rows.push([
                format!("{}{}", r.prefix, r.name),
                "part".into(),
                part_sizes
                    .get(&r.name)
                    .map_or_else(|| "-".into(), |b| human_size(*b)),
                String::new(),
                String::new(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        }
        let Some(d) = devs.iter().find(|d| d.name == r.name) else {
            continue;
        };
        let name = match d.stack_name() {
            Some(n) => format!("{}{} {n}", r.prefix, d.name),
            None => format!("{}{}", r.prefix, d.name),
        };
        rows.push([
            name,
            d.type_name(),
            d.size_label(),
            text(d.vendor.as_deref()),
            text(d.model.as_deref()),
            scheduler_line(d),
            opt(d.queue.nr_requests),
            opt(d.queue.read_ahead_kb),
        ]);
    }
    let mut widths = [0usize; 8];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(widths).enumerate() {
            let pad = w.saturating_sub(c.chars().count());
            let right = matches!(i, 2 | 6 | 7);
            if right {
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            }
            line.push_str("  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if rows.len() == 1 && !all {
        out.push_str(
            "(no devices with a scheduler or stacked; 'blktune list --all' shows every device)\n",
        );
    }
    out
}

/// Run `blktune list`.
pub fn run(global: &Global, args: &ListArgs, out: &mut Out) -> anyhow::Result<i32> {
    let format = args.format();
    if args.latency.is_some() && format != ListFormat::Openmetrics {
        return Err(UsageError("--latency goes with --format openmetrics".into()).into());
    }
    if args.output.is_some() && format != ListFormat::Openmetrics {
        return Err(UsageError(
            "-o FILE goes with --format openmetrics (redirect the table or JSON instead)".into(),
        )
        .into());
    }
    let root = global.root();
    // Read what gets printed: everything with --all, else only the shown
    // devices, and of those only the table's columns for the table.
    let devs = match (args.all, format) {
        (true, _) => device::discover(&root),
        (false, ListFormat::Table) => device::discover_shown(&root, device::Identity::Table),
        (false, _) => device::discover_shown(&root, device::Identity::Full),
    }
    .with_context(|| format!("cannot read {}/block", root.sysfs().display()))?;
    let db = match &args.udev_db {
        Some(dir) => UdevDb::new(dir),
        None if root.is_live() => UdevDb::default(),
        None => UdevDb::none(),
    };
    let mut devs = devs;
    db.fill_stacks(&mut devs);
    let shown: Vec<&BlockDevice> = devs
        .iter()
        .filter(|d| args.all || shown_by_default(d))
        .collect();
    // Left out because its scheduler file does not parse, not because it has
    // none: said, so that no disk drops out of the list without a word.
    for d in devs
        .iter()
        .filter(|d| d.size_bytes > 0 && !d.queue.has_scheduler())
    {
        if let Some(why) = d.queue.unreadable_text() {
            let _ = writeln!(
                std::io::stderr(),
                "blktune: warning: {}",
                blktune_core::text::printable(&format!(
                    "'{}': {why}{}",
                    d.name,
                    if args.all {
                        ""
                    } else {
                        "; not listed (--all lists it)"
                    }
                ))
            );
        }
    }
    match format {
        ListFormat::Json => {
            let ids = stable_ids(&root, &db, &devs);
            let entries: Vec<ListEntry> = shown
                .iter()
                .map(|d| ListEntry::with_ids(d, ids.get(&d.name), &devs))
                .collect();
            out.line(&serde_json::to_string_pretty(&entries)?)?;
        }
        ListFormat::Openmetrics => {
            let ids = stable_ids(&root, &db, &devs);
            let env: BTreeMap<String, BTreeMap<String, String>> = devs
                .iter()
                .map(|d| (d.name.clone(), db.properties(d.major, d.minor)))
                .collect();
            let window = args.latency.and_then(|w| trace_window(global, w));
            let text = metrics::render(
                &blktune_core::metrics::queue::QueueSnapshot {
                    devices: &shown,
                    ids: &ids,
                    udev_env: &env,
                },
                window.as_ref(),
            );
            // `-` is standard output, the same as no -o.
            match args.output.as_deref().filter(|p| !is_stdio(p)) {
                Some(path) => metrics::write_atomically(path, &text)?,
                None => out.text(&text)?,
            }
        }
        ListFormat::Table => {
            let part_sizes = partition_sizes(&root, &devs);
            out.text(&table(&devs, args.all, &part_sizes))?;
        }
    }
    Ok(0)
}
