//! The device table during an incident: three disks at 100 %util (the
//! worst by aqu-sz first), a loop device whose await jumped far above its
//! own baseline, names in natural order; snapshots at 60x20, 80x24,
//! 120x40 and 200x50, and the rules behind them.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, Hot, SortKey};
use blktune::tui::worker::protocol::Feed;
use blktune_core::diskstats::InFlight;
use blktune_core::fake::FakeDisk;
use blktune_core::sampler::Snapshot;
use blktune_core::topology::{DeviceNode, Mount, Topology};
use crossterm::event::KeyCode;
use ratatui::style::{Color, Modifier};
use std::collections::BTreeMap;
use std::sync::Arc;
use tui_fixture::*;

fn machine() -> Machine {
    Machine::new(&[
        FakeDisk::new("sda").dev(8, 0),
        FakeDisk::new("sdb")
            .dev(8, 16)
            .rotational(true)
            .active("bfq"),
        FakeDisk::new("sdc").dev(8, 32),
        FakeDisk::new("loop10").dev(7, 10).active("none"),
        FakeDisk::new("loop2").dev(7, 2).active("none"),
    ])
}

/// Loads of the incident; `loop10_ms` is loop10's read await.
fn incident(loop10_ms: u32) -> Vec<(&'static str, Load)> {
    vec![
        // All three at 100 %util; aqu-sz 2.0, 6.6 and 3.0.
        ("sda", load(800, 2, 40, 10, 100)),
        ("sdb", load(300, 20, 20, 30, 100)),
        ("sdc", load(500, 6, 0, 0, 100)),
        ("loop2", load(50, 1, 50, 1, 20)),
        ("loop10", load(200, loop10_ms, 0, 0, 30)),
    ]
}

/// A minute of the usual, then loop10 slows down to 9 ms.
fn incident_app() -> (Machine, App) {
    let mut m = machine();
    let mut app = m.app(None);
    m.run(&mut app, 60, &incident(1));
    m.run(&mut app, 4, &incident(9));
    (m, app)
}

fn rows(app: &App) -> Vec<String> {
    app.visible().iter().map(|d| d.name.clone()).collect()
}

#[test]
fn the_default_sort_is_util_and_ties_break_by_aqu_sz() {
    let (_m, mut app) = incident_app();
    // The hurting disks first, from the first frame on.
    assert_eq!(app.sort, SortKey::Util);
    assert_eq!(rows(&app), ["sdb", "sdc", "sda", "loop10", "loop2"]);
    let s = text(&screen(&app, 80, 24));
    assert!(s.lines().nth(1).unwrap().contains("↓%util"), "{s}");
    // > walks right from %util to the sparkline's await, < back.
    press(&mut app, &chars(">"));
    assert_eq!(app.sort, SortKey::Await);
    assert_eq!(rows(&app)[0], "sdb", "20 ms reads, 30 ms writes");
    press(&mut app, &chars("<<"));
    assert_eq!(app.sort, SortKey::Aqu);
    let s = text(&screen(&app, 80, 24));
    assert!(s.lines().nth(1).unwrap().contains("↓aqu-sz"), "{s}");
    // o from %util goes on to aqu-sz, and comes round to the name.
    app.sort = SortKey::Util;
    press(&mut app, &chars("o"));
    assert_eq!(app.sort, SortKey::Aqu);
    while app.sort != SortKey::Name {
        press(&mut app, &chars("o"));
    }
    assert_eq!(rows(&app), ["loop2", "loop10", "sda", "sdb", "sdc"]);
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("sorted by name (A to Z)"), "{s}");
}

/// Idle devices tie all the way down the chain: by %util they stay in
/// natural name order, so a quiet screen is steady.
/// The live screen starts before the first rates, every row tied, so the
/// first selection is the first name; the first rates sort the busiest
/// device to the top, and an untouched selection goes with the top row:
/// the screen opens on the device that hurts.
#[test]
fn the_screen_opens_on_the_busiest_device_once_rates_arrive() {
    let mut m = machine();
    let mut app = m.app_with(None, None);
    assert_eq!(app.selected.as_deref(), Some("loop2"));
    m.run(&mut app, 1, &incident(40));
    let top = rows(&app)[0].clone();
    assert_ne!(top, "loop2");
    assert_eq!(app.selected.as_deref(), Some(top.as_str()));
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains(&format!("▶{top} ")), "{s}");
    // Only once: later rates re-sort the rows, the selection stays put.
    m.run(&mut app, 3, &[("loop2", load(900, 50, 0, 0, 100))]);
    assert_eq!(app.selected.as_deref(), Some(top.as_str()));
}

