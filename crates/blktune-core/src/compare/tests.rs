//! The engine against simulated data with known truth (see `sim.rs`), and
//! its controls and outcomes on crafted rounds.

use super::sim::{HERE, Machine, Noise};
use super::stats::{ln_gamma, t_quantile};
use super::*;

fn opts(k: usize) -> Options {
    let names = (0..k).map(|c| format!("c{c}")).collect();
    Options::new(Metric::RAwait, names, "loop0", LoadKind::ClosedLoop)
}

/// The standard normal CDF (erfc by its continued-fraction-free Chebyshev
/// fit, Numerical Recipes §6.2, relative error under 1.2e-7).
fn phi(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let erfc = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        1.0 - 0.5 * erfc
    } else {
        0.5 * erfc
    }
}

/// The chance that the 1 − alpha interval of `n` pairs lies wholly below
/// ln(1 − m) when the pairs are N(delta, sd²): the power the pair count
/// implies. The mean and the spread are independent, so it is the normal
/// chance integrated over the chi-square distribution of the spread
/// (Simpson's rule): the noncentral t's CDF, written out.
fn power(delta: f64, sd: f64, n: usize, alpha: f64, m: f64) -> f64 {
    let k = (n - 1) as f64;
    let tc = t_quantile(1.0 - alpha / 2.0, k);
    let limit = (-m).ln_1p();
    let se = sd / (n as f64).sqrt();
    let density = |x: f64| {
        if x <= 0.0 {
            return 0.0;
        }
        ((k / 2.0 - 1.0) * x.ln() - x / 2.0 - (k / 2.0) * 2f64.ln() - ln_gamma(k / 2.0)).exp()
    };
    let top = k + 12.0 * (2.0 * k).sqrt();
    let steps = 4000;
    let h = top / steps as f64;
    let f = |x: f64| {
        let s = sd * (x / k).sqrt();
        density(x) * phi((limit - tc * s / (n as f64).sqrt() - delta) / se)
    };
    let mut sum = f(0.0) + f(top);
    for i in 1..steps {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += w * f(i as f64 * h);
    }
    sum * h / 3.0
}

#[test]
fn a_true_10pct_effect_is_found_at_the_rate_the_pair_count_implies() {
    // No drift here: the power formula assumes pairs of one spread.
    let noise = Noise {
        between: 0.08,
        drift: 0.0,
    };
    let pair_sd = noise.between * 2f64.sqrt();
    let o = opts(2);
    for (n, seed) in [(12, 1), (30, 2)] {
        let runs = 1000;
        let mut found = 0;
        let mut wrong = 0;
        for i in 0..runs {
            let mut m = Machine::new(&[1.0, 0.9], noise, seed * 10_000 + i);
            let rounds = m.fixed(n);
            let e = compare_two(&rounds, 0, 1, &o, 0.05, 2).goal.unwrap();
            found += usize::from(e.answer == Answer::Better);
            wrong += usize::from(e.answer == Answer::Worse);
        }
        let expected = power(0.9f64.ln(), pair_sd, n, 0.05, 0.05);
        let rate = found as f64 / runs as f64;
        eprintln!("10% effect, {n} pairs: found in {rate:.3} of runs, implied {expected:.3}");
        let se = (expected * (1.0 - expected) / runs as f64).sqrt();
        assert!(
            (rate - expected).abs() < 4.0 * se + 0.01,
            "{n} pairs: found {rate:.3}, implied {expected:.3}"
        );
        assert_eq!(wrong, 0);
    }
}

#[test]
fn the_power_formula_matches_a_known_case() {
    // Huge n: the interval is a point at the mean; with the mean 10 % lower
    // it is always below −5 %. And an effect at 0 almost never is.
    assert!(power(0.9f64.ln(), 0.1, 2000, 0.05, 0.05) > 0.999);
    assert!(power(0.0, 0.1, 30, 0.05, 0.05) < 0.01);
}

