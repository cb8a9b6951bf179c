//! Key sequences drive the app state; changes go through the real tuner on a
//! fake tree via the live source thread.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{Overlay, SortKey, StatusKind};
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

fn status(app: &blktune::tui::app::App) -> String {
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

#[test]
fn navigation_filter_sort_and_hooks() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    // By %util (the default): sdb 95 %, sda 88 %, zram0; sda, the first
    // name, was selected before the first rates.
    assert_eq!(app.sort, SortKey::Util);
    assert_eq!(app.selected.as_deref(), Some("sda"));
    press(&mut app, &[KeyCode::Down]);
    assert_eq!(app.selected.as_deref(), Some("zram0"));
    press(&mut app, &[KeyCode::Char('k'), KeyCode::Char('k')]);
    assert_eq!(app.selected.as_deref(), Some("sdb"));
    press(&mut app, &[KeyCode::PageDown]);
    assert_eq!(app.selected.as_deref(), Some("zram0"));
    press(&mut app, &[KeyCode::Home]);
    assert_eq!(app.selected.as_deref(), Some("sdb"));
    press(&mut app, &[KeyCode::Char('j')]);
    assert_eq!(app.selected.as_deref(), Some("sda"));
    let mut keys = chars("/zr");
    keys.push(KeyCode::Enter);
    press(&mut app, &keys);
    let names: Vec<&str> = app.visible().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["zram0"]);
    // The filter hides sda but never moves the selection (tests/tui_keys.rs).
    assert_eq!(app.selected.as_deref(), Some("sda"));
    assert_eq!(app.hidden_selection(), Some("sda"));
    press(&mut app, &[KeyCode::Down]);
    assert_eq!(app.selected.as_deref(), Some("zram0"));
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(app.visible().len(), 3);
    assert_eq!(app.selected.as_deref(), Some("zram0"));
    press(&mut app, &chars("o"));
    assert_eq!(app.sort, SortKey::Aqu);
    assert_eq!(app.visible()[0].name, "sdb", "sdb's queue is the longest");
    // e and b open their dialogs (tests/tui_dialogs.rs); Esc closes them.
    // zram0 has no scheduler to compare: b says so.
    press(&mut app, &chars("b"));
    assert!(app.overlay.is_none());
    assert!(
        status(&app).contains("fewer than two I/O schedulers"),
        "{}",
        status(&app)
    );
    press(&mut app, &[KeyCode::Home]);
    for k in ["e", "b"] {
        press(&mut app, &chars(k));
        assert!(app.overlay.is_some(), "{k} opens a dialog");
        press(&mut app, &[KeyCode::Esc]);
        assert!(app.overlay.is_none());
    }
    // R asks the source to record to a new file named after the host.
    match press(&mut app, &chars("R")).as_slice() {
        [Control::Live(LiveControl::Record(Some(p)))] => {
            assert!(p.is_absolute(), "{p:?}");
            let name = p.file_name().unwrap().to_string_lossy();
            assert!(name.starts_with("blktune-testhost-"), "{p:?}");
            assert_eq!(p.parent(), std::env::current_dir().ok().as_deref());
        }
        other => panic!("R sent {other:?}"),
    }
    let ctl = press(&mut app, &chars("+-p"));
    assert_eq!(
        ctl,
        [
            Control::Live(LiveControl::Interval(Duration::from_millis(500))),
            Control::Live(LiveControl::Interval(Duration::from_secs(1))),
        ]
    );
    press(&mut app, &chars("q"));
    assert!(app.quit);
}

