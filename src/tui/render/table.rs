//! The device table: one row per device, columns dropped by priority when the
//! terminal is narrow, an inline sparkline of await at the end.
//!
//! ```text
//!  DEVICE↓   TYPE  SIZE SCHED  r/s  w/s  rMB/s wMB/s r_await ... %util await 0-7.0ms
//! ▶sda       ssd   20G  [mq-d  ...                                   ▁▂▅█▃
//! !sdb       ...  (over a threshold: busy or slow for this device; red in colour)
//! ```
//!
//! At 80 columns it is the iostat core; at 120 throughput joins; at 200
//! in-flight and request sizes too. The sort column's heading has the
//! arrow; every sparkline shares one scale, given in its heading.

use super::{Theme, num, put};
use crate::tui::app::{App, Hot, SortKey, Tracing};
use blktune_core::device::{BlockDevice, DeviceKind};
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
    RMbs,
    WMbs,
    RAwait,
    WAwait,
    RAreqSz,
    WAreqSz,
    InFlight,
    Aqu,
    Util,
    /// The kernel's read p99 of the newest interval (only while the source traces or says why not).
    RP99,
    WP99,
    /// Where the I/O goes: mount point, backing file, stacking.
    Mount,
}

const COLS: [Col; 20] = [
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
        prio: 5,
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
        prio: 6,
        right: true,
        id: ColId::Nr,
    },
    Col {
        head: "RA",
        width: 5,
        prio: 6,
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
        head: "rMB/s",
        width: 7,
        prio: 4,
        right: true,
        id: ColId::RMbs,
    },
    Col {
        head: "wMB/s",
        width: 7,
        prio: 4,
        right: true,
        id: ColId::WMbs,
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
        head: "rareq-sz",
        width: 8,
        prio: 8,
        right: true,
        id: ColId::RAreqSz,
    },
    Col {
        head: "wareq-sz",
        width: 8,
        prio: 8,
        right: true,
        id: ColId::WAreqSz,
    },
    Col {
        head: "inflight",
        width: 8,
        prio: 7,
        right: true,
        id: ColId::InFlight,
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
    Col {
        head: "MOUNT",
        width: 22,
        prio: 9,
        right: false,
        id: ColId::Mount,
    },
];

/// The largest priority of [`COLS`].
const MAX_PRIO: u8 = 9;

/// Narrowest sparkline worth drawing.
const SPARK_MIN: u16 = 8;
const SPARK_MAX: u16 = 64;

