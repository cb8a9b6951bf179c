//! Bar charts over time with change markers. Time is bucketed into one column
//! per `span / width` seconds; a column's value is the mean over its points,
//! weighted like one long iostat interval ([`blktune_core::history::means`]).
//! A column narrower than a sampling interval (a short window, early in a
//! session) shows the interval that covers it, so bars stay solid.

use super::width::fit;
use super::{Theme, num, put};
use blktune_core::history::{DeviceHistory, Means, means};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The four charted figures, one value per column (`None`: no data).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub r_await: Vec<Option<f64>>,
    pub w_await: Vec<Option<f64>>,
    pub util: Vec<Option<f64>>,
    pub iops: Vec<Option<f64>>,
    /// The newest interval in the window on its own (what the table shows),
    /// not the mean of the newest column, which spans several intervals.
    pub last: Option<Means>,
}

/// The chart's window `(from, end]`: `cols` columns of `span / cols`
/// seconds whose edges sit on whole multiples of a column's width, the last
/// one holding `now`. Edges that moved with every sample would regroup the
/// points into other columns at each tick, and the bars and their scale
/// would swing back and forth with no change in the data.
fn window(now: f64, span: f64, cols: usize) -> (f64, f64) {
    let w = span / cols.max(1) as f64;
    let end = if w > 0.0 && w.is_finite() {
        ((now / w) - 1e-9).ceil() * w
    } else {
        now
    };
    (end - span, end)
}

/// Column of time `at` in a chart of `cols` columns whose last holds `now`.
pub fn column(at: f64, now: f64, span: f64, cols: usize) -> Option<usize> {
    let (from, end) = window(now, span, cols);
    if cols == 0 || at <= from || at > end + 1e-9 || at > now + 1e-9 {
        return None;
    }
    let c = ((at - from) / span * cols as f64).ceil() as usize;
    Some(c.clamp(1, cols) - 1)
}

/// For each of `cols` columns that no point ends in, the column of the
/// point whose interval `(t - itv, t]` covers the column's end: a column
/// narrower than an interval shows that interval. `points` are `(t, itv)`,
/// oldest first.
pub fn covering(
    points: impl Iterator<Item = (f64, f64)> + Clone,
    now: f64,
    span: f64,
    cols: usize,
) -> Vec<Option<usize>> {
    let mut own = vec![false; cols];
    for (t, _) in points.clone() {
        if let Some(c) = column(t, now, span, cols) {
            own[c] = true;
        }
    }
    let mut out = vec![None; cols];
    let (from, w) = (window(now, span, cols).0, span / cols.max(1) as f64);
    for (t, itv) in points {
        let Some(c) = column(t, now, span, cols) else {
            continue;
        };
        for k in (0..c).rev() {
            if from + (k + 1) as f64 * w <= t - itv + 1e-9 {
                break;
            }
            if !own[k] {
                out[k] = Some(c);
            }
        }
    }
    out
}

/// Copy the value of the covering column into each column without its own.
pub fn fill<T: Clone>(v: &mut [T], cover: &[Option<usize>]) {
    for (k, c) in cover.iter().enumerate() {
        if let Some(c) = *c {
            v[k] = v[c].clone();
        }
    }
}

/// Bucket the history into `cols` columns covering `(now - span, now]`.
pub fn bucket(device_history: &DeviceHistory, now: f64, span: f64, cols: usize) -> Series {
    let mut s = Series {
        r_await: vec![None; cols],
        w_await: vec![None; cols],
        util: vec![None; cols],
        iops: vec![None; cols],
        last: None,
    };
    let pts = device_history.points();
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
    let cover = covering(pts.iter().map(|p| (p.t, p.itv)), now, span, cols);
    fill(&mut s.r_await, &cover);
    fill(&mut s.w_await, &cover);
    fill(&mut s.util, &cover);
    fill(&mut s.iops, &cover);
    s.last = pts
        .iter()
        .rev()
        .take_while(|p| column(p.t, now, span, cols).is_some())
        .find(|p| p.stats.is_some())
        .and_then(|p| means(std::iter::once(p)));
    s
}

