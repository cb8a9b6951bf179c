//! The effect of one configuration against another on one figure, from
//! paired rounds, and the four answers it can give.
//!
//! Each pair is one block of rounds holding both configurations; its value
//! is `ln(B / A)`. Latencies and rates are multiplicative, so their logs make
//! "−50 %" and "+100 %" symmetric and the pairs' differences close to normal
//! (Kalibera and Jones, "Rigorous Benchmarking in Reasonable Time", ISMM
//! 2013, §8: intervals for ratios of means over repetitions). The interval is
//! Student's t over the pairs ([`Interval::of`]); it is taken back to a
//! ratio with `exp`, and printed as a change: `-51% (-58..-43)`.
//!
//! The call (Schuirmann's two one-sided tests, TOST, read off the interval):
//! - **better** / **worse**: the whole interval is beyond the stated minimum
//!   effect `m` (below −m, or above +m, for a figure where lower is better);
//! - **no difference**: the whole interval is within ±m (equivalence);
//! - **undecided**: anything else, with how many more rounds would likely
//!   decide it at the noise seen so far.

use super::metric::Metric;
use super::stats::{Interval, median, t_quantile};
use serde::{Deserialize, Serialize};

/// One round's value of a figure, and how many I/Os it rests on when it is
/// a percentile of that round's histogram.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub value: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ios: Option<u64>,
}

impl Sample {
    /// A value with no I/O count (a rate or a mean).
    pub fn of(value: f64) -> Self {
        Self { value, ios: None }
    }
}

/// The four answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    /// B is better than A by more than the minimum effect.
    Better,
    /// B is worse than A by more than the minimum effect.
    Worse,
    /// B and A differ by less than the minimum effect (equivalence).
    NoDifference,
    /// The interval is too wide to say any of the three.
    Undecided,
}

impl Answer {
    /// `better`, `worse`, `no difference`, `undecided`.
    pub fn label(self) -> &'static str {
        match self {
            Answer::Better => "better",
            Answer::Worse => "worse",
            Answer::NoDifference => "no difference",
            Answer::Undecided => "undecided",
        }
    }

    /// Is this a decision (anything but undecided)?
    pub fn decided(self) -> bool {
        self != Answer::Undecided
    }
}

/// Where a change lies against ±m: neutral, before "better" is read into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Lower,
    Higher,
    Within,
    Across,
}

/// Where the change interval `[lo, hi]` (as fractions: −0.51 is 51 % lower) lies.
fn side(lo: f64, hi: f64, m: f64) -> Side {
    if hi < -m {
        Side::Lower
    } else if lo > m {
        Side::Higher
    } else if lo > -m && hi < m {
        Side::Within
    } else {
        Side::Across
    }
}

/// More rounds that would likely decide an undecided comparison, and the
/// interval's reach (± percent) after them at the noise seen so far.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MoreRounds {
    pub rounds: usize,
    /// The larger of |low| and |high| of the interval then, in percent.
    pub reach_pct: f64,
    /// `rounds` is the most looked at, not enough to decide it: the effect
    /// sits close to the minimum.
    pub capped: bool,
}

/// The fewest and the median number of I/Os a round's percentile rested on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IosPerRound {
    pub min: u64,
    pub median: u64,
}

/// The effect of B against A on one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    pub metric: Metric,
    /// The typical change of B against A: exp(mean log ratio) − 1 (−0.51: 51 % lower).
    pub change: f64,
    /// The interval of the change (`None` under two pairs: the noise between rounds is unknown).
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Pairs of rounds it rests on.
    pub pairs: usize,
    /// The interval's confidence (0.95, or higher when corrected for looks and comparisons).
    pub confidence: f64,
    /// Standard deviation of the pairs' log ratios: the noise between rounds.
    pub sd: f64,
    pub answer: Answer,
    /// For the kernel's percentiles: the I/Os each round's percentile rested on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ios: Option<IosPerRound>,
    /// For an undecided effect: more rounds that would likely decide it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more: Option<MoreRounds>,
}

/// How [`Effect::of`] reads the pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    /// The interval misses the truth with at most this probability (after
    /// any correction: looks, comparisons).
    pub alpha: f64,
    /// The stated minimum effect, as a fraction (0.05).
    pub min_effect: f64,
    /// Rounds one more pair costs (2: one of each configuration).
    pub rounds_per_pair: usize,
}

