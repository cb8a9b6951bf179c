//! Keys from the real terminal: blktune waits on the terminal with poll(2)
//! and reads it with read(2) itself, then [`Decoder`] turns the bytes into
//! crossterm's key events.
//!
//! Why not crossterm's reader: once the terminal is gone its reader spins
//! for ever inside `event::poll`/`event::read` (a read that returns 0 or
//! EIO is tried again at once: crossterm-rs/crossterm#793), where no flag of
//! the loop is looked at. A session killed with its tmux was found 70
//! minutes later at 100% of a core, its memory growing with every snapshot
//! it could no longer take in. Here a read that returns end of file or an
//! error is the terminal gone, and the session ends.
//!
//! Bounded: one read of at most [`READ_BYTES`] per wait, so a flood of
//! input (a paste, a terminal gone mad) is taken in batches the loop draws
//! between, and never piles up in memory.

use super::GONE;
use super::decode::Decoder;
use super::watchdog::Pulse;
use crate::tui::TuiError;
use crate::tui::app::{App, SessionChange};
use crate::tui::event_loop::{Input, POLL, WOKEN_POLL};
use crate::tui::signals::Signals;
use crate::tui::wake::WakeFd;
use crossterm::event::Event;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::io::IsTerminal;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

/// The most bytes one read takes: at most this many key events per batch.
pub const READ_BYTES: usize = 1024;

/// Where keys come from: standard input when it is the terminal, else the
/// controlling terminal (`/dev/tty`), opened for this (`blktune < file`).
#[derive(Debug)]
enum Tty {
    Stdin(std::io::Stdin),
    Own(OwnedFd),
}

impl Tty {
    /// The terminal to read keys from.
    fn open() -> std::io::Result<Self> {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Ok(Tty::Stdin(stdin));
        }
        use nix::fcntl::OFlag;
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags((OFlag::O_NOCTTY | OFlag::O_NONBLOCK).bits())
            .open("/dev/tty")?;
        Ok(Tty::Own(file.into()))
    }

    /// Its file descriptor.
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Tty::Stdin(stdin) => stdin.as_fd(),
            Tty::Own(fd) => fd.as_fd(),
        }
    }
}

/// What waiting on the terminal found.
#[derive(Debug, PartialEq)]
enum Waited {
    /// Nothing to read (the time ran out, a poke, a signal).
    Nothing,
    /// Bytes to read.
    Input,
    /// The terminal's other end closed (SSH dropped, the pty closed).
    HungUp,
}

/// The real terminal's keys, with the signal flags and the waker of the
/// loop.
#[derive(Debug)]
pub struct TerminalInput {
    signals: Signals,
    tty: Tty,
    decoder: Decoder,
    /// Poked by the worker and the signals ([`crate::tui::wake`]).
    wake: Option<WakeFd>,
    /// The terminal is gone: every later read says so at once.
    gone: bool,
    /// What the watchdog is told each round ([`super::watchdog`]).
    pulse: Option<Arc<Pulse>>,
    /// The session's changes last told to the watchdog.
    published: Vec<SessionChange>,
}

impl TerminalInput {
    /// Keys of the terminal the TUI runs in; `signals` end the session;
    /// `wake` wakes a wait for them. Fails when there is no terminal to read.
    pub fn new(signals: Signals, wake: Option<WakeFd>) -> std::io::Result<Self> {
        Ok(Self {
            signals,
            tty: Tty::open()?,
            decoder: Decoder::default(),
            wake,
            gone: false,
            pulse: None,
            published: Vec::new(),
        })
    }

    /// Tell `pulse` (a watchdog's) of every round and of the session's changes.
    pub fn with_pulse(mut self, pulse: Arc<Pulse>) -> Self {
        self.pulse = Some(pulse);
        self
    }

    /// A second descriptor of the terminal read (for the watchdog to watch).
    pub fn tty_dup(&self) -> Option<OwnedFd> {
        nix::unistd::dup(self.tty.fd()).ok()
    }

    /// Wait up to `timeout` for the terminal or a poke.
    fn wait(&mut self, timeout: Duration) -> Result<Waited, TuiError> {
        let mut fds = vec![PollFd::new(self.tty.fd(), PollFlags::POLLIN)];
        if let Some(w) = &self.wake {
            fds.push(PollFd::new(w.as_fd(), PollFlags::POLLIN));
        }
        let t = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, t) {
            Ok(_) => {}
            // A signal: the loop looks at the flags, then waits again.
            Err(Errno::EINTR) => return Ok(Waited::Nothing),
            Err(e) => return Err(std::io::Error::from(e).into()),
        }
        let tty = fds[0].revents().unwrap_or(PollFlags::empty());
        let woke = fds.get(1).and_then(PollFd::revents);
        drop(fds);
        if let (Some(r), Some(w)) = (woke, &self.wake) {
            if r.contains(PollFlags::POLLIN) {
                w.drain();
            }
            // A closed waker would end every wait at once, for ever.
            if r.intersects(GONE) {
                self.wake = None;
            }
        }
        Ok(if tty.intersects(GONE) {
            Waited::HungUp
        } else if tty.contains(PollFlags::POLLIN) {
            Waited::Input
        } else {
            Waited::Nothing
        })
    }

    /// One read of the terminal, decoded into `events`; `false` when the
    /// terminal is gone (end of file, or a read error other than "again").
    fn take_input(&mut self, events: &mut Vec<Event>) -> bool {
        let mut buf = [0u8; READ_BYTES];
        match nix::unistd::read(self.tty.fd(), &mut buf) {
            Ok(0) => false,
            Ok(n) => {
                self.decoder.decode(&buf[..n], n == buf.len(), events);
                true
            }
            Err(Errno::EINTR | Errno::EAGAIN) => true,
            Err(_) => false,
        }
    }

    /// The terminal is gone: the session ends as after SIGHUP.
    fn hang_up(&mut self) -> Option<Vec<Event>> {
        self.gone = true;
        self.signals.raise();
        None
    }

    /// A resize since the last look, as crossterm's event for it.
    fn resize_into(&self, events: &mut Vec<Event>) {
        if self.signals.take_resize() {
            let (w, h) = crossterm::terminal::size().unwrap_or((0, 0));
            events.push(Event::Resize(w, h));
        }
    }
}

impl Input for TerminalInput {
    fn stopped(&self) -> bool {
        self.signals.raised()
    }

    fn idle_wait(&self) -> Duration {
        if self.wake.is_some() {
            WOKEN_POLL
        } else {
            POLL
        }
    }

    fn read(&mut self, timeout: Duration) -> Result<Option<Vec<Event>>, TuiError> {
        if self.gone {
            return Ok(None);
        }
        let mut events = Vec::new();
        self.resize_into(&mut events);
        let timeout = if events.is_empty() {
            timeout
        } else {
            Duration::ZERO
        };
        match self.wait(timeout)? {
            Waited::Nothing => {}
            Waited::Input => {
                if !self.take_input(&mut events) {
                    return Ok(self.hang_up());
                }
            }
            // Keys typed as the terminal went away are not acted on.
            Waited::HungUp => return Ok(self.hang_up()),
        }
        self.resize_into(&mut events);
        Ok(Some(events))
    }

    fn on_round(&mut self, app: &App) {
        let Some(pulse) = &self.pulse else {
            return;
        };
        pulse.beat();
        if app.undo.is_empty() && self.published.is_empty() {
            return;
        }
        let session = app.session();
        if session != self.published {
            pulse.publish(session.clone());
            self.published = session;
        }
    }
}
