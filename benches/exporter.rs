//! Cost of `blktune exporter` at 1000 devices and a 15 s scrape, on a
//! generated fake tree: `cargo bench --bench exporter` prints, per scrape,
//! the CPU time, wall time and bytes, and the sum with the idle time
//! between scrapes as a share of one core at a 15 s scrape interval, next
//! to the 1 % budget. Figures only; nothing here asserts a time.
//!
//! Two parts. (1) The scrape with every histogram: a fake tree has no
//! kernel tracer, so the exporter's own scrape code (`cli::exporter::bench`:
//! the sysfs reads, the rendering, the HTTP answer) is run in this process
//! on readings made up here: every device with all 4 ops x 2 spans, each a
//! spread of latencies over 3 decades, so that every bucket line is written
//! as for a busy disk. Its CPU time is this thread's (schedstat, ns).
//! (2) The exporter itself, started on the tree, for what (1) leaves out:
//! the idle time between scrapes (the rules thread looks at the rules files
//! and the devices every 30 s), and its scrape without histograms as a
//! cross-check of (1)'s.
//!
//! A fake tree lives on tmpfs or disk, not sysfs (a real sysfs read costs
//! more). The BPF map read is timed apart, on this machine's real devices,
//! when run as root. The tracer's per-I/O cost is
//! benches/latency/overhead.sh's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune::cli::exporter::bench::Scraper;
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::latency::hist::{self, Hist};
use blktune_core::latency::{DevId, DeviceHists, Dir, Readings, Span};
use blktune_core::metrics::histogram;
use blktune_core::os::SysRoot;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// CPU time (ns) of process `pid` so far, its ended threads included
/// (/proc/PID/stat utime + stime, in clock ticks).
fn cpu_ns(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name in parentheses: utime is the 14th
    // field of the line, stime the 15th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // SAFETY-free: sysconf reads a constant.
    let hz = u64::try_from(
        nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .unwrap_or(100),
    )
    .unwrap_or(100);
    (f[11] + f[12]) * 1_000_000_000 / hz
}

/// GET /metrics: the body's length.
fn scrape(addr: &str) -> usize {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    out.len()
}

/// This thread's CPU time so far, ns (/proc/thread-self/schedstat's first field).
fn thread_cpu_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// A busy disk's histogram of one op and span: `ios` latencies spread
/// log-normally around `median_ns` (sigma 1 in ln, so the bulk covers
/// about 3 decades and every bucket from 4 us up is written), counted
/// straight into the kernel's slots.
fn busy_hist(median_ns: f64, ios: f64) -> Hist {
    let mut value = vec![0u64; hist::NR_SLOTS + 1];
    let mut sum = 0u64;
    for (slot, count) in value.iter_mut().take(hist::NR_SLOTS).enumerate() {
        let (lo, hi) = hist::slot_bounds(slot);
        let hi = hi.unwrap_or(lo * 2);
        let mid = (lo.max(1) as f64 * hi as f64).sqrt();
        // Density of ln(latency) times the slot's width in ln.
        let z = (mid / median_ns).ln();
        let width = (hi as f64 / lo.max(1) as f64).ln();
        let share = (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt() * width;
        *count = (ios * share).round() as u64;
        sum = sum.wrapping_add(*count * mid as u64);
    }
    value[hist::NR_SLOTS] = sum;
    Hist::from_value(&value).unwrap()
}

/// Readings of `n` loop devices (7:i) with every op and span busy.
fn busy_readings(n: u32) -> Readings {
    let mut devices = BTreeMap::new();
    for i in 0..n {
        let mut hists = BTreeMap::new();
        for (dir, median_us) in [
            (Dir::Read, 200.0),
            (Dir::Write, 900.0),
            (Dir::Discard, 4000.0),
            (Dir::Flush, 1500.0),
        ] {
            // Millions of I/Os since the start: numbers of realistic length.
            let ios = 3.0e6 + f64::from(i) * 7919.0;
            hists.insert((Span::Total, dir), busy_hist(median_us * 1e3, ios));
            hists.insert((Span::Device, dir), busy_hist(median_us * 700.0, ios));
        }
        devices.insert(
            DevId { major: 7, minor: i },
            DeviceHists { diskseq: 0, hists },
        );
    }
    Readings { devices, lost: 0 }
}

/// One scrape by `scraper` answered over a loopback connection to a
/// reader that drains it (the reader's CPU, Prometheus's side, not counted):
/// (this thread's CPU ns, wall ns, body bytes).
fn served_scrape(
    scraper: &mut Scraper,
    readings: &Readings,
    listener: &TcpListener,
) -> (u64, u64, usize) {
    let addr = listener.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let mut client = TcpStream::connect(addr).unwrap();
        let mut sink = Vec::new();
        client.read_to_end(&mut sink).unwrap();
    });
    let (mut server, _) = listener.accept().unwrap();
    let (cpu, wall) = (thread_cpu_ns(), Instant::now());
    let bytes = scraper.serve(readings, &mut server).unwrap();
    drop(server);
    let cpu = thread_cpu_ns() - cpu;
    let wall = wall.elapsed().as_nanos() as u64;
    reader.join().unwrap();
    (cpu, wall, bytes)
}