/// The safety rule: the selection follows the name and never lands on a
/// neighbour when its device goes, so the next key cannot change another device.
/// A loop device detached and re-attached between two snapshots keeps its
/// name but is another device (new diskseq): it counts as vanished, and
/// the old one's undo never reaches the new one.
#[test]
fn a_device_replaced_under_the_same_name_counts_as_vanished() {
    let disk = |name: &str, minor, seq| {
        let mut d = blktune_core::fake::FakeDisk::new(name).dev(7, minor);
        d.diskseq = Some(seq);
        d
    };
    let mut m = Machine::new(&[disk("loop0", 0, 5), disk("loop1", 1, 6)]);
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    assert_eq!(app.selected.as_deref(), Some("loop0"));
    app.undo.insert(
        "loop0".into(),
        vec![blktune_core::history::ChangeMark {
            device: "loop0".into(),
            t: 1.0,
            label: "none→kyber".into(),
            before: Default::default(),
            after: Default::default(),
        }],
    );
    press(&mut app, &chars("s"));
    assert!(matches!(app.overlay, Some(Overlay::Picker(_))));
    // Same number of samples, same name, new diskseq.
    std::fs::write(m.tree.dev_dir("loop0").join("diskseq"), "9\n").unwrap();
    m.refresh();
    m.run(&mut app, 1, &busy(4));
    assert!(app.overlay.is_none(), "the picker of the old device closes");
    assert_eq!(
        app.selected, None,
        "the new device is not selected by itself"
    );
    assert!(app.undo.is_empty(), "no undo onto another device");
    let s = status(&app);
    assert!(
        s.contains("'loop0' was replaced by another device of that name (new diskseq)"),
        "{s}"
    );
    for k in ["s", "u"] {
        assert!(press(&mut app, &chars(k)).is_empty(), "{k}");
    }
    // The next snapshot does not report it again; the user picks it anew.
    m.run(&mut app, 1, &busy(4));
    assert_eq!(app.selected, None);
    press(&mut app, &[KeyCode::Down]);
    assert!(app.selected.is_some());
    // Unchanged diskseqs are the same devices; a detach (size 0, and the
    // kernel gives a new diskseq) is a vanished device, not a replaced one.
    assert!(blktune::tui::app::replaced_devices(&m.devices, &m.devices).is_empty());
    let old = m.devices.clone();
    std::fs::write(m.tree.dev_dir("loop1").join("diskseq"), "12\n").unwrap();
    std::fs::write(m.tree.dev_dir("loop1").join("size"), "0\n").unwrap();
    m.refresh();
    assert!(blktune::tui::app::replaced_devices(&old, &m.devices).is_empty());
}

/// Detached loop nodes stay in /sys/block by the hundred with size 0: they
/// must not cut the history of the few real devices short (an unselected
/// device kept 24 s, so selecting it after a load showed empty charts).
#[test]
fn detached_nodes_do_not_shorten_the_history_of_the_devices_shown() {
    let mut disks = vec![
        blktune_core::fake::FakeDisk::new("sda").dev(8, 0),
        blktune_core::fake::FakeDisk::new("sdb").dev(8, 16),
    ];
    disks.extend((0..100).map(|i| {
        blktune_core::fake::FakeDisk::new(&format!("loop{i}"))
            .dev(7, i)
            .size_bytes(0)
    }));
    let mut m = Machine::new(&disks);
    let mut app = m.app(None);
    assert_eq!(app.selected.as_deref(), Some("sda"));
    m.run(&mut app, 60, &busy(4));
    let secs = |name: &str| {
        let p = app.histories[name].points();
        p.back().unwrap().t - p.front().unwrap().t
    };
    assert!(secs("sdb") >= 59.0, "sdb kept {} s", secs("sdb"));
    // Past the limit of devices with a size, unselected ones keep less.
    let mut disks: Vec<_> = (0..70)
        .map(|i| blktune_core::fake::FakeDisk::new(&format!("loop{i}")).dev(7, i))
        .collect();
    disks.push(blktune_core::fake::FakeDisk::new("sdb").dev(8, 16));
    let mut m = Machine::new(&disks);
    let mut app = m.app(None);
    m.run(&mut app, 60, &busy(4));
    let p = app.histories["sdb"].points();
    assert!(
        p.back().unwrap().t - p.front().unwrap().t < 30.0,
        "{} points",
        p.len()
    );
}

