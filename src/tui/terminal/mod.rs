//! The real terminal's side of the full-screen screens: the signals that end
//! a session, reading keys ([`input`]: blktune reads its terminal itself),
//! putting the terminal back ([`RestoreGuard`]) and the [`watchdog`] that
//! ends a session whose loop makes no progress.
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

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use signal_hook::consts::signal::{
    SIGALRM, SIGHUP, SIGINT, SIGPROF, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGWINCH,
    SIGXCPU, SIGXFSZ,
};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The signals whose default action ends the process and that can be
/// caught: each ends a session as `q` does (the terminal restored,
/// `--revert-on-exit` honoured). SIGPIPE is not among them: Rust programs
/// ignore it (a closed pipe is a write error where it happens), so it never
/// ends a session; SIGKILL cannot be caught.
pub const TERMINATING: [i32; 11] = [
    SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGALRM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGPROF, SIGXCPU,
    SIGXFSZ,
];

/// Flags set by signal handlers (and by a terminal that hung up), checked
/// by the event loop every round.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    /// A [`TERMINATING`] signal came, or the terminal went away.
    pub term: Arc<AtomicBool>,
    /// SIGWINCH: the terminal changed size.
    pub resized: Arc<AtomicBool>,
}

impl Signals {
    /// Register every [`TERMINATING`] signal and SIGWINCH. A signal the
    /// process inherited as ignored (`nohup`, a script's `&`) is caught too.
    pub fn register() -> std::io::Result<Self> {
        let s = Self::default();
        for sig in TERMINATING {
            signal_hook::flag::register(sig, Arc::clone(&s.term))?;
        }
        signal_hook::flag::register(SIGWINCH, Arc::clone(&s.resized))?;
        Ok(s)
    }

    /// Did a signal (or a hang-up) end the session?
    pub fn raised(&self) -> bool {
        self.term.load(Ordering::Relaxed)
    }

    /// End the session as a signal would (the terminal went away).
    pub fn raise(&self) {
        self.term.store(true, Ordering::Relaxed);
    }

    /// Did the terminal change size since the last look?
    pub fn take_resize(&self) -> bool {
        self.resized.swap(false, Ordering::Relaxed)
    }
}

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
