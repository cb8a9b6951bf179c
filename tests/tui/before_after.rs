//! The before/after of a change states no unsound percent (issue 16,
//! item 7): the spread beside the means, `short` for a window under three
//! intervals, `~` for a move inside the noise; the rule file's measured
//! text follows the same rules.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, Overlay};
use blktune::tui::worker::protocol::Feed;
use tui_fixture::*;

/// sda under load, a change, then `after` intervals at `r_after` ms.
fn changed(after: usize, r_after: u32) -> (Machine, App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    for i in 0..20 {
        m.run(&mut app, 1, &busy(4 + i % 2));
    }
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    m.run(&mut app, after, &busy(r_after));
    (m, app)
}

/// The before/after rows on the screen (`r_await  …`).
fn row<'a>(screen: &'a str, name: &str) -> &'a str {
    screen
        .lines()
        .find_map(|l| {
            l.rsplit_once('│')
                .map(|(_, r)| r)
                .filter(|r| r.starts_with(name))
        })
        .unwrap_or_else(|| panic!("no {name} row:\n{screen}"))
}

#[test]
fn a_window_under_three_intervals_gives_no_percent() {
    let (_m, app) = changed(2, 20);
    for (w, h) in [(80, 24), (120, 40)] {
        let s = text(&screen(&app, w, h));
        let r = row(&s, "r_await");
        assert!(r.contains("short") && !r.contains('%'), "{w}x{h}: {r}\n{s}");
    }
}

#[test]
fn a_clear_change_has_a_percent_and_the_spread_is_shown() {
    let (_m, app) = changed(12, 20);
    // Wide panel: the spread beside each mean.
    let s = text(&screen(&app, 120, 40));
    let r = row(&s, "r_await");
    assert!(
        r.contains('±') && r.contains('%') && !r.contains('~'),
        "{r}\n{s}"
    );
    // Narrow panel: the spread of the awaits on the row below.
    let s = text(&screen(&app, 80, 24));
    let r = row(&s, "r_await");
    assert!(r.contains('%') && !r.contains('±'), "{r}\n{s}");
    assert!(s.contains('±'), "{s}");
}

#[test]
fn a_move_inside_the_noise_is_marked_as_such() {
    // 4-5 ms before, 5 after: within the spread.
    let (_m, app) = changed(12, 5);
    let s = text(&screen(&app, 120, 40));
    let r = row(&s, "r_await");
    assert!(r.contains("~+"), "{r}\n{s}");
}

#[test]
fn the_rule_files_measured_text_has_no_percent_from_a_short_window() {
    let (_m, mut app) = changed(2, 20);
    press(&mut app, &chars("e"));
    let Some(Overlay::Export(d)) = &app.overlay else {
        panic!("no export dialog: {:?}", app.overlay);
    };
    let text = format!("{d:?}");
    assert!(text.contains("r_await"), "{text}");
    assert!(!text.contains("%)"), "{text}");
}
