//! Waking the event loop: the worker pokes it after each message it sends,
//! and the signals that matter poke it too, so the loop sleeps on the
//! terminal and this socket instead of waking ten times a second to look
//! (a thousand idle devices: the loop is then up about once per tick).
//!
//! A pair of connected Unix sockets, both non-blocking: a poke is one byte,
//! and a full buffer means a wake-up is pending already.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

/// The side that pokes (cheap to clone; every clone pokes the same loop).
#[derive(Debug, Clone)]
pub struct Waker(Arc<UnixStream>);

/// The side the loop waits on.
#[derive(Debug)]
pub struct WakeFd(UnixStream);

/// A connected waker and the fd it wakes.
pub fn pair() -> io::Result<(Waker, WakeFd)> {
    let (tx, rx) = UnixStream::pair()?;
    tx.set_nonblocking(true)?;
    rx.set_nonblocking(true)?;
    Ok((Waker(Arc::new(tx)), WakeFd(rx)))
}

/// The event loop's pair, also poked by the signals that end the session
/// ([`super::signals::TERMINATING`]) and by a resize; `None` where it
/// cannot be made (the loop then looks every [`super::event_loop::POLL`]).
pub fn for_loop() -> Option<(Waker, WakeFd)> {
    let (w, fd) = pair().ok()?;
    w.on_signals(&super::signals::TERMINATING).ok()?;
    w.on_signals(&[signal_hook::consts::SIGWINCH]).ok()?;
    Some((w, fd))
}

impl Waker {
    /// Wake the loop (at once if it sleeps, else at its next wait).
    pub fn wake(&self) {
        // WouldBlock: the buffer is full of pokes not yet taken, which is
        // a wake-up already; any other error: the loop is gone.
        let _ = (&*self.0).write(&[1]);
    }

    /// Poke on each of `signals` too (from the handler: a self-pipe
    /// write), whatever thread the kernel delivers it to.
    pub fn on_signals(&self, signals: &[i32]) -> io::Result<()> {
        for &sig in signals {
            signal_hook::low_level::pipe::register(sig, self.0.try_clone()?)?;
        }
        Ok(())
    }
}

impl WakeFd {
    /// Take every poke waiting (they carry nothing but the wake-up).
    pub fn drain(&self) {
        let mut buf = [0u8; 4096];
        while matches!((&self.0).read(&mut buf), Ok(n) if n > 0) {}
    }
}

impl AsFd for WakeFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

    fn ready(fd: &WakeFd) -> bool {
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::ZERO).unwrap() == 1
    }

    #[test]
    fn a_poke_wakes_until_drained_and_many_never_block() {
        let (w, fd) = pair().unwrap();
        assert!(!ready(&fd));
        w.clone().wake();
        assert!(ready(&fd));
        fd.drain();
        assert!(!ready(&fd));
        // Far more pokes than the buffer holds: none blocks, one wake-up.
        for _ in 0..100_000 {
            w.wake();
        }
        assert!(ready(&fd));
        fd.drain();
        assert!(!ready(&fd));
    }

    /// What the loop's wait looks for to stop waiting on a waker that is
    /// gone (it would otherwise wake every wait at once).
    #[test]
    fn with_every_waker_gone_the_fd_reads_as_hung_up() {
        let (w, fd) = pair().unwrap();
        drop(w);
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::ZERO).unwrap();
        assert!(fds[0].revents().unwrap().contains(PollFlags::POLLHUP));
        fd.drain();
    }

    #[test]
    fn a_signal_wakes_the_loop() {
        let (w, fd) = pair().unwrap();
        w.on_signals(&[signal_hook::consts::SIGUSR2]).unwrap();
        signal_hook::low_level::raise(signal_hook::consts::SIGUSR2).unwrap();
        assert!(ready(&fd));
    }
}
