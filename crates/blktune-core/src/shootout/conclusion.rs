//! The verdict of a shoot-out in lines, the same for `bench` and the TUI's
//! `b`: the controls first (what else changed in the same rounds), then the
//! leader against each other configuration with the engine's intervals and
//! answers, every figure against the closest one, and the conclusion.
//!
//! ```text
//! controls (what else changed in the same rounds):
//!   ok      load: IOPS -2% (-6..+2) under kyber against none: no change beyond its noise
//!   FAILED  vda (under loop3) slowed too: await 0.40 -> 540 ms (none -> kyber, ...); the switch is not the only change
//! r_await of kyber against each other configuration: 8 pairs each,
//!   99.2% intervals (5% over 3 comparisons, look 4 of 4); minimum effect ±5%
//!   none          -18% (-27..-8): better
//!   mq-deadline   no difference detectable (±12% at this noise; 40 more rounds would narrow it to ±6%)
//! every figure of kyber against mq-deadline: r_await -3% (-15..+10); r/s +4% (-8..+18); ...
//! no winner for read-latency (r_await): kyber leads, but against mq-deadline: no difference detectable (...)
//! ```

use super::ShootoutResult;
use crate::compare::{Analysis, Effect, Status, change_only};

/// The line the controls come under.
pub const CONTROLS_HEAD: &str = "controls (what else changed in the same rounds):";

/// `OK`, `note`, `FAILED`, padded.
fn status_word(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok    ",
        Status::Note => "note  ",
        Status::Failed => "FAILED",
    }
}

/// How many I/Os a percentile's rounds rested on: `(kernel r_p99: 120 to
/// 4,100 I/Os per round, median 3,950)`.
fn ios_line(e: &Effect) -> Option<String> {
    let ios = e.ios?;
    Some(format!(
        "({} from {} to {} I/Os per round, median {})",
        e.metric.label(),
        ios.min,
        ios.median.max(ios.min),
        ios.median
    ))
}

/// The lines of the comparisons with the leader.
fn comparison_lines(a: &Analysis, name: &dyn Fn(usize) -> String, full: bool) -> Vec<String> {
    let Some(leader) = a.leader else {
        return Vec::new();
    };
    let pairs: Vec<usize> = a
        .comparisons
        .iter()
        .filter_map(|c| c.goal.as_ref().map(|e| e.pairs))
        .collect();
    let (lo, hi) = (
        pairs.iter().min().copied().unwrap_or(0),
        pairs.iter().max().copied().unwrap_or(0),
    );
    let pairs = match (lo, hi) {
        (1, 1) => "1 pair each".to_string(),
        (lo, hi) if lo == hi => format!("{lo} pairs each"),
        (lo, hi) => format!("{lo} to {hi} pairs"),
    };
    let mut out = if full {
        vec![
            format!(
                "{} of {} against each other configuration: {pairs},",
                a.metric.label(),
                name(leader)
            ),
            format!(
                "  {:.1}% intervals ({:.0}% over {} comparison{}, look {} of {}); minimum effect ±{:.0}%",
                a.confidence * 100.0,
                a.alpha_total * 100.0,
                a.comparisons_in_family,
                if a.comparisons_in_family == 1 {
                    ""
                } else {
                    "s"
                },
                a.look,
                a.looks,
                a.min_effect * 100.0
            ),
        ]
    } else {
        // One line on a small screen.
        vec![format!(
            "{} of {} against each: {}, {:.1}% intervals, minimum ±{:.0}%",
            a.metric.label(),
            name(leader),
            pairs.trim_end_matches(" each"),
            a.confidence * 100.0,
            a.min_effect * 100.0
        )]
    };
    // A failed control (the whole run's or this comparison's) makes its
    // answer unreliable, never a win: said on its own line too.
    let run_failed = a.controls.iter().any(|c| c.status == Status::Failed);
    let width = a
        .comparisons
        .iter()
        .map(|c| name(c.other).chars().count())
        .max()
        .unwrap_or(0);
    for c in &a.comparisons {
        let said = c
            .goal
            .as_ref()
            .map_or("no pair has the figure".to_string(), |e| {
                if full {
                    e.sentence(a.min_effect)
                } else {
                    e.brief()
                }
            });
        let said = if run_failed || c.unreliable() {
            format!("{said}; UNRELIABLE (a control failed, above)")
        } else {
            said
        };
        out.push(format!("  {:<width$}  {said}", name(c.other)));
    }
    if let (true, Some(line)) = (
        full,
        a.comparisons
            .iter()
            .filter_map(|c| c.goal.as_ref())
            .find_map(ios_line),
    ) {
        out.push(format!("  {line}"));
    }
    out
}

/// Every line of the verdict (see the module documentation); `full`:
/// also the controls that are fine, the I/O counts of the percentiles,
/// every figure against the closest other, and each answer in words
/// (`bench`); a small screen gets each comparison and the conclusion in
/// one line ([`crate::compare::Effect::brief`], [`super::Verdict::brief`]).
pub fn verdict_lines(r: &ShootoutResult, full: bool) -> Vec<String> {
    let name = |c: usize| {
        r.configurations
            .get(c)
            .map_or("?".to_string(), |s| s.configuration.clone())
    };
    let mut out = Vec::new();
    if let Some(a) = &r.analysis {
        // Whatever failed or is worth a note; what held only for the closest
        // comparison (the others' steady lines say the same).
        let closest = r
            .verdict
            .runner_up
            .as_ref()
            .and_then(|ru| a.comparisons.iter().find(|c| &name(c.other) == ru));
        let controls: Vec<_> = a
            .all_controls()
            .into_iter()
            .filter(|c| {
                c.status != Status::Ok
                    || (full && closest.is_some_and(|cl| cl.controls.contains(c)))
            })
            .collect();
        if !controls.is_empty() {
            out.push(CONTROLS_HEAD.to_string());
            for c in controls {
                out.push(format!("  {}  {}", status_word(c.status), c.text));
            }
        }
    }
    for n in &r.verdict.notes {
        out.push(format!("note: {n}"));
    }
    if let Some(a) = &r.analysis {
        out.extend(comparison_lines(a, &name, full));
        if let (true, Some(l), Some(ru)) = (full, a.leader, &r.verdict.runner_up)
            && let Some(c) = a.comparisons.iter().find(|c| &name(c.other) == ru)
        {
            // One pair has no interval: the bare changes, said once.
            let one_pair = c.figures.iter().all(|e| e.lo.is_none());
            let figures: Vec<String> = c
                .figures
                .iter()
                .map(|e| match e.lo {
                    Some(_) => format!("{} {}", e.metric.label(), e.number()),
                    None => format!("{} {}", e.metric.label(), change_only(e.change)),
                })
                .collect();
            if !figures.is_empty() {
                out.push(format!(
                    "every figure of {} against {ru}{}: {}",
                    name(l),
                    if one_pair {
                        " (one pair, no intervals)"
                    } else {
                        ""
                    },
                    figures.join("; ")
                ));
            }
        }
    }
    out.push(if full {
        r.verdict.headline.clone()
    } else {
        r.verdict.brief.clone()
    });
    out
}
