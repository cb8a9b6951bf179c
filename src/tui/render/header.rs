//! The header bar (host, kernel, uptime, iowait, interval, mode) and the
//! read-only banner.

use super::Theme;
use crate::tui::app::replay::clock;
use crate::tui::app::{App, ReplayPosition, Tracing, fmt_interval};
use blktune_core::host::format_uptime;
use blktune_core::pressure::IoPressure;
use blktune_core::text::printable;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// What a header part says, so that shortening can find it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Name,
    Mode,
    Rec,
    Host,
    Kernel,
    Position,
    Uptime,
    Iowait,
    /// The system's I/O pressure (`psi 13.1/2.4%`), where the kernel has PSI.
    Psi,
    Every,
    Paused,
    /// Why there are no kernel percentiles (`no p99: not root`).
    NoP99,
    /// I/Os the kernel could not count (`lost 3 I/Os`), when there were any.
    Lost,
    /// The issue program could not be attached (`no dev span`).
    NoDevSpan,
}

/// One way to make the header shorter.
#[derive(Debug, Clone, Copy)]
enum Shorten {
    Drop(Part),
    /// iowait, where the pressure is shown: the pressure says more (iowait
    /// does not count tasks waiting on O_DIRECT, libaio or io_uring I/O).
    DropIowaitBesidePsi,
    /// The recording's file name without its directory.
    RecBasename,
    /// The middle of the recording's file name, keeping at least this many characters.
    RecEllipsis(usize),
}

/// Cheapest losses first: the kernel and the uptime, then the recording's
/// directory and the middle of its file name (which repeats the hostname),
/// iowait where the pressure is shown, the hostname, iowait, and last why
/// there are no p99s, the pressure, that there is no device span, or how
/// many I/Os they lost. The program name, the mode, the recording marker,
/// the interval and PAUSED stay.
const SHORTEN: [Shorten; 12] = [
    Shorten::Drop(Part::Kernel),
    Shorten::Drop(Part::Uptime),
    Shorten::RecBasename,
    Shorten::RecEllipsis(16),
    Shorten::DropIowaitBesidePsi,
    Shorten::Drop(Part::Host),
    Shorten::Drop(Part::Iowait),
    Shorten::RecEllipsis(5),
    Shorten::Drop(Part::NoP99),
    Shorten::Drop(Part::Psi),
    Shorten::Drop(Part::NoDevSpan),
    Shorten::Drop(Part::Lost),
];

const REC: &str = "● REC ";

