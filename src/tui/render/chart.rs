//! Bar charts over time with change markers. Time is bucketed into one column
//! per `span / width` seconds; a column's value is the mean over its points,
//! weighted like one long iostat interval ([`crate::history::means`]).

use super::{Theme, num, put};
use crate::history::{DeviceHistory, means};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The four charted figures, one value per column (`None`: no data).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub r_await: Vec<Option<f64>>,
    pub w_await: Vec<Option<f64>>,
    pub util: Vec<Option<f64>>,
    pub iops: Vec<Option<f64>>,
}

/// Column of time `t` in a chart of `cols` columns ending at `now`.
pub fn column(t: f64, now: f64, span: f64, cols: usize) -> Option<usize> {
    let from = now - span;
    if cols == 0 || t <= from || t > now + 1e-9 {
        return None;
    }
    let c = ((t - from) / span * cols as f64).ceil() as usize;
    Some(c.clamp(1, cols) - 1)
}

/// Bucket the history into `cols` columns covering `(now - span, now]`.
pub fn bucket(h: &DeviceHistory, now: f64, span: f64, cols: usize) -> Series {
    let mut s = Series {
        r_await: vec![None; cols],
        w_await: vec![None; cols],
        util: vec![None; cols],
        iops: vec![None; cols],
    };
    let pts = h.points();
    let mut i = 0;
    while i < pts.len() {
        let Some(c) = column(pts[i].t, now, span, cols) else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < pts.len() && column(pts[j].t, now, span, cols) == Some(c) {
            j += 1;
        }
        if let Some(m) = means(pts.range(i..j)) {
            s.r_await[c] = Some(m.r_await);
            s.w_await[c] = Some(m.w_await);
            s.util[c] = Some(m.util);
            s.iops[c] = Some(m.r_s + m.w_s);
        }
        i = j;
    }
    s
}

/// One chart: a gutter (name, latest value, scale) and bars; marker columns
/// get a vertical line where the bar leaves room.
#[allow(clippy::too_many_arguments)]
pub fn render_bars(
    buf: &mut Buffer,
    area: Rect,
    gutter: u16,
    name: &str,
    unit: &str,
    values: &[Option<f64>],
    marks: &[usize],
    style: ratatui::style::Style,
    t: Theme,
) {
    if area.height == 0 || area.width <= gutter {
        return;
    }
    let latest = values.iter().rev().flatten().next().copied();
    let max = values.iter().flatten().copied().fold(0.0, f64::max);
    put(buf, area.x, area.y, name, gutter - 1, t.heading());
    if area.height > 1 {
        let now = latest.map_or_else(|| "-".into(), |v| format!("{}{unit}", num(v)));
        put(
            buf,
            area.x,
            area.y + 1,
            &now,
            gutter - 1,
            ratatui::style::Style::new(),
        );
    }
    if area.height > 2 {
        put(
            buf,
            area.x,
            area.y + 2,
            &format!("↑{}", num(max)),
            gutter - 1,
            t.dim(),
        );
    }
    let rows = area.height as usize;
    let levels = rows * 8;
    const EIGHTHS: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];
    let x0 = area.x + gutter;
    for (c, v) in values
        .iter()
        .enumerate()
        .take((area.width - gutter) as usize)
    {
        let x = x0 + c as u16;
        let filled = match v {
            // Headroom above the highest bar leaves space for change markers.
            Some(v) if max > 0.0 => ((v / (max * 1.25)) * levels as f64).round() as usize,
            Some(_) => 1,
            None => 0,
        };
        for r in 0..rows {
            // r = 0 is the bottom row.
            let y = area.y + area.height - 1 - r as u16;
            let here = filled.saturating_sub(r * 8).min(8);
            if here < 8 && marks.contains(&c) {
                put(buf, x, y, "│", 1, t.marker());
            } else if here > 0 {
                put(buf, x, y, EIGHTHS[here], 1, style);
            }
        }
    }
}

/// The time axis: span on the left, `now` on the right, a `▲` and label per change.
pub fn render_axis(
    buf: &mut Buffer,
    area: Rect,
    gutter: u16,
    span: f64,
    marks: &[(usize, String)],
    t: Theme,
) {
    let w = area.width.saturating_sub(gutter) as usize;
    if w == 0 {
        return;
    }
    put(
        buf,
        area.x,
        area.y,
        &format!("-{}", super::age(span)),
        gutter - 1,
        t.dim(),
    );
    let mut line: Vec<char> = vec!['─'; w];
    let now = "now";
    for (i, ch) in now.chars().enumerate() {
        if w >= now.len() {
            line[w - now.len() + i] = ch;
        }
    }
    let mut styled = vec![false; w];
    let mut free_from = 0;
    for (k, (col, label)) in marks.iter().enumerate() {
        let col = (*col).min(w - 1);
        line[col] = '▲';
        styled[col] = true;
        let label: Vec<char> = label.chars().collect();
        let limit = marks.get(k + 1).map_or(w, |(n, _)| (*n).min(w));
        let right = limit.saturating_sub(col + 1);
        let left = col.saturating_sub(free_from);
        // Right of the marker if it fits, else left of it, else the larger room, cut.
        let (start, room) = if label.len() <= right || right >= left {
            (col + 1, right)
        } else {
            (col - left.min(label.len()), left)
        };
        let mut text: Vec<char> = label.clone();
        if text.len() > room {
            text.truncate(room.saturating_sub(1));
            if room > 0 {
                text.push('…');
            }
        }
        for (i, ch) in text.iter().enumerate() {
            if let Some(slot) = line.get_mut(start + i) {
                *slot = *ch;
                styled[start + i] = true;
            }
        }
        free_from = (col + 1).max(if start > col { start + text.len() } else { 0 });
    }
    let x0 = area.x + gutter;
    for (i, ch) in line.iter().enumerate() {
        let st = if styled[i] { t.marker() } else { t.dim() };
        put(buf, x0 + i as u16, area.y, &ch.to_string(), 1, st);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Point;
    use crate::iostat::ExtStats;

    #[test]
    fn points_land_in_their_columns_and_are_averaged() {
        let mut h = DeviceHistory::default();
        for i in 1..=8 {
            let s = ExtStats {
                r_s: 10.0,
                r_await: i as f64,
                ..ExtStats::default()
            };
            h.push(
                Point {
                    t: i as f64,
                    itv: 1.0,
                    stats: Some(s),
                },
                600.0,
            );
        }
        // 8 seconds in 4 columns: two points per column.
        let s = bucket(&h, 8.0, 8.0, 4);
        assert_eq!(s.r_await, vec![Some(1.5), Some(3.5), Some(5.5), Some(7.5)]);
        assert_eq!(s.iops[0], Some(10.0));
        assert_eq!(column(8.0, 8.0, 8.0, 4), Some(3));
        assert_eq!(column(0.5, 8.0, 8.0, 4), Some(0));
        assert_eq!(column(0.0, 8.0, 8.0, 4), None);
        // Older than the span: not drawn.
        let s = bucket(&h, 8.0, 2.0, 2);
        assert_eq!(s.r_await, vec![Some(7.0), Some(8.0)]);
    }
}
