//! Key sequences drive the app state: the picker, the editors and their
//! checks, read-only and missing queues, status messages, and changes,
//! undo and revert through the real tuner on a fake tree via the live
//! source thread. Devices coming and going: `devices.rs`; the probe: `probe.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{Overlay, StatusKind};
use blktune::tui::command::Mode;
use blktune::tui::worker::live::LiveSource;
use blktune::tui::worker::protocol::{ApplyKind, Control, Feed, LiveControl, Shared, ToWorker};
use blktune_core::diskstats::Counters;
use blktune_core::journal::Journal;
use blktune_core::sampler::Sampler;
use blktune_core::tuner::Tuner;
use crossterm::event::KeyCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tui_fixture::*;

pub(crate) fn status(app: &blktune::tui::app::App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

#[test]
fn picker_starts_on_the_active_scheduler_and_moves() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 3, &busy(4));
    assert_eq!(app.selected.as_deref(), Some("sda"));
    assert!(press(&mut app, &chars("s")).is_empty());
    let cursor = |app: &blktune::tui::app::App| match &app.overlay {
        Some(Overlay::Picker(p)) => p.options[p.cursor].clone(),
        o => panic!("no picker: {o:?}"),
    };
    assert_eq!(cursor(&app), "mq-deadline");
    press(&mut app, &[KeyCode::Down, KeyCode::Down, KeyCode::Down]);
    assert_eq!(cursor(&app), "bfq", "stops at the last entry");
    press(&mut app, &[KeyCode::Up]);
    assert_eq!(cursor(&app), "kyber");
    let ctl = press(&mut app, &[KeyCode::Enter]);
    assert!(app.overlay.is_none());
    match &ctl[..] {
        [Control::Live(LiveControl::Apply(r))] => {
            assert_eq!(r.device, "sda");
            assert_eq!(r.settings.scheduler.as_deref(), Some("kyber"));
            assert_eq!(r.kind, ApplyKind::Change);
        }
        c => panic!("{c:?}"),
    }
    assert_eq!(app.pending, 1);
    assert!(status(&app).contains("applying"), "{}", status(&app));
    // While it is in flight, another change is refused with a reason.
    assert!(press(&mut app, &chars("s")).is_empty());
    assert!(status(&app).contains("busy"), "{}", status(&app));
}

/// The source answers a change before its next snapshot; a picker opened in
/// between must already start on the scheduler the kernel read back.
#[test]
fn the_answer_to_a_change_updates_the_device_before_the_next_snapshot() {
    use blktune::tui::worker::protocol::{ApplyReport, ApplyRequest};
    use blktune_core::history::ChangeMark;
    use blktune_core::tuner::{Outcome, ValueChange, Wanted};
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 3, &busy(4));
    let ctl = press(
        &mut app,
        &[KeyCode::Char('s'), KeyCode::Down, KeyCode::Enter],
    );
    let [Control::Live(LiveControl::Apply(req))] = &ctl[..] else {
        panic!("{ctl:?}")
    };
    let before = app.selected_device().unwrap().queue.clone();
    let mut after = before.clone();
    after.scheduler.as_mut().unwrap().active = "kyber".into();
    after.tunables.clear();
    let mark = ChangeMark {
        device: "sda".into(),
        t: app.now,
        label: "mq-deadline→kyber".into(),
        before: Wanted::snapshot_of(&before),
        after: Wanted::snapshot_of(&after),
    };
    let outcome = Outcome {
        device: "sda".into(),
        changes: vec![ValueChange {
            attr: "scheduler".into(),
            before: "mq-deadline".into(),
            after: "kyber".into(),
        }],
        before,
        after,
        kernel_time: Duration::from_millis(3),
        stored: Vec::new(),
    };
    app.on_feed(Feed::Applied(Box::new(ApplyReport {
        request: ApplyRequest {
            id: req.id,
            device: req.device.clone(),
            diskseq: req.diskseq,
            settings: req.settings.clone(),
            kind: req.kind,
        },
        result: Ok((outcome, mark)),
    })));
    assert_eq!(app.pending, 0);
    assert_eq!(app.selected_device().unwrap().queue.active_label(), "kyber");
    assert!(press(&mut app, &chars("s")).is_empty());
    match &app.overlay {
        Some(Overlay::Picker(p)) => assert_eq!(p.options[p.cursor], "kyber"),
        o => panic!("no picker: {o:?}"),
    }
}

