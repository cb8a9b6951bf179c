//! The kernel percentiles of `blktune_core::latency` against a reference
//! from the kernel's own trace events over the same I/Os (issue 14's
//! agreement target), under fio's mixed load on a loop device this test
//! creates, for `none`, `mq-deadline` and `bfq`.
//!
//! Both are attached before fio starts and read after it ends, and nothing
//! else touches the device, so both see exactly fio's I/Os. The reference
//! ([`Reference`]: an ftrace instance of the test's own) times each request
//! from block_io_start to block_rq_complete paired by sector, in whole µs of
//! the trace clock.
//!
//! Tolerances (the issue's):
//! - p50 and p99 of reads and writes within 25 %, or within 0.05 ms (p50) /
//!   0.1 ms (p99), whichever is looser;
//! - I/O counts within 1 % of fio's (reads: random 4 KiB, never adjacent, so
//!   never merged; writes: sequential but one at a time, so never merged);
//! - the mean of the total span within 5 % (or 0.01 ms) of diskstats'
//!   r_await / w_await over the same I/Os: the same span, measured by the
//!   same kernel from the same start time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::latency::{DevId, Dir, Intervals, Percentiles, Span, Tracer};
use common::{TestLoop, require_root, require_tool};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Seconds of fio load per scheduler.
const RUNTIME_S: u32 = 8;

/// The kernel's own trace events of one device (block_io_start,
/// block_rq_issue, block_rq_complete) in a tracefs instance of the test's
/// own, read from its `trace_pipe` as they come and paired by sector.
///
/// Why not bpftrace (the reference until CI lost it): the kernel runs a
/// tracepoint BPF program (bpftrace's kind) only where no other BPF program
/// or map syscall is active on that CPU (`bpf_prog_active`), so a completion
/// that interrupts a program running for a submission is skipped. On a fresh
/// CI machine with nothing else running, bpftrace lost 1.5 to 6% of the reads
/// in every run (more than its own `recursion_misses` counted). The ring
/// buffer of an ftrace instance takes events from every context, and what it
/// cannot take it counts (a `[LOST n EVENTS]` line, the `overrun` of each
/// CPU's stats), so a loss is seen, never silent.
struct Reference {
    /// The instance's directory under tracefs.
    dir: PathBuf,
    /// The thread reading `trace_pipe` until the end marker.
    reader: Option<std::thread::JoinHandle<std::io::Result<Measured>>>,
}

/// Written to the instance's `trace_marker` after its events are off: the
/// last line the reader reads.
const END_MARK: &str = "blktune-reference-end";

/// The block events the reference pairs.
const EVENTS: [&str; 3] = ["block_io_start", "block_rq_issue", "block_rq_complete"];

impl Reference {
    /// Start reading the device's events (`dev`: its kernel dev_t).
    fn start(dev: DevId) -> Self {
        let _ = Command::new("sh")
            .arg("-c")
            .arg("mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing")
            .status();
        let dir = PathBuf::from(format!(
            "/sys/kernel/tracing/instances/blktune-reference-{}",
            std::process::id()
        ));
        // Left by a run that was killed: its events would be mixed in.
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).expect("a tracefs instance");
        let me = Self { dir, reader: None };
        let write = |file: &str, value: &str| {
            std::fs::write(me.dir.join(file), value)
                .unwrap_or_else(|e| panic!("{}/{file}: {e}", me.dir.display()))
        };
        // One clock for every CPU: a request may start on one and end on another.
        write("trace_clock", "mono");
        // Per CPU; read while fio runs, so this only absorbs the reader's lag.
        write("buffer_size_kb", "16384");
        for event in EVENTS {
            write(
                &format!("events/block/{event}/filter"),
                &format!("dev == {}", dev.to_kernel()),
            );
        }
        let pipe = std::fs::File::open(me.dir.join("trace_pipe")).expect("trace_pipe");
        let mut me = me;
        me.reader = Some(std::thread::spawn(move || read_events(pipe)));
        for event in EVENTS {
            std::fs::write(me.dir.join(format!("events/block/{event}/enable")), "1")
                .expect("enable an event");
        }
        me
    }

    /// Events the instance's ring buffer could not keep, from each CPU's stats.
    fn overrun(&self) -> u64 {
        let Ok(cpus) = std::fs::read_dir(self.dir.join("per_cpu")) else {
            return 0;
        };
        cpus.flatten()
            .filter_map(|cpu| std::fs::read_to_string(cpu.path().join("stats")).ok())
            .flat_map(|stats| {
                stats
                    .lines()
                    .filter_map(|l| {
                        l.strip_prefix("overrun:")
                            .or_else(|| l.strip_prefix("dropped events:"))
                            .and_then(|v| v.trim().parse::<u64>().ok())
                    })
                    .collect::<Vec<_>>()
            })
            .sum()
    }

    /// Stop the events and return what they measured, with the events lost.
    fn stop(mut self) -> (Measured, u64) {
        let _ = std::fs::write(self.dir.join("events/enable"), "0");
        let overrun = self.overrun();
        std::fs::write(self.dir.join("trace_marker"), END_MARK).expect("trace_marker");
        let measured = self
            .reader
            .take()
            .expect("reader")
            .join()
            .expect("reader thread")
            .expect("trace_pipe");
        let lost = overrun + measured.lost;
        (measured, lost)
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("events/enable"), "0");
        if let Some(reader) = self.reader.take() {
            let _ = std::fs::write(self.dir.join("trace_marker"), END_MARK);
            let _ = reader.join();
        }
        // The instance goes once nothing holds its files open.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Read the instance's events until the end marker: each request timed from
