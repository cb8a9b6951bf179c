//! The before/after of a change in the detail pane's side panel, as the
//! comparison engine reads it ([`blktune_core::before_after`]): what else
//! changed first (the controls), then the rates and the latencies with
//! their change in the one number format, then the call.
//!
//! ```text
//! Δ none→mq-deadline  12s ago
//!   and nr_requests 128→256
//! UNRELIABLE: vda (under loop0) slowed    a failed control, in full
//!   too: await 0.40 -> 4.0 ms (...)
//! moved: load; steady: vda, system       else what was checked, one line
//!         before after change
//! r/s     33613 28102 -16% (-19..-13)    rates first
//! w/s     14300 12000 -16% (-19..-13)
//! MB/s      187   156 -16% (-19..-13)
//! r_await  0.10  0.12 +25% (+10..+41)    then each direction's latencies
//! r_p99    2.46  2.00 -19% (-40..+5)     (p50, dev99, p99.9 where tall)
//! w_await  0.10  0.12 +23% (+9..+38)
//! w_p99    2.67  2.07 -23% (-41..+2)
//! one before, one after: undecided (...) the call; A runs an A/B
//! ```
//!
//! Narrow and short panels keep the lines by priority: the change, a failed
//! control, the rates and the awaits come first; what was checked, the
//! p99s, the call, MB/s, the notes, the counts (`I/Os`, wide panels only)
//! after them. An A/B's rows end with the engine's answer in a wide panel
//! (`worse`, `better`, `same`, `?`) and its call names them all.

use super::num;
use super::width::{right, wrap};
use blktune_core::before_after::{Basis, BeforeAfter, Row, label};
use blktune_core::compare::{Answer, Metric, Status};

/// How a line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    Heading,
    Plain,
    /// A failed control: the result is unreliable.
    Alarm,
    Dim,
}

/// The panel is wide enough for the answers and the counts.
pub const WIDE: usize = 48;

/// Width of the label column and of each value column.
const LABEL_W: usize = 7;
const VALUE_W: usize = 6;

/// Which rows a panel of this height keeps first (lower is kept first).
fn priority(m: Metric) -> u8 {
    match m {
        Metric::RS | Metric::WS | Metric::RAwait | Metric::WAwait => 2,
        Metric::KRP99 | Metric::KWP99 => 3,
        Metric::MbS => 5,
        Metric::KRP999 | Metric::KWP999 => 7,
        _ => 8,
    }
}

/// `worse`, `better`, `same` (no difference), `?` (undecided).
fn answer_word(a: Answer) -> &'static str {
    match a {
        Answer::Better => "better",
        Answer::Worse => "worse",
        Answer::NoDifference => "same",
        Answer::Undecided => "?",
    }
}

/// A row: the label, both values, the change with its interval where it
/// fits (`-16% (-19..-13)`, else `-16%`), and in a wide panel of an A/B the
/// engine's answer.
pub fn row_line(r: &Row, width: usize, answers: bool) -> String {
    let head = format!(
        "{:<LABEL_W$}{}{}",
        label(r.metric),
        right(&num(r.before), VALUE_W),
        right(&num(r.after), VALUE_W)
    );
    let room = width.saturating_sub(head.chars().count() + 1);
    let full = r.number();
    let mut change = if full.chars().count() <= room {
        full
    } else {
        let bare = Row {
            lo: None,
            hi: None,
            ..r.clone()
        };
        bare.number()
    };
    if answers {
        change = format!("{change:<18} {}", answer_word(r.answer));
    }
    format!("{head} {change}").trim_end().to_string()
}

/// The I/Os a direction's latencies rest on, both sides (`I/Os  281k  140k`):
/// the kernel's count where it traced, else diskstats'.
fn count_line(v: &BeforeAfter, dir: [Metric; 3]) -> Option<String> {
    let (b, a) = dir.iter().find_map(|&m| v.row(m)?.ios)?;
    let n = |c: u64| {
        if c >= 100_000 {
            format!("{}k", c / 1000)
        } else {
            c.to_string()
        }
    };
    Some(format!(
        "{:<LABEL_W$}{}{}",
        "  I/Os",
        right(&n(b), VALUE_W),
        right(&n(a), VALUE_W)
    ))
}

