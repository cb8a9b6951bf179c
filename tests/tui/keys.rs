//! Keys must reach only the device the user is looking at (issue 11, items
//! 1-3): an Esc glued to the next key (crossterm reads `ESC x` in one read
//! as Alt+x), the filter, a device replaced under the same name, and a
//! dialog confirmed after its device stopped being the selected one. State
//! tests on the app, a few screens on ratatui's TestBackend, and the live
//! source on a fake tree for the last check before a write.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, Overlay};
use blktune::tui::command::Mode;
use blktune::tui::worker::live::LiveSource;
use blktune::tui::worker::protocol::{
    ApplyKind, ApplyReport, ApplyRequest, Control, Feed, LiveControl, Shared, ToWorker,
};
use blktune_core::diskstats::Counters;
use blktune_core::fake::FakeDisk;
use blktune_core::journal::Journal;
use blktune_core::sampler::Sampler;
use blktune_core::tuner::{Tuner, Wanted};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::mpsc;
use std::time::Duration;
use tui_fixture::*;

fn status(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

fn applies(ctl: &[Control]) -> Vec<&ApplyRequest> {
    ctl.iter()
        .filter_map(|c| match c {
            Control::Live(LiveControl::Apply(r)) => Some(r),
            _ => None,
        })
        .collect()
}

/// Two loop devices with diskseqs, loop0 selected, two samples in.
fn loops() -> (Machine, App) {
    let disk = |name: &str, minor, seq| {
        let mut d = FakeDisk::new(name).dev(7, minor);
        d.diskseq = Some(seq);
        d
    };
    let mut m = Machine::new(&[disk("loop0", 0, 5), disk("loop1", 1, 6)]);
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    assert_eq!(app.selected.as_deref(), Some("loop0"));
    (m, app)
}

// ---- item 1: Esc glued to the next key ------------------------------------

/// `s Down`, then `Escape Enter` in one packet: crossterm reads Alt+Enter.
/// The Esc closes the picker, and the Enter (in the main view: open the
/// picker, a change key) is not taken: nothing is applied, and the status
/// says the key did nothing (not "press it again": Enter would then open
/// the picker, not apply).
#[test]
fn esc_glued_to_enter_cancels_the_picker_and_applies_nothing() {
    let (_m, mut app) = loops();
    assert!(press(&mut app, &[KeyCode::Char('s'), KeyCode::Down]).is_empty());
    assert!(matches!(
        &app.overlay,
        Some(Overlay::Picker(p)) if p.cursor == 2
    ));
    let ctl = press_events(&mut app, &[esc_then(KeyCode::Enter)]);
    assert!(ctl.is_empty(), "{ctl:?}");
    assert!(app.overlay.is_none(), "{:?}", app.overlay);
    assert_eq!(app.pending, 0);
    let s = status(&app);
    assert!(
        s.contains("Esc and 'Enter' came together") && s.contains("'Enter' did nothing"),
        "{s}"
    );
    // The screen says so too.
    let screen = text(&screen(&app, 80, 24));
    assert!(screen.contains("took the Esc only"), "{screen}");
}

/// `n 6 4`, then `Escape Enter` in one packet: the editor closes, 64 is not applied.
#[test]
fn esc_glued_to_enter_cancels_the_editor_and_applies_nothing() {
    let (_m, mut app) = loops();
    let mut keys = vec![KeyCode::Char('n')];
    keys.extend([KeyCode::Backspace; 6]);
    keys.extend(chars("64"));
    assert!(press(&mut app, &keys).is_empty());
    match &app.overlay {
        Some(Overlay::Edit(e)) => assert_eq!(e.input, "64"),
        o => panic!("no editor: {o:?}"),
    }
    assert!(press_events(&mut app, &[esc_then(KeyCode::Enter)]).is_empty());
    assert!(app.overlay.is_none(), "{:?}", app.overlay);
    assert_eq!(app.pending, 0);
    // Esc glued to a digit: the digit is not typed into the closed editor,
    // and does not reopen anything.
    press(&mut app, &chars("n"));
    assert!(press_events(&mut app, &[esc_then(KeyCode::Char('4'))]).is_empty());
    assert!(app.overlay.is_none(), "{:?}", app.overlay);
}

/// An Alt+key pressed on its own (or an Esc glued to it in the main view)
/// never acts as a change key, nor confirms a question; moving is fine.
#[test]
fn alt_keys_never_change_or_confirm_anything() {
    let (_m, mut app) = loops();
    for c in ['s', 'n', 'r', 't', 'u', 'U', 'b', 'e', 'q', 'R'] {
        let ctl = press_events(&mut app, &[esc_then(KeyCode::Char(c))]);
        assert!(ctl.is_empty(), "Alt+{c}: {ctl:?}");
        assert!(app.overlay.is_none(), "Alt+{c} opened {:?}", app.overlay);
        assert!(!app.quit, "Alt+{c}");
        assert!(status(&app).contains("took the Esc only"), "Alt+{c}");
    }
    assert!(press_events(&mut app, &[esc_then(KeyCode::Enter)]).is_empty());
    assert!(app.overlay.is_none());
    let ctrl_alt_c = KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL | KeyModifiers::ALT,
    );
    press_events(&mut app, &[ctrl_alt_c]);
    assert!(!app.quit, "Esc glued to Ctrl-C: press it again");
    // Navigation after the Esc is safe and taken.
    press_events(&mut app, &[esc_then(KeyCode::Char('j'))]);
    assert_eq!(app.selected.as_deref(), Some("loop1"));
    press_events(&mut app, &[esc_then(KeyCode::Up)]);
    assert_eq!(app.selected.as_deref(), Some("loop0"));
}