#[test]
fn a_zero_effect_is_no_difference_or_undecided_in_at_least_95pct_of_runs() {
    let o = opts(2);
    for (n, noise) in [(6, HERE), (12, HERE), (40, HERE)] {
        let runs = 1000;
        let mut false_calls = 0;
        for i in 0..runs {
            let rounds = Machine::new(&[1.0, 1.0], noise, 7_000 + i).fixed(n);
            let e = compare_two(&rounds, 0, 1, &o, 0.05, 2).goal.unwrap();
            false_calls += usize::from(matches!(e.answer, Answer::Better | Answer::Worse));
        }
        eprintln!("zero effect, {n} pairs: {false_calls} of {runs} called better or worse");
        assert!(
            false_calls * 20 <= runs as usize,
            "{n} pairs: {false_calls} of {runs} called better or worse"
        );
    }
}

/// With the pairs an equivalence needs at the noise, a zero effect is
/// called "no difference" (not merely "not better or worse") in at least
/// 95 % of runs. The 95 % interval must lie within ±5 %: its half-width plus
/// the mean's own error under ln(1.05), i.e. a standard error of the mean
/// under 0.0488 / (1.96 + 1.96) = 0.0124: (0.212 / 0.0124)² ≈ 290 pairs at
/// the noise seen here (a pair's log ratio varies by 0.15·√2), 33 at a
/// third of it.
#[test]
fn a_zero_effect_is_called_no_difference_in_95pct_of_runs_given_the_pairs_it_needs() {
    let o = opts(2);
    let quiet = Noise {
        between: 0.05,
        drift: 0.0,
    };
    for (noise, n, runs) in [(HERE, 320, 200), (quiet, 40, 1000)] {
        let mut equivalent = 0;
        for i in 0..runs {
            let rounds = Machine::new(&[1.0, 1.0], noise, 60_000 + i).fixed(n);
            let e = compare_two(&rounds, 0, 1, &o, 0.05, 2).goal.unwrap();
            assert!(
                !matches!(e.answer, Answer::Better | Answer::Worse),
                "{noise:?}, {n} pairs: {e:?}"
            );
            equivalent += usize::from(e.answer == Answer::NoDifference);
        }
        eprintln!("zero effect, {noise:?}, {n} pairs: no difference in {equivalent} of {runs}");
        assert!(
            equivalent * 100 >= runs as usize * 95,
            "{noise:?}, {n} pairs: no difference in {equivalent} of {runs}"
        );
    }
}

#[test]
fn the_95pct_interval_covers_the_truth_about_95pct_of_the_time() {
    let o = opts(2);
    for (noise, seed, at_least) in [
        (
            Noise {
                between: 0.15,
                drift: 0.0,
            },
            1,
            0.93,
        ),
        // A steady drift: A B | B A cancels it in the mean and widens the
        // interval, so it covers at least as often.
        (HERE, 2, 0.93),
    ] {
        let runs = 2000;
        let truth = 0.8f64;
        let mut covered = 0;
        for i in 0..runs {
            let rounds = Machine::new(&[1.0, truth], noise, seed * 100_000 + i).fixed(10);
            let e = compare_two(&rounds, 0, 1, &o, 0.05, 2).goal.unwrap();
            let (lo, hi) = (e.lo.unwrap(), e.hi.unwrap());
            covered += usize::from(lo <= truth - 1.0 && truth - 1.0 <= hi);
        }
        let rate = covered as f64 / runs as f64;
        eprintln!("coverage, {noise:?}: {rate:.3}");
        assert!(
            rate >= at_least && rate <= 0.975,
            "{noise:?}: covered {rate:.3}"
        );
    }
}

