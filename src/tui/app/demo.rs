//! The demo's guided hint, drawn on the banner row of the TUI. In
//! `blktune demo`: what to press first, then what the before/after panel
//! measured of the switch (and an A/B's decided figures once `A` ran). In
//! `blktune replay --demo`: when the recording switches, and past a switch
//! what its panel measured. Every figure is read from the data; nothing
//! is promised in advance.

use super::App;
use blktune_core::before_after::{Basis, BeforeAfter, Row, label};
use blktune_core::compare::{Answer, Metric, Status};
use blktune_core::record::Recording;

/// What the demo's hint is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Demo {
    /// The device the demo switches.
    pub device: String,
    /// In a replay, the recording's scheduler switches of `device`, oldest
    /// first; empty in the live demo (the trainer makes them).
    pub script: Vec<Step>,
}

/// One scheduler switch of a recorded demo.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Seconds from the start of the recording (the header's clock).
    pub at: f64,
    /// The scheduler switched to.
    pub to: String,
}

impl Demo {
    /// `blktune demo` on its scratch device.
    pub fn live(device: String) -> Self {
        Self {
            device,
            script: Vec::new(),
        }
    }

    /// `blktune replay --demo`: the first changed device of `rec` and its
    /// scheduler switches; `None` when the recording switches none.
    pub fn recorded(rec: &Recording) -> Option<Self> {
        let device = rec.changes().next()?.device.clone();
        let script: Vec<Step> = rec
            .changes()
            .filter(|c| c.device == device && c.after.scheduler != c.before.scheduler)
            .filter_map(|c| {
                Some(Step {
                    at: c.t,
                    to: c.after.scheduler.clone()?,
                })
            })
            .collect();
        (!script.is_empty()).then_some(Self { device, script })
    }
}

/// What the panel measured of the demo device's last change, every word
/// read from the data: an A/B's decided figures once it ran
/// (`r_await 0.93->2.45 ms (2.6x slower)`), its progress while it runs, or
/// the one before/after's values (never a direction: one pair decides
/// nothing). The change's own label first (`mq-deadline→bfq`); the longest
/// form first, then shorter ones (one figure). `None` before the first
/// change.
fn measured(app: &App, dev: &str) -> Option<(String, Vec<String>)> {
    let marks = app.marks.get(dev)?;
    let i = marks.len().checked_sub(1)?;
    let to = marks[i]
        .after
        .scheduler
        .clone()
        .unwrap_or_else(|| marks[i].label.clone());
    if let Some(ab) = app.ab_of(dev, marks[i].t) {
        if ab.running() {
            return Some((to, vec![ab.progress_line()]));
        }
        if let Some(r) = &ab.result {
            return Some((to, vec![summary(r, false, 2), summary(r, false, 1)]));
        }
    }
    // A replay cannot run an A/B: its one pair stays one pair.
    let live = app.replay.is_none();
    Some(match app.change_verdict(dev, i) {
        Some(v) => (to, vec![summary(&v, live, 2), summary(&v, live, 1)]),
        None => (
            to,
            vec!["measuring the first intervals after the switch".into()],
        ),
    })
}