/// In every question and dialog, Esc glued to its confirming key cancels.
#[test]
fn esc_glued_to_the_confirming_key_cancels_every_dialog() {
    let (_m, mut app) = loops();
    // The tunables list: Esc glued to Enter does not open the editor.
    press(&mut app, &chars("t"));
    assert!(matches!(app.overlay, Some(Overlay::Tunables(_))));
    // Enter there opens the value's editor: the footer says so, as the
    // dialog's own key line does.
    let shown = text(&screen(&app, 80, 24));
    let footer = shown.lines().last().unwrap();
    assert!(
        footer.contains("Enter edit") && !footer.contains("apply"),
        "{footer}"
    );
    assert!(press_events(&mut app, &[esc_then(KeyCode::Enter)]).is_empty());
    assert!(app.overlay.is_none(), "{:?}", app.overlay);
    // U's question: Esc glued to y reverts nothing.
    app.undo.insert(
        "loop0".into(),
        vec![blktune_core::history::ChangeMark {
            device: "loop0".into(),
            t: 1.0,
            label: "none→kyber".into(),
            before: Wanted::default(),
            after: Wanted::default(),
        }],
    );
    press(&mut app, &chars("U"));
    assert!(matches!(app.overlay, Some(Overlay::Confirm { .. })));
    assert!(press_events(&mut app, &[esc_then(KeyCode::Char('y'))]).is_empty());
    assert!(app.overlay.is_none(), "{:?}", app.overlay);
    // The export dialog: Esc glued to Enter writes nothing.
    press(&mut app, &chars("e"));
    assert!(matches!(app.overlay, Some(Overlay::Export(_))));
    let ctl = press_events(&mut app, &[esc_then(KeyCode::Enter)]);
    assert!(ctl.is_empty(), "{ctl:?}");
    assert!(app.overlay.is_none());
    // The shoot-out: Esc glued to Enter starts nothing.
    press(&mut app, &chars("b"));
    assert!(matches!(app.overlay, Some(Overlay::ShootOut(_))));
    let ctl = press_events(&mut app, &[esc_then(KeyCode::Enter)]);
    assert!(ctl.is_empty(), "{ctl:?}");
    assert!(app.overlay.is_none());
    // The filter: Esc glued to a letter clears it and types nothing.
    press(&mut app, &chars("/lo"));
    assert_eq!(app.mode(), Mode::Text);
    press_events(&mut app, &[esc_then(KeyCode::Char('x'))]);
    assert_eq!(app.filter, "");
    assert_eq!(app.mode(), Mode::Main);
}

// ---- item 2: the filter never moves the selection --------------------------