#[test]
fn esc_cancels_and_choosing_the_active_one_changes_nothing() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    assert!(press(&mut app, &[KeyCode::Char('s'), KeyCode::Esc]).is_empty());
    assert!(app.overlay.is_none());
    assert!(press(&mut app, &[KeyCode::Enter, KeyCode::Enter]).is_empty());
    assert!(status(&app).contains("already active"), "{}", status(&app));
}

#[test]
fn invalid_edits_are_refused_with_the_reason() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    press(&mut app, &chars("n"));
    assert_eq!(app.mode(), Mode::Text);
    let mut keys = vec![KeyCode::Backspace; 3];
    keys.extend(chars("5000"));
    keys.push(KeyCode::Enter);
    assert!(press(&mut app, &keys).is_empty());
    assert!(
        matches!(app.overlay, Some(Overlay::Edit(_))),
        "editor stays open"
    );
    assert!(
        status(&app).contains("out of range: 4 to 2048"),
        "{}",
        status(&app)
    );
    assert_eq!(app.status.as_ref().unwrap().kind, StatusKind::Error);
    let mut keys = vec![KeyCode::Backspace; 4];
    keys.extend(chars("64"));
    keys.push(KeyCode::Enter);
    match &press(&mut app, &keys)[..] {
        [Control::Live(LiveControl::Apply(r))] => assert_eq!(r.settings.nr_requests, Some(64)),
        c => panic!("{c:?}"),
    }
    // read_ahead_kb must be a page multiple; tunables of the active scheduler.
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    let mut keys = chars("r");
    keys.extend([KeyCode::Backspace; 3]);
    keys.extend(chars("6"));
    keys.push(KeyCode::Enter);
    assert!(press(&mut app, &keys).is_empty());
    assert!(status(&app).contains("page size"), "{}", status(&app));
    press(&mut app, &[KeyCode::Esc]);
    press(
        &mut app,
        &[
            KeyCode::Char('t'),
            KeyCode::Down,
            KeyCode::Down,
            KeyCode::Enter,
        ],
    );
    match &app.overlay {
        Some(Overlay::Edit(e)) => assert_eq!(e.field.label(), "front_merges"),
        o => panic!("{o:?}"),
    }
    let mut keys = vec![KeyCode::Backspace];
    keys.extend(chars("7"));
    keys.push(KeyCode::Enter);
    assert!(press(&mut app, &keys).is_empty());
    // The CLI's words: the one check of the scheduler catalogue.
    assert!(
        status(&app).contains("front_merges '7' is out of range: 0 to 1"),
        "{}",
        status(&app)
    );
}

/// Two loop-like disks with 128 hardware tags: one under none, one under
/// kyber with nr_requests above the depth.
fn loops() -> Machine {
    let mut none = blktune_core::fake::FakeDisk::new("loop0")
        .active("none")
        .hw_queue_depth(128)
        .dev(7, 0);
    none.nr_requests = 128;
    let mut kyber = blktune_core::fake::FakeDisk::new("loop1")
        .active("kyber")
        .hw_queue_depth(128)
        .dev(7, 1);
    kyber.nr_requests = 512;
    Machine::new(&[none, kyber])
}

