//! `blktune watch`: iostat -x style rows, or NDJSON with iostat's JSON keys.

use super::common::{lost_note, shown_by_default};
use super::{Global, Out, UsageError, parse_interval, parse_probe_rate};
use anyhow::Context;
use blktune_core::device::BlockDevice;
use blktune_core::iostat::{ExtStats, NoData};
use blktune_core::latency::{
    DevId, Dir, Interval, Percentiles, Span, Summary, Unavailable, no_device_span_note,
};
use blktune_core::probe::{MIN_IOS_FOR_P99, Probe, ProbeJson, ProbeStats};
use blktune_core::sampler::{SamplerOptions, Snapshot};
use blktune_core::text::printable;
use blktune_core::traced::{TraceNote, TracedSampler, TracedTick};
use blktune_core::units::rfc3339;
use blktune_core::who::{DeviceWho, WhoRow};
use serde::Serialize;
use serde::ser::SerializeMap;
use std::io::Write as _;
use std::time::{Duration, Instant};

/// Arguments of `blktune watch`.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// One JSON object per device per interval (NDJSON), keys as `iostat -x -o JSON`.
    #[arg(long)]
    pub json: bool,

    /// Interval: 250ms, 1s, 2 (seconds); 100ms to 1h.
    #[arg(long, short = 'i', value_name = "DUR", value_parser = parse_interval, default_value = "1s")]
    pub interval: Duration,

    /// Stop after N intervals (default: run until interrupted).
    #[arg(long, short = 'c', value_name = "N", value_parser = parse_count)]
    pub count: Option<u64>,

    /// Also time a few 4 KiB O_DIRECT reads per second at random offsets of each
    /// device (read-only), above the block layer: what an application sees,
    /// next to the diskstats averages. Per interval: pr_n reads, their p50 and
    /// max (ms), a p99 only from 100 reads. --json: "probe": {n, p50, p99, max,
    /// reads_per_sec, errors, error}. The probe's reads count in r/s.
    #[arg(long)]
    pub probe: bool,

    /// Also show the kernel's read and write p99 (ms) of the interval: from
    /// the request's start (what r_await averages) and on the device alone
    /// (issue to completion); a count instead when under 100 I/Os. Needs root
    /// (a BPF program on the block tracepoints). --json always has them.
    #[arg(long)]
    pub latency: bool,

    /// Also say who did each device's I/O in the interval, from the kernel:
    /// every request counted for the process and cgroup (v2) that submitted
    /// it (a kernel worker's write-back for the cgroup its bio was charged
    /// to, else `write-back`). Text: the busiest processes under each row;
    /// --json: "who": {processes, cgroups, rest_s, rest_share}, each row
    /// pid, name, cgroup, r_s, w_s, rkB_s, wkB_s, share, r_p99, r_n (and a
    /// cgroup's io_some, io_full: percent of the interval it stalled on I/O).
    /// Needs root (BPF) and Linux 6.5 (block_io_start).
    #[arg(long)]
    pub who: bool,

    /// Probe reads per second per device (0.1 to 100).
    #[arg(long, value_name = "N", value_parser = parse_probe_rate, default_value_t = blktune_core::probe::DEFAULT_RATE, requires = "probe")]
    pub probe_rate: f64,

    /// Devices (default: every disk with a scheduler and a non-zero size).
    pub devices: Vec<String>,
}

/// One NDJSON record of `blktune watch --json`.
#[derive(Debug, Serialize)]
pub struct WatchRecord<'a> {
    pub disk_device: &'a str,
    pub timestamp: &'a str,
    pub interval_s: f64,
    pub scheduler: Option<&'a str>,
    pub nr_requests: Option<u64>,
    pub read_ahead_kb: Option<u64>,
    /// Set (and the statistics left out) when this interval has no data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_data: Option<NoData>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub stats: Option<ExtStats>,
    /// With `--probe`: the probe's reads in this interval (see [`ProbeJson`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeJson>,
    /// The kernel's latency percentiles of this interval's I/Os: always
    /// there in a record `watch` writes (`None` only while
    /// [`WatchRecord::write_json`] writes the record's other keys).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyJson>,
    /// With `--who`: who did this interval's I/O (empty lists when nobody).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub who: Option<&'a DeviceWho>,
}

