//! What blktune's BPF latency program costs an I/O: the program loaded once,
//! as `watch` loads it, then detached and attached again every fraction of
//! a second under one fio run, counting the device's completed reads in
//! each window. Adjacent windows see the same machine within half a second
//! of each other, so the VM's drift (several percent from one second to
//! the next here) cancels far better than between whole processes started
//! and stopped seconds apart; and a switch costs no start-up (the load,
//! the BTF) to wait out.
//!
//! `benches/latency/overhead.sh` runs it and reads its output. Root only.
//!
//! ```text
//! latency_toggle DEV SECONDS [WINDOW_MS] [who]     (default window 400 ms)
//! ```
//!
//! With `who`, the program stays attached and what is switched is the
//! attribution of each I/O to its submitter ([`Tracer::set_who`]: the start
//! program and the completion program's share of it), whose map is then
//! read once a second in both states too: the lines give what attribution
//! adds to an I/O that is already timed.
//!
//! Windows alternate off and on, starting off; before each, 100 ms after
//! the switch are left out (the attach or detach and the kernel's code
//! patching it does). The tracer's maps are read once a second in both
//! states, as `watch` reads them, so that cost cancels out: what differs
//! between the windows is the program and the tracepoint's dispatch of it.
//! One line per window on stdout: `on|off SECONDS READS BUSY_TICKS`: its
//! length, the device's completed reads in it, and the machine's busy CPU
//! time in it in clock ticks (user, nice, system, irq and softirq; not
//! steal).

use blktune_core::diskstats;
use blktune_core::host::CpuTimes;
use blktune_core::latency::Tracer;
use std::time::{Duration, Instant};

/// Left out after each switch.
const GUARD: Duration = Duration::from_millis(100);
/// How often the maps are read, in both states.
const READ_EVERY: Duration = Duration::from_secs(1);

fn main() {
    if let Err(e) = run() {
        eprintln!("latency_toggle: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: latency_toggle DEV SECONDS [WINDOW_MS] [who]";
    let (who, args) = match args.split_last() {
        Some((last, rest)) if last == "who" => (true, rest),
        _ => (false, args.as_slice()),
    };
    let (dev, secs, window_ms) = match args {
        [d, s] => (d, s, "400"),
        [d, s, w] => (d, s, w.as_str()),
        _ => return Err(usage.into()),
    };
    let secs: u64 = secs.parse().map_err(|_| usage.to_owned())?;
    let window = Duration::from_millis(window_ms.parse().map_err(|_| usage.to_owned())?);
    reads(dev)?;
    let mut tracer = Tracer::start(false, true).map_err(|e| e.to_string())?;
    let end = Instant::now() + Duration::from_secs(secs);
    let mut last_read = Instant::now();
    let mut on = false;
    while Instant::now() < end {
        if who {
            tracer.set_who(on)?;
        } else {
            tracer.set_completions(on)?;
        }
        wait(&mut tracer, &mut last_read, GUARD)?;
        let (r0, b0, t0) = (reads(dev)?, busy()?, Instant::now());
        wait(&mut tracer, &mut last_read, window)?;
        let (r1, b1, t1) = (reads(dev)?, busy()?, Instant::now());
        let state = if on { "on" } else { "off" };
        let secs = (t1 - t0).as_secs_f64();
        println!(
            "{state} {secs:.6} {} {}",
            r1.saturating_sub(r0),
            b1.saturating_sub(b0)
        );
        on = !on;
    }
    tracer.set_who(false)?;
    tracer.set_completions(true)
}

/// Sleep for `d`, reading the tracer's maps whenever [`READ_EVERY`] has
/// passed since `last_read`.
fn wait(tracer: &mut Tracer, last_read: &mut Instant, d: Duration) -> Result<(), String> {
    let stop = Instant::now() + d;
    loop {
        let now = Instant::now();
        if now >= stop {
            return Ok(());
        }
        if now >= *last_read + READ_EVERY {
            tracer.read()?;
            tracer.read_who()?;
            *last_read = now;
        }
        std::thread::sleep((stop - now).min(Duration::from_millis(50)));
    }
}

/// The device's completed reads so far (diskstats).
fn reads(dev: &str) -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/diskstats").map_err(|e| e.to_string())?;
    let (lines, _) = diskstats::parse(&text);
    lines
        .iter()
        .find(|l| l.name == dev)
        .map(|l| l.counters.rd_ios)
        .ok_or_else(|| format!("{dev}: not in /proc/diskstats"))
}

/// The machine's busy CPU time so far, in clock ticks ([`CpuTimes::busy`]).
fn busy() -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/stat").map_err(|e| e.to_string())?;
    CpuTimes::parse(&text)
        .map(|c| c.busy)
        .ok_or_else(|| "no cpu line in /proc/stat".into())
}