/// The median of `values`.
fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

fn main() {
    let n = 1000;
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(dir.path()).unwrap();
    for i in 0..n {
        tree.add(
            &FakeDisk::new(&format!("loop{i}"))
                .dev(7, i)
                .hw_queue_depth(128)
                .ids(None, None),
        )
        .unwrap();
    }
    println!("blktune exporter on a fake tree of {n} devices (release build, this machine):");
    let per_scrape = with_histograms(&dir, n);
    let idle_per_interval_ns = exporter_process(&dir);
    let map_read_ns = tracer_read();
    let interval_ns = 15e9;
    let verdict = |share: f64| if share < 1.0 { "within it" } else { "MISSED" };
    for (per_octave, scrape_ns) in [
        (histogram::DEFAULT_PER_OCTAVE, per_scrape.default),
        (FINER, per_scrape.finer),
    ] {
        let share = (scrape_ns + idle_per_interval_ns) / interval_ns * 100.0;
        println!(
            "  at a 15 s scrape, {per_octave} buckets per power of two, (1) + (2)'s idle: {share:.3} % of one core (budget 1 %: {})",
            verdict(share)
        );
        if let Some(map) = map_read_ns {
            let with_map = share + map / interval_ns * 100.0;
            println!(
                "      with the map read extrapolated to 4000 entries: {with_map:.3} % (budget 1 %: {})",
                verdict(with_map)
            );
        }
    }
}

/// Part (1): the scrape with every histogram, in this process; its CPU ns
/// per scrape, the full re-read of each device every 5 minutes included,
/// at the default density and at [`FINER`].
fn with_histograms(dir: &tempfile::TempDir, n: u32) -> Costs {
    let root = SysRoot::new(dir.path().join("sys"), dir.path().join("proc"));
    // Every device with a rule, as on a fleet that deploys one.
    let rules = (0..n)
        .map(|i| {
            (
                format!("loop{i}"),
                (
                    "mq-deadline".to_owned(),
                    "/etc/udev/rules.d/61-blktune.rules".to_owned(),
                ),
            )
        })
        .collect();
    let mut scraper = Scraper::new(root, histogram::DEFAULT_PER_OCTAVE, rules);
    let busy = busy_readings(n);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let text = scraper.text(&busy);
    let series = text
        .lines()
        .filter(|l| l.starts_with("blktune_io_latency_seconds_count{"))
        .count();
    let lines = text.lines().filter(|l| !l.starts_with('#')).count();
    let rounds = 15;
    // The first scrape reads every device in full (identity, udev); later
    // ones only its queue settings, for 5 minutes (IDENTITY_REFRESH): the
    // difference, timed without histograms, is paid once in 20 scrapes.
    let idle = Readings::default();
    let first_bare = median(
        (0..3)
            .map(|_| {
                let mut fresh = Scraper::new(
                    SysRoot::new(dir.path().join("sys"), dir.path().join("proc")),
                    histogram::DEFAULT_PER_OCTAVE,
                    BTreeMap::new(),
                );
                served_scrape(&mut fresh, &idle, &listener).0
            })
            .collect(),
    );
    let mut cpu = Vec::new();
    let mut wall = Vec::new();
    let mut bytes = 0;
    for _ in 0..rounds {
        let (c, w, b) = served_scrape(&mut scraper, &busy, &listener);
        cpu.push(c);
        wall.push(w);
        bytes = b;
    }
    let (cpu_min, cpu_max) = (*cpu.iter().min().unwrap(), *cpu.iter().max().unwrap());
    let (cpu, wall) = (median(cpu), median(wall));
    let bare = median(
        (0..rounds)
            .map(|_| served_scrape(&mut scraper, &idle, &listener).0)
            .collect(),
    );
    // At a 15 s scrape, one scrape in 20 re-reads every device in full.
    let refresh = first_bare.saturating_sub(bare) as f64 / 20.0;
    let ms = |ns: u64| ns as f64 / 1e6;
    println!(
        "  (1) a scrape with every histogram ({series} series: 4 ops x 2 spans x {n} devices, {lines} samples), in-process, median of {rounds}:"
    );
    println!(
        "      {:.1} ms CPU (range {:.1} to {:.1}), {:.1} ms wall, {bytes} bytes ({:.1} MiB)",
        ms(cpu),
        ms(cpu_min),
        ms(cpu_max),
        ms(wall),
        bytes as f64 / 1048576.0
    );
    println!(
        "      the same scrape without histograms: {:.1} ms CPU; the first (every device read in full, again every 5 min): {:.1} ms, {:.2} ms per scrape at 15 s",
        ms(bare),
        ms(first_bare),
        refresh / 1e6
    );
    // More buckets: the same scrape at 4 per power of two.
    let mut finer = Scraper::new(
        SysRoot::new(dir.path().join("sys"), dir.path().join("proc")),
        FINER,
        BTreeMap::new(),
    );
    let _ = served_scrape(&mut finer, &busy, &listener);
    let mut finer_bytes = 0;
    let finer_cpu = median(
        (0..rounds)
            .map(|_| {
                let (c, _, b) = served_scrape(&mut finer, &busy, &listener);
                finer_bytes = b;
                c
            })
            .collect(),
    );
    println!(
        "      the same scrape at --buckets-per-octave {FINER} ({} buckets a histogram): {:.1} ms CPU, {:.1} MiB",
        histogram::bounds_ns(FINER).len() + 1,
        ms(finer_cpu),
        finer_bytes as f64 / 1048576.0
    );
    Costs {
        default: cpu as f64 + refresh,
        finer: finer_cpu as f64 + refresh,
    }
}