impl WatchRecord<'_> {
    /// The record's JSON, as [`serde_json::to_writer`] writes it, with the
    /// parts that idle devices share copied from `memo`: a thousand idle
    /// devices are most of a big machine's records, and their statistics
    /// and latency keys were most of `watch --json`'s time per interval.
    /// The memo's parts are made by the same serialisation as any other
    /// record (a test compares the two on every kind of record).
    fn write_json(&self, buf: &mut Vec<u8>, memo: &JsonMemo) -> serde_json::Result<()> {
        let idle_stats = self.stats.is_some_and(|s| s == ExtStats::default());
        let latency = self.latency.and_then(|l| memo.latency(l));
        // With --probe the probe's key comes between the two, and --who's
        // after them: no memo.
        if (!idle_stats && latency.is_none()) || self.probe.is_some() || self.who.is_some() {
            return serde_json::to_writer(buf, self);
        }
        let head = WatchRecord {
            disk_device: self.disk_device,
            timestamp: self.timestamp,
            interval_s: self.interval_s,
            scheduler: self.scheduler,
            nr_requests: self.nr_requests,
            read_ahead_kb: self.read_ahead_kb,
            no_data: self.no_data,
            stats: None,
            probe: None,
            latency: None,
            who: None,
        };
        serde_json::to_writer(&mut *buf, &head)?;
        // Its closing brace: the keys go on.
        buf.pop();
        match &self.stats {
            Some(_) if idle_stats => buf.extend_from_slice(&memo.idle_stats),
            Some(s) => push_keys(buf, s)?,
            None => {}
        }
        match (latency, &self.latency) {
            (Some(keys), _) => buf.extend_from_slice(keys),
            (None, Some(l)) => push_keys(buf, l)?,
            (None, None) => {}
        }
        buf.push(b'}');
        Ok(())
    }
}

/// The keys and values of a JSON object, each after a comma: what a
/// flattened field adds to its record.
fn push_keys(buf: &mut Vec<u8>, v: &impl Serialize) -> serde_json::Result<()> {
    let at = buf.len();
    serde_json::to_writer(&mut *buf, v)?;
    // `{...}`: the brace becomes a comma and the closing one goes; `{}`
    // adds nothing.
    if buf.len() - at == 2 {
        buf.truncate(at);
    } else {
        buf[at] = b',';
        buf.pop();
    }
    Ok(())
}

/// The record parts [`WatchRecord::write_json`] copies, each made once
/// with [`push_keys`]: the statistics of an interval without I/O (every
/// figure 0.0: counts that did not move, over a positive interval, give
/// +0.0, never -0.0), and the latency keys untraced (all null) and traced
/// without I/O.
#[derive(Debug)]
struct JsonMemo {
    idle_stats: Vec<u8>,
    untraced: Vec<u8>,
    traced_idle: Vec<u8>,
}

impl JsonMemo {
    fn new() -> serde_json::Result<Self> {
        Ok(Self {
            idle_stats: keys_of(&ExtStats::default())?,
            untraced: keys_of(&LatencyJson(None))?,
            traced_idle: keys_of(&LatencyJson(Some(Summary::default())))?,
        })
    }

    /// The memo's keys of `l`, if it is one of the two it keeps.
    fn latency(&self, l: LatencyJson) -> Option<&[u8]> {
        match l.0 {
            None => Some(&self.untraced),
            Some(s) if s == Summary::default() => Some(&self.traced_idle),
            Some(_) => None,
        }
    }
}

/// [`push_keys`] into a new buffer.
fn keys_of(v: &impl Serialize) -> serde_json::Result<Vec<u8>> {
    let mut buf = Vec::new();
    push_keys(&mut buf, v)?;
    Ok(buf)
}

/// The kernel's percentiles in a `watch --json` record: `r_p50 r_p90 r_p99
/// r_p999 r_max r_n` (ms; `_n` the number of I/Os, start to completion, the
/// span r_await averages) and the same with `w_`, `d_`, `f_`; then
/// `r_dev_p99` and `w_dev_p99` (issue to completion: the device alone).
/// Every key is always there; null when unknown: all of them without BPF
/// (the reason goes to stderr once), the percentiles without I/O, a p99
/// under 100 I/Os and a p99.9 under 1000.
#[derive(Debug, Clone, Copy, Default)]
pub struct LatencyJson(Option<Summary>);

