//! Text form of a [`CheckReport`].

use super::{ActionCheck, CheckReport, Status};
use std::fmt::Write as _;

/// The report as text: the file, lines udev ignores, then each device.
pub fn render_text(check_report: &CheckReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} rule{}",
        check_report.file,
        check_report.rules,
        if check_report.rules == 1 { "" } else { "s" }
    );
    for i in &check_report.ignored {
        let _ = writeln!(out, "  line {}: udev ignores this line: {}", i.line, i.why);
    }
    for i in &check_report.idle {
        let _ = writeln!(out, "  line {}: {}", i.line, i.why);
    }
    let untouched: Vec<&str> = check_report
        .devices
        .iter()
        .filter(|d| {
            d.actions
                .iter()
                .all(|a| a.lines.is_empty() && a.problems.is_empty())
        })
        .map(|d| d.device.as_str())
        .collect();
    for d in check_report
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
    match check_report.problem_count() {
        0 => out.push_str("\nno problems found\n"),
        n => {
            let _ = writeln!(
                out,
                "\n{}{n} problem{} found (exit code {})",
                if check_report.problems_capped() {
                    "at least "
                } else {
                    ""
                },
                if n == 1 { "" } else { "s" },
                super::EXIT_PROBLEMS
            );
        }
    }
    out
}

fn same_outcome(action_check: &ActionCheck, check: &ActionCheck) -> bool {
    action_check.lines == check.lines
        && action_check.result == check.result
        && action_check.uncertain == check.uncertain
        && action_check.stopped == check.stopped
        && action_check.problems == check.problems
        && action_check.reset == check.reset
        && (
            action_check.lines_more,
            action_check.problems_more,
            action_check.reset_more,
        ) == (check.lines_more, check.problems_more, check.reset_more)
}

/// `    … and 12 more matching lines (only the first 100 are listed)`.
fn more_line(out: &mut String, count: usize, what: &str) {
    if count > 0 {
        let _ = writeln!(
            out,
            "    … and {count} more {what} (only the first {} are listed)",
            super::MAX_SHOWN
        );
    }
}

/// ` (nr_requests=64 is reset by a later scheduler write)`, or nothing.
fn reset_note(action_check: &ActionCheck) -> String {
    if action_check.reset.is_empty() {
        return String::new();
    }
    let lost: Vec<String> = action_check
        .reset
        .iter()
        .map(|w| format!("{}={}", w.attr.trim_start_matches("queue/"), w.value))
        .collect();
    let more = if action_check.reset_more > 0 {
        format!(" and {} more", action_check.reset_more)
    } else {
        String::new()
    };
    format!(
        " ({}{more} {} reset by a later scheduler write)",
        lost.join(" "),
        if lost.len() + action_check.reset_more == 1 {
            "is"
        } else {
            "are"
        }
    )
}

fn action(out: &mut String, label: &str, action_check: &ActionCheck) {
    if action_check.lines.is_empty() {
        let _ = writeln!(out, "  {label}: no line matches");
        for p in &action_check.problems {
            let _ = writeln!(out, "    problem: {p}");
        }
        more_line(out, action_check.problems_more, "problems");
        return;
    }
    let _ = writeln!(out, "  {label}:");
    for l in &action_check.lines {
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
    more_line(out, action_check.lines_more, "matching lines");
    if let Some(s) = &action_check.stopped {
        let _ = writeln!(out, "    stopped: {s}");
    }
    if !action_check.result.is_empty() {
        let summary: Vec<String> = action_check
            .result
            .iter()
            .map(|w| format!("{}={}", w.attr.trim_start_matches("queue/"), w.value))
            .collect();
        let _ = writeln!(
            out,
            "    result: {}{}{}",
            summary.join(" "),
            reset_note(action_check),
            if action_check.uncertain {
                " (uncertain: a line that cannot be evaluated also writes)"
            } else {
                ""
            }
        );
    } else if action_check.uncertain {
        let _ = writeln!(
            out,
            "    result: unknown (only lines that cannot be evaluated write)"
        );
    }
    for p in &action_check.problems {
        let _ = writeln!(out, "    problem: {p}");
    }
    more_line(out, action_check.problems_more, "problems");
}