/// The finer density the bench also measures.
const FINER: u32 = 4;

/// CPU ns of a scrape with every histogram, at the default density and at [`FINER`].
struct Costs {
    default: f64,
    finer: f64,
}

/// Part (2): the exporter started on the tree; the CPU ns it spends idle
/// per 15 s.
fn exporter_process(dir: &tempfile::TempDir) -> f64 {
    let rules = dir.path().join("etc/udev/rules.d");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("61-blktune.rules"),
        "ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"loop1\", ATTR{queue/scheduler}=\"kyber\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("udev")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .arg("--sysfs-root")
        .arg(dir.path().join("sys"))
        .arg("--proc-root")
        .arg(dir.path().join("proc"))
        .args(["exporter", "--listen", "127.0.0.1:0", "--udev-db"])
        .arg(dir.path().join("udev"))
        .arg("--config-root")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .trim_start_matches("blktune exporter: listening on http://")
        .trim_end_matches("/metrics")
        .to_owned();
    // Start-up: the rules thread's first pass over every device.
    let t = Instant::now();
    loop {
        let before = cpu_ns(pid);
        std::thread::sleep(Duration::from_millis(500));
        if cpu_ns(pid) - before < 20_000_000 || t.elapsed() > Duration::from_secs(120) {
            break;
        }
    }
    let startup_ms = cpu_ns(pid) as f64 / 1e6;
    let bytes = scrape(&addr);
    let scrapes = 40;
    let before = cpu_ns(pid);
    let wall = Instant::now();
    for _ in 0..scrapes {
        scrape(&addr);
    }
    let per_scrape_ms = (cpu_ns(pid) - before) as f64 / 1e6 / f64::from(scrapes);
    let wall_ms = wall.elapsed().as_secs_f64() * 1e3 / f64::from(scrapes);
    // Idle: one whole rules-thread period without a scrape.
    let idle_window = Duration::from_secs(31);
    let before = cpu_ns(pid);
    std::thread::sleep(idle_window);
    let idle_ms = (cpu_ns(pid) - before) as f64 / 1e6;
    let _ = child.kill();
    let _ = child.wait();

    println!(
        "  (2) the exporter process, without histograms (CPU from /proc/PID/stat: 10 ms ticks):"
    );
    println!("      start-up (first pass over the rules): {startup_ms:.0} ms CPU");
    println!(
        "      a scrape: {per_scrape_ms:.1} ms CPU ({wall_ms:.1} ms wall, {bytes} bytes), mean of {scrapes}"
    );
    println!(
        "      idle: {idle_ms:.1} ms CPU in {} s ({:.1} ms per 15 s)",
        idle_window.as_secs(),
        idle_ms * 15.0 / idle_window.as_secs_f64()
    );
    idle_ms * 1e6 * 15.0 / idle_window.as_secs_f64()
}