/// The histories are the table's rows: one per device with a size, none
/// for a partition's line, and again after a replay's reset, before the
/// device list comes anew (the next interval's points have a home).
#[test]
fn every_row_and_only_a_row_has_a_history_also_after_a_reset() {
    let mut m = Machine::new(&[blktune_core::fake::FakeDisk::new("sda")
        .dev(8, 0)
        .partitions(&["sda1"])]);
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    let names = |app: &blktune::tui::app::App| {
        let mut v: Vec<String> = app.histories.keys().cloned().collect();
        v.sort();
        v
    };
    assert_eq!(names(&app), ["sda"]);
    assert_eq!(app.histories["sda"].points().len(), 2);
    app.on_feed(Feed::Reset);
    let s = m.step(1.0, &busy(4));
    assert!(std::sync::Arc::ptr_eq(&s.devices, &app.devices));
    app.on_feed(Feed::Snapshot(Box::new(s)));
    assert_eq!(names(&app), ["sda"]);
    assert_eq!(app.histories["sda"].points().len(), 1);
}

#[test]
fn a_vanished_selected_device_leaves_nothing_selected() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    press(&mut app, &[KeyCode::Up]);
    assert_eq!(app.selected.as_deref(), Some("sdb"));
    press(&mut app, &chars("s"));
    assert!(matches!(app.overlay, Some(Overlay::Picker(_))));
    m.tree.remove("sdb").unwrap();
    m.refresh();
    m.run(&mut app, 1, &busy(4));
    assert_eq!(app.selected, None, "no neighbour is selected");
    assert!(app.selected_device().is_none());
    let s = status(&app);
    assert!(
        s.contains("'sdb' vanished")
            && s.contains("scheduler picker closed, nothing changed")
            && s.contains("no device selected"),
        "{s}"
    );
    assert!(
        app.overlay.is_none(),
        "the picker of a vanished device closes"
    );
    assert!(!app.histories.contains_key("sdb"));
    // Enter is `s` in the main view: it must not open a picker for another device.
    for k in ["s", "n", "r", "t", "u", "b", "e", "P"] {
        assert!(press(&mut app, &chars(k)).is_empty(), "{k}");
        assert!(app.overlay.is_none(), "{k} opened {:?}", app.overlay);
        assert!(status(&app).contains("no device selected"), "{k}");
    }
    assert!(app.probe.is_none(), "P turned on a probe of no device");
    assert!(press(&mut app, &[KeyCode::Enter, KeyCode::Enter]).is_empty());
    assert!(app.overlay.is_none());
    // More samples (and a re-sort) do not pick a device on their own.
    press(&mut app, &chars("o"));
    m.run(&mut app, 3, &busy(4));
    assert_eq!(app.selected, None);
    let small = text(&screen(&app, 80, 24));
    assert!(!small.contains('▶'), "no row is marked:\n{small}");
    assert!(
        small.contains("─ no device selected: ↑/↓ selects one"),
        "{small}"
    );
    let footer = small.lines().nth(23).unwrap();
    assert!(
        !footer.contains("sched") && footer.contains("? help  q quit"),
        "no change keys offered: {footer}"
    );
    // Wide enough for every hint: nor export and the probe, which need a device.
    let wide = text(&screen(&app, 160, 48));
    let footer = wide.lines().nth(47).unwrap();
    assert!(
        !footer.contains("export") && !footer.contains("probe") && footer.contains("record"),
        "no device keys offered: {footer}"
    );
    // Down takes the row now where sdb was; from then on keys work again.
    press(&mut app, &[KeyCode::Home]);
    assert_eq!(
        app.selected.as_deref(),
        Some(app.visible()[0].name.as_str())
    );
    // "no device selected" is no longer true: the message goes with it.
    assert_eq!(status(&app), "", "a stale message stays");
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

