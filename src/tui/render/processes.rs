//! The processes panel (`i`): who does the I/O now, over the detail pane
//! (the device title above it stays), drawn on `Clear`.
//!
//! ```text
//!  sda  ssd 20G  sched none [mq-deadline] kyber bfq  nr 256  ra 128     detail title
//! ┌ processes doing I/O now, busiest first ──────────── i/Esc close ┐
//! │    PID USER       RD B/s  WR B/s DEVICE   COMMAND              │
//! │   4242 postgres    12.0M   1.50M sda      postgres: checkpointer│ (bold: on the selected device)
//! │    977 root            0    812K vda1     dd if=/dev/zero of=…  │
//! └ not root: only your own processes are shown ────────────────────┘
//! ```
//! Rates are bytes per second (K, M, G: powers of 1024), as the kernel's
//! per-process accounting counts them (`read_bytes`, `write_bytes`).

use super::width::{clip, width};
use super::{Theme, put};
use crate::tui::app::App;
use crate::tui::app::fmt_interval;
use blktune_core::procio::ProcessIo;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::{Block, Borders, Clear, Widget};

/// Columns before the command: pid, user, read, write, device (and gaps).
const PID_W: usize = 7;
const USER_W: usize = 9;
const RATE_W: usize = 7;
const DEV_W: usize = 8;

/// Bytes per second in at most 5 columns: `0`, `512`, `12.3K`, `845M`, `1.2G`.
pub fn rate(bps: f64) -> String {
    const UNITS: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    let mut v = bps.max(0.0);
    let mut u = 0;
    while v >= 1023.5 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v >= 99.95 {
        format!("{v:.0}{}", UNITS[u])
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

/// The header and one row, in `w` columns.
fn row_text(cells: [&str; 6], w: usize) -> String {
    let [pid, user, r, wr, dev, cmd] = cells;
    let head = format!(
        "{pid:>PID_W$} {:<USER_W$} {r:>RATE_W$} {wr:>RATE_W$} {:<DEV_W$} ",
        clip(user, USER_W),
        clip(dev, DEV_W),
    );
    // Padding counted in columns: a wide character in a user name stays aligned.
    let pad = |s: String, n: usize| {
        let extra = n.saturating_sub(width(&s));
        s + &" ".repeat(extra)
    };
    let head = pad(head, PID_W + USER_W + 2 * RATE_W + DEV_W + 5);
    let left = w.saturating_sub(width(&head));
    clip(&(head + &clip(cmd, left)), w)
}

fn process_row(p: &ProcessIo, w: usize) -> String {
    let devices = if p.devices.is_empty() {
        "-".to_string()
    } else {
        p.devices.join(",")
    };
    row_text(
        [
            &p.pid.to_string(),
            &p.user,
            &rate(p.read_bps),
            &rate(p.write_bps),
            &devices,
            &p.command,
        ],
        w,
    )
}

/// Draw the panel over `detail` (the detail pane), if it is shown.
pub fn render(buf: &mut Buffer, detail: Rect, app: &App, t: Theme) {
    let w = &app.where_io;
    if !w.shown || detail.height < 4 {
        return;
    }
    // The device's title line stays visible above the panel.
    let area = Rect {
        y: detail.y + 1,
        height: detail.height - 1,
        ..detail
    };
    Clear.render(area, buf);
    let every = if app.paused {
        "paused".to_string()
    } else {
        format!("every {}", fmt_interval(app.interval))
    };
    let right = format!(" {every} · i/Esc close ");
    // Both titles whole: the long one only where it fits beside the keys.
    let long = " processes doing I/O now, busiest first ";
    let left = if width(long) + width(&right) + 4 <= area.width as usize {
        long
    } else {
        " processes doing I/O now "
    };
    let mut block = Block::new()
        .borders(Borders::ALL)
        .border_style(t.dim())
        .title(left)
        .title_style(t.heading())
        .title(ratatui::text::Line::from(right).right_aligned());
    let limited = w.sample.as_ref().is_some_and(|s| s.limited);
    if limited {
        block = block.title_bottom(" not root: only your own processes are shown ");
    }
    let inner = block.inner(area);
    block.render(area, buf);
    let iw = inner.width as usize;
    let mut lines: Vec<(String, Style)> = vec![(
        row_text(["PID", "USER", "RD B/s", "WR B/s", "DEVICE", "COMMAND"], iw),
        t.heading(),
    )];
    match &w.sample {
        None => lines.push(("measuring… (rates after one interval)".into(), t.dim())),
        Some(s) if s.rows.is_empty() && s.interval <= 0.0 => {
            lines.push(("measuring… (rates after one interval)".into(), t.dim()))
        }
        Some(s) if s.rows.is_empty() => {
            lines.push(("no process did I/O in the last interval".into(), t.dim()))
        }
        Some(s) => {
            let selected = app.selected.as_deref();
            for p in &s.rows {
                // Processes on the selected device stand out (bold, no colour needed).
                let mine = selected.is_some_and(|d| {
                    p.devices
                        .iter()
                        .any(|x| x == d || x.strip_prefix(d).is_some_and(is_partition_suffix))
                });
                let st = if mine { t.heading() } else { Style::new() };
                lines.push((process_row(p, iw), st));
            }
        }
    }
    for (i, (l, st)) in lines.iter().take(inner.height as usize).enumerate() {
        put(buf, inner.x, inner.y + i as u16, l, inner.width, *st);
    }
}

/// `1` of `sda1`, `p2` of `nvme0n1p2`: the rest of a partition's name.
fn is_partition_suffix(rest: &str) -> bool {
    let digits = rest.strip_prefix('p').unwrap_or(rest);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_whole_numbers_in_five_columns() {
        assert_eq!(rate(0.0), "0");
        assert_eq!(rate(512.0), "512");
        assert_eq!(rate(1023.0), "1023");
        assert_eq!(rate(1024.0), "1.0K");
        assert_eq!(rate(12.34 * 1024.0 * 1024.0), "12.3M");
        assert_eq!(rate(845.0 * 1024.0 * 1024.0), "845M");
        assert_eq!(rate(1023.9 * 1024.0 * 1024.0), "1.0G");
        for v in [0.0, 999.0, 1e3, 1e5, 9.99e6, 1e9, 5e12, 1e18] {
            assert!(rate(v).len() <= 5, "{v}: {}", rate(v));
        }
    }

    #[test]
    fn a_row_keeps_its_numbers_and_cuts_only_the_command() {
        let p = ProcessIo {
            pid: 4_194_304,
            user: "a-very-long-user".into(),
            command: "dd if=/dev/zero of=/dev/loop3 bs=4k".into(),
            read_bps: 0.0,
            write_bps: 1.5 * 1024.0 * 1024.0,
            devices: vec!["loop3".into()],
        };
        let r = process_row(&p, 58);
        assert_eq!(width(&r), 58, "{r}");
        assert!(
            r.starts_with("4194304 a-very-l…       0    1.5M loop3    dd if="),
            "{r}"
        );
        assert!(r.ends_with('…'), "{r}");
        assert!(is_partition_suffix("1") && is_partition_suffix("p2"));
        assert!(!is_partition_suffix("") && !is_partition_suffix("x1"));
    }
}
