//! Every numeric column of the table sorts, the kernel's p99 columns and
//! NR/RA too: `o`/F6 and `<`/`>` reach them in column order, the heading
//! carries the arrow, ties break by aqu-sz then await, and a device
//! without a p99 (under 100 I/Os, or not traced) sorts after every device
//! with one.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, SortKey};
use blktune_core::fake::FakeDisk;
use crossterm::event::KeyCode;
use tui_fixture::*;

fn machine() -> Machine {
    let mut m = Machine::new(&[
        FakeDisk::new("sda").dev(8, 0),
        FakeDisk::new("sdb")
            .dev(8, 16)
            .rotational(true)
            .active("bfq"),
        FakeDisk::new("sdc").dev(8, 32),
        FakeDisk::new("sdd").dev(8, 48),
        FakeDisk::new("zram0")
            .no_queue()
            .dev(252, 0)
            .size_bytes(8 << 30),
    ]);
    for (dev, nr, ra) in [("sda", 64, 128), ("sdb", 1024, 4096), ("sdc", 512, 512)] {
        let q = m.tree.dev_dir(dev).join("queue");
        std::fs::write(q.join("nr_requests"), format!("{nr}\n")).unwrap();
        std::fs::write(q.join("read_ahead_kb"), format!("{ra}\n")).unwrap();
    }
    m.refresh();
    m
}

fn loads() -> Vec<(&'static str, Load)> {
    vec![
        ("sda", load(800, 4, 200, 10, 60)),
        // The busiest by aqu-sz, but only 30 reads a second: no p99.
        ("sdb", load(30, 40, 20, 30, 100)),
        ("sdc", load(600, 2, 300, 5, 40)),
        // sdc's twin but for slower writes: a larger aqu-sz.
        ("sdd", load(600, 2, 300, 9, 40)),
        ("zram0", load(100, 0, 100, 0, 1)),
    ]
}

fn lat(reads: u64, r_ms: f64, r_tail: f64, writes: u64, w_ms: f64) -> Lat {
    Lat {
        reads,
        r_ms,
        r_tail,
        r_tail_ms: 12.0,
        r_dev_ms: r_ms / 2.0,
        writes,
        w_ms,
    }
}

/// sda: read p99 12 ms (3% held by the scheduler), write p99 ~12 ms;
/// sdc and sdd: the same read p99 of ~1.2 ms (a tie), writes ~6 and ~2.4 ms;
/// sdb: 30 reads and 20 writes a second, too few for a p99.
fn traced() -> App {
    let mut m = machine();
    let mut app = m.app(None);
    let l = [
        ("sda", lat(800, 1.0, 0.03, 200, 10.0)),
        ("sdb", lat(30, 40.0, 0.0, 20, 30.0)),
        ("sdc", lat(600, 1.0, 0.0, 300, 5.0)),
        ("sdd", lat(600, 1.0, 0.0, 300, 2.0)),
    ];
    m.run_traced(&mut app, 5, &loads(), &l);
    // The walks below start from the leftmost column, not the default %util.
    app.sort = SortKey::Name;
    app
}

fn rows(app: &App) -> Vec<String> {
    app.visible().iter().map(|d| d.name.clone()).collect()
}

fn heading(app: &App, width: u16, height: u16) -> String {
    let s = text(&screen(app, width, height));
    s.lines().nth(1).unwrap().to_string()
}

#[test]
fn the_p99_columns_sort_largest_first_and_without_a_p99_last() {
    let mut app = traced();
    // > walks the columns left to right: r_await, w_await, then r_p99.
    press(&mut app, &chars(">"));
    assert_eq!(app.sort, SortKey::Size);
    while app.sort != SortKey::WAwait {
        press(&mut app, &chars(">"));
    }
    press(&mut app, &chars(">"));
    assert_eq!(app.sort, SortKey::RP99);
    // sdc and sdd tie on the read p99: sdd has the larger aqu-sz, so it
    // comes first (by name it would not). sdb (30 reads) and zram0 (not
    // traced) have none: after every row with one, however busy sdb is.
    assert_eq!(rows(&app), ["sda", "sdd", "sdc", "sdb", "zram0"]);
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("sorted by r_p99 (largest first)"), "{s}");
    assert!(heading(&app, 80, 24).contains("↓r_p99"), "{s}");
    // The row without a p99 shows its count, and is below the others.
    let sdb = s.lines().position(|l| l.contains("sdb  ")).unwrap();
    let sdc = s.lines().position(|l| l.contains("sdc  ")).unwrap();
    assert!(
        sdb > sdc && s.lines().nth(sdb).unwrap().contains("n=30"),
        "{s}"
    );

    press(&mut app, &chars(">"));
    assert_eq!(app.sort, SortKey::WP99);
    // Writes: sda ~12 ms, sdc ~6, sdd ~2.4; sdb's 20 writes give none.
    assert_eq!(rows(&app), ["sda", "sdc", "sdd", "sdb", "zram0"]);
    assert!(heading(&app, 160, 48).contains("↓w_p99"));
    // < comes back the same way, and on to w_await.
    press(&mut app, &chars("<<"));
    assert_eq!(app.sort, SortKey::WAwait);
}

#[test]
fn o_and_f6_reach_the_p99_columns_after_the_awaits() {
    let mut app = traced();
    let mut seen = Vec::new();
    for _ in 0..20 {
        press(&mut app, &[KeyCode::F(6)]);
        seen.push(app.sort);
        if app.sort == SortKey::Name {
            break;
        }
    }
    let at = |k: SortKey| seen.iter().position(|&s| s == k).unwrap();
    assert_eq!(at(SortKey::RP99), at(SortKey::WAwait) + 1, "{seen:?}");
    assert_eq!(at(SortKey::WP99), at(SortKey::RP99) + 1, "{seen:?}");
    assert!(seen.contains(&SortKey::Nr) && seen.contains(&SortKey::Ra));
    press(&mut app, &chars("oooooo"));
    assert_eq!(app.sort, SortKey::RP99);
    assert_eq!(rows(&app)[0], "sda");
}

#[test]
fn without_tracing_the_keys_pass_over_the_p99_columns() {
    let mut m = machine();
    let mut app = m.app(None);
    m.run(&mut app, 5, &loads());
    app.sort = SortKey::WAwait;
    press(&mut app, &chars(">"));
    assert_eq!(app.sort, SortKey::RAreqSz, "no r_p99 column on screen");
    assert!(!heading(&app, 200, 50).contains("p99"));
}

#[test]
fn nr_and_ra_sort_and_carry_the_arrow() {
    let mut app = traced();
    press(&mut app, &chars(">>"));
    assert_eq!(app.sort, SortKey::Nr);
    // sdd kept the fake tree's defaults (256, 128); zram0 has no queue.
    assert_eq!(rows(&app)[..2], ["sdb", "sdc"]);
    assert_eq!(rows(&app).last().unwrap(), "zram0");
    let s = text(&screen(&app, 200, 50));
    assert!(s.contains("sorted by nr_requests (largest first)"), "{s}");
    assert!(heading(&app, 200, 50).contains("↓NR"), "{s}");
    press(&mut app, &chars(">"));
    assert_eq!(app.sort, SortKey::Ra);
    assert_eq!(rows(&app)[..2], ["sdb", "sdc"]);
    assert!(heading(&app, 200, 50).contains("↓RA"));
}
