//! The event loop: receive what the worker sent, update the [`App`], draw,
//! read keys; until quit, a signal or a hang-up.
//!
//! It is generic over ratatui's [`Backend`] and over where key presses come
//! from ([`Input`]), so a test drives this very loop on a `TestBackend`
//! with scripted keys and a scripted feed (`tests/tui/event_loop.rs`). The real
//! terminal's side (raw mode, signals, a pty that hangs up) is
//! [`TerminalInput`] and [`RestoreGuard`].

use super::TuiError;
use super::app::{App, Overlay};
use super::render;
use super::wake::WakeFd;
use super::worker::protocol::{ControlSink, Feed};
use crossterm::event::{self, Event};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// Longest wait for input, so signals and feed messages are seen quickly
/// where nothing wakes the loop for them (tests; crossterm reading
/// /dev/tty).
pub const POLL: Duration = Duration::from_millis(100);

/// Longest wait where the worker and the signals wake the loop
/// ([`super::wake`]): only a safety net.
pub const WOKEN_POLL: Duration = Duration::from_secs(1);

/// The wait for keys before the first snapshot: the worker sends it as soon
/// as it has read the devices, and a wait of [`POLL`] would hold the first
/// rows back by up to that long (seen: 100 ms of a 145 ms first frame).
pub const FIRST_POLL: Duration = Duration::from_millis(5);

/// ... for at most this long (a worker that sends nothing is not waited for
/// at that rate for ever).
const FIRST_POLL_FOR: Duration = Duration::from_secs(2);

/// Where the loop's events come from: the terminal, or a script in tests.
pub trait Input {
    /// Must the session end now (a signal arrived)? Checked every round.
    fn stopped(&self) -> bool {
        false
    }

    /// Wait up to `timeout` for input: every event waiting now (maybe
    /// none), or `None` when the terminal went away and the session ends.
    fn read(&mut self, timeout: Duration) -> Result<Option<Vec<Event>>, TuiError>;

    /// How long the loop may wait when it has nothing to do: [`POLL`], or
    /// longer where feeds and signals wake it.
    fn idle_wait(&self) -> Duration {
        POLL
    }
}

/// Puts the terminal back when dropped, whatever happened.
#[derive(Debug)]
pub struct RestoreGuard;

impl Drop for RestoreGuard {
    fn drop(&mut self) {
        // The terminal may be gone (SIGHUP): nothing useful to do on error.
        let _ = crossterm::execute!(std::io::stdout(), crossterm::cursor::Show);
        let _ = ratatui::try_restore();
    }
}

/// Flags set by signal handlers, checked by the event loop.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    pub term: Arc<AtomicBool>,
}

impl Signals {
    /// Register SIGTERM, SIGHUP and SIGINT.
    pub fn register() -> std::io::Result<Self> {
        let s = Self::default();
        for sig in [
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
            signal_hook::consts::SIGINT,
        ] {
            signal_hook::flag::register(sig, Arc::clone(&s.term))?;
        }
        Ok(s)
    }

    /// Did a signal (or a hang-up) end the session?
    pub fn raised(&self) -> bool {
        self.term.load(Ordering::Relaxed)
    }
}

/// What waiting on the terminal found.
enum Ready {
    None,
    Some,
    HangUp,
}

/// Wait up to `timeout` for input on stdin or a poke on `wake`, noticing a
/// hang-up (the pty's other end closed), which crossterm's reader does not.
/// The flag: `wake` is broken (closed), and must not be waited on again.
fn wait_for_stdin(timeout: Duration, wake: Option<&WakeFd>) -> (Ready, bool) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    let mut fds = vec![PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    if let Some(w) = wake {
        fds.push(PollFd::new(w.as_fd(), PollFlags::POLLIN));
    }
    let t = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::ZERO);
    let n = poll(&mut fds, t);
    let gone = PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL;
    let mut broken = false;
    if let Some(w) = wake
        && let Some(r) = fds[1].revents()
    {
        // A closed waker would wake every wait at once, for ever.
        broken = r.intersects(gone);
        if r.contains(PollFlags::POLLIN) {
            w.drain();
        }
    }
    let ready = match n {
        Ok(0) => Ready::None,
        Ok(_) => match fds[0].revents() {
            Some(r) if r.intersects(gone) => Ready::HangUp,
            Some(r) if r.contains(PollFlags::POLLIN) => Ready::Some,
            _ => Ready::None,
        },
        // EINTR (a signal): look at the flags, then wait again.
        Err(_) => Ready::None,
    };
    (ready, broken)
}

/// The real terminal's input through crossterm, with the signal flags.
#[derive(Debug)]
pub struct TerminalInput {
    signals: Signals,
    stdin_tty: bool,
    /// Poked by the worker and the signals ([`super::wake`]).
    wake: Option<WakeFd>,
}

impl TerminalInput {
    /// Input of the terminal the TUI runs in; `signals` end the session;
    /// `wake` wakes a wait for it.
    pub fn new(signals: Signals, wake: Option<WakeFd>) -> Self {
        Self {
            signals,
            stdin_tty: std::io::stdin().is_terminal(),
            wake,
        }
    }
}

impl Input for TerminalInput {
    fn stopped(&self) -> bool {
        self.signals.raised()
    }

    fn idle_wait(&self) -> Duration {
        if self.stdin_tty && self.wake.is_some() {
            WOKEN_POLL
        } else {
            POLL
        }
    }

