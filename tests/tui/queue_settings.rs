//! The queue settings next to the scheduler (issue 35, item 3) in the TUI:
//! the detail pane lists them, `t` lists them after the scheduler's
//! tunables with a line of help each, and the editor checks a value in the
//! catalogue's words (`wbt_lat_usec` takes -1, the default, and 0, off)
//! before it asks the worker to write it.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, Overlay};
use blktune::tui::worker::protocol::{Control, LiveControl};
use blktune_core::fake::FakeDisk;
use crossterm::event::KeyCode;
use tui_fixture::*;

/// sda with the queue settings a 6.18 SSD has.
fn app() -> (Machine, App) {
    let sda = FakeDisk::new("sda")
        .dev(8, 0)
        .attr("queue/wbt_lat_usec", "2000")
        .attr("queue/nomerges", "0")
        .attr("queue/rq_affinity", "1")
        .attr("queue/max_sectors_kb", "1280")
        .attr("queue/max_hw_sectors_kb", "1280")
        .attr("queue/add_random", "0")
        .attr("queue/iostats", "1");
    let mut m = Machine::new(&[sda]);
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    (m, app)
}

#[test]
fn the_detail_pane_lists_them() {
    let (_m, app) = app();
    let term = screen(&app, 120, 40);
    let s = text(&term);
    assert!(s.contains("queue settings"), "{s}");
    for (k, v) in [
        ("wbt_lat_usec", "2000"),
        ("nomerges", "0"),
        ("max_sectors_kb", "1280"),
        ("iostats", "1"),
    ] {
        assert!(
            s.lines().any(|l| l.contains(k) && l.contains(v)),
            "{k} {v}:\n{s}"
        );
    }
    insta::assert_snapshot!(term.backend());
}

#[test]
fn t_lists_them_after_the_tunables_and_enter_edits_one() {
    let (_m, mut app) = app();
    press(&mut app, &chars("t"));
    let term = screen(&app, 80, 24);
    let s = text(&term);
    assert!(s.contains("queue settings next to the scheduler"), "{s}");
    assert!(s.contains("write throttling's read target"), "{s}");
    // iostats and max_hw_sectors_kb are shown in the pane, never offered.
    assert!(
        !s.lines().any(|l| l.contains("▶") && l.contains("iostats")),
        "{s}"
    );
    insta::assert_snapshot!(term.backend());
    // Down to wbt_lat_usec, the first after mq-deadline's 7 tunables.
    let n = match &app.overlay {
        Some(Overlay::Tunables(t)) => t.items.len(),
        o => panic!("{o:?}"),
    };
    press(&mut app, &vec![KeyCode::Down; n]);
    press(&mut app, &[KeyCode::Enter]);
    let e = match &app.overlay {
        Some(Overlay::Edit(e)) => e.clone(),
        o => panic!("no editor: {o:?}"),
    };
    assert_eq!(e.field.label(), "wbt_lat_usec");
    assert_eq!(e.current, "2000");
    // -2 is refused in the catalogue's words; -1 (the default) goes.
    press(&mut app, &chars("-2"));
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("wbt_lat_usec '-2' is out of range: -1 to"),
        "{s}"
    );
    press(&mut app, &[KeyCode::Backspace]);
    press(&mut app, &chars("1"));
    let ctl = press(&mut app, &[KeyCode::Enter]);
    let asked: Vec<_> = ctl
        .iter()
        .filter_map(|c| match c {
            Control::Live(LiveControl::Apply(r)) => Some(r.settings.knobs.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        [vec![("wbt_lat_usec".to_string(), "-1".to_string())]]
    );
}

/// max_sectors_kb is bounded by the device's max_hw_sectors_kb.
#[test]
fn max_sectors_kb_is_bounded_by_the_hardware() {
    let (_m, mut app) = app();
    press(&mut app, &chars("t"));
    let n = match &app.overlay {
        Some(Overlay::Tunables(t)) => {
            t.items.len()
                + t.knobs
                    .iter()
                    .position(|(k, _)| k == "max_sectors_kb")
                    .unwrap()
        }
        o => panic!("{o:?}"),
    };
    press(&mut app, &vec![KeyCode::Down; n]);
    press(&mut app, &[KeyCode::Enter]);
    press(&mut app, &chars("4096"));
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("out of range: 0 to 1280 KiB"), "{s}");
    assert!(s.contains("or 4 to 1280"), "{s}");
}
