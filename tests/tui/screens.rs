//! Whole-screen snapshots of the TUI on a fake machine with scripted samples.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
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
    assert!(s.contains("r_await  6.00  2.00 -67%"), "{s}");
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
    // Export, record and the probe change no setting: offered.
    assert_eq!(
        f,
        "e export  R record  P probe  o sort  / filter  p pause  i procs  ? help  q quit"
    );
    let mut app = m.app(None);
    m.run(&mut app, 3, &busy(4));
    let f = footer(&app, 160, 24);
    assert!(
        f.starts_with("s sched  n nr  r ra  t tun  u undo  U undo all  e export  b shoot-out"),
        "{f}"
    );
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
    // The keys of an incident first (switch, who does the I/O, undo,
    // pause); the editors of single values are one `?` away.
    assert_eq!(
        footer,
        "s sched  u undo  o sort  p pause  i procs  ? help  q quit"
    );
}

/// At 80x24 the footer shows every key an incident needs (issue 16): the
/// processes panel `i` is not only in the help. Only `t` (tunables) waits
/// for a wider screen, and the help lists every hinted key.
#[test]
fn the_80x24_footer_has_the_incident_keys_and_agrees_with_help() {
    let (_m, app) = main_app();
    let f = footer(&app, 80, 24);
    assert_eq!(
        f,
        "s sched  n nr  r ra  u undo  o sort  / filter  p pause  i procs  ? help  q quit"
    );
    for (w, h) in [(60, 20), (80, 24)] {
        let f = footer(&app, w, h);
        for key in [
            "s sched", "i procs", "u undo", "p pause", "? help", "q quit",
        ] {
            assert!(f.contains(key), "{w}x{h}: {key} missing: {f}");
        }
    }
    use blktune::tui::render::Theme;
    let help: Vec<String> = blktune::tui::render::help_lines(Theme { color: false }, false)
        .iter()
        .map(|l| l.to_string())
        .collect();
    for key in [
        "s/Enter", "n", "r", "t", "u", "o/F6", "/", "p/space", "i", "?", "q/Ctrl-C",
    ] {
        assert!(
            help.iter()
                .any(|l| l.split_whitespace().next() == Some(key)),
            "{key} not in help: {help:#?}"
        );
    }
}

/// The r_await chart of a screen: the fraction of its columns with a bar,
/// as a reader sees it (from the axis' first `─` to the pane's `│`).
fn r_await_filled(screen: &str) -> f64 {
    let rows: Vec<Vec<char>> = screen
        .lines()
        .map(|l| l.trim_matches('"').chars().collect())
        .collect();
    let axis = rows
        .iter()
        .find(|r| r.first() == Some(&'-') && r.contains(&'─'))
        .unwrap();
    let from = axis.iter().position(|&c| c == '─').unwrap();
    let to = axis.iter().position(|&c| c == '│').unwrap();
    let top = rows
        .iter()
        .position(|r| r.starts_with(&['r', '_', 'a']))
        .unwrap();
    let end = rows
        .iter()
        .position(|r| r.starts_with(&['w', '_', 'a']))
        .unwrap();
    let bars = (from..to)
        .filter(|&x| {
            rows[top..end]
                .iter()
                .any(|r| r.get(x).is_some_and(|c| "▁▂▃▄▅▆▇█".contains(*c)))
        })
        .count();
    bars as f64 / (to - from) as f64
}

/// Ten seconds into a session the charts span ten seconds, not two
/// minutes: the bars cover the chart's width (issue 16, item 13).
#[test]
fn ten_seconds_of_history_fill_the_charts() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    for i in 0..10 {
        m.run(&mut app, 1, &busy(2 + i % 4));
    }
    let term = screen(&app, 80, 24);
    let s = text(&term);
    let f = r_await_filled(&s);
    assert!(f >= 0.9, "bars over {:.0}% of the chart:\n{s}", f * 100.0);
    assert!(s.contains("\"-10s "), "the axis names the window:\n{s}");
    insta::assert_snapshot!(term.backend());
}

