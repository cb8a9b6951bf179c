//! The TUI's styles on a `TestBackend`: what colour means (selection,
//! headings, one colour per chart, change markers, error vs info status),
//! and NO_COLOR (<https://no-color.org>): no colour in any cell, while the
//! selection and errors stay visible through bold and reverse video. The
//! insta snapshots hold characters only, so these are the tests of styles.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, Status, StatusKind};
use blktune::tui::render::Theme;
use blktune::tui::worker::protocol::Feed;
use crossterm::event::KeyCode;
use ratatui::buffer::{Buffer, Cell};
use ratatui::style::{Color, Modifier};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use tui_fixture::*;

const W: u16 = 100;
const H: u16 = 30;

/// sda busy for a minute, switched to kyber, busy for 30 s more: the
/// charts have bars and a change marker; `color` as the theme picked it.
fn scene(color: bool) -> (Machine, App) {
    let mut m = Machine::three();
    let mut app = m.app(None);
    app.color = color;
    for i in 0..60 {
        m.run(&mut app, 1, &busy(2 + i % 7));
    }
    let mark = m.switch("sda", "mq-deadline→kyber", "mq-deadline", "kyber");
    app.on_feed(Feed::Change(mark));
    for i in 0..30 {
        m.run(&mut app, 1, &busy(1 + i % 3));
    }
    (m, app)
}

fn buffer(app: &App) -> Buffer {
    screen(app, W, H).backend().buffer().clone()
}

/// Row `y` as text, with the x of each character.
fn row(buf: &Buffer, y: u16) -> (String, Vec<u16>) {
    let mut s = String::new();
    let mut xs = Vec::new();
    for x in 0..buf.area.width {
        for ch in buf[(x, y)].symbol().chars() {
            s.push(ch);
            xs.push(x);
        }
    }
    (s, xs)
}

/// Every `(x, y)` where `needle` starts.
fn find(buf: &Buffer, needle: &str) -> Vec<(u16, u16)> {
    let mut out = Vec::new();
    for y in 0..buf.area.height {
        let (s, xs) = row(buf, y);
        for (byte, _) in s.match_indices(needle) {
            out.push((xs[s[..byte].chars().count()], y));
        }
    }
    out
}

/// The one place `needle` is on the screen.
fn find_one(buf: &Buffer, needle: &str) -> (u16, u16) {
    let at = find(buf, needle);
    assert_eq!(at.len(), 1, "{needle:?} at {at:?}\n{}", dump(buf));
    at[0]
}

/// The cells of `needle`'s characters, where it is at `(x, y)`.
fn cells<'a>(buf: &'a Buffer, (x, y): (u16, u16), needle: &str) -> Vec<&'a Cell> {
    let n = needle.chars().count() as u16;
    (x..x + n).map(|x| &buf[(x, y)]).collect()
}

fn dump(buf: &Buffer) -> String {
    (0..buf.area.height)
        .map(|y| row(buf, y).0)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Does this cell show colour of its own (foreground or background)?
fn coloured(cell: &Cell) -> bool {
    cell.fg != Color::Reset || cell.bg != Color::Reset
}

fn reversed(cell: &Cell) -> bool {
    cell.modifier.contains(Modifier::REVERSED)
}

fn bold(cell: &Cell) -> bool {
    cell.modifier.contains(Modifier::BOLD)
}

/// The device table's row of `dev` (`▶sda` when selected, ` sdb` otherwise).
fn table_row(buf: &Buffer, dev: &str) -> u16 {
    (0..buf.area.height)
        .find(|&y| {
            let s = row(buf, y).0;
            s[s.char_indices().nth(1).map_or(0, |(i, _)| i)..].starts_with(&format!("{dev} "))
                && !s.contains("sched ")
        })
        .unwrap_or_else(|| panic!("no table row of {dev}\n{}", dump(buf)))
}

/// The chart bar cells (eighth blocks) of each chart, keyed by its label,
/// in the left half of the screen (the side panel is on the right).
fn chart_bars(buf: &Buffer) -> Vec<(&'static str, Vec<&Cell>)> {
    const LABELS: [&str; 4] = ["r_await", "w_await", "%util", "IOPS"];
    let tops: Vec<u16> = LABELS
        .iter()
        .map(|l| {
            let at: Vec<_> = find(buf, l).into_iter().filter(|(x, _)| *x == 0).collect();
            assert_eq!(at.len(), 1, "chart label {l}\n{}", dump(buf));
            at[0].1
        })
        .collect();
    let axis = find_one(buf, "▲").1;
    LABELS
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let end = tops.get(i + 1).copied().unwrap_or(axis);
            let bars = (tops[i]..end)
                .flat_map(|y| (9..buf.area.width / 2).map(move |x| (x, y)))
                .map(|p| &buf[p])
                .filter(|c| "▁▂▃▄▅▆▇█".contains(c.symbol()) && !c.symbol().is_empty())
                .collect::<Vec<_>>();
            assert!(bars.len() > 20, "{l}: {} bars\n{}", bars.len(), dump(buf));
            (*l, bars)
        })
        .collect()
}

