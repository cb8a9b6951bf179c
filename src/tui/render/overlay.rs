//! Boxes over the main view: scheduler picker, tunables list, value editor,
//! help and the revert confirmation; the export and shoot-out dialogs have
//! their own files. Each clears its area first.

use super::Theme;
use super::frame::{boxed, centered, text_hints};
use crate::tui::app::{App, Overlay};
use crate::tui::command::{GLOSSARY, LIST, MAIN, REPLAY, TEXT};
use crate::tui::dialogs::editor::{Editor, Field, NrLimit, knob_hint, switch_note};
use crate::tui::dialogs::picker::{Picker, Tunables};
use blktune_core::sched::{
    QUEUE_KNOBS, SCHEDULERS, knob_help, known_tunables, scheduler_help, tunable_help,
};
use blktune_core::text::printable;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Draw the open overlay, if any.
pub fn render(f: &mut Frame, area: Rect, app: &App, t: Theme) {
    match &app.overlay {
        None => {}
        Some(Overlay::Picker(Picker {
            device,
            options,
            active,
            cursor,
            members,
            shared,
            ..
        })) => {
            let mut lines = Vec::new();
            for (i, o) in options.iter().enumerate() {
                let cur = if i == *cursor { "▶" } else { " " };
                let act = if o == active { "●" } else { " " };
                let text = format!("{cur} {act} {:<12}{}", printable(o), scheduler_help(o));
                let st = if i == *cursor {
                    t.selected()
                } else {
                    Style::new()
                };
                lines.push(Line::from(Span::styled(text, st)));
            }
            // Under the cursor another scheduler: what the switch resets
            // (on a stack's first disk: they are asked the same).
            let target = members.first().map_or(device.as_str(), |(n, _)| n.as_str());
            let note = options
                .get(*cursor)
                .filter(|o| *o != active)
                .zip(app.devices.iter().find(|d| d.name == target))
                .map(|(o, d)| switch_note(d, o))
                .unwrap_or_default();
            lines.push(Line::from(Span::styled(note, t.dim())));
            for s in shared {
                lines.push(Line::from(Span::styled(
                    format!("{}: changed for it too", printable(s)),
                    t.dim(),
                )));
            }
            lines.push(Line::from(Span::styled(
                "● active   ↑↓ move   Enter apply   Esc cancel",
                t.dim(),
            )));
            let h = lines.len() as u16 + 2;
            let title = if members.is_empty() {
                format!("scheduler of {device}")
            } else {
                let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
                format!(
                    "scheduler of the disks under {device}: {}",
                    printable(&names.join(", "))
                )
            };
            boxed(f, centered(area, 78, h), &title, lines, t);
        }
        Some(Overlay::Tunables(Tunables {
            device,
            scheduler,
            items,
            knobs,
            cursor,
            ..
        })) => {
            // The tunables, then a heading and the queue settings; the
            // cursor counts entries, not the heading.
            let entry = |i: usize, k: &str, v: &str, help: &str| {
                let cur = if i == *cursor { "▶" } else { " " };
                let text = format!("{cur} {:<18}{:>9}  {help}", printable(k), printable(v));
                let st = if i == *cursor {
                    t.selected()
                } else {
                    Style::new()
                };
                Line::from(Span::styled(text, st))
            };
            let mut rows: Vec<(Option<usize>, Line)> = items
                .iter()
                .enumerate()
                .map(|(i, (k, v))| (Some(i), entry(i, k, v, tunable_help(k))))
                .collect();
            if !knobs.is_empty() {
                rows.push((
                    None,
                    Line::from(Span::styled(
                        "queue settings next to the scheduler",
                        t.heading(),
                    )),
                ));
                let n = items.len();
                rows.extend(
                    knobs
                        .iter()
                        .enumerate()
                        .map(|(j, (k, v))| (Some(n + j), entry(n + j, k, v, knob_help(k)))),
                );
            }
            let room = area.height.saturating_sub(6) as usize;
            let at = rows
                .iter()
                .position(|(i, _)| *i == Some(*cursor))
                .unwrap_or(0);
            let skip = (at + 1).saturating_sub(room);
            let mut lines: Vec<Line> = rows
                .into_iter()
                .skip(skip)
                .take(room)
                .map(|(_, l)| l)
                .collect();
            lines.push(Line::raw(""));
            lines.push(Line::from(Span::styled(
                "↑↓ move   Enter edit   Esc cancel",
                t.dim(),
            )));
            let h = lines.len() as u16 + 2;
            let title = match (items.is_empty(), knobs.is_empty()) {
                (false, true) => format!("{scheduler} tunables of {device}"),
                (true, _) => format!("queue settings of {device}"),
                (false, false) => format!("{scheduler} tunables and queue settings of {device}"),
            };
            boxed(f, centered(area, 78, h), &title, lines, t);
        }
        Some(Overlay::Edit(e)) => editor(f, area, e, app.page_kb, &app.nr_limit(&e.device), t),
        Some(Overlay::RecordPath(r)) => {
            let rect = centered(area, 78, 6);
            // The end of a long path, where the typing happens, stays in view.
            let room = usize::from(rect.width.saturating_sub(3));
            let lines = vec![
                Line::from(Span::styled(
                    format!("{}: record to", printable(&r.why)),
                    t.dim(),
                )),
                Line::from(vec![Span::styled(
                    format!("{}▏", keep_end(&printable(&r.input), room)),
                    t.heading(),
                )]),
                Line::from(Span::styled(
                    format!("a missing directory is made (mode {:04o})", r.mode),
                    t.dim(),
                )),
                Line::from(Span::styled("Enter record   Esc no recording", t.dim())),
            ];
            boxed(f, rect, "record where?", lines, t);
        }
        Some(Overlay::Export(d)) => super::export::render(f, area, d, t),
        Some(Overlay::ShootOut(d)) => super::shootout::render(f, area, d, t),
        Some(Overlay::Help { scroll }) => {
            let r = Rect::new(
                area.x + 1,
                area.y + 1,
                area.width.saturating_sub(2),
                area.height.saturating_sub(2),
            );
            let lines = help_lines(t, app.replay.is_some());
            let max = lines
                .len()
                .saturating_sub(r.height.saturating_sub(2) as usize);
            let skip = (*scroll as usize).min(max);
            boxed(
                f,
                r,
                "help  ↑↓ PgUp PgDn Home End scroll  Esc close",
                lines.into_iter().skip(skip).collect(),
                t,
            );
        }
        Some(Overlay::Confirm { devices }) => {
            let mut lines = vec![Line::raw(
                "Put back the settings from before this session on:",
            )];
            for s in app.session() {
                lines.push(Line::raw(format!(
                    "  {}: {}",
                    printable(&s.device),
                    printable(&s.labels.join(", "))
                )));
            }
            lines.push(Line::raw(""));
            lines.push(Line::from(Span::styled("y revert   n cancel", t.heading())));
            let h = devices.len() as u16 + 5;
            boxed(f, centered(area, 70, h), "revert every change?", lines, t);
        }
    }
}