#[test]
fn a_drifting_configuration_is_named_and_a_steady_one_is_not() {
    let noise = Noise {
        between: 0.1,
        drift: 0.0,
    };
    let runs = 300;
    let (mut named, mut falsely) = (0, 0);
    for i in 0..runs {
        let mut m = Machine::new(&[1.0, 1.0], noise, 40_000 + i);
        // c1's own rounds rise 3 % a round: about +60 % over 12 blocks.
        m.own_drift = Some((1, 0.03));
        let rounds = m.fixed(12);
        let a = analyse(&rounds, 2, &opts(2), 0.05, (1, 1));
        named += usize::from(a.drift.iter().any(|d| d.config == 1 && d.change > 0.3));
        falsely += usize::from(a.drift.iter().any(|d| d.config == 0));
    }
    eprintln!("drift named in {named} of {runs}, a steady one in {falsely}");
    assert!(named * 10 >= runs as usize * 9, "named {named} of {runs}");
    assert!(
        falsely * 50 <= runs as usize,
        "a steady one named {falsely} of {runs}"
    );
    let d = Drift {
        config: 1,
        metric: Metric::RAwait,
        change: 0.6,
        rounds: 12,
        p: 0.0004,
    };
    assert_eq!(
        d.text("kyber"),
        "kyber: r_await +60% over its 12 rounds (a steady trend, p=0.000)"
    );
}

/// Run the sequential procedure on a simulated machine to its end.
fn run_sequence(m: &mut Machine, plan: Plan) -> Analysis {
    let k = m.truth.len();
    let mut seq = Sequence::new(k, opts(k), plan);
    let mut rounds = Vec::new();
    let mut block = 0;
    while let Some(order) = seq.next_block() {
        if rounds.len() + order.len() > plan.max_rounds {
            break;
        }
        for c in order {
            m.measure(&mut rounds, c, block);
        }
        block += 1;
        seq.block_done(&rounds);
    }
    seq.finish(&rounds)
}

fn adaptive(max_rounds: usize) -> Plan {
    Plan {
        max_rounds,
        looks: DEFAULT_LOOKS,
        min_blocks: DEFAULT_MIN_BLOCKS,
        adaptive: true,
    }
}

#[test]
fn the_sequential_procedure_keeps_false_calls_under_5pct() {
    for (k, max_rounds, seed) in [(2, 40, 1u64), (4, 60, 2)] {
        let runs = 400;
        let mut false_winners = 0;
        let mut any_call = 0;
        for i in 0..runs {
            let mut m = Machine::new(&vec![1.0; k], HERE, seed * 1_000_000 + i);
            let a = run_sequence(&mut m, adaptive(max_rounds));
            false_winners += usize::from(matches!(a.outcome, Outcome::Winner { .. }));
            any_call += usize::from(a.comparisons.iter().any(|c| {
                c.goal
                    .as_ref()
                    .is_some_and(|e| matches!(e.answer, Answer::Better | Answer::Worse))
            }));
        }
        eprintln!(
            "sequential, {k} configurations: {false_winners} false winners, {any_call} runs with a false call, of {runs}"
        );
        assert!(
            false_winners * 20 <= runs as usize,
            "{k}: {false_winners} false winners in {runs}"
        );
        assert!(
            any_call * 20 <= runs as usize,
            "{k}: {any_call} false calls in {runs}"
        );
    }
}

/// What the corrections are for: looking after every block at a plain 95 %
/// and stopping at the first interval that leaves out "no change" calls a
/// zero effect far more often than 5 % (this is the procedure the engine
/// does not use).
#[test]
fn looking_after_every_block_without_spending_inflates_false_calls() {
    let runs = 400;
    let mut naive = 0;
    for i in 0..runs {
        let mut m = Machine::new(&[1.0, 1.0], HERE, 90_000 + i);
        let mut rounds = Vec::new();
        for b in 0..20 {
            for c in design::block_order(&[0, 1], b) {
                m.measure(&mut rounds, c, b);
            }
            if b >= 2 {
                let (logs, _) = design::pairs_of(&rounds, 0, 1, |r| {
                    r.values.get(&Metric::RAwait).map(|s| (s.value, None))
                });
                let iv = stats::Interval::of(&logs, 0.05).unwrap();
                if iv.lo > 0.0 || iv.hi < 0.0 {
                    naive += 1;
                    break;
                }
            }
        }
    }
    eprintln!("naive looks: {naive} of {runs} called a zero effect");
    assert!(naive * 100 >= runs as usize * 15, "{naive} of {runs}");
}