/// `--device loop0`, then `/` and a name only another device matches: loop0
/// stays selected but hidden, change keys refuse, and after Esc it is back.
#[test]
fn the_filter_hides_the_selection_but_never_moves_it() {
    let (mut m, mut app) = loops();
    let mut keys = chars("/loop1");
    keys.push(KeyCode::Enter);
    assert!(press(&mut app, &keys).is_empty());
    let names: Vec<&str> = app.visible().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["loop1"]);
    assert_eq!(app.selected.as_deref(), Some("loop0"), "not moved");
    assert_eq!(app.hidden_selection(), Some("loop0"));
    assert!(app.selected_device().is_none(), "no key acts on it");
    // Samples come and go; nothing moves.
    m.run(&mut app, 2, &busy(4));
    assert_eq!(app.selected.as_deref(), Some("loop0"));
    // Every device key refuses, naming the hidden device; Enter is s here.
    for k in [
        KeyCode::Char('s'),
        KeyCode::Enter,
        KeyCode::Char('n'),
        KeyCode::Char('r'),
        KeyCode::Char('t'),
        KeyCode::Char('u'),
        KeyCode::Char('b'),
        KeyCode::Char('e'),
    ] {
        assert!(press(&mut app, &[k]).is_empty(), "{k:?}");
        assert!(app.overlay.is_none(), "{k:?} opened {:?}", app.overlay);
        assert!(
            status(&app).contains("'loop0' is selected but hidden by the filter 'loop1'"),
            "{k:?}: {}",
            status(&app)
        );
    }
    let screen = text(&screen(&app, 80, 24));
    assert!(!screen.contains('▶'), "no row is marked:\n{screen}");
    assert!(
        screen.contains("loop0 (selected) is hidden by the filter: Esc shows it"),
        "{screen}"
    );
    let footer = screen.lines().nth(23).unwrap();
    assert!(
        !footer.contains("sched"),
        "no change keys offered: {footer}"
    );
    // Esc clears the filter: the selection is on loop0 again, s acts on it.
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(app.selected.as_deref(), Some("loop0"));
    assert_eq!(app.selected_device().unwrap().name, "loop0");
    press(&mut app, &chars("s"));
    match &app.overlay {
        Some(Overlay::Picker(p)) => assert_eq!(p.device, "loop0"),
        o => panic!("{o:?}"),
    }
    let ctl = press(&mut app, &[KeyCode::Down, KeyCode::Enter]);
    assert_eq!(applies(&ctl)[0].device, "loop0");
}

/// While typing the filter the selection does not follow the rows either;
/// a row the user then picks with ↓ is theirs, also after Esc.
#[test]
fn a_row_picked_under_the_filter_stays_picked() {
    let (_m, mut app) = loops();
    press(&mut app, &chars("/1"));
    assert_eq!(app.selected.as_deref(), Some("loop0"));
    assert_eq!(app.hidden_selection(), Some("loop0"));
    press(&mut app, &[KeyCode::Enter, KeyCode::Down]);
    assert_eq!(app.selected.as_deref(), Some("loop1"));
    assert!(app.hidden_selection().is_none());
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(app.selected.as_deref(), Some("loop1"));
    // A filter that shows the selection keeps it where it is.
    press(&mut app, &chars("/loop"));
    assert_eq!(app.selected.as_deref(), Some("loop1"));
    assert!(app.selected_device().is_some());
}

// ---- item 3: every change names the device the user confirmed it on ---------

/// `blktune --device loop0` while loop0 has no size (a detached loop device
/// keeps its sysfs entry): nothing is selected, never the first row instead.
#[test]
fn a_device_asked_for_but_not_shown_selects_nothing_else() {
    let mut m = Machine::new(&[
        FakeDisk::new("loop0").dev(7, 0).size_bytes(0),
        FakeDisk::new("loop1").dev(7, 1),
    ]);
    let mut app = App::new(blktune::tui::app::Config {
        host: blktune_core::host::HostInfo::read(&m.tree.root()),
        read_only: None,
        interval: Duration::from_secs(1),
        page_kb: 4,
        color: false,
        select: Some("loop0".into()),
    });
    m.run(&mut app, 2, &busy(4));
    assert_eq!(app.selected, None, "not loop1 in its place");
    assert!(
        status(&app).contains("'loop0' is not shown")
            && status(&app).contains("no device selected"),
        "{}",
        status(&app)
    );
    assert!(press(&mut app, &[KeyCode::Enter, KeyCode::Enter]).is_empty());
    assert!(app.overlay.is_none());
    press(&mut app, &[KeyCode::Down]);
    assert_eq!(app.selected.as_deref(), Some("loop1"));
}

