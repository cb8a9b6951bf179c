//! The real terminal's side of the full-screen screens: reading keys
//! ([`input`]: blktune reads its terminal itself), putting the terminal back
//! ([`RestoreGuard`]), the [`watchdog`] that ends a session whose loop makes
//! no progress, and [`event_loop`], the loop on the real terminal. The
//! signals that end a session are [`super::signals`].
//!
//! The rule they keep together: whatever the signals say, a session whose
//! terminal reads fail (end of file, EIO: the pty closed, SSH dropped) or
//! whose writes fail ends, puts back what it can, honours
//! `--revert-on-exit` and exits; no loop spins on a failing read, and
//! what is waiting to be read or drawn is bounded.

pub mod decode;
pub mod input;
pub mod watchdog;

pub use input::TerminalInput;

use super::TuiError;
use super::app::App;
use super::event_loop::run_loop;
use super::signals::Signals;
use super::wake::WakeFd;
use super::worker::protocol::{ControlSink, Feed};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use ratatui::Terminal;
use ratatui::backend::Backend;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use watchdog::{Pulse, Watchdog, Watched};

/// Puts the terminal back when dropped, whatever happened: cursor shown,
/// cooked mode, the alternate screen left.
#[derive(Debug)]
pub struct RestoreGuard;

impl Drop for RestoreGuard {
    fn drop(&mut self) {
        // The terminal may be gone (SIGHUP): nothing useful to do on error.
        let _ = crossterm::execute!(std::io::stdout(), crossterm::cursor::Show);
        let _ = ratatui::try_restore();
    }
}

/// Has the terminal behind `fd` hung up (its other end closed)? Looks
/// without waiting.
pub fn hung_up(fd: impl AsFd) -> bool {
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::empty())];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0)
        && fds[0].revents().is_some_and(|r| r.intersects(GONE))
}

/// What poll(2) says of a file whose other end is gone.
pub const GONE: PollFlags = PollFlags::POLLHUP
    .union(PollFlags::POLLERR)
    .union(PollFlags::POLLNVAL);

/// [`run_loop`] on the real terminal, with the signal flags, under a
/// watchdog that exits when the loop is stuck (a screen with nothing to
/// revert: the replay).
pub fn event_loop<B: Backend>(
    term: &mut Terminal<B>,
    app: &mut App,
    feed: &Receiver<Feed>,
    ctl: &impl ControlSink,
    signals: &Signals,
    wake: Option<WakeFd>,
) -> Result<(), TuiError>
where
    B::Error: Send + Sync + 'static,
{
    let pulse = Arc::new(Pulse::default());
    let mut input = TerminalInput::new(signals.clone(), wake)
        .map_err(TuiError::Setup)?
        .with_pulse(Arc::clone(&pulse));
    let watched = Watched {
        pulse: Arc::clone(&pulse),
        signals: signals.clone(),
        waker: None,
        tty: input.tty_dup(),
        main: nix::unistd::gettid(),
    };
    let _dog = Watchdog::start(watched, watchdog::LIMITS, move |why| {
        watchdog::emergency_exit(why, &pulse, None)
    })
    .map_err(|source| TuiError::Thread {
        what: "watchdog",
        source,
    })?;
    run_loop(term, app, &mut input, feed, ctl)
}