#[test]
fn nr_requests_under_none_is_checked_against_the_hardware_depth_while_typing() {
    let mut m = loops();
    let mut app = m.app(None);
    m.run(&mut app, 2, &[]);
    assert_eq!(app.selected.as_deref(), Some("loop0"));
    assert_eq!(app.selected_device().unwrap().hw_queue_depth, Some(128));
    let mut keys = chars("n");
    keys.extend([KeyCode::Backspace; 3]);
    keys.extend(chars("20"));
    press(&mut app, &keys);
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("4 to 128 under none (hardware queue depth)"),
        "{s}"
    );
    assert!(s.contains("✓ valid"), "20 is fine:\n{s}");
    // One more digit and the same editor refuses it, before Enter.
    press(&mut app, &chars("0"));
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("✗ nr_requests '200' is out of range: 4 to 128 under none"),
        "{s}"
    );
    assert!(
        press(&mut app, &[KeyCode::Enter]).is_empty(),
        "nothing applied"
    );
    assert!(matches!(app.overlay, Some(Overlay::Edit(_))));
    assert!(
        status(&app).contains("4 to 128 under none; nothing was changed"),
        "{}",
        status(&app)
    );
    let mut keys = vec![KeyCode::Backspace; 3];
    keys.extend(chars("100"));
    keys.push(KeyCode::Enter);
    match &press(&mut app, &keys)[..] {
        [Control::Live(LiveControl::Apply(r))] => assert_eq!(r.settings.nr_requests, Some(100)),
        c => panic!("{c:?}"),
    }

    // Under kyber the same device takes up to 2048, and the picker says what
    // a switch to none does to its 512. (A fresh app: the change above is
    // still pending in this one.)
    let mut app = m.app(None);
    m.run(&mut app, 2, &[]);
    let mut keys = vec![KeyCode::Down, KeyCode::Char('n')];
    keys.extend([KeyCode::Backspace; 3]);
    keys.extend(chars("1024"));
    press(&mut app, &keys);
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("4 to 2048"), "{s}");
    assert!(s.contains("✓ valid"), "{s}");
    press(&mut app, &[KeyCode::Esc, KeyCode::Char('s')]);
    let s = text(&screen(&app, 80, 24));
    assert!(!s.contains("the switch"), "no note on the active one:\n{s}");
    press(&mut app, &[KeyCode::Up, KeyCode::Up]);
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("the switch sets nr_requests 512→128 (the hardware queue depth)"),
        "{s}"
    );
    press(&mut app, &[KeyCode::Down]);
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("the switch resets nr_requests and the tunables"),
        "{s}"
    );
}

#[test]
fn read_only_explains_instead_of_changing() {
    let mut m = Machine::three();
    let mut app = m.app(Some("not root"));
    m.run(&mut app, 2, &busy(4));
    for k in ["s", "n", "r", "t", "u", "U"] {
        assert!(press(&mut app, &chars(k)).is_empty(), "{k}");
        assert!(app.overlay.is_none(), "{k}");
        let s = status(&app);
        assert!(
            s.contains("read-only (not root)") && s.contains("nothing was changed"),
            "{k}: {s}"
        );
    }
    // No hint at a key that cannot change anything here; live, it is there.
    let hint = "no change yet (s: scheduler)";
    let shown = text(&screen(&app, 160, 48));
    assert!(!shown.contains(hint), "{shown}");
    let app = m.app(None);
    let shown = text(&screen(&app, 160, 48));
    assert!(shown.contains(hint), "{shown}");
}

#[test]
fn devices_without_a_queue_explain() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    press(&mut app, &[KeyCode::End, KeyCode::Char('s')]);
    assert_eq!(app.selected.as_deref(), Some("zram0"));
    assert!(app.overlay.is_none());
    assert!(
        status(&app).contains("has no I/O scheduler"),
        "{}",
        status(&app)
    );
}

/// A row whose settings are not read yet (rows past the first screen are
/// read over the first ticks): the change keys say so, never that the
/// device has no scheduler.
#[test]
fn a_row_whose_settings_are_not_read_yet_says_so() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    let mut devs = (*app.devices).clone();
    let sdb = devs.iter_mut().find(|d| d.name == "sdb").unwrap();
    sdb.queue = Default::default();
    app.devices = std::sync::Arc::new(devs);
    app.selected = Some("sdb".into());
    for k in ["s", "b", "n", "r", "e"] {
        press(&mut app, &chars(k));
        assert!(app.overlay.is_none(), "{k}");
        let st = status(&app);
        assert!(
            st.contains("'sdb': its queue settings are not read yet"),
            "{k}: {st}"
        );
        assert!(
            !st.contains("no I/O scheduler") && !st.contains("fewer than two"),
            "{st}"
        );
    }
}

