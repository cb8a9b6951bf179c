//! The processes panel (`i`): who does the I/O now, over the detail pane
//! (the device title above it stays), drawn on `Clear`.
//!
//! From the kernel (the BPF tracer attributes each request), for the
//! selected device:
//!
//! ```text
//! ┌ who does the I/O on loop0, from the kernel ───── every 1s · i/Esc close ┐
//! │PROCESS           PID CGROUP                  IOPS   MB/s share   r_p99│
//! │fio             31865 blktune-test              41k    161   97%    6.56│
//! │dd               1234 session-3.scope           812   50.8    2%   n=0  │
//! │(rest)                                            9           1%       │
//! │CGROUP                      PSI some/full      IOPS   MB/s share   r_p99│
//! │blktune-test                     12%/3%        41k    161   97%    6.56│
//! └─────────────────────────────────────────────────────────────────────────┘
//! ```
//! IOPS are completed requests per second, MB/s MiB read and written per
//! second, share the percent of the device's requests (diskstats), r_p99 the
//! p99 of the process's reads from start to completion in ms (`n=K` under
//! 100 reads), PSI the share of the interval the cgroup's tasks stalled on
//! I/O (its `io.pressure`). `(rest)`: requests of smaller processes, and of
//! requests that started before the panel opened.
//!
//! Where the kernel cannot say (no BPF: not root, `--no-bpf`), the `/proc`
//! view, which the title calls approximate:
//!
//! ```text
//!  sda  ssd 20G  sched none [mq-deadline] kyber bfq  nr 256  ra 128     detail title
//! ┌ processes doing I/O, approximate (/proc) ──────────── i/Esc close ┐
//! │    PID USER       RD B/s  WR B/s DEVICE   COMMAND              │
//! │   4242 postgres    12.0M   1.50M sda      postgres: checkpointer│ (bold: on the selected device)
//! │    977 root            0    812K vda1     dd if=/dev/zero of=…  │
//! └ not root: only your own processes are shown ────────────────────┘
//! ```
//! Its rates are bytes per second (K, M, G: powers of 1024), as the kernel's
//! per-process accounting counts them (`read_bytes`, `write_bytes`), for
//! every device (the DEVICE column guesses from open files).

use super::width::{clip, width};
use super::{Theme, num, put};
use crate::tui::app::App;
use crate::tui::app::fmt_interval;
use blktune_core::latency::MIN_IOS_FOR_P99;
use blktune_core::procio::ProcessIo;
use blktune_core::who::{DeviceWho, WhoRow};
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

/// Widths of the kernel view's columns: the numbers at the right; the
/// name and the pid at the left ([`Cols`]); the cgroup (in the cgroup
/// rows, the pressure) takes what is left.
const IOPS_W: usize = 6;
const MBS_W: usize = 6;
const SHARE_W: usize = 5;
const P99_W: usize = 7;
const PSI_W: usize = 13;
/// The numbers at the right of every row, with their gaps.
const NUMBERS_W: usize = IOPS_W + MBS_W + SHARE_W + P99_W + 4;
/// Narrower than this, the pid goes and the names are shorter, so that
/// the cgroup keeps a readable width.
const WIDE: usize = 72;

/// The left columns of the kernel view at one width.
#[derive(Debug, Clone, Copy)]
struct Cols {
    name: usize,
    /// The pid's width, 0: not shown.
    pid: usize,
}

impl Cols {
    fn at(iw: usize) -> Self {
        if iw >= WIDE {
            Cols { name: 15, pid: 7 }
        } else {
            Cols { name: 12, pid: 0 }
        }
    }

    /// The name and pid cells.
    fn left(self, name: &str, pid: &str) -> String {
        match self.pid {
            0 => cell(name, self.name),
            w => format!("{} {pid:>w$}", cell(name, self.name)),
        }
    }
}

/// A cgroup row's name cell in a line of `w` columns: all the room the
/// pressure and the numbers leave.
fn cgroup_left(name: &str, w: usize) -> String {
    cell(name, w.saturating_sub(NUMBERS_W + PSI_W + 2))
}