/// A key before the first rates is the user's: the selection is then never
/// moved for them (nor when `--device` named one).
#[test]
fn a_key_or_device_before_the_first_rates_keeps_the_selection() {
    let mut m = machine();
    let mut app = m.app_with(None, None);
    press(&mut app, &[KeyCode::Down]);
    let chosen = app.selected.clone();
    assert!(chosen.is_some());
    m.run(&mut app, 1, &incident(40));
    assert_eq!(app.selected, chosen);

    let mut m = machine();
    let mut app = m.app_with(None, Some("sdc".into()));
    m.run(&mut app, 1, &incident(40));
    assert_ne!(rows(&app)[0], "sdc");
    assert_eq!(app.selected.as_deref(), Some("sdc"));
}

#[test]
fn idle_devices_keep_natural_name_order_under_the_default_sort() {
    let mut m = machine();
    let mut app = m.app(None);
    let idle: Vec<(&str, Load)> = ["sda", "sdb", "sdc", "loop2", "loop10"]
        .into_iter()
        .map(|n| (n, load(0, 0, 0, 0, 0)))
        .collect();
    for _ in 0..5 {
        m.run(&mut app, 1, &idle);
        assert_eq!(app.sort, SortKey::Util);
        assert_eq!(rows(&app), ["loop2", "loop10", "sda", "sdb", "sdc"]);
        assert_eq!(app.selected.as_deref(), Some("loop2"));
    }
}

