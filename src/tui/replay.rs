//! The full-screen replay (`blktune replay FILE`): the live TUI's screen,
//! fed by the replay worker ([`ReplaySource`]) instead of the sampler;
//! errors are [`TuiError`]. Read-only by
//! construction: no tuner, no sysfs, no root needed.

use super::app::demo::Demo;
use super::app::{App, Config};
use super::worker::protocol::{FeedTx, ReplayPosition, Shared};
use super::worker::replay::ReplaySource;
use super::{INTERVAL_RANGE, RestoreGuard, Signals, TuiError, color_allowed, event_loop};
use blktune_core::host::HostInfo;
use blktune_core::record::Recording;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The app of a replay: the recorded host, read-only, on the first changed device.
pub fn replay_app(rec: &Recording, start: f64, speed: f64) -> App {
    let h = &rec.header;
    let interval = Duration::try_from_secs_f64(h.interval_s)
        .unwrap_or(Duration::from_secs(1))
        .clamp(INTERVAL_RANGE.0, INTERVAL_RANGE.1);
    let mut app = App::new(Config {
        host: HostInfo {
            hostname: h.host.hostname.clone(),
            kernel: h.host.kernel.clone(),
            uptime_s: h.host.uptime_s,
        },
        read_only: None,
        interval,
        page_kb: blktune_core::sched::page_kb(),
        color: color_allowed(),
        select: rec.changes().next().map(|c| c.device.clone()),
    });
    // Replay mode from the first frame on (keys, header).
    app.replay = Some(ReplayPosition {
        at: start,
        total: rec.duration(),
        speed,
        paused: false,
        ended: false,
    });
    app
}

/// Play `rec` full-screen from `start` seconds at `speed`; returns the exit
/// code. `demo`: it is the demo recording, and the hint line says when it
/// switches and what the room will see.
pub fn run(rec: Arc<Recording>, start: f64, speed: f64, demo: bool) -> Result<i32, TuiError> {
    let mut app = replay_app(&rec, start, speed);
    if demo {
        app.demo = Demo::recorded(&rec);
    }
    let signals = Signals::register().map_err(TuiError::Signals)?;
    let (feed_tx, feed_rx) = mpsc::channel();
    let (waker, wake_fd) = super::wake::for_loop().unzip();
    let feed_tx = FeedTx::new(feed_tx, waker);
    let (ctl_tx, ctl_rx) = mpsc::channel();
    let handle = ReplaySource::new(rec, start, speed, Instant::now())?
        .spawn(feed_tx, ctl_rx)
        .map_err(|source| TuiError::Thread {
            what: "replay",
            source,
        })?;
    let result = {
        // As in the live TUI: never dropped (its Drop would report a gone
        // terminal on a dead stderr); the guard restores the terminal.
        let mut term = std::mem::ManuallyDrop::new(ratatui::try_init().map_err(TuiError::Setup)?);
        let _guard = RestoreGuard;
        event_loop(&mut term, &mut app, &feed_rx, &ctl_tx, &signals, wake_fd)
    };
    let _ = ctl_tx.send(Shared::Stop.into());
    drop(feed_rx);
    let _ = handle.join();
    // After SIGHUP the terminal is gone and drawing fails: not an error.
    if !signals.raised() {
        result?;
    }
    Ok(0)
}
