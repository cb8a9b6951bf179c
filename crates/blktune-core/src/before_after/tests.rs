use super::*;
use crate::compare::design::block_order;

/// An interval of 1 s ending at `t` with these reads and writes a second
/// and awaits (ms); aqu-sz from Little's law.
fn pt(t: f64, r_s: f64, r_await: f64, w_s: f64, w_await: f64) -> Point {
    Point {
        t,
        itv: 1.0,
        stats: Some(ExtStats {
            r_s,
            w_s,
            rkb_s: r_s * 4.0,
            wkb_s: w_s * 1024.0,
            r_await,
            w_await,
            aqu_sz: (r_s * r_await + w_s * w_await) / 1000.0,
            util: 90.0,
            ..ExtStats::default()
        }),
    }
}

/// `n` intervals from `t0`, each wobbling by `wobble` (a fraction) around
/// the given rates and awaits.
fn window(t0: f64, n: usize, r_s: f64, r_await: f64, wobble: f64) -> Vec<Point> {
    (0..n)
        .map(|i| {
            let w = 1.0 + wobble * if i % 2 == 0 { 1.0 } else { -1.0 };
            pt(t0 + i as f64 + 1.0, r_s * w, r_await / w, 100.0, 2.0)
        })
        .collect()
}

/// vda's intervals under loop0 with this await.
fn vda(t0: f64, n: usize, await_ms: f64) -> Vec<Point> {
    (0..n)
        .map(|i| {
            let w = 1.0 + 0.1 * if i % 2 == 0 { 1.0 } else { -1.0 };
            pt(t0 + i as f64 + 1.0, 50.0, await_ms * w, 50.0, await_ms * w)
        })
        .collect()
}

fn steady_system(n: usize) -> Vec<SystemPoint> {
    vec![
        SystemPoint {
            cpu_busy_pct: Some(40.0),
            iowait_pct: Some(1.0),
            psi_some_pct: Some(20.0),
        };
        n
    ]
}

#[test]
fn one_pair_has_rates_with_the_windows_interval_and_stays_undecided() {
    // Reads 4000/s -> 3000/s, each window's intervals within ±2 %.
    let b = WindowFigures::of_device(&window(0.0, 10, 4000.0, 1.0, 0.02)).unwrap();
    let a = WindowFigures::of_device(&window(10.0, 10, 3000.0, 1.33, 0.02)).unwrap();
    let ba = one_pair(&b, &a, "loop0");
    assert_eq!(ba.basis, Basis::OnePair);
    let rs = ba.row(Metric::RS).unwrap();
    assert!((rs.change + 0.25).abs() < 1e-9, "{rs:?}");
    let (lo, hi) = (rs.lo.unwrap(), rs.hi.unwrap());
    assert!(lo < -0.25 && hi > -0.25 && hi - lo < 0.05, "{lo} {hi}");
    assert_eq!(rs.number(), "-25% (-26..-23)");
    // Never a call from one pair, however narrow its interval.
    assert!(ba.rows.iter().all(|r| r.answer == Answer::Undecided));
    assert!(ba.call().starts_with("one before, one after: undecided"));
    // The rates come first, then each direction's latencies.
    let order: Vec<Metric> = ba.rows.iter().map(|r| r.metric).collect();
    assert_eq!(
        order,
        [
            Metric::RS,
            Metric::WS,
            Metric::MbS,
            Metric::RAwait,
            Metric::WAwait
        ]
    );
    // The awaits rest on their I/Os, counted.
    assert_eq!(
        ba.row(Metric::RAwait).unwrap().ios,
        Some((40000, 30000)),
        "{:?}",
        ba.row(Metric::RAwait)
    );
    // Under three intervals a side: no change stated.
    let short = WindowFigures::of_device(&window(10.0, 2, 3000.0, 1.33, 0.02)).unwrap();
    let r = one_pair(&b, &short, "loop0");
    assert_eq!(r.row(Metric::RS).unwrap().lo, None);
    assert_eq!(r.row(Metric::RS).unwrap().number(), "short");
    // A mean latency from under 100 I/Os a side: none either.
    let few = WindowFigures::of_device(&window(0.0, 10, 5.0, 1.0, 0.02)).unwrap();
    let r = one_pair(&few, &few, "loop0");
    assert_eq!(r.row(Metric::RAwait).unwrap().number(), "few");
    assert_eq!(r.row(Metric::RS).unwrap().number(), "+0.0% (-2.0..+2.0)");
}