/// The most pairs [`more_rounds`] looks ahead to, as a multiple of those there are.
const LOOK_AHEAD: usize = 20;

impl Effect {
    /// The effect of B against A on `metric` from the log ratios `ln(B/A)`
    /// of the pairs; `ios` are the I/O counts of the rounds' percentiles.
    /// `None` without any pair.
    pub fn of(metric: Metric, log_ratios: &[f64], ios: &[u64], level: Level) -> Option<Self> {
        let n = log_ratios.len();
        if n == 0 {
            return None;
        }
        let m = level.min_effect;
        let ios = ios_per_round(ios);
        let Some(iv) = Interval::of(log_ratios, level.alpha) else {
            let d = log_ratios[0];
            return Some(Self {
                metric,
                change: d.exp_m1(),
                lo: None,
                hi: None,
                pairs: n,
                confidence: 1.0 - level.alpha,
                sd: 0.0,
                answer: Answer::Undecided,
                ios,
                more: None,
            });
        };
        let (lo, hi) = (iv.lo.exp_m1(), iv.hi.exp_m1());
        let answer = match (side(lo, hi, m), metric.lower_is_better()) {
            (Side::Lower, true) | (Side::Higher, false) => Answer::Better,
            (Side::Lower, false) | (Side::Higher, true) => Answer::Worse,
            (Side::Within, _) => Answer::NoDifference,
            (Side::Across, _) => Answer::Undecided,
        };
        let more = (answer == Answer::Undecided).then(|| more_rounds(&iv, level));
        Some(Self {
            metric,
            change: iv.mean.exp_m1(),
            lo: Some(lo),
            hi: Some(hi),
            pairs: n,
            confidence: 1.0 - level.alpha,
            sd: iv.sd,
            answer,
            ios,
            more,
        })
    }

    /// `-51% (-58..-43)`; one pair: `-51% (one pair, no interval)`.
    pub fn number(&self) -> String {
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) => change_text(self.change, lo, hi),
            _ => format!("{} (one pair, no interval)", change_only(self.change)),
        }
    }

    /// The number and the answer, nothing more: `-3% (-95..+1836): undecided`
    /// (a small screen's line; [`Effect::sentence`] says more).
    pub fn brief(&self) -> String {
        format!("{}: {}", self.number(), self.answer.label())
    }

    /// The reach of the interval: the larger of |low| and |high|, in percent.
    pub fn reach_pct(&self) -> Option<f64> {
        Some(self.lo?.abs().max(self.hi?.abs()) * 100.0)
    }

    /// Does the interval hold "no change" (0 %)?
    pub fn holds_zero(&self) -> bool {
        matches!((self.lo, self.hi), (Some(lo), Some(hi)) if lo <= 0.0 && hi >= 0.0)
    }

    /// The answer in words, with the number: `-51% (-58..-43): better`,
    /// `+2% (-3..+4): no difference (within ±5%)`, or for an undecided one
    /// `no difference detectable (±12% at this noise; 40 more rounds would
    /// narrow it to ±6%)` when the interval holds 0, else
    /// `-8% (-12..-3): undecided (40 more rounds would narrow it to ±6%)`.
    pub fn sentence(&self, min_effect: f64) -> String {
        let more = self.more.map(|m| {
            let reach = format!("±{:.0}%", m.reach_pct);
            if m.capped {
                format!(
                    "even {} more rounds would only narrow it to {reach}: the effect is close to ±{:.0}%",
                    m.rounds,
                    min_effect * 100.0
                )
            } else {
                format!("{} more rounds would narrow it to {reach}", m.rounds)
            }
        });
        match self.answer {
            Answer::Better | Answer::Worse => {
                format!("{}: {}", self.number(), self.answer.label())
            }
            Answer::NoDifference => format!(
                "{}: no difference (within ±{:.0}%)",
                self.number(),
                min_effect * 100.0
            ),
            Answer::Undecided => match (self.reach_pct(), more) {
                (None, _) => format!("{}: undecided", self.number()),
                (Some(reach), Some(more)) if self.holds_zero() => {
                    format!("no difference detectable (±{reach:.0}% at this noise; {more})")
                }
                (Some(reach), None) if self.holds_zero() => {
                    format!("no difference detectable (±{reach:.0}% at this noise)")
                }
                (_, Some(more)) => format!("{}: undecided ({more})", self.number()),
                (_, None) => format!("{}: undecided", self.number()),
            },
        }
    }
}

