//! The event loop: receive what the worker sent, update the [`App`], draw,
//! read keys; until quit, a signal or a hang-up.
//!
//! It is generic over ratatui's [`Backend`] and over where key presses come
//! from ([`Input`]), so a test drives this very loop on a `TestBackend`
//! with scripted keys and a scripted feed (`tests/tui/event_loop.rs`). The real
//! terminal's side (raw mode, signals, a pty that hangs up, the watchdog,
//! and this loop on it) is [`super::terminal`].
//!
//! Every round is bounded: at most [`MAX_FEEDS_PER_ROUND`] messages, one
//! read of the terminal, one draw; and a loop whose waits keep ending at
//! once with nothing to do ([`NO_PROGRESS_ROUNDS`] in a row) ends with
//! [`TuiError::NoProgress`] instead of spinning.

use super::TuiError;
use super::app::{App, Overlay};
use super::render;
use super::worker::protocol::{ControlSink, Feed};
use crossterm::event::Event;
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// Longest wait for input, so signals and feed messages are seen quickly
/// where nothing wakes the loop for them (tests; no waker could be made).
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

/// Rounds in a row whose wait ended early with nothing to do (no key, no
/// message, no signal) before the loop is taken for spinning: a wait that
/// ends at once for ever (a terminal whose reads fail without saying so, a
/// waker that stays ready). A healthy loop has one such round after a poke
/// whose message it had already taken.
pub const NO_PROGRESS_ROUNDS: u32 = 1000;

/// The most messages of the worker taken in one round before the loop
/// draws and reads keys: a worker that sends without end cannot starve them.
pub const MAX_FEEDS_PER_ROUND: usize = 4096;

/// Where the loop's events come from: the terminal, or a script in tests.
pub trait Input {
    /// Must the session end now (a signal arrived)? Checked every round.
    fn stopped(&self) -> bool {
        false
    }

    /// Wait up to `timeout` for input: the events of one read (maybe none;
    /// a bounded batch, the rest comes at the next), or `None` when the
    /// terminal went away and the session ends.
    fn read(&mut self, timeout: Duration) -> Result<Option<Vec<Event>>, TuiError>;

    /// How long the loop may wait when it has nothing to do: [`POLL`], or
    /// longer where feeds and signals wake it.
    fn idle_wait(&self) -> Duration {
        POLL
    }

    /// Called once a round, before the wait: the real terminal tells its
    /// watchdog the loop is alive and what the session changed.
    fn on_round(&mut self, _app: &App) {}
}

/// Rows of the device table at this terminal size (the page of PgUp and
/// PgDn); `None` when the terminal is too small to draw.
pub fn page_rows(width: u16, height: u16, app: &App) -> Option<usize> {
    let a = render::layout(Rect::new(0, 0, width, height), app)?;
    Some(table_rows(&a))
}

/// Rows of devices in the table's area (its first row is the headings).
fn table_rows(areas: &render::Areas) -> usize {
    areas.table.height.saturating_sub(1).max(1) as usize
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
    let started = Instant::now();
    let mut idle_rounds = 0u32;
    loop {
        if input.stopped() {
            return Ok(());
        }
        let mut keys_first = true;
        let mut fed = 0;
        while fed < MAX_FEEDS_PER_ROUND {
            match feed.try_recv() {
                Ok(f) => {
                    fed += 1;
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
        input.on_round(app);
        let asked = Instant::now();
        let Some(events) = input.read(wait)? else {
            return Ok(());
        };
        // Ended well before its time with nothing: no progress this round.
        if fed == 0 && events.is_empty() && asked.elapsed() < wait / 2 {
            idle_rounds += 1;
            if idle_rounds >= NO_PROGRESS_ROUNDS {
                return Err(TuiError::NoProgress {
                    rounds: idle_rounds,
                });
            }
        } else {
            idle_rounds = 0;
        }
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
