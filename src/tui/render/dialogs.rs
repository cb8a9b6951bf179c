//! The export (`e`) and shoot-out (`b`) dialogs.
//!
//! ```text
//! ┌ export a udev rule ──────────────────────────────────────────────────────┐
//! │devices  loop3 (this device)                         a: all changed (0)   │
//! │match    kernel        m: id model class kernel                           │
//! │path     /etc/udev/rules.d/61-blktune.rules                    p: edit    │
//! │! warning: KERNEL names are not stable ...                                │
//! │── preview ───────────────────────────────────────────────── 1-12 of 30 ──│
//! │# udev rules written by blktune ...                                       │
//! │Enter write  m match  a all  p path  ↑↓ scroll  Esc close                 │
//! └──────────────────────────────────────────────────────────────────────────┘
//! ```
//! At most three warning lines fit above the preview (the third says how many
//! more); when the rule has warnings, Enter first replaces the preview with all
//! of them, wrapped, and only `y` writes.
//! The shoot-out box shows its setup, then a progress bar, then the results.

use super::{Theme, num};
use crate::tui::bench_dialog::{BenchDialog, DWELL, ROUNDS, SETTLE, Stage};
use crate::tui::export_dialog::{ExportDialog, Focus, STRATEGIES};
use blktune_core::shootout::{Metric, ShootoutResult, verdict_text};
use blktune_core::units::format_duration;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

fn boxed(f: &mut Frame, r: Rect, title: &str, lines: Vec<Line>, t: Theme, wrap: bool) {
    f.render_widget(Clear, r);
    let block = Block::bordered().title(Span::styled(format!(" {title} "), t.heading()));
    let p = Paragraph::new(lines).block(block);
    let p = if wrap {
        p.wrap(Wrap { trim: false })
    } else {
        p
    };
    f.render_widget(p, r);
}

/// Nearly the whole screen, leaving the status and hint lines visible.
fn big(area: Rect) -> Rect {
    Rect::new(
        area.x + 1,
        area.y + 1,
        area.width.saturating_sub(2),
        area.height.saturating_sub(3),
    )
}

