//! The event loop never spins: when its waits keep ending at once with
//! nothing to do (a terminal whose reads fail without saying so), it stops
//! with `NoProgress` after a bounded number of rounds; input that keeps
//! coming (a paste, a flood of keys) is progress, taken in batches, and the
//! loop ends normally. What `blktune` runs in a terminal, on a `TestBackend`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture::*;
use blktune::tui::TuiError;
use blktune::tui::event_loop::{Input, MAX_FEEDS_PER_ROUND, NO_PROGRESS_ROUNDS, run_loop};
use blktune::tui::worker::protocol::{Feed, LiveControl, ToWorker};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::mpsc;
use std::time::Duration;

/// A terminal whose every wait ends at once with nothing, for ever.
struct Broken {
    reads: u64,
}

impl Input for Broken {
    fn read(&mut self, _timeout: Duration) -> Result<Option<Vec<Event>>, TuiError> {
        self.reads += 1;
        // Far past the limit: the test fails instead of hanging.
        assert!(self.reads < 100 * u64::from(NO_PROGRESS_ROUNDS), "spinning");
        Ok(Some(Vec::new()))
    }
}

#[test]
fn a_loop_whose_waits_end_at_once_with_nothing_stops_instead_of_spinning() {
    let m = Machine::three();
    let mut app = m.app(None);
    let (_feed_tx, feed_rx) = mpsc::channel::<Feed>();
    let (ctl_tx, _ctl_rx) = mpsc::channel::<ToWorker<LiveControl>>();
    let mut input = Broken { reads: 0 };
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let e = run_loop(&mut term, &mut app, &mut input, &feed_rx, &ctl_tx).unwrap_err();
    assert!(matches!(e, TuiError::NoProgress { .. }), "{e}");
    assert!(
        input.reads <= u64::from(NO_PROGRESS_ROUNDS) + 2,
        "{}",
        input.reads
    );
    assert!(e.to_string().contains("made no progress"), "{e}");
}

/// Input that keeps coming, each read at once: progress, not a spin.
struct Flood {
    reads: u64,
    until: u64,
}

impl Input for Flood {
    fn read(&mut self, _timeout: Duration) -> Result<Option<Vec<Event>>, TuiError> {
        self.reads += 1;
        if self.reads >= self.until {
            let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
            return Ok(Some(vec![Event::Key(q)]));
        }
        // Events that change nothing on screen (no redraw, so the test is
        // fast): the loop must still take them as work.
        Ok(Some(vec![Event::FocusGained]))
    }
}

#[test]
fn input_that_keeps_coming_is_work_not_a_spin() {
    let m = Machine::three();
    let mut app = m.app(None);
    let (_feed_tx, feed_rx) = mpsc::channel::<Feed>();
    let (ctl_tx, _ctl_rx) = mpsc::channel::<ToWorker<LiveControl>>();
    let until = u64::from(NO_PROGRESS_ROUNDS) + 100;
    let mut input = Flood { reads: 0, until };
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    run_loop(&mut term, &mut app, &mut input, &feed_rx, &ctl_tx).unwrap();
    assert!(app.quit);
    assert_eq!(input.reads, until);
}

/// Counts the rounds in which keys were read and feeds taken.
struct Counting {
    reads: u64,
}

impl Input for Counting {
    fn read(&mut self, _timeout: Duration) -> Result<Option<Vec<Event>>, TuiError> {
        self.reads += 1;
        let key = if self.reads > 2 {
            KeyCode::Char('q')
        } else {
            KeyCode::F(12)
        };
        Ok(Some(vec![Event::Key(KeyEvent::new(
            key,
            KeyModifiers::NONE,
        ))]))
    }
}

/// A worker that has sent more than a round takes: the loop draws and
/// reads keys between batches (`q` ends it before the rest is taken).
#[test]
fn a_flood_of_messages_is_taken_in_bounded_batches() {
    let m = Machine::three();
    let mut app = m.app(None);
    let (feed_tx, feed_rx) = mpsc::channel::<Feed>();
    for _ in 0..3 * MAX_FEEDS_PER_ROUND {
        feed_tx
            .send(Feed::Error("diskstats vanished".into()))
            .unwrap();
    }
    let (ctl_tx, _ctl_rx) = mpsc::channel::<ToWorker<LiveControl>>();
    let mut input = Counting { reads: 0 };
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    run_loop(&mut term, &mut app, &mut input, &feed_rx, &ctl_tx).unwrap();
    assert!(app.quit);
    let left = feed_rx.try_iter().count();
    assert!(
        left >= MAX_FEEDS_PER_ROUND - 1,
        "the loop took {} messages before reading the keys typed",
        3 * MAX_FEEDS_PER_ROUND - left
    );
}
