//! From a shoot-out's measurements to the comparison engine's rounds, and
//! from the engine's last look to the verdict the shoot-out prints: a
//! winner only when the engine decided one, every claim read from it.

use super::Measurement;
use super::figures::{ConfigSummary, Goal, starvation_note, too_few_notes};
use crate::compare::{Analysis, Answer, Effect, Metric, Outcome, Round, Sample};
use crate::latency::{MIN_IOS_FOR_P99, MIN_IOS_FOR_P999};
use crate::tuner::Wanted;
use serde::{Deserialize, Serialize};

/// One measurement as a round of the engine: its diskstats figures (a mean
/// latency only where there was I/O of its direction), the kernel's
/// percentiles of that round's histogram with the I/Os they rest on (none
/// under 100 I/Os for a p99, 1000 for a p99.9), the load's own likewise.
pub fn round_of(m: &Measurement) -> Round {
    let mut r = Round::new(m.config, m.block, m.at_s);
    let f = &m.figures;
    let mut put = |metric: Metric, value: f64, ios: Option<u64>| {
        r.values.insert(metric, Sample { value, ios });
    };
    put(Metric::RS, f.r_s, None);
    put(Metric::WS, f.w_s, None);
    put(Metric::MbS, f.mb_s, None);
    if f.r_s > 0.0 {
        put(Metric::RAwait, f.r_await, None);
    }
    if f.w_s > 0.0 {
        put(Metric::WAwait, f.w_await, None);
    }
    if let Some(k) = &m.kernel {
        for metric in Metric::KERNEL {
            let Some((span, dir)) = metric.kernel_io() else {
                continue;
            };
            if let (Some(v), Some(l)) = (metric.of_kernel(k), k.get(span, dir)) {
                put(metric, v, Some(l.n));
            }
        }
    }
    if let Some(load) = &f.load {
        let own =
            |s: &crate::load::LatencySummary, need: u64, v: f64| (s.count >= need).then_some(v);
        if let Some(reads) = &load.reads {
            for (metric, need, v) in [
                (Metric::P50, 1, reads.p50),
                (Metric::P99, MIN_IOS_FOR_P99, reads.p99),
                (Metric::P999, MIN_IOS_FOR_P999, reads.p999),
            ] {
                if let Some(v) = own(reads, need, v) {
                    put(metric, v, Some(reads.count));
                }
            }
        }
        if let Some(writes) = &load.writes
            && let Some(v) = own(writes, MIN_IOS_FOR_P99, writes.p99)
        {
            put(Metric::WP99, v, Some(writes.count));
        }
    }
    r.controls = m.controls.clone();
    r
}

/// What the shoot-out concluded, in its own words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub goal: Goal,
    /// The figure it ranks by.
    pub metric: Metric,
    /// The decided winner (`null`: none).
    pub winner: Option<String>,
    /// The winner's settings: what `--apply`, `a` and `--export` use.
    pub winner_settings: Option<Wanted>,
    /// The configuration ahead on the figure, decided or not.
    pub leader: Option<String>,
    /// Configurations no different from the winner (within the minimum effect).
    pub as_good: Vec<String>,
    /// The configuration closest to the leader, and the leader's effect
    /// against it on the goal's figure.
    pub runner_up: Option<String>,
    pub effect: Option<Effect>,
    /// The conclusion in one line.
    pub headline: String,
    /// The same, short enough for a small screen (the comparisons' lines
    /// above it carry the numbers).
    #[serde(default)]
    pub brief: String,
    /// Everything else worth knowing: configurations not ranked, a win
    /// bought with the other direction, drift.
    pub notes: Vec<String>,
}

impl Verdict {
    /// Is there a decided winner?
    pub fn decided(&self) -> bool {
        self.winner.is_some()
    }
}

/// The comparison closest to the leader: the effect least in its favour.
fn runner_up<'a>(a: &'a Analysis, among: &[usize]) -> Option<&'a crate::compare::Comparison> {
    let toward = |c: &crate::compare::Comparison| {
        let e = c.goal.as_ref()?;
        // The leader's change against it: lower is better for latencies.
        Some(if a.metric.lower_is_better() {
            e.change
        } else {
            -e.change
        })
    };
    a.comparisons
        .iter()
        .filter(|c| among.is_empty() || among.contains(&c.other))
        .max_by(|x, y| {
            toward(x)
                .unwrap_or(f64::INFINITY)
                .total_cmp(&toward(y).unwrap_or(f64::INFINITY))
        })
}

