//! The "measured" text of a rule's header ([`super::ExportItem::measured`]):
//! what was measured when the settings were chosen, honestly.
//!
//! - A p99 is cited with the number of I/Os it rests on, and only from at
//!   least [`MIN_IOS_FOR_P99`] of them (below that, the count alone).
//! - A percent change is written only when it is more than noise: never
//!   from a window of fewer than [`MIN_INTERVALS`] intervals, below the
//!   [`NOISE_FLOOR_PCT`] floor or inside the windows' own spread
//!   ([`history::delta`]); for a shoot-out, only a winner the comparison
//!   engine decided, with its interval.

use crate::history::{self, Comparison, Delta, Figure, MIN_INTERVALS, NOISE_FLOOR_PCT};
use crate::latency::{Dir, MIN_IOS_FOR_P99, Percentiles, Span, Summary};
use crate::shootout::{IoLatency, ShootoutResult};

/// `1.234 ms (n=4000)`, or `n=42` when too few for a p99.
fn p99_cell(n: u64, p99: Option<f64>) -> String {
    match p99 {
        Some(ms) if n >= MIN_IOS_FOR_P99 => format!("{ms:.3} ms (n={n})"),
        _ => format!("n={n}, too few for a p99"),
    }
}

/// The header text of a shoot-out's winner: what ran and how long, the
/// verdict as the engine decided it (the winner's effect with its interval),
/// and the kernel's read and write p99 of the winner and the runner-up
/// where they were measured. `None` without a decided winner.
pub fn shootout(r: &ShootoutResult) -> Option<String> {
    let v = &r.verdict;
    let winner = v.winner.as_ref()?;
    let what = r
        .load
        .as_ref()
        .map_or("passive".to_string(), |l| l.describe());
    let lines_of = |n: usize| if n == 1 { "" } else { "s" };
    let mut lines = vec![
        format!(
            "blktune bench ({what}) on {}, {} interleaved round{} of {} in {} block{}",
            r.device,
            r.rounds,
            lines_of(r.rounds),
            crate::units::format_duration(std::time::Duration::from_secs_f64(r.dwell_s)),
            r.blocks,
            lines_of(r.blocks)
        ),
        v.headline.clone(),
    ];
    // The kernel's tail of the device's own I/O, where it was traced.
    for name in std::iter::once(winner).chain(v.runner_up.as_ref()) {
        let Some(s) = r.configurations.iter().find(|s| &s.configuration == name) else {
            continue;
        };
        let Some(k) = s.kernel else {
            continue;
        };
        let cell = |l: Option<&IoLatency>| l.map_or("n=0".to_string(), |l| p99_cell(l.n, l.p99));
        lines.push(format!(
            "{name}: the kernel's read p99 {}, write p99 {} (pooled over its {} round{})",
            cell(k.get(Span::Total, Dir::Read)),
            cell(k.get(Span::Total, Dir::Write)),
            s.rounds.len(),
            lines_of(s.rounds.len())
        ));
    }
    Some(lines.join("\n"))
}

/// A figure's change as header text: the percent only when it is more
/// than noise.
fn change(d: Delta) -> &'static str {
    match d {
        Delta::Pct(_) => "",
        Delta::Noise(_) => " (inside the noise)",
        Delta::TooShort => " (too few intervals to compare)",
        Delta::FewIos => " (too few I/Os to compare)",
        Delta::NoBase => "",
    }
}

/// The kernel's read or write p99 before and after a change, with the
/// counts; a percent only from enough intervals, enough I/Os on both
/// sides, and above the noise floor (the percentile's own spread across
/// intervals is not known here, so the floor is all that can be checked).
fn p99_change(
    what: &str,
    before: Option<&Percentiles>,
    after: Option<&Percentiles>,
    intervals: bool,
) -> Option<String> {
    let (b, a) = (before?, after?);
    let (bn, an) = (b.n, a.n);
    let text = |p: &Percentiles| match p.p99_if_enough() {
        Some(ms) => format!("{ms:.3}"),
        None => format!("n={}", p.n),
    };
    let mut s = format!("{what} p99 {}→{} ms (n={bn}→{an})", text(b), text(a));
    if let (Some(x), Some(y)) = (b.p99_if_enough(), a.p99_if_enough())
        && let Some(p) = history::pct_change(x, y)
    {
        if !intervals {
            s.push_str(" (too few intervals to compare)");
        } else if p.abs() < NOISE_FLOOR_PCT {
            s.push_str(" (inside the noise)");
        } else {
            s.push_str(&format!(" ({p:+.0}%)"));
        }
    }
    Some(s)
}