/// The keys of [`LatencyJson`] per direction, in [`Dir::ALL`]'s order:
/// constants, so that a thousand records per interval build no key.
const LATENCY_KEYS: [[&str; 6]; 4] = [
    ["r_p50", "r_p90", "r_p99", "r_p999", "r_max", "r_n"],
    ["w_p50", "w_p90", "w_p99", "w_p999", "w_max", "w_n"],
    ["d_p50", "d_p90", "d_p99", "d_p999", "d_max", "d_n"],
    ["f_p50", "f_p90", "f_p99", "f_p999", "f_max", "f_n"],
];

/// The device-alone keys of [`LatencyJson`], read then write.
const DEVICE_KEYS: [(Dir, &str); 2] = [(Dir::Read, "r_dev_p99"), (Dir::Write, "w_dev_p99")];

impl Serialize for LatencyJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (dir, [p50, p90, p99, p999, max, n]) in Dir::ALL.into_iter().zip(LATENCY_KEYS) {
            let p = self.0.as_ref().and_then(|s| s.get(Span::Total, dir));
            m.serialize_entry(p50, &p.map(|p| p.p50))?;
            m.serialize_entry(p90, &p.map(|p| p.p90))?;
            m.serialize_entry(p99, &p.and_then(Percentiles::p99_if_enough))?;
            m.serialize_entry(p999, &p.and_then(Percentiles::p999_if_enough))?;
            m.serialize_entry(max, &p.map(|p| p.max))?;
            // Known to be 0 when traced without I/O; unknown without BPF.
            m.serialize_entry(n, &self.0.map(|_| p.map_or(0, |p| p.n)))?;
        }
        for (dir, key) in DEVICE_KEYS {
            let p = self.0.as_ref().and_then(|s| s.get(Span::Device, dir));
            m.serialize_entry(key, &p.and_then(Percentiles::p99_if_enough))?;
        }
        m.end()
    }
}

/// Say on stderr what tracing said this tick: an issue program that could
/// not be attached, or a read that failed (tracing then stops).
fn say_notes(notes: &[TraceNote]) {
    for note in notes {
        match note {
            TraceNote::NoDeviceSpan(why) => eprintln!("blktune: {}", no_device_span_note(why)),
            TraceNote::Stopped(why) => eprintln!("blktune: no kernel latency percentiles: {why}"),
        }
    }
}

/// A device's percentiles this interval: `None` without tracing (or on its
/// first interval); all empty when traced without I/O.
fn summary_of(traced: Option<&Interval>, dev: Option<&BlockDevice>) -> Option<Summary> {
    let interval = traced?;
    // Whole disks only: the kernel counts a partition's I/O on its disk.
    let d = dev?;
    let dev = DevId {
        major: d.major,
        minor: d.minor,
    };
    Some(interval.summary(dev, d.diskseq))
}

/// Which names to show.
fn selection(g: &Global, a: &WatchArgs, snap: &Snapshot) -> anyhow::Result<Vec<String>> {
    if a.devices.is_empty() {
        return Ok(snap
            .devices
            .iter()
            .filter(|d| shown_by_default(d))
            .map(|d| d.name.clone())
            .collect());
    }
    let root = g.root();
    for name in &a.devices {
        // Partitions have stats too; anything else must be a device under /sys/block.
        if root.device(name).is_none() && !snap.stats.contains_key(name) {
            return Err(blktune_core::tuner::resolve(&root, name).err().map_or_else(
                || UsageError(format!("unknown device '{name}'")).into(),
                anyhow::Error::from,
            ));
        }
    }
    Ok(a.devices.clone())
}

fn header() -> String {
    format!(
        "{:<10} {:<12} {:>8} {:>8} {:>9} {:>9} {:>7} {:>7} {:>8} {:>8} {:>6} {:>6}",
        "Device",
        "scheduler",
        "r/s",
        "w/s",
        "rkB/s",
        "wkB/s",
        "rrqm/s",
        "wrqm/s",
        "r_await",
        "w_await",
        "aqu-sz",
        "%util"
    )
}