/// The headline of a before/after: the failed control, or the latencies
/// that moved most, at most `most` of them (one per direction; an A/B: of
/// those it decided); `offer_ab` says that `A` decides a one-pair change
/// (not in a replay).
pub fn summary(v: &BeforeAfter, offer_ab: bool, most: usize) -> String {
    if let Some(c) = v.controls.iter().find(|c| c.status == Status::Failed) {
        let what = c.text.split(':').next().unwrap_or(&c.text);
        return format!("UNRELIABLE: {what}; the switch is not the only change");
    }
    let decided = matches!(v.basis, Basis::Rounds { .. });
    let size = |r: &Row| (r.after / r.before).ln().abs();
    // Per direction, the latency that moved most (in ratio).
    let pick = |metrics: [Metric; 2]| {
        v.rows
            .iter()
            .filter(|r| metrics.contains(&r.metric) && r.withheld.is_none())
            .filter(|r| !decided || matches!(r.answer, Answer::Better | Answer::Worse))
            .max_by(|a, b| size(a).total_cmp(&size(b)))
    };
    let mut rows: Vec<&Row> = [
        pick([Metric::RAwait, Metric::KRP99]),
        pick([Metric::WAwait, Metric::KWP99]),
    ]
    .into_iter()
    .flatten()
    .collect();
    if rows.len() > most {
        // The one that moved most stays; the reads first when both do.
        rows.sort_by(|a, b| size(b).total_cmp(&size(a)));
        rows.truncate(most);
    }
    let figures: Vec<String> = rows
        .into_iter()
        .map(|r| {
            let mut t = format!("{} {}->{} ms", label(r.metric), num(r.before), num(r.after));
            // A direction only where the engine decided one.
            if decided {
                let ratio = r.after / r.before;
                let (n, word) = if ratio >= 1.0 {
                    (ratio, "slower")
                } else {
                    (1.0 / ratio, "faster")
                };
                t.push_str(&if n >= 1.5 {
                    format!(" ({n:.1}x {word})")
                } else {
                    format!(" ({:.0}% {word})", (n - 1.0) * 100.0)
                });
            }
            t
        })
        .collect();
    match (v.basis, figures.is_empty()) {
        (Basis::Rounds { pairs }, true) => format!("A/B, {pairs} pairs: no latency decided"),
        (Basis::Rounds { pairs }, false) => format!("{} (A/B, {pairs} pairs)", figures.join(", ")),
        (Basis::OnePair, true) => "one before/after: nothing measured yet".into(),
        (Basis::OnePair, false) if offer_ab => {
            format!("{}; one pair: A decides", figures.join(", "))
        }
        (Basis::OnePair, false) => format!("{} (one pair)", figures.join(", ")),
    }
}