/// A real loop detach leaves /sys/block/loopN with size 0: same rule, and an
/// open editor closes instead of applying its value to another device.
#[test]
fn a_device_whose_size_drops_to_zero_closes_its_editor() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    assert_eq!(app.selected.as_deref(), Some("sda"));
    press(&mut app, &chars("n"));
    press(&mut app, &[KeyCode::Backspace, KeyCode::Char('6')]);
    assert!(matches!(app.overlay, Some(Overlay::Edit(_))));
    std::fs::write(m.tree.dev_dir("sda").join("size"), "0\n").unwrap();
    m.refresh();
    m.run(&mut app, 1, &busy(4));
    assert!(app.overlay.is_none(), "{:?}", app.overlay);
    assert_eq!(app.selected, None);
    let s = status(&app);
    assert!(
        s.contains("'sda' vanished: editor closed, nothing changed; no device selected"),
        "{s}"
    );
    // The Enter meant for the editor does nothing now.
    assert!(press(&mut app, &[KeyCode::Enter]).is_empty());
    assert!(app.overlay.is_none());
    assert_eq!(app.pending, 0);
    // Down selects the row now first (where sda was), Up stays there.
    press(&mut app, &[KeyCode::Down]);
    assert_eq!(app.selected.as_deref(), Some("sdb"));
}

/// Rows re-sort by %util every sample; the selection stays on its device.
#[test]
fn the_selection_follows_its_device_when_rows_re_sort() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    assert_eq!(app.sort, SortKey::Util, "the default sort");
    press(&mut app, &[KeyCode::Home]);
    assert_eq!(app.selected.as_deref(), Some("sdb"), "sdb is 95% busy");
    // Now sda is the busiest: the rows swap, the selection stays on sdb.
    let swapped = vec![
        ("sda", load(800, 4, 40, 10, 99)),
        ("sdb", load(20, 12, 150, 30, 5)),
        ("zram0", load(100, 0, 100, 0, 1)),
    ];
    m.run(&mut app, 2, &swapped);
    assert_eq!(app.visible()[0].name, "sda");
    assert_eq!(app.selected.as_deref(), Some("sdb"));
    let ctl = press(&mut app, &[KeyCode::Char('s'), KeyCode::Up, KeyCode::Enter]);
    match &ctl[..] {
        [Control::Live(LiveControl::Apply(r))] => assert_eq!(r.device, "sdb"),
        c => panic!("{c:?}"),
    }
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