/// One chart: a gutter (name; `last`, the newest interval's value, as in the
/// table; `max`, the top of the bars' scale: the highest column mean, or the
/// newest interval when it is higher) and bars; marker columns get a
/// vertical line where the bar leaves room.
#[expect(
    clippy::too_many_arguments,
    reason = "one chart: its area, gutter, labels, values, marks and two styles; a struct would only rename them"
)]
pub fn render_bars(
    buf: &mut Buffer,
    area: Rect,
    gutter: u16,
    name: &str,
    unit: &str,
    values: &[Option<f64>],
    last: Option<f64>,
    marks: &[usize],
    style: ratatui::style::Style,
    theme: Theme,
) {
    if area.height == 0 || area.width <= gutter {
        return;
    }
    // With the newest interval in the scale, `max` is never below the value
    // shown above it, though a column (a mean) may stay under both.
    let max = values
        .iter()
        .flatten()
        .chain(last.iter())
        .copied()
        .fold(0.0, f64::max);
    let g = (gutter - 1) as usize;
    put(
        buf,
        area.x,
        area.y,
        &fit(name, g),
        gutter - 1,
        theme.heading(),
    );
    if area.height > 1 {
        let now = last.map_or_else(|| "-".into(), |v| super::num_unit(v, unit));
        put(
            buf,
            area.x,
            area.y + 1,
            &fit(&now, g),
            gutter - 1,
            ratatui::style::Style::new(),
        );
    }
    // No data in the window: no scale to state.
    if area.height > 2 && (last.is_some() || values.iter().any(Option::is_some)) {
        put(
            buf,
            area.x,
            area.y + 2,
            &fit(&format!("max {}", num(max)), g),
            gutter - 1,
            theme.dim(),
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
                put(buf, x, y, "│", 1, theme.marker());
            } else if here > 0 {
                put(buf, x, y, EIGHTHS[here], 1, style);
            }
        }
    }
}

/// The time axis: span on the left, `now` on the right, a `▲` and label per
/// change, and `legend` (how long one column is) at its left when free.
pub fn render_axis(
    buf: &mut Buffer,
    area: Rect,
    gutter: u16,
    span: f64,
    marks: &[(usize, String)],
    legend: Option<&str>,
    theme: Theme,
) {
    let w = area.width.saturating_sub(gutter) as usize;
    if w == 0 {
        return;
    }
    put(
        buf,
        area.x,
        area.y,
        &fit(&format!("-{}", super::age(span)), (gutter - 1) as usize),
        gutter - 1,
        theme.dim(),
    );
    let (line, styled) = axis_line(w, marks, legend);
    let x0 = area.x + gutter;
    for (i, ch) in line.iter().enumerate() {
        let st = if styled[i] {
            theme.marker()
        } else {
            theme.dim()
        };
        put(buf, x0 + i as u16, area.y, &ch.to_string(), 1, st);
    }
}

/// The time axis of `width` columns: `─`, `now` at the right end, a `▲` per
/// change and its label beside it. Labels never cover a marker, `now` or
/// another label (one column apart); the newest change is labelled first, a
/// label without room is cut with `…` or left out. `legend` goes after the
/// first `─` when it clears every marker and label by a column, else nowhere.
/// Returns the characters and which of them are marker text.
pub fn axis_line(
    width: usize,
    marks: &[(usize, String)],
    legend: Option<&str>,
) -> (Vec<char>, Vec<bool>) {
    let mut line: Vec<char> = vec!['─'; width];
    let mut styled = vec![false; width];
    let mut taken = vec![false; width];
    let now: Vec<char> = "now".chars().collect();
    // A change in the newest columns is itself "now": its marker and label
    // take the place of the word.
    let now_from = width
        .checked_sub(now.len())
        .filter(|&from| marks.iter().all(|(c, _)| *c < from));
    if let Some(from) = now_from {
        for i in from..width {
            line[i] = now[i - from];
            taken[i] = true;
        }
    }
    if width == 0 {
        return (line, styled);
    }
    for (col, _) in marks {
        let col = (*col).min(width - 1);
        line[col] = '▲';
        styled[col] = true;
        taken[col] = true;
    }
    for (col, label) in marks.iter().rev() {
        let col = (*col).min(width - 1);
        let label: Vec<char> = label.chars().collect();
        // Free columns on each side, less one to keep apart from what follows.
        let run_right = (col + 1..width).take_while(|&i| !taken[i]).count();
        let right = if col + 1 + run_right < width {
            run_right.saturating_sub(1)
        } else {
            run_right
        };
        let run_left = (0..col).rev().take_while(|&i| !taken[i]).count();
        let left = if run_left < col {
            run_left.saturating_sub(1)
        } else {
            run_left
        };
        let (on_right, room) = if label.len() <= right {
            (true, right)
        } else if label.len() <= left {
            (false, left)
        } else {
            (right >= left, right.max(left))
        };
        if label.len() > room && room < 3 {
            continue;
        }
        let text = cut_label(label, room);
        let start = if on_right { col + 1 } else { col - text.len() };
        for (i, ch) in text.into_iter().enumerate() {
            line[start + i] = ch;
            styled[start + i] = true;
            taken[start + i] = true;
        }
    }
    if let Some(legend) = legend {
        let text: Vec<char> = format!(" {legend} ").chars().collect();
        let end = 1 + text.len();
        if end < width && !taken[..=end].iter().any(|&x| x) {
            line[1..end].copy_from_slice(&text);
        }
    }
    (line, styled)
}