/// its block_io_start (total span) and its block_rq_issue (device span) to
/// its block_rq_complete, paired by sector (the instance sees one device),
/// counted by the first letter of rwbs and whole microseconds.
fn read_events(pipe: std::fs::File) -> std::io::Result<Measured> {
    let mut started: HashMap<u64, u64> = HashMap::new();
    let mut issued: HashMap<u64, u64> = HashMap::new();
    let mut total: BTreeMap<(char, u64), u64> = BTreeMap::new();
    let mut device: BTreeMap<(char, u64), u64> = BTreeMap::new();
    let mut lost = 0;
    let mut reader = BufReader::new(pipe);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        if line.contains(END_MARK) {
            break;
        }
        // "CPU:1 [LOST 12 EVENTS]"
        if let Some(n) = line
            .split_once("[LOST ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
        {
            lost += n;
            continue;
        }
        let Some(event) = parse_event(&line) else {
            continue;
        };
        match event.name {
            "block_io_start" => {
                started.insert(event.sector, event.us);
            }
            "block_rq_issue" => {
                issued.insert(event.sector, event.us);
            }
            "block_rq_complete" => {
                if let Some(start) = started.remove(&event.sector) {
                    *total
                        .entry((event.dir, event.us.saturating_sub(start)))
                        .or_default() += 1;
                }
                if let Some(issue) = issued.remove(&event.sector) {
                    *device
                        .entry((event.dir, event.us.saturating_sub(issue)))
                        .or_default() += 1;
                }
            }
            _ => {}
        }
    }
    let by_dir = |map: BTreeMap<(char, u64), u64>| {
        let mut out: BTreeMap<char, Vec<(u64, u64)>> = BTreeMap::new();
        for ((dir, us), n) in map {
            out.entry(dir).or_default().push((us, n));
        }
        out
    };
    Ok(Measured {
        total: by_dir(total),
        device: by_dir(device),
        lost,
    })
}

/// One block event of the trace.
struct Event<'a> {
    /// block_io_start, block_rq_issue or block_rq_complete.
    name: &'a str,
    /// Its time, in µs of the instance's clock.
    us: u64,
    /// rwbs's first letter: R, W, F, D, N.
    dir: char,
    sector: u64,
}

/// One line of `trace_pipe`, e.g.
/// `fio-5  [001] ..... 812.123456: block_rq_complete: 7,1 R () 1234 + 8 none,0,0 [0]`
/// (the format each event's `format` file prints).
fn parse_event(line: &str) -> Option<Event<'_>> {
    let (head, rest) = line.split_once(": block_")?;
    let (secs, micros) = head.rsplit(' ').next()?.split_once('.')?;
    let us = secs.parse::<u64>().ok()? * 1_000_000 + micros.parse::<u64>().ok()?;
    let (name_tail, fields) = rest.split_once(": ")?;
    // "block_" and its tail, as one slice of the line.
    let name_at = head.len() + ": ".len();
    let name = line.get(name_at..name_at + "block_".len() + name_tail.len())?;
    let tokens: Vec<&str> = fields.split_whitespace().collect();
    let dir = tokens.get(1)?.chars().next()?;
    let plus = tokens.iter().position(|t| *t == "+")?;
    let sector = tokens.get(plus.checked_sub(1)?)?.parse().ok()?;
    Some(Event {
        name,
        us,
        dir,
        sector,
    })
}