#[test]
fn the_sequential_procedure_finds_a_clear_winner_and_never_a_wrong_one() {
    let runs = 200;
    let mut right = 0;
    for i in 0..runs {
        // c2 is 35 % faster than the three others.
        let mut m = Machine::new(&[1.0, 1.0, 0.65, 1.0], HERE, 500_000 + i);
        let a = run_sequence(&mut m, adaptive(60));
        match &a.outcome {
            Outcome::Winner { leader, .. } => {
                assert_eq!(*leader, 2, "{:?}", a.outcome);
                right += 1;
            }
            Outcome::NoDifference => panic!("no difference for a 35% effect"),
            _ => {}
        }
    }
    eprintln!("a 35% winner found in {right} of {runs}");
    assert!(right * 10 >= runs as usize * 8, "found {right} of {runs}");
}

#[test]
fn a_decided_sequence_stops_early_and_measures_only_the_open_ones() {
    // c1 is 60 % faster than c0; c2 is the same as c1.
    let mut m = Machine::new(
        &[1.0, 0.4, 0.4],
        Noise {
            between: 0.05,
            drift: 0.0,
        },
        3,
    );
    let mut seq = Sequence::new(3, opts(3), adaptive(300));
    let mut rounds = Vec::new();
    let mut block = 0;
    let mut orders = Vec::new();
    while let Some(order) = seq.next_block() {
        for &c in &order {
            m.measure(&mut rounds, c, block);
        }
        orders.push(order);
        block += 1;
        seq.block_done(&rounds);
        assert!(block < 200, "never stopped");
    }
    let a = seq.last().unwrap().clone();
    // The first look comes at 75 rounds (300 / 4): c0 is decided worse by
    // then, so the next blocks hold only c1 and c2.
    assert!(
        orders.iter().skip(25).all(|o| !o.contains(&0)),
        "{orders:?}"
    );
    assert!(
        rounds.len() < 300,
        "stopped before the budget: {}",
        rounds.len()
    );
    assert!(
        a.outcome.decided() || seq.looks() == DEFAULT_LOOKS,
        "{:?}",
        a.outcome
    );
}

/// Rounds of two configurations, A B | B A, with the given per-round
/// figures and controls.
fn crafted(n: usize, mut each: impl FnMut(usize, usize, &mut Round)) -> Vec<Round> {
    let mut rounds = Vec::new();
    for b in 0..n {
        for c in design::block_order(&[0, 1], b) {
            let mut r = Round::new(c, b, rounds.len() as f64);
            each(c, b, &mut r);
            rounds.push(r);
        }
    }
    rounds
}

fn load(iops: f64, aqu: f64) -> LoadSample {
    LoadSample {
        iops,
        mb_s: iops * 0.004,
        read_share: 0.7,
        req_kb: 4.0,
        aqu_sz: aqu,
    }
}

fn wobble(b: usize) -> f64 {
    1.0 + 0.02 * if b.is_multiple_of(2) { 1.0 } else { -1.0 }
}