/// How long one column is, when it pools several sampling intervals
/// (`1 col = 3.3s`); `None` when a column is about one interval.
pub fn column_legend(span: f64, cols: usize, interval: f64) -> Option<String> {
    let w = span / cols.max(1) as f64;
    if w < 1.5 * interval {
        return None;
    }
    let secs = if w < 10.0 {
        format!("{w:.1}s")
    } else {
        super::age(w)
    };
    Some(format!("1 col = {secs}"))
}

/// `label` in `room` columns: a switch `a→b` keeps its new side `→b` and
/// loses the end of the old one; anything else loses its end. Never inside
/// a number ([`fit`]).
fn cut_label(label: Vec<char>, room: usize) -> Vec<char> {
    if label.len() <= room {
        return label;
    }
    if let Some(arrow) = label.iter().position(|&c| c == '→') {
        let tail = label.len() - arrow;
        if tail + 2 <= room {
            let head: String = label[..arrow].iter().collect();
            let mut out: Vec<char> = fit(&head, room - tail).chars().collect();
            out.extend_from_slice(&label[arrow..]);
            return out;
        }
    }
    let s: String = label.into_iter().collect();
    fit(&s, room).chars().collect()
}

#[cfg(test)]
mod axis_tests {
    /// The axis as a string.
    fn axis(width: usize, marks: &[(usize, &str)]) -> String {
        let m: Vec<(usize, String)> = marks.iter().map(|(c, l)| (*c, l.to_string())).collect();
        super::axis_line(width, &m, None).0.into_iter().collect()
    }

    #[test]
    fn labels_neither_collide_nor_cover_now() {
        assert_eq!(axis(20, &[]), "─────────────────now");
        assert_eq!(axis(20, &[(2, "a→b")]), "──▲a→b───────────now");
        // Too close to `now` on the right: the label goes left of its marker.
        assert_eq!(axis(20, &[(15, "none→kyber")]), "─────none→kyber▲─now");
        // Two changes close together: the newest gets its room first, the
        // older one goes left or is cut, one column apart.
        let a = axis(30, &[(10, "none→kyber"), (13, "kyber→bfq")]);
        assert_eq!(a, "none→kyber▲──▲kyber→bfq────now");
        let a = axis(24, &[(3, "none→kyber"), (6, "kyber→bfq")]);
        assert_eq!(a, "no…▲──▲kyber→bfq─────now");
        let a = axis(24, &[(3, "none→kyber"), (15, "mq-deadline→kyber")]);
        // Cut labels keep the new side of a switch.
        assert_eq!(a, "no…▲─mq-…→kyber▲─────now");
        // No room at all: no label rather than a clash.
        let a = axis(12, &[(4, "none→kyber"), (6, "kyber→bfq"), (8, "x")]);
        assert_eq!(a.chars().filter(|&c| c == '▲').count(), 3, "{a}");
        assert!(a.ends_with("now"), "{a}");
        // A change in the newest column takes the place of `now`.
        assert_eq!(axis(10, &[(9, "a→b")]), "──────a→b▲");
    }