/// What the status line says is about a moment: an info or done message
/// goes after 15 s of samples, an error when the selection moves on.
#[test]
fn status_messages_do_not_outstay_what_they_say() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    press(&mut app, &chars("o"));
    let sorted = status(&app);
    assert!(sorted.contains("sorted by"), "{sorted}");
    m.run(&mut app, 15, &busy(4));
    assert_eq!(status(&app), sorted, "gone too soon");
    m.run(&mut app, 1, &busy(4));
    assert_eq!(status(&app), "", "still there after 16 s");
    // An error stays however long, until the selection moves.
    press(&mut app, &chars("n"));
    press(&mut app, &[KeyCode::Backspace; 6]);
    press(&mut app, &chars("99999"));
    press(&mut app, &[KeyCode::Enter]);
    let refused = status(&app);
    assert!(refused.contains("out of range"), "{refused}");
    press(&mut app, &[KeyCode::Esc]);
    m.run(&mut app, 30, &busy(4));
    assert_eq!(status(&app), refused);
    // A key that moves nothing keeps it; one that moves the selection not.
    press(&mut app, &chars("?"));
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(status(&app), refused);
    press(&mut app, &[KeyCode::Down]);
    assert_eq!(status(&app), "");
}

/// Feed the app from the source until no change is pending, then do what the
/// kernel does after a scheduler write and wait for the app to see it.
fn settle(
    app: &mut blktune::tui::app::App,
    rx: &mpsc::Receiver<Feed>,
    ctl: &mpsc::Sender<ToWorker<LiveControl>>,
    m: &Machine,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while app.pending > 0 {
        assert!(Instant::now() < deadline, "no answer from the source");
        if let Ok(f) = rx.recv_timeout(Duration::from_millis(50)) {
            app.on_feed(f);
        }
    }
    for d in ["sda", "sdb"] {
        m.tree
            .settle(d, &["none", "mq-deadline", "kyber", "bfq"], 256)
            .unwrap();
    }
    ctl.send(LiveControl::Refresh.into()).unwrap();
    while app.devices.iter().any(|d| {
        d.queue
            .scheduler
            .as_ref()
            .is_some_and(|s| s.available.len() < 4)
    }) {
        assert!(Instant::now() < deadline, "no refresh from the source");
        if let Ok(f) = rx.recv_timeout(Duration::from_millis(50)) {
            app.on_feed(f);
        }
    }
}

