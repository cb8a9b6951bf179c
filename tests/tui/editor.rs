//! The value editor (issue 16, item 9): the first typed character replaces
//! the prefilled value, Ctrl-U clears, and the editor's key line is the
//! footer's (one list of keys).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, Overlay};
use blktune::tui::worker::protocol::{Control, LiveControl};
use blktune_core::fake::FakeDisk;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_fixture::*;

fn app() -> (Machine, App) {
    let mut m = Machine::new(&[FakeDisk::new("sda").dev(8, 0)]);
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    (m, app)
}

fn input(app: &App) -> String {
    match &app.overlay {
        Some(Overlay::Edit(e)) => e.input.clone(),
        o => panic!("no editor: {o:?}"),
    }
}

#[test]
fn the_first_typed_character_replaces_the_prefilled_value() {
    let (_m, mut app) = app();
    press(&mut app, &chars("r"));
    let now = input(&app);
    assert!(!now.is_empty() && now != "-", "prefilled: {now}");
    let screen = text(&screen(&app, 80, 24));
    assert!(screen.contains("typing replaces it"), "{screen}");
    press(&mut app, &chars("1024"));
    assert_eq!(input(&app), "1024", "not appended to {now}");
    // Later characters append.
    press(&mut app, &chars("0"));
    assert_eq!(input(&app), "10240");
    let ctl = press(&mut app, &[KeyCode::Enter]);
    let asked: Vec<_> = ctl
        .iter()
        .filter_map(|c| match c {
            Control::Live(LiveControl::Apply(r)) => Some(r.settings.read_ahead_kb),
            _ => None,
        })
        .collect();
    assert_eq!(asked, [Some(10240)]);
}

#[test]
fn backspace_edits_the_prefilled_value_and_ctrl_u_clears_it() {
    let (_m, mut app) = app();
    press(&mut app, &chars("r"));
    let now = input(&app);
    press(&mut app, &[KeyCode::Backspace]);
    assert_eq!(input(&app), now[..now.len() - 1]);
    press(&mut app, &chars("9"));
    assert_eq!(input(&app), format!("{}9", &now[..now.len() - 1]));
    press_events(
        &mut app,
        &[KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL)],
    );
    assert_eq!(input(&app), "");
    press(&mut app, &chars("64"));
    assert_eq!(input(&app), "64");
}

#[test]
fn the_editor_and_the_footer_name_the_same_keys() {
    let (_m, mut app) = app();
    press(&mut app, &chars("r"));
    let screen = text(&screen(&app, 100, 30));
    let lines: Vec<&str> = screen.lines().collect();
    let footer = lines.last().unwrap();
    for hint in ["Enter apply", "Esc cancel", "Bksp delete", "Ctrl-U clear"] {
        assert!(footer.contains(hint), "footer: {footer}");
        assert!(
            lines.iter().filter(|l| l.contains(hint)).count() >= 2,
            "dialog and footer both say {hint}:\n{screen}"
        );
    }
}
