//! The device table: one row per device, columns dropped by priority when the
//! terminal is narrow, an inline sparkline of await at the end.

use super::{Theme, num, put};
use crate::tui::app::{App, SortKey, Tracing};
use blktune_core::device::{BlockDevice, DeviceKind, human_size};
use blktune_core::iostat::ExtStats;
use blktune_core::latency::Dir;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;

/// A column: heading, width, priority (0 = always shown), right-aligned?
#[derive(Debug, Clone, Copy)]
struct Col {
    head: &'static str,
    width: u16,
    prio: u8,
    right: bool,
    id: ColId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ColId {
    Name,
    Kind,
    Size,
    Sched,
    Nr,
    Ra,
    Rs,
    Ws,
    RAwait,
    WAwait,
    Aqu,
    Util,
    /// The kernel's read p99 of the newest interval (only while the source traces or says why not).
    RP99,
    WP99,
}

const COLS: [Col; 14] = [
    Col {
        head: "DEVICE",
        width: 9,
        prio: 0,
        right: false,
        id: ColId::Name,
    },
    Col {
        head: "TYPE",
        width: 5,
        prio: 3,
        right: false,
        id: ColId::Kind,
    },
    Col {
        head: "SIZE",
        width: 5,
        prio: 4,
        right: true,
        id: ColId::Size,
    },
    Col {
        head: "SCHED",
        width: 12,
        prio: 0,
        right: false,
        id: ColId::Sched,
    },
    Col {
        head: "NR",
        width: 4,
        prio: 5,
        right: true,
        id: ColId::Nr,
    },
    Col {
        head: "RA",
        width: 5,
        prio: 5,
        right: true,
        id: ColId::Ra,
    },
    Col {
        head: "r/s",
        width: 7,
        prio: 1,
        right: true,
        id: ColId::Rs,
    },
    Col {
        head: "w/s",
        width: 7,
        prio: 1,
        right: true,
        id: ColId::Ws,
    },
    Col {
        head: "r_await",
        width: 7,
        prio: 0,
        right: true,
        id: ColId::RAwait,
    },
    Col {
        head: "w_await",
        width: 7,
        prio: 0,
        right: true,
        id: ColId::WAwait,
    },
    Col {
        head: "r_p99",
        width: 7,
        prio: 1,
        right: true,
        id: ColId::RP99,
    },
    Col {
        head: "w_p99",
        width: 7,
        prio: 4,
        right: true,
        id: ColId::WP99,
    },
    Col {
        head: "aqu-sz",
        width: 6,
        prio: 2,
        right: true,
        id: ColId::Aqu,
    },
    Col {
        head: "%util",
        width: 6,
        prio: 0,
        right: true,
        id: ColId::Util,
    },
];

/// Narrowest sparkline worth drawing.
const SPARK_MIN: u16 = 8;
const SPARK_MAX: u16 = 30;

/// The columns that fit `width` (after the one-character selection marker),
/// and the sparkline width; the p99 columns only with `latency`.
fn fit(width: u16, latency: bool) -> (Vec<Col>, u16) {
    for max_prio in (0..=5u8).rev() {
        let cols: Vec<Col> = COLS
            .iter()
            .copied()
            .filter(|c| c.prio <= max_prio)
            .filter(|c| latency || !matches!(c.id, ColId::RP99 | ColId::WP99))
            .collect();
        let used: u16 = 1 + cols.iter().map(|c| c.width + 1).sum::<u16>();
        if used + SPARK_MIN < width {
            return (cols, (width - used - 1).min(SPARK_MAX));
        }
        if max_prio == 0 {
            return (cols, width.saturating_sub(used + 1));
        }
    }
    (Vec::new(), 0)
}

fn cell(d: &BlockDevice, s: Option<&ExtStats>, id: ColId) -> String {
    let opt = |v: Option<u64>| v.map_or_else(|| "-".into(), |n| n.to_string());
    let stat = |f: fn(&ExtStats) -> f64| s.map_or_else(|| "-".into(), |s| num(f(s)));
    match id {
        ColId::Name => d.name.clone(),
        ColId::Kind => kind_label(d.kind).to_string(),
        ColId::Size => human_size(d.size_bytes),
        ColId::Sched => d.queue.active_label().to_string(),
        ColId::Nr => opt(d.queue.nr_requests),
        ColId::Ra => opt(d.queue.read_ahead_kb),
        ColId::Rs => stat(|s| s.r_s),
        ColId::Ws => stat(|s| s.w_s),
        ColId::RAwait => stat(|s| s.r_await),
        ColId::WAwait => stat(|s| s.w_await),
        ColId::Aqu => stat(|s| s.aqu_sz),
        ColId::Util => s.map_or_else(|| "-".into(), |s| format!("{:.1}", s.util)),
        // Drawn by the caller, which has the app's latency history.
        ColId::RP99 | ColId::WP99 => String::new(),
    }
}

/// The device class in at most the TYPE column's 5 characters (`virtio`
/// would be cut to `virti`); the detail title uses the same word.
pub fn kind_label(k: DeviceKind) -> &'static str {
    match k {
        DeviceKind::Virtio => "virt",
        k => k.label(),
    }
}