/// The verdict of the engine's last look `analysis` (`None`: nothing was
/// measured), over configurations `labels` with settings `settings`.
pub fn verdict(
    goal: Goal,
    analysis: Option<&Analysis>,
    labels: &[String],
    settings: &[Wanted],
    summaries: &[ConfigSummary],
) -> Verdict {
    let metric = analysis.map_or(goal.metric_in(summaries), |a| a.metric);
    let name = |c: usize| labels.get(c).cloned().unwrap_or_default();
    let figure = format!("{goal} ({})", metric.label());
    let mut v = Verdict {
        goal,
        metric,
        winner: None,
        winner_settings: None,
        leader: None,
        as_good: Vec::new(),
        runner_up: None,
        effect: None,
        headline: format!("no winner for {figure}: nothing was measured"),
        brief: String::new(),
        notes: too_few_notes(metric, summaries),
    };
    let Some(a) = analysis else {
        v.brief = v.headline.clone();
        return v;
    };
    v.leader = a.leader.map(name);
    let m = a.min_effect;
    let against = |c: &crate::compare::Comparison| {
        c.goal
            .as_ref()
            .map_or("no pair".to_string(), |e| e.sentence(m))
    };
    v.headline = match &a.outcome {
        Outcome::Winner { leader, as_good } => {
            let w = name(*leader);
            v.winner = Some(w.clone());
            v.winner_settings = settings.get(*leader).cloned();
            v.as_good = as_good.iter().map(|&c| name(c)).collect();
            // The closest among the decided worse ones.
            let worse: Vec<usize> = a
                .comparisons
                .iter()
                .filter(|c| c.goal.as_ref().is_some_and(|e| e.answer == Answer::Better))
                .map(|c| c.other)
                .collect();
            let mut line = format!("winner for {figure}: {w}");
            if let Some(c) = runner_up(a, &worse) {
                v.runner_up = Some(name(c.other));
                v.effect = c.goal.clone();
                if let Some(e) = &c.goal {
                    line.push_str(&format!(
                        ", {} against {}, the closest other",
                        e.number(),
                        name(c.other)
                    ));
                }
            }
            if !v.as_good.is_empty() {
                line.push_str(&format!(
                    "; as good (within ±{:.0}%): {}",
                    m * 100.0,
                    v.as_good.join(", ")
                ));
            }
            if let Some(n) = starvation_note(metric, &w, summaries) {
                v.notes.push(n);
            }
            line
        }
        Outcome::NoDifference => format!(
            "no winner for {figure}: no difference: every configuration is within ±{:.0}% of {}",
            m * 100.0,
            v.leader.clone().unwrap_or_default()
        ),
        Outcome::Undecided { open } => {
            let l = v.leader.clone().unwrap_or_default();
            match runner_up(a, open) {
                Some(c) => {
                    v.runner_up = Some(name(c.other));
                    v.effect = c.goal.clone();
                    format!(
                        "no winner for {figure}: {l} leads, but against {}: {}",
                        name(c.other),
                        against(c)
                    )
                }
                None => format!("no winner for {figure}: undecided"),
            }
        }
        Outcome::Unreliable { why } => format!(
            "no winner for {figure}: UNRELIABLE: {}",
            why.first().cloned().unwrap_or_default()
        ),
        Outcome::NothingToCompare if labels.len() < 2 => {
            "no winner: only one configuration measured, nothing to compare".to_string()
        }
        Outcome::NothingToCompare if a.unranked.len() >= labels.len() => {
            format!("no winner for {figure}: no round measured it (no such I/O in any)")
        }
        Outcome::NothingToCompare => {
            let had: Vec<String> = (0..labels.len())
                .filter(|c| !a.unranked.contains(c))
                .map(name)
                .collect();
            format!(
                "no winner for {figure}: only {} measured it, nothing to compare",
                had.join(", ")
            )
        }
    };
    v.brief = match &a.outcome {
        Outcome::Undecided { open } => format!(
            "no winner for {figure}: {} leads, undecided against {}",
            v.leader.clone().unwrap_or_default(),
            open.iter().map(|&c| name(c)).collect::<Vec<_>>().join(", ")
        ),
        Outcome::Unreliable { .. } => {
            format!("no winner for {figure}: UNRELIABLE, a control failed (above)")
        }
        _ => v.headline.clone(),
    };
    v.notes.extend(a.drift.iter().map(|d| {
        format!(
            "drift: {}: the interleaved pairs keep a steady drift out of the verdict, but the effect may not hold at another time",
            d.text(&name(d.config))
        )
    }));
    v
}

#[cfg(test)]
mod tests;