/// `s` cut to `keep` characters (at least 2) by replacing its middle with `…`.
fn ellipsize_middle(s: &str, keep: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    let keep = keep.max(2);
    if chars.len() <= keep {
        return s.to_owned();
    }
    let head = (keep - 1) / 2;
    let tail = keep - 1 - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// The header's text, joined with `│`, shortened to fit `width`.
pub fn header_text(app: &App, width: usize) -> String {
    let mode = if app.read_only.is_some() {
        "READ-ONLY"
    } else {
        "root"
    };
    let mut parts = vec![(Part::Name, "blktune".to_string())];
    // A replay's position says "replay"; the live mode is this machine's.
    if app.replay.is_none() {
        parts.push((Part::Mode, mode.to_string()));
    }
    if let Some(p) = &app.recording {
        parts.push((Part::Rec, format!("{REC}{}", p.display())));
    }
    if !app.host.hostname.is_empty() {
        parts.push((Part::Host, app.host.hostname.clone()));
    }
    if !app.host.kernel.is_empty() {
        parts.push((Part::Kernel, app.host.kernel.clone()));
    }
    match &app.replay {
        Some(r) => parts.push((Part::Position, position_label(r))),
        None => parts.push((
            Part::Uptime,
            format!("up {}", format_uptime(app.host.uptime_s + app.now)),
        )),
    }
    parts.push((
        Part::Iowait,
        match app.iowait {
            Some(w) => format!("iowait {w:.1}%"),
            None => "iowait -".into(),
        },
    ));
    if let Some(p) = app.pressure.as_ref().and_then(psi_label) {
        parts.push((Part::Psi, p));
    }
    parts.push((Part::Every, format!("every {}", fmt_interval(app.interval))));
    if app.paused && app.replay.is_none() {
        parts.push((Part::Paused, "PAUSED".into()));
    }
    // Without tracing the table's p99 column is all `-`: say why.
    if let Tracing::Off(why) = &app.latency.tracing {
        parts.push((Part::NoP99, format!("no p99: {why}")));
    }
    // The p99s rest on every I/O but these: say so once there were any.
    if app.latency.lost > 0 {
        parts.push((Part::Lost, format!("lost {} I/Os", app.latency.lost)));
    }
    if app.latency.no_device_span {
        parts.push((Part::NoDevSpan, "no dev span".into()));
    }
    // Each part with its separator, plus a margin of two.
    let len = |parts: &[(Part, String)]| -> usize {
        parts.iter().map(|(_, p)| super::width::width(p) + 3).sum()
    };
    for step in SHORTEN {
        let over = len(&parts).saturating_sub(width);
        if over == 0 {
            break;
        }
        let psi = parts.iter().any(|(k, _)| *k == Part::Psi);
        let rec = parts.iter_mut().find(|(k, _)| *k == Part::Rec);
        match (step, rec) {
            (Shorten::Drop(kind), _) => parts.retain(|(k, _)| *k != kind),
            (Shorten::DropIowaitBesidePsi, _) if psi => parts.retain(|(k, _)| *k != Part::Iowait),
            (Shorten::DropIowaitBesidePsi, _) => {}
            (Shorten::RecBasename, Some((_, text))) => {
                if let Some(base) = app.recording.as_deref().and_then(|p| p.file_name()) {
                    *text = format!("{REC}{}", base.to_string_lossy());
                }
            }
            (Shorten::RecEllipsis(min), Some((_, text))) => {
                let name = text.strip_prefix(REC).unwrap_or(text);
                let keep = name.chars().count().saturating_sub(over).max(min);
                *text = format!("{REC}{}", ellipsize_middle(name, keep));
            }
            (_, None) => {}
        }
    }
    let texts: Vec<&str> = parts.iter().map(|(_, p)| p.as_str()).collect();
    // The hostname, the kernel and the recording's path come from outside.
    format!(" {}", printable(&texts.join(" │ ")))
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
    } else if let (Some(b), Some(hint)) = (banner, crate::tui::app::demo::hint(app, w)) {
        let msg = format!(" {hint}");
        f.render_widget(
            Paragraph::new(Line::from(Span::styled(format!("{msg:<w$}"), t.heading()))),
            b,
        );
    }
}

/// The header's pressure part: the share of the last interval in which
/// some, and all non-idle, tasks stalled on I/O (`psi 13.1/2.4%`; `psi
/// 13.1%` before Linux 5.13, which has no `full` line); before the first
/// interval, the kernel's 10 s average (`psi~ 13.1%`). `None` without PSI.
pub fn psi_label(p: &IoPressure) -> Option<String> {
    let pct = |v: f64| format!("{v:.1}");
    Some(match (p.some_pct, p.full_pct) {
        (Some(s), Some(f)) => format!("psi {}/{}%", pct(s), pct(f)),
        (Some(s), None) => format!("psi {}%", pct(s)),
        (None, _) => match p.file.full {
            Some(f) => format!("psi~ {}/{}%", pct(p.file.some.avg10), pct(f.avg10)),
            None => format!("psi~ {}%", pct(p.file.some.avg10)),
        },
    })
}