fn with_status(app: &mut App, kind: StatusKind, text: &str) {
    app.status = Some(Status {
        text: text.into(),
        kind,
        at: app.now,
    });
}

#[test]
fn selected_row_is_highlighted() {
    let (_m, app) = scene(true);
    let buf = buffer(&app);
    let sel = table_row(&buf, "sda");
    let other = table_row(&buf, "sdb");
    assert_eq!(buf[(0, sel)].symbol(), "▶");
    // The whole width of the selected row is in reverse video (Theme::selected),
    // which shows with or without colour; the others are not.
    for x in 0..W {
        assert!(reversed(&buf[(x, sel)]), "selected row, x={x}");
        assert!(!reversed(&buf[(x, other)]), "sdb row, x={x}");
    }
}

#[test]
fn headings_are_coloured_and_bold() {
    let (_m, app) = scene(true);
    let buf = buffer(&app);
    let plain = &buf[(find_one(&buf, " sdb ").0 + 1, table_row(&buf, "sdb"))];
    assert_eq!(plain.symbol(), "s");
    assert!(!coloured(plain) && !bold(plain), "a table value: {plain:?}");
    for needle in ["DEVICE", "─ sda  ssd"] {
        let at = find_one(&buf, needle);
        for c in cells(&buf, at, needle) {
            assert!(c.fg != Color::Reset && bold(c), "{needle}: {c:?}");
        }
    }
    // The header bar stands out from the screen's background.
    let host = &buf[(1, 0)];
    assert!(host.bg != Color::Reset || reversed(host), "{host:?}");
    assert!(coloured(host), "header in colour: {host:?}");
}

#[test]
fn each_chart_has_its_own_colour() {
    let (_m, app) = scene(true);
    let buf = buffer(&app);
    let mut seen = BTreeSet::new();
    for (label, bars) in chart_bars(&buf) {
        let fgs: BTreeSet<String> = bars.iter().map(|c| format!("{:?}", c.fg)).collect();
        assert_eq!(
            fgs.len(),
            1,
            "{label}: one colour for its bars, got {fgs:?}"
        );
        assert!(bars[0].fg != Color::Reset, "{label}: bars in colour");
        seen.insert(format!("{:?}", bars[0].fg));
    }
    assert_eq!(seen.len(), 4, "four charts, four colours: {seen:?}");
}