/// The BPF map read of one scrape, on this machine's real devices (root
/// only): per read, and per (device, op) map entry read; that per entry
/// times 4000 (1000 devices x 4 ops), in ns.
fn tracer_read() -> Option<f64> {
    let Ok(mut tracer) = blktune_core::latency::Tracer::start(false, true) else {
        println!("  tracer map read: not measured (needs root and BTF)");
        return None;
    };
    // Entries to read: this benchmark's own loop devices, each with all 4
    // ops; read with 4 of them busy, then with all 16: the difference is
    // the cost of an entry, the rest the read's fixed cost.
    let loops = OwnLoops::attach(16);
    loops.busy(0..4);
    let few = timed_reads(&mut tracer);
    loops.busy(4..loops.devices.len());
    let all = timed_reads(&mut tracer);
    drop(loops);
    let (few, all) = (few?, all?);
    let per_entry = (all.cpu_ms - few.cpu_ms) / (all.entries - few.entries).max(1) as f64;
    let fixed = (few.cpu_ms - per_entry * few.entries as f64).max(0.0);
    println!(
        "  tracer map read (real kernel): {:.2} ms CPU ({:.2} ms wall) per read of {} map entries of (device, op), {:.2} ms ({:.2} ms wall) of {}: {:.4} ms per entry, {fixed:.2} ms fixed",
        few.cpu_ms, few.wall_ms, few.entries, all.cpu_ms, all.wall_ms, all.entries, per_entry
    );
    let at_1000 = fixed + per_entry * 4000.0;
    println!(
        "      not measured: the read at 1000 devices x 4 ops (4000 entries); fixed + 4000 entries from these two is {at_1000:.0} ms per scrape"
    );
    Some(at_1000 * 1e6)
}

/// What [`timed_reads`] measured.
struct MapRead {
    entries: usize,
    cpu_ms: f64,
    wall_ms: f64,
}

/// The CPU and wall time of one tracer read (mean of 20) and how many map
/// entries of (device, op) it read; `None` when nothing was traced.
fn timed_reads(tracer: &mut blktune_core::latency::Tracer) -> Option<MapRead> {
    let reading = tracer.read().unwrap_or_default();
    let entries = reading
        .devices
        .values()
        .map(|d| {
            d.hists
                .keys()
                .map(|(_, dir)| *dir)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        })
        .sum::<usize>();
    let reads = 20;
    let (cpu, wall) = (thread_cpu_ns(), Instant::now());
    for _ in 0..reads {
        let _ = std::hint::black_box(tracer.read());
    }
    (entries > 0).then(|| MapRead {
        entries,
        cpu_ms: (thread_cpu_ns() - cpu) as f64 / 1e6 / f64::from(reads),
        wall_ms: wall.elapsed().as_secs_f64() * 1e3 / f64::from(reads),
    })
}

/// Loop devices this benchmark attached (over files in /dev/shm),
/// detached when dropped.
struct OwnLoops {
    devices: Vec<String>,
    dir: tempfile::TempDir,
}

impl OwnLoops {
    /// Attach `n` loop devices over 4 MiB files.
    fn attach(n: usize) -> Self {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let mut loops = Self {
            devices: Vec::new(),
            dir,
        };
        for i in 0..n {
            let file = loops.dir.path().join(format!("exporter-bench-{i}"));
            std::fs::write(&file, vec![0u8; 4 << 20]).unwrap();
            let out = Command::new("losetup")
                .args(["--find", "--show"])
                .arg(&file)
                .output()
                .unwrap();
            let dev = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if !out.status.success() || !dev.starts_with("/dev/loop") {
                break;
            }
            loops.devices.push(dev);
        }
        loops
    }

    /// Give the devices in `which` a read, a write, a flush and a discard
    /// (for the tracer's 4 entries per device).
    fn busy(&self, which: std::ops::Range<usize>) {
        let run = |args: &[&str]| {
            let _ = Command::new(args[0])
                .args(&args[1..])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        };
        for dev in self.devices.get(which).unwrap_or_default() {
            let of = format!("of={dev}");
            let inf = format!("if={dev}");
            run(&[
                "dd",
                "if=/dev/zero",
                &of,
                "bs=4k",
                "count=16",
                "oflag=direct",
                "conv=fsync",
            ]);
            run(&[
                "dd",
                &inf,
                "of=/dev/null",
                "bs=4k",
                "count=16",
                "iflag=direct",
            ]);
            run(&["blkdiscard", dev]);
        }
    }
}

impl Drop for OwnLoops {
    fn drop(&mut self) {
        for dev in &self.devices {
            let _ = Command::new("losetup").args(["-d", dev]).status();
        }
    }
}
