//! Text form of a [`CheckReport`].

use super::{ActionCheck, CheckReport, Status};
use std::fmt::Write as _;

/// The report as text: the file, lines udev ignores, then each device.
pub fn render_text(r: &CheckReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} rule{}",
        r.file,
        r.rules,
        if r.rules == 1 { "" } else { "s" }
    );
    for i in &r.ignored {
        let _ = writeln!(out, "  line {}: udev ignores this line: {}", i.line, i.why);
    }
    for i in &r.idle {
        let _ = writeln!(out, "  line {}: {}", i.line, i.why);
    }
    let untouched: Vec<&str> = r
        .devices
        .iter()
        .filter(|d| {
            d.actions
                .iter()
                .all(|a| a.lines.is_empty() && a.problems.is_empty())
        })
        .map(|d| d.device.as_str())
        .collect();
    for d in r
        .devices
        .iter()
        .filter(|d| !untouched.contains(&d.device.as_str()))
    {
        let _ = writeln!(out, "\n{} ({})", d.device, d.kind);
        let same = d.actions.windows(2).all(|w| same_outcome(&w[0], &w[1]));
        if same && let Some(a) = d.actions.first() {
            let label = d
                .actions
                .iter()
                .map(|a| a.action.as_str())
                .collect::<Vec<_>>()
                .join("|");
            action(&mut out, &label, a);
        } else {
            for a in &d.actions {
                action(&mut out, &a.action, a);
            }
        }
    }
    if !untouched.is_empty() {
        let _ = writeln!(out, "\nno line matches: {}", untouched.join(", "));
    }
    match r.problem_count() {
        0 => out.push_str("\nno problems found\n"),
        n => {
            let _ = writeln!(
                out,
                "\n{}{n} problem{} found (exit code {})",
                if r.problems_capped() { "at least " } else { "" },
                if n == 1 { "" } else { "s" },
                super::EXIT_PROBLEMS
            );
        }
    }
    out
}

fn same_outcome(a: &ActionCheck, b: &ActionCheck) -> bool {
    a.lines == b.lines
        && a.result == b.result
        && a.uncertain == b.uncertain
        && a.stopped == b.stopped
        && a.problems == b.problems
        && a.reset == b.reset
        && (a.lines_more, a.problems_more, a.reset_more)
            == (b.lines_more, b.problems_more, b.reset_more)
}

/// `    … and 12 more matching lines (only the first 100 are listed)`.
fn more_line(out: &mut String, n: usize, what: &str) {
    if n > 0 {
        let _ = writeln!(
            out,
            "    … and {n} more {what} (only the first {} are listed)",
            super::MAX_SHOWN
        );
    }
}

/// ` (nr_requests=64 is reset by a later scheduler write)`, or nothing.
fn reset_note(a: &ActionCheck) -> String {
    if a.reset.is_empty() {
        return String::new();
    }
    let lost: Vec<String> = a
        .reset
        .iter()
        .map(|w| format!("{}={}", w.attr.trim_start_matches("queue/"), w.value))
        .collect();
    let more = if a.reset_more > 0 {
        format!(" and {} more", a.reset_more)
    } else {
        String::new()
    };
    format!(
        " ({}{more} {} reset by a later scheduler write)",
        lost.join(" "),
        if lost.len() + a.reset_more == 1 {
            "is"
        } else {
            "are"
        }
    )
}

fn action(out: &mut String, label: &str, a: &ActionCheck) {
    if a.lines.is_empty() {
        let _ = writeln!(out, "  {label}: no line matches");
        for p in &a.problems {
            let _ = writeln!(out, "    problem: {p}");
        }
        more_line(out, a.problems_more, "problems");
        return;
    }
    let _ = writeln!(out, "  {label}:");
    for l in &a.lines {
        match l.status {
            Status::Match => {
                let _ = writeln!(out, "    line {}: matches", l.line);
            }
            Status::CannotEvaluate => {
                let _ = writeln!(
                    out,
                    "    line {}: cannot evaluate ({})",
                    l.line,
                    l.why.join("; ")
                );
            }
        }
        let verb = if l.status == Status::Match {
            "sets"
        } else {
            "would set"
        };
        for s in &l.sets {
            let _ = writeln!(out, "      {verb} {} = {}", s.attr, s.value);
        }
        for s in &l.env {
            let _ = writeln!(out, "      {verb} ENV{{{}}} = {}", s.attr, s.value);
        }
        for o in &l.other {
            let _ = writeln!(out, "      also {o}");
        }
    }
    more_line(out, a.lines_more, "matching lines");
    if let Some(s) = &a.stopped {
        let _ = writeln!(out, "    stopped: {s}");
    }
    if !a.result.is_empty() {
        let summary: Vec<String> = a
            .result
            .iter()
            .map(|w| format!("{}={}", w.attr.trim_start_matches("queue/"), w.value))
            .collect();
        let _ = writeln!(
            out,
            "    result: {}{}{}",
            summary.join(" "),
            reset_note(a),
            if a.uncertain {
                " (uncertain: a line that cannot be evaluated also writes)"
            } else {
                ""
            }
        );
    } else if a.uncertain {
        let _ = writeln!(
            out,
            "    result: unknown (only lines that cannot be evaluated write)"
        );
    }
    for p in &a.problems {
        let _ = writeln!(out, "    problem: {p}");
    }
    more_line(out, a.problems_more, "problems");
}