#[test]
fn a_device_underneath_that_slowed_as_much_makes_the_verdict_unreliable() {
    let under = |await_ms: f64| UnderSample {
        name: "vda".into(),
        relation: "under loop0".into(),
        await_ms,
        await_sd: None,
        util: 50.0,
        iops: 100.0,
    };
    // loop0's r_await: 1.0 under c0, 2.6 under c1 (+160 %); vda's await
    // 0.4 -> 540 ms at the same time. The leader is c0: the comparison goes
    // from c1 to it, and vda sped up as much.
    let rounds = crafted(6, |c, b, r| {
        let w = wobble(b);
        r.values.insert(
            Metric::RAwait,
            Sample::of(if c == 0 { 1.0 } else { 2.6 } * w),
        );
        r.controls.load = Some(load(1000.0 * w, 4.0));
        r.controls.under = vec![under(if c == 0 { 0.4 } else { 540.0 } * w)];
    });
    let a = analyse(&rounds, 2, &opts(2), 0.05, (1, 1));
    let Outcome::Unreliable { why } = &a.outcome else {
        panic!("{:?}", a.outcome)
    };
    assert!(
        why.iter().any(|w| w.starts_with(
            "vda (under loop0) sped up too: await 540 -> 0.40 ms (c1 -> c0, -99.9% ("
        ) && w.ends_with("the switch is not the only change")),
        "{why:?}"
    );
    // vda steady: reliable, and said so.
    let rounds = crafted(6, |c, b, r| {
        let w = wobble(b);
        r.values.insert(
            Metric::RAwait,
            Sample::of(if c == 0 { 1.0 } else { 2.6 } * w),
        );
        r.controls.under = vec![under(0.4 * w)];
    });
    let a = analyse(&rounds, 2, &opts(2), 0.05, (1, 1));
    assert_eq!(
        a.outcome,
        Outcome::Winner {
            leader: 0,
            as_good: vec![]
        }
    );
    assert!(a.all_controls().iter().any(|c| {
        c.status == Status::Ok
            && c.text
                .starts_with("vda (under loop0): await 0.40 -> 0.40 ms (c1 -> c0)")
            && c.text.ends_with("no change beyond its noise")
    }));
}

#[test]
fn one_before_and_one_after_is_undecided_and_still_names_the_device_underneath() {
    let mut before = Round::new(0, 0, 0.0);
    before.values.insert(Metric::WAwait, Sample::of(0.9));
    before.controls.under = vec![UnderSample {
        name: "vda".into(),
        relation: "under loop0".into(),
        await_ms: 0.4,
        await_sd: Some(0.1),
        util: 20.0,
        iops: 300.0,
    }];
    let mut after = Round::new(1, 0, 10.0);
    after.values.insert(Metric::WAwait, Sample::of(30.0));
    after.controls.under = vec![UnderSample {
        await_ms: 540.0,
        await_sd: Some(200.0),
        util: 100.8,
        ..before.controls.under[0].clone()
    }];
    let o = Options {
        metric: Metric::WAwait,
        names: vec!["mq-deadline".into(), "kyber".into()],
        ..opts(2)
    };
    let c = compare_two(&[before, after], 0, 1, &o, 0.05, 2);
    let e = c.goal.as_ref().unwrap();
    assert_eq!(e.answer, Answer::Undecided);
    assert_eq!(e.number(), "+3233% (one pair, no interval)");
    assert!(c.unreliable());
    assert!(
        c.controls.iter().any(|k| k.text
            == "vda (under loop0) slowed too: await 0.40 -> 540 ms (mq-deadline -> kyber, +134900%); the switch is not the only change"),
        "{:?}",
        c.controls
    );
}

