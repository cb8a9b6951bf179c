//! Who does the I/O and where it goes, in the TUI on a scripted machine:
//! the processes panel (`i`) at 60x20, 80x24, 120x40 and 200x50, its keys
//! (`i` and Esc close it, the worker is told), the not-root note, the
//! placement lines of the detail pane, and the live worker sampling
//! processes only while the panel is shown.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::App;
use blktune::tui::worker::live::LiveSource;
use blktune::tui::worker::procio::WhereIoFeed;
use blktune::tui::worker::protocol::{Control, Feed, LiveControl, Shared};
use blktune_core::diskstats::Counters;
use blktune_core::procio::{ProcessIo, ProcessSample};
use blktune_core::sampler::Sampler;
use blktune_core::topology::{DeviceNode, Topology, parse_mountinfo};
use crossterm::event::KeyCode;
use std::collections::BTreeMap;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};
use tui_fixture::*;

const MIB: f64 = 1024.0 * 1024.0;

fn proc_io(pid: u32, user: &str, cmd: &str, r: f64, w: f64, devs: &[&str]) -> ProcessIo {
    ProcessIo {
        pid,
        user: user.into(),
        command: cmd.into(),
        read_bps: r,
        write_bps: w,
        devices: devs.iter().map(|d| d.to_string()).collect(),
    }
}

/// The busiest processes of one interval, busiest first (as the engine ranks them).
fn sample(limited: bool) -> ProcessSample {
    ProcessSample {
        rows: vec![
            proc_io(
                977,
                "root",
                "dd if=/dev/zero of=/dev/sdb bs=1M oflag=direct status=none",
                0.0,
                200.0 * MIB,
                &["sdb"],
            ),
            proc_io(
                31337,
                "backup",
                "tar czf /srv/backup/home.tgz /home",
                40.0 * MIB,
                8.0 * MIB,
                &["sda1", "sdb"],
            ),
            proc_io(
                4242,
                "postgres",
                "postgres: checkpointer",
                12.0 * MIB,
                1.5 * MIB,
                &["sda1"],
            ),
            proc_io(1, "root", "/sbin/init", 0.0, 4096.0, &[]),
        ],
        interval: 1.0,
        limited,
    }
}

/// sda1 holds / (ext4), sdb is mounted whole on /srv/backup (xfs).
fn topology(m: &Machine) -> Arc<Topology> {
    let mut nodes: Vec<DeviceNode> = m.devices.iter().map(DeviceNode::from).collect();
    if let Some(sda) = nodes.iter_mut().find(|n| n.name == "sda") {
        sda.partitions = vec!["sda1".into()];
    }
    let mounts = parse_mountinfo(
        "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n\
         23 22 8:16 / /srv/backup rw - xfs /dev/sdb rw\n",
    );
    let parts = BTreeMap::from([((8, 1), ("sda1".to_string(), "sda".to_string()))]);
    Arc::new(Topology::build(&nodes, &mounts, &BTreeMap::new(), &parts))
}

/// A minute of the usual load, the placement, `i`, and two process samples.
fn shown(limited: bool) -> (Machine, App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    app.on_feed(Feed::WhereIo(WhereIoFeed::Placement(topology(&m))));
    m.run(&mut app, 60, &busy(4));
    let c = press(&mut app, &chars("i"));
    assert_eq!(c, [Control::Live(LiveControl::Processes(true))]);
    for _ in 0..2 {
        m.run(&mut app, 1, &busy(4));
        app.on_feed(Feed::WhereIo(WhereIoFeed::Processes(sample(limited))));
    }
    (m, app)
}

fn check_panel(s: &str) {
    assert!(s.contains("processes doing I/O now"), "{s}");
    assert!(s.contains("PID USER"), "{s}");
    // Numbers whole: the dd's 200 MiB/s, the tar's reads, postgres' 1.5M.
    let dd = s.lines().find(|l| l.contains(" 977 ")).unwrap();
    assert!(dd.contains("0    200M sdb "), "{dd}");
    let pg = s.lines().find(|l| l.contains(" 4242 ")).unwrap();
    assert!(pg.contains("12.0M    1.5M sda1 "), "{pg}");
    // The device title stays above the panel.
    assert!(s.contains("─ sda  "), "{s}");
}

#[test]
fn panel_at_60x20() {
    let (_m, app) = shown(false);
    let term = screen(&app, 60, 20);
    check_panel(&text(&term));
    insta::assert_snapshot!(term.backend());
}

#[test]
fn panel_at_80x24_not_root_says_only_your_own() {
    let (_m, app) = shown(true);
    let term = screen(&app, 80, 24);
    let s = text(&term);
    check_panel(&s);
    assert!(
        s.contains("not root: only your own processes are shown"),
        "{s}"
    );
    insta::assert_snapshot!(term.backend());
}

