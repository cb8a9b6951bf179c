//! The export dialog (`e`; its state and keys: `dialogs/export.rs`).
//!
//! ```text
//! ┌ export a udev rule ──────────────────────────────────────────────────────┐
//! │devices  loop3 (this device)                         a: all changed (0)   │
//! │match    kernel        m: id model class kernel                           │
//! │path     /etc/udev/rules.d/61-blktune.rules                    f: edit    │
//! │! warning: KERNEL names are not stable ...                                │
//! │── preview ───────────────────────────────────────────────── 1-12 of 30 ──│
//! │# udev rules written by blktune ...                                       │
//! │Enter write  m match  a all  f file  ↑ scroll  Esc close                  │
//! └──────────────────────────────────────────────────────────────────────────┘
//! ```
//! At most three warning lines fit above the preview (the third says how many
//! more); when the rule has warnings, Enter first replaces the preview with all
//! of them, wrapped, and only `y` writes.

use super::Theme;
use super::frame::{big, boxed, text_hints};
use super::width::{clip, wrap};
use crate::tui::command::EXPORT;
use crate::tui::dialogs::export::{ExportDialog, Focus, STRATEGIES};
use blktune_core::text::printable;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// Draw the export dialog.
pub fn render(frame: &mut Frame, area: Rect, export_dialog: &ExportDialog, theme: Theme) {
    let r = big(area);
    let inner_h = r.height.saturating_sub(2) as usize;
    let mut lines = Vec::new();
    let scope = if export_dialog.all && !export_dialog.changed.is_empty() {
        format!("{} (changed in this session)", export_dialog.names())
    } else {
        format!("{} (this device)", export_dialog.names())
    };
    lines.push(Line::from(vec![
        Span::styled("devices  ", theme.dim()),
        Span::raw(format!("{:<44}", printable(&scope))),
        Span::styled(
            format!("a: all changed ({})", export_dialog.changed.len()),
            theme.dim(),
        ),
    ]));
    let choices: Vec<&str> = STRATEGIES.iter().map(|s| s.label()).collect();
    lines.push(Line::from(vec![
        Span::styled("match    ", theme.dim()),
        Span::styled(
            format!("{:<14}", export_dialog.strategy.label()),
            theme.heading(),
        ),
        Span::styled(format!("m: {}", choices.join(" ")), theme.dim()),
    ]));
    let path = match &export_dialog.focus {
        Focus::Path { .. } => Line::from(vec![
            Span::styled("path     ", theme.dim()),
            Span::styled(
                format!("{}▏", printable(&export_dialog.path)),
                theme.heading(),
            ),
            Span::styled("  Enter keep  Esc undo", theme.dim()),
        ]),
        _ => Line::from(vec![
            Span::styled("path     ", theme.dim()),
            Span::raw(format!("{:<52}", printable(&export_dialog.path))),
            Span::styled("f: edit", theme.dim()),
        ]),
    };
    lines.push(path);
    if let Some(why) = &export_dialog.read_only {
        lines.push(Line::from(Span::styled(
            format!(
                "read-only ({why}): only a file is written, no device changes; /etc needs root"
            ),
            theme.dim(),
        )));
    }
    let (text, warnings): (Vec<&str>, Vec<String>) = match &export_dialog.preview {
        Ok(p) => (p.text.lines().collect(), p.warnings.clone()),
        Err(e) => (Vec::new(), vec![format!("cannot export: {e}")]),
    };
    let w = r.width.saturating_sub(2) as usize;
    if export_dialog.focus == Focus::Warnings {
        warnings_body(&mut lines, &warnings, inner_h, w, theme);
        lines.push(Line::from(Span::styled(
            format!(
                "y write {} anyway   n back",
                printable(export_dialog.path.trim())
            ),
            theme.heading(),
        )));
        boxed(frame, r, "export a udev rule", lines, theme);
        return;
    }
    // At most WARN_LINES lines here; Enter lists them all before writing.
    const WARN_LINES: usize = 3;
    let shown_w = if warnings.len() > WARN_LINES {
        WARN_LINES - 1
    } else {
        warnings.len()
    };
    for warning in warnings.iter().take(shown_w) {
        lines.push(Line::from(Span::styled(
            clip(&printable(&format!("! {warning}")), w),
            theme.error(),
        )));
    }
    if warnings.len() > shown_w {
        lines.push(Line::from(Span::styled(
            clip(
                &format!(
                    "! +{} more warnings (Enter lists them all before writing)",
                    warnings.len() - shown_w
                ),
                w,
            ),
            theme.error(),
        )));
    }
    let room = inner_h.saturating_sub(lines.len() + 2);
    let skip = (export_dialog.scroll as usize).min(text.len().saturating_sub(1));
    let shown = text.len().saturating_sub(skip).min(room);
    let pos = if text.is_empty() {
        "empty".to_string()
    } else {
        format!("{}-{} of {}", skip + 1, skip + shown, text.len())
    };
    let label = format!("── preview {pos} ");
    lines.push(Line::from(Span::styled(
        format!(
            "{label}{}",
            "─".repeat(w.saturating_sub(label.chars().count()))
        ),
        theme.dim(),
    )));
    for l in text.iter().skip(skip).take(room) {
        lines.push(Line::raw(printable(l).into_owned()));
    }
    while lines.len() < inner_h.saturating_sub(1) {
        lines.push(Line::raw(""));
    }
    let hint = match export_dialog.focus {
        // Drawn by `warnings_body` above.
        Focus::Warnings => Line::raw(""),
        Focus::Overwrite => Line::from(Span::styled(
            format!(
                "{} exists: y overwrite   n keep it",
                printable(export_dialog.path.trim())
            ),
            theme.error(),
        )),
        Focus::Writing => Line::from(Span::styled("writing…", theme.dim())),
        Focus::Path { .. } => Line::from(Span::styled(
            format!("type the path   {}", text_hints()),
            theme.dim(),
        )),
        // The footer's list of keys, Enter first.
        Focus::Options => Line::from(Span::styled(
            EXPORT
                .iter()
                .filter_map(|b| Some((b.action, b.shown.split('/').next()?, b.hint?)))
                .filter(|(a, _, _)| *a != crate::tui::command::Action::Confirm)
                .fold(String::from("Enter write"), |acc, (_, k, h)| {
                    format!("{acc}  {k} {h}")
                }),
            theme.heading(),
        )),
    };
    lines.push(hint);
    boxed(frame, r, "export a udev rule", lines, theme);
}