/// A change carries the device's name and the diskseq it had when the user
/// chose it; so does an undo.
#[test]
fn every_change_carries_the_diskseq_it_was_chosen_on() {
    let (_m, mut app) = loops();
    let ctl = press(
        &mut app,
        &[KeyCode::Char('s'), KeyCode::Down, KeyCode::Enter],
    );
    let r = applies(&ctl);
    assert_eq!(
        (r[0].device.as_str(), r[0].diskseq, r[0].kind),
        ("loop0", Some(5), ApplyKind::Change)
    );
    app.pending = 0;
    press(&mut app, &[KeyCode::Down]);
    let mut keys = vec![KeyCode::Char('r')];
    keys.extend([KeyCode::Backspace; 6]);
    keys.extend(chars("256"));
    keys.push(KeyCode::Enter);
    let ctl = press(&mut app, &keys);
    let r = applies(&ctl);
    assert_eq!((r[0].device.as_str(), r[0].diskseq), ("loop1", Some(6)));
}

/// A dialog confirmed when its device is no longer the selected one (here
/// the selection was moved behind its back) closes and changes nothing.
#[test]
fn a_dialog_whose_device_is_no_longer_selected_closes_on_enter() {
    let (_m, mut app) = loops();
    for open in [
        vec![KeyCode::Char('s'), KeyCode::Down],
        vec![KeyCode::Char('n')],
    ] {
        press(&mut app, &open);
        assert!(app.overlay.is_some());
        app.selected = Some("loop1".into());
        let ctl = press(&mut app, &[KeyCode::Enter]);
        assert!(applies(&ctl).is_empty(), "{ctl:?}");
        assert!(app.overlay.is_none(), "{:?}", app.overlay);
        assert!(
            status(&app).contains("'loop0' is no longer the selected device: nothing was changed"),
            "{}",
            status(&app)
        );
        app.selected = Some("loop0".into());
    }
}

/// Replaced between two snapshots (new diskseq): the editor and the
/// tunables list close like the picker, and the shoot-out's setup too.
#[test]
fn every_device_dialog_closes_when_its_device_is_replaced() {
    for (i, open) in [
        vec![KeyCode::Char('n')],
        vec![KeyCode::Char('t')],
        vec![KeyCode::Char('b')],
        vec![KeyCode::Char('t'), KeyCode::Enter],
    ]
    .into_iter()
    .enumerate()
    {
        let (mut m, mut app) = loops();
        press(&mut app, &open);
        assert!(app.overlay.is_some(), "{i}: {}", status(&app));
        std::fs::write(m.tree.dev_dir("loop0").join("diskseq"), "9\n").unwrap();
        m.refresh();
        m.run(&mut app, 1, &busy(4));
        assert!(app.overlay.is_none(), "{i}: {:?}", app.overlay);
        assert!(
            status(&app).contains("'loop0' was replaced by another device of that name"),
            "{i}: {}",
            status(&app)
        );
        assert!(press(&mut app, &[KeyCode::Enter]).is_empty(), "{i}");
    }
}

/// The answer to a change made on a device that the app has since seen
/// replaced: its undo is not kept (it would reach the new device).
#[test]
fn an_answer_for_a_replaced_device_leaves_no_undo() {
    let (mut m, mut app) = loops();
    let ctl = press(
        &mut app,
        &[KeyCode::Char('s'), KeyCode::Down, KeyCode::Enter],
    );
    let req = applies(&ctl)[0].clone();
    std::fs::write(m.tree.dev_dir("loop0").join("diskseq"), "9\n").unwrap();
    m.refresh();
    m.run(&mut app, 1, &busy(4));
    let before = app.devices.iter().find(|d| d.name == "loop0").unwrap();
    let mut after = before.queue.clone();
    after.scheduler.as_mut().unwrap().active = "kyber".into();
    let outcome = blktune_core::tuner::Outcome {
        device: "loop0".into(),
        changes: vec![blktune_core::tuner::ValueChange {
            attr: "scheduler".into(),
            before: "mq-deadline".into(),
            after: "kyber".into(),
        }],
        before: before.queue.clone(),
        after,
        stored: Vec::new(),
        kernel_time: Duration::from_millis(3),
    };
    let mark = m.mark("loop0", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Applied(Box::new(ApplyReport {
        request: req,
        result: Ok((outcome, mark)),
    })));
    assert!(app.undo.is_empty(), "{:?}", app.undo);
    assert!(
        status(&app).contains("before it was replaced"),
        "{}",
        status(&app)
    );
    assert_eq!(
        app.devices
            .iter()
            .find(|d| d.name == "loop0")
            .unwrap()
            .queue
            .active_label(),
        "mq-deadline",
        "the new device's settings are not overwritten with the old one's"
    );
}