/// The columns that fit `width` (after the one-character selection marker),
/// and the sparkline width; the p99 columns only with `latency`, MOUNT only
/// with `mounts` (a topology was read).
fn fit(width: u16, latency: bool, mounts: bool) -> (Vec<Col>, u16) {
    for max_prio in (0..=MAX_PRIO).rev() {
        let cols: Vec<Col> = COLS
            .iter()
            .copied()
            .filter(|c| c.prio <= max_prio)
            .filter(|c| latency || !matches!(c.id, ColId::RP99 | ColId::WP99))
            .filter(|c| mounts || c.id != ColId::Mount)
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
        // A stack by lsblk's type (lvm, crypt, mpath, raid1).
        ColId::Kind => d
            .stack
            .as_ref()
            .map_or_else(|| kind_label(d.kind).to_string(), |s| s.type_name.clone()),
        ColId::Size => d.size_label(),
        ColId::Sched => d.queue.active_label().to_string(),
        ColId::Nr => opt(d.queue.nr_requests),
        ColId::Ra => opt(d.queue.read_ahead_kb),
        ColId::Rs => stat(|s| s.r_s),
        ColId::Ws => stat(|s| s.w_s),
        ColId::RMbs => stat(|s| s.rkb_s / 1024.0),
        ColId::WMbs => stat(|s| s.wkb_s / 1024.0),
        ColId::RAreqSz => stat(|s| s.rareq_sz),
        ColId::WAreqSz => stat(|s| s.wareq_sz),
        // Drawn by the caller, which has the app's in-flight counts.
        ColId::InFlight => String::new(),
        ColId::RAwait => stat(|s| s.r_await),
        ColId::WAwait => stat(|s| s.w_await),
        ColId::Aqu => stat(|s| s.aqu_sz),
        ColId::Util => s.map_or_else(|| "-".into(), |s| format!("{:.1}", s.util)),
        // Drawn by the caller, which has the app's latency history and topology.
        ColId::RP99 | ColId::WP99 | ColId::Mount => String::new(),
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

/// Eighth-block sparkline of `values` on a scale of 0 to `max` (shared by
/// every row, so bars of two rows compare). Only a value of 0 (no I/O) is
/// the lowest bar: any I/O is at least the second, so an idle row never
/// looks like a row with a small latency.
pub fn sparkline(values: &[f64], max: f64) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    values
        .iter()
        .map(|&v| {
            if v <= 0.0 || max <= 0.0 || v.is_nan() {
                BARS[0]
            } else {
                BARS[((v / max * 7.0).round() as usize).clamp(1, 7)]
            }
        })
        .collect()
}

/// The sort key a column heading stands for.
fn sort_key(id: ColId) -> Option<SortKey> {
    Some(match id {
        ColId::Name => SortKey::Name,
        ColId::Size => SortKey::Size,
        ColId::Rs => SortKey::Rs,
        ColId::Ws => SortKey::Ws,
        ColId::RMbs => SortKey::RMbs,
        ColId::WMbs => SortKey::WMbs,
        ColId::RAwait => SortKey::RAwait,
        ColId::WAwait => SortKey::WAwait,
        ColId::RAreqSz => SortKey::RAreqSz,
        ColId::WAreqSz => SortKey::WAreqSz,
        ColId::InFlight => SortKey::InFlight,
        ColId::Aqu => SortKey::Aqu,
        ColId::Util => SortKey::Util,
        ColId::Nr => SortKey::Nr,
        ColId::Ra => SortKey::Ra,
        ColId::RP99 => SortKey::RP99,
        ColId::WP99 => SortKey::WP99,
        ColId::Kind | ColId::Sched | ColId::Mount => {
            return None;
        }
    })
}

/// A column's heading, with the sort arrow when it is the sort column:
/// after a left-aligned heading, before a right-aligned one, always inside
/// the column's own width ([`widen_sorted`] makes room), so that
/// `w/s ↓r_await` cannot read as "sorted by w/s". Returns (x, text, width).
fn heading(c: &Col, x: u16, sorted: bool) -> (u16, String, u16) {
    let w = c.width as usize;
    let text = match (sorted, c.right) {
        (false, true) => format!("{:>w$}", c.head),
        (false, false) => format!("{:<w$}", c.head),
        (true, false) => format!("{:<w$}", format!("{}↓", c.head)),
        (true, true) => format!("{:>w$}", format!("↓{}", c.head)),
    };
    (x, text, c.width)
}

/// The sort column one wider when its heading fills it, so that the arrow
/// fits inside it; the sparkline (or nothing, at the narrowest) gives the
/// column.
fn widen_sorted(cols: &mut [Col], spark_w: &mut u16, sort: SortKey) {
    if let Some(c) = cols.iter_mut().find(|c| sort_key(c.id) == Some(sort))
        && c.head.chars().count() >= c.width as usize
    {
        c.width += 1;
        *spark_w = spark_w.saturating_sub(1);
    }
}

/// `s` in `width` characters: whole, or with the middle of its path left
/// out as `…` at a `/`: the device a backing file is on (`→sda:`) and the
/// file's name tell more than its first directories.
fn keep_tail(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    // `→sda:/path`: keep `→sda:`.
    let head: String = match s.find(':') {
        Some(i) if s.starts_with('→') => s[..=i].to_string(),
        _ => String::new(),
    };
    let room = width.saturating_sub(head.chars().count() + 1);
    let rest = &s[head.len()..];
    let tail: String = rest
        .chars()
        .skip(rest.chars().count().saturating_sub(room))
        .collect();
    // Start at a directory boundary when there is one.
    let tail = match tail.find('/') {
        Some(i) if i > 0 => tail[i..].to_string(),
        _ => tail,
    };
    format!("{head}…{tail}")
}

/// `7.0ms`, `12ms`, `0.25ms`: the sparklines' shared top.
fn scale_label(max: f64) -> String {
    format!("0-{}", super::num_unit(max, "ms"))
}

/// The sort keys whose columns a table `width` wide shows (the await
/// sparkline's included): what `o`, `<` and `>` move between.
pub fn sort_keys_shown(width: u16, app: &App) -> Vec<SortKey> {
    let latency = app.latency.tracing != Tracing::Unknown;
    let (cols, spark_w) = fit(width, latency, !app.where_io.topology.is_empty());
    let mut keys: Vec<SortKey> = cols.iter().filter_map(|c| sort_key(c.id)).collect();
    if spark_w >= 4 {
        keys.push(SortKey::Await);
    }
    keys
}

/// Draw the table into `area` (first row: headings); returns the names of
/// the devices whose rows it drew.
pub fn render(buf: &mut Buffer, area: Rect, app: &App, t: Theme) -> Vec<String> {
    let latency = app.latency.tracing != Tracing::Unknown;
    let (mut cols, mut spark_w) = fit(area.width, latency, !app.where_io.topology.is_empty());
    widen_sorted(&mut cols, &mut spark_w, app.sort);
    let devs = app.visible();
    let rows = area.height.saturating_sub(1) as usize;
    // None also when the filter hides the selected device: no row is marked.
    let sel = app
        .selected
        .as_ref()
        .and_then(|s| devs.iter().position(|d| &d.name == s));
    // The selected row stays on screen, last when below the first page.
    let offset = (sel.unwrap_or(0) + 1).saturating_sub(rows);
    let on_screen = || devs.iter().skip(offset).take(rows);
    // One scale for every sparkline on screen.
    let sparks: Vec<Vec<f64>> = on_screen()
        .map(|d| {
            app.histories
                .get(&d.name)
                .map(|h| h.tail(spark_w as usize, ExtStats::max_await))
                .unwrap_or_default()
        })
        .collect();
    let spark_max = sparks.iter().flatten().copied().fold(0.0, f64::max);

    let mut x = area.x + 1;
    for c in &cols {
        let sorted = sort_key(c.id) == Some(app.sort);
        let (hx, text, w) = heading(c, x, sorted);
        put(buf, hx, area.y, &text, w, t.heading());
        x += c.width + 1;
    }
    if spark_w >= 4 {
        let arrow = if app.sort == SortKey::Await {
            "↓"
        } else {
            ""
        };
        let mut head = format!("await{arrow}");
        let scale = scale_label(spark_max);
        if spark_max > 0.0 && head.chars().count() + 1 + scale.len() <= spark_w as usize {
            head = format!("{head} {scale}");
        }
        put(buf, x, area.y, &head, spark_w, t.heading());
    }
    if devs.is_empty() {
        let msg = if app.filter.is_empty() {
            "no block devices with a size (waiting for the first sample?)".to_string()
        } else {
            format!("no device matches '{}' (Esc clears the filter)", app.filter)
        };
        put(buf, area.x + 1, area.y + 1, &msg, area.width - 1, t.dim());
        return Vec::new();
    }
    for ((i, d), spark) in devs.iter().enumerate().skip(offset).take(rows).zip(&sparks) {
        let y = area.y + 1 + (i - offset) as u16;
        let selected = sel == Some(i);
        let hot = app.row_hot(&d.name);
        let style = if selected {
            t.selected()
        } else if hot.is_some() {
            t.error()
        } else if !d.queue.has_scheduler() {
            t.dim()
        } else {
            ratatui::style::Style::new()
        };
        if selected {
            buf.set_style(Rect::new(area.x, y, area.width, 1), style);
        }
        // The marker column: `▶` on the selected row, always (it says which
        // device the keys act on), else `!` over a threshold (also without
        // colour); a selected hot row keeps the hot colour in its reverse.
        let mark = match (hot, selected) {
            (_, true) => "▶",
            (Some(Hot::Busy | Hot::Slow), false) => "!",
            (None, false) => " ",
        };
        put(buf, area.x, y, mark, 1, style);
        let s = app.latest(&d.name);
        let mut x = area.x + 1;
        for c in &cols {
            let (v, dim) = match c.id {
                ColId::RP99 => super::latency::p99_cell(app.latency_now(&d.name, Dir::Read)),
                ColId::WP99 => super::latency::p99_cell(app.latency_now(&d.name, Dir::Write)),
                ColId::Mount => (
                    keep_tail(
                        &app.where_io
                            .topology
                            .of(&d.name)
                            .map(|p| p.short())
                            .unwrap_or_default(),
                        c.width as usize,
                    ),
                    false,
                ),
                ColId::InFlight => (
                    app.in_flight(&d.name)
                        .map_or_else(|| "-".into(), |n| n.label()),
                    false,
                ),
                id => (cell(d, s, id), false),
            };
            // A count instead of a p99 is dimmed: too few I/Os for a tail.
            let style = if dim {
                style.add_modifier(Modifier::DIM)
            } else {
                style
            };
            // A value wider than its column (read_ahead_kb 1000000 in RA)
            // becomes `…`, never its first digits.
            let v = super::width::fit(&v, c.width as usize);
            let text = if c.right {
                format!("{v:>w$}", w = c.width as usize)
            } else {
                format!("{v:<w$}", w = c.width as usize)
            };
            put(buf, x, y, &text, c.width, style);
            x += c.width + 1;
        }
        if !spark.is_empty() {
            put(buf, x, y, &sparkline(spark, spark_max), spark_w, style);
        }
    }
    on_screen().map(|d| d.name.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_the_width() {
        for latency in [false, true] {
            for w in [60u16, 80, 100, 160, 250] {
                let (cols, spark) = fit(w, latency, true);
                let used: u16 = 1 + cols.iter().map(|c| c.width + 1).sum::<u16>() + spark;
                assert!(used <= w, "{w}: {used}");
                assert!(cols.iter().any(|c| c.id == ColId::RAwait));
            }
        }
        // At 200 columns everything, with room for a long sparkline.
        assert_eq!(fit(200, true, true).0.len(), COLS.len());
        assert!(fit(200, true, true).1 >= 8);
        assert_eq!(fit(200, false, true).0.len(), COLS.len() - 2);
        assert_eq!(fit(200, true, false).0.len(), COLS.len() - 1);
        assert!(fit(200, true, false).1 >= 30);
        // The read p99 stays at 80 columns; the write p99 needs room.
        let has = |w, latency, id| fit(w, latency, true).0.iter().any(|c: &Col| c.id == id);
        assert!(has(80, true, ColId::RP99) && !has(80, true, ColId::WP99));
        // At 120 throughput joins (with the write p99 when traced).
        for latency in [false, true] {
            assert!(!has(80, latency, ColId::RMbs));
            assert!(has(120, latency, ColId::RMbs) && has(120, latency, ColId::WMbs));
        }
        assert!(has(120, true, ColId::WP99));
        for id in [
            ColId::RAreqSz,
            ColId::WAreqSz,
            ColId::InFlight,
            ColId::Mount,
        ] {
            assert!(!has(120, false, id) && has(200, true, id), "{id:?}");
        }
    }

    #[test]
    fn a_long_placement_keeps_its_end() {
        assert_eq!(keep_tail("/ ext4", 22), "/ ext4");
        assert_eq!(
            keep_tail("→vda:/tmp/blktune/disk.img", 16),
            "→vda:…/disk.img"
        );
        assert_eq!(keep_tail("/srv/a/very/long/mount ext4", 16), "…/mount ext4");
        for w in 8..30 {
            assert!(keep_tail("→vda:/tmp/blktune/disk.img", w).chars().count() <= w);
        }
    }

    #[test]
    fn sparklines_share_one_scale_and_idle_is_lowest() {
        assert_eq!(sparkline(&[0.0, 1.0, 2.0], 2.0), "▁▅█");
        assert_eq!(sparkline(&[0.0, 0.0], 0.0), "▁▁");
        // 7 ms beside a 700 ms row: small, but never the idle bar.
        assert_eq!(sparkline(&[0.0, 7.0, 700.0], 700.0), "▁▂█");
        // The same 7 ms on a row alone at that scale is full height.
        assert_eq!(sparkline(&[7.0], 7.0), "█");
        assert_eq!(sparkline(&[f64::NAN], 1.0), "▁");
    }

    /// The arrow is inside the sorted column's own heading, never in the
    /// gap between two (`w/s↓r_await` read as "sorted by w/s").
    #[test]
    fn the_sort_arrow_sits_inside_its_own_column() {
        for c in COLS.iter().filter(|c| sort_key(c.id).is_some()) {
            let mut cols = vec![*c];
            let mut spark = 20;
            widen_sorted(&mut cols, &mut spark, sort_key(c.id).unwrap());
            let (x, text, w) = heading(&cols[0], 10, true);
            assert_eq!(x, 10, "{}", c.head);
            assert_eq!(text.chars().count(), w as usize, "{}", c.head);
            assert!(text.contains('↓') && text.contains(c.head), "{text}");
            let full = c.head.chars().count() >= c.width as usize;
            assert_eq!(w, c.width + u16::from(full), "{}", c.head);
            assert_eq!(spark, 20 - u16::from(full), "{}", c.head);
            // The cells are as wide as the heading.
            assert_eq!(cols[0].width, w);
        }
    }

    #[test]
    fn every_type_fits_its_column() {
        let w = COLS.iter().find(|c| c.id == ColId::Kind).unwrap().width as usize;
        for k in [
            DeviceKind::Nvme,
            DeviceKind::Ssd,
            DeviceKind::Hdd,
            DeviceKind::Disk,
            DeviceKind::Rom,
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