/// The confirmation step: every warning, wrapped, in place of the preview.
/// If they do not all fit, the rest is counted (they are also in the file's
/// `# Warnings:` header, which the preview shows).
fn warnings_body(
    lines: &mut Vec<Line>,
    warnings: &[String],
    inner_h: usize,
    width: usize,
    theme: Theme,
) {
    let n = warnings.len();
    lines.push(Line::from(Span::styled(
        format!(
            "── {n} warning{}: read before writing ",
            if n == 1 { "" } else { "s" }
        ),
        theme.heading(),
    )));
    // Room for the warnings, leaving the "+N more" line and the hint.
    let room = inner_h.saturating_sub(lines.len() + 2);
    let mut used = 0;
    let mut done = 0;
    for warning in warnings {
        let wrapped = wrap(&printable(warning), width.saturating_sub(2));
        let last = done + 1 == n;
        let limit = if last { room + 1 } else { room };
        if used + wrapped.len() > limit {
            break;
        }
        for (i, l) in wrapped.into_iter().enumerate() {
            let l = if i == 0 {
                format!("! {l}")
            } else {
                format!("  {l}")
            };
            lines.push(Line::from(Span::styled(clip(&l, width), theme.error())));
            used += 1;
        }
        done += 1;
    }
    if done < n {
        lines.push(Line::from(Span::styled(
            clip(
                &format!(
                    "+{} more (all are in the file's \"# Warnings:\" header)",
                    n - done
                ),
                width,
            ),
            theme.error(),
        )));
    }
    while lines.len() < inner_h.saturating_sub(1) {
        lines.push(Line::raw(""));
    }
}