/// IOPS or MB/s in a few columns: `0`, `0.12`, `812`, `41k`.
fn short(v: f64) -> String {
    if v >= 9_999.5 {
        format!("{:.0}k", v / 1000.0)
    } else {
        num(v)
    }
}

/// A row's numbers: IOPS, MB/s, share, r_p99 (`n=K` under 100 reads).
fn numbers(
    iops: f64,
    mib_s: Option<f64>,
    share: Option<f64>,
    p99: Option<(Option<f64>, u64)>,
) -> String {
    let share = share.map_or(String::new(), |s| format!("{s:.0}%"));
    let mbs = mib_s.map_or(String::new(), short);
    let p99 = match p99 {
        Some((Some(ms), n)) if n >= MIN_IOS_FOR_P99 => num(ms),
        Some((_, n)) => format!("n={n}"),
        None => String::new(),
    };
    format!(
        "{:>IOPS_W$} {:>MBS_W$} {:>SHARE_W$} {:>P99_W$}",
        short(iops),
        mbs,
        share,
        p99
    )
}

fn heading_numbers() -> String {
    format!(
        "{:>IOPS_W$} {:>MBS_W$} {:>SHARE_W$} {:>P99_W$}",
        "IOPS", "MB/s", "share", "r_p99"
    )
}

/// A row's numbers as [`numbers`] gives them.
fn row_numbers(r: &WhoRow) -> String {
    numbers(r.iops(), Some(r.mib_s()), r.share, Some((r.r_p99, r.r_n)))
}

/// A process row of the kernel view in `w` columns.
fn who_process_row(r: &WhoRow, cols: Cols, w: usize) -> String {
    let pid = r.pid.map_or_else(|| "-".to_string(), |p| p.to_string());
    let left = cols.left(&r.name, &pid);
    let room = w.saturating_sub(width(&left) + NUMBERS_W + 2);
    let cgroup = r
        .cgroup
        .as_deref()
        .map_or_else(|| "-".to_string(), |p| path_or_unit(p, room));
    who_line(&left, &cgroup, &row_numbers(r), w)
}

/// A cgroup's whole path where it fits in `room` columns, else its unit name.
fn path_or_unit(path: &str, room: usize) -> String {
    if width(path) <= room {
        path.to_string()
    } else {
        blktune_core::who::unit_name(path)
    }
}

/// A cgroup row: its name, its pressure (`12%/3%`: some, full), numbers.
fn who_cgroup_row(r: &WhoRow, w: usize) -> String {
    // `~`: the kernel's 10 s average (the cgroup's first reading).
    let approx = if r.io_avg10 { "~" } else { "" };
    let psi = match (r.io_some, r.io_full) {
        (Some(s), Some(f)) => format!("{approx}{s:.0}%/{f:.0}%"),
        (Some(s), None) => format!("{approx}{s:.0}%"),
        _ => "-".into(),
    };
    let room = w.saturating_sub(NUMBERS_W + PSI_W + 2);
    let name = r
        .cgroup
        .as_deref()
        .map_or_else(|| r.name.clone(), |p| path_or_unit(p, room));
    who_line(
        &cgroup_left(&name, w),
        &format!("{psi:>PSI_W$}"),
        &row_numbers(r),
        w,
    )
}

/// `s` cut or padded to `n` columns.
fn cell(s: &str, n: usize) -> String {
    let c = clip(s, n);
    let pad = n.saturating_sub(width(&c));
    c + &" ".repeat(pad)
}

/// `left`, then `middle` in what the numbers leave, then the numbers at
/// the right edge of `w` columns.
fn who_line(left: &str, middle: &str, nums: &str, w: usize) -> String {
    let mid_w = w.saturating_sub(width(left) + NUMBERS_W + 2);
    clip(&format!("{left} {} {nums}", cell(middle, mid_w)), w)
}

