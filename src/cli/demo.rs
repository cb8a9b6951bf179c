//! `blktune demo`: for trainers. A scratch loop device that blktune creates
//! itself, a mixed load on it, and the TUI focused on it with a guided hint.
//! Everything is removed on the way out: quit, Ctrl-C, SIGTERM, SIGHUP, or a
//! panic (the guards drop while unwinding).

use super::{Global, TuiArgs, UsageError, parse_probe_rate, parse_tui_interval};
use crate::tui::app::demo::Demo;
use anyhow::Context;
use blktune_core::load::{Load, LoadOptions, Mix, Scratch, Target};
use blktune_core::scratch::QueueRestore;
use blktune_core::text::printable;
use blktune_core::tuner::{Tuner, Wanted};
use blktune_core::units::parse_size;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Arguments of `blktune demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Size of the scratch device (a sparse file): 64M to 4G.
    #[arg(long, value_name = "SIZE", value_parser = parse_demo_size, default_value = "256M")]
    pub size: u64,

    /// Sample interval of the TUI: 100ms to 10s.
    #[arg(long, short = 'i', value_name = "DUR", value_parser = parse_tui_interval, default_value = "500ms")]
    pub interval: Duration,

    /// Directory for the scratch file (not tmpfs: O_DIRECT needs a real filesystem).
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    pub dir: PathBuf,

    /// Also run the read-only latency probe on the scratch device, to show
    /// the tail latency next to the averages (as `blktune --probe`).
    #[arg(long)]
    pub probe: bool,

    /// Probe reads per second (0.1 to 100).
    #[arg(long, value_name = "N", value_parser = parse_probe_rate, default_value_t = blktune_core::probe::DEFAULT_RATE, requires = "probe")]
    pub probe_rate: f64,
}

fn parse_demo_size(s: &str) -> Result<u64, String> {
    let n = parse_size(s)?;
    if !(64 << 20..=4 << 30).contains(&n) {
        return Err(format!("demo size '{s}' is out of range: 64M to 4G"));
    }
    Ok(n)
}

/// How long the TUI gets to wind down after a signal or a lost terminal.
const GRACE: Duration = Duration::from_secs(4);

/// A thread that removes the device itself if the TUI cannot: a terminal
/// that vanished (a dropped SSH session) leaves the input reader spinning on
/// end-of-file, so the event loop never sees the signal flag.
fn watchdog(
    signal: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    dev: String,
    file: PathBuf,
    restore: Option<QueueRestore>,
) {
    let spawned = std::thread::Builder::new()
        .name("blktune-demo-watchdog".into())
        .spawn(move || {
            let tty = std::io::stdin().is_terminal();
            let mut since: Option<Instant> = None;
            while !done.load(Ordering::Relaxed) {
                let lost = tty && !std::io::stdin().is_terminal();
                if since.is_none() && (lost || signal.load(Ordering::Relaxed)) {
                    since = Some(Instant::now());
                }
                if since.is_some_and(|s| s.elapsed() > GRACE) {
                    // Put the loop device's queue settings back (it keeps
                    // them across detach) and detach it (the kernel finishes
                    // when our descriptors close at exit), both only while
                    // it is still ours; then delete the file.
                    if let Some(r) = &restore {
                        let _ = r.teardown();
                    }
                    let _ = std::fs::remove_file(&file);
                    let _ = std::fs::remove_file(blktune_core::scratch::settings_file(&file));
                    std::process::exit(1);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
    if let Err(e) = spawned {
        eprintln!(
            "blktune: note: no watchdog thread ({e}); quit with q to remove {}",
            printable(&dev)
        );
    }
}

/// The demo's load: 16 random 4 KiB readers beside 4 unthrottled 1 MiB
/// sequential writers, direct I/O, on a loop device over a file on the
/// machine's disk. Its headline is bfq's: from mq-deadline, bfq gives the
/// sequential writers its budgets and the random readers wait, so the reads'
/// p99 rises several times over and r/s falls (three live runs in a row on
/// the shared VM, each an A/B of 6 pairs, `benches/demo/three-runs.sh`:
/// r_p99 +282% (+53..+856), +358% (+101..+944), +496% (+205..+1065), r/s
/// worse in each; `benches/demo/RESULTS.md`). kyber, the old headline, moved
/// nothing decidable here (-9% (-20..+3) on r_await).
/// Nothing of this is promised on screen: the banner says what the panel
/// measured, and `A` decides it.
pub fn demo_load() -> LoadOptions {
    LoadOptions {
        queue_depth: 16,
        writers: 4,
        ..LoadOptions::new(Mix::Mixed)
    }
}

/// Run `blktune demo`.
pub fn run(g: &Global, a: &DemoArgs) -> anyhow::Result<i32> {
    if !blktune_core::os::is_root() {
        eprintln!(
            "blktune: demo needs root: it creates a loop device; try 'sudo blktune demo', or 'blktune replay --demo' (a recording of it, built in) without root"
        );
        return Ok(1);
    }
    // Until the TUI's own handlers take over, a signal must not kill the
    // process between creating the device and its guard dropping.
    let early = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&early))
            .context("cannot install signal handlers")?;
    }
    let root = g.root();
    // A killed earlier run's device and file (no guard ran for them).
    for line in blktune_core::scratch::sweep(&root, &a.dir) {
        eprintln!("{}", printable(&line));
    }
    let scratch = Scratch::create(&a.dir, a.size)
        .with_context(|| format!("cannot create a scratch loop device in {}", a.dir.display()))?;
    let name = scratch.name().to_owned();
    // The same story every time: start from mq-deadline (a loop device keeps
    // the scheduler of its last user). Our own device; no journal needed.
    let start = Wanted {
        scheduler: Some("mq-deadline".into()),
        ..Wanted::default()
    };
    if let Err(e) = Tuner::new(root.clone(), None).apply(&name, &start) {
        eprintln!(
            "blktune: note: {}",
            printable(&format!("{name} stays on its scheduler: {e}"))
        );
    }
    let target = Target::writable(&root, &name).map_err(|e| UsageError(e.to_string()))?;
    let load = Load::start(&target, &demo_load(), Some(Arc::clone(&early)))
        .with_context(|| format!("cannot start the load on {name}"))?;
    let done = Arc::new(AtomicBool::new(false));
    watchdog(
        Arc::clone(&early),
        Arc::clone(&done),
        name.clone(),
        scratch.file().to_owned(),
        scratch.queue_restore(),
    );
    let code = if early.load(Ordering::Relaxed) {
        0
    } else {
        let tui = TuiArgs {
            device: Some(name.clone()),
            interval: a.interval,
            read_only: false,
            // Settings go back before the device goes: a loop device keeps
            // its scheduler across detach and attach.
            revert_on_exit: true,
            probe: a.probe,
            probe_rate: a.probe_rate,
        };
        crate::tui::run_with(&tui.options(g), |app| {
            app.demo = Some(Demo::live(name.clone()))
        })
        .map_err(super::tui_error)?
    };
    drop(load.stop());
    done.store(true, Ordering::Relaxed);
    scratch
        .remove()
        .with_context(|| format!("cannot remove the scratch device {name}"))?;
    // The terminal may be gone (SIGHUP): println! would panic on it.
    let _ = writeln!(
        std::io::stdout(),
        "blktune: demo over; {name} and its file are removed"
    );
    Ok(code)
}
