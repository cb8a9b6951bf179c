//! Unit tests of the parent module (and of the pooled figures it uses).

use super::super::figures::{Figures, LoadFigures};
use super::super::kernel::DwellHists;
use super::super::kernel::tests::hist;
use super::super::{FakeRounds, ShootoutResult, fake_result};
use super::*;
use crate::load::LatencySummary;

fn fig(r_await: f64, w_s: f64) -> Figures {
    Figures {
        r_s: 1000.0,
        w_s,
        r_await,
        mb_s: 4.0,
        ..Figures::default()
    }
}

/// Rounds of r_await `ms`, each `1 ± wobble` alternately.
fn runs(ms: f64, wobble: f64, n: usize) -> Vec<(Figures, Option<DwellHists>)> {
    (0..n)
        .map(|i| {
            let w = if i % 2 == 0 {
                1.0 + wobble
            } else {
                1.0 - wobble
            };
            (fig(ms * w, 100.0), None)
        })
        .collect()
}

fn result(configs: &[(&str, FakeRounds)]) -> ShootoutResult {
    fake_result("loop3", Goal::ReadLatency, configs)
}

#[test]
fn a_clear_winner_is_named_with_its_effect_against_the_closest_other() {
    let r = result(&[
        ("none", runs(2.0, 0.02, 6)),
        ("mq-deadline", runs(1.6, 0.02, 6)),
        ("kyber", runs(1.0, 0.02, 6)),
    ]);
    let v = &r.verdict;
    assert_eq!(v.winner.as_deref(), Some("kyber"));
    assert_eq!(v.runner_up.as_deref(), Some("mq-deadline"));
    assert_eq!(
        v.winner_settings
            .as_ref()
            .and_then(|w| w.scheduler.as_deref()),
        Some("kyber")
    );
    assert!(
        v.headline
            .starts_with("winner for read-latency (r_await): kyber, -38% (-"),
        "{}",
        v.headline
    );
    assert!(
        v.headline
            .ends_with(" against mq-deadline, the closest other")
    );
    assert_eq!(v.effect.as_ref().unwrap().answer, Answer::Better);
}

#[test]
fn undecided_names_the_open_comparison_and_the_rounds_that_would_decide_it() {
    let mut against = runs(1.0, 0.3, 4);
    against.reverse();
    let r = result(&[("none", runs(1.05, 0.3, 4)), ("kyber", against)]);
    let v = &r.verdict;
    assert_eq!(v.winner, None);
    assert!(
        v.headline
            .starts_with("no winner for read-latency (r_await): kyber leads, but against none: no difference detectable (±"),
        "{}",
        v.headline
    );
    assert!(v.headline.contains(" more rounds would "), "{}", v.headline);
    // One round each: no interval at all.
    let r = result(&[("none", runs(2.0, 0.0, 1)), ("kyber", runs(1.0, 0.0, 1))]);
    assert_eq!(r.verdict.winner, None);
    assert!(
        r.verdict
            .headline
            .contains("(one pair, no interval): undecided"),
        "{}",
        r.verdict.headline
    );
}

#[test]
fn equal_configurations_are_no_difference_not_a_winner() {
    let r = result(&[
        ("none", runs(1.0, 0.005, 6)),
        ("kyber", runs(1.0, 0.005, 6)),
    ]);
    assert_eq!(r.verdict.winner, None);
    assert!(
        r.verdict
            .headline
            .contains(": no difference: every configuration is within ±5% of "),
        "{}",
        r.verdict.headline
    );
}

#[test]
fn a_read_latency_win_that_starved_the_writes_says_so() {
    let starved = |ms: f64, w_s: f64| {
        (0..6)
            .map(|i| (fig(ms * (1.0 + 0.01 * (i % 2) as f64), w_s), None))
            .collect::<Vec<_>>()
    };
    let r = result(&[("kyber", starved(0.31, 3300.0)), ("bfq", starved(0.2, 0.5))]);
    assert_eq!(r.verdict.winner.as_deref(), Some("bfq"));
    assert!(
        r.verdict.notes.iter().any(|n| n
            == "bfq nearly stopped the writes (0.5 w/s vs 3300.0 under another configuration): its r_await is bought with them"),
        "{:?}",
        r.verdict.notes
    );
}

/// A configuration whose dwells the kernel timed: reads of (count, ns) groups per round.
fn traced(groups: &[&[(u64, u64)]]) -> Vec<(Figures, Option<DwellHists>)> {
    groups
        .iter()
        .map(|g| {
            let mut reads = crate::latency::Hist::empty();
            for &(n, ns) in *g {
                reads.add(&hist(n, ns));
            }
            let d = DwellHists {
                reads,
                ..DwellHists::default()
            };
            (fig(1.0, 0.0), Some(d))
        })
        .collect()
}

#[test]
fn the_p99_goal_ranks_by_the_kernels_per_round_percentiles_with_their_counts() {
    let mut r = fake_result(
        "loop3",
        Goal::P99,
        &[
            (
                "a",
                traced(&[
                    &[(1000, 2_000_000)],
                    &[(1000, 2_050_000)],
                    &[(1000, 1_950_000)],
                ]),
            ),
            (
                "b",
                traced(&[
                    &[(1000, 1_000_000)],
                    &[(1000, 1_020_000)],
                    &[(1000, 980_000)],
                ]),
            ),
            // c did almost no reads: no p99, not ranked, said so.
            (
                "c",
                traced(&[&[(30, 100_000)], &[(20, 100_000)], &[(25, 100_000)]]),
            ),
        ],
    );
    let v = &r.verdict;
    assert_eq!(v.metric, Metric::KRP99);
    assert_eq!(v.winner.as_deref(), Some("b"), "{}", v.headline);
    assert!(
        v.notes
            .contains(&"c: 75 reads, too few for a p99 (needs 100): not ranked".to_string()),
        "{:?}",
        v.notes
    );
    let e = v.effect.as_ref().unwrap();
    assert_eq!(e.ios.map(|i| (i.min, i.median)), Some((1000, 1000)));
    let a = r.analysis.take().unwrap();
    assert_eq!(a.unranked, [2]);
}

#[test]
fn a_round_holds_every_figure_it_has_and_no_percentile_from_too_few_ios() {
    let load = LoadFigures {
        reads: Some(LatencySummary {
            count: 500,
            p50: 0.4,
            p99: 2.0,
            p999: 5.0,
            ..LatencySummary::default()
        }),
        ..LoadFigures::default()
    };
    let f = Figures {
        r_s: 100.0,
        w_s: 0.0,
        r_await: 0.5,
        w_await: 0.0,
        load: Some(load),
        ..Figures::default()
    };
    let r = fake_result("x", Goal::ReadLatency, &[("none", vec![(f, None)])]);
    let round = round_of(&r.measurements[0]);
    let has = |m| round.values.contains_key(&m);
    assert!(has(Metric::RAwait) && has(Metric::RS) && has(Metric::P99));
    // No writes: no w_await; 500 reads: no p99.9 of the load's own.
    assert!(!has(Metric::WAwait) && !has(Metric::P999));
    assert_eq!(round.values[&Metric::P99].ios, Some(500));
}

#[test]
fn goal_names_round_trip() {
    for g in Goal::ALL {
        assert_eq!(g.label().parse::<Goal>(), Ok(g));
    }
    assert!("fast".parse::<Goal>().is_err());
    assert_eq!(Goal::WriteP99.fallback(), Some(Metric::WP99));
}
