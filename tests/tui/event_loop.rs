//! The real event loop ([`blktune::tui::event_loop::run_loop`]) on a
//! `TestBackend`, with scripted keys and a scripted feed, until it quits:
//! what `blktune` runs in a terminal, minus the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::TuiError;
use blktune::tui::event_loop::{FIRST_POLL, Input, POLL, page_rows, run_loop};
use blktune::tui::render::draw_rows;
use blktune::tui::worker::protocol::{Feed, LiveControl, ToWorker};
use blktune_core::fake::FakeDisk;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::collections::VecDeque;
use std::sync::mpsc::{self, Sender};
use std::time::Duration;
use tui_fixture::*;

/// One step of the script: what the worker sends, or what the user types.
enum Step {
    Feed(Box<Feed>),
    Keys(Vec<KeyCode>),
}

/// Plays the script, one step per read of the loop; a feed step sends on
/// the feed channel (as the worker thread would) and types nothing.
struct Script {
    steps: VecDeque<Step>,
    feed: Sender<Feed>,
    reads: usize,
    /// How long each read was allowed to wait.
    waits: Vec<Duration>,
}

impl Script {
    fn new(feed: Sender<Feed>, steps: impl IntoIterator<Item = Step>) -> Self {
        Self {
            steps: steps.into_iter().collect(),
            feed,
            reads: 0,
            waits: Vec::new(),
        }
    }
}

impl Input for Script {
    fn read(&mut self, timeout: Duration) -> Result<Option<Vec<Event>>, TuiError> {
        self.reads += 1;
        self.waits.push(timeout);
        Ok(match self.steps.pop_front() {
            Some(Step::Feed(f)) => {
                self.feed.send(*f).unwrap();
                Some(Vec::new())
            }
            Some(Step::Keys(keys)) => Some(
                keys.into_iter()
                    .map(|k| Event::Key(KeyEvent::new(k, KeyModifiers::NONE)))
                    .collect(),
            ),
            // The script is over and the loop did not quit: end it as a
            // hang-up would, and let the test say so.
            None => None,
        })
    }
}

#[test]
fn the_loop_takes_a_snapshot_then_keys_and_quits() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    let (feed_tx, feed_rx) = mpsc::channel();
    let (ctl_tx, ctl_rx) = mpsc::channel::<ToWorker<LiveControl>>();
    let first = m.step(1.0, &busy(4));
    let second = m.step(1.0, &busy(4));
    let mut input = Script::new(
        feed_tx,
        [
            Step::Feed(Box::new(Feed::Snapshot(Box::new(first)))),
            Step::Feed(Box::new(Feed::Snapshot(Box::new(second)))),
            Step::Keys(vec![
                KeyCode::Char('j'),
                KeyCode::Char('s'),
                KeyCode::Esc,
                KeyCode::Char('q'),
            ]),
        ],
    );
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    run_loop(&mut term, &mut app, &mut input, &feed_rx, &ctl_tx).unwrap();
    assert!(app.quit, "q ended the loop, not the end of the script");
    assert_eq!(input.reads, 3);
    // The fixture's baseline, then the script's two.
    assert_eq!(app.samples, 3);
    // sda (first by name) was selected; by %util the rows read sdb, sda,
    // zram0: j moved to the row below, s opened its picker, Esc closed it.
    assert_eq!(app.selected.as_deref(), Some("zram0"));
    assert!(app.overlay.is_none());
    // Nothing to send but the rows on screen (no change, no probe), each
    // time they changed: last, all three in %util order.
    let sent: Vec<_> = ctl_rx.try_iter().collect();
    let views: Vec<&Vec<String>> = sent
        .iter()
        .map(|c| match c {
            ToWorker::Own(LiveControl::InView(rows)) => rows,
            other => panic!("sent {other:?}"),
        })
        .collect();
    assert_eq!(
        views.last().map(|v| v.as_slice()),
        Some(&["sdb".to_string(), "sda".into(), "zram0".into()][..])
    );
    assert!(
        views.windows(2).all(|w| w[0] != w[1]),
        "sent again unchanged: {views:?}"
    );
    // The last frame the loop drew: both samples in, before the keys.
    insta::assert_snapshot!(term.backend());
}

#[test]
fn a_worker_that_dies_ends_the_loop_with_an_error() {
    let m = Machine::three();
    let mut app = m.app(None);
    // The worker's end of the feed is gone before anything was sent.
    let (feed_tx, feed_rx) = mpsc::channel::<Feed>();
    drop(feed_tx);
    let (ctl_tx, _ctl_rx) = mpsc::channel::<ToWorker<LiveControl>>();
    let mut input = Script::new(mpsc::channel().0, []);
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let e = run_loop(&mut term, &mut app, &mut input, &feed_rx, &ctl_tx).unwrap_err();
    assert!(matches!(e, TuiError::WorkerStopped), "{e}");
}