#[test]
fn probe_follows_the_selection_and_its_figures_land_in_the_state() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    app.enable_probe(5.0);
    // The baseline (the first snapshot) selected sda.
    assert_eq!(
        app.probe_control(),
        Some(Control::Live(LiveControl::Probe(Some("sda".into()))))
    );
    assert_eq!(app.probe_control(), None, "said once");
    m.run(&mut app, 1, &busy(4));
    assert_eq!(app.probe_control(), None, "the same device");

    let st = probe_stats(5.0, &[0.2, 0.3, 0.3, 1.2, 2.0], None);
    m.run_probed(&mut app, 3, &busy(4), "sda", &st);
    let h = &app.probe.as_ref().unwrap().history["sda"];
    assert_eq!(h.len(), 3);
    let last = h.back().unwrap();
    let f = last.figures();
    assert_eq!(
        (f.n, f.p50, f.p99, f.max, last.reads_per_sec, last.errors),
        (5, Some(0.3), None, Some(2.0), 5.0, 0)
    );
    // On the sample timeline: the same ends and lengths as diskstats' points.
    let probe_t: Vec<(f64, f64)> = h.iter().map(|p| (p.t, p.itv)).collect();
    let disk_t: Vec<(f64, f64)> = app.histories["sda"]
        .points()
        .iter()
        .skip(1)
        .map(|p| (p.t, p.itv))
        .collect();
    assert_eq!(probe_t, disk_t);
    assert!(!app.probe.as_ref().unwrap().history.contains_key("sdb"));

    // Moving the selection re-targets the probe, in the key's own answer
    // (by %util sdb is the row above sda).
    assert_eq!(
        press(&mut app, &[KeyCode::Up]),
        vec![Control::Live(LiveControl::Probe(Some("sdb".into())))]
    );
    assert_eq!(
        press(&mut app, &[KeyCode::Down, KeyCode::Up]),
        vec![
            Control::Live(LiveControl::Probe(Some("sda".into()))),
            Control::Live(LiveControl::Probe(Some("sdb".into())))
        ]
    );
    // Keys that leave the selection alone say nothing to the probe: a sort
    // (by aqu-sz: sdb first) keeps it, and Up at the top moves nothing.
    assert!(press(&mut app, &chars("o")).is_empty());
    assert!(press(&mut app, &[KeyCode::Up]).is_empty());
    assert_eq!(
        press(&mut app, &[KeyCode::Down]),
        vec![Control::Live(LiveControl::Probe(Some("sda".into())))]
    );
    // Typing a filter never moves the selection, nor the probe; the row
    // the user then picks under it does, and stays picked after Esc.
    let mut ctl = press(&mut app, &chars("/sdb"));
    ctl.extend(press(&mut app, &[KeyCode::Enter]));
    assert!(ctl.is_empty(), "{ctl:?}");
    assert_eq!(app.selected.as_deref(), Some("sda"));
    let ctl = press(&mut app, &[KeyCode::Down, KeyCode::Esc]);
    assert_eq!(
        ctl,
        vec![Control::Live(LiveControl::Probe(Some("sdb".into())))]
    );
    assert_eq!(app.selected.as_deref(), Some("sdb"));
    m.run_probed(&mut app, 1, &busy(4), "sdb", &st);
    assert!(app.probe.as_ref().unwrap().latest("sdb").is_some());
    // A vanished device leaves nothing selected and stops the probe; the
    // event loop asks probe_control() after every batch of feeds.
    m.tree.remove("sdb").unwrap();
    m.refresh();
    m.run(&mut app, 1, &busy(4));
    assert_eq!(app.selected, None);
    assert_eq!(
        app.probe_control(),
        Some(Control::Live(LiveControl::Probe(None)))
    );
    let ctl = press(&mut app, &[KeyCode::Down]);
    let now = app.selected.clone().unwrap();
    assert_ne!(now, "sdb");
    assert_eq!(
        ctl,
        vec![Control::Live(LiveControl::Probe(Some(now.clone())))]
    );
    assert!(
        !app.probe.as_ref().unwrap().history.contains_key("sdb"),
        "a vanished device's probe history goes"
    );

    // An error shows up as the newest point's error, not as a crash.
    let denied = probe_stats(0.0, &[], Some("cannot open /dev/X for reading"));
    m.run_probed(&mut app, 1, &busy(4), &now, &denied);
    let p = app.probe.as_ref().unwrap().latest(&now).unwrap();
    assert_eq!(p.error.as_deref(), Some("cannot open /dev/X for reading"));
    assert_eq!((p.figures().n, p.errors), (0, 5));
}

#[test]
fn probe_off_has_no_state_and_sends_nothing() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    assert!(app.probe.is_none());
    assert_eq!(app.probe_control(), None);
    assert!(press(&mut app, &[KeyCode::Down, KeyCode::Down]).is_empty());
    // Figures that arrive anyway are dropped.
    let st = probe_stats(5.0, &[0.2, 0.3, 0.3, 1.2, 2.0], None);
    m.run_probed(&mut app, 2, &busy(4), "zram0", &st);
    assert!(app.probe.is_none());
    assert!(app.probe_compare("sda", 0).is_none());
}

