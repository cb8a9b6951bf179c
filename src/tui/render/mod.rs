//! Drawing: free functions over a borrowed [`App`], one file per region.
//!
//! ```text
//!  blktune │ host │ kernel │ up 3d 04:05 │ iowait 2.1% │ every 1s │ root   header
//!  READ-ONLY: not root; changes are disabled                           banner (read-only)
//!   DEVICE   SCHED        r/s     w/s  r_await w_await aqu-sz %util await~  table
//! ▶ sda      mq-deadline  812      40     4.20   10.10   3.2  88.0 ▂▃▅▇
//!   nvme0n1  none           0       0     0.00    0.00   0.0   0.0 ▁▁▁▁
//!  sda  ssd 20G  sched none [mq-deadline] kyber bfq  nr 256  ra 128     detail title
//!  r_await ▁▂▃▅▇█▇▅▃▂▁▁│▁▁▁            │ Δ mq-deadline→kyber 8s ago   before/after
//!  w_await ▁▁▂▂▂▃▃▃▂▂▂▂│▂▂▂            │          before  after  diff   or tunables
//!  %util   ▅▅▅▆▆▆▇▇▇▇▇▇│▇▇▇            │ r_await    4.20   1.10  -74%
//!  IOPS    ▃▃▄▄▄▄▅▅▅▅▅▅│▆▆▆            │ ...
//!  -2m ────────────────▲mq-deadline→kyber  now                          time axis + marks
//!  status: what changed, how long the kernel took, or the exact error   status
//!  s sched  n nr  r ra  t tun  u undo  o sort  / filter  ? help  q quit footer hints
//! ```
//! The processes panel (`i`) covers the detail pane below its title; it and
//! the overlays (picker, editors, help, confirm) draw `Clear` first, then a box.

mod before_after;
mod chart;
mod detail;
mod export;
mod footer;
pub mod frame;
mod header;
mod latency;
pub mod overlay;
mod probe;
mod processes;
mod shootout;
pub mod table;
mod width;

pub use chart::{Series, bucket};
pub use overlay::help_lines;

use super::app::App;
use blktune_core::text::printable;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

/// Smallest usable terminal.
pub const MIN_WIDTH: u16 = 60;
/// See [`MIN_WIDTH`].
pub const MIN_HEIGHT: u16 = 16;

/// Styles; without colour (NO_COLOR) only bold, dim and reverse are used.
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    /// The theme for this value of `NO_COLOR`: no colour when it is set and
    /// not empty, whatever the value (<https://no-color.org>).
    pub fn from_no_color(value: Option<&std::ffi::OsStr>) -> Self {
        Self {
            color: value.is_none_or(|v| v.is_empty()),
        }
    }
    fn pick(self, plain: Style, colored: Style) -> Style {
        if self.color { colored } else { plain }
    }
    /// The header bar.
    pub fn bar(self) -> Style {
        let s = Style::new().add_modifier(Modifier::REVERSED);
        self.pick(s, Style::new().fg(Color::Black).bg(Color::Cyan))
    }
    /// The selected row.
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
    }
    /// Devices without a queue, hints that do not apply.
    pub fn dim(self) -> Style {
        self.pick(
            Style::new().add_modifier(Modifier::DIM),
            Style::new().fg(Color::DarkGray),
        )
    }
    /// Errors and the read-only banner.
    pub fn error(self) -> Style {
        let s = Style::new().add_modifier(Modifier::BOLD);
        self.pick(s, s.fg(Color::Red))
    }
    /// Successful changes.
    pub fn done(self) -> Style {
        self.pick(Style::new(), Style::new().fg(Color::Green))
    }
    /// Change markers on the time axis.
    pub fn marker(self) -> Style {
        let s = Style::new().add_modifier(Modifier::BOLD);
        self.pick(s, s.fg(Color::Yellow))
    }
    /// Headings.
    pub fn heading(self) -> Style {
        let s = Style::new().add_modifier(Modifier::BOLD);
        self.pick(s, s.fg(Color::Cyan))
    }
    /// Chart bars, one colour per chart; none of them the markers' yellow,
    /// so a marker above a bar does not read as a taller bar.
    pub fn series(self, i: usize) -> Style {
        const C: [Color; 4] = [Color::Cyan, Color::Magenta, Color::LightBlue, Color::Green];
        self.pick(Style::new(), Style::new().fg(C[i % 4]))
    }
    /// Keys in the footer.
    pub fn key(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
}

/// Where each region goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    pub banner: Option<Rect>,
    pub table: Rect,
    pub detail: Rect,
    pub status: Rect,
    pub footer: Rect,
}