#[test]
fn busy_and_slow_rows_are_marked_without_colour_and_red_with_it() {
    let (_m, mut app) = incident_app();
    for d in ["sda", "sdb", "sdc"] {
        assert_eq!(app.row_hot(d), Some(Hot::Busy), "{d}");
    }
    assert_eq!(app.row_hot("loop10"), Some(Hot::Slow));
    assert_eq!(app.row_hot("loop2"), None);
    // NO_COLOR: the marker column says it.
    let s = text(&screen(&app, 80, 24));
    let marked: Vec<&str> = s
        .lines()
        .filter(|l| l.starts_with("\"!"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(marked, ["\"!sdb", "\"!sdc", "\"!sda", "\"!loop10"], "{s}");
    // The selected row shows `▶`; when it is hot, the detail pane's title
    // says so, first (without colour, the only sign).
    assert!(!s.contains("! busy") && !s.contains("! slow"), "{s}");
    press(&mut app, &[KeyCode::Home]);
    for (dev, label) in [("sdb", "─ ! busy  sdb "), ("loop10", "─ ! slow  loop10 ")] {
        while app.selected_device().map(|d| d.name.as_str()) != Some(dev) {
            press(&mut app, &chars("j"));
        }
        let s = text(&screen(&app, 80, 24));
        assert!(s.contains(&format!("\"▶{dev} ")), "{s}");
        assert!(s.contains(label), "{s}");
    }
    // In colour a hot row (sdc; the selected row stays reversed) is red.
    app.color = true;
    let term = screen(&app, 80, 24);
    let buf = term.backend().buffer();
    let y = (0..buf.area.height)
        .find(|&y| buf[(1, y)].symbol() == "s" && buf[(3, y)].symbol() == "c")
        .unwrap();
    assert_eq!(buf[(1, y)].fg, Color::Red);
    assert!(buf[(1, y)].modifier.contains(Modifier::BOLD));
}

#[test]
fn sparklines_share_one_scale() {
    let (_m, app) = incident_app();
    let s = text(&screen(&app, 120, 40));
    // A row: the marker column, then the name.
    let line = |name: &str| {
        s.lines()
            .find(|l| {
                l.chars()
                    .skip(2)
                    .collect::<String>()
                    .starts_with(&format!("{name} "))
            })
            .unwrap()
            .to_string()
    };
    // loop2's 1 ms is low beside sdb's 30 ms, but not the idle bar.
    assert!(line("loop2").contains('▂') && !line("loop2").contains('█'));
    assert!(line("sdb").contains('█'), "{s}");
    // Where there is room the heading gives the scale.
    let wide = text(&screen(&app, 200, 50));
    assert!(
        wide.lines().nth(1).unwrap().contains("await 0-30.0ms"),
        "{wide}"
    );
}

#[test]
fn table_60x20() {
    // The default sort: %util, the hurting disks first.
    let (_m, app) = incident_app();
    insta::assert_snapshot!(screen(&app, 60, 20).backend());
}

#[test]
fn table_80x24() {
    // The default sort: %util, the hurting disks first.
    let (_m, app) = incident_app();
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn table_120x40() {
    // The default sort: %util, the hurting disks first.
    let (_m, app) = incident_app();
    let term = screen(&app, 120, 40);
    let head = text(&term).lines().nth(1).unwrap().to_string();
    assert!(head.contains("rMB/s") && head.contains("wMB/s"), "{head}");
    insta::assert_snapshot!(term.backend());
}

/// sda holds / (ext4); loop10 is backed by a file on it; the others hold nothing.
fn topology(machine: &Machine) -> Topology {
    let nodes: Vec<DeviceNode> = machine.devices.iter().map(DeviceNode::from).collect();
    let mounts = [Mount {
        major: 8,
        minor: 0,
        mount_point: "/".into(),
        fs_type: "ext4".into(),
        source: "/dev/sda".into(),
    }];
    let backing = BTreeMap::from([("loop10".to_string(), "/var/tmp/blktune/big.img".to_string())]);
    Topology::build(&nodes, &mounts, &backing, &BTreeMap::new())
}

#[test]
fn table_200x50() {
    let (m, mut app) = incident_app();
    app.where_io.topology = Arc::new(topology(&m));
    let term = screen(&app, 200, 50);
    let head = text(&term).lines().nth(1).unwrap().to_string();
    for h in [
        "rMB/s", "wMB/s", "rareq-sz", "wareq-sz", "inflight", "MOUNT",
    ] {
        assert!(head.contains(h), "{h}: {head}");
    }
    let s = text(&term);
    assert!(s.contains(" / ext4 "), "{s}");
    // The end of a long backing path, after a …, never a cut number.
    assert!(s.contains(" →sda:…/blktune/big.img "), "{s}");
    insta::assert_snapshot!(term.backend());
}

/// Set a device's I/Os in flight in a sample: diskstats' total and the split.
fn in_flight(snapshot: &mut Snapshot, dev: &str, total: u64, split: Option<InFlight>) {
    let st = snapshot.stats.get_mut(dev).unwrap();
    st.counters.in_flight = total;
    st.in_flight = split;
}

/// `/sys/block/X/inflight`'s two numbers, reads then writes: the wide
/// table's inflight column reads `3/1`, the detail pane `in flight r/w 3/1`;
/// where the split is not known (a replay) the total alone.
#[test]
fn in_flight_is_split_into_reads_and_writes() {
    let (mut m, mut app) = incident_app();
    let mut s = m.step(1.0, &incident(9));
    in_flight(
        &mut s,
        "sda",
        4,
        Some(InFlight {
            reads: 3,
            writes: 1,
        }),
    );
    in_flight(&mut s, "sdb", 7, None);
    app.on_feed(Feed::Snapshot(Box::new(s)));
    while app.selected.as_deref() != Some("sda") {
        press(&mut app, &chars("k"));
    }
    let term = screen(&app, 200, 50);
    let t = text(&term);
    let cells = |dev: &str| {
        let row = t.lines().find(|l| l.contains(&format!("{dev} "))).unwrap();
        row.split_whitespace().map(String::from).collect::<Vec<_>>()
    };
    assert!(cells("▶sda").contains(&"3/1".to_string()), "{t}");
    assert!(cells("!sdb").contains(&"7".to_string()), "{t}");
    assert!(t.contains("in flight r/w  3/1"), "{t}");
    insta::assert_snapshot!(term.backend());
}

/// What is in flight is the newest sample's: shown from the first sample
/// (a stuck queue at once, not an interval later), and a device whose line
/// is gone from diskstats shows none, never the count it had.
#[test]
fn in_flight_is_the_newest_samples() {
    let mut m = machine();
    let mut app = m.app_before_baseline(None, Some("sdb".into()));
    let mut first = m.step(1.0, &[]);
    first.interval = None;
    first.stats.get_mut("sdb").unwrap().counters.in_flight = 7;
    app.on_feed(Feed::Snapshot(Box::new(first)));
    let t = text(&screen(&app, 200, 50));
    assert!(t.contains("in flight  7"), "{t}");
    let mut s = m.step(1.0, &[]);
    s.stats.remove("sdb");
    app.on_feed(Feed::Snapshot(Box::new(s)));
    let t = text(&screen(&app, 200, 50));
    assert!(!t.contains("in flight"), "{t}");
}

/// `o`, `<` and `>` move only between the columns on screen: at 80x24 the
/// rows were also sorted by aqu-sz, rMB/s, ... with no column to show it.
#[test]
fn sort_keys_move_only_between_the_columns_on_screen() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    for (w, h) in [(80, 24), (200, 50)] {
        blktune::tui::event_loop::on_size(w, h, &mut app);
        let shown = app.columns().unwrap().to_vec();
        let mut seen = std::collections::BTreeSet::new();
        for keys in ["o", "<", ">"] {
            for _ in 0..40 {
                press(&mut app, &chars(keys));
                assert!(
                    shown.contains(&app.sort),
                    "{w}x{h}: {keys} sorted by {:?}, not a column on screen: {shown:?}",
                    app.sort
                );
                seen.insert(format!("{:?}", app.sort));
            }
        }
        // Every column on screen is reached.
        assert_eq!(seen.len(), shown.len(), "{w}x{h}: {seen:?} of {shown:?}");
        if w == 80 {
            assert!(!shown.contains(&SortKey::WMbs), "{shown:?}");
        } else {
            assert!(shown.contains(&SortKey::WMbs), "{shown:?}");
        }
    }
}

/// A window made narrower while the rows are sorted by a column it no
/// longer shows: the rows go back to the first sort, whose arrow is on
/// screen, and the status says why (they were ordered by a hidden column).
#[test]
fn a_resize_that_hides_the_sort_column_sorts_by_util_again() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    blktune::tui::event_loop::on_size(200, 50, &mut app);
    for _ in 0..40 {
        if app.sort == SortKey::WMbs {
            break;
        }
        press(&mut app, &chars("o"));
    }
    assert_eq!(app.sort, SortKey::WMbs);
    blktune::tui::event_loop::on_size(80, 24, &mut app);
    assert_eq!(app.sort, SortKey::Util);
    let t = text(&screen(&app, 80, 24));
    assert!(
        t.contains("sorted by %util: the wMB/s column is not on screen"),
        "{t}"
    );
    assert!(t.lines().nth(1).unwrap().contains("↓%util"), "{t}");

    // An error on the status line stays until read: the sort goes back
    // without a word rather than over it.
    blktune::tui::event_loop::on_size(200, 50, &mut app);
    for _ in 0..40 {
        if app.sort == SortKey::WMbs {
            break;
        }
        press(&mut app, &chars("o"));
    }
    for key in ["j", "j", "k", "k", "k"] {
        if app.selected.as_deref() == Some("sdb") {
            break;
        }
        press(&mut app, &chars(key));
    }
    assert_eq!(app.selected.as_deref(), Some("sdb"));
    m.tree.remove("sdb").unwrap();
    m.refresh();
    m.run(&mut app, 1, &busy(4));
    let error = app
        .status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default();
    assert!(error.contains("sdb"), "{error}");
    blktune::tui::event_loop::on_size(80, 24, &mut app);
    assert_eq!(app.sort, SortKey::Util);
    assert_eq!(app.status.as_ref().map(|s| s.text.clone()), Some(error));
}

/// Sorted by in flight, the rows with more I/Os in flight come first (a
/// row's count is looked up only under this sort).
#[test]
fn sorted_by_in_flight_the_busiest_queue_is_first() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    let mut s = m.step(1.0, &[]);
    s.stats.get_mut("sdb").unwrap().counters.in_flight = 9;
    app.on_feed(Feed::Snapshot(Box::new(s)));
    let names =
        |app: &App| -> Vec<String> { app.visible().iter().map(|d| d.name.clone()).collect() };
    assert_eq!(names(&app)[0], "sda", "by %util, ties in name order");
    app.sort = SortKey::InFlight;
    assert_eq!(names(&app)[0], "sdb");
}

/// Under load the count in flight at the tick is often 0: the detail
/// pane's line stays while the device did I/O in the interval (the pane
/// below it does not jump each second), and goes once it is idle.
#[test]
fn the_in_flight_line_stays_while_the_device_is_busy() {
    let (mut m, mut app) = incident_app();
    let mut s = m.step(1.0, &incident(9));
    in_flight(&mut s, "sda", 0, Some(InFlight::default()));
    app.on_feed(Feed::Snapshot(Box::new(s)));
    while app.selected.as_deref() != Some("sda") {
        press(&mut app, &chars("k"));
    }
    assert!(app.latest("sda").unwrap().r_s > 0.0, "sda did I/O");
    let t = text(&screen(&app, 200, 50));
    assert!(t.contains("in flight r/w  0/0"), "{t}");
    // Idle: nothing done, nothing in flight.
    let mut s = m.step(1.0, &[]);
    in_flight(&mut s, "sda", 0, Some(InFlight::default()));
    app.on_feed(Feed::Snapshot(Box::new(s)));
    assert_eq!(app.latest("sda").unwrap().r_s, 0.0, "sda idle");
    let t = text(&screen(&app, 200, 50));
    assert!(!t.contains("in flight"), "{t}");
}