#[test]
fn a_closed_loops_rate_is_part_of_the_effect_and_an_open_change_is_not() {
    // Latency doubles; the rate halves with as many I/Os in flight.
    let closed = |c: usize, b: usize, r: &mut Round| {
        let w = wobble(b);
        r.values.insert(
            Metric::RAwait,
            Sample::of(if c == 0 { 1.0 } else { 2.0 } * w),
        );
        r.controls.load = Some(load(if c == 0 { 4000.0 } else { 2000.0 } * w, 4.0));
    };
    let rounds = crafted(6, closed);
    for kind in [LoadKind::ClosedLoop, LoadKind::Unknown] {
        let o = Options {
            load: kind,
            ..opts(2)
        };
        let c = compare_two(&rounds, 0, 1, &o, 0.05, 2);
        assert!(!c.unreliable(), "{kind:?}: {:?}", c.controls);
        assert!(
            c.controls
                .iter()
                .any(|k| k.status == Status::Note && k.text.contains("IOPS -50%")),
            "{:?}",
            c.controls
        );
    }
    // Passive, and the I/Os in flight changed with the rate: another load.
    let rounds = crafted(6, |c, b, r| {
        closed(c, b, r);
        r.controls.load = Some(load(
            if c == 0 { 4000.0 } else { 2000.0 } * wobble(b),
            if c == 0 { 4.0 } else { 1.0 },
        ));
    });
    let o = Options {
        load: LoadKind::Unknown,
        ..opts(2)
    };
    let c = compare_two(&rounds, 0, 1, &o, 0.05, 2);
    assert!(c.unreliable(), "{:?}", c.controls);
    assert!(
        c.controls
            .iter()
            .any(|k| k.text.contains("the offered load changed"))
    );
}

#[test]
fn idle_spells_and_a_saturated_cpu_fail_their_controls() {
    let rounds = crafted(6, |c, b, r| {
        r.values.insert(
            Metric::RAwait,
            Sample::of(if c == 0 { 1.0 } else { 0.5 } * wobble(b)),
        );
        r.controls.load = Some(load(if b == 3 && c == 1 { 0.5 } else { 1000.0 }, 4.0));
    });
    let c = compare_two(&rounds, 0, 1, &opts(2), 0.05, 2);
    assert!(
        c.controls.iter().any(|k| k.status == Status::Failed
            && k.text.starts_with("idle spells: 1 of 12 rounds (c1)")),
        "{:?}",
        c.controls
    );
    let rounds = crafted(6, |c, b, r| {
        r.values.insert(
            Metric::RAwait,
            Sample::of(if c == 0 { 1.0 } else { 0.5 } * wobble(b)),
        );
        r.controls.system = Some(SystemSample {
            cpu_busy_pct: if c == 0 {
                97.0 + wobble(b)
            } else {
                40.0 + wobble(b)
            },
            iowait_pct: 1.0,
            psi_some_pct: Some(10.0),
            psi_full_pct: None,
        });
    });
    let c = compare_two(&rounds, 0, 1, &opts(2), 0.05, 2);
    assert!(
        c.controls.iter().any(|k| k.status == Status::Failed
            && k.text
                .starts_with("system: the CPU was saturated under c0 and not under c1")),
        "{:?}",
        c.controls
    );
}

#[test]
fn the_outcome_names_the_winner_and_those_as_good() {
    // c0 1.0, c1 0.7, c2 0.7 (as good as c1), tight.
    let mut m = Machine::new(
        &[1.0, 0.7, 0.7],
        Noise {
            between: 0.005,
            drift: 0.0,
        },
        9,
    );
    let rounds = m.fixed(8);
    let a = analyse(&rounds, 3, &opts(3), 0.05, (1, 1));
    match a.outcome {
        Outcome::Winner {
            leader,
            ref as_good,
        } => {
            assert!(leader == 1 || leader == 2);
            assert_eq!(as_good, &vec![3 - leader]);
        }
        ref o => panic!("{o:?}"),
    }
    assert_eq!(a.comparisons_in_family, 2);
    assert!((a.confidence - 0.975).abs() < 1e-12);
    // All the same: no difference.
    let mut m = Machine::new(
        &[1.0, 1.0],
        Noise {
            between: 0.005,
            drift: 0.0,
        },
        9,
    );
    let a = analyse(&m.fixed(8), 2, &opts(2), 0.05, (1, 1));
    assert_eq!(a.outcome, Outcome::NoDifference);
    // One configuration without the figure: not ranked, nothing to compare.
    let mut m = Machine::new(
        &[1.0],
        Noise {
            between: 0.005,
            drift: 0.0,
        },
        9,
    );
    let mut rounds = m.fixed(3);
    rounds.push(Round::new(1, 0, 9.0));
    let a = analyse(&rounds, 2, &opts(2), 0.05, (1, 1));
    assert_eq!(
        (a.outcome.clone(), a.unranked.clone()),
        (Outcome::NothingToCompare, vec![1])
    );
}