fn editor(f: &mut Frame, area: Rect, e: &Editor, page_kb: u64, nr: &NrLimit, t: Theme) {
    let range = match &e.field {
        Field::NrRequests => nr.hint(),
        Field::ReadAheadKb => format!("KiB, a multiple of the page size ({page_kb} KiB)"),
        Field::Tunable(n) => tunable_help(n).to_string(),
        Field::Knob(n) => knob_hint(n, nr, page_kb),
    };
    let verdict = match e.check(page_kb, nr) {
        Ok(_) if e.input.trim() == e.current => Line::from(Span::styled("= unchanged", t.dim())),
        Ok(_) => Line::from(Span::styled("✓ valid: Enter applies", t.done())),
        Err(why) => Line::from(Span::styled(format!("✗ {}", printable(&why)), t.error())),
    };
    let lines = vec![
        Line::raw(format!("now  {}", printable(&e.current))),
        Line::from(vec![
            Span::raw("new  "),
            Span::styled(format!("{}▏", printable(&e.input)), t.heading()),
            Span::styled(
                if e.prefilled {
                    "  (typing replaces it)"
                } else {
                    ""
                },
                t.dim(),
            ),
        ]),
        verdict,
        Line::from(Span::styled(range, t.dim())),
        Line::from(Span::styled(text_hints(), t.dim())),
    ];
    boxed(
        f,
        centered(area, 66, 7),
        &format!("{} of {}", e.field.label(), e.device),
        lines,
        t,
    );
}

