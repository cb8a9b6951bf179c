//! Boxes over the main view: scheduler picker, tunables list, value editor,
//! help and the revert confirmation; the export and shoot-out dialogs have
//! their own files. Each clears its area first.

use super::Theme;
use super::frame::{boxed, centered, text_hints};
use crate::tui::app::{App, Overlay};
use crate::tui::command::{LIST, MAIN, REPLAY, TEXT};
use crate::tui::dialogs::editor::{Editor, Field, NrLimit, switch_note};
use crate::tui::dialogs::picker::{Picker, Tunables};
use blktune_core::sched::{SCHEDULERS, known_tunables, scheduler_help, tunable_help};
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
            cursor,
            ..
        })) => {
            let mut lines = Vec::new();
            let room = area.height.saturating_sub(6) as usize;
            let skip = (*cursor + 1).saturating_sub(room);
            for (i, (k, v)) in items.iter().enumerate().skip(skip).take(room) {
                let cur = if i == *cursor { "▶" } else { " " };
                let text = format!(
                    "{cur} {:<18}{:>9}  {}",
                    printable(k),
                    printable(v),
                    tunable_help(k)
                );
                let st = if i == *cursor {
                    t.selected()
                } else {
                    Style::new()
                };
                lines.push(Line::from(Span::styled(text, st)));
            }
            lines.push(Line::raw(""));
            lines.push(Line::from(Span::styled(
                "↑↓ move   Enter edit   Esc cancel",
                t.dim(),
            )));
            let h = lines.len() as u16 + 2;
            boxed(
                f,
                centered(area, 78, h),
                &format!("{scheduler} tunables of {device}"),
                lines,
                t,
            );
        }
        Some(Overlay::Edit(e)) => editor(f, area, e, app.page_kb, &app.nr_limit(&e.device), t),
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

/// Every line of the help: keys (from the command lists), schedulers, tunables.
pub fn help_lines(t: Theme, replay: bool) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(Span::styled("Keys", t.heading()))];
    for b in if replay { REPLAY } else { MAIN } {
        out.push(Line::raw(format!("  {:<10}{}", b.shown, b.help)));
    }
    out.push(Line::from(Span::styled("Table and charts", t.heading())));
    for (shown, what) in [
        (
            "!",
            "a row to look at: %util near 100, or await far above its usual",
        ),
        (
            "2.41ms",
            "under a chart's name: the newest interval, as in the table",
        ),
        (
            "max 3.72",
            "the top of the bars' scale (highest bar or newest value)",
        ),
        (
            "1 col = 3s",
            "on the axis: each bar is the mean over that long",
        ),
        ("-2m00s", "the window (shorter while the history is short)"),
        ("▲ │", "a change; its before/after is on the right"),
        (
            "! busy",
            "in the pane's title: the selected row (▶) is a `!` row",
        ),
    ] {
        out.push(Line::raw(format!("  {shown:<11}{what}")));
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
    out
}