/// The kernel view's lines for one device, in `iw` columns and `rows` rows.
fn who_lines(d: &DeviceWho, iw: usize, rows: usize, t: Theme) -> Vec<(String, Style)> {
    let cols = Cols::at(iw);
    let mut procs: Vec<(String, Style)> = d
        .processes
        .iter()
        .map(|r| (who_process_row(r, cols, iw), Style::new()))
        .collect();
    if d.rest_s > 0.0 {
        let nums = numbers(d.rest_s, None, d.rest_share, None);
        procs.push((who_line(&cols.left("(rest)", ""), "", &nums, iw), t.dim()));
    }
    let cgroups: Vec<(String, Style)> = d
        .cgroups
        .iter()
        .map(|r| (who_cgroup_row(r, iw), Style::new()))
        .collect();
    // Two headings; the cgroups get at least a third of the rest.
    let room = rows.saturating_sub(2);
    let cg_room = cgroups
        .len()
        .min(room.saturating_sub(procs.len()).max(room / 3));
    let pr_room = room - cg_room;
    let mut out = vec![(
        who_line(
            &cols.left("PROCESS", "PID"),
            "CGROUP",
            &heading_numbers(),
            iw,
        ),
        t.heading(),
    )];
    out.extend(procs.into_iter().take(pr_room));
    out.push((
        who_line(
            &cgroup_left("CGROUP", iw),
            &format!("{:>PSI_W$}", "PSI some/full"),
            &heading_numbers(),
            iw,
        ),
        t.heading(),
    ));
    out.extend(cgroups.into_iter().take(cg_room));
    out
}

/// The panel's frame: the device's title line stays visible above it.
fn frame<'a>(
    detail: Rect,
    app: &App,
    left_long: &'a str,
    left_short: &'a str,
    t: Theme,
) -> (Rect, Block<'a>) {
    let area = Rect {
        y: detail.y + 1,
        height: detail.height - 1,
        ..detail
    };
    let every = if app.paused {
        "paused".to_string()
    } else {
        format!("every {}", fmt_interval(app.interval))
    };
    let right = format!(" {every} · i/Esc close ");
    // Both titles whole: the long one only where it fits beside the keys.
    let left = if width(left_long) + width(&right) + 4 <= area.width as usize {
        left_long
    } else {
        left_short
    };
    let block = Block::new()
        .borders(Borders::ALL)
        .border_style(t.dim())
        .title(left)
        .title_style(t.heading())
        .title(ratatui::text::Line::from(right).right_aligned());
    (area, block)
}

/// Draw the panel over `detail` (the detail pane), if it is shown.
pub fn render(buf: &mut Buffer, detail: Rect, app: &App, t: Theme) {
    let w = &app.where_io;
    if !w.shown || detail.height < 4 {
        return;
    }
    if w.no_who.is_none() && w.sample.is_none() {
        return render_who(buf, detail, app, t);
    }
    let (area, mut block) = frame(
        detail,
        app,
        " processes doing I/O, approximate (/proc) ",
        " processes, approximate ",
        t,
    );
    Clear.render(area, buf);
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

/// The kernel view: who did the selected device's I/O in the last interval.
fn render_who(buf: &mut Buffer, detail: Rect, app: &App, t: Theme) {
    let w = &app.where_io;
    let dev = app.selected.as_deref().unwrap_or("-");
    let long = format!(" who does the I/O on {dev}, from the kernel ");
    let short_title = format!(" who does the I/O on {dev} ");
    let (area, block) = frame(detail, app, &long, &short_title, t);
    Clear.render(area, buf);
    let inner = block.inner(area);
    block.render(area, buf);
    let iw = inner.width as usize;
    let rows = inner.height as usize;
    let lines: Vec<(String, Style)> = match &w.who {
        None => vec![(
            "measuring… (from the kernel, after one interval)".into(),
            t.dim(),
        )],
        // A replay of a part recorded without the panel open (or `record --who`).
        Some(all) if all.is_empty() && app.replay.is_some() => vec![(
            "not recorded here: record with the i panel open, or blktune record --who".into(),
            t.dim(),
        )],
        Some(all) => match all.get(dev) {
            Some(d) => who_lines(d, iw, rows, t),
            None => {
                let busy = app
                    .latest(dev)
                    .is_some_and(|s| s.r_s + s.w_s + s.d_s + s.f_s > 0.0);
                let why = if busy {
                    format!(
                        "{dev}: none of its requests in the last interval started since the panel opened"
                    )
                } else {
                    format!("{dev} did no I/O in the last interval")
                };
                vec![(why, t.dim())]
            }
        },
    };
    for (i, (l, st)) in lines.iter().take(rows).enumerate() {
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