#[test]
fn change_undo_and_revert_all_through_the_tuner() {
    let m = Machine::three();
    let c = Counters::default();
    m.tree
        .set_diskstats(&[("sda", 8, 0, c), ("sdb", 8, 16, c), ("zram0", 252, 0, c)])
        .unwrap();
    let journal = tempfile::tempdir().unwrap();
    let root = m.tree.root();
    let tuner = Tuner::new(root.clone(), Some(Journal::new(journal.path())));
    let (ftx, frx) = mpsc::channel();
    let (ctx, crx) = mpsc::channel();
    let handle = LiveSource::new(
        Sampler::new(root).unwrap(),
        Some(tuner),
        Duration::from_millis(100),
    )
    .spawn(ftx, crx)
    .unwrap();
    let mut app = m.app(None);
    while app.samples == 0 {
        app.on_feed(frx.recv_timeout(Duration::from_secs(60)).unwrap());
    }
    let active = |d: &str| {
        let line = std::fs::read_to_string(m.tree.dev_dir(d).join("queue/scheduler")).unwrap();
        blktune_core::device::SchedulerState::parse(&line)
            .unwrap()
            .active
    };
    let sched = || active("sda");
    let send = |ctl: Vec<Control>| {
        ctl.into_iter()
            .for_each(|c| ctx.send(c.to_live().unwrap()).unwrap())
    };

    let attr = |d: &str, a: &str| {
        std::fs::read_to_string(m.tree.dev_dir(d).join("queue").join(a))
            .unwrap()
            .trim()
            .to_string()
    };
    let edit = |key: char, value: &str| {
        let mut k = vec![KeyCode::Char(key)];
        k.extend([KeyCode::Backspace; 4]);
        k.extend(chars(value));
        k.push(KeyCode::Enter);
        k
    };

    // A change and its undo. (The fake tree does not emulate a scheduler
    // switch mid-write, so undoing a switch is covered by the tmux test.)
    send(press(&mut app, &edit('n', "64")));
    settle(&mut app, &frx, &ctx, &m);
    assert_eq!(attr("sda", "nr_requests"), "64", "status: {}", status(&app));
    assert!(
        status(&app).contains("sda: nr_requests 256→64"),
        "{}",
        status(&app)
    );
    let j = Journal::new(journal.path())
        .load("sda")
        .unwrap()
        .expect("original journalled");
    assert_eq!(j.original.nr_requests, Some(256));
    send(press(&mut app, &chars("u")));
    settle(&mut app, &frx, &ctx, &m);
    assert_eq!(
        attr("sda", "nr_requests"),
        "256",
        "status: {}",
        status(&app)
    );
    assert!(status(&app).starts_with("undo: sda"), "{}", status(&app));
    assert!(app.session().is_empty());
    // The one revert policy: back at the original, nothing is left to revert.
    assert!(
        Journal::new(journal.path()).load("sda").unwrap().is_none(),
        "u left the entry"
    );
    send(press(&mut app, &chars("u")));
    assert!(status(&app).contains("nothing to undo"), "{}", status(&app));

    // Changes on two devices, then revert everything.
    send(press(&mut app, &edit('n', "32")));
    settle(&mut app, &frx, &ctx, &m);
    send(press(&mut app, &edit('n', "48")));
    settle(&mut app, &frx, &ctx, &m);
    let mut keys = vec![KeyCode::Down];
    keys.extend(edit('r', "256"));
    send(press(&mut app, &keys));
    settle(&mut app, &frx, &ctx, &m);
    assert_eq!(
        attr("sdb", "read_ahead_kb"),
        "256",
        "status: {}",
        status(&app)
    );
    assert_eq!(app.session().len(), 2, "{}", status(&app));
    assert_eq!(
        app.session()[0].labels,
        ["nr_requests 256→32", "nr_requests 32→48"]
    );
    assert!(press(&mut app, &chars("U")).is_empty());
    assert!(matches!(app.overlay, Some(Overlay::Confirm { .. })));
    // Only y confirms: an Enter typed ahead changes nothing.
    assert!(press(&mut app, &[KeyCode::Enter]).is_empty());
    assert!(matches!(app.overlay, Some(Overlay::Confirm { .. })));
    send(press(&mut app, &chars("y")));
    settle(&mut app, &frx, &ctx, &m);
    assert_eq!(
        attr("sda", "nr_requests"),
        "256",
        "status: {}",
        status(&app)
    );
    assert_eq!(attr("sdb", "read_ahead_kb"), "128");
    assert!(app.session().is_empty());
    // After U the journal holds nothing of those devices (export would
    // otherwise still name them).
    assert!(
        Journal::new(journal.path()).list().unwrap().is_empty(),
        "U left entries: {:?}",
        Journal::new(journal.path()).list().unwrap()
    );
    // The status names every device, not only the last answer.
    assert_eq!(
        status(&app),
        "reverted 2 device(s) to their settings before this session: sda, sdb"
    );
    assert_eq!(app.marks["sda"].len(), 5, "every change stays marked");

    // A scheduler switch goes through the tuner and is marked.
    send(press(
        &mut app,
        &[
            KeyCode::Up,
            KeyCode::Char('s'),
            KeyCode::Down,
            KeyCode::Enter,
        ],
    ));
    settle(&mut app, &frx, &ctx, &m);
    assert_eq!(sched(), "kyber", "status: {}", status(&app));
    assert!(
        status(&app).contains("sda: mq-deadline→kyber"),
        "{}",
        status(&app)
    );
    assert_eq!(app.marks["sda"].last().unwrap().label, "mq-deadline→kyber");
    ctx.send(Shared::Stop.into()).unwrap();
    handle.join().unwrap();
}