/// A key typed while the screen still shows the first selection (in name
/// order, before any rate) acts on that device, even when the first rates,
/// which move an untouched selection to the busiest row, came in before
/// the loop read the key: keys already waiting go before the feed.
#[test]
fn a_key_typed_before_the_first_rates_acts_on_the_device_on_screen() {
    let mut m = Machine::three();
    // As the live screen starts: no --device, so sda (first by name) is
    // selected until the first rates put sdb, the busiest, on top.
    let mut app = m.app_with(None, None);
    let (feed_tx, feed_rx) = mpsc::channel();
    let (ctl_tx, _ctl_rx) = mpsc::channel::<ToWorker<LiveControl>>();
    let rates = m.step(1.0, &busy(4));
    let mut input = Script::new(
        feed_tx,
        [
            // The first rates arrive while the loop waits for a key, and
            // the wait ends with none...
            Step::Feed(Box::new(Feed::Snapshot(Box::new(rates)))),
            // ...then Down is typed, at the screen with sda selected.
            Step::Keys(vec![KeyCode::Down]),
            Step::Keys(vec![KeyCode::Char('q')]),
        ],
    );
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    run_loop(&mut term, &mut app, &mut input, &feed_rx, &ctl_tx).unwrap();
    assert!(app.quit);
    // Down from sda in name order (sda, sdb, zram0) is sdb; had the rates
    // moved the selection to sdb first, Down would have gone below it.
    assert_eq!(app.selected.as_deref(), Some("sdb"));
    assert_eq!(app.samples, 2);
}

/// Until the worker's first snapshot has come, the loop waits for keys only
/// briefly, so the first rows show as soon as the worker has read them (a
/// full wait held them back by up to 100 ms: first frames of 145 ms at 1000
/// devices against 45 ms). Then it waits the usual time.
#[test]
fn the_loop_looks_for_the_first_snapshot_often_then_waits_longer() {
    let mut m = Machine::three();
    let mut app = m.app_before_baseline(None, None);
    assert_eq!(app.samples, 0);
    let (feed_tx, feed_rx) = mpsc::channel();
    let (ctl_tx, _ctl_rx) = mpsc::channel::<ToWorker<LiveControl>>();
    let baseline = m.baseline();
    let first = m.step(1.0, &busy(4));
    let mut input = Script::new(
        feed_tx,
        [
            Step::Keys(vec![]),
            Step::Feed(Box::new(Feed::Snapshot(Box::new(baseline)))),
            Step::Feed(Box::new(Feed::Snapshot(Box::new(first)))),
            Step::Keys(vec![KeyCode::Char('q')]),
        ],
    );
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    run_loop(&mut term, &mut app, &mut input, &feed_rx, &ctl_tx).unwrap();
    assert!(app.quit);
    // Two waits before the baseline was taken in, then the usual one (the
    // loop also looks for keys typed already, without waiting, before it
    // takes in a feed).
    let waits: Vec<Duration> = input.waits.into_iter().filter(|w| !w.is_zero()).collect();
    assert_eq!(waits, [FIRST_POLL, FIRST_POLL, POLL]);
    assert!(FIRST_POLL <= Duration::from_millis(10) && POLL >= 10 * FIRST_POLL);
}

/// The rows on screen go to the live worker whenever they change (it checks
/// their settings every period, the rest less often): the first page of
/// eight disks, then the last page once the selection moves to the end;
/// and not again unchanged. The rows are the ones the table drew.
#[test]
fn the_rows_on_screen_are_told_to_the_worker_when_they_change() {
    let names = ["sda", "sdb", "sdc", "sdd", "sde", "sdf", "sdg", "sdh"];
    let disks: Vec<FakeDisk> = (0u32..)
        .zip(names)
        .map(|(i, n)| FakeDisk::new(n).dev(8, 16 * i))
        .collect();
    let mut m = Machine::new(&disks);
    let mut app = m.app(None);
    let loads = busy(4)
        .into_iter()
        .filter(|(n, _)| *n != "zram0")
        .collect::<Vec<_>>();
    app.on_feed(Feed::Snapshot(Box::new(m.step(1.0, &loads))));
    // By %util: sdb, sda, then the idle ones by name; sda selected.
    let order = ["sdb", "sda", "sdc", "sdd", "sde", "sdf", "sdg", "sdh"];
    let (w, h) = (80, 16);
    let n = page_rows(w, h, &app).unwrap();
    assert!(n < order.len(), "a page shorter than the table: {n}");
    app.on_resize(n);
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut drawn = |app: &blktune::tui::app::App| {
        let mut shown = None;
        term.draw(|f| shown = draw_rows(f, app)).unwrap();
        shown.unwrap()
    };
    let view =
        |c: Option<blktune::tui::worker::protocol::Control>| match c.and_then(|c| c.to_live()) {
            Some(ToWorker::Own(LiveControl::InView(rows))) => Some(rows),
            None => None,
            other => panic!("{other:?}"),
        };
    let rows = drawn(&app);
    assert_eq!(rows, order[..n]);
    assert_eq!(view(app.view_control_for(rows.clone())), Some(rows.clone()));
    assert_eq!(
        view(app.view_control_for(drawn(&app))),
        None,
        "unchanged: nothing sent"
    );
    let _ = app.on_key(&KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    assert_eq!(app.selected.as_deref(), Some("sdh"));
    let rows = drawn(&app);
    assert_eq!(rows, order[order.len() - n..]);
    assert_eq!(view(app.view_control_for(rows.clone())), Some(rows));
}
