//! The rows as devices come, go, grow, shrink and re-sort: navigation, the
//! filter and the sort, the selection that follows its device, histories
//! that belong to exactly the rows shown.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use crate::state::status;
use blktune::tui::app::{Overlay, SortKey};
use blktune::tui::worker::protocol::{Control, Feed, LiveControl};
use crossterm::event::KeyCode;
use std::time::Duration;
use tui_fixture::*;

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
