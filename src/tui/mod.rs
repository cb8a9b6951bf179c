//! The full-screen tuner (`blktune` with no subcommand) and the replay
//! viewer (`blktune replay FILE`, [`replay`]).
//!
//! Threads: a worker thread ([`worker::live`], or [`worker::replay`])
//! samples and applies changes; the main thread only receives
//! [`worker::protocol::Feed`] messages, updates the [`app::App`], draws,
//! maps keys to actions ([`command`]) and hands the app's
//! [`worker::protocol::Control`]s back, in the [`event_loop`](mod@event_loop)
//! ([`terminal::event_loop`] on the real terminal).
//! The terminal is restored on every way out: quit, error, panic (ratatui's
//! hook), every terminating signal ([`signals::TERMINATING`]), a terminal
//! that went away, and a loop that stopped making progress
//! ([`terminal::watchdog`]); `--revert-on-exit` is honoured on each of them.
//! The CLI starts it with [`Options`]; errors are [`TuiError`].

pub mod app;
pub mod command;
pub mod dialogs;
mod error;
pub mod event_loop;
pub mod render;
pub mod replay;
pub mod signals;
pub mod status;
mod summary;
pub mod terminal;
pub mod wake;
pub mod worker;

pub use error::TuiError;
pub use signals::Signals;
pub use summary::{roots_args, write_summary};
pub use terminal::{RestoreGuard, event_loop};

use app::{App, Config};
use blktune_core::host::HostInfo;
use blktune_core::journal::Journal;
use blktune_core::os::SysRoot;
use blktune_core::sampler::{Sampler, SamplerOptions};
use blktune_core::tuner::{self, Tuner};
use std::io::Write;
use std::sync::{Arc, mpsc};
use std::time::Duration;
use terminal::TerminalInput;
use terminal::watchdog::{self, Pulse, Watchdog, Watched};
use worker::live::LiveSource;
use worker::protocol::{FEED_BOUND, FeedTx, Shared};