/// Draw the export dialog.
pub fn export(f: &mut Frame, area: Rect, d: &ExportDialog, t: Theme) {
    let r = big(area);
    let inner_h = r.height.saturating_sub(2) as usize;
    let mut lines = Vec::new();
    let scope = if d.all && !d.changed.is_empty() {
        format!("{} (changed in this session)", d.names())
    } else {
        format!("{} (this device)", d.names())
    };
    lines.push(Line::from(vec![
        Span::styled("devices  ", t.dim()),
        Span::raw(format!("{scope:<44}")),
        Span::styled(format!("a: all changed ({})", d.changed.len()), t.dim()),
    ]));
    let choices: Vec<&str> = STRATEGIES.iter().map(|s| s.label()).collect();
    lines.push(Line::from(vec![
        Span::styled("match    ", t.dim()),
        Span::styled(format!("{:<14}", d.strategy.label()), t.heading()),
        Span::styled(format!("m: {}", choices.join(" ")), t.dim()),
    ]));
    let path = match &d.focus {
        Focus::Path { .. } => Line::from(vec![
            Span::styled("path     ", t.dim()),
            Span::styled(format!("{}▏", d.path), t.heading()),
            Span::styled("  Enter keep  Esc undo", t.dim()),
        ]),
        _ => Line::from(vec![
            Span::styled("path     ", t.dim()),
            Span::raw(format!("{:<52}", d.path)),
            Span::styled("p: edit", t.dim()),
        ]),
    };
    lines.push(path);
    if let Some(why) = &d.read_only {
        lines.push(Line::from(Span::styled(
            format!(
                "read-only ({why}): only a file is written, no device changes; /etc needs root"
            ),
            t.dim(),
        )));
    }
    let (text, warnings): (Vec<&str>, Vec<String>) = match &d.preview {
        Ok(p) => (p.text.lines().collect(), p.warnings.clone()),
        Err(e) => (Vec::new(), vec![format!("cannot export: {e}")]),
    };
    let w = r.width.saturating_sub(2) as usize;
    if d.focus == Focus::Warnings {
        warnings_body(&mut lines, &warnings, inner_h, w, t);
        lines.push(Line::from(Span::styled(
            format!("y write {} anyway   n back", d.path.trim()),
            t.heading(),
        )));
        boxed(f, r, "export a udev rule", lines, t, false);
        return;
    }
    // At most WARN_LINES lines here; Enter lists them all before writing.
    const WARN_LINES: usize = 3;
    let shown_w = if warnings.len() > WARN_LINES {
        WARN_LINES - 1
    } else {
        warnings.len()
    };
    for warning in warnings.iter().take(shown_w) {
        lines.push(Line::from(Span::styled(
            clip(&format!("! {warning}"), w),
            t.error(),
        )));
    }
    if warnings.len() > shown_w {
        lines.push(Line::from(Span::styled(
            clip(
                &format!(
                    "! +{} more warnings (Enter lists them all before writing)",
                    warnings.len() - shown_w
                ),
                w,
            ),
            t.error(),
        )));
    }
    let room = inner_h.saturating_sub(lines.len() + 2);
    let skip = (d.scroll as usize).min(text.len().saturating_sub(1));
    let shown = text.len().saturating_sub(skip).min(room);
    let pos = if text.is_empty() {
        "empty".to_string()
    } else {
        format!("{}-{} of {}", skip + 1, skip + shown, text.len())
    };
    let label = format!("── preview {pos} ");
    lines.push(Line::from(Span::styled(
        format!(
            "{label}{}",
            "─".repeat(w.saturating_sub(label.chars().count()))
        ),
        t.dim(),
    )));
    for l in text.iter().skip(skip).take(room) {
        lines.push(Line::raw(l.to_string()));
    }
    while lines.len() < inner_h.saturating_sub(1) {
        lines.push(Line::raw(""));
    }
    let hint = match d.focus {
        // Drawn by `warnings_body` above.
        Focus::Warnings => Line::raw(""),
        Focus::Overwrite => Line::from(Span::styled(
            format!("{} exists: y overwrite   n keep it", d.path.trim()),
            t.error(),
        )),
        Focus::Writing => Line::from(Span::styled("writing…", t.dim())),
        Focus::Path { .. } => Line::from(Span::styled(
            "type the path   Enter keep   Esc undo   Bksp delete",
            t.dim(),
        )),
        Focus::Options => Line::from(Span::styled(
            "Enter write  m match  a all  p path  ↑↓ scroll  Esc close",
            t.heading(),
        )),
    };
    lines.push(hint);
    boxed(f, r, "export a udev rule", lines, t, false);
}