/// The fewest and the median of the rounds' I/O counts.
fn ios_per_round(ios: &[u64]) -> Option<IosPerRound> {
    let min = *ios.iter().min()?;
    let as_f: Vec<f64> = ios.iter().map(|&n| n as f64).collect();
    Some(IosPerRound {
        min,
        median: median(&as_f).map_or(min, |m| m.round() as u64),
    })
}

/// How many more pairs would likely decide the comparison, assuming the
/// mean and the spread stay as they are: the interval must shrink until it
/// clears the nearer threshold (−m or +m) on the side of the mean, or fits
/// inside ±m. Looks up to [`LOOK_AHEAD`] times the pairs there are.
fn more_rounds(iv: &Interval, level: Level) -> MoreRounds {
    let (lo_t, hi_t) = ((-level.min_effect).ln_1p(), level.min_effect.ln_1p());
    let d = iv.mean;
    let need = if d < lo_t {
        lo_t - d
    } else if d > hi_t {
        d - hi_t
    } else {
        (d - lo_t).min(hi_t - d)
    };
    let half =
        |n: usize| t_quantile(1.0 - level.alpha / 2.0, (n - 1) as f64) * iv.sd / (n as f64).sqrt();
    let cap = iv.n * LOOK_AHEAD;
    let mut n = iv.n + 1;
    while n < cap && half(n) >= need {
        // Grow by a tenth at a time: the answer needs no more precision than that.
        n = (n + 1).max(n + n / 10);
    }
    let n = n.min(cap);
    let h = half(n);
    let reach = (d - h).exp_m1().abs().max((d + h).exp_m1().abs()) * 100.0;
    MoreRounds {
        rounds: (n - iv.n) * level.rounds_per_pair,
        reach_pct: reach,
        capped: h >= need,
    }
}

/// Percents beyond this are written as `>+9999`: a hundredfold rise says
/// all there is to say, and an interval's edge from a few pairs can reach
/// absurd figures.
const PCT_SHOWN: f64 = 9999.0;

/// A fraction as a signed percent with `d` decimals, without the sign of
/// percent: `-51`, `+8.8`, `>+9999`.
fn bare(x: f64, d: usize) -> String {
    let p = x * 100.0;
    if p > PCT_SHOWN {
        format!(">+{PCT_SHOWN:.0}")
    } else {
        format!("{p:+.d$}")
    }
}

/// A fraction as a signed percent with `d` decimals: `-51%`, `+8.8%`.
fn pct(x: f64, d: usize) -> String {
    format!("{}%", bare(x, d))
}

/// One decimal below 10 %, none from 10 % on (of the largest value shown);
/// one again near −100 %, which a fall to a thousandth must not round to.
fn decimals(values: &[f64]) -> usize {
    let big = values.iter().map(|v| v.abs()).fold(0.0, f64::max);
    let near_all = values.iter().any(|&v| v < -0.995);
    if big >= 0.0995 && !near_all { 0 } else { 1 }
}

/// A change without an interval, in the same format: `-51%`, `+2.1%`.
pub fn change_only(change: f64) -> String {
    pct(change, decimals(&[change]))
}

