//! `R` where the current directory is no place for a recording (`/`, not
//! writable, another user's): a question with the per-user state directory
//! prefilled (root: `/var/lib/blktune/recordings`), edited as text; Enter
//! asks the source to record there, Esc (alone or glued to the next key)
//! records nothing. In the user's own directory `R` records at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, Overlay};
use blktune::tui::command::Mode;
use blktune::tui::dialogs::record::Facts;
use blktune::tui::worker::protocol::{Control, Feed, LiveControl};
use blktune::tui::worker::recorder::RecordEvent;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::PathBuf;
use tui_fixture::*;

fn status(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

/// A started app whose `R` sees `cwd` (writable and owned as given).
fn app_in(cwd: &str, writable: bool, owned: bool, root: bool) -> App {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    app.record_facts = Some(Facts {
        cwd: Some(cwd.into()),
        writable,
        owned,
        root,
        xdg_state_home: None,
        home: Some("/home/ana".into()),
    });
    app
}

fn input(app: &App) -> String {
    match &app.overlay {
        Some(Overlay::RecordPath(r)) => r.input.clone(),
        o => panic!("no question where to record: {o:?}"),
    }
}

#[test]
fn r_from_slash_asks_where_offering_the_state_directory_and_enter_records_there() {
    let mut app = app_in("/", true, true, false);
    assert!(
        press(&mut app, &chars("R")).is_empty(),
        "nothing recorded yet"
    );
    assert_eq!(mode(&app), Mode::Text);
    let offer = input(&app);
    assert!(
        offer.starts_with("/home/ana/.local/state/blktune/blktune-testhost-")
            && offer.ends_with(".ndjson.gz"),
        "{offer}"
    );
    let s = text(&screen(&app, 80, 24));
    for want in [
        "record where?",
        "the current directory is /: record to",
        "/home/ana/.local/state/blktune/blktune-testhost-",
        "a missing directory is made (mode 0700)",
        "Enter record   Esc no recording",
    ] {
        assert!(s.contains(want), "{want}:\n{s}");
    }
    if let Some(Overlay::RecordPath(r)) = &mut app.overlay {
        // The offer carries the time; the snapshot a fixed one.
        r.input =
            "/home/ana/.local/state/blktune/blktune-testhost-20261128-193000.ndjson.gz".into();
    }
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
    // Letters are text here, not keys: q does not quit.
    press(&mut app, &[KeyCode::Char('u')]);
    let ctl = press_events(
        &mut app,
        &[KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL)],
    );
    assert!(ctl.is_empty());
    assert_eq!(input(&app), "");
    press(&mut app, &chars("/srv/rec/q.ndjson.gz"));
    assert!(!app.quit);
    let ctl = press(&mut app, &[KeyCode::Enter]);
    let path = PathBuf::from("/srv/rec/q.ndjson.gz");
    assert_eq!(
        ctl,
        [Control::Live(LiveControl::Record(Some(path.clone())))]
    );
    assert!(app.overlay.is_none());
    assert!(status(&app).contains("starting to record to /srv/rec/q.ndjson.gz"));
    // The source's answers: the session keeps every file it recorded to.
    app.on_feed(Feed::Record(RecordEvent::Started(path.clone())));
    assert_eq!(app.recording.as_ref(), Some(&path));
    app.on_feed(Feed::Record(RecordEvent::Stopped {
        path: path.clone(),
        samples: 3,
        changes: 0,
    }));
    let second = PathBuf::from("/srv/rec/second.ndjson.gz");
    app.on_feed(Feed::Record(RecordEvent::Started(second.clone())));
    assert_eq!(app.recordings, [path, second]);
}

#[test]
fn esc_records_nothing_alone_or_glued_to_enter() {
    let mut app = app_in("/", true, true, false);
    press(&mut app, &chars("R"));
    assert!(press(&mut app, &[KeyCode::Esc]).is_empty());
    assert!(app.overlay.is_none());
    assert!(status(&app).contains("not recording"), "{}", status(&app));
    // Esc then Enter in one read of the terminal arrives as Alt+Enter: the
    // Esc closes the question and the Enter confirms nothing.
    press(&mut app, &chars("R"));
    let ctl = press_events(&mut app, &[esc_then(KeyCode::Enter)]);
    assert!(ctl.is_empty(), "{ctl:?}");
    assert!(app.overlay.is_none());
    assert!(app.recording.is_none() && app.recordings.is_empty());
}

#[test]
fn the_question_says_why_and_roots_offer_is_var_lib() {
    for (cwd, writable, owned, why) in [
        ("/usr/lib", false, false, "/usr/lib is not writable"),
        ("/home/bob", true, false, "/home/bob is another user's"),
    ] {
        let mut app = app_in(cwd, writable, owned, false);
        press(&mut app, &chars("R"));
        let s = text(&screen(&app, 80, 24));
        assert!(s.contains(why), "{why}:\n{s}");
    }
    let mut app = app_in("/", true, true, true);
    press(&mut app, &chars("R"));
    assert!(input(&app).starts_with("/var/lib/blktune/recordings/blktune-testhost-"));
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("a missing directory is made (mode 0750)"), "{s}");
    // A relative path or a directory is refused; the question stays.
    press_events(
        &mut app,
        &[KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL)],
    );
    press(&mut app, &chars("rec.ndjson.gz"));
    assert!(press(&mut app, &[KeyCode::Enter]).is_empty());
    assert!(status(&app).contains("absolute path"), "{}", status(&app));
    assert_eq!(mode(&app), Mode::Text);
}

#[test]
fn in_the_users_own_directory_r_records_at_once() {
    let mut app = app_in("/home/ana/incident", true, true, false);
    match press(&mut app, &chars("R")).as_slice() {
        [Control::Live(LiveControl::Record(Some(p)))] => {
            assert_eq!(p.parent(), Some(std::path::Path::new("/home/ana/incident")));
            assert!(
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("blktune-testhost-")
            );
        }
        other => panic!("R sent {other:?}"),
    }
    assert!(app.overlay.is_none());
}