/// The reference's latencies (µs, count) by first letter of rwbs, of each span.
#[derive(Default)]
struct Measured {
    /// From block_io_start.
    total: BTreeMap<char, Vec<(u64, u64)>>,
    /// From block_rq_issue.
    device: BTreeMap<char, Vec<(u64, u64)>>,
    /// Events the reader was told were lost (`[LOST n EVENTS]`).
    lost: u64,
}

/// The mean (ms) of a µs histogram.
fn mean(hist: &[(u64, u64)]) -> f64 {
    let n: u64 = hist.iter().map(|&(_, c)| c).sum();
    let sum: u64 = hist.iter().map(|&(us, c)| us * c).sum();
    sum as f64 / n.max(1) as f64 / 1000.0
}

/// The exact percentile (ms) of a µs histogram: the value of rank ⌈q·n⌉.
fn exact(hist: &[(u64, u64)], q: f64) -> f64 {
    let mut h = hist.to_vec();
    h.sort_unstable();
    let n: u64 = h.iter().map(|&(_, c)| c).sum();
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    for (us, c) in h {
        seen += c;
        if seen >= rank {
            // The I/O took between us and us+1 µs: take the middle.
            return (us as f64 + 0.5) / 1000.0;
        }
    }
    unreachable!()
}

/// reads, ms reading, writes, ms writing of a device, from /proc/diskstats.
fn diskstats(name: &str) -> [u64; 4] {
    let text = std::fs::read_to_string("/proc/diskstats").expect("diskstats");
    let cols: Vec<u64> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|c| c[2] == name)
        .expect("device in diskstats")[3..]
        .iter()
        .map(|v| v.parse().expect("number"))
        .collect();
    [cols[0], cols[3], cols[4], cols[7]]
}

/// fio's I/O count of each direction, summed over its jobs.
fn fio_ios(json: &serde_json::Value) -> (u64, u64) {
    let jobs = json["jobs"].as_array().expect("jobs");
    let sum = |dir: &str| -> u64 {
        jobs.iter()
            .map(|j| j[dir]["total_ios"].as_u64().expect("total_ios"))
            .sum()
    };
    (sum("read"), sum("write"))
}

fn within(ours: f64, reference: f64, rel: f64, abs: f64) -> bool {
    (ours - reference).abs() <= (rel * reference).max(abs)
}

/// One agreement run at a time: two references and two fio loads
/// at once would measure each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn agreement(test: &str, scheduler: &str, issue_times: IssueTimes) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !require_root(test) || !require_tool(test, "fio") {
        return;
    }
    // On the target dir's filesystem: real latencies, in the ms range.
    let lo = TestLoop::new(256);
    lo.set_queue("scheduler", scheduler);

    // The reference is only a reference when it saw every I/O (bpftrace,
    // the reference before, lost 15-19% of the reads under load, the fast
    // ones, so its p50 moved by half). A run whose trace lost events, or
    // whose counts are not fio's, compares nothing and is run again.
    let mut lost = Vec::new();
    for attempt in 1..=ATTEMPTS {
        match attempt_once(test, &lo, scheduler, issue_times) {
            Attempt::Compared => return,
            Attempt::ReferenceLost(why) => {
                eprintln!("{test}: attempt {attempt} of {ATTEMPTS}: {why}; running it again");
                lost.push(why);
            }
        }
    }
    panic!(
        "{test}: the reference lost I/Os in all {ATTEMPTS} runs, so nothing could be compared:\n{}",
        lost.join("\n")
    );
}

/// Runs of the comparison before the test gives up on the reference.
const ATTEMPTS: usize = 3;

/// What one run of fio under both tracers came to.
enum Attempt {
    /// Both saw every I/O and were compared (the asserts passed).
    Compared,
    /// The reference missed I/Os (its counts against fio's, said here).
    ReferenceLost(String),
}