#[test]
fn the_backing_device_slowing_tenfold_makes_the_before_after_unreliable() {
    // loop0's reads slow down 3x after the switch; vda under it went from
    // 0.4 to 4 ms at the same time.
    let (bp, ap) = (
        window(0.0, 10, 4000.0, 1.0, 0.05),
        window(10.0, 10, 1500.0, 3.0, 0.05),
    );
    let side = |pts: &[Point], under: &[Point]| {
        WindowFigures::of_device(pts)
            .unwrap()
            .with_under("vda", "under loop0", under)
            .with_system(&steady_system(pts.len()))
    };
    let b = side(&bp, &vda(0.0, 10, 0.4));
    let a = side(&ap, &vda(10.0, 10, 4.0));
    let ba = one_pair(&b, &a, "loop0");
    assert!(ba.unreliable(), "{:?}", ba.controls);
    let first = &ba.controls[0];
    assert_eq!(first.status, Status::Failed);
    assert!(
        first
            .text
            .starts_with("vda (under loop0) slowed too: await 0.40 -> 4.0 ms (before -> after"),
        "{}",
        first.text
    );
    assert!(
        ba.call()
            .starts_with("unreliable: vda (under loop0) slowed too")
    );
    // vda steady: nothing failed, and its line is there for the JSON.
    let a = side(&ap, &vda(10.0, 10, 0.42));
    let ba = one_pair(&b, &a, "loop0");
    assert!(!ba.unreliable(), "{:?}", ba.controls);
    assert!(ba.controls.iter().any(|c| {
        c.status == Status::Ok
            && c.text
                .starts_with("vda (under loop0): await 0.40 -> 0.42 ms")
            && c.text.ends_with("no change beyond its noise")
    }));
}

#[test]
fn a_load_that_went_away_is_named_not_blamed_on_the_switch() {
    // The rate and the I/Os in flight fell fourfold: a job ended.
    let mut gone = window(10.0, 10, 1000.0, 1.0, 0.02);
    for p in &mut gone {
        if let Some(s) = &mut p.stats {
            s.aqu_sz /= 4.0;
        }
    }
    let b = WindowFigures::of_device(&window(0.0, 10, 4000.0, 1.0, 0.02)).unwrap();
    let a = WindowFigures::of_device(&gone).unwrap();
    let ba = one_pair(&b, &a, "loop0");
    assert!(ba.unreliable());
    assert!(
        ba.controls[0].text.contains("the offered load changed"),
        "{:?}",
        ba.controls
    );
}

/// A/B rounds: `blocks` blocks of before (0) and after (1), counterbalanced,
/// with after's read await `effect` times before's and a drift of the
/// machine across the run.
fn ab_rounds(blocks: usize, effect: f64) -> Vec<Round> {
    let mut rounds = Vec::new();
    let mut t = 0.0;
    for block in 0..blocks {
        for c in block_order(&[0, 1], block) {
            let drift = 1.0 + 0.02 * block as f64;
            let wobble = 1.0 + 0.03 * if rounds.len() % 3 == 0 { 1.0 } else { -1.0 };
            let r_await = if c == 1 { effect } else { 1.0 } * drift * wobble;
            let pts: Vec<Point> = (0..4)
                .map(|i| pt(t + i as f64 + 1.0, 4000.0 / r_await, r_await, 100.0, 2.0))
                .collect();
            let w = WindowFigures::of_device(&pts)
                .unwrap()
                .with_system(&steady_system(4));
            rounds.push(w.round(c, block, t));
            t += 6.0;
        }
    }
    rounds
}

#[test]
fn an_ab_decides_what_one_pair_cannot() {
    let ba = from_rounds(&ab_rounds(6, 2.0), "loop0");
    assert_eq!(ba.basis, Basis::Rounds { pairs: 6 });
    let r = ba.row(Metric::RAwait).unwrap();
    assert_eq!(r.answer, Answer::Worse, "{r:?}");
    assert!((r.change - 1.0).abs() < 0.05, "{r:?}");
    let rs = ba.row(Metric::RS).unwrap();
    // Fewer reads a second is worse too: a rate is better higher.
    assert_eq!(rs.answer, Answer::Worse, "{rs:?}");
    assert!(!ba.unreliable(), "{:?}", ba.controls);
    // No effect at all: never better or worse.
    let ba = from_rounds(&ab_rounds(6, 1.0), "loop0");
    let r = ba.row(Metric::RAwait).unwrap();
    assert!(
        matches!(r.answer, Answer::NoDifference | Answer::Undecided),
        "{r:?}"
    );
}

#[test]
fn the_windows_interval_follows_welch() {
    let s = |v: &[f64]| Series {
        value: v.iter().sum::<f64>() / v.len() as f64,
        per_interval: v.to_vec(),
        ios: None,
    };
    // Equal spreads, n = 4 a side: se² = 2 · var/(n m²) on the log scale,
    // var = 4/3 (values m ± 1), df = 6.
    let (b, a) = (s(&[9.0, 11.0, 9.0, 11.0]), s(&[19.0, 21.0, 19.0, 21.0]));
    let (lo, hi) = within(&b, &a, 0.05).unwrap();
    let se = (4.0_f64 / 3.0 / 4.0 / 100.0 + 4.0 / 3.0 / 4.0 / 400.0).sqrt();
    let df = {
        let (vb, va) = (4.0_f64 / 3.0 / 4.0 / 100.0, 4.0_f64 / 3.0 / 4.0 / 400.0);
        (vb + va).powi(2) / (vb * vb / 3.0 + va * va / 3.0)
    };
    let t = t_quantile(0.975, df);
    assert!((lo - ((2.0_f64).ln() - t * se).exp_m1()).abs() < 1e-12);
    assert!((hi - ((2.0_f64).ln() + t * se).exp_m1()).abs() < 1e-12);
    // Identical intervals: a zero-width interval at the change.
    let flat = s(&[5.0; 4]);
    assert_eq!(within(&flat, &flat, 0.05), Some((0.0, 0.0)));
    assert_eq!(within(&s(&[1.0, 2.0]), &flat, 0.05), None);
}