/// The last check is the source's, right before the tuner writes: a change
/// chosen on a device that was replaced since (the app's snapshot may be
/// seconds old: settings are re-read rarely) is refused, nothing written.
#[test]
fn the_source_refuses_a_change_for_a_replaced_device() {
    let mut disk = FakeDisk::new("loop0").dev(7, 0);
    disk.diskseq = Some(5);
    let m = Machine::new(&[disk]);
    m.tree
        .set_diskstats(&[("loop0", 7, 0, Counters::default())])
        .unwrap();
    let journal = tempfile::tempdir().unwrap();
    let root = m.tree.root();
    let tuner = Tuner::new(root.clone(), Some(Journal::new(journal.path())));
    let (ftx, frx) = mpsc::channel();
    let (ctx, crx) = mpsc::channel();
    let handle = LiveSource::new(
        Sampler::new(root).unwrap(),
        Some(tuner),
        Duration::from_secs(10),
    )
    .spawn(ftx, crx)
    .unwrap();
    let nr = || {
        std::fs::read_to_string(m.tree.dev_dir("loop0").join("queue/nr_requests"))
            .unwrap()
            .trim()
            .to_string()
    };
    let orig = nr();
    let ask = |id, diskseq| {
        ctx.send(ToWorker::Own(LiveControl::Apply(ApplyRequest {
            id,
            device: "loop0".into(),
            diskseq,
            settings: Wanted {
                nr_requests: Some(64),
                ..Wanted::default()
            },
            kind: ApplyKind::Change,
        })))
        .unwrap();
        loop {
            match frx.recv_timeout(Duration::from_secs(60)).unwrap() {
                Feed::Applied(r) if r.request.id == id => return r.result,
                _ => {}
            }
        }
    };
    // Replaced since the user chose: refused, nothing written or journalled.
    std::fs::write(m.tree.dev_dir("loop0").join("diskseq"), "9\n").unwrap();
    let e = ask(1, Some(5)).map(|_| ()).unwrap_err().to_string();
    assert!(
        e.contains("'loop0' was re-created") && e.contains("diskseq 5, now 9"),
        "{e}"
    );
    assert_eq!(nr(), orig);
    assert_eq!(std::fs::read_dir(journal.path()).unwrap().count(), 0);
    // The device the user chose: applied.
    assert!(ask(2, Some(9)).is_ok());
    assert_eq!(nr(), "64");
    ctx.send(Shared::Stop.into()).unwrap();
    handle.join().unwrap();
}

/// U's question names the devices it reverts; y reverts exactly those.
#[test]
fn revert_all_reverts_the_devices_it_named() {
    let (_m, mut app) = loops();
    let mark = |dev: &str| blktune_core::history::ChangeMark {
        device: dev.into(),
        t: 1.0,
        label: "none→kyber".into(),
        before: Wanted::default(),
        after: Wanted::default(),
    };
    app.undo.insert("loop0".into(), vec![mark("loop0")]);
    press(&mut app, &chars("U"));
    // A change of another device lands while the question is open.
    app.undo.insert("loop1".into(), vec![mark("loop1")]);
    let ctl = press(&mut app, &chars("y"));
    let r = applies(&ctl);
    assert_eq!(r.len(), 1, "{ctl:?}");
    assert_eq!((r[0].device.as_str(), r[0].diskseq), ("loop0", Some(5)));
}
