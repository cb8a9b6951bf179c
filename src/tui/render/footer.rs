//! The status line and the key hints (from the command lists).

use super::{Theme, put};
use crate::tui::app::{App, Overlay, StatusKind};
use crate::tui::command::{Action, Mode};
use crate::tui::dialogs::shootout::Stage;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

/// The status text and its style.
fn status_text(app: &App, t: Theme) -> (String, Style) {
    if app.filter_typing && app.overlay.is_none() {
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
    }
}

/// Rows the status needs at this terminal width: 2 when it does not fit one.
pub fn status_rows(app: &App, width: u16) -> u16 {
    let (text, _) = status_text(app, Theme { color: false });
    if text.chars().count() > width.saturating_sub(1) as usize {
        2
    } else {
        1
    }
}

/// `text` in at most two lines of `w` columns: broken at a space when one
/// is in the second half of the first line; a second line that is still too
/// long loses its middle, so the device and value (at the start) and the
/// cause (at the end) stay visible.
pub fn wrap_status(text: &str, w: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= w || w < 8 {
        return vec![text.to_string()];
    }
    let cut = chars[..=w]
        .iter()
        .rposition(|&c| c == ' ')
        .filter(|&i| i >= w / 2)
        .unwrap_or(w);
    let first: String = chars[..cut].iter().collect();
    let rest: Vec<char> = chars[cut..]
        .iter()
        .copied()
        .skip_while(|&c| c == ' ')
        .collect();
    let second = if rest.len() <= w {
        rest.into_iter().collect()
    } else {
        let head = (w - 1) / 3;
        let tail = w - 1 - head;
        let mut s: String = rest[..head].iter().collect();
        s.push('…');
        s.extend(&rest[rest.len() - tail..]);
        s
    };
    vec![first, second]
}

/// Draw the status line (one or two rows) and the hints.
pub fn render(buf: &mut Buffer, status: Rect, footer: Rect, app: &App, t: Theme) {
    let (text, st) = status_text(app, t);
    let w = status.width.saturating_sub(1);
    let lines = if status.height >= 2 {
        wrap_status(&text, w as usize)
    } else {
        vec![text]
    };
    for (i, line) in lines.iter().enumerate().take(status.height as usize) {
        put(buf, status.x + 1, status.y + i as u16, line, w, st);
    }

    let mode = app.mode();
    let mut x = footer.x + 1;
    for (key, hint) in fit_hints(hints(app, mode), footer.width.saturating_sub(1) as usize) {
        put(buf, x, footer.y, key, 8, t.key());
        x += key.chars().count() as u16 + 1;
        put(buf, x, footer.y, hint, 12, Style::new());
        x += hint.len() as u16 + 2;
    }
}

/// Columns a hint takes with the gap after it.
fn hint_width((key, hint): &(&str, &str)) -> usize {
    key.chars().count() + 1 + hint.chars().count() + 2
}

/// Keys in the order they leave a narrow footer, last the ones an incident
/// needs first: `s` (the switch), `i` (who does the I/O), `u` (undo),
/// `p` (pause). Keys not listed go before these, from the end of the list.
const DROP_ORDER: [&str; 9] = ["t", "r", "n", "/", "o", "p", "u", "i", "s"];

/// The hints that fit `width` columns. `? help` and `q quit` (the way to
/// every other key and the way out) always stay; the others go in
/// [`DROP_ORDER`], keeping their places on the line.
fn fit_hints(
    mut v: Vec<(&'static str, &'static str)>,
    width: usize,
) -> Vec<(&'static str, &'static str)> {
    let keep = |h: &(&str, &str)| matches!(h.0, "?" | "q");
    let rank = |h: &(&str, &str)| DROP_ORDER.iter().position(|k| *k == h.0);
    while v.iter().map(hint_width).sum::<usize>() > width + 2 {
        // Unlisted keys first (None < Some), the last of equals first.
        let drop = v
            .iter()
            .enumerate()
            .filter(|(_, h)| !keep(h))
            .min_by_key(|(i, h)| (rank(h), std::cmp::Reverse(*i)))
            .map(|(i, _)| i);
        match drop {
            Some(i) => {
                v.remove(i);
            }
            None => break,
        }
    }
    v
}