/// Extra header columns of `--latency`.
fn latency_header() -> String {
    format!(
        " {:>8} {:>8} {:>8} {:>8}",
        "r_p99", "w_p99", "r_dev99", "w_dev99"
    )
}

/// Extra cells of `--latency`: p99 in ms, or `n=K` under 100 I/Os, `-` untraced.
fn latency_cells(s: Option<&Summary>) -> String {
    let cell = |span, dir| s.map_or_else(|| "-".to_string(), |s| s.tail(span, dir).to_string());
    format!(
        " {:>8} {:>8} {:>8} {:>8}",
        cell(Span::Total, Dir::Read),
        cell(Span::Total, Dir::Write),
        cell(Span::Device, Dir::Read),
        cell(Span::Device, Dir::Write)
    )
}

/// Extra header columns of `--probe`.
fn probe_header() -> String {
    format!(
        " {:>5} {:>7} {:>7} {:>7} {:>6}",
        "pr_n", "pr_p50", "pr_p99", "pr_max", "pr_r/s"
    )
}

/// Extra cells of `--probe`: how many reads the probe timed this interval,
/// their p50, p99 (`-` under 100 reads: it would be the slowest one) and
/// max in ms, and its own rate.
fn probe_cells(p: Option<&ProbeStats>) -> String {
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
    match p {
        Some(ProbeStats {
            error: Some(e),
            reads: 0,
            ..
        }) => format!("  probe: {e}"),
        Some(s) => {
            let f = s.reads_ns.figures();
            format!(
                " {:>5} {:>7} {:>7} {:>7} {:>6.1}",
                f.n,
                ms(f.p50),
                ms(f.p99),
                ms(f.max),
                s.reads_per_sec
            )
        }
        None => format!(" {:>5} {:>7} {:>7} {:>7} {:>6}", "-", "-", "-", "-", "-"),
    }
}

fn row(name: &str, sched: &str, s: Option<&ExtStats>) -> String {
    match s {
        Some(s) => format!(
            "{:<10} {:<12} {:>8.2} {:>8.2} {:>9.2} {:>9.2} {:>7.2} {:>7.2} {:>8.2} {:>8.2} {:>6.2} {:>6.2}",
            name,
            sched,
            s.r_s,
            s.w_s,
            s.rkb_s,
            s.wkb_s,
            s.rrqm_s,
            s.wrqm_s,
            s.r_await,
            s.w_await,
            s.aqu_sz,
            s.util
        ),
        None => format!("{name:<10} {sched:<12} {:>8}", "no data"),
    }
}

/// Processes shown under a device's row (`--who`, text).
const WHO_SHOWN: usize = 3;

/// `--who`'s lines under a device's row: its busiest processes, then the
/// rest: `  who  fio 31865 /db.slice  41200 IOPS 161.0 MB/s  97.1%  r_p99 6.56`.
fn who_lines(w: &DeviceWho) -> Vec<String> {
    let mut out: Vec<String> = w
        .processes
        .iter()
        .take(WHO_SHOWN)
        .map(|r| {
            let p99 = match r.r_p99 {
                Some(ms) => format!("r_p99 {ms:.2}"),
                None => format!("r_p99 n={}", r.r_n),
            };
            format!(
                "  who  {} {} {}  {:.0} IOPS {:.1} MB/s  {:.1}%  {p99}",
                r.name,
                r.pid.map_or_else(|| "-".into(), |p| p.to_string()),
                r.cgroup.as_deref().unwrap_or("-"),
                r.iops(),
                r.mib_s(),
                r.share.unwrap_or(0.0),
            )
        })
        .collect();
    let hidden = || w.processes.iter().skip(WHO_SHOWN);
    let rest = w.rest_s + hidden().map(WhoRow::iops).sum::<f64>();
    if rest > 0.0 && !out.is_empty() {
        let share =
            w.rest_share.unwrap_or(0.0) + hidden().map(|r| r.share.unwrap_or(0.0)).sum::<f64>();
        out.push(format!("  who  (rest)  {rest:.0} IOPS  {share:.1}%"));
    }
    out
}

/// `-c N`: at least one interval (0 would print nothing and look like success).
fn parse_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("count '0' is out of range: at least 1 interval".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("count '{s}' is not a whole number")),
    }
}

