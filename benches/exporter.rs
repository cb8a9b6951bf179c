//! Cost of `blktune exporter` at 1000 devices and a 15 s scrape, on a
//! generated fake tree: `cargo bench --bench exporter` starts the exporter
//! on the tree, scrapes it, and prints the CPU time of a scrape, of the
//! idle time between scrapes (the rules thread looks at the rules files
//! and the devices every 30 s), and the sum as a share of one core at a
//! 15 s scrape interval, next to the 1 % budget. Figures only; nothing
//! here asserts a time.
//!
//! A fake tree lives on tmpfs or disk, not sysfs (a real sysfs read costs
//! more), and has no kernel tracer: the BPF map read per scrape is timed
//! apart, on this machine's real devices, when run as root. The tracer's
//! per-I/O cost is benches/latency/overhead.sh's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::fake::{FakeDisk, FakeTree};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
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

    let interval_ms = 15_000.0;
    let idle_per_interval = idle_ms * interval_ms / idle_window.as_secs_f64() / 1e3;
    let share = (per_scrape_ms + idle_per_interval) / interval_ms * 100.0;
    println!("blktune exporter on a fake tree of {n} devices (release build, this machine):");
    println!("  start-up (first pass over the rules): {startup_ms:.0} ms CPU");
    println!("  (CPU from /proc/PID/stat: 10 ms ticks, over {scrapes} scrapes and a 31 s idle)");
    println!("  one scrape: {per_scrape_ms:.1} ms CPU ({wall_ms:.1} ms wall, {bytes} bytes)");
    println!("  idle: {idle_ms:.1} ms CPU in {} s", idle_window.as_secs());
    println!(
        "  at a 15 s scrape: {share:.3} % of one core (budget 1 %: {:.2} of it)",
        share / 1.0
    );
    tracer_read();
}

/// The BPF map read of one scrape, on this machine's real devices (root only).
fn tracer_read() {
    let Ok(mut tracer) = blktune_core::latency::Tracer::start(false, true) else {
        println!("  tracer map read: not measured (needs root and BTF)");
        return;
    };
    let first = tracer.read().map(|r| r.devices.len()).unwrap_or(0);
    let reads = 20;
    let t = Instant::now();
    for _ in 0..reads {
        let _ = std::hint::black_box(tracer.read());
    }
    let ms = t.elapsed().as_secs_f64() * 1e3 / f64::from(reads);
    println!("  tracer map read: {ms:.2} ms per scrape for the {first} device(s) traced here");
}