#[test]
fn change_marker_is_styled() {
    let (_m, app) = scene(true);
    let buf = buffer(&app);
    let (mx, axis) = find_one(&buf, "▲");
    let marker = &buf[(mx, axis)];
    assert!(marker.fg != Color::Reset && bold(marker), "{marker:?}");
    // The label next to it is the marker's style; the axis line is not.
    // (The side panel names the change too.)
    let label = find(&buf, "mq-deadline→kyber")
        .into_iter()
        .find(|p| p.1 == axis);
    let label = label.expect("the change's label on the time axis");
    for c in cells(&buf, label, "mq-deadline→kyber") {
        assert_eq!((c.fg, c.modifier), (marker.fg, marker.modifier), "{c:?}");
    }
    let line = (9..mx).map(|x| &buf[(x, axis)]).find(|c| c.symbol() == "─");
    let line = line.expect("axis line left of the marker");
    assert!(line.fg != marker.fg, "axis {line:?} vs marker {marker:?}");
    // The marker column runs up through the charts (above the bars) in the
    // same style, and the bars have other colours.
    let column: Vec<&Cell> = (1..axis)
        .map(|y| &buf[(mx, y)])
        .filter(|c| c.symbol() == "│")
        .collect();
    assert!(
        column.len() >= 4,
        "one stroke per chart at least\n{}",
        dump(&buf)
    );
    for c in &column {
        assert_eq!((c.fg, c.modifier), (marker.fg, marker.modifier));
    }
    for (label, bars) in chart_bars(&buf) {
        assert!(bars[0].fg != marker.fg, "{label} bars look like the marker");
    }
}

#[test]
fn error_status_differs_from_info_and_done() {
    let (_m, mut app) = scene(true);
    let mut look = |kind| {
        with_status(&mut app, kind, "status text");
        let buf = buffer(&app);
        let at = find_one(&buf, "status text");
        assert_eq!(at, (1, H - 2), "the status line");
        let c = buf[at].clone();
        // One style along the whole message.
        for o in cells(&buf, at, "status text") {
            assert_eq!(o.style(), c.style());
        }
        c
    };
    let info = look(StatusKind::Info);
    let done = look(StatusKind::Done);
    let error = look(StatusKind::Error);
    assert!(error.fg != Color::Reset, "error in colour: {error:?}");
    assert!(error.fg != info.fg, "error {error:?} vs info {info:?}");
    assert!(done.fg != Color::Reset && done.fg != error.fg, "{done:?}");
    // Errors are bold too, so they stand out without colour.
    assert!(bold(&error) && !bold(&info));
}

#[test]
fn picker_cursor_is_highlighted() {
    let (_m, mut app) = scene(true);
    press(&mut app, &[KeyCode::Char('s'), KeyCode::Down]);
    let buf = buffer(&app);
    let title = find_one(&buf, "scheduler of sda");
    assert!(
        cells(&buf, title, "scheduler of sda")
            .iter()
            .all(|c| c.fg != Color::Reset && bold(c))
    );
    let rows = picker_rows(&buf);
    let cursor: Vec<_> = rows.iter().filter(|(_, cur)| *cur).collect();
    assert_eq!(cursor.len(), 1, "{rows:?}\n{}", dump(&buf));
    for ((x, y), cur) in &rows {
        // The option's name, right of the cursor and active marks.
        for c in cells(&buf, (x + 4, *y), "none") {
            assert_eq!(reversed(c), *cur, "{:?}", row(&buf, *y).0);
        }
    }
}

/// The picker's option rows: `(x, y)` of the cursor column and whether the cursor is there.
fn picker_rows(buf: &Buffer) -> Vec<((u16, u16), bool)> {
    let (bx, by) = find_one(buf, "scheduler of sda");
    let left = bx - 2; // "┌ scheduler of sda "
    (by + 1..buf.area.height)
        .take_while(|&y| buf[(left, y)].symbol() == "│")
        .filter_map(|y| {
            let s = row(buf, y).0;
            let known = ["none", "mq-deadline", "kyber", "bfq"];
            known
                .iter()
                .any(|k| s.contains(&format!(" {k} ")))
                .then(|| ((left + 1, y), buf[(left + 1, y)].symbol() == "▶"))
        })
        .collect()
}