/// Split the screen; `None` when it is too small.
pub fn layout(area: Rect, app: &App) -> Option<Areas> {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return None;
    }
    let row = |y: u16, h: u16| Rect::new(area.x, y, area.width, h);
    let mut y = area.y;
    let header = row(y, 1);
    y += 1;
    let banner = (app.read_only.is_some() || app.demo.is_some()).then(|| {
        y += 1;
        row(y - 1, 1)
    });
    let status_h = footer::status_rows(app, area.width);
    let avail = area.bottom().saturating_sub(y + 1 + status_h);
    let max_rows = (avail / 3).max(3);
    let n = app.visible_count().max(1) as u16;
    let table_h = n.min(max_rows) + 1;
    let table = row(y, table_h);
    let detail = row(y + table_h, avail - table_h);
    let status = row(area.bottom() - 1 - status_h, status_h);
    let footer = row(area.bottom() - 1, 1);
    Some(Areas {
        header,
        banner,
        table,
        detail,
        status,
        footer,
    })
}

/// Draw one frame.
pub fn draw(f: &mut Frame, app: &App) {
    draw_rows(f, app);
}

/// [`draw`], telling which devices' rows the table showed (`None`: the
/// terminal is too small for a table).
pub fn draw_rows(f: &mut Frame, app: &App) -> Option<Vec<String>> {
    let area = f.area();
    let Some(a) = layout(area, app) else {
        let msg = format!(
            "terminal too small: {}x{}, blktune needs at least {MIN_WIDTH}x{MIN_HEIGHT}",
            area.width, area.height
        );
        f.render_widget(
            Paragraph::new(vec![
                Line::raw(msg),
                Line::raw("enlarge it, or press q to quit"),
            ])
            .wrap(ratatui::widgets::Wrap { trim: true }),
            area,
        );
        return None;
    };
    let theme = Theme { color: app.color };
    header::render(f, a.header, a.banner, app, theme);
    let rows = table::render(f.buffer_mut(), a.table, app, theme);
    detail::render(f.buffer_mut(), a.detail, app, theme);
    processes::render(f.buffer_mut(), a.detail, app, theme);
    footer::render(f.buffer_mut(), a.status, a.footer, app, theme);
    // Dialogs leave the status and footer rows visible: a two-row status
    // takes one row more from them.
    let over = Rect {
        height: area.height - a.status.height.saturating_sub(1),
        ..area
    };
    overlay::render(f, over, app, theme);
    Some(rows)
}

/// A number in at most `w` characters: `0.42`, `12.3`, `812`, `12k`.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 99_999.5 {
        format!("{:.0}k", v / 1000.0)
    } else if a >= 99.95 || v == 0.0 {
        // 99.96 rounds to 100: written as 100, not 100.0 beside another 100.
        format!("{v:.0}")
    } else if a >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// [`num`] with its unit: `2.41ms`, `100%`, and `1235k ms` (a space after
/// the thousands' `k`, which would otherwise read as part of the unit).
pub fn num_unit(v: f64, unit: &str) -> String {
    let n = num(v);
    if n.ends_with('k') && !unit.is_empty() {
        format!("{n} {unit}")
    } else {
        format!("{n}{unit}")
    }
}

/// `8s`, `2m13s`, `1h02m`.
pub fn age(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// Write `s` at `(x, y)` clipped to `max` columns. Every text drawn this
/// way (device names, the status line with its paths and errors) is made
/// [`printable`]: ratatui drops C0 controls, but bidi overrides such as
/// U+202E would reach the terminal and reorder what it shows.
pub(crate) fn put(buf: &mut ratatui::buffer::Buffer, x: u16, y: u16, s: &str, max: u16, st: Style) {
    if max > 0 {
        buf.set_stringn(x, y, printable(s), max as usize, st);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_value_rounded_up_takes_the_form_of_its_rounded_value() {
        assert_eq!(super::num(99.96), "100");
        assert_eq!(super::num(100.0), "100");
        assert_eq!(super::num(99.94), "99.9");
        assert_eq!(super::num(9.996), "10.0");
        assert_eq!(super::num(9.994), "9.99");
        assert_eq!(super::num(0.0), "0");
        assert_eq!(super::num(1_234_567.0), "1235k");
        assert_eq!(super::num_unit(1_234_567.0, "ms"), "1235k ms");
        assert_eq!(super::num_unit(2.41, "ms"), "2.41ms");
        assert_eq!(super::num_unit(100.0, "%"), "100%");
    }
}
