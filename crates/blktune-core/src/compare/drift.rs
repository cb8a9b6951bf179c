//! Drift: a configuration whose own rounds move steadily over the run (a
//! cache warming, a neighbour's backup starting, a disk filling up). The
//! interleaved blocks keep a steady drift out of the paired effects, but it
//! is named, since the effect may not hold at another time.
//!
//! The test: a least-squares line through `ln(value)` against the rounds'
//! start times, its slope's t-test at [`DRIFT_P`], and a change over the
//! configuration's rounds of at least the minimum effect.

use super::Round;
use super::metric::Metric;
use super::stats::Trend;
use serde::{Deserialize, Serialize};

/// The slope's p-value under which a trend is named: strict, since every
/// configuration is tested.
pub const DRIFT_P: f64 = 0.01;

/// The fewest rounds of a configuration its drift is tested on.
pub const MIN_ROUNDS_FOR_DRIFT: usize = 4;

/// A configuration's drift on one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    pub config: usize,
    pub metric: Metric,
    /// The fitted change from its first round to its last, as a fraction.
    pub change: f64,
    pub rounds: usize,
    /// The slope's two-sided p-value.
    pub p: f64,
}

impl Drift {
    /// `none: r_await +25% over its 8 rounds (a steady trend, p=0.002)`.
    pub fn text(&self, name: &str) -> String {
        format!(
            "{name}: {} {:+.0}% over its {} rounds (a steady trend, p={:.3})",
            self.metric.label(),
            self.change * 100.0,
            self.rounds,
            self.p
        )
    }
}

/// The drift of configuration `config` on `metric`, when it is named: a
/// trend at [`DRIFT_P`] whose fitted change is at least `min_effect`.
pub fn drift_of(rounds: &[Round], config: usize, metric: Metric, min_effect: f64) -> Option<Drift> {
    let points: Vec<(f64, f64)> = rounds
        .iter()
        .filter(|r| r.config == config)
        .filter_map(|r| {
            let v = r.values.get(&metric)?.value;
            (v.is_finite() && v > 0.0).then(|| (r.at_s, v.ln()))
        })
        .collect();
    if points.len() < MIN_ROUNDS_FOR_DRIFT {
        return None;
    }
    let t = Trend::of(&points)?;
    let change = (t.slope * t.span).exp_m1();
    (t.p < DRIFT_P && change.abs() >= min_effect).then_some(Drift {
        config,
        metric,
        change,
        rounds: points.len(),
        p: t.p,
    })
}
