//! Unit tests of the parent module.

use super::*;

#[test]
fn a_read_latency_win_that_starved_the_writes_says_so() {
    let f = |r_await: f64, w_s: f64| Figures {
        r_s: 1000.0,
        w_s,
        r_await,
        ..Figures::default()
    };
    let s = vec![
        SchedulerSummary::new("kyber", vec![f(0.31, 3300.0), f(0.31, 3250.0)]),
        SchedulerSummary::new("bfq", vec![f(0.28, 0.5), f(0.28, 0.7)]),
    ];
    let v = verdict(Goal::ReadLatency, &s).unwrap();
    assert_eq!(v.winner, "bfq");
    assert!(
        v.notes.iter().any(|n| n
            == "bfq nearly stopped the writes (0.6 w/s vs 3275.0 under another scheduler): its r_await is bought with them"),
        "{:?}",
        v.notes
    );
    // Writes kept going: no such note; a read-only load has none either.
    let fair = vec![
        SchedulerSummary::new("kyber", vec![f(0.31, 3300.0)]),
        SchedulerSummary::new("bfq", vec![f(0.28, 2900.0)]),
    ];
    let reads_only = vec![
        SchedulerSummary::new("kyber", vec![f(0.31, 0.0)]),
        SchedulerSummary::new("bfq", vec![f(0.28, 0.0)]),
    ];
    for s in [fair, reads_only] {
        let v = verdict(Goal::ReadLatency, &s).unwrap();
        assert!(
            !v.notes.iter().any(|n| n.contains("nearly stopped")),
            "{:?}",
            v.notes
        );
    }
    // Throughput has no other direction to starve.
    let v = verdict(Goal::Throughput, &s).unwrap();
    assert!(!v.notes.iter().any(|n| n.contains("nearly stopped")));
}

fn fig(r_await: f64, mb_s: f64) -> Figures {
    Figures {
        r_s: 100.0,
        r_await,
        mb_s,
        ..Figures::default()
    }
}

fn with_p99(f: Figures, p99: f64) -> Figures {
    Figures {
        load: Some(LoadFigures {
            reads: Some(LatencySummary {
                count: 10,
                p99,
                ..LatencySummary::default()
            }),
            ..LoadFigures::default()
        }),
        ..f
    }
}

fn sum(name: &str, r_awaits: &[f64]) -> SchedulerSummary {
    SchedulerSummary::new(name, r_awaits.iter().map(|&a| fig(a, 10.0 / a)).collect())
}

#[test]
fn plan_alternates_the_order_every_round() {
    let s: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let p: Vec<String> = plan(&s, 3)
        .into_iter()
        .map(|(r, s)| format!("{r}{s}"))
        .collect();
    assert_eq!(p, ["0a", "0b", "0c", "1c", "1b", "1a", "2a", "2b", "2c"]);
    assert!(plan(&s, 0).is_empty());
}

#[test]
fn spread_statistics() {
    let s = Spread::of(Metric::RS, &[1.0, 3.0]).unwrap();
    assert_eq!(
        (s.mean, s.min, s.max, s.stddev, s.range()),
        (2.0, 1.0, 3.0, 1.0, 2.0)
    );
    assert!(Spread::of(Metric::RS, &[]).is_none());
}

#[test]
fn clear_winner_by_read_latency() {
    // kyber 1.0 ms ± 0.1, none 2.0 ms ± 0.1: 50 % better, well outside the noise.
    let v = verdict(
        Goal::ReadLatency,
        &[sum("none", &[1.9, 2.1]), sum("kyber", &[0.9, 1.1])],
    )
    .unwrap();
    assert_eq!(v.winner, "kyber");
    assert_eq!(v.runner_up.as_deref(), Some("none"));
    assert!((v.advantage_pct.unwrap() - 50.0).abs() < 1e-9);
    assert!(!v.noisy, "{:?}", v.notes);
    assert!(v.notes.is_empty());
}

