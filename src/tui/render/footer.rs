//! The status line and the key hints (from the command lists).

use super::{Theme, put};
use crate::tui::app::{App, Overlay, StatusKind};
use crate::tui::bench_dialog::Stage;
use crate::tui::command::{Action, Mode};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

/// Draw the status line and the hints.
pub fn render(buf: &mut Buffer, status: Rect, footer: Rect, app: &App, t: Theme) {
    let (text, st) = if app.filter_typing && app.overlay.is_none() {
        (
            format!("filter: {}▏  (Enter keeps it, Esc clears)", app.filter),
            t.heading(),
        )
    } else if let Some(s) = &app.status {
        let st = match s.kind {
            StatusKind::Info => Style::new(),
            StatusKind::Done => t.done(),
            StatusKind::Error => t.error(),
        };
        (s.text.clone(), st)
    } else if !app.filter.is_empty() {
        (
            format!("filter: {}  (Esc clears)", app.filter),
            Style::new(),
        )
    } else if app.samples == 0 {
        ("waiting for the first sample…".into(), t.dim())
    } else {
        (String::new(), Style::new())
    };
    put(
        buf,
        status.x + 1,
        status.y,
        &text,
        status.width.saturating_sub(1),
        st,
    );

    let mode = app.mode();
    let mut x = footer.x + 1;
    for (key, hint) in hints(app, mode) {
        let need = (key.chars().count() + hint.len() + 3) as u16;
        if x + need > footer.right() {
            break;
        }
        put(buf, x, footer.y, key, 8, t.key());
        x += key.chars().count() as u16 + 1;
        put(buf, x, footer.y, hint, 12, Style::new());
        x += hint.len() as u16 + 2;
    }
}

/// The footer's (key, hint) pairs: the mode's hinted bindings that do
/// something now. Read-only mode leaves out the change keys; the shoot-out
/// shows only the keys of its stage.
fn hints(app: &App, mode: Mode) -> Vec<(&'static str, &'static str)> {
    let stage = match &app.overlay {
        Some(Overlay::Bench(d)) => Some(&d.stage),
        _ => None,
    };
    mode.bindings()
        .iter()
        .filter_map(|bd| {
            let hint = bd.hint?;
            if mode == Mode::Main && bd.changes && app.read_only.is_some() {
                return None;
            }
            let hint = match (mode, stage) {
                (Mode::Bench, Some(st)) => bench_hint(st, bd.action, hint)?,
                _ => hint,
            };
            Some((short_key(bd.shown), hint))
        })
        .collect()
}

/// The hint of a shoot-out key in this stage, or `None` when it does nothing there.
fn bench_hint(stage: &Stage, a: Action, hint: &'static str) -> Option<&'static str> {
    match (stage, a) {
        (Stage::Setup, Action::Cycle | Action::Confirm) => Some(hint),
        (Stage::Running { cancelling, .. }, Action::Cancel) => (!*cancelling).then_some("cancel"),
        (Stage::Done(r), Action::ApplyWinner | Action::Export) => {
            r.verdict.is_some().then_some(hint)
        }
        (Stage::Setup | Stage::Done(_) | Stage::Failed(_), Action::Cancel) => Some("close"),
        _ => None,
    }
}

/// The first key of `s/Enter`; `/` itself stays `/`.
fn short_key(shown: &str) -> &str {
    match shown.split_once('/') {
        Some((first, _)) if !first.is_empty() => first,
        _ => shown,
    }
}
