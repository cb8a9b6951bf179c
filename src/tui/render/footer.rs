//! The status line and the key hints (from the command lists).

use super::{Theme, put};
use crate::tui::app::{App, StatusKind};
use crate::tui::command::Mode;
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
    for bd in mode.bindings() {
        let Some(hint) = bd.hint else { continue };
        let key = short_key(bd.shown);
        let need = (key.chars().count() + hint.len() + 3) as u16;
        if x + need > footer.right() {
            break;
        }
        let off = mode == Mode::Main && bd.changes && app.read_only.is_some();
        let ks = if off { t.dim() } else { t.key() };
        let hs = if off { t.dim() } else { Style::new() };
        put(buf, x, footer.y, key, 8, ks);
        x += key.chars().count() as u16 + 1;
        put(buf, x, footer.y, hint, 12, hs);
        x += hint.len() as u16 + 2;
    }
}

/// The first key of `s/Enter`; `/` itself stays `/`.
fn short_key(shown: &str) -> &str {
    match shown.split_once('/') {
        Some((first, _)) if !first.is_empty() => first,
        _ => shown,
    }
}