/// `s` cut to `w` characters, with `…` when something was cut.
fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let mut out: String = s.chars().take(w.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `s` broken into lines of at most `w` characters, at spaces where possible.
fn wrap(s: &str, w: usize) -> Vec<String> {
    let w = w.max(8);
    let mut out = Vec::new();
    let mut line = String::new();
    for word in s.split(' ') {
        let mut word = word.to_string();
        while word.chars().count() > w {
            if !line.is_empty() {
                out.push(std::mem::take(&mut line));
            }
            let head: String = word.chars().take(w).collect();
            word = word.chars().skip(w).collect();
            out.push(head);
        }
        let need = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
        if need > w && !line.is_empty() {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}

/// The confirmation step: every warning, wrapped, in place of the preview.
/// If they do not all fit, the rest is counted (they are also in the file's
/// `# Warnings:` header, which the preview shows).
fn warnings_body(lines: &mut Vec<Line>, warnings: &[String], inner_h: usize, w: usize, t: Theme) {
    let n = warnings.len();
    lines.push(Line::from(Span::styled(
        format!(
            "── {n} warning{}: read before writing ",
            if n == 1 { "" } else { "s" }
        ),
        t.heading(),
    )));
    // Room for the warnings, leaving the "+N more" line and the hint.
    let room = inner_h.saturating_sub(lines.len() + 2);
    let mut used = 0;
    let mut done = 0;
    for warning in warnings {
        let wrapped = wrap(warning, w.saturating_sub(2));
        let last = done + 1 == n;
        let limit = if last { room + 1 } else { room };
        if used + wrapped.len() > limit {
            break;
        }
        for (i, l) in wrapped.into_iter().enumerate() {
            let l = if i == 0 {
                format!("! {l}")
            } else {
                format!("  {l}")
            };
            lines.push(Line::from(Span::styled(clip(&l, w), t.error())));
            used += 1;
        }
        done += 1;
    }
    if done < n {
        lines.push(Line::from(Span::styled(
            clip(
                &format!(
                    "+{} more (all are in the file's \"# Warnings:\" header)",
                    n - done
                ),
                w,
            ),
            t.error(),
        )));
    }
    while lines.len() < inner_h.saturating_sub(1) {
        lines.push(Line::raw(""));
    }
}

/// A text progress bar of `w` cells.
pub fn bar(done: f64, w: usize) -> String {
    let filled = ((done.clamp(0.0, 1.0) * w as f64).round() as usize).min(w);
    format!("{}{}", "█".repeat(filled), "░".repeat(w - filled))
}

/// Draw the shoot-out dialog.
pub fn bench(f: &mut Frame, area: Rect, d: &BenchDialog, t: Theme) {
    let r = big(area);
    let w = r.width.saturating_sub(2) as usize;
    let mut lines = Vec::new();
    let mut keys: Option<&str> = None;
    let title = format!("scheduler shoot-out on {}", d.device);
    match &d.stage {
        Stage::Setup => {
            lines.push(Line::raw(format!("schedulers  {}", d.schedulers.join(" "))));
            lines.push(Line::from(vec![
                Span::raw(format!("load        {:<48}", d.load.label())),
                Span::styled("l/Tab: change", t.dim()),
            ]));
            lines.push(Line::raw(format!(
                "timing      {ROUNDS} round, settle {} + dwell {} each: about {}",
                format_duration(SETTLE),
                format_duration(DWELL),
                format_duration(d.planned())
            )));
            lines.push(Line::raw(""));
            for l in [
                "Each scheduler is switched in through the tuner (journalled) and measured",
                "from diskstats; the charts mark every switch. At the end, or on Esc, the",
                "original settings come back. Passive adds no I/O; randread adds reads",
                "only. One short round is a demo: use 'blktune bench' to decide.",
            ] {
                lines.push(Line::from(Span::styled(l, t.dim())));
            }
            lines.push(Line::raw(""));
            lines.push(Line::from(Span::styled(
                "Enter start   l/Tab load   Esc close",
                t.heading(),
            )));
        }
        Stage::Running {
            progress,
            cancelling,
        } => {
            let (line, done, left) = progress
                .as_ref()
                .map_or(("starting…".to_string(), 0.0, d.planned()), |p| {
                    (p.line(), p.done, p.time_left)
                });
            lines.push(Line::raw(format!("load   {}", d.load.label())));
            lines.push(Line::raw(""));
            lines.push(Line::styled(line, t.heading()));
            let pct = format!(" {:>3.0}%", done * 100.0);
            lines.push(Line::raw(format!(
                "{}{pct}",
                bar(done, w.saturating_sub(pct.len()))
            )));
            lines.push(Line::raw(format!(
                "time left about {}",
                format_duration(std::time::Duration::from_secs(
                    left.as_secs_f64().ceil() as u64
                ))
            )));
            lines.push(Line::raw(""));
            let hint = if *cancelling {
                "cancelling: restoring the original settings…"
            } else {
                "Esc cancels and restores the original settings"
            };
            lines.push(Line::from(Span::styled(hint, t.heading())));
        }
        Stage::Done(res) => {
            lines.extend(results_lines(res, t));
            lines.push(Line::raw(""));
            keys = Some("a apply the winner   e export it as a udev rule   Esc close");
        }
        Stage::Failed(e) => {
            lines.push(Line::from(Span::styled(e.clone(), t.error())));
            lines.push(Line::raw(""));
            lines.push(Line::from(Span::styled("Esc close", t.heading())));
        }
    }
    // Wrapped rows, plus the key line, plus the borders; the key line is
    // drawn on the last inner row so a long verdict never pushes it out.
    let rows = wrapped_rows(&lines, w) + usize::from(keys.is_some());
    let h = (rows as u16 + 2).min(r.height);
    let boxr = Rect::new(r.x, r.y + (r.height - h) / 2, r.width, h);
    boxed(f, boxr, &title, lines, t, true);
    if let Some(k) = keys
        && boxr.height > 2
    {
        let row = Rect::new(boxr.x + 1, boxr.bottom() - 2, boxr.width - 2, 1);
        f.render_widget(Clear, row);
        f.render_widget(Paragraph::new(Span::styled(k, t.heading())), row);
    }
}

/// Rows `lines` take when word-wrapped greedily at `w` columns (as the
/// paragraph wraps them; a word longer than a row is split).
fn wrapped_rows(lines: &[Line], w: usize) -> usize {
    let w = w.max(1);
    lines
        .iter()
        .map(|l| {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            let (mut rows, mut col) = (1, 0);
            for word in text.split(' ') {
                let n = word.chars().count();
                let need = if col == 0 { n } else { col + 1 + n };
                if need <= w {
                    col = need;
                } else {
                    // On a new row, unless the row is still empty; a word
                    // longer than a row goes on over the next ones.
                    rows += usize::from(col > 0);
                    rows += n.saturating_sub(1) / w;
                    col = if n == 0 { 0 } else { (n - 1) % w + 1 };
                }
            }
            rows
        })
        .sum()
}

/// The results table (means per scheduler), the verdict and what the device was left with.
pub fn results_lines(r: &ShootoutResult, t: Theme) -> Vec<Line<'static>> {
    const COLS: [Metric; 6] = [
        Metric::RS,
        Metric::WS,
        Metric::MbS,
        Metric::RAwait,
        Metric::WAwait,
        Metric::Util,
    ];
    let mut head = format!("{:<12}", "scheduler");
    for m in COLS {
        head.push_str(&format!("{:>9}", m.label()));
    }
    let winner = r.verdict.as_ref().map(|v| v.winner.clone());
    let mut out = vec![Line::styled(head, t.heading())];
    for s in &r.schedulers {
        let mark = if winner.as_deref() == Some(s.scheduler.as_str()) {
            "★"
        } else {
            " "
        };
        let mut row = format!("{mark}{:<11}", s.scheduler);
        for m in COLS {
            let v = s.get(m).map_or("-".to_string(), |sp| num(sp.mean));
            row.push_str(&format!("{v:>9}"));
        }
        out.push(Line::raw(row));
    }
    out.push(Line::styled(
        format!(
            "{} round of {:.0}s each; r_await/w_await in ms",
            r.rounds, r.dwell_s
        ),
        t.dim(),
    ));
    match &r.verdict {
        Some(v) => {
            for l in verdict_text(v).lines() {
                let st = if l.starts_with("WARNING") {
                    t.error()
                } else {
                    Style::new()
                };
                out.push(Line::styled(l.to_string(), st));
            }
        }
        None => out.push(Line::raw(format!(
            "no winner for {}: its figure was not measured",
            r.goal
        ))),
    }
    out.push(Line::styled(r.final_settings.clone(), t.done()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_rows_counts_greedy_word_wrapping() {
        let rows = |s: &str, w| wrapped_rows(&[Line::raw(s.to_string())], w);
        assert_eq!(rows("", 10), 1);
        assert_eq!(rows("abc def", 7), 1);
        assert_eq!(rows("abc def", 6), 2);
        assert_eq!(rows("aaaa bbbb cccc", 9), 2);
        // A word longer than a row is split over rows.
        assert_eq!(rows("aaaaaaaaaaaa", 5), 3);
        assert_eq!(rows("aaaaaaaaaa", 5), 2);
        assert_eq!(
            wrapped_rows(&[Line::raw("one"), Line::raw("two three")], 5),
            3
        );
    }
}