    #[test]
    fn the_legend_sits_left_unless_a_change_is_there() {
        let with = |w: usize, marks: &[(usize, &str)]| -> String {
            let m: Vec<(usize, String)> = marks.iter().map(|(c, l)| (*c, l.to_string())).collect();
            super::axis_line(w, &m, Some("1 col = 3.3s"))
                .0
                .into_iter()
                .collect()
        };
        assert_eq!(with(30, &[]), "─ 1 col = 3.3s ────────────now");
        assert_eq!(with(30, &[(20, "a→b")]), "─ 1 col = 3.3s ─────▲a→b───now");
        // A change label in its place wins; the legend goes.
        assert_eq!(with(30, &[(3, "a→b")]), "───▲a→b────────────────────now");
        assert_eq!(
            super::column_legend(120.0, 36, 0.5).as_deref(),
            Some("1 col = 3.3s")
        );
        assert_eq!(super::column_legend(120.0, 111, 1.0), None);
        assert_eq!(
            super::column_legend(600.0, 40, 1.0).as_deref(),
            Some("1 col = 15s")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blktune_core::history::Point;
    use blktune_core::iostat::ExtStats;

    /// The gutter of a 4-row chart as text.
    fn gutter(values: &[Option<f64>], last: Option<f64>) -> Vec<String> {
        let area = Rect::new(0, 0, 20, 4);
        let mut buf = Buffer::empty(area);
        let t = Theme { color: false };
        let style = ratatui::style::Style::new();
        render_bars(
            &mut buf,
            area,
            10,
            "r_await",
            "ms",
            values,
            last,
            &[],
            style,
            t,
        );
        (0..4)
            .map(|y| (0..9).map(|x| buf[(x, y)].symbol()).collect::<String>())
            .map(|s| s.trim_end().to_string())
            .collect()
    }

    #[test]
    fn max_is_never_below_the_newest_value_and_absent_without_data() {
        // Columns are means: the newest interval can be above every one.
        let g = gutter(&[Some(1.0), Some(2.0)], Some(5.0));
        assert_eq!(g[..3], ["r_await", "5.00ms", "max 5.00"]);
        let g = gutter(&[Some(1.0), Some(2.0)], Some(1.5));
        assert_eq!(g[2], "max 2.00");
        let g = gutter(&[None, None], None);
        assert_eq!(g[..3], ["r_await", "-", ""]);
    }

    #[test]
    fn a_column_narrower_than_an_interval_shows_the_interval() {
        let mut h = DeviceHistory::default();
        for i in 1..=2 {
            let s = ExtStats {
                r_s: 10.0,
                r_await: i as f64,
                ..ExtStats::default()
            };
            let p = Point {
                t: i as f64,
                itv: 1.0,
                stats: Some(s),
            };
            h.push(p, 600.0);
        }
        // 2 s in 8 columns: each interval fills four, no gaps.
        let s = bucket(&h, 2.0, 2.0, 8);
        let want: Vec<Option<f64>> = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]
            .into_iter()
            .map(Some)
            .collect();
        assert_eq!(s.r_await, want);
        // Before the first interval began: nothing.
        let s = bucket(&h, 2.0, 4.0, 8);
        assert_eq!(s.r_await[..4], [None, None, None, None]);
        assert_eq!(s.r_await[4..], [Some(1.0), Some(1.0), Some(2.0), Some(2.0)]);
    }

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

    /// A new sample changes only the newest column: the column edges sit on
    /// whole multiples of a column's width, so the older columns hold the
    /// same points tick after tick (they shifted by a second each tick, and
    /// the bars and their scale swung with no change in the data).
    #[test]
    fn a_new_sample_changes_only_the_newest_column() {
        let mut h = DeviceHistory::default();
        let mut at = Vec::new();
        for i in 1..=40 {
            let s = ExtStats {
                r_s: 10.0,
                r_await: f64::from(i % 7),
                ..ExtStats::default()
            };
            h.push(
                Point {
                    t: f64::from(i),
                    itv: 1.0,
                    stats: Some(s),
                },
                600.0,
            );
            // 30 s in 9 columns of 3.33 s.
            if i >= 30 {
                at.push(bucket(&h, f64::from(i), 30.0, 9));
            }
        }
        for w in at.windows(2) {
            let (a, b) = (&w[0].r_await, &w[1].r_await);
            let shifted = a[1..] == b[..8];
            let same = a[..8] == b[..8];
            assert!(same || shifted, "{a:?}\n{b:?}");
        }
    }
}