/// One run of fio under both tracers, compared where the reference saw every I/O.
fn attempt_once(test: &str, lo: &TestLoop, scheduler: &str, issue_times: IssueTimes) -> Attempt {
    let name = lo.name().to_string();
    let sys = |f: &str| {
        std::fs::read_to_string(format!("/sys/block/{name}/{f}"))
            .expect("sysfs")
            .trim()
            .to_string()
    };
    let (major, minor) = sys("dev")
        .split_once(':')
        .map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap()))
        .unwrap();
    let dev = DevId { major, minor };
    let diskseq: u64 = sys("diskseq").parse().expect("diskseq");

    let mut tracer = match issue_times {
        IssueTimes::Kernel => Tracer::start(false, true),
        IssueTimes::Own => Tracer::start_timing_every_issue(false, true),
    }
    .expect("the BPF program loads as root");
    // Loaded against the slim blob of the kernel's BTF (the cheap load), and
    // the figures below agree with the reference all the same.
    assert!(
        tracer.slim_btf().is_some(),
        "the load needed all of the BTF"
    );
    // This kernel's BTF names the flags that say when it times an issue
    // itself, so those issues cost the program no lookup of its own.
    assert_eq!(
        tracer.kernel_issue_times(),
        issue_times == IssueTimes::Kernel,
        "QUEUE_FLAG_STATS / __RQF_STATS not found in the kernel's BTF"
    );
    let mut intervals = Intervals::new();
    assert!(intervals.next(tracer.read().expect("read")).is_none());
    let reference = Reference::start(dev);
    let before = diskstats(&name);

    let fio = Command::new("fio")
        .args([
            "--output-format=json",
            "--direct=1",
            "--time_based",
            &format!("--runtime={RUNTIME_S}"),
            &format!("--filename=/dev/{name}"),
            "--name=randread",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--name=seqwrite",
            "--rw=write",
            "--bs=16k",
            "--ioengine=psync",
        ])
        .output()
        .expect("fio");
    assert!(
        fio.status.success(),
        "fio: {}",
        String::from_utf8_lossy(&fio.stderr)
    );
    let fio_json: serde_json::Value = serde_json::from_slice(&fio.stdout).expect("fio json");
    let (fio_reads, fio_writes) = fio_ios(&fio_json);

    let interval = intervals
        .next(tracer.read().expect("read"))
        .expect("an interval");
    let after = diskstats(&name);
    let (reference, missed) = reference.stop();
    let ours = interval.summary(dev, Some(diskseq));

    // Where the queue keeps statistics (every loop device here: write
    // throttling's statistics stay on under bfq too) the device span starts
    // at the kernel's own issue time; elsewhere at the program's.
    let mut report = format!(
        "{test} on {name} ({scheduler}, wbt_lat_usec {}, kernel issue times known: {}): \
         fio {fio_reads} reads, {fio_writes} writes\n",
        sys("queue/wbt_lat_usec"),
        tracer.kernel_issue_times()
    );
    let mut failures = Vec::new();
    let lost: Vec<String> = [('R', fio_reads), ('W', fio_writes)]
        .into_iter()
        .filter_map(|(letter, fio_n)| {
            let ref_n: u64 = reference
                .total
                .get(&letter)
                .map_or(0, |h| h.iter().map(|&(_, c)| c).sum());
            (ref_n.abs_diff(fio_n) as f64 > 0.01 * fio_n as f64)
                .then(|| format!("{letter}: reference {ref_n} of fio's {fio_n}"))
        })
        .collect();
    if !lost.is_empty() || missed > 0 {
        eprint!("{report}");
        return Attempt::ReferenceLost(format!(
            "{}; the trace lost {missed} events (its ring buffer overran)",
            if lost.is_empty() {
                "counts complete".to_string()
            } else {
                lost.join(", ")
            }
        ));
    }
    for (dir, letter, fio_n, ios, ms) in [
        (
            Dir::Read,
            'R',
            fio_reads,
            after[0] - before[0],
            after[1] - before[1],
        ),
        (
            Dir::Write,
            'W',
            fio_writes,
            after[2] - before[2],
            after[3] - before[3],
        ),
    ] {
        let p: Percentiles = *ours.get(Span::Total, dir).expect("traced I/O");
        let refh = reference.total.get(&letter).expect("reference I/O");
        let ref_n: u64 = refh.iter().map(|&(_, c)| c).sum();
        let (r50, r99) = (exact(refh, 0.5), exact(refh, 0.99));
        let ref_mean = mean(refh);
        let await_ms = ms as f64 / ios as f64;
        let dev = *ours.get(Span::Device, dir).expect("device span");
        let refd = reference
            .device
            .get(&letter)
            .expect("reference device span");
        let (d50, d99) = (exact(refd, 0.5), exact(refd, 0.99));
        let dev99 = dev.p99;
        report += &format!(
            "  {dir:?}: n ours {} / reference {ref_n} / fio {fio_n} / diskstats {ios}; \
             p50 {:.3} vs {r50:.3} ms; p99 {:.3} vs {r99:.3} ms; mean {:.3} vs {ref_mean:.3} ms (await {await_ms:.3}); \
             device: n {}, p50 {:.3} vs {d50:.3} ms, p99 {dev99:.3} vs {d99:.3} ms\n",
            p.n, p.p50, p.p99, p.mean, dev.n, dev.p50
        );
        if p.n.abs_diff(fio_n) as f64 > 0.01 * fio_n as f64 {
            failures.push(format!("{dir:?} count {} vs fio {fio_n} (> 1 %)", p.n));
        }
        if !within(p.p50, r50, 0.25, 0.05) {
            failures.push(format!("{dir:?} p50 {:.3} vs {r50:.3} ms", p.p50));
        }
        if !within(p.p99, r99, 0.25, 0.1) {
            failures.push(format!("{dir:?} p99 {:.3} vs {r99:.3} ms", p.p99));
        }
        // The mean is the trace's mean (both clocks are the tracepoints').
        if !within(p.mean, ref_mean, 0.05, 0.01) {
            failures.push(format!("{dir:?} mean {:.3} vs {ref_mean:.3} ms", p.mean));
        }
        // iostat's await is near it, never the same: since Linux 6.9 the
        // accounting stamps a request with the submitting task's plug clock
        // (`blk_time_get_ns`, cached for the whole plug), so a request
        // submitted late in a batch looks older than it is; and it stops
        // the clock a few µs after the completion tracepoint. Seen: write
        // mean 0.136 against await 0.170 ms under bfq (reads 0.268 / 0.290),
        // the percentiles against the trace within 3%. So await is the same
        // story within a third, and never shorter than ours by much.
        if !within(p.mean, await_ms, 0.35, 0.05) || await_ms < p.mean * 0.95 - 0.01 {
            failures.push(format!(
                "{dir:?} mean {:.3} vs await {await_ms:.3} ms",
                p.mean
            ));
        }
        if !within(dev.p50, d50, 0.25, 0.05) {
            failures.push(format!("{dir:?} device p50 {:.3} vs {d50:.3} ms", dev.p50));
        }
        if !within(dev99, d99, 0.25, 0.1) {
            failures.push(format!("{dir:?} device p99 {dev99:.3} vs {d99:.3} ms"));
        }
        // The device span is part of the total span.
        if dev99 > p.p99 * 1.02 {
            failures.push(format!(
                "{dir:?} device p99 {dev99:.3} above total p99 {:.3}",
                p.p99
            ));
        }
    }
    eprint!("{report}");
    assert!(failures.is_empty(), "{report}{}", failures.join("\n"));
    Attempt::Compared
}

#[test]
fn kernel_percentiles_agree_with_the_kernels_trace_events_under_none() {
    agreement(
        "kernel_percentiles_agree_with_the_kernels_trace_events_under_none",
        "none",
        IssueTimes::Kernel,
    );
}

#[test]
fn kernel_percentiles_agree_with_the_kernels_trace_events_under_mq_deadline() {
    agreement(
        "kernel_percentiles_agree_with_the_kernels_trace_events_under_mq_deadline",
        "mq-deadline",
        IssueTimes::Kernel,
    );
}

/// And with the program timing every issue itself, as on a queue that keeps
/// no statistics (none here has none to show).
#[test]
fn kernel_percentiles_agree_with_the_kernels_trace_events_under_bfq_timing_every_issue() {
    agreement(
        "kernel_percentiles_agree_with_the_kernels_trace_events_under_bfq_timing_every_issue",
        "bfq",
        IssueTimes::Own,
    );
}

/// Where the device span's start comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IssueTimes {
    /// The kernel's, where it keeps them (the default).
    Kernel,
    /// The program's own, for every I/O.
    Own,
}