#[test]
fn panel_at_120x40() {
    let (_m, app) = shown(false);
    let term = screen(&app, 120, 40);
    let s = text(&term);
    check_panel(&s);
    assert!(!s.contains("not root"), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn panel_at_200x50() {
    let (_m, app) = shown(false);
    let term = screen(&app, 200, 50);
    let s = text(&term);
    check_panel(&s);
    // Wide: the whole command line.
    assert!(
        s.contains("dd if=/dev/zero of=/dev/sdb bs=1M oflag=direct status=none"),
        "{s}"
    );
    insta::assert_snapshot!(term.backend());
}

#[test]
fn i_and_esc_close_the_panel_and_tell_the_worker() {
    let (mut m, mut app) = shown(false);
    assert_eq!(
        press(&mut app, &chars("i")),
        [Control::Live(LiveControl::Processes(false))]
    );
    assert!(!text(&screen(&app, 80, 24)).contains("processes doing I/O now"));
    // Reopened: no rows of long ago, "measuring" until the next sample.
    assert_eq!(
        press(&mut app, &chars("i")),
        [Control::Live(LiveControl::Processes(true))]
    );
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("measuring…"), "{s}");
    assert!(!s.contains(" 977 "), "{s}");
    // Esc closes the panel first, then clears the filter.
    press(&mut app, &chars("/sd"));
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(app.filter, "sd");
    assert_eq!(
        press(&mut app, &[KeyCode::Esc]),
        [Control::Live(LiveControl::Processes(false))]
    );
    assert!(!app.where_io.shown);
    assert_eq!(app.filter, "sd");
    assert!(press(&mut app, &[KeyCode::Esc]).is_empty());
    assert_eq!(app.filter, "");
    // A late sample (it crossed the close on the channel) is dropped.
    m.run(&mut app, 1, &busy(4));
    app.on_feed(Feed::WhereIo(WhereIoFeed::Processes(sample(false))));
    assert!(app.where_io.sample.is_none());
}

#[test]
fn a_replay_has_no_processes_key() {
    use blktune::tui::command::{Mode, action_for};
    let i =
        crossterm::event::KeyEvent::new(KeyCode::Char('i'), crossterm::event::KeyModifiers::NONE);
    assert_eq!(action_for(Mode::Replay, &i), None);
    assert!(action_for(Mode::Main, &i).is_some());
}

#[test]
fn the_help_lists_i_and_a_wide_footer_hints_it() {
    let (_m, mut app) = shown(false);
    press(&mut app, &chars("i?"));
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("processes doing the most I/O now"), "{s}");
    press(&mut app, &[KeyCode::Esc]);
    let s = text(&screen(&app, 120, 40));
    assert!(s.lines().last().unwrap().contains("i procs"), "{s}");
}

#[test]
fn the_detail_pane_says_where_the_io_goes() {
    let (_m, mut app) = shown(false);
    press(&mut app, &chars("i"));
    let term = screen(&app, 80, 24);
    let s = text(&term);
    assert!(s.contains("where the I/O goes"), "{s}");
    assert!(s.contains("sda1 on / (ext4)"), "{s}");
    insta::assert_snapshot!(term.backend());
    // sdb, mounted whole (by %util the row above sda).
    press(&mut app, &[KeyCode::Up]);
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("sdb on /srv/backup (xfs)"), "{s}");
}

/// The live worker on a fake tree: no process sample while the panel is
/// hidden, one per tick while shown, none again once hidden.
#[test]
fn the_live_worker_samples_processes_only_while_shown() {
    let m = Machine::new(&[blktune_core::fake::FakeDisk::new("sda").dev(8, 0)]);
    m.tree
        .set_diskstats(&[("sda", 8, 0, Counters::default())])
        .unwrap();
    let (ftx, frx) = mpsc::channel();
    let (ctx, crx) = mpsc::channel();
    let handle = LiveSource::new(
        Sampler::new(m.tree.root()).unwrap(),
        None,
        Duration::from_millis(50),
    )
    .spawn(ftx, crx)
    .unwrap();
    // Counts process samples and snapshots over the next `snapshots` snapshots.
    let count = |snapshots: usize| {
        let (mut snaps, mut procs, mut placements) = (0, 0, 0);
        let deadline = Instant::now() + Duration::from_secs(30);
        while snaps < snapshots {
            assert!(Instant::now() < deadline, "the worker stopped sending");
            match frx.recv_timeout(Duration::from_secs(1)) {
                Ok(Feed::Snapshot(_)) => snaps += 1,
                Ok(Feed::WhereIo(WhereIoFeed::Processes(_))) => procs += 1,
                Ok(Feed::WhereIo(WhereIoFeed::Placement(_))) => placements += 1,
                _ => {}
            }
        }
        (procs, placements)
    };
    let (procs, placements) = count(8);
    assert_eq!(procs, 0, "hidden: no process sample");
    assert_eq!(placements, 1, "the placement once, at start");
    ctx.send(LiveControl::Processes(true).into()).unwrap();
    let (procs, _) = count(6);
    assert!(procs >= 4, "shown: a sample per tick ({procs} in 6 ticks)");
    ctx.send(LiveControl::Processes(false).into()).unwrap();
    // One tick may have been under way when the close arrived.
    count(2);
    let (procs, placements) = count(8);
    assert_eq!(procs, 0, "hidden again: no process sample");
    assert_eq!(placements, 0, "no placement per tick");
    ctx.send(Shared::Stop.into()).unwrap();
    handle.join().unwrap();
}
