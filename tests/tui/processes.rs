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
    assert!(s.contains("processes") && s.contains("approximate"), "{s}");
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
    assert!(!text(&screen(&app, 80, 24)).contains("approximate"));
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

/// A replay has `i` too: who did the I/O, as recorded.
#[test]
fn a_replay_has_the_who_key() {
    use blktune::tui::command::{Mode, action_for};
    let i =
        crossterm::event::KeyEvent::new(KeyCode::Char('i'), crossterm::event::KeyModifiers::NONE);
    assert_eq!(action_for(Mode::Replay, &i), action_for(Mode::Main, &i));
    assert!(action_for(Mode::Main, &i).is_some());
}

#[test]
fn the_help_lists_i_and_a_wide_footer_hints_it() {
    let (_m, mut app) = shown(false);
    press(&mut app, &chars("i?"));
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("who does the device's I/O"), "{s}");
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

/// What the kernel attributed on sda in one interval: fio in a test
/// cgroup, dd in a login session, write-back charged to no cgroup, and the
/// rest (requests started before the panel opened).
fn who_rows() -> blktune_core::who::WhoByDevice {
    use blktune_core::who::{DeviceWho, WhoRow};
    let row = |pid: Option<u32>, name: &str, cgroup: Option<&str>, r_s: f64, w_s: f64| WhoRow {
        pid,
        name: name.into(),
        cgroup: cgroup.map(Into::into),
        r_s,
        w_s,
        o_s: 0.0,
        rkb_s: r_s * 4.0,
        wkb_s: w_s * 64.0,
        share: Some((r_s + w_s) / 42_500.0 * 100.0),
        r_p99: (r_s >= 100.0).then_some(6.56),
        r_n: r_s as u64,
        io_some: None,
        io_full: None,
        io_avg10: false,
    };
    let fio = row(
        Some(31865),
        "fio",
        Some("/blktune-test-4242"),
        41_200.0,
        0.0,
    );
    let dd = row(
        Some(1234),
        "dd",
        Some("/user.slice/user-0.slice/session-3.scope"),
        0.0,
        812.0,
    );
    let wb = row(None, "write-back", None, 0.0, 20.0);
    let mut cg_fio = fio.clone();
    (cg_fio.pid, cg_fio.name) = (None, "blktune-test-4242".into());
    (cg_fio.io_some, cg_fio.io_full) = (Some(12.3), Some(3.1));
    let mut cg_dd = dd.clone();
    (cg_dd.pid, cg_dd.name) = (None, "session-3.scope".into());
    let mut cg_wb = wb.clone();
    cg_wb.pid = None;
    BTreeMap::from([(
        "sda".to_string(),
        DeviceWho {
            processes: vec![fio, dd, wb],
            cgroups: vec![cg_fio, cg_dd, cg_wb],
            rest_s: 468.0,
            rest_share: Some(1.1),
        },
    )])
}

/// The usual load, `i`, and two intervals of the kernel's attribution.
fn shown_from_the_kernel() -> (Machine, App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 60, &busy(4));
    press(&mut app, &chars("i"));
    for _ in 0..2 {
        m.run(&mut app, 1, &busy(4));
        app.on_feed(Feed::WhereIo(WhereIoFeed::Who(who_rows())));
    }
    (m, app)
}

/// The selected device's busiest process first, with its cgroup, share and
/// r_p99; the rest; the cgroups with their pressure.
fn check_kernel_view(s: &str) {
    assert!(s.contains("who does the I/O on sda"), "{s}");
    let lines: Vec<&str> = s.lines().collect();
    let head = lines.iter().position(|l| l.contains("PROCESS")).unwrap();
    let first = lines[head + 1];
    assert!(first.contains("fio") && first.contains("31865"), "{first}");
    assert!(first.contains("blktune-test-4242"), "{first}");
    assert!(
        first.contains("41k") && first.contains("97%") && first.contains("6.56"),
        "{first}"
    );
    let dd = lines.iter().find(|l| l.contains(" 1234 ")).unwrap();
    assert!(dd.contains("session-3.scope") && dd.contains("n=0"), "{dd}");
    let wb = lines.iter().find(|l| l.contains("write-back")).unwrap();
    assert!(wb.contains(" - "), "{wb}");
    assert!(s.contains("(rest)"), "{s}");
    let cg = lines
        .iter()
        .position(|l| l.contains("CGROUP") && l.contains("PSI"))
        .unwrap();
    assert!(
        lines[cg + 1].contains("blktune-test-4242") && lines[cg + 1].contains("12%/3%"),
        "{}",
        lines[cg + 1]
    );
    assert!(!s.contains("approximate"), "{s}");
}

#[test]
fn kernel_view_at_80x24() {
    let (_m, app) = shown_from_the_kernel();
    let term = screen(&app, 80, 24);
    check_kernel_view(&text(&term));
    insta::assert_snapshot!(term.backend());
}

#[test]
fn kernel_view_at_120x40() {
    let (_m, app) = shown_from_the_kernel();
    let term = screen(&app, 120, 40);
    check_kernel_view(&text(&term));
    insta::assert_snapshot!(term.backend());
}

#[test]
fn kernel_view_at_60x20_keeps_the_numbers() {
    let (_m, app) = shown_from_the_kernel();
    let term = screen(&app, 60, 20);
    let s = text(&term);
    let first = s.lines().find(|l| l.contains("fio")).unwrap();
    assert!(first.contains("41k") && first.contains("97%"), "{first}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn kernel_view_follows_the_selection() {
    let (_m, mut app) = shown_from_the_kernel();
    // sdb, the row above sda: busy, but nothing attributed to it.
    press(&mut app, &[KeyCode::Up]);
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("who does the I/O on sdb"), "{s}");
    assert!(s.contains("sdb: none of its requests"), "{s}");
    assert!(!s.contains("fio"), "{s}");
}

/// Without the kernel's attribution the `/proc` view comes back and says
/// it is approximate.
#[test]
fn without_the_kernel_the_proc_view_says_it_is_approximate() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 60, &busy(4));
    press(&mut app, &chars("i"));
    app.on_feed(Feed::WhereIo(WhereIoFeed::NoWho("needs root".into())));
    m.run(&mut app, 1, &busy(4));
    app.on_feed(Feed::WhereIo(WhereIoFeed::Processes(sample(false))));
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("approximate"), "{s}");
    assert!(s.contains(" 977 "), "{s}");
}
