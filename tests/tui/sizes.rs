//! Every field at every size (issue 16, items 6 and Tests): the table, the
//! detail pane (title, charts, before/after, earlier changes, where the I/O
//! goes, tunables) and the processes panel at 60x20, 80x24, 120x40 and
//! 200x50, with values as long as they get: nr_requests 256, read_ahead_kb
//! 1000000, a 7-digit await, a long model name, a deep backing-file path,
//! the kernel's p99. Each is snapshotted, and checked in code: a number is
//! shown whole or replaced by `…`, never cut into another number.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use crate::common::tui_fixture;
use blktune::tui::app::App;
use blktune::tui::worker::procio::WhereIoFeed;
use blktune::tui::worker::protocol::Feed;
use blktune_core::fake::FakeDisk;
use blktune_core::procio::{ProcessIo, ProcessSample};
use blktune_core::topology::{DeviceNode, Mount, Topology};
use common::screen::cut_numbers;
use std::collections::BTreeMap;
use std::sync::Arc;
use tui_fixture::*;

const SIZES: [(u16, u16); 4] = [(60, 20), (80, 24), (120, 40), (200, 50)];

/// A 7-digit read await (ms), shown as `1235k` where it is shown.
const HUGE_AWAIT: u32 = 1_234_567;

const BACKING: &str =
    "/srv/scratch/volumes/tenant-0042/images/very/deep/directory/tree/backing-file-0123456789.img";

/// sda (a long model, nr_requests 256, read_ahead_kb 1000000) is the
/// selected, hurting device: a 7-digit r_await, the kernel's p99 traced,
/// three changes (the newest two with long values), six dm devices on it;
/// loop10 is backed by a file deep in a tree on sda.
fn session() -> (Machine, App) {
    let mut sda = FakeDisk::new("sda")
        .model("Samsung SSD 870 EVO 4TB with a very long model name", None)
        .dev(8, 0)
        .active("mq-deadline")
        // A deep stack: LVM over dm-crypt over sda.
        .stacked(&["dm-10", "dm-11", "dm-12", "dm-13", "dm-14", "dm-15"], &[]);
    sda.nr_requests = 256;
    sda.read_ahead_kb = 1_000_000;
    let mut m = Machine::new(&[
        sda,
        FakeDisk::new("loop10").dev(7, 10).active("none"),
        FakeDisk::new("sdb").rotational(true).dev(8, 16),
    ]);
    let mut app = m.app(None);
    let nodes: Vec<DeviceNode> = m.devices.iter().map(DeviceNode::from).collect();
    let mounts = [Mount {
        major: 8,
        minor: 0,
        mount_point: "/srv/scratch/volumes/tenant-0042".into(),
        fs_type: "ext4".into(),
        source: "/dev/sda".into(),
    }];
    let backing = BTreeMap::from([("loop10".to_string(), BACKING.to_string())]);
    let topo = Topology::build(&nodes, &mounts, &backing, &BTreeMap::new());
    app.on_feed(Feed::WhereIo(WhereIoFeed::Placement(Arc::new(topo))));
    let loads = |r_await: u32| {
        vec![
            ("sda", load(10, r_await, 40, 10, 100)),
            ("loop10", load(900, 3, 300, 5, 97)),
            ("sdb", load(20, 12, 150, 30, 95)),
        ]
    };
    let lat = |ms: f64| {
        vec![(
            "sda",
            Lat {
                reads: 900,
                r_ms: ms,
                r_tail: 0.02,
                r_tail_ms: ms * 40.0,
                r_dev_ms: ms / 2.0,
                writes: 300,
                w_ms: 10.0,
            },
        )]
    };
    m.run_traced(&mut app, 30, &loads(HUGE_AWAIT), &lat(2500.0));
    for label in [
        "mq-deadline→kyber",
        "read_ahead_kb 128→1000000",
        "nr_requests 128→1000000",
    ] {
        app.on_feed(Feed::Change(m.mark(
            "sda",
            label,
            "mq-deadline",
            "mq-deadline",
        )));
        m.run_traced(&mut app, 12, &loads(HUGE_AWAIT), &lat(2500.0));
    }
    // loop10 (first by name) is selected; sda, the hurting one, is the
    // top row by %util: select it.
    press(&mut app, &chars("k"));
    assert_eq!(app.selected_device().unwrap().name, "sda");
    (m, app)
}

/// The processes panel open with long command lines and large rates.
fn with_processes(app: &mut App) {
    press(app, &chars("i"));
    let p = |pid, user: &str, cmd: &str, r: f64, w: f64, devs: &[&str]| ProcessIo {
        pid,
        user: user.into(),
        command: cmd.into(),
        read_bps: r,
        write_bps: w,
        devices: devs.iter().map(|d| d.to_string()).collect(),
    };
    let sample = ProcessSample {
        rows: vec![
            p(
                4_194_301,
                "postgres-replica",
                "postgres: 16/main: walreceiver streaming 3A/9F000000 from a very long host",
                1_234_567_890.0,
                987_654_321.0,
                &["sda", "loop10"],
            ),
            p(
                977,
                "root",
                "dd if=/dev/zero of=/dev/sdb bs=1M oflag=direct status=none",
                0.0,
                200.0 * 1024.0 * 1024.0,
                &["sdb"],
            ),
        ],
        interval: 1.0,
        limited: false,
    };
    app.on_feed(Feed::WhereIo(WhereIoFeed::Processes(sample)));
}

/// The first word after `key` on `line` (`nr 256` -> `256`).
fn after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let (_, rest) = line.split_once(key)?;
    rest.split([' ', '─']).next()
}

