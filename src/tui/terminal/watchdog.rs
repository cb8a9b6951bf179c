//! The watchdog: a thread beside the event loop that ends a session whose
//! loop can no longer end it itself.
//!
//! The loop counts its rounds in a [`Pulse`] (and leaves there the
//! session's changes, for `--revert-on-exit`). The watchdog looks every
//! [`Limits::period`] and acts on three things:
//!
//! - the terminal hung up (its other end closed): it ends the session as
//!   SIGHUP does, even when no SIGHUP comes (a process outside the
//!   terminal's session, a signal blocked);
//! - a stop (a terminating signal, the hang-up) that has not ended the
//!   process within [`Limits::grace`]: the main thread is stuck somewhere
//!   (a write to a terminal that takes nothing, a library call that spins);
//! - no round for [`Limits::stall`] while the main thread keeps a CPU busy
//!   ([`Limits::busy`]): a loop inside a call that makes no progress.
//!
//! For the last two it hands over to its `on_stuck`; in blktune that is
//! [`emergency_exit`]: revert the session's changes if `--revert-on-exit`
//! asked for it (unless the main thread is doing so), put the terminal back
//! as far as it can without waiting on it, and exit with code 1. A loop that
//! is merely blocked (a terminal that takes no output for a while) is left
//! alone until a stop comes: it costs no CPU, and what the worker sends it
//! is bounded (`FeedTx::bounded`).

use super::GONE;
use crate::tui::app::SessionChange;
use crate::tui::signals::Signals;
use crate::tui::wake::Waker;
use blktune_core::tuner::Tuner;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::unistd::Pid;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When the watchdog acts.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// How often it looks.
    pub period: Duration,
    /// How long a stop may take to end the process: the loop sees one
    /// within a second, then waits for the worker to finish the change it
    /// is applying (its answer belongs in the summary) before the revert;
    /// a worker stuck in a write is cut short here.
    pub grace: Duration,
    /// How long the loop may go without a round (it has one at least every
    /// second) before its CPU use is looked at.
    pub stall: Duration,
    /// The share of `stall` the main thread must have spent on a CPU to be
    /// spinning rather than blocked (a blocked thread spends none; a spin on
    /// a busy machine gets what the scheduler gives it).
    pub busy: f64,
}

/// The limits of blktune's screens.
pub const LIMITS: Limits = Limits {
    period: Duration::from_millis(500),
    grace: Duration::from_secs(10),
    stall: Duration::from_secs(5),
    busy: 0.25,
};

/// Why the watchdog ended a session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stuck {
    /// A signal or the terminal's hang-up asked the session to end, and
    /// it had not ended this long after.
    StopIgnored(Duration),
    /// The loop had no round for this long while its thread kept a CPU busy.
    Spinning(Duration),
}

impl std::fmt::Display for Stuck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stuck::StopIgnored(d) => write!(
                f,
                "the screen had not ended {} s after a signal or its terminal going away",
                d.as_secs()
            ),
            Stuck::Spinning(d) => write!(
                f,
                "the screen's loop made no progress for {} s while using the CPU",
                d.as_secs()
            ),
        }
    }
}

/// Where the session's exit is: who reverts.
const RUNNING: u8 = 0;
const REVERTING: u8 = 1;
const REVERTED: u8 = 2;

/// What the event loop tells its watchdog.
#[derive(Debug, Default)]
pub struct Pulse {
    /// Rounds of the loop so far.
    rounds: AtomicU64,
    /// [`RUNNING`], [`REVERTING`] or [`REVERTED`].
    phase: AtomicU8,
    /// The session's changes as the loop last saw them.
    session: Mutex<Vec<SessionChange>>,
}

impl Pulse {
    /// One more round of the loop.
    pub fn beat(&self) {
        self.rounds.fetch_add(1, Ordering::Relaxed);
    }

    /// Rounds so far.
    pub fn rounds(&self) -> u64 {
        self.rounds.load(Ordering::Relaxed)
    }

    /// The session's changes now (what `--revert-on-exit` would put back).
    pub fn publish(&self, session: Vec<SessionChange>) {
        if let Ok(mut s) = self.session.lock() {
            *s = session;
        }
    }