/// The footer's (key, hint) pairs: the mode's hinted bindings that do
/// something now. Read-only mode, and a screen with no device selected,
/// leave out the change keys; no device selected also leaves out export and
/// turning the probe on; the shoot-out
/// shows only the keys of its stage.
fn hints(app: &App, mode: Mode) -> Vec<(&'static str, &'static str)> {
    let stage = match &app.overlay {
        Some(Overlay::ShootOut(d)) => Some(&d.stage),
        _ => None,
    };
    mode.bindings()
        .iter()
        .filter_map(|bd| {
            let hint = bd.hint?;
            let no_device = app.selected_device().is_none() && app.samples > 0;
            if mode == Mode::Main && bd.changes && (app.read_only.is_some() || no_device) {
                return None;
            }
            // Export and turning the probe on act on the selected device too.
            let on_device = match bd.action {
                Action::Export => true,
                Action::ToggleProbe => app.probe.is_none(),
                _ => false,
            };
            if mode == Mode::Main && on_device && no_device {
                return None;
            }
            // An A/B needs a change of the selected device to alternate.
            let changed = app
                .selected_device()
                .and_then(|d| app.marks.get(&d.name))
                .is_some_and(|m| !m.is_empty());
            if bd.action == Action::AbTest && !changed {
                return None;
            }
            let hint = match (mode, stage) {
                (Mode::ShootOut, Some(st)) => shootout_hint(st, bd.action, hint)?,
                // What the key does now.
                _ if bd.action == Action::Pause && app.paused => "resume",
                // Enter in the tunables list opens the value's editor.
                _ if bd.action == Action::Confirm
                    && matches!(app.overlay, Some(Overlay::Tunables(_))) =>
                {
                    "edit"
                }
                _ => hint,
            };
            Some((short_key(bd.shown), hint))
        })
        .collect()
}

/// The hint of a shoot-out key in this stage, or `None` when it does nothing there.
fn shootout_hint(stage: &Stage, a: Action, hint: &'static str) -> Option<&'static str> {
    match (stage, a) {
        (Stage::Setup, Action::Cycle | Action::Confirm) => Some(hint),
        (Stage::Running { cancelling, .. }, Action::Cancel) => (!*cancelling).then_some("cancel"),
        (Stage::Done(r), Action::ApplyWinner | Action::Export) => {
            r.verdict.decided().then_some(hint)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_footers_keep_help_and_quit() {
        let all = vec![
            ("s", "sched"),
            ("n", "nr"),
            ("o", "sort"),
            ("/", "filter"),
            ("?", "help"),
            ("q", "quit"),
        ];
        // 9 + 6 + 8 + 10 + 8 + 8 = 49 with the gaps; 47 without the last gap.
        assert_eq!(fit_hints(all.clone(), 47), all);
        // The editing keys go first; the scheduler stays longest.
        let f = fit_hints(all.clone(), 31);
        assert_eq!(
            f,
            [("s", "sched"), ("o", "sort"), ("?", "help"), ("q", "quit")]
        );
        assert_eq!(
            fit_hints(all.clone(), 30),
            [("s", "sched"), ("?", "help"), ("q", "quit")]
        );
        assert_eq!(fit_hints(all, 5), [("?", "help"), ("q", "quit")]);
    }

    #[test]
    fn long_status_wraps_at_a_space_and_loses_only_its_middle() {
        assert_eq!(wrap_status("short", 79), ["short"]);
        let two = wrap_status("aaaa bbbb cccc dddd", 10);
        assert_eq!(two, ["aaaa bbbb", "cccc dddd"]);
        let long = format!("'sda': start {} cause", "x ".repeat(100));
        let l = wrap_status(&long, 40);
        assert_eq!(l.len(), 2);
        assert!(l[0].starts_with("'sda': start"), "{l:?}");
        assert!(l[1].contains('…') && l[1].ends_with("x  cause"), "{l:?}");
        assert!(l.iter().all(|s| s.chars().count() <= 40), "{l:?}");
        // No space to break at: a hard break.
        let l = wrap_status(&"y".repeat(50), 40);
        assert_eq!(l[0].len(), 40);
        assert_eq!(l[1], "y".repeat(10));
    }
}