/// Is `v` a figure as [`num`](blktune::tui::render) writes it: digits, a
/// decimal part, a `k` for thousands, a unit?
fn whole_figure(v: &str) -> bool {
    let v = v.trim_end_matches(['%']).trim_end_matches("ms");
    let v = v.strip_suffix('k').unwrap_or(v);
    !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.') && !v.ends_with('.')
}

/// Every numeric field of this screen is whole or `…`: no digits before a
/// `…`; the title's nr_requests and read_ahead_kb; the values after `→`
/// (changes, earlier changes, the axis); the table's RA and r_await of sda;
/// the charts' `max`; the processes' PID. `what` names the screen.
/// The detail pane's title of sda, with or without the `! busy` in front
/// (sda runs at 100 %util).
fn is_sda_title(line: &str) -> bool {
    let l = line.trim_start_matches('"');
    l.starts_with("─ sda ") || l.starts_with("─ ! busy  sda ")
}

fn check_numbers(screen: &str, what: &str) {
    let lines: Vec<&str> = screen.lines().map(|l| l.trim_matches('"')).collect();
    let head = lines[1];
    // Thousands of ms: `1235k ms`, never `1235kms`.
    assert!(!screen.contains("kms"), "{what}:\n{screen}");
    for line in &lines {
        assert!(cut_numbers(line).is_empty(), "{what}: {line}\n{screen}");
        if is_sda_title(line) {
            if let Some(nr) = after(line, " nr ") {
                assert!(nr == "256" || nr == "…", "{what}: nr {nr}: {line}");
            }
            if let Some(ra) = after(line, " ra ") {
                assert!(ra == "1000000" || ra == "…", "{what}: ra {ra}: {line}");
            }
        }
        for (_, rest) in line.match_indices('→').map(|(i, _)| line.split_at(i)) {
            let v: String = rest
                .chars()
                .skip(1)
                .take_while(|c| c.is_ascii_digit())
                .collect();
            assert!(
                v.is_empty() || v == "1000000",
                "{what}: →{v}: {line}\n{screen}"
            );
        }
        if let Some(v) = line.strip_prefix("max ") {
            let v = v.split_whitespace().next().unwrap_or("");
            assert!(whole_figure(v) || v == "…", "{what}: max {v}: {line}");
        }
        // A PID (7 digits here) whole or not at all.
        for word in line.split(|c: char| !c.is_ascii_digit()) {
            if word.len() >= 3 && word != "4194301" && "4194301".starts_with(word) {
                panic!("{what}: a cut PID {word}: {line}\n{screen}");
            }
        }
    }
    // The table's sda row: read_ahead_kb is wider than RA, so `…`, never
    // its first five digits; the 7-digit await whole as 1235k.
    let row = lines.iter().find(|l| l.starts_with("▶sda ")).unwrap();
    let cells: Vec<&str> = row["▶".len()..].split_whitespace().collect();
    let col = |name: &str| {
        head.split_whitespace()
            .position(|h| h.trim_matches(['↓', '↑']) == name)
    };
    if let Some(i) = col("RA") {
        assert_eq!(cells[i], "…", "{what}: RA of sda: {row}");
    }
    if let Some(i) = col("r_await") {
        assert_eq!(cells[i], "1235k", "{what}: r_await of sda: {row}");
    }
}

#[test]
fn table_and_detail_keep_every_number_whole_at_every_size() {
    let (_m, app) = session();
    for (w, h) in SIZES {
        let term = screen(&app, w, h);
        let s = text(&term);
        check_numbers(&s, &format!("{w}x{h}"));
        assert!(s.lines().any(is_sda_title), "{s}");
        // Where there is room for the stack, all of it (wrapped, not cut).
        if h >= 40 {
            assert!(
                s.contains("used by dm-10, dm-11") && s.contains("dm-15"),
                "{s}"
            );
        }
        insta::assert_snapshot!(format!("detail_{w}x{h}"), term.backend());
    }
}

#[test]
fn processes_panel_keeps_every_number_whole_at_every_size() {
    let (_m, mut app) = session();
    with_processes(&mut app);
    for (w, h) in SIZES {
        let term = screen(&app, w, h);
        let s = text(&term);
        check_numbers(&s, &format!("processes {w}x{h}"));
        assert!(s.contains("approximate"), "{s}");
        let pg = s.lines().find(|l| l.contains("4194301 ")).unwrap();
        assert!(
            pg.contains(" 1.1G ") && pg.contains(" 942M "),
            "{w}x{h}: {pg}"
        );
        insta::assert_snapshot!(format!("processes_{w}x{h}"), term.backend());
    }
}

/// read_ahead_kb 1000000 in the 5-wide RA column (200x50) read `10000`.
#[test]
fn a_value_wider_than_its_table_column_is_an_ellipsis() {
    let (_m, app) = session();
    let s = text(&screen(&app, 200, 50));
    let row = s.lines().find(|l| l.contains("▶sda ")).unwrap();
    assert!(row.contains(" 256     … "), "{row}");
    assert!(!row.contains("10000"), "{row}");
}

/// The detail title names the disk's model when all of it fits after the
/// settings, and leaves it out otherwise (never a cut).
#[test]
fn the_title_names_the_model_when_it_fits() {
    let (_m, app) = session();
    let model = "Samsung SSD 870 EVO 4TB with a very long model name";
    let s = text(&screen(&app, 200, 50));
    let title = s.lines().find(|l| is_sda_title(l)).unwrap();
    assert!(
        title.contains(&format!("ra 1000000  model {model} ─")),
        "{title}"
    );
    for (w, h) in [(60, 20), (80, 24), (120, 40)] {
        let s = text(&screen(&app, w, h));
        let title = s.lines().find(|l| is_sda_title(l)).unwrap();
        assert!(!title.contains("Samsung"), "{w}x{h}: {title}");
    }
}