/// A change in a short window keeps its marker where it happened, the
/// before/after of it, and the newest interval's value under the name.
#[test]
fn a_change_in_a_short_window_keeps_its_marker_and_values() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 6, &busy(8));
    let mark = m.switch("sda", "none→kyber", "none", "kyber");
    app.on_feed(Feed::Change(mark));
    m.run(&mut app, 4, &busy(2));
    let term = screen(&app, 80, 24);
    let s = text(&term);
    let rows: Vec<Vec<char>> = s
        .lines()
        .map(|l| l.trim_matches('"').chars().collect())
        .collect();
    let axis = rows
        .iter()
        .find(|r| r.first() == Some(&'-') && r.contains(&'─'))
        .unwrap();
    let from = axis.iter().position(|&c| c == '─').unwrap();
    let to = axis.iter().position(|&c| c == '│').unwrap();
    let at = axis.iter().position(|&c| c == '▲').unwrap();
    // Six of the ten seconds had passed: 60% across the chart.
    let frac = (at - from) as f64 / (to - from) as f64;
    assert!((0.5..0.7).contains(&frac), "marker at {frac:.2}:\n{s}");
    let axis: String = axis.iter().collect();
    // The label beside its marker, on whichever side has room.
    assert!(
        axis.starts_with("-10s") && (axis.contains("▲none→kyber") || axis.contains("none→kyber▲")),
        "{axis}"
    );
    // The newest interval under the name; the scale above it is the old 8 ms.
    assert!(s.contains("\"2.00ms "), "{s}");
    assert!(s.contains("\"max 8.00 "), "{s}");
    assert!(s.contains("r_await  8.00  2.00"), "{s}");
}

/// Once a column pools several intervals the axis says how long one is;
/// `max` names the bars' scale.
#[test]
fn pooled_columns_say_how_long_one_is() {
    let (_m, app) = main_app();
    let s = text(&screen(&app, 80, 24));
    let axis = s
        .lines()
        .map(|l| l.trim_matches('"'))
        .find(|l| l.starts_with('-') && l.contains("now"))
        .unwrap();
    // 90 s over 36 columns.
    assert!(axis.starts_with("-1m30s"), "{axis}");
    assert!(axis.contains(" 1 col = 2.5s "), "{axis}");
    assert!(s.contains("\"max 11.0 "), "{s}");
    assert!(!s.contains('↑'), "{s}");
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
    // From the default %util, o: aqu-sz, then await (the sparkline's column).
    press(&mut app, &chars("oo"));
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
    // It does no I/O (the load is sda's): the last row by %util.
    press(&mut app, &[KeyCode::End, KeyCode::Char('s')]);
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

/// The help explains what the screen shows without a word for it: the
/// `!` of a row, the value under a chart's name, `max`, a column's length,
/// `n=K`, `~`, `short`, `±`, `dev99`, the pressure, the who panel's marks.
#[test]
fn help_explains_the_marks_of_the_table_and_charts() {
    use blktune::tui::render::Theme;
    for replay in [false, true] {
        let lines: Vec<String> = blktune::tui::render::help_lines(Theme { color: false }, replay)
            .iter()
            .map(|l| l.to_string())
            .collect();
        let at = lines
            .iter()
            .position(|l| l == "Marks and abbreviations")
            .unwrap();
        let section = lines[at + 1..].join("\n");
        for shown in [
            "!",
            "2.41ms",
            "max 3.72",
            "1 col = 3s",
            "-2m00s",
            "▲ │",
            "! busy",
            "n=K",
            "~+3%",
            "short",
            "±",
            "dev99",
            "↓",
            "Δ",
            "covers",
            "psi 13.1/2.4%",
            "share",
            "(rest)",
            "write-back",
        ] {
            assert!(
                section.lines().any(|l| l.trim_start().starts_with(shown)),
                "{shown}:\n{section}"
            );
        }
        assert!(lines.iter().all(|l| l.chars().count() <= 78), "{lines:#?}");
    }
}

/// Every mark on any committed screen (a character that is no letter,
/// digit, ASCII punctuation, box line or bar) is explained in the help's
/// glossary: a new mark cannot reach the screen without a word for it.
#[test]
fn every_mark_on_the_committed_screens_is_in_the_glossary() {
    use blktune::tui::command::GLOSSARY;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tui/snapshots");
    let explained: String = GLOSSARY.iter().map(|(s, _)| *s).collect();
    let is_drawing = |c: char| {
        // Box drawing (─│┌┐└┘...) and block elements (the bars: ▁..█).
        ('\u{2500}'..='\u{257f}').contains(&c) && c != '│' || ('\u{2581}'..='\u{2588}').contains(&c)
    };
    let mut missing = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "snap") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for c in text.chars() {
            if c.is_ascii() || c.is_alphanumeric() || is_drawing(c) || explained.contains(c) {
                continue;
            }
            missing
                .entry(c)
                .or_insert_with(|| path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "marks with no glossary entry: {missing:?}"
    );
    // And the ASCII marks the screens use alone.
    for mark in ["!", "~", "-", "n=K", "(rest)"] {
        assert!(GLOSSARY.iter().any(|(s, _)| s.contains(mark)), "{mark}");
    }
}
