//! Where a dialog's box goes and how it is framed (cleared first, titled,
//! lines cut with `…` where they do not fit), and the text-entry key line:
//! shared by the overlay, export and shoot-out renderers.

use super::Theme;
use super::width::fit;
use crate::tui::command::TEXT;
use blktune_core::text::printable;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

/// A `cols` x `rows` box in the middle of `area`, clipped to it.
pub fn centered(area: Rect, cols: u16, rows: u16) -> Rect {
    let w = cols.min(area.width);
    let h = rows.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// `Clear`, then a bordered box titled `title` with `lines`.
pub fn boxed(frame: &mut Frame, area: Rect, title: &str, lines: Vec<Line>, theme: Theme) {
    framed(frame, area, title, lines, theme, false);
}

/// [`boxed`], with the lines word-wrapped when `wrap`.
pub fn framed(
    frame: &mut Frame,
    area: Rect,
    title: &str,
    lines: Vec<Line>,
    theme: Theme,
    wrap: bool,
) {
    frame.render_widget(Clear, area);
    // Titles name devices (and a dialog's lines go through `printable` where
    // they show a name, a value or a path read from the machine).
    let title = printable(title);
    let block = Block::bordered().title(Span::styled(format!(" {title} "), theme.heading()));
    // Unwrapped lines that do not fit end in `…`, never inside a number
    // (the box's edge would cut `nr_requests 128→1000000` to `→10000`).
    let inner = area.width.saturating_sub(2) as usize;
    let lines: Vec<Line> = if wrap {
        lines
    } else {
        lines
            .into_iter()
            .map(|l| match l.spans.as_slice() {
                [one] if one.width() > inner => {
                    Line::from(Span::styled(fit(&one.content, inner), one.style))
                }
                _ => l,
            })
            .collect()
    };
    let p = Paragraph::new(lines).block(block);
    let p = if wrap {
        p.wrap(Wrap { trim: false })
    } else {
        p
    };
    frame.render_widget(p, area);
}

/// Nearly the whole screen, leaving the status and hint lines visible.
pub fn big(area: Rect) -> Rect {
    Rect::new(
        area.x + 1,
        area.y + 1,
        area.width.saturating_sub(2),
        area.height.saturating_sub(3),
    )
}

/// The editor's key line, from the same list as the footer: `Enter apply   Esc cancel   …`.
pub fn text_hints() -> String {
    TEXT.iter()
        .filter_map(|b| Some(format!("{} {}", b.shown, b.hint?)))
        .collect::<Vec<_>>()
        .join("   ")
}
