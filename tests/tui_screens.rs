//! Whole-screen snapshots of the TUI on a fake machine with scripted samples.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod tui_fixture;
use blktune::tui::source::Feed;
use crossterm::event::KeyCode;
use tui_fixture::*;

fn main_app() -> (Machine, blktune::tui::app::App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    for i in 0..90 {
        // A wave so the charts have a shape.
        let r = 2 + (i % 10) as u32;
        m.run(&mut app, 1, &busy(r));
    }
    (m, app)
}

#[test]
fn main_view_80x24() {
    let (_m, app) = main_app();
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn main_view_160x48() {
    let (_m, app) = main_app();
    insta::assert_snapshot!(screen(&app, 160, 48).backend());
}

#[test]
fn scheduler_picker() {
    let (_m, mut app) = main_app();
    press(&mut app, &[KeyCode::Char('s'), KeyCode::Down]);
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn help_overlay() {
    let (_m, mut app) = main_app();
    press(&mut app, &chars("?"));
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn before_after_panel() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 60, &busy(8));
    let mark = m.switch("sda", "none→mq-deadline", "none", "mq-deadline");
    app.on_feed(Feed::Change(mark));
    m.run(&mut app, 40, &busy(6));
    // A switch resets nr_requests; the label says so.
    let label = "mq-deadline→kyber, nr_requests 256→512";
    let mark = m.switch("sda", label, "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    m.run(&mut app, 20, &busy(2));
    let term = screen(&app, 80, 24);
    let s = text(&term);
    assert!(s.contains("mq-deadline→kyber"), "{s}");
    // Before: since the previous change (6 ms); after: 2 ms.
    assert!(s.contains("r_await     6.00    2.00   -67%"), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn read_only_mode() {
    let mut m = Machine::three();
    let mut app = m.app(Some("not root"));
    m.run(&mut app, 30, &busy(4));
    press(&mut app, &chars("s"));
    let term = screen(&app, 80, 24);
    let s = text(&term);
    assert!(
        s.contains("READ-ONLY: not root; changes are disabled"),
        "{s}"
    );
    assert!(s.contains("nothing was changed"), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn too_small_terminal() {
    let (_m, app) = main_app();
    insta::assert_snapshot!(screen(&app, 40, 10).backend());
}

#[test]
fn tiny_and_odd_sizes_do_not_panic() {
    let (_m, mut app) = main_app();
    for (w, h) in [
        (1, 1),
        (0, 0),
        (59, 15),
        (60, 16),
        (61, 17),
        (300, 100),
        (80, 5),
    ] {
        screen(&app, w, h);
    }
    press(&mut app, &chars("?"));
    screen(&app, 60, 16);
    press(&mut app, &[KeyCode::Esc, KeyCode::Char('t')]);
    screen(&app, 60, 16);
}