/// Run `blktune watch`.
pub fn run(g: &Global, a: &WatchArgs, out: &mut Out) -> anyhow::Result<i32> {
    let interrupt = Interrupt::catch()?;
    let root = g.root();
    // Only the named devices, and only the settings a row shows; the
    // kernel's percentiles where the output shows them.
    let opts = SamplerOptions {
        only: (!a.devices.is_empty()).then(|| a.devices.clone()),
        identity: false,
        ..SamplerOptions::default()
    };
    let trace = a.json || a.latency || a.who;
    let mut sampler = TracedSampler::start(root.clone(), opts, trace, g.no_bpf)
        .with_context(|| format!("cannot read {}/diskstats", root.procfs().display()))?;
    if a.who
        && let Err(why) = sampler.set_who(true)
    {
        eprintln!(
            "blktune: no attribution of I/O to processes: {}",
            printable(&why)
        );
    }
    // Why there are no percentiles, once. Not for --no-bpf (asked for) or a
    // fake sysfs tree (not the live kernel): the fields stay null.
    if trace
        && let Some(why) = sampler.latency().unavailable()
        && !matches!(why, Unavailable::Disabled | Unavailable::NotLive)
    {
        eprintln!("blktune: no kernel latency percentiles: {why}");
    }
    if std::env::var_os("BLKTUNE_DEBUG").is_some()
        && let Some(note) = sampler.sampler().hotplug_note()
    {
        eprintln!("blktune: debug: {note}");
    }
    // A captured tree without /proc: what is missing, once.
    if let Some(note) = sampler.sampler().counters_note() {
        eprintln!("blktune: {}", printable(note));
    }
    let mut names: Option<Vec<String>> = None;
    let mut probe: Option<Probe> = None;
    if a.latency && !a.json && sampler.latency().is_tracing() {
        out.line(
            "latency: the kernel's p99 (ms) of each interval's I/Os, from their start (what \
             r_await averages) and on the device (*_dev99); n=K when under 100 I/Os",
        )?;
    }
    let mut next = Instant::now() + a.interval;
    let mut n = 0u64;
    let mut warned = false;
    let memo = JsonMemo::new()?;
    let mut buf: Vec<u8> = Vec::new();
    while a.count.is_none_or(|c| n < c) {
        // Sleep to absolute deadlines so intervals do not drift.
        if interrupt.sleep_until(next) {
            break;
        }
        next += a.interval;
        let TracedTick {
            snapshot: snap,
            interval: traced,
            notes,
            who,
        } = sampler
            .tick()
            .with_context(|| format!("cannot read {}/diskstats", root.procfs().display()))?;
        say_notes(&notes);
        if !warned && !snap.warnings.is_empty() {
            // A file with no usable line at all is a failure; a few odd lines
            // among good ones are reported once and skipped.
            if snap.stats.is_empty() {
                anyhow::bail!(
                    "cannot parse {}/diskstats: {}",
                    root.procfs().display(),
                    snap.warnings[0]
                );
            }
            for w in &snap.warnings {
                eprintln!(
                    "blktune: warning: {}",
                    printable(&format!("{}/{w}; skipped", root.procfs().display()))
                );
            }
            warned = true;
        }
        // Named devices are checked once; the default selection follows
        // hot-plug (a new device shows "no data" for its first interval).
        let sel = match &names {
            Some(s) => s.clone(),
            None => {
                let s = selection(g, a, &snap)?;
                if !a.devices.is_empty() {
                    names = Some(s.clone());
                }
                s
            }
        };
        if a.probe {
            match &probe {
                // The default selection follows hot-plug; so does the probe.
                Some(p) => p.set_devices(&sel),
                None => {
                    let p = Probe::start(&root, &sel, a.probe_rate);
                    if !a.json {
                        out.line(&format!(
                            "probe: {:.1} read-only direct 4 KiB reads/s per device at random offsets, \
                             timed above the block layer (counted in r/s); pr_n reads per interval, \
                             pr_* their ms, pr_p99 from {MIN_IOS_FOR_P99} reads",
                            p.rate()
                        ))?;
                    }
                    probe = Some(p);
                }
            }
        }
        let itv = snap.interval.unwrap_or(0.0);
        let probed = probe.as_ref().map(Probe::take).unwrap_or_default();
        let timestamp = rfc3339(snap.wall);
        // The whole interval goes out in one write (a thousand devices are
        // a thousand lines: one syscall each would cost more than the
        // sample), from one buffer kept from tick to tick (fresh pages cost
        // a fault each).
        buf.clear();
        buf.reserve(sel.len() * if a.json { 768 } else { 128 });
        if !a.json {
            writeln!(buf, "\n{timestamp}  interval {itv:.3}s")?;
            buf.extend_from_slice(header().as_bytes());
            if a.latency {
                buf.extend_from_slice(latency_header().as_bytes());
            }
            if probe.is_some() {
                buf.extend_from_slice(probe_header().as_bytes());
            }
            buf.push(b'\n');
        }
        let none_who = DeviceWho::default();
        for name in &sel {
            let dev = snap.device(name);
            let q = dev.map(|d| &d.queue);
            let sched = q
                .and_then(|q| q.scheduler.as_ref())
                .map(|s| s.active.as_str());
            let stat = snap.stats.get(name);
            if a.json {
                let (stats, no_data) = match stat.map(|s| s.stats) {
                    Some(Ok(s)) => (Some(s), None),
                    Some(Err(e)) => (None, Some(e)),
                    None => (None, Some(NoData::FirstSample)),
                };
                let rec = WatchRecord {
                    disk_device: name,
                    timestamp: &timestamp,
                    interval_s: itv,
                    scheduler: sched,
                    nr_requests: q.and_then(|q| q.nr_requests),
                    read_ahead_kb: q.and_then(|q| q.read_ahead_kb),
                    no_data,
                    stats,
                    probe: probed.get(name).map(ProbeStats::json),
                    latency: Some(LatencyJson(summary_of(traced.as_ref(), dev))),
                    who: who.as_ref().map(|w| w.get(name).unwrap_or(&none_who)),
                };
                rec.write_json(&mut buf, &memo)?;
                buf.push(b'\n');
            } else {
                let mut line = row(name, sched.unwrap_or("-"), snap.ext(name));
                if (a.latency || probe.is_some()) && snap.ext(name).is_none() {
                    // Keep the extra columns aligned after a "no data" row.
                    let w = header().len();
                    line = format!("{line:<w$}");
                }
                if a.latency {
                    let s = summary_of(traced.as_ref(), dev);
                    line.push_str(&latency_cells(s.as_ref()));
                }
                if probe.is_some() {
                    line.push_str(&probe_cells(probed.get(name)));
                }
                buf.extend_from_slice(line.as_bytes());
                buf.push(b'\n');
                if let Some(w) = who.as_ref().and_then(|w| w.get(name)) {
                    for l in who_lines(w) {
                        writeln!(buf, "{}", printable(&l))?;
                    }
                }
            }
        }
        if let Some(note) = lost_note(traced.as_ref().map_or(0, |i| i.lost)) {
            // Text: under the interval's rows. JSON: the records are per
            // device and this is nobody's, so stderr, like the other notes.
            if a.json {
                eprintln!("blktune: {note}");
            } else if a.latency {
                writeln!(buf, "latency: {note}")?;
            }
        }
        out.text(std::str::from_utf8(&buf)?)?;
        n += 1;
    }
    if interrupt.came() {
        interrupt.die();
        // Only if the signal could not be raised again.
        return Ok(130);
    }
    Ok(0)
}

