//! End to end in tmux at 120x40: the real binary on this machine,
//! `--read-only` (it changes nothing), sorted with `o`, `>` and `<` as a
//! user types them; the arrow moves along the headings on screen.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::screen::{column, headings};
use common::tmux::{Tmux, blktune_bin};
use common::*;
use std::time::Duration;

/// The real binary, `--read-only` with a private journal (held by the
/// returned directory) and a 250 ms interval, in a `width`x`height` tmux pane;
/// `env` goes before the journal variable, `args` after `--read-only`.
fn read_only(env: &str, args: &str, width: u16, height: u16) -> (tempfile::TempDir, Tmux) {
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        &format!(
            "env {env}BLKTUNE_JOURNAL_DIR='{}' '{}' --read-only {args} --interval 250ms",
            journal.path().display(),
            blktune_bin()
        ),
        width,
        height,
    );
    (journal, t)
}

#[test]
fn o_and_the_angle_keys_move_the_sort_arrow_along_the_headings() {
    let name = "o_and_the_angle_keys_move_the_sort_arrow_along_the_headings";
    if !require_tool(name, "tmux") {
        return;
    }
    let (_journal, t) = read_only("", "", 120, 40);
    // The default: by %util, the arrow on its heading from the start.
    let s = t.wait("the table sorted by %util", |s| {
        headings(s).contains("↓%util") && s.contains("every 250ms")
    });
    assert!(!headings(&s).contains("DEVICE↓"), "{s}");
    t.keys(&["o"]);
    let s = t.wait("the arrow on aqu-sz", |s| headings(s).contains("↓aqu-sz"));
    assert!(s.contains("sorted by aqu-sz (largest first)"), "{s}");
    // Three keys in one read of the terminal: > walks right past %util
    // to await (the sparkline), then wraps to the name.
    t.keys(&[">", ">", ">"]);
    t.wait("the arrow back on DEVICE", |s| {
        headings(s).contains("DEVICE↓") && s.contains("sorted by name (A to Z)")
    });
    t.keys(&["<", "<"]);
    t.wait("the arrow on %util again", |s| {
        headings(s).contains("↓%util")
    });
    t.keys(&["<"]);
    let s = t.wait("the arrow on aqu-sz", |s| headings(s).contains("↓aqu-sz"));
    assert_eq!(headings(&s).matches('↓').count(), 1, "{s}");
    // F6 is o: after aqu-sz comes await.
    t.keys(&["F6"]);
    t.wait("the arrow on await", |s| headings(s).contains("await↓"));
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

/// Rows with a p99 (a number) all above rows without one (`-`, `n=42`),
/// and `dev` (under load) among those with a number, so on screen.
fn p99_order_holds(screen: &str, head: &str, dev: &str) -> bool {
    let col = column(screen, head, 7);
    let has = |c: &str| c.parse::<f64>().is_ok();
    let first_none = col.iter().position(|(_, c)| !has(c)).unwrap_or(col.len());
    let ours = col.iter().position(|(n, _)| n == dev);
    !col.is_empty()
        && col[first_none..].iter().all(|(_, c)| !has(c))
        && ours.is_some_and(|i| i < first_none)
}

#[test]
fn the_p99_columns_sort_with_o_and_the_angle_keys_and_rows_without_a_p99_go_last() {
    let name = "the_p99_columns_sort_with_o_and_the_angle_keys_and_rows_without_a_p99_go_last";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "fio") {
        return;
    }
    // Our own loop device under random reads: thousands a second, a p99;
    // idle devices (and zram0, which has no queue) have none.
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let _load = FioLoad::randread(&dev);
    // And one of our own that stays idle: a row without a p99 whatever
    // else the machine has (zram0 may have no size, and so no row).
    let _idle = TestLoop::new(16);
    // Tall: room for the rows without a p99 too (zram0, idle ones)
    // when other loop devices are busy.
    let (_journal, t) = read_only("", "", 120, 60);
    // Other tests' loop devices may be on screen too: wait for the
    // column and any p99 in it.
    t.wait("the r_p99 column with a read p99", |s| {
        column(s, "r_p99", 7)
            .iter()
            .any(|(_, c)| c.parse::<f64>().is_ok())
    });
    // o from the default %util: aqu-sz, await, r_await, w_await, r_p99.
    t.keys(&["o", "o", "o", "o", "o"]);
    let s = t.wait("rows sorted by r_p99, those without one last", |s| {
        headings(s).contains("↓r_p99")
            && s.contains("sorted by r_p99 (largest first)")
            && p99_order_holds(s, "↓r_p99", &dev)
    });
    assert_eq!(headings(&s).matches('↓').count(), 1, "{s}");
    assert!(
        column(&s, "↓r_p99", 7)
            .iter()
            .any(|(_, c)| c == "-" || c.starts_with("n=")),
        "a row without a p99 to sort last:\n{s}"
    );
    // > to w_p99 (our device writes nothing: no p99 there, but the
    // rows that have one still come first), < < back to w_await.
    t.keys(&[">"]);
    t.wait("the arrow on w_p99", |s| {
        headings(s).contains("↓w_p99") && s.contains("sorted by w_p99 (largest first)")
    });
    t.keys(&["<", "<"]);
    t.wait("the arrow on w_await", |s| headings(s).contains("↓w_await"));
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

/// A device under a constant write load of our own is busy (%util near 100):
/// selected, its row shows `▶` (the device the keys act on) and the detail
/// pane's title says `! busy`, which is also the only sign without colour.
#[test]
fn a_busy_selected_device_says_so_in_its_title_without_colour() {
    let name = "a_busy_selected_device_says_so_in_its_title_without_colour";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let _load = FioLoad::busy_writes(&dev);
    let (_journal, t) = read_only("NO_COLOR=1 ", &format!("--device {dev}"), 80, 24);
    let s = t.wait("the selected row busy, said in the title", |s| {
        s.contains(&format!("─ ! busy  {dev} ")) && s.contains(&format!("▶{dev} "))
    });
    assert!(
        !s.contains(&format!("!{dev} ")),
        "the selected row keeps ▶:\n{s}"
    );
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

/// At 200x50 the wide columns are on the real screen: throughput, request
/// sizes, in flight as reads/writes (`/sys/block/X/inflight`) and MOUNT,
/// here on our own loop device under a read load (issue 16, item 2).
#[test]
fn wide_columns_at_200x50_show_throughput_sizes_in_flight_and_mount() {
    let name = "wide_columns_at_200x50_show_throughput_sizes_in_flight_and_mount";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let _load = FioLoad::randread(&dev);
    // And one of our own that stays idle: a row without a p99 whatever
    // else the machine has (zram0 may have no size, and so no row).
    let _idle = TestLoop::new(16);
    let (_journal, t) = read_only("", &format!("--device {dev}"), 200, 50);
    // The row under load: reads per second and MB/s.
    let s = t.wait("the wide row with reads", |s| {
        column(s, "rMB/s", 7)
            .iter()
            .any(|(d, c)| d == &dev && c.parse::<f64>().is_ok_and(|v| v > 0.0))
    });
    let head = headings(&s);
    for h in [
        "rMB/s", "wMB/s", "rareq-sz", "wareq-sz", "inflight", "MOUNT",
    ] {
        assert!(head.contains(h), "{h}: {head}\n{s}");
    }
    // 4 KiB random reads: rareq-sz 4.00.
    assert!(
        column(&s, "rareq-sz", 8).contains(&(dev.clone(), "4.00".into())),
        "{s}"
    );
    // In flight now, reads/writes: two counts split by a slash.
    let cell = column(&s, "inflight", 8)
        .into_iter()
        .find(|(d, _)| d == &dev)
        .map(|(_, c)| c)
        .unwrap_or_default();
    let split = cell
        .split_once('/')
        .is_some_and(|(r, w)| r.parse::<u64>().is_ok() && w.parse::<u64>().is_ok());
    assert!(split, "inflight '{cell}' is not reads/writes:\n{s}");
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

/// Names in natural order on the real screen: loop2 before loop10 (a
/// fake tree, idle devices: the default %util sort ties all the way down
/// to the name). No root.
#[test]
fn loop2_comes_before_loop10_on_the_screen() {
    let name = "loop2_comes_before_loop10_on_the_screen";
    if !require_tool(name, "tmux") {
        return;
    }
    let (dir, _tree) = fake_host::loop_tree([10, 2, 1]);
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::on_fake_tree(dir.path(), journal.path(), "--interval 250ms", 80, 24);
    let s = t.wait("the three rows and a sample", |s| {
        s.contains("loop10 ") && s.contains("loop2 ") && s.contains("↓%util")
    });
    // Each row's name, after the marker column (`▶`, `!` or a blank).
    let rows: Vec<String> = s
        .lines()
        .filter_map(|l| {
            l.chars()
                .skip(1)
                .collect::<String>()
                .split_whitespace()
                .next()
                .map(String::from)
        })
        .filter(|w| w.starts_with("loop"))
        .collect();
    assert_eq!(rows[..3], ["loop1", "loop2", "loop10"], "{s}");
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

/// The screen opens on the busiest device: before the first rates every
/// row ties (so loop1, the first name, is selected); at the first rates
/// loop10, busy at 100 %util on a fake tree whose counters a thread moves,
/// sorts to the top and the untouched selection goes with it. No root.
#[test]
fn the_screen_opens_on_the_busiest_device() {
    use blktune_core::diskstats::Counters;
    use common::fake_host::MovingCounters;
    let name = "the_screen_opens_on_the_busiest_device";
    if !require_tool(name, "tmux") {
        return;
    }
    let (dir, tree) = fake_host::loop_tree([1, 2, 10]);
    let disks = [("loop1", 1), ("loop2", 2), ("loop10", 10)];
    // loop10 busy all the time (io_ticks as fast as the clock), the others idle.
    let _counters = MovingCounters::start(&tree, move |ms| {
        let busy = Counters {
            rd_ios: ms,
            rd_ticks: (ms * 2) as u32,
            io_ticks: ms as u32,
            time_in_queue: (ms * 2) as u32,
            ..Counters::default()
        };
        disks
            .iter()
            .map(|&(n, minor)| {
                let c = if n == "loop10" {
                    busy
                } else {
                    Counters::default()
                };
                (n, 7, minor, c)
            })
            .collect()
    });
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::on_fake_tree(dir.path(), journal.path(), "--interval 250ms", 80, 24);
    let s = t.wait("loop10 on top, selected, in the detail pane", |s| {
        let first = s
            .lines()
            .skip_while(|l| !l.contains("DEVICE"))
            .nth(1)
            .unwrap_or("");
        first.starts_with("▶loop10 ") && s.contains("─ ! busy  loop10 ")
    });
    assert!(s.contains("↓%util"), "{s}");
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

/// Rows off screen have their settings checked only every 30 s, but a row
/// that scrolls into view is checked as if it had been on screen all along
/// (within 5 s of its last check): a scheduler changed behind blktune's
/// back on loop40, far below the screen, shows within 5 s once `j`s (in
/// one packet) bring it into view, not 30 s later. No root.
#[test]
fn an_outside_change_shows_as_soon_as_its_row_scrolls_into_view() {
    let name = "an_outside_change_shows_as_soon_as_its_row_scrolls_into_view";
    if !require_tool(name, "tmux") {
        return;
    }
    let (dir, tree) = fake_host::loop_tree(1..=40);
    let disks: Vec<(String, u32)> = (1..=40).map(|i| (format!("loop{i}"), i)).collect();
    let stats: Vec<_> = disks
        .iter()
        .map(|(n, minor)| (n.as_str(), 7, *minor, Default::default()))
        .collect();
    tree.set_diskstats(&stats).unwrap();
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::on_fake_tree(dir.path(), journal.path(), "--interval 250ms", 80, 24);
    t.wait("the table from loop1", |s| s.contains("▶loop1 "));
    // Past the first 5 s every row has had its first check: loop40, off
    // screen, is next checked some 30 s later.
    std::thread::sleep(Duration::from_secs(6));
    let sched = tree.dev_dir("loop40").join("queue/scheduler");
    std::fs::write(&sched, "none mq-deadline [kyber] bfq\n").unwrap();
    let j: Vec<&str> = vec!["j"; 39];
    t.keys(&j);
    t.wait("loop40 selected", |s| s.contains("▶loop40 "));
    let seen = t.wait_for(
        |s| {
            s.lines()
                .find(|l| l.starts_with("▶loop40 "))
                .is_some_and(|l| l.contains(" kyber "))
        },
        Duration::from_secs(7),
    );
    assert!(
        seen.is_ok(),
        "loop40's kyber not shown within 7 s:\n{}",
        seen.unwrap_err()
    );
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

/// At 80x24 the table leaves out aqu-sz, rMB/s and others: `o`, typed in
/// packets of two, sorts only by columns on screen, the arrow on a heading
/// each time (it went to aqu-sz first, with no column to show it).
#[test]
fn at_80x24_o_sorts_only_by_columns_on_screen() {
    let name = "at_80x24_o_sorts_only_by_columns_on_screen";
    if !require_tool(name, "tmux") {
        return;
    }
    let (_journal, t) = read_only("", "", 80, 24);
    t.wait("the table sorted by %util", |s| {
        headings(s).contains("↓%util")
    });
    let label = |s: &str| {
        s.lines()
            .find_map(|l| l.split_once("sorted by ").map(|(_, r)| r.to_string()))
            .and_then(|r| r.split_once(" (").map(|(l, _)| l.to_string()))
    };
    let mut last = String::new();
    for _ in 0..8 {
        t.keys(&["o", "o"]);
        let s = t.wait("a new sort", |s| {
            label(s).is_some_and(|l| l != last) && headings(s).contains('↓')
        });
        let l = label(&s).unwrap();
        let head = headings(&s).replace('↓', " ");
        assert!(
            l == "name" || head.split_whitespace().any(|h| h == l),
            "sorted by {l}, not a column on screen:\n{s}"
        );
        last = l;
    }
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

/// Sorted by in flight on a wide window, then the window is made 80x24,
/// which leaves that column out: the rows go back to %util, its arrow on
/// the heading, and the status line says why (the rows stayed ordered by a
/// column nothing on screen named). `<` typed in a packet of two.
#[test]
fn a_narrower_window_sorts_by_util_again_and_says_why() {
    let name = "a_narrower_window_sorts_by_util_again_and_says_why";
    if !require_tool(name, "tmux") {
        return;
    }
    let (_journal, t) = read_only("", "", 200, 50);
    t.wait("the table sorted by %util", |s| {
        headings(s).contains("↓%util")
    });
    // From %util, two columns to the left: aqu-sz, then in flight.
    t.keys(&["<", "<"]);
    t.wait("the table sorted by in flight", |s| {
        headings(s).contains("↓inflight") && s.contains("sorted by inflight")
    });
    let ok = t
        .tmux(&[
            "resize-window",
            "-t",
            common::tmux::SESSION,
            "-x",
            "80",
            "-y",
            "24",
        ])
        .status()
        .unwrap()
        .success();
    assert!(ok, "tmux resize-window");
    let s = t.wait("the sort back on %util, and why", |s| {
        headings(s).contains("↓%util")
            && s.contains("sorted by %util: the inflight column is not on screen")
    });
    assert!(!headings(&s).contains("inflight"), "{s}");
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}
