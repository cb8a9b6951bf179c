//! The comparison engine: is configuration B better than A, from repeated,
//! interleaved rounds, and can a storage engineer stake a change on it?
//! Pure functions, no I/O: the shoot-out, the before/after, the live A/B and
//! the benchmarks feed it rounds and print what it says.
//!
//! One window lies: on a shared machine most of the noise is *between*
//! windows (a job starts, writeback flushes, the host steals CPU), and a ±
//! taken inside one window cannot see it. So:
//!
//! 1. configurations run in **blocks** of rounds, interleaved and
//!    counterbalanced (`A B | B A`, [`design`]); each round settles after
//!    its switch, then dwells, and gives one number per figure
//!    ([`Round`]: a mean, a rate, or a percentile of that round's histogram
//!    with the I/Os it rests on);
//! 2. each block gives a **pair** per two configurations, `ln(B/A)`; the
//!    pairs' t-interval is the effect's interval ([`effect`]), printed in one
//!    format: `-51% (-58..-43)`;
//! 3. the **call** is one of four ([`Answer`]): better, worse, no
//!    difference (the interval within ±m, TOST), undecided (with how many
//!    more rounds would likely decide it);
//! 4. **several configurations** are compared with the leader, corrected for
//!    the number of comparisons and for the looks of a sequential run
//!    ([`analysis`], [`Sequence`]);
//! 5. **controls** ([`controls`]): what else changed in the same rounds (the
//!    offered load, the devices underneath, the system); a failed one makes
//!    the verdict unreliable, never a win; **drift** ([`drift`]) of a
//!    configuration's own rounds is named.
//!
//! One before and one after (a single switch) make one pair: an effect
//! without an interval, always undecided, with the controls judged against
//! each window's own spread. More rounds of an A/B turn it into a verdict.
//!
//! ```
//! use blktune_core::compare::{Answer, LoadKind, Metric, Options, Round, Sample, compare_two};
//! // Four A B | B A blocks: B's r_await is about 30 % lower.
//! let mut rounds = Vec::new();
//! for (block, (a, b)) in [(1.00, 0.70), (1.05, 0.72), (0.98, 0.69), (1.02, 0.71)].into_iter().enumerate() {
//!     for (config, v) in [(0, a), (1, b)] {
//!         let mut r = Round::new(config, block, rounds.len() as f64);
//!         r.values.insert(Metric::RAwait, Sample::of(v));
//!         rounds.push(r);
//!     }
//! }
//! let opts = Options::new(Metric::RAwait, vec!["A".into(), "B".into()], "loop0", LoadKind::ClosedLoop);
//! let c = compare_two(&rounds, 0, 1, &opts, 0.05, 2);
//! let e = c.goal.unwrap();
//! assert_eq!(e.answer, Answer::Better);
//! assert_eq!(e.number(), "-30% (-32..-29)");
//! ```

pub mod analysis;
pub mod controls;
pub mod design;
pub mod drift;
pub mod effect;
mod metric;
pub mod stats;

pub use analysis::{
    Analysis, Comparison, DEFAULT_ALPHA, DEFAULT_LOOKS, DEFAULT_MIN_BLOCKS, DEFAULT_MIN_EFFECT,
    Options, Outcome, Plan, Sequence, analyse, compare_two,
};
pub use controls::{
    ControlCheck, ControlKind, LoadKind, LoadSample, RoundControls, Spread, Status, SystemSample,
    UnderSample, check_one_pair,
};
pub use drift::Drift;
pub use effect::{Answer, Effect, IosPerRound, MoreRounds, Sample, change_only, change_text};
pub use metric::Metric;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One measured round of one configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Round {
    /// The configuration's index (into the caller's list).
    pub config: usize,
    /// The block it belongs to: pairs are made of rounds of one block.
    pub block: usize,
    /// Seconds from the start of the comparison to the start of its dwell.
    pub at_s: f64,
    /// Its figures.
    pub values: BTreeMap<Metric, Sample>,
    /// What else was measured in it.
    #[serde(default)]
    pub controls: RoundControls,
}

impl Round {
    /// A round with no figures yet.
    pub fn new(config: usize, block: usize, at_s: f64) -> Self {
        Self {
            config,
            block,
            at_s,
            ..Self::default()
        }
    }
}

#[cfg(test)]
pub(crate) mod sim;
#[cfg(test)]
mod tests;