/// SIGINT (Ctrl-C, `kill -INT`) stops `watch` as it stops iostat, also
/// when `watch` was started with SIGINT ignored (a script's `watch &`:
/// shells start background jobs so, and the kernel keeps "ignored" across
/// exec). It is caught, so it ends `watch` between two intervals, never
/// inside one's lines, and `watch` then dies of it, as an interrupted
/// command does (a shell sees status 130).
struct Interrupt {
    came: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Written to by the handler: wakes a sleep at once.
    wake: std::os::unix::net::UnixStream,
}

impl Interrupt {
    /// Catch SIGINT from now on, whatever the process inherited.
    fn catch() -> anyhow::Result<Self> {
        use signal_hook::consts::SIGINT;
        let (wake, poke) = std::os::unix::net::UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        poke.set_nonblocking(true)?;
        let came = std::sync::Arc::default();
        signal_hook::flag::register(SIGINT, std::sync::Arc::clone(&came))
            .and_then(|_| signal_hook::low_level::pipe::register(SIGINT, poke))
            .context("cannot install the signal handler")?;
        Ok(Self { came, wake })
    }

    /// Has SIGINT come?
    fn came(&self) -> bool {
        self.came.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Sleep until `deadline`, or until SIGINT comes: `true` if it came.
    fn sleep_until(&self, deadline: Instant) -> bool {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::os::fd::AsFd;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.came() || left.is_zero() {
                return self.came();
            }
            let mut fds = [PollFd::new(self.wake.as_fd(), PollFlags::POLLIN)];
            // The wait is cut short by the poke (or by any signal: EINTR).
            let _ = poll(
                &mut fds,
                PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX),
            );
        }
    }

    /// Die of SIGINT (its default action), as an interrupted command does.
    fn die(&self) {
        let _ = std::io::stdout().flush();
        let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGINT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_is_said_only_when_there_was_a_loss() {
        assert_eq!(lost_note(0), None);
        assert!(lost_note(3).is_some_and(|n| n.starts_with("lost 3 I/O(s) ")));
    }

    /// Every kind of record: the memo's copies give the bytes serde gives.
    #[test]
    fn a_record_written_from_the_memo_is_the_one_serde_writes() {
        use blktune_core::latency::Hist;
        let mut hist = Hist::empty();
        for ns in [40_000, 90_000, 1_200_000] {
            hist.record(ns);
        }
        let busy = Summary::of([
            (Span::Total, Dir::Read, &hist),
            (Span::Device, Dir::Write, &hist),
        ]);
        let moving = ExtStats {
            r_s: 12.5,
            util: 3.25,
            r_await: 0.125,
            ..ExtStats::default()
        };
        let stats = [None, Some(ExtStats::default()), Some(moving)];
        let no_data = [None, Some(NoData::FirstSample), Some(NoData::CounterReset)];
        let latency = [
            None,
            Some(LatencyJson(None)),
            Some(LatencyJson(Some(Summary::default()))),
            Some(LatencyJson(Some(busy))),
        ];
        let probe = ProbeJson {
            figures: Default::default(),
            reads_per_sec: 2.0,
            errors: 0,
            error: None,
        };
        let memo = JsonMemo::new().unwrap();
        let mut copied = 0;
        for s in stats {
            for nd in no_data {
                for l in latency {
                    for p in [None, Some(probe.clone())] {
                        let rec = WatchRecord {
                            disk_device: "loop7",
                            timestamp: "2026-11-25T01:00:00.000Z",
                            interval_s: 1.002,
                            scheduler: Some("kyber"),
                            nr_requests: Some(64),
                            read_ahead_kb: None,
                            no_data: nd,
                            stats: s,
                            probe: p,
                            who: None,
                            latency: l,
                        };
                        let mut fast = Vec::new();
                        rec.write_json(&mut fast, &memo).unwrap();
                        let want = serde_json::to_vec(&rec).unwrap();
                        assert_eq!(
                            String::from_utf8(fast).unwrap(),
                            String::from_utf8(want).unwrap(),
                            "{rec:?}"
                        );
                        copied += usize::from(
                            rec.probe.is_none()
                                && (s == Some(ExtStats::default())
                                    || l.is_some_and(|l| memo.latency(l).is_some())),
                        );
                    }
                }
            }
        }
        // The memo was used, not only the whole-record fallback.
        assert!(copied >= 20, "{copied}");
    }

    #[test]
    fn latency_keys_follow_the_directions_prefixes() {
        for (dir, keys) in Dir::ALL.into_iter().zip(LATENCY_KEYS) {
            let pre = dir.prefix();
            let want = ["p50", "p90", "p99", "p999", "max", "n"].map(|k| format!("{pre}_{k}"));
            assert_eq!(keys, want.each_ref().map(String::as_str));
        }
        for (dir, key) in DEVICE_KEYS {
            assert_eq!(key, format!("{}_dev_p99", dir.prefix()));
        }
    }
}