/// The header text of a change seen live: `after mq-deadline→kyber: r_await
/// 4.20→1.10 ms (-74%), ...`, with the kernel's read and write p99 of the two
/// windows when `p99` gives them (each window's histograms pooled, never its
/// intervals' percentiles averaged). `None` without both windows.
pub fn before_after(
    label: &str,
    c: &Comparison,
    p99: Option<(&Summary, &Summary)>,
) -> Option<String> {
    let (b, a) = (c.before?, c.after?);
    let f = |name: &str, fig: Figure, unit: &str| {
        let (x, _) = fig.of(&b);
        let (y, _) = fig.of(&a);
        let d = history::delta(&b, &a, fig);
        let pct = d
            .significant()
            .map_or(String::new(), |p| format!(" ({p:+.0}%)"));
        format!("{name} {x:.2}→{y:.2}{unit}{pct}{}", change(d))
    };
    let mut parts = vec![
        f("r_await", Figure::RAwait, " ms"),
        f("w_await", Figure::WAwait, " ms"),
        f("r/s", Figure::RS, ""),
        f("%util", Figure::Util, ""),
    ];
    if let Some((sb, sa)) = p99 {
        let enough = b.intervals >= MIN_INTERVALS && a.intervals >= MIN_INTERVALS;
        for (what, dir) in [("read", Dir::Read), ("write", Dir::Write)] {
            parts.extend(p99_change(
                what,
                sb.get(Span::Total, dir),
                sa.get(Span::Total, dir),
                enough,
            ));
        }
    }
    Some(format!(
        "after {label}: {} (over {:.0}s before, {:.0}s after)",
        parts.join(", "),
        b.secs,
        a.secs
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Means;
    use crate::latency::Hist;

    fn means(intervals: usize, r_await: f64, spread: f64) -> Means {
        Means {
            secs: intervals as f64,
            intervals,
            r_await,
            w_await: 5.0,
            util: 50.0,
            r_s: 100.0,
            w_s: 10.0,
            aqu_sz: 1.0,
            spread: history::Spread {
                r_await: spread,
                ..history::Spread::default()
            },
        }
    }

    fn reads(n: u64, ns: u64) -> Summary {
        let mut h = Hist::empty();
        for _ in 0..n {
            h.record(ns);
        }
        Summary::of([(Span::Total, Dir::Read, &h)])
    }

    /// A shoot-out of none (3 ms reads) against kyber (1 ms), `rounds`
    /// rounds each, every other round of both `wobble` ms slower; kernel-traced.
    fn shootout_of(rounds: usize, wobble: f64, kernel_reads: u64) -> ShootoutResult {
        use crate::shootout::{DwellHists, Figures, Goal, fake_result};
        let runs = |ms: f64| {
            (0..rounds)
                .map(|i| {
                    let ms = ms + wobble * (i % 2) as f64;
                    let mut h = Hist::empty();
                    for _ in 0..kernel_reads {
                        h.record((ms * 1e6) as u64);
                    }
                    let f = Figures {
                        r_s: 100.0,
                        r_await: ms,
                        ..Figures::default()
                    };
                    let d = DwellHists {
                        reads: h,
                        ..DwellHists::default()
                    };
                    (f, Some(d))
                })
                .collect()
        };
        fake_result(
            "loop3",
            Goal::ReadLatency,
            &[("none", runs(3.0)), ("kyber", runs(1.0))],
        )
    }

    #[test]
    fn a_shoot_out_cites_the_engines_verdict_and_p99_with_counts() {
        let t = shootout(&shootout_of(4, 0.1, 5000)).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "blktune bench (passive) on loop3, 8 interleaved rounds of 3s in 4 blocks"
        );
        assert!(
            lines[1].starts_with("winner for read-latency (r_await): kyber, -6"),
            "{t}"
        );
        assert!(lines[1].contains(" against none, the closest other"), "{t}");
        assert!(
            lines[2].starts_with("kyber: the kernel's read p99 1.")
                && lines[2].contains("ms (n=20000), write p99 n=0 (pooled over its 4 rounds)"),
            "{t}"
        );
        assert!(
            lines[3].starts_with("none: the kernel's read p99 3."),
            "{t}"
        );
        // Rounds too far apart to decide: no winner, no header.
        assert_eq!(shootout(&shootout_of(2, 2.5, 5000)), None);
        // One round each: no interval, no winner.
        assert_eq!(shootout(&shootout_of(1, 0.0, 5000)), None);
        // Few I/Os (20 a round): the count, no p99.
        let t = shootout(&shootout_of(4, 0.1, 20)).unwrap();
        assert!(t.contains("read p99 n=80, too few for a p99"), "{t}");
    }

    #[test]
    fn no_percent_from_short_windows_or_inside_the_noise() {
        let c = |b: Means, a: Means| Comparison {
            before: Some(b),
            after: Some(a),
        };
        // 3 intervals each, a big steady drop: a percent.
        let t = before_after("x", &c(means(3, 4.0, 0.1), means(3, 1.0, 0.1)), None).unwrap();
        assert!(t.contains("r_await 4.00→1.00 ms (-75%)"), "{t}");
        // 2 intervals: no percent at all.
        let t = before_after("x", &c(means(2, 4.0, 0.1), means(3, 1.0, 0.1)), None).unwrap();
        assert!(
            t.contains("r_await 4.00→1.00 ms (too few intervals to compare)"),
            "{t}"
        );
        assert!(!t.contains("-75%"), "{t}");
        // The move is smaller than the intervals' own spread: noise, no number.
        let t = before_after("x", &c(means(5, 4.0, 3.5), means(5, 1.0, 0.1)), None).unwrap();
        assert!(t.contains("r_await 4.00→1.00 ms (inside the noise)"), "{t}");
        assert!(!t.contains("-75%"), "{t}");
        // A steady move, but of the mean of eight reads a side: no percent.
        let few = |r_await| Means {
            r_s: 0.7,
            ..means(12, r_await, 0.1)
        };
        let t = before_after("x", &c(few(1.99), few(2.78)), None).unwrap();
        assert!(
            t.contains("r_await 1.99→2.78 ms (too few I/Os to compare)"),
            "{t}"
        );
        assert!(!t.contains("+40%"), "{t}");
    }

    #[test]
    fn p99_is_cited_with_its_counts_and_only_above_100_ios() {
        let c = Comparison {
            before: Some(means(5, 4.0, 0.1)),
            after: Some(means(5, 1.0, 0.1)),
        };
        let (b, a) = (reads(4000, 12_000_000), reads(4100, 1_200_000));
        let t = before_after("mq-deadline→kyber", &c, Some((&b, &a))).unwrap();
        assert!(t.contains("read p99 "), "{t}");
        assert!(t.contains("(n=4000→4100) (-90%)"), "{t}");
        // No writes on either side: no write p99 at all.
        assert!(!t.contains("write p99"), "{t}");
        // 42 reads after: the count, no p99 and no percent.
        let few = reads(42, 1_200_000);
        let t = before_after("x", &c, Some((&b, &few))).unwrap();
        assert!(t.contains("→n=42 ms (n=4000→42)"), "{t}");
        assert!(!t.contains("-90%"), "{t}");
        // A 3 % move of the p99 is inside the floor.
        let close = reads(4000, 12_400_000);
        let t = before_after("x", &c, Some((&b, &close))).unwrap();
        assert!(t.contains("(n=4000→4000) (inside the noise)"), "{t}");
        // Short windows: no p99 percent either.
        let short = Comparison {
            before: Some(means(2, 4.0, 0.1)),
            after: Some(means(5, 1.0, 0.1)),
        };
        let t = before_after("x", &short, Some((&b, &a))).unwrap();
        assert!(
            t.contains("(n=4000→4100) (too few intervals to compare)"),
            "{t}"
        );
    }
}