/// The header's replay part: `replay 01:23/01:30 x2 ▶`.
pub fn position_label(p: &ReplayPosition) -> String {
    let state = if p.ended {
        "■ end"
    } else if p.paused {
        "‖"
    } else {
        "▶"
    };
    format!(
        "replay {}/{} x{} {state}",
        clock(p.at),
        clock(p.total),
        p.speed
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::Config;
    use blktune_core::host::HostInfo;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use std::path::PathBuf;
    use std::time::Duration;

    const LONG: &str = "/var/log/incidents/blktune-db-prod-01-20261122-081500.ndjson.gz";

    fn app(recording: Option<&str>) -> App {
        let mut app = App::new(Config {
            host: HostInfo {
                hostname: "db-prod-01".into(),
                kernel: "6.18.44-fc-v657".into(),
                uptime_s: 3.0 * 86400.0,
            },
            read_only: None,
            interval: Duration::from_millis(250),
            page_kb: 4,
            color: false,
            select: None,
        });
        app.recording = recording.map(PathBuf::from);
        app.iowait = Some(12.5);
        app
    }

    fn pressure(some: Option<f64>, full: Option<f64>) -> IoPressure {
        use blktune_core::pressure::{Pressure, Stall};
        let stall = |avg10| Stall {
            avg10,
            ..Stall::default()
        };
        IoPressure {
            file: Pressure {
                some: stall(13.13),
                full: Some(stall(2.5)),
            },
            some_pct: some,
            full_pct: full,
        }
    }

    #[test]
    fn pressure_reads_as_the_intervals_share_or_the_kernels_10s_average() {
        assert_eq!(
            psi_label(&pressure(Some(13.14), Some(2.44))).as_deref(),
            Some("psi 13.1/2.4%")
        );
        assert_eq!(
            psi_label(&pressure(Some(7.0), None)).as_deref(),
            Some("psi 7.0%")
        );
        // The first sample: no interval yet.
        assert_eq!(
            psi_label(&pressure(None, None)).as_deref(),
            Some("psi~ 13.1/2.5%")
        );
    }

    /// At 80 columns the pressure is beside iowait; narrower, iowait goes
    /// before the host name does, and the pressure stays.
    #[test]
    fn the_pressure_is_shown_beside_iowait_then_instead_of_it() {
        let mut a = app(None);
        a.pressure = Some(pressure(Some(13.14), Some(2.44)));
        let h = header_text(&a, 80);
        assert!(
            h.contains("iowait 12.5%") && h.contains("psi 13.1/2.4%"),
            "{h}"
        );
        let h = header_text(&a, 64);
        assert!(h.contains("psi 13.1/2.4%"), "{h}");
        assert!(h.contains("every 250ms") && h.contains("db-prod-01"), "{h}");
        assert!(!h.contains("iowait"), "{h}");
        assert!(super::super::width::width(&h) <= 64, "{h}");
        // Without PSI (before 4.20, or CONFIG_PSI off) iowait keeps its place.
        a.pressure = None;
        let h = header_text(&a, 64);
        assert!(h.contains("iowait 12.5%") && !h.contains("psi"), "{h}");
    }

    #[test]
    fn recording_at_80_columns_keeps_rec_and_the_interval_on_screen() {
        let app = app(Some(LONG));
        let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
        term.draw(|f| super::super::draw(f, &app)).unwrap();
        let top: String = (0..80)
            .map(|x| term.backend().buffer()[(x, 0)].symbol().to_string())
            .collect();
        assert!(top.contains("● REC blktune…"), "{top}");
        assert!(top.contains("every 250ms"), "{top}");
        assert!(
            top.contains("root") && top.contains("iowait 12.5%"),
            "{top}"
        );
        // The kernel, uptime, directory and hostname went; the file name
        // lost its middle (the hostname again), not its ends; the name stays.
        assert_eq!(
            top.trim_end(),
            " blktune │ root │ ● REC blktune…djson.gz │ iowait 12.5% │ every 250ms"
        );
    }

    #[test]
    fn the_header_gives_up_parts_in_order_and_never_rec_or_every() {
        let full = header_text(&app(Some(LONG)), 200);
        assert!(
            full.starts_with(" blktune │ root │ ● REC /var/log/"),
            "{full}"
        );
        assert!(
            full.contains("6.18.44-fc-v657") && full.contains("up 3d"),
            "{full}"
        );
        let mut last = usize::MAX;
        for w in (20..=200).rev() {
            let t = header_text(&app(Some(LONG)), w);
            let n = t.chars().count();
            assert!(n <= last, "{w}: {t}");
            last = n;
            assert!(
                t.contains("● REC ") && t.contains("every 250ms"),
                "{w}: {t}"
            );
            if w >= 50 {
                assert!(n <= w, "{w}: {t}");
                assert!(t.starts_with(" blktune │ "), "{w}: {t}");
            }
            // The directory goes before the hostname does.
            if !t.contains("db-prod-01 │") {
                assert!(!t.contains("/var/log"), "{w}: {t}");
            }
        }
        let narrow = header_text(&app(Some(LONG)), 50);
        // 50 = 1 + "blktune" + "root" + "● REC " + 10 + "every 250ms" + separators + margin.
        assert_eq!(narrow, " blktune │ root │ ● REC blkt…on.gz │ every 250ms");
    }

    #[test]
    fn without_a_recording_the_kernel_then_the_uptime_go_never_the_name() {
        // 91 columns in full (with the margin of two); without the kernel 73.
        let t = header_text(&app(None), 80);
        assert_eq!(
            t,
            " blktune │ root │ db-prod-01 │ up 3d 00:00 │ iowait 12.5% │ every 250ms"
        );
        let t = header_text(&app(None), 60);
        assert_eq!(
            t,
            " blktune │ root │ db-prod-01 │ iowait 12.5% │ every 250ms"
        );
    }

    #[test]
    fn lost_ios_are_said_only_once_there_are_some() {
        use crate::tui::worker::latency::{LatencyFeed, LatencySample};
        let mut app = app(None);
        let sample = |t: f64, lost| {
            LatencyFeed::Sample(LatencySample {
                t,
                itv: 1.0,
                devices: Default::default(),
                lost,
            })
        };
        app.on_latency(LatencyFeed::Tracing);
        app.on_latency(sample(1.0, 0));
        assert!(!header_text(&app, 200).contains("lost"));
        app.on_latency(sample(2.0, 2));
        app.on_latency(sample(3.0, 0));
        app.on_latency(sample(4.0, 1));
        let t = header_text(&app, 200);
        assert!(t.ends_with(" │ every 250ms │ lost 3 I/Os"), "{t}");
        // Tracing stopped: no percentiles left to be short.
        app.on_latency(LatencyFeed::Unavailable("BPF read failed".into()));
        assert!(!header_text(&app, 200).contains("lost"));
    }

    #[test]
    fn a_failed_issue_program_is_said_on_the_status_line_and_in_the_header() {
        use crate::tui::worker::latency::LatencyFeed;
        let mut app = app(None);
        app.on_latency(LatencyFeed::Tracing);
        assert!(!header_text(&app, 200).contains("dev span"));
        app.on_latency(LatencyFeed::NoDeviceSpan("block_rq_issue: EPERM".into()));
        let t = header_text(&app, 200);
        assert!(t.ends_with(" │ every 250ms │ no dev span"), "{t}");
        let status = app.status.as_ref().map(|s| s.text.as_str()).unwrap_or("");
        assert!(
            status.starts_with("no device span (r_dev_p99, w_dev_p99) "),
            "{status}"
        );
        assert!(status.ends_with(": block_rq_issue: EPERM"), "{status}");
        // Tracing stopped: nothing left to be without.
        app.on_latency(LatencyFeed::Unavailable("BPF read failed".into()));
        assert!(!header_text(&app, 200).contains("dev span"));
    }

    #[test]
    fn ellipsis_keeps_both_ends() {
        assert_eq!(ellipsize_middle("abcdefghij", 5), "ab…ij");
        assert_eq!(ellipsize_middle("abc", 5), "abc");
        assert_eq!(ellipsize_middle("abcdef", 0), "…f");
    }

    #[test]
    fn position_label_reads_like_a_player() {
        let mut p = ReplayPosition {
            at: 83.4,
            total: 90.0,
            speed: 2.0,
            paused: false,
            ended: false,
        };
        assert_eq!(position_label(&p), "replay 01:23/01:30 x2 ▶");
        p.paused = true;
        p.speed = 0.5;
        assert_eq!(position_label(&p), "replay 01:23/01:30 x0.5 ‖");
        p.ended = true;
        p.at = 3723.0;
        assert!(position_label(&p).starts_with("replay 1:02:03/"));
        assert!(position_label(&p).ends_with("■ end"));
    }
}