#[test]
fn throughput_prefers_the_higher_value() {
    let v = verdict(
        Goal::Throughput,
        &[sum("none", &[1.0, 1.0]), sum("bfq", &[2.0, 2.0])],
    )
    .unwrap();
    // mb_s = 10 / r_await: none 10 MB/s beats bfq 5 MB/s by 100 %.
    assert_eq!(v.winner, "none");
    assert!((v.advantage_pct.unwrap() - 100.0).abs() < 1e-9);
    assert!(!v.noisy);
}

#[test]
fn small_advantage_is_noise() {
    // 3 % better and perfectly repeatable: still below the floor.
    let v = verdict(
        Goal::ReadLatency,
        &[sum("a", &[1.00, 1.00]), sum("b", &[0.97, 0.97])],
    )
    .unwrap();
    assert_eq!(v.winner, "b");
    assert!(v.noisy);
    assert!(v.notes[0].contains("noise floor"), "{:?}", v.notes);
}

#[test]
fn advantage_within_the_spread_is_noise() {
    // 20 % better on average, but one of a's rounds beat b's worst.
    let v = verdict(
        Goal::ReadLatency,
        &[sum("a", &[0.5, 2.0]), sum("b", &[0.9, 1.1])],
    )
    .unwrap();
    assert_eq!(v.winner, "b");
    assert!((v.advantage_pct.unwrap() - 20.0).abs() < 1e-9);
    assert!(v.noisy);
    assert!(v.notes.iter().any(|n| n.contains("spread across rounds")));
}

#[test]
fn one_round_is_flagged_and_one_scheduler_has_no_runner_up() {
    let v = verdict(Goal::ReadLatency, &[sum("a", &[2.0]), sum("b", &[1.0])]).unwrap();
    assert!(!v.noisy);
    assert!(v.notes.iter().any(|n| n.contains("one round")));
    let v = verdict(Goal::ReadLatency, &[sum("a", &[2.0, 2.1])]).unwrap();
    assert_eq!(v.winner, "a");
    assert_eq!(v.runner_up, None);
    assert!(v.notes[0].contains("only one scheduler"));
}

#[test]
fn p99_goal_needs_load_figures() {
    assert!(verdict(Goal::P99, &[sum("a", &[1.0]), sum("b", &[2.0])]).is_none());
    let a = SchedulerSummary::new("a", vec![with_p99(fig(1.0, 1.0), 9.0)]);
    let b = SchedulerSummary::new("b", vec![with_p99(fig(2.0, 1.0), 3.0)]);
    let v = verdict(Goal::P99, &[a, b]).unwrap();
    assert_eq!(v.winner, "b", "p99 ranks by the load's tail, not r_await");
    assert_eq!(v.metric, Metric::P99);
}

/// A scheduler whose load saw `load_p99` and whose dwells the kernel
/// timed: per dwell, reads of (count, ns) groups.
fn traced(name: &str, load_p99: f64, dwells: &[&[(u64, u64)]]) -> SchedulerSummary {
    use super::super::kernel::tests::hist;
    let hists: Vec<DwellHists> = dwells
        .iter()
        .map(|groups| {
            let mut reads = crate::latency::Hist::empty();
            for &(n, ns) in *groups {
                reads.add(&hist(n, ns));
            }
            DwellHists {
                reads,
                ..DwellHists::default()
            }
        })
        .collect();
    let figs = vec![with_p99(fig(1.0, 1.0), load_p99); dwells.len()];
    SchedulerSummary::new(name, figs).with_kernel(&hists)
}