    fn read(&mut self, timeout: Duration) -> Result<Option<Vec<Event>>, TuiError> {
        let ready = if self.stdin_tty {
            let (ready, broken) = wait_for_stdin(timeout, self.wake.as_ref());
            if broken {
                self.wake = None;
            }
            match ready {
                // crossterm may hold events it already read from the fd.
                Ready::None | Ready::Some => event::poll(Duration::ZERO)?,
                // The terminal went away (SSH dropped, pty closed): stop now.
                // crossterm's reader would spin on the end of file. The flag
                // tells the caller that drawing errors are no news.
                Ready::HangUp => {
                    self.signals.term.store(true, Ordering::Relaxed);
                    return Ok(None);
                }
            }
        } else {
            // crossterm reads /dev/tty then; let it wait.
            event::poll(timeout)?
        };
        // Take every event that is waiting; the loop draws once after them.
        let mut events = Vec::new();
        let mut ready = ready;
        while ready {
            events.push(event::read()?);
            ready = event::poll(Duration::ZERO)?;
        }
        Ok(Some(events))
    }
}

/// Rows of the device table at this terminal size (the page of PgUp and
/// PgDn); `None` when the terminal is too small to draw.
pub fn page_rows(width: u16, height: u16, app: &App) -> Option<usize> {
    let a = render::layout(Rect::new(0, 0, width, height), app)?;
    Some(table_rows(&a))
}

/// Rows of devices in the table's area (its first row is the headings).
fn table_rows(a: &render::Areas) -> usize {
    a.table.height.saturating_sub(1).max(1) as usize
}

/// What the app keeps of the terminal's size, from one layout before each
/// draw: the table's page size, the sort keys whose columns it shows, and,
/// while the help is open, how far the help scrolls.
pub fn on_size(width: u16, height: u16, app: &mut App) {
    if let Some(a) = render::layout(Rect::new(0, 0, width, height), app) {
        app.on_resize(table_rows(&a));
        app.on_columns(render::table::sort_keys_shown(a.table.width, app));
    }
    if matches!(app.overlay, Some(Overlay::Help { .. }))
        && let Some(max) = render::overlay::help_max_scroll(width, height, app)
    {
        app.on_help_size(max);
    }
}

/// Receive, update, draw, read keys; until quit, a signal or a hang-up.
/// Every control the app answers with goes to `ctl`.
pub fn run_loop<B: Backend, I: Input>(
    term: &mut Terminal<B>,
    app: &mut App,
    input: &mut I,
    feed: &Receiver<Feed>,
    ctl: &impl ControlSink,
) -> Result<(), TuiError>
where
    B::Error: Send + Sync + 'static,
{
    let term_err = |e: B::Error| TuiError::Terminal(Box::new(e));
    let mut dirty = true;
    let started = std::time::Instant::now();
    loop {
        if input.stopped() {
            return Ok(());
        }
        let mut keys_first = true;
        loop {
            match feed.try_recv() {
                Ok(f) => {
                    // Keys already typed were typed at the screen on display:
                    // they act before a feed can change it (the first rates
                    // move an untouched selection to the busiest row), so a
                    // key acts on the device that was on screen.
                    if std::mem::take(&mut keys_first) {
                        let Some(events) = input.read(Duration::ZERO)? else {
                            return Ok(());
                        };
                        if on_events(app, events, ctl) {
                            return Ok(());
                        }
                    }
                    app.on_feed(f);
                    dirty = true;
                }
                Err(mpsc::TryRecvError::Empty) => break,
                // The worker died (a panic): stop instead of showing stale data.
                Err(mpsc::TryRecvError::Disconnected) => return Err(TuiError::WorkerStopped),
            }
        }
        // The first selection, or one moved by a vanished device or the filter.
        if let Some(c) = app.probe_control() {
            ctl.send_control(c);
        }
        if dirty {
            let size = term.size().map_err(term_err)?;
            // What depends on the size is the app's to keep; drawing only
            // borrows it.
            on_size(size.width, size.height, app);
            let mut shown = None;
            term.draw(|f| shown = render::draw_rows(f, app))
                .map_err(term_err)?;
            dirty = false;
            if let Some(c) = shown.and_then(|rows| app.view_control_for(rows)) {
                ctl.send_control(c);
            }
        }
        let wait = if app.samples == 0 && started.elapsed() < FIRST_POLL_FOR {
            FIRST_POLL
        } else {
            input.idle_wait()
        };
        let Some(events) = input.read(wait)? else {
            return Ok(());
        };
        dirty |= events
            .iter()
            .any(|e| matches!(e, Event::Key(_) | Event::Resize(..)));
        if on_events(app, events, ctl) {
            return Ok(());
        }
    }
}

/// Hand the keys of one read to the app and what it answers to `ctl`;
/// true once a key quit (the keys after it in the same read do nothing).
fn on_events(app: &mut App, events: Vec<Event>, ctl: &impl ControlSink) -> bool {
    for ev in events {
        if let Event::Key(k) = ev {
            for c in app.on_key(&k) {
                // A gone worker shows up as a missing answer; keep drawing.
                ctl.send_control(c);
            }
        }
        if app.quit {
            return true;
        }
    }
    false
}

/// [`run_loop`] on the real terminal, with the signal flags.
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
    run_loop(
        term,
        app,
        &mut TerminalInput::new(signals.clone(), wake),
        feed,
        ctl,
    )
}