/// Stop the live worker and take in everything it sends until it has
/// stopped. The summary is drawn from the app, so the answer to a change
/// still under way belongs in it: an undo whose journal write waits behind a
/// busy disk finished before the worker stopped, and a summary without its
/// answer said the undone change was still in force. Waiting for the worker
/// costs nothing more than joining it did.
fn stop_worker(
    app: &mut App,
    feed_rx: mpsc::Receiver<worker::protocol::Feed>,
    ctl_tx: &mpsc::Sender<worker::protocol::ToWorker<worker::protocol::LiveControl>>,
    handle: std::thread::JoinHandle<()>,
) {
    let _ = ctl_tx.send(Shared::Stop.into());
    loop {
        match feed_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(f) => app.on_feed(f),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            // A shoot-out's thread may hold the feed after the worker ended:
            // take what is queued (a bounded number) and go.
            Err(mpsc::RecvTimeoutError::Timeout) if handle.is_finished() => {
                for f in feed_rx.try_iter().take(FEED_BOUND) {
                    app.on_feed(f);
                }
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    // Unblocks any thread still sending on a full feed.
    drop(feed_rx);
    let _ = handle.join();
}

/// Shortest and longest sample interval of the TUI.
pub const INTERVAL_RANGE: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(10));

/// What the live TUI is started with; the CLI builds it from its flags.
#[derive(Debug, Clone)]
pub struct Options {
    /// The machine (or a fake tree) to show and tune.
    pub root: SysRoot,
    /// Select this device at start.
    pub device: Option<String>,
    /// Sample interval (clamped to [`INTERVAL_RANGE`]).
    pub interval: Duration,
    /// Show everything, change nothing.
    pub read_only: bool,
    /// On quit, put back every setting changed in this session.
    pub revert_on_exit: bool,
    /// Start with the latency probe on.
    pub probe: bool,
    /// Probe reads per second (also when `P` turns it on later).
    pub probe_rate: f64,
    /// `--no-bpf`: no kernel latency tracing.
    pub no_bpf: bool,
}

/// Is NO_COLOR unset (or empty)? <https://no-color.org>
pub fn color_allowed() -> bool {
    render::Theme::from_no_color(std::env::var_os("NO_COLOR").as_deref()).color
}

/// Run the TUI; returns the exit code.
pub fn run(options: &Options) -> Result<i32, TuiError> {
    run_with(options, |_| {})
}

/// Run the TUI after `setup` adjusted the fresh app (`blktune demo`).
pub fn run_with(options: &Options, setup: impl FnOnce(&mut App)) -> Result<i32, TuiError> {
    let root = options.root.clone();
    if let Some(dev) = &options.device {
        tuner::resolve(&root, dev)?;
    }
    let read_only = if options.read_only {
        Some("--read-only".to_string())
    } else if !blktune_core::os::is_root() {
        Some("not root".to_string())
    } else {
        None
    };
    let interval = options.interval.clamp(INTERVAL_RANGE.0, INTERVAL_RANGE.1);
    // The rows a screen shows first; the rest over the first ticks.
    // ... and the device it is told to select, wherever its row is.
    let opts = SamplerOptions {
        first: options.device.clone(),
        ..SamplerOptions::screen()
    };
    let sampler =
        Sampler::with_options(root.clone(), opts).map_err(|source| TuiError::Diskstats {
            proc_root: root.procfs().to_path_buf(),
            source,
        })?;
    let counters_note = sampler.counters_note().map(str::to_owned);
    let journal = Journal::for_root(&root);
    let tuner = read_only
        .is_none()
        .then(|| Tuner::new(root.clone(), Some(journal.clone())));
    let mut app = App::new(Config {
        host: HostInfo::read(&root),
        read_only: read_only.clone(),
        interval,
        page_kb: blktune_core::sched::page_kb(),
        color: color_allowed(),
        select: options.device.clone(),
    });
    // The udev database belongs to the real /sys only; a fake tree has none.
    if root.sysfs() == std::path::Path::new("/sys") {
        app.udev_db = Some(blktune_core::export::UdevDb::default());
    }
    app.kernel_hz = blktune_core::kernel_hz::KernelHz::read_config(&root);
    if let Some(note) = counters_note {
        app.tell(note);
    }
    // `P` turns the probe on at this rate when --probe did not.
    app.probe_rate = options.probe_rate;
    if options.probe {
        app.enable_probe(options.probe_rate);
    }
    setup(&mut app);
    let signals = Signals::register().map_err(TuiError::Signals)?;
    let (feed_tx, feed_rx) = mpsc::sync_channel(FEED_BOUND);
    let (waker, wake_fd) = wake::for_loop().unzip();
    let feed_tx = FeedTx::bounded(feed_tx, waker.clone());
    let (ctl_tx, ctl_rx) = mpsc::channel();
    // The probe starts when the app names the selected device; read-only
    // mode allows it (it only reads).
    let handle = LiveSource::new(sampler, tuner, interval)
        .with_probe_rate(options.probe_rate)
        .with_latency(options.no_bpf)
        .spawn(feed_tx, ctl_rx)
        .map_err(|source| TuiError::Thread {
            what: "sampler",
            source,
        })?;
    // What --revert-on-exit puts back: by the main thread at the end, or by
    // the watchdog when the main thread is stuck.
    let revert = (options.revert_on_exit && read_only.is_none())
        .then(|| Arc::new(Tuner::new(root.clone(), Some(journal.clone()))));
    let pulse = Arc::new(Pulse::default());

    let (result, (report, failures), code, _dog) = {
        // Never dropped: ratatui's Drop would eprintln! an error about the
        // cursor when the terminal is gone (SIGHUP), and eprintln! panics on
        // a dead stderr. The guard restores the terminal instead.
        let mut term = std::mem::ManuallyDrop::new(ratatui::try_init().map_err(TuiError::Setup)?);
        let guard = RestoreGuard;
        let mut input = TerminalInput::new(signals.clone(), wake_fd)
            .map_err(TuiError::Setup)?
            .with_pulse(Arc::clone(&pulse));
        let watched = Watched {
            pulse: Arc::clone(&pulse),
            signals: signals.clone(),
            waker,
            tty: input.tty_dup(),
            main: nix::unistd::gettid(),
        };
        let (p, r) = (Arc::clone(&pulse), revert.clone());
        let dog = Watchdog::start(watched, watchdog::LIMITS, move |why| {
            watchdog::emergency_exit(why, &p, r.as_deref())
        })
        .map_err(|source| TuiError::Thread {
            what: "watchdog",
            source,
        })?;
        let result = event_loop::run_loop(&mut term, &mut app, &mut input, &feed_rx, &ctl_tx);
        stop_worker(&mut app, feed_rx, &ctl_tx, handle);
        // --revert-on-exit before anything is written to the terminal
        // again: a terminal that takes no output must not hold it back. The
        // report waits until the terminal is restored.
        let session = app.session();
        let (mut report, mut failures) = (Vec::new(), Vec::new());
        let mut code = 0;
        if let Some(tuner) = &revert
            && !session.is_empty()
            && pulse.claim_revert()
        {
            code = summary::revert_on_exit(&mut report, &mut failures, tuner, &session);
            pulse.reverted();
        }
        drop(guard);
        (result, (report, failures), code, dog)
    };
    // Errors writing to a terminal that went away are ignored.
    let _ = std::io::stderr().write_all(&failures);
    // A terminal that went away (SIGHUP, the pty closed) fails the draws:
    // that is how the session ended, not an error to report (there is
    // nowhere to report it). A loop that stopped making progress is one.
    let gone = signals.raised() || terminal::hung_up(std::io::stdout());
    if let Err(e) = result
        && (!gone || matches!(e, TuiError::NoProgress { .. }))
    {
        // What was put back is said before why the session ended.
        let _ = std::io::stdout().write_all(&report);
        return Err(e);
    }

    let mut out = std::io::stdout().lock();
    // The source closed the last one on Stop, with an end record.
    let _ = summary::write_recordings(&mut out, &app.recordings);
    let session = app.session();
    if revert.is_some() && !session.is_empty() {
        // Errors writing to a terminal that went away are ignored.
        let _ = out.write_all(&report);
        return Ok(code);
    }
    let _ = write_summary(&mut out, &session, journal.dir(), &root);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use worker::protocol::{Feed, LiveControl, ToWorker};

    /// A worker that answers only once it is told to stop, as one does
    /// whose apply is still writing its journal (an fsync behind a busy
    /// disk) when the user quits: the answer comes after the quit.
    #[test]
    fn an_answer_the_worker_sends_on_its_way_out_reaches_the_summary() {
        let mut app = App::new(Config {
            host: HostInfo::default(),
            read_only: None,
            interval: Duration::from_secs(1),
            page_kb: 4,
            color: false,
            select: None,
        });
        app.pending = 1;
        let (feed_tx, feed_rx) = mpsc::sync_channel(FEED_BOUND);
        let (ctl_tx, ctl_rx) = mpsc::channel::<ToWorker<LiveControl>>();
        let handle = std::thread::spawn(move || {
            let _ = ctl_rx.recv();
            let _ = feed_tx.send(Feed::Error("the late answer".into()));
        });
        stop_worker(&mut app, feed_rx, &ctl_tx, handle);
        let said = app.status.as_ref().map(|s| s.text.clone());
        assert_eq!(said.as_deref(), Some("the late answer"));
    }
}