#[test]
fn p99_ranks_by_the_kernels_pooled_histograms() {
    // a: one clean round and one with 20 slow reads in 1000: each round's
    // own p99 is ~1 and ~50 ms (their mean ~25 ms), but 20 of 2000 is
    // 1 %: the pooled p99 is ~1 ms. b: 2 ms throughout. The load's own
    // p99 says b; the kernel's pooled histograms say a.
    let a = traced(
        "a",
        9.0,
        &[&[(1000, 1_000_000)], &[(980, 1_000_000), (20, 50_000_000)]],
    );
    let b = traced("b", 3.0, &[&[(1000, 2_000_000)], &[(1000, 2_000_000)]]);
    // c did almost no reads: no p99, not ranked, said so.
    let c = traced("c", 0.5, &[&[(30, 100_000)], &[(20, 100_000)]]);
    let v = verdict(Goal::P99, &[a.clone(), b.clone(), c]).unwrap();
    assert_eq!(v.metric, Metric::KRP99);
    assert_eq!(v.winner, "a", "{v:?}");
    assert!((v.winner_value - 1.0).abs() < 0.05, "{v:?}");
    assert_eq!((v.winner_n, v.runner_up_n), (Some(2000), Some(2000)));
    assert_eq!(v.runner_up.as_deref(), Some("b"));
    assert!(
        v.notes
            .contains(&"c: 50 reads, too few for a p99 (needs 100): not ranked".to_string()),
        "{:?}",
        v.notes
    );
    // a's spread is its rounds' own p99s: far apart, so the win is noise.
    let sp = a.get(Metric::KRP99).unwrap();
    assert_eq!(sp.rounds, 2);
    assert!(sp.min < 1.1 && sp.max > 45.0, "{sp:?}");
    assert!(v.noisy);
    // The same figures without the kernel: the load's p99 decides.
    let untraced: Vec<SchedulerSummary> = [a, b]
        .into_iter()
        .map(|s| SchedulerSummary::new(&s.scheduler, s.rounds))
        .collect();
    let v = verdict(Goal::P99, &untraced).unwrap();
    assert_eq!((v.metric, v.winner.as_str()), (Metric::P99, "b"));
    assert_eq!(v.winner_n, None);
}

#[test]
fn too_few_ios_everywhere_is_no_winner() {
    let a = traced("a", 1.0, &[&[(99, 1_000_000)]]);
    let b = traced("b", 2.0, &[&[(10, 1_000_000)]]);
    assert!(verdict(Goal::P99, &[a.clone(), b.clone()]).is_none());
    assert_eq!(
        too_few_notes(Metric::KRP99, &[a, b]),
        [
            "a: 99 reads, too few for a p99 (needs 100): not ranked",
            "b: 10 reads, too few for a p99 (needs 100): not ranked"
        ]
    );
}

#[test]
fn write_p99_ranks_by_the_kernels_writes() {
    use super::super::kernel::tests::hist;
    let w = |name: &str, ns: u64| {
        SchedulerSummary::new(name, vec![fig(1.0, 1.0)]).with_kernel(&[DwellHists {
            writes: hist(500, ns),
            ..DwellHists::default()
        }])
    };
    let v = verdict(Goal::WriteP99, &[w("a", 8_000_000), w("b", 4_000_000)]).unwrap();
    assert_eq!((v.metric, v.winner.as_str()), (Metric::KWP99, "b"));
    assert_eq!(Goal::WriteP99.fallback(), Some(Metric::WP99));
    assert_eq!("write-p99".parse::<Goal>(), Ok(Goal::WriteP99));
}

#[test]
fn nothing_measured_is_called_out() {
    let a = SchedulerSummary::new("a", vec![Figures::default(); 2]);
    let b = SchedulerSummary::new("b", vec![Figures::default(); 2]);
    let v = verdict(Goal::WriteLatency, &[a, b]).unwrap();
    assert!(v.noisy);
    assert!(v.notes[0].contains("no w_await"), "{:?}", v.notes);
}

#[test]
fn goal_names_round_trip() {
    for g in Goal::ALL {
        assert_eq!(g.label().parse::<Goal>(), Ok(g));
    }
    assert!("fast".parse::<Goal>().is_err());
}