/// A latency in ms with three figures: `0.93`, `2.45`, `130`.
fn num(v: f64) -> String {
    if v >= 99.95 {
        format!("{v:.0}")
    } else if v >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The hint line for the demo device in `width` columns (with the banner's
/// leading space), or `None` outside a demo: the longest of its forms that
/// fits (a shorter one drops a figure or the switch after next, never cuts
/// one in half).
pub fn hint(app: &App, width: usize) -> Option<String> {
    let demo = app.demo.as_ref()?;
    let dev = &demo.device;
    let forms: Vec<String> = if let Some(at) = app.replay.as_ref().map(|p| p.at)
        && !demo.script.is_empty()
    {
        script_hint(&demo.script, at, measured(app, dev))
    } else if let Some((to, forms)) = measured(app, dev) {
        forms.into_iter().map(|m| format!("{to}: {m}")).collect()
    } else {
        vec![
            "press s and pick bfq: the panel measures what changes; then A decides it".into(),
            "press s and pick bfq; then A decides".into(),
        ]
    };
    let forms: Vec<String> = forms
        .into_iter()
        .map(|f| format!("DEMO {dev}: {f}"))
        .collect();
    let fits = |f: &&String| f.chars().count() < width;
    forms.iter().find(fits).or(forms.last()).cloned()
}

/// At `at` seconds into the recording, longest first: past a switch, what
/// the panel measured of it (`measured`), then the next switch and when
/// (before the first, the one after it too). Times in the header's clock,
/// so the room can match them.
fn script_hint(script: &[Step], at: f64, measured: Option<(String, Vec<String>)>) -> Vec<String> {
    let clock = |s: &Step| super::replay::clock(s.at);
    let next_at = script.iter().position(|s| s.at > at);
    let last = next_at.map_or(Some(script.len() - 1), |i| i.checked_sub(1));
    let next = next_at.map(|i| {
        let s = &script[i];
        let mut text = format!("at {} {}", clock(s), s.to);
        if let (Some(then), true) = (script.get(i + 1), last.is_none()) {
            text.push_str(&format!("; at {} {}", clock(then), then.to));
        }
        text
    });
    let Some(s) = last.map(|i| &script[i]) else {
        return next.into_iter().collect();
    };
    let since = format!("{} since {}", s.to, clock(s));
    let measured = measured.map(|(_, forms)| forms).unwrap_or_default();
    let mut forms = Vec::new();
    for m in &measured {
        let now = format!("{since}: {m}");
        forms.push(match &next {
            Some(n) => format!("{now}; {n}"),
            None => now,
        });
    }
    // Then without the next switch, the shortest last.
    if next.is_some() {
        forms.extend(measured.iter().map(|m| format!("{since}: {m}")));
    }
    if forms.is_empty() {
        forms.push(match &next {
            Some(n) => format!("{since}; {n}"),
            None => since,
        });
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script() -> Vec<Step> {
        vec![
            Step {
                at: 29.88,
                to: "kyber".into(),
            },
            Step {
                at: 60.38,
                to: "bfq".into(),
            },
        ]
    }

    #[test]
    fn the_recorded_hint_says_when_and_then_what_was_measured() {
        let s = script();
        assert_eq!(script_hint(&s, 0.0, None), ["at 00:30 kyber; at 01:00 bfq"]);
        let m = Some((
            "kyber".to_string(),
            vec![
                "r_await 1.10->0.83 ms, w_p99 1.89->1.86 ms (one pair)".to_string(),
                "r_await 1.10->0.83 ms (one pair)".to_string(),
            ],
        ));
        assert_eq!(
            script_hint(&s, 31.0, m.clone()),
            [
                "kyber since 00:30: r_await 1.10->0.83 ms, w_p99 1.89->1.86 ms (one pair); at 01:00 bfq",
                "kyber since 00:30: r_await 1.10->0.83 ms (one pair); at 01:00 bfq",
                "kyber since 00:30: r_await 1.10->0.83 ms, w_p99 1.89->1.86 ms (one pair)",
                "kyber since 00:30: r_await 1.10->0.83 ms (one pair)",
            ]
        );
        assert_eq!(
            script_hint(&s, 90.0, m)[1],
            "bfq since 01:00: r_await 1.10->0.83 ms (one pair)"
        );
        let other = [Step {
            at: 5.0,
            to: "none".into(),
        }];
        assert_eq!(script_hint(&other, 1.0, None), ["at 00:05 none"]);
        assert_eq!(script_hint(&other, 6.0, None), ["none since 00:05"]);
    }

    fn row(m: Metric, before: f64, after: f64, answer: Answer) -> Row {
        Row {
            metric: m,
            before,
            after,
            change: after / before - 1.0,
            lo: None,
            hi: None,
            answer,
            ios: None,
            withheld: None,
        }
    }

    #[test]
    fn the_summary_says_a_direction_only_where_the_engine_decided_one() {
        let rows = |a: Answer, b: Answer| {
            vec![
                row(Metric::RAwait, 0.93, 2.45, a),
                row(Metric::KRP99, 2.0, 3.0, a),
                row(Metric::KWP99, 130.0, 3.9, b),
            ]
        };
        let one = BeforeAfter {
            basis: Basis::OnePair,
            rows: rows(Answer::Undecided, Answer::Undecided),
            controls: Vec::new(),
        };
        assert_eq!(
            summary(&one, true, 2),
            "r_await 0.93->2.45 ms, w_p99 130->3.90 ms; one pair: A decides"
        );
        // In a replay no A/B; one figure: the one that moved most.
        assert_eq!(summary(&one, false, 1), "w_p99 130->3.90 ms (one pair)");
        let ab = BeforeAfter {
            basis: Basis::Rounds { pairs: 6 },
            rows: rows(Answer::Worse, Answer::Better),
            controls: Vec::new(),
        };
        assert_eq!(
            summary(&ab, false, 2),
            "r_await 0.93->2.45 ms (2.6x slower), w_p99 130->3.90 ms (33.3x faster) (A/B, 6 pairs)"
        );
        // Undecided figures of an A/B are not its headline.
        let open = BeforeAfter {
            rows: rows(Answer::Undecided, Answer::Better),
            ..ab
        };
        assert_eq!(
            summary(&open, false, 2),
            "w_p99 130->3.90 ms (33.3x faster) (A/B, 6 pairs)"
        );
    }
}