#[test]
fn live_source_probe_error_reaches_the_app_without_a_crash() {
    // A disk in the fake tree has no node in /dev: the probe cannot open it,
    // like a user who may not open /dev/X; the error comes back as figures.
    let name = "blkprobetest0";
    assert!(!std::path::Path::new("/dev").join(name).exists());
    let m = Machine::new(&[blktune_core::fake::FakeDisk::new(name).dev(8, 0)]);
    m.tree
        .set_diskstats(&[(name, 8, 0, Counters::default())])
        .unwrap();
    let root = m.tree.root();
    let (ftx, frx) = mpsc::channel();
    let (ctx, crx) = mpsc::channel();
    let handle = LiveSource::new(
        Sampler::new(root).unwrap(),
        None,
        Duration::from_millis(100),
    )
    .with_probe_rate(20.0)
    .spawn(ftx, crx)
    .unwrap();
    let mut app = m.app(Some("--read-only"));
    app.enable_probe(20.0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut error = None;
    while error.is_none() {
        assert!(Instant::now() < deadline, "no probe error came back");
        if let Ok(f) = frx.recv_timeout(Duration::from_millis(50)) {
            app.on_feed(f);
        }
        if let Some(c) = app.probe_control() {
            ctx.send(c.to_live().unwrap()).unwrap();
        }
        error = app
            .probe
            .as_ref()
            .and_then(|p| p.latest(name))
            .and_then(|p| p.error.clone());
    }
    let e = error.unwrap();
    assert!(
        e.contains(&format!("cannot open /dev/{name} for reading")),
        "{e}"
    );
    ctx.send(Shared::Stop.into()).unwrap();
    handle.join().unwrap();
}

#[test]
fn p_turns_the_probe_on_and_off_in_the_live_view_only() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    app.probe_rate = 2.0;
    m.run(&mut app, 2, &busy(4));
    assert!(app.probe.is_none());
    // On: at the configured rate, pointed at the selected device at once.
    assert_eq!(
        press(&mut app, &chars("P")),
        vec![Control::Live(LiveControl::Probe(Some("sda".into())))]
    );
    assert_eq!(app.probe.as_ref().unwrap().rate, 2.0);
    assert!(
        status(&app).contains("probe on: 2.0 read-only"),
        "{}",
        status(&app)
    );
    let st = probe_stats(2.0, &[0.3, 2.0], None);
    m.run_probed(&mut app, 2, &busy(4), "sda", &st);
    assert!(text(&screen(&app, 80, 24)).contains("probe: 2.0/s direct 4 KiB reads"));
    // Off: the source is told to stop, and nothing of it is left on screen.
    assert_eq!(
        press(&mut app, &chars("P")),
        vec![Control::Live(LiveControl::Probe(None))]
    );
    assert!(app.probe.is_none());
    assert_eq!(status(&app), "probe off");
    let s = text(&screen(&app, 80, 24));
    assert!(!s.contains("direct 4 KiB") && !s.contains("p99"), "{s}");
    assert!(press(&mut app, &[KeyCode::Down]).is_empty());
    // Read-only mode allows it: it only reads.
    let mut app = m.app(Some("not root"));
    m.run(&mut app, 1, &busy(4));
    assert_eq!(
        press(&mut app, &chars("P")),
        vec![Control::Live(LiveControl::Probe(Some("sda".into())))]
    );
    // A replay has no such key.
    app.on_feed(Feed::Position(
        blktune::tui::worker::protocol::ReplayPosition {
            at: 0.0,
            total: 10.0,
            speed: 1.0,
            paused: false,
            ended: false,
        },
    ));
    assert_eq!(app.mode(), Mode::Replay);
    assert!(press(&mut app, &chars("P")).is_empty());
    assert!(app.probe.is_some(), "P did nothing in the replay");
}

/// A device with a size but no line in diskstats (the moment it came)
/// still gets its interval, without data, next to the others' figures.
#[test]
fn a_device_missing_from_diskstats_gets_a_point_without_data() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    let mut s = m.step(1.0, &busy(4));
    s.stats.remove("sdb");
    app.on_feed(Feed::Snapshot(Box::new(s)));
    let last = |name: &str| app.histories[name].last().cloned().unwrap();
    assert!(last("sdb").stats.is_none());
    assert_eq!(last("sdb").t, last("sda").t);
    assert!(last("sda").stats.is_some());
}