/// Eighth-block sparkline of `values`, scaled to their maximum.
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().copied().fold(0.0, f64::max);
    values
        .iter()
        .map(|&v| {
            if max <= 0.0 {
                BARS[0]
            } else {
                BARS[((v / max * 7.0).round() as usize).min(7)]
            }
        })
        .collect()
}

/// Draw the table into `area` (first row: headings).
pub fn render(buf: &mut Buffer, area: Rect, app: &App, t: Theme) {
    let latency = app.latency.tracing != Tracing::Unknown;
    let (cols, spark_w) = fit(area.width, latency);
    // await sorts by the larger of r_await and w_await, which is what the
    // `await` sparkline draws: its heading carries the arrow.
    let sort_col = match app.sort {
        SortKey::Name => Some(ColId::Name),
        SortKey::Util => Some(ColId::Util),
        SortKey::Await => None,
        SortKey::Iops => Some(ColId::Rs),
    };
    let mut x = area.x + 1;
    for c in &cols {
        let head = if Some(c.id) == sort_col {
            format!("{}↓", c.head)
        } else {
            c.head.to_string()
        };
        let s = if c.right {
            format!("{head:>w$}", w = c.width as usize)
        } else {
            format!("{head:<w$}", w = c.width as usize)
        };
        put(buf, x, area.y, &s, c.width, t.heading());
        x += c.width + 1;
    }
    if spark_w >= 4 {
        let head = if sort_col.is_none() {
            "await↓"
        } else {
            "await"
        };
        put(buf, x, area.y, head, spark_w, t.heading());
    }
    let devs = app.visible();
    let rows = area.height.saturating_sub(1) as usize;
    if devs.is_empty() {
        let msg = if app.filter.is_empty() {
            "no block devices with a size (waiting for the first sample?)".to_string()
        } else {
            format!("no device matches '{}' (Esc clears the filter)", app.filter)
        };
        put(buf, area.x + 1, area.y + 1, &msg, area.width - 1, t.dim());
        return;
    }
    // None also when the filter hides the selected device: no row is marked.
    let sel = app
        .selected
        .as_ref()
        .and_then(|s| devs.iter().position(|d| &d.name == s));
    let offset = (sel.unwrap_or(0) + 1).saturating_sub(rows);
    for (i, d) in devs.iter().enumerate().skip(offset).take(rows) {
        let y = area.y + 1 + (i - offset) as u16;
        let selected = sel == Some(i);
        let style = if selected {
            t.selected()
        } else if !d.queue.has_scheduler() {
            t.dim()
        } else {
            ratatui::style::Style::new()
        };
        if selected {
            buf.set_style(Rect::new(area.x, y, area.width, 1), style);
        }
        put(buf, area.x, y, if selected { "▶" } else { " " }, 1, style);
        let s = app.latest(&d.name);
        let mut x = area.x + 1;
        for c in &cols {
            let (v, dim) = match c.id {
                ColId::RP99 => super::latency::p99_cell(app.latency_now(&d.name, Dir::Read)),
                ColId::WP99 => super::latency::p99_cell(app.latency_now(&d.name, Dir::Write)),
                id => (cell(d, s, id), false),
            };
            // A count instead of a p99 is dimmed: too few I/Os for a tail.
            let style = if dim {
                style.add_modifier(Modifier::DIM)
            } else {
                style
            };
            let text = if c.right {
                format!("{v:>w$}", w = c.width as usize)
            } else {
                format!("{v:<w$}", w = c.width as usize)
            };
            put(buf, x, y, &text, c.width, style);
            x += c.width + 1;
        }
        if let Some(h) = app.histories.get(&d.name) {
            let vals = h.tail(spark_w as usize, ExtStats::max_await);
            put(buf, x, y, &sparkline(&vals), spark_w, style);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_the_width() {
        for latency in [false, true] {
            for w in [60u16, 80, 100, 160, 250] {
                let (cols, spark) = fit(w, latency);
                let used: u16 = 1 + cols.iter().map(|c| c.width + 1).sum::<u16>() + spark;
                assert!(used <= w, "{w}: {used}");
                assert!(cols.iter().any(|c| c.id == ColId::RAwait));
            }
        }
        assert!(fit(160, true).0.len() == COLS.len());
        assert_eq!(fit(160, false).0.len(), COLS.len() - 2);
        // The read p99 stays at 80 columns; the write p99 needs room.
        let has = |w, id| fit(w, true).0.iter().any(|c: &Col| c.id == id);
        assert!(has(80, ColId::RP99) && !has(80, ColId::WP99));
        assert!(has(120, ColId::WP99));
        assert_eq!(sparkline(&[0.0, 1.0, 2.0]), "▁▅█");
        assert_eq!(sparkline(&[0.0, 0.0]), "▁▁");
    }

    #[test]
    fn every_type_fits_its_column() {
        let w = COLS.iter().find(|c| c.id == ColId::Kind).unwrap().width as usize;
        for k in [
            DeviceKind::Nvme,
            DeviceKind::Ssd,
            DeviceKind::Hdd,
            DeviceKind::Virtio,
            DeviceKind::Loop,
            DeviceKind::Zram,
            DeviceKind::Md,
            DeviceKind::Dm,
            DeviceKind::Mmc,
            DeviceKind::Other,
        ] {
            assert!(kind_label(k).chars().count() <= w, "{k:?}");
        }
        assert_eq!(kind_label(DeviceKind::Virtio), "virt");
    }
}