    /// The changes last published.
    pub fn session(&self) -> Vec<SessionChange> {
        self.session.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Take the revert on oneself: `false` when the other side has.
    pub fn claim_revert(&self) -> bool {
        self.phase
            .compare_exchange(RUNNING, REVERTING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The revert is done.
    pub fn reverted(&self) {
        self.phase.store(REVERTED, Ordering::Release);
    }

    /// Is a revert under way (on the other side)?
    fn reverting(&self) -> bool {
        self.phase.load(Ordering::Acquire) == REVERTING
    }
}

/// What the watchdog watches.
#[derive(Debug)]
pub struct Watched {
    pub pulse: Arc<Pulse>,
    pub signals: Signals,
    /// Wakes the loop when the watchdog ends the session.
    pub waker: Option<Waker>,
    /// The terminal read (a descriptor of its own), watched for a hang-up.
    pub tty: Option<OwnedFd>,
    /// The event loop's thread, whose CPU use tells a spin from a block.
    pub main: Pid,
}

/// The running watchdog; dropping it ends its thread.
#[derive(Debug)]
pub struct Watchdog {
    /// Closed on drop: the thread's wait ends and it returns.
    quit: Option<UnixStream>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Watch `watched` with `limits`; `on_stuck` runs on the watchdog's thread
    /// when the session is stuck (in blktune, [`emergency_exit`]).
    pub fn start(
        watched: Watched,
        limits: Limits,
        on_stuck: impl FnOnce(Stuck) + Send + 'static,
    ) -> std::io::Result<Self> {
        let (quit, quit_rx) = UnixStream::pair()?;
        let thread = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                if let Some(why) = watch(watched, limits, &quit_rx) {
                    on_stuck(why);
                }
            })?;
        Ok(Self {
            quit: Some(quit),
            thread: Some(thread),
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.quit.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The watchdog's thread: `Some(why)` when the session is stuck, `None`
/// when told to quit.
fn watch(mut watched: Watched, limits: Limits, quit: &UnixStream) -> Option<Stuck> {
    let mut rounds = watched.pulse.rounds();
    let mut window = (Instant::now(), cpu_time(watched.main));
    let mut stop_seen: Option<Instant> = None;
    loop {
        let mut fds = vec![PollFd::new(quit.as_fd(), PollFlags::POLLIN)];
        if let Some(t) = &watched.tty {
            // No events asked: poll reports only a hang-up or an error.
            fds.push(PollFd::new(t.as_fd(), PollFlags::empty()));
        }
        let t = PollTimeout::try_from(limits.period).unwrap_or(PollTimeout::MAX);
        let _ = poll(&mut fds, t);
        if fds[0].revents().is_some_and(|r| !r.is_empty()) {
            return None;
        }
        let hung_up = fds
            .get(1)
            .and_then(PollFd::revents)
            .is_some_and(|r| r.intersects(GONE));
        drop(fds);
        if hung_up {
            // Once: a hung-up terminal would end every later wait at once.
            watched.tty = None;
            watched.signals.raise();
            if let Some(waker) = &watched.waker {
                waker.wake();
            }
        }
        let now = Instant::now();
        if watched.signals.raised() {
            let since = *stop_seen.get_or_insert(now);
            if now - since >= limits.grace {
                return Some(Stuck::StopIgnored(now - since));
            }
        }
        let r = watched.pulse.rounds();
        if r != rounds {
            rounds = r;
            window = (now, cpu_time(watched.main));
        } else if now - window.0 >= limits.stall {
            let cpu = cpu_time(watched.main);
            let spent = cpu.saturating_sub(window.1);
            let span = now - window.0;
            if !watched.pulse.reverting() && spent.as_secs_f64() >= limits.busy * span.as_secs_f64()
            {
                return Some(Stuck::Spinning(span));
            }
            // Blocked, not spinning: look again over the next stretch.
            window = (now, cpu);
        }
    }
}

/// CPU time thread `tid` of this process has used so far (user and
/// system: fields 14 and 15 of /proc/PID/task/TID/stat, proc(5)); zero
/// where it cannot be read.
pub fn cpu_time(tid: Pid) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return Duration::ZERO;
    };
    // The command name (field 2) may hold spaces and parentheses: count
    // from the last ')'.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return Duration::ZERO;
    };
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    let per_sec = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .and_then(|n| u64::try_from(n).ok())
        .filter(|n| *n > 0)
        .unwrap_or(100);
    Duration::from_secs_f64(ticks as f64 / per_sec as f64)
}

/// End a stuck session from the watchdog's thread: revert the session's
/// changes when `revert` is given (`--revert-on-exit`; if the main thread is
/// reverting, wait for it instead), put the terminal back, say why on
/// stderr, exit with code 1. Nothing here waits on the terminal: the main
/// thread may be stuck writing to it, holding the lock of Rust's stdout.
pub fn emergency_exit(why: Stuck, pulse: &Pulse, revert: Option<&Tuner>) -> ! {
    let mut said = format!("blktune: {why}; ending it\n").into_bytes();
    if let Some(tuner) = revert {
        if pulse.claim_revert() {
            let mut failed = Vec::new();
            crate::tui::summary::revert_on_exit(&mut said, &mut failed, tuner, &pulse.session());
            said.extend(failed);
            pulse.reverted();
        } else {
            // The main thread reverts: a revert is never cut short.
            while pulse.reverting() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    let _ = crossterm::terminal::disable_raw_mode();
    write_without_waiting(std::io::stdout(), b"\x1b[?25h\x1b[?1049l");
    write_without_waiting(std::io::stderr(), &said);
    std::process::exit(1)
}

/// Write `bytes` to `fd` without ever waiting: a regular file (a log)
/// straight (its writes do not block, and its offset is kept); a terminal
/// or a pipe through a descriptor of our own that does not block, so what
/// does not fit now is dropped; anything else not at all.
fn write_without_waiting(fd: impl AsFd, bytes: &[u8]) {
    use nix::fcntl::OFlag;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let fd = fd.as_fd();
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
        let _ = nix::unistd::write(fd, bytes);
    } else if let Ok(mut file) = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags((OFlag::O_NOCTTY | OFlag::O_NONBLOCK).bits())
        .open(path)
    {
        let _ = file.write(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    const FAST: Limits = Limits {
        period: Duration::from_millis(20),
        grace: Duration::from_millis(300),
        stall: Duration::from_millis(300),
        busy: 0.25,
    };

    fn watched(pulse: &Arc<Pulse>, signals: &Signals, main: Pid) -> Watched {
        Watched {
            pulse: Arc::clone(pulse),
            signals: signals.clone(),
            waker: None,
            tty: None,
            main,
        }
    }

    /// A watchdog whose `on_stuck` reports on a channel instead of exiting.
    fn start(watched: Watched) -> (Watchdog, mpsc::Receiver<Stuck>) {
        let (tx, rx) = mpsc::channel();
        let dog = Watchdog::start(watched, FAST, move |why| {
            let _ = tx.send(why);
        })
        .unwrap();
        (dog, rx)
    }

    /// A thread of this process that keeps a CPU busy (`spin`) or sleeps
    /// until `stop`; its tid.
    fn helper(spin: bool, stop: Arc<std::sync::atomic::AtomicBool>) -> Pid {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            tx.send(nix::unistd::gettid()).unwrap();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if spin {
                    n = std::hint::black_box(n.wrapping_add(1));
                } else {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        });
        rx.recv().unwrap()
    }

    #[test]
    fn a_loop_that_beats_is_left_alone_and_a_stop_it_ignores_is_not() {
        let pulse = Arc::new(Pulse::default());
        let signals = Signals::default();
        let (dog, rx) = start(watched(&pulse, &signals, nix::unistd::gettid()));
        for _ in 0..30 {
            pulse.beat();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(rx.try_recv().is_err(), "a healthy loop is never stopped");
        // A stop comes; the loop goes on beating but never ends.
        signals.raise();
        for _ in 0..50 {
            pulse.beat();
            std::thread::sleep(Duration::from_millis(20));
        }
        match rx.try_recv() {
            Ok(Stuck::StopIgnored(d)) => assert!(d >= FAST.grace),
            other => panic!("{other:?}"),
        }
        drop(dog);
    }

    #[test]
    fn a_thread_that_spins_without_a_round_is_stuck_one_that_sleeps_is_not() {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let pulse = Arc::new(Pulse::default());
        let signals = Signals::default();
        let sleeper = helper(false, Arc::clone(&stop));
        let (dog, rx) = start(watched(&pulse, &signals, sleeper));
        std::thread::sleep(FAST.stall * 4);
        assert!(rx.try_recv().is_err(), "a blocked loop is left alone");
        drop(dog);
        let spinner = helper(true, Arc::clone(&stop));
        let (_dog, rx) = start(watched(&pulse, &signals, spinner));
        let why = rx.recv_timeout(Duration::from_secs(10));
        stop.store(true, Ordering::Relaxed);
        assert!(matches!(why, Ok(Stuck::Spinning(_))), "{why:?}");
    }

    /// The terminal's other end closes: the session is asked to end.
    #[test]
    fn a_hang_up_raises_the_stop_once() {
        let pulse = Arc::new(Pulse::default());
        let signals = Signals::default();
        let (tty, other_end) = UnixStream::pair().unwrap();
        let mut w = watched(&pulse, &signals, nix::unistd::gettid());
        w.tty = Some(tty.into());
        let (dog, _rx) = start(w);
        std::thread::sleep(Duration::from_millis(60));
        assert!(!signals.raised());
        drop(other_end);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !signals.raised() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(signals.raised());
        drop(dog);
    }

    #[test]
    fn one_side_reverts() {
        let p = Pulse::default();
        assert!(p.claim_revert());
        assert!(p.reverting());
        assert!(!p.claim_revert());
        p.reverted();
        assert!(!p.reverting() && !p.claim_revert());
    }

    #[test]
    fn cpu_time_counts_this_threads_work() {
        let me = nix::unistd::gettid();
        let before = cpu_time(me);
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < Duration::from_millis(300) {
            n = std::hint::black_box(n.wrapping_add(1));
        }
        assert!(cpu_time(me) > before, "{before:?}");
    }
}