/// The call in one sentence: unreliable (the failed control first), one
/// pair (undecided), or an A/B's answers figure by figure:
/// `A/B, 6 pairs: after worse on r/s, r_await; no difference on w/s`.
pub fn call(v: &BeforeAfter) -> String {
    if v.unreliable() {
        // The failed control is said in full above the numbers.
        return "unreliable: the switch is not the only change (above); not a result to act on"
            .into();
    }
    let Basis::Rounds { pairs } = v.basis else {
        return v.call();
    };
    let mut parts = Vec::new();
    for (answer, words) in [
        (Answer::Worse, "after worse on"),
        (Answer::Better, "after better on"),
        (Answer::NoDifference, "no difference on"),
        (Answer::Undecided, "undecided on"),
    ] {
        let names: Vec<&str> = v
            .rows
            .iter()
            .filter(|r| r.answer == answer)
            .map(|r| label(r.metric))
            .collect();
        if !names.is_empty() {
            parts.push(format!("{words} {}", names.join(", ")));
        }
    }
    format!("A/B, {pairs} pairs of rounds: {}", parts.join("; "))
}

/// `values` without repeats, in their order.
fn dedup(values: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A block of lines with the priority it is kept by.
struct Block {
    priority: u8,
    lines: Vec<(String, Look)>,
}

/// The panel's lines for `v` under the change's `head` lines (its label,
/// its age, what else it changed), within `width` columns and `budget`
/// rows. `hint` follows the call (`A runs an A/B`); `extra` are blocks of
/// lines after the table, each with the priority it is kept by (the
/// probe's rows, where the time went).
pub fn lines(
    v: &BeforeAfter,
    head: Vec<(String, Look)>,
    hint: Option<&str>,
    extra: Vec<(u8, Vec<(String, Look)>)>,
    width: usize,
    budget: usize,
) -> Vec<(String, Look)> {
    let wide = width >= WIDE;
    let answers = wide && matches!(v.basis, Basis::Rounds { .. });
    let wrapped = |text: &str, look: Look| -> Vec<(String, Look)> {
        wrap(text, width.saturating_sub(2))
            .into_iter()
            .enumerate()
            .map(|(i, l)| (if i == 0 { l } else { format!("  {l}") }, look))
            .collect()
    };
    let mut blocks: Vec<Block> = Vec::new();
    let (first, rest) = head.split_at(head.len().min(1));
    blocks.push(Block {
        priority: 0,
        lines: first.to_vec(),
    });
    if !rest.is_empty() {
        blocks.push(Block {
            priority: 3,
            lines: rest.to_vec(),
        });
    }
    // What else changed, before the numbers: a failed control in full.
    for c in v.controls.iter().filter(|c| c.status == Status::Failed) {
        blocks.push(Block {
            priority: 1,
            lines: wrapped(&format!("UNRELIABLE: {}", c.text), Look::Alarm),
        });
    }
    let notes: Vec<&str> = v
        .controls
        .iter()
        .filter(|c| c.status == Status::Note)
        .map(|c| c.text.as_str())
        .collect();
    let steady: Vec<&str> = v
        .controls
        .iter()
        .filter(|c| c.status == Status::Ok)
        .map(|c| c.text.as_str())
        .collect();
    if !notes.is_empty() || !steady.is_empty() {
        // One line that says what was checked: the notes' subjects, then
        // the steady ones; each note in full where there is room.
        let subject = |s: &&str| s.split([':', ' ']).next().unwrap_or("").to_string();
        let mut said = Vec::new();
        if !notes.is_empty() {
            let n: Vec<String> = notes.iter().map(subject).collect();
            said.push(format!("moved: {}", dedup(n).join(", ")));
        }
        let moved: Vec<String> = notes.iter().map(subject).collect();
        let s: Vec<String> = steady
            .iter()
            .map(subject)
            .filter(|x| !moved.contains(x))
            .collect();
        if !s.is_empty() {
            said.push(format!("steady: {}", dedup(s).join(", ")));
        }
        blocks.push(Block {
            priority: 3,
            lines: vec![(super::width::fit(&said.join("; "), width), Look::Dim)],
        });
        for n in &notes {
            blocks.push(Block {
                priority: 6,
                lines: wrapped(&format!("note: {n}"), Look::Dim),
            });
        }
    }
    blocks.push(Block {
        priority: 2,
        lines: vec![(
            format!(
                "{:<LABEL_W$}{}{} change",
                "",
                right("before", VALUE_W),
                right("after", VALUE_W)
            ),
            Look::Heading,
        )],
    });
    for r in &v.rows {
        let mut l = vec![(row_line(r, width, answers), Look::Plain)];
        let dir = match r.metric {
            Metric::RAwait => Some([Metric::KRP50, Metric::KRP99, Metric::RAwait]),
            Metric::WAwait => Some([Metric::KWP50, Metric::KWP99, Metric::WAwait]),
            _ => None,
        };
        if wide && let Some(c) = dir.and_then(|d| count_line(v, d)) {
            l.push((c, Look::Dim));
        }
        blocks.push(Block {
            priority: priority(r.metric),
            lines: l,
        });
    }
    for (priority, lines) in extra {
        blocks.push(Block { priority, lines });
    }
    let text = if wide || !matches!(v.basis, Basis::OnePair) || v.unreliable() {
        call(v)
    } else {
        // The engine's words, shorter for a narrow panel.
        "one before, one after: undecided (± within each window, blind to drift)".to_string()
    };
    let call = match hint {
        Some(h) => format!("{text}; {h}"),
        None => text,
    };
    blocks.push(Block {
        priority: 4,
        lines: wrapped(&call, Look::Dim),
    });
    // Keep blocks by priority within the budget, then show them in order.
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    order.sort_by_key(|&i| blocks[i].priority);
    let mut keep = vec![false; blocks.len()];
    let mut used = 0;
    for i in order {
        let n = blocks[i].lines.len();
        if used + n <= budget {
            used += n;
            keep[i] = true;
        }
    }
    blocks
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .flat_map(|(b, _)| b.lines)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use blktune_core::compare::{ControlCheck, ControlKind};

    fn row(m: Metric, b: f64, a: f64, lo: f64, hi: f64) -> Row {
        Row {
            metric: m,
            before: b,
            after: a,
            change: a / b - 1.0,
            lo: Some(lo),
            hi: Some(hi),
            answer: Answer::Undecided,
            ios: None,
            withheld: None,
        }
    }

    fn verdict() -> BeforeAfter {
        BeforeAfter {
            basis: Basis::OnePair,
            rows: vec![
                row(Metric::RS, 33613.0, 28102.0, -0.19, -0.13),
                row(Metric::RAwait, 0.10, 0.263, 1.40, 1.90),
            ],
            controls: vec![ControlCheck {
                kind: ControlKind::Under,
                status: Status::Failed,
                text: "vda (under loop0) slowed too: await 0.40 -> 4.0 ms (before -> after, +900%); the switch is not the only change".into(),
            }],
        }
    }

    #[test]
    fn the_rates_row_has_both_values_and_the_interval_in_a_narrow_panel() {
        let v = verdict();
        let l = row_line(&v.rows[0], 38, false);
        assert_eq!(l, "r/s     33613 28102 -16% (-19..-13)");
        assert!(l.chars().count() <= 38);
        let l = row_line(&v.rows[1], 38, false);
        assert_eq!(l, "r_await  0.10  0.26 +163% (+140..+190)");
        // Too long for its room: the change alone.
        let l = row_line(&v.rows[1], 36, false);
        assert_eq!(l, "r_await  0.10  0.26 +163%");
    }

    #[test]
    fn a_failed_control_comes_before_the_numbers_and_survives_a_short_panel() {
        let v = verdict();
        let head = vec![("Δ none→kyber  5s ago".to_string(), Look::Heading)];
        let all = lines(&v, head.clone(), Some("A runs an A/B"), Vec::new(), 36, 40);
        let alarm = all.iter().position(|(_, k)| *k == Look::Alarm).unwrap();
        let rates = all.iter().position(|(l, _)| l.starts_with("r/s")).unwrap();
        assert!(alarm < rates, "{all:?}");
        assert!(all.iter().all(|(l, _)| l.chars().count() <= 36), "{all:?}");
        // Six rows: the change, the whole failed control, the header and r/s.
        let short = lines(&v, head, None, Vec::new(), 36, 7);
        let text: Vec<&str> = short.iter().map(|(l, _)| l.as_str()).collect();
        assert!(text[0].starts_with("Δ none→kyber"), "{text:?}");
        assert!(
            text.iter().any(|l| l.starts_with("UNRELIABLE: vda")),
            "{text:?}"
        );
        assert!(short.len() <= 7, "{text:?}");
    }
}