/// How far the help can scroll in a `width` x `height` terminal: its lines
/// less the rows its box shows (as [`render`] draws it).
pub fn help_max_scroll(width: u16, height: u16, app: &App) -> Option<usize> {
    let a = super::layout(Rect::new(0, 0, width, height), app)?;
    let over = height - a.status.height.saturating_sub(1);
    // The box is inset by one row top and bottom, and has its borders.
    let rows = over.saturating_sub(2).saturating_sub(2) as usize;
    Some(
        help_lines(Theme { color: false }, app.replay.is_some())
            .len()
            .saturating_sub(rows),
    )
}

/// The widest help line (the overlay is inset into an 80-column screen).
const HELP_WIDTH: usize = 78;

/// Every line of the help: keys (from the command lists), the glossary of
/// marks, schedulers, tunables.
pub fn help_lines(t: Theme, replay: bool) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(Span::styled("Keys", t.heading()))];
    for b in if replay { REPLAY } else { MAIN } {
        out.push(Line::raw(format!("  {:<10}{}", b.shown, b.help)));
    }
    // The glossary: a mark, then what it means, wrapped under itself.
    out.push(Line::from(Span::styled(
        "Marks and abbreviations",
        t.heading(),
    )));
    for (shown, means) in GLOSSARY {
        if shown.is_empty() {
            out.push(Line::from(Span::styled(format!(" {means}"), t.dim())));
            continue;
        }
        let pad = shown.chars().count().max(11) + 3;
        for (i, l) in super::width::wrap(means, HELP_WIDTH - pad)
            .into_iter()
            .enumerate()
        {
            let head = if i == 0 { *shown } else { "" };
            out.push(Line::raw(format!("  {head:<w$}{l}", w = pad - 2)));
        }
    }
    out.push(Line::from(Span::styled(
        "In lists and editors",
        t.heading(),
    )));
    // Lists and editors share Enter and Esc: each key once.
    let mut seen = Vec::new();
    for b in LIST.iter().chain(TEXT).filter(|b| b.hint.is_some()) {
        if !seen.contains(&b.shown) {
            seen.push(b.shown);
            out.push(Line::raw(format!("  {:<10}{}", b.shown, b.help)));
        }
    }
    out.push(Line::from(Span::styled("Schedulers", t.heading())));
    for s in SCHEDULERS {
        out.push(Line::raw(format!("  {s:<12}{}", scheduler_help(s))));
    }
    for s in SCHEDULERS.iter().skip(1) {
        out.push(Line::from(Span::styled(
            format!("{s} tunables"),
            t.heading(),
        )));
        for k in known_tunables(s) {
            out.push(Line::raw(format!("  {k:<18}{}", tunable_help(k))));
        }
    }
    // The queue settings next to the scheduler (t lists them after the
    // tunables), each with why it is one to reach for.
    out.push(Line::from(Span::styled(
        "Queue settings next to the scheduler (t)",
        t.heading(),
    )));
    for k in QUEUE_KNOBS {
        let head = if k.settable {
            k.name.to_string()
        } else {
            format!("{} (shown)", k.name)
        };
        out.push(Line::raw(format!("  {head:<18}{}", k.help)));
        for l in super::width::wrap(k.why, HELP_WIDTH - 22) {
            out.push(Line::from(Span::styled(format!("{:<22}{l}", ""), t.dim())));
        }
    }
    out
}

/// `s` cut to its last `room` characters (at least 2), with `…` first
/// where the beginning was left out.
fn keep_end(s: &str, room: usize) -> String {
    let room = room.max(2);
    let n = s.chars().count();
    if n <= room {
        return s.to_owned();
    }
    std::iter::once('…')
        .chain(s.chars().skip(n - (room - 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::keep_end;

    #[test]
    fn a_long_path_keeps_its_end() {
        assert_eq!(keep_end("/var/lib/x", 20), "/var/lib/x");
        assert_eq!(keep_end("/var/lib/blktune/rec.gz", 8), "…/rec.gz");
    }
}
