//! Whole-screen snapshots of the TUI on a fake machine with scripted samples.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod tui_fixture;
use blktune::tui::worker::protocol::Feed;
use crossterm::event::KeyCode;
use tui_fixture::*;

fn main_app() -> (Machine, blktune::tui::app::App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    for i in 0..90 {
        // A wave so the charts have a shape.
        let r = 2 + (i % 10) as u32;
        m.run(&mut app, 1, &busy(r));
    }
    (m, app)
}

#[test]
fn main_view_80x24() {
    let (_m, app) = main_app();
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn main_view_160x48() {
    let (_m, app) = main_app();
    insta::assert_snapshot!(screen(&app, 160, 48).backend());
}

#[test]
fn scheduler_picker() {
    let (_m, mut app) = main_app();
    press(&mut app, &[KeyCode::Char('s'), KeyCode::Down]);
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn help_overlay() {
    let (_m, mut app) = main_app();
    press(&mut app, &chars("?"));
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn before_after_panel() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 60, &busy(8));
    let mark = m.switch("sda", "none→mq-deadline", "none", "mq-deadline");
    app.on_feed(Feed::Change(mark));
    m.run(&mut app, 40, &busy(6));
    // A switch resets nr_requests; the label says so.
    let label = "mq-deadline→kyber, nr_requests 256→512";
    let mark = m.switch("sda", label, "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    m.run(&mut app, 20, &busy(2));
    let term = screen(&app, 80, 24);
    let s = text(&term);
    assert!(s.contains("mq-deadline→kyber"), "{s}");
    // Before: since the previous change (6 ms); after: 2 ms.
    assert!(s.contains("r_await     6.00    2.00   -67%"), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn read_only_mode() {
    let mut m = Machine::three();
    let mut app = m.app(Some("not root"));
    m.run(&mut app, 30, &busy(4));
    press(&mut app, &chars("s"));
    let term = screen(&app, 80, 24);
    let s = text(&term);
    assert!(
        s.contains("READ-ONLY: not root; changes are disabled"),
        "{s}"
    );
    assert!(s.contains("nothing was changed"), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn too_small_terminal() {
    let (_m, app) = main_app();
    insta::assert_snapshot!(screen(&app, 40, 10).backend());
}

#[test]
fn tiny_and_odd_sizes_do_not_panic() {
    let (_m, mut app) = main_app();
    for (w, h) in [
        (1, 1),
        (0, 0),
        (59, 15),
        (60, 16),
        (61, 17),
        (300, 100),
        (80, 5),
    ] {
        screen(&app, w, h);
    }
    press(&mut app, &chars("?"));
    screen(&app, 60, 16);
    press(&mut app, &[KeyCode::Esc, KeyCode::Char('t')]);
    screen(&app, 60, 16);
}

/// sda with the probe on: p99 about 4 ms under mq-deadline, then a switch to
/// kyber and p99 about 1 ms.
fn probe_app() -> (Machine, blktune::tui::app::App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    app.enable_probe(5.0);
    let slow = probe_stats(5.0, Some((0.8, 4.0, 6.5)), None);
    m.run_probed(&mut app, 40, &busy(6), "sda", &slow);
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    let fast = probe_stats(5.0, Some((0.4, 1.0, 1.5)), None);
    m.run_probed(&mut app, 20, &busy(2), "sda", &fast);
    (m, app)
}

#[test]
fn probe_figures_at_80x24() {
    let (_m, app) = probe_app();
    let term = screen(&app, 80, 24);
    let s = text(&term);
    assert!(s.contains("probe 5.0 r/s, counted in r/s"), "{s}");
    assert!(s.contains("ms       p50   p99   max r_await"), "{s}");
    // The newest interval: probe figures next to diskstats r_await.
    assert!(s.contains("1s      0.40  1.00  1.50    2.00"), "{s}");
    // The last minute: 40 s at p99 4 ms and 20 s at 1 ms; the worst read of
    // it; r_await 40 s at 6 ms and 20 s at 2 ms.
    assert!(s.contains("60s     0.67  3.00  6.50    4.67"), "{s}");
    // The payoff: the tail before and after the switch.
    assert!(s.contains("r_await     6.00    2.00   -67%"), "{s}");
    assert!(s.contains("pr_p99      4.00    1.00   -75%"), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn probe_figures_at_120x40() {
    let (_m, app) = probe_app();
    let term = screen(&app, 120, 40);
    let s = text(&term);
    assert!(s.contains("probe 5.0 r/s, counted in r/s"), "{s}");
    // A wide panel: each mean with its spread beside it.
    assert!(s.contains("r_await      6.00±0     2.00±0   -67%"), "{s}");
    assert!(s.contains("pr_p99         4.00       1.00   -75%"), "{s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn probe_error_is_a_line_in_the_panel() {
    let mut m = Machine::three();
    let mut app = m.app(Some("not root"));
    app.enable_probe(5.0);
    let denied = probe_stats(
        0.0,
        None,
        Some("cannot open /dev/sda for reading: Permission denied (os error 13)"),
    );
    m.run_probed(&mut app, 10, &busy(4), "sda", &denied);
    let term = screen(&app, 80, 24);
    let s = text(&term);
    assert!(s.contains("probe 0.0 r/s, counted in r/s"), "{s}");
    assert!(s.contains("probe: cannot open /dev/sda for"), "{s}");
    assert!(s.contains("reading: Permission denied (os"), "{s}");
    assert!(s.contains("error 13)"), "{s}");
    assert!(!s.contains("p99"), "no table without a read: {s}");
    insta::assert_snapshot!(term.backend());
}

#[test]
fn probe_off_shows_nothing_of_it() {
    let (_m, app) = main_app();
    assert!(app.probe.is_none());
    for (w, h) in [(80, 24), (160, 48)] {
        let s = text(&screen(&app, w, h));
        assert!(!s.contains("probe") && !s.contains("pr_p99"), "{s}");
    }
    // Probe on but no figures yet: one line saying it is starting.
    let mut m = Machine::three();
    let mut app = m.app(None);
    app.enable_probe(2.5);
    m.run(&mut app, 3, &busy(4));
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("probe 2.5 r/s: starting"), "{s}");
    assert!(!s.contains("p99"), "{s}");
}

/// The last line of the screen.
fn footer(app: &blktune::tui::app::App, w: u16, h: u16) -> String {
    let s = text(&screen(app, w, h));
    s.lines()
        .nth(h as usize - 1)
        .unwrap()
        .trim_matches(['"', ' '])
        .to_string()
}

#[test]
fn read_only_footer_offers_no_change_keys() {
    let mut m = Machine::three();
    let mut app = m.app(Some("not root"));
    m.run(&mut app, 3, &busy(4));
    let f = footer(&app, 80, 24);
    assert_eq!(f, "o sort  / filter  p pause  i procs  ? help  q quit");
    let mut app = m.app(None);
    m.run(&mut app, 3, &busy(4));
    let f = footer(&app, 160, 24);
    assert!(f.starts_with("s sched  n nr  r ra  t tun  u undo"), "{f}");
}

#[test]
fn help_lists_each_key_once_per_section() {
    use blktune::tui::render::Theme;
    let lines: Vec<String> = blktune::tui::render::help_lines(Theme { color: false }, false)
        .iter()
        .map(|l| l.to_string())
        .collect();
    let start = lines
        .iter()
        .position(|l| l == "In lists and editors")
        .unwrap();
    let end = lines.iter().position(|l| l == "Schedulers").unwrap();
    let keys: Vec<&str> = lines[start + 1..end]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(keys, ["↑/k", "Enter", "Esc", "Bksp", "Ctrl-U"]);
}

/// A long error keeps its start (device, value) and its end (the cause) at
/// 80x24: it takes a second row instead of being cut at the edge.
#[test]
fn a_long_status_takes_two_rows_at_80x24() {
    let (_m, mut app) = main_app();
    let msg = "cannot write 'kyber' to /sys/block/nvme0n1/queue/scheduler: Device or \
               resource busy (os error 16); the kernel left 'none' active and nr_requests \
               was put back to 1023; try again when the device is idle";
    app.on_feed(Feed::Error(msg.into()));
    let s = text(&screen(&app, 80, 24));
    let rows: Vec<&str> = s.lines().collect();
    let (a, b) = (rows[21], rows[22]);
    assert!(
        a.contains("cannot write 'kyber' to /sys/block/nvme0n1/queue/scheduler: Device or"),
        "{s}"
    );
    assert!(
        b.contains("…") && b.contains("try again when the device is idle"),
        "{s}"
    );
    assert!(rows[23].contains("? help  q quit"), "{s}");
    // An open dialog, even one as tall as the screen, leaves both status
    // rows visible.
    press(&mut app, &chars("e"));
    let s = text(&screen(&app, 80, 24));
    let rows: Vec<&str> = s.lines().collect();
    assert!(rows.iter().any(|r| r.contains("export a udev rule")), "{s}");
    assert!(
        rows[21].contains("cannot write 'kyber'") && rows[22].contains("try again when"),
        "{s}"
    );
    press(&mut app, &[KeyCode::Esc]);
    // A short status keeps one row.
    app.on_feed(Feed::Error("'sda': short".into()));
    let s = text(&screen(&app, 80, 24));
    assert!(s.lines().nth(22).unwrap().contains("'sda': short"), "{s}");
}

/// At 60x20 (near the smallest size) the title and the way to help and out
/// stay; less important hints and header parts go first.
#[test]
fn at_60x20_the_title_and_help_and_quit_stay() {
    let (_m, mut app) = main_app();
    for read_only in [None, Some("not root")] {
        app.read_only = read_only.map(String::from);
        let s = text(&screen(&app, 60, 20));
        let rows: Vec<&str> = s.lines().collect();
        assert!(rows[0].starts_with("\" blktune │ "), "{s}");
        assert!(rows[0].contains("every 1s"), "{s}");
        assert!(rows[19].contains("? help  q quit"), "{s}");
    }
    app.read_only = None;
    let s = text(&screen(&app, 60, 20));
    let footer = s.lines().nth(19).unwrap().trim_matches(['"', ' ']);
    assert_eq!(
        footer,
        "s sched  n nr  r ra  t tun  u undo  o sort  ? help  q quit"
    );
}

/// Sorting by await puts the arrow on the `await` sparkline (the larger of
/// r_await and w_await, the sort key); a virtio disk's TYPE reads `virt`.
#[test]
fn await_sort_has_its_arrow_and_virtio_fits_the_type_column() {
    use blktune_core::fake::FakeDisk;
    let mut m = Machine::new(&[
        FakeDisk::new("sda").dev(8, 0),
        FakeDisk::new("vda").dev(253, 0),
    ]);
    let mut app = m.app(None);
    m.run(&mut app, 3, &busy(4));
    // o: %util, aqu-sz, then await (the sparkline's column).
    press(&mut app, &chars("ooo"));
    for w in [60, 80, 100] {
        let s = text(&screen(&app, w, 24));
        let head = s.lines().nth(1).unwrap();
        assert!(head.contains("await↓"), "{w}: {head}");
        assert_eq!(head.matches('↓').count(), 1, "{w}: {head}");
    }
    let s = text(&screen(&app, 100, 24));
    let vda = s.lines().find(|l| l.contains("vda ")).unwrap();
    assert!(vda.contains(" virt "), "{s}");
    assert!(!s.contains("virti"), "{s}");
    // Next r_await: its arrow goes into the gap on its left.
    press(&mut app, &chars("o"));
    let s = text(&screen(&app, 80, 24));
    assert!(s.lines().nth(1).unwrap().contains("↓r_await "), "{s}");
}

/// Names, paths and notes from the machine are drawn escaped: ratatui drops
/// C0 controls by itself, but a bidi override (U+202E) would reach the
/// terminal and turn what follows it around.
#[test]
fn names_and_paths_with_control_characters_are_drawn_escaped() {
    let mut m = Machine::three();
    std::sync::Arc::make_mut(&mut m.devices)[0].name = "sd\u{202e}a".into();
    let mut app = m.app(None);
    m.run(&mut app, 3, &busy(4));
    app.recording = Some("/tmp/rec\u{7}\u{1b}[2J.ndjson.gz".into());
    // It sorts after sdb: the second row.
    press(&mut app, &chars("js"));
    let term = screen(&app, 80, 24);
    let s = text(&term);
    for bad in ['\u{202e}', '\u{7}', '\u{1b}'] {
        assert!(!s.contains(bad), "{bad:?} reached the screen:\n{s}");
    }
    // The table row, the detail title and the picker's title name it escaped.
    assert!(s.contains("sd\\u202ea"), "{s}");
    assert!(s.contains("scheduler of sd\\u202ea"), "{s}");
    assert!(s.contains("rec\\u0007\\u001b[2J"), "{s}");
}