#[test]
fn one_pair_controls_go_by_each_windows_own_spread() {
    let pair = |iops: (f64, f64), aqu: (f64, f64), busy: (f64, f64)| {
        let side = |c: usize, i: f64, q: f64, b: f64| {
            let mut r = Round::new(c, 0, c as f64 * 10.0);
            r.values.insert(Metric::RAwait, Sample::of(1.0 + c as f64));
            r.controls.load = Some(load(i, q));
            r.controls.system = Some(SystemSample {
                cpu_busy_pct: b,
                iowait_pct: 0.0,
                psi_some_pct: None,
                psi_full_pct: None,
            });
            r
        };
        vec![
            side(0, iops.0, aqu.0, busy.0),
            side(1, iops.1, aqu.1, busy.1),
        ]
    };
    let spread = Spread {
        iops: 200.0,
        aqu_sz: 0.5,
        cpu_busy: 5.0,
    };
    let check = |rounds: &[Round], kind| {
        check_one_pair(
            rounds,
            ((0, "before"), spread),
            ((1, "after"), spread),
            "loop0",
            kind,
            Some(1.0),
        )
    };
    let failed = |c: &[ControlCheck]| c.iter().any(|k| k.status == Status::Failed);
    // A job finished: the rate and the I/Os in flight both fell fourfold.
    let gone = pair((4000.0, 1000.0), (8.0, 2.0), (40.0, 40.0));
    let c = check(&gone, LoadKind::Unknown);
    assert!(
        c.iter().any(|k| k.status == Status::Failed
            && k.text
                .starts_with("load: IOPS -75% under after against before")
            && k.text.contains("the offered load changed")),
        "{c:?}"
    );
    // A closed loop: the same fall of the rate is part of the effect.
    assert!(!failed(&check(&gone, LoadKind::ClosedLoop)));
    // As many in flight: what a closed loop does (a note).
    let c = check(
        &pair((4000.0, 1000.0), (8.0, 8.0), (40.0, 40.0)),
        LoadKind::Unknown,
    );
    assert!(!failed(&c), "{c:?}");
    assert!(
        c.iter()
            .any(|k| k.status == Status::Note && k.text.contains("IOPS -75%"))
    );
    // Inside the windows' own spread: steady, whatever its size.
    let wide = Spread {
        iops: 5000.0,
        ..spread
    };
    let c = check_one_pair(
        &gone,
        ((0, "before"), wide),
        ((1, "after"), wide),
        "loop0",
        LoadKind::Unknown,
        None,
    );
    assert!(
        c.iter()
            .any(|k| k.status == Status::Ok && k.text.starts_with("load: IOPS steady")),
        "{c:?}"
    );
    // The CPU saturated after the switch only: failed; on both sides: a note.
    let c = check(
        &pair((4000.0, 4000.0), (8.0, 8.0), (50.0, 97.0)),
        LoadKind::Unknown,
    );
    assert!(
        c.iter().any(|k| k.status == Status::Failed
            && k.text
                .starts_with("system: the CPU was saturated under after and not under before")),
        "{c:?}"
    );
    let c = check(
        &pair((4000.0, 4000.0), (8.0, 8.0), (95.0, 97.0)),
        LoadKind::Unknown,
    );
    assert!(!failed(&c), "{c:?}");
    assert!(
        c.iter()
            .any(|k| k.status == Status::Note && k.text.contains("saturated"))
    );
}
