//! The signals that end a full-screen session, and the flags their
//! handlers set: a leaf, so that the loop's waker ([`super::wake`]) and the
//! terminal's side ([`super::terminal`]) both name the same list.

use signal_hook::consts::signal::{
    SIGALRM, SIGHUP, SIGINT, SIGPROF, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGWINCH,
    SIGXCPU, SIGXFSZ,
};
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