/// Screens of every kind the live TUI draws, with colour or without.
fn every_screen(color: bool) -> Vec<(&'static str, Buffer)> {
    let (_m, mut app) = scene(color);
    let mut out = Vec::new();
    for (kind, name) in [
        (StatusKind::Info, "info status"),
        (StatusKind::Done, "done status"),
        (StatusKind::Error, "error status"),
    ] {
        with_status(&mut app, kind, "status text");
        out.push((name, buffer(&app)));
    }
    app.status = None;
    let keys: [(&str, &[KeyCode]); 6] = [
        ("picker", &[KeyCode::Char('s'), KeyCode::Down]),
        ("tunables", &[KeyCode::Char('t')]),
        ("nr editor", &[KeyCode::Char('n')]),
        ("export", &[KeyCode::Char('e')]),
        ("help", &[KeyCode::Char('?')]),
        ("filter", &[KeyCode::Char('/'), KeyCode::Char('s')]),
    ];
    for (name, k) in keys {
        let mut app = scene(color).1;
        press(&mut app, k);
        out.push((name, buffer(&app)));
    }
    let mut m = Machine::three();
    let mut ro = m.app(Some("not root"));
    ro.color = color;
    m.run(&mut ro, 10, &busy(4));
    out.push(("read-only banner", buffer(&ro)));
    let mut waiting = m.app(None);
    waiting.color = color;
    out.push(("before the first sample", buffer(&waiting)));
    out
}

#[test]
fn no_color_means_no_colour_in_any_cell() {
    let screens = every_screen(false);
    for (name, buf) in &screens {
        for (i, c) in buf.content().iter().enumerate() {
            let (x, y) = buf.pos_of(i);
            assert!(
                c.fg == Color::Reset && c.bg == Color::Reset,
                "{name}: colour at ({x},{y}) {c:?}\n{}",
                dump(buf)
            );
        }
    }
    // The same screens with colour do use it, so the check above can fail.
    for (name, buf) in every_screen(true) {
        assert!(buf.content().iter().any(coloured), "{name} has no colour");
    }
}

#[test]
fn no_color_keeps_selection_and_errors_visible() {
    let (_m, mut app) = scene(false);
    let buf = buffer(&app);
    let sel = table_row(&buf, "sda");
    let other = table_row(&buf, "sdb");
    for x in 0..W {
        assert!(reversed(&buf[(x, sel)]), "selected row, x={x}");
        assert!(!reversed(&buf[(x, other)]), "sdb row, x={x}");
    }
    // Headings and the change marker are bold; the axis line is not.
    let (mx, axis) = find_one(&buf, "▲");
    assert!(bold(&buf[(mx, axis)]));
    assert!(bold(&buf[find_one(&buf, "DEVICE")]));
    // The header bar is in reverse video instead of a background colour.
    assert!(reversed(&buf[(1, 0)]));
    // An error is bold, an info line is not.
    with_status(&mut app, StatusKind::Error, "status text");
    let error = buffer(&app)[(1, H - 2)].clone();
    with_status(&mut app, StatusKind::Info, "status text");
    let info = buffer(&app)[(1, H - 2)].clone();
    assert!(bold(&error) && !bold(&info), "{error:?} {info:?}");
    // The picker's cursor row is in reverse video, the other options are not.
    app.status = None;
    press(&mut app, &[KeyCode::Char('s'), KeyCode::Down]);
    let buf = buffer(&app);
    let rows = picker_rows(&buf);
    assert!(rows.len() >= 3, "{rows:?}\n{}", dump(&buf));
    assert_eq!(rows.iter().filter(|(_, cur)| *cur).count(), 1);
    for ((x, y), cur) in rows {
        assert_eq!(reversed(&buf[(x + 4, y)]), cur, "{:?}", row(&buf, y).0);
    }
}

#[test]
fn theme_follows_no_color() {
    // https://no-color.org: set and not empty means no colour, any value.
    assert!(Theme::from_no_color(None).color);
    assert!(Theme::from_no_color(Some(OsStr::new(""))).color);
    for v in ["1", "0", "false", "yes", " "] {
        assert!(!Theme::from_no_color(Some(OsStr::new(v))).color, "{v:?}");
    }
}
