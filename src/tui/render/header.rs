//! The header bar (host, kernel, uptime, iowait, interval, mode) and the
//! read-only banner.

use super::Theme;
use crate::host::format_uptime;
use crate::tui::app::{App, fmt_interval};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// The header's text, joined with `│`, shortened to fit `width`.
pub fn header_text(app: &App, width: usize) -> String {
    let mode = if app.read_only.is_some() {
        "READ-ONLY"
    } else {
        "root"
    };
    let mut parts = vec!["blktune".to_string()];
    // A replay's position says "replay"; the live mode is this machine's.
    if app.replay.is_none() {
        parts.push(mode.to_string());
    }
    if let Some(p) = &app.recording {
        parts.push(format!("● REC {}", p.display()));
    }
    if !app.host.hostname.is_empty() {
        parts.push(app.host.hostname.clone());
    }
    if !app.host.kernel.is_empty() {
        parts.push(app.host.kernel.clone());
    }
    match &app.replay {
        Some(r) => parts.push(crate::tui::replay_view::position_label(r)),
        None => parts.push(format!("up {}", format_uptime(app.host.uptime_s + app.now))),
    }
    parts.push(match app.iowait {
        Some(w) => format!("iowait {w:.1}%"),
        None => "iowait -".into(),
    });
    parts.push(format!("every {}", fmt_interval(app.interval)));
    if app.paused && app.replay.is_none() {
        parts.push("PAUSED".into());
    }
    // Drop the least useful facts first when the line is too long.
    for drop in ["blktune", "kernel", "up"] {
        let len: usize = parts.iter().map(|p| p.chars().count() + 3).sum();
        if len <= width {
            break;
        }
        match drop {
            "blktune" => {
                parts.remove(0);
            }
            "kernel" => parts.retain(|p| *p != app.host.kernel),
            _ => parts.retain(|p| !p.starts_with("up ")),
        }
    }
    format!(" {}", parts.join(" │ "))
}

/// Draw the header and, in read-only mode, the banner.
pub fn render(f: &mut Frame, area: Rect, banner: Option<Rect>, app: &App, t: Theme) {
    let w = area.width as usize;
    let text = format!("{:<w$}", header_text(app, w));
    f.render_widget(
        Paragraph::new(Line::from(Span::styled(text, t.bar()))),
        area,
    );
    if let (Some(b), Some(why)) = (banner, &app.read_only) {
        let msg = format!(" READ-ONLY: {why}; changes are disabled");
        f.render_widget(
            Paragraph::new(Line::from(Span::styled(format!("{msg:<w$}"), t.error()))),
            b,
        );
    } else if let (Some(b), Some(hint)) = (banner, crate::tui::demo::hint(app)) {
        let msg = format!(" {hint}");
        f.render_widget(
            Paragraph::new(Line::from(Span::styled(format!("{msg:<w$}"), t.heading()))),
            b,
        );
    }
}