/// The one number format: `-51% (-58..-43)`, `+2.1% (-0.4..+4.6)`.
pub fn change_text(change: f64, lo: f64, hi: f64) -> String {
    let d = decimals(&[change, lo, hi]);
    format!("{} ({}..{})", pct(change, d), bare(lo, d), bare(hi, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEVEL: Level = Level {
        alpha: 0.05,
        min_effect: 0.05,
        rounds_per_pair: 2,
    };

    /// Pairs whose ratios are `exp(mean ± spread)`, alternating.
    fn pairs(mean: f64, spread: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| mean + if i % 2 == 0 { spread } else { -spread })
            .collect()
    }

    #[test]
    fn the_number_format_is_one_everywhere() {
        assert_eq!(change_text(-0.51, -0.58, -0.43), "-51% (-58..-43)");
        assert_eq!(change_text(0.021, -0.004, 0.046), "+2.1% (-0.4..+4.6)");
        assert_eq!(change_text(1.63, 0.8, 2.5), "+163% (+80..+250)");
        // A fall to a thousandth is not a fall to nothing.
        assert_eq!(
            change_text(-0.9993, -0.9995, -0.999),
            "-99.9% (-100.0..-99.9)"
        );
    }

    #[test]
    fn the_four_answers() {
        let of = |mean: f64, spread: f64, n: usize, metric| {
            Effect::of(metric, &pairs(mean, spread, n), &[], LEVEL).unwrap()
        };
        // 30 % lower latency, tight: better; the same for a rate is worse.
        let e = of(0.7f64.ln(), 0.02, 10, Metric::RAwait);
        assert_eq!(e.answer, Answer::Better, "{e:?}");
        assert!(e.more.is_none());
        assert_eq!(of(0.7f64.ln(), 0.02, 10, Metric::RS).answer, Answer::Worse);
        assert_eq!(
            of(1.3f64.ln(), 0.02, 10, Metric::RAwait).answer,
            Answer::Worse
        );
        // 1 % apart, tight: no difference.
        let e = of(0.01, 0.01, 10, Metric::RAwait);
        assert_eq!(e.answer, Answer::NoDifference);
        assert!(
            e.sentence(0.05).ends_with(": no difference (within ±5%)"),
            "{}",
            e.sentence(0.05)
        );
        // Wide: undecided, and more rounds are named.
        let e = of(0.0, 0.2, 6, Metric::RAwait);
        assert_eq!(e.answer, Answer::Undecided);
        let s = e.sentence(0.05);
        assert!(s.starts_with("no difference detectable (±"), "{s}");
        assert!(s.contains("more rounds would narrow it to ±"), "{s}");
        // 8 % lower, its interval reaching past −5 %: undecided, the number first.
        let e = of(0.92f64.ln(), 0.05, 8, Metric::RAwait);
        assert_eq!(e.answer, Answer::Undecided, "{e:?}");
        assert!(
            e.sentence(0.05).starts_with("-8% ("),
            "{}",
            e.sentence(0.05)
        );
        assert!(e.sentence(0.05).contains(": undecided ("));
    }

    #[test]
    fn one_pair_has_no_interval_and_is_undecided() {
        let e = Effect::of(Metric::RAwait, &[0.5], &[], LEVEL).unwrap();
        assert_eq!((e.answer, e.lo, e.pairs), (Answer::Undecided, None, 1));
        assert_eq!(e.number(), "+65% (one pair, no interval)");
        assert_eq!(e.sentence(0.05), "+65% (one pair, no interval): undecided");
        assert!(Effect::of(Metric::RAwait, &[], &[], LEVEL).is_none());
    }

    #[test]
    fn more_rounds_shrink_the_interval_to_what_decides() {
        // Mean −15 %, sd 0.2, 4 pairs: undecided. The projected interval
        // after the named rounds clears −5 % (its reach is under 15 + 10).
        let e = Effect::of(Metric::RAwait, &pairs(0.85f64.ln(), 0.2, 4), &[], LEVEL).unwrap();
        assert_eq!(e.answer, Answer::Undecided);
        let m = e.more.unwrap();
        assert!(
            !m.capped && m.rounds >= 2 && m.rounds.is_multiple_of(2),
            "{m:?}"
        );
        let n = 4 + m.rounds / 2;
        let h = t_quantile(0.975, (n - 1) as f64) * e.sd / (n as f64).sqrt();
        assert!(0.85f64.ln() + h < 0.95f64.ln(), "{m:?}");
        // An effect right at the threshold cannot be decided: capped.
        let e = Effect::of(Metric::RAwait, &pairs(0.95f64.ln(), 0.2, 4), &[], LEVEL).unwrap();
        let m = e.more.unwrap();
        assert!(m.capped, "{m:?}");
        assert!(e.sentence(0.05).contains("even "), "{}", e.sentence(0.05));
    }

    #[test]
    fn the_ios_of_the_rounds_percentiles_are_kept() {
        let e = Effect::of(
            Metric::KRP99,
            &[0.1, 0.2, 0.15],
            &[4000, 120, 5300, 4100],
            LEVEL,
        )
        .unwrap();
        assert_eq!(
            e.ios,
            Some(IosPerRound {
                min: 120,
                median: 4050
            })
        );
    }
}
