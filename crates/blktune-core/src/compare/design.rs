//! How rounds are laid out and when they are looked at.
//!
//! - **Blocks.** Every configuration taking part runs once per block; pairs
//!   are made of two configurations' rounds in one block. The order is
//!   counterbalanced: forward in one block, backward in the next (`A B | B A`),
//!   so a steady drift of the machine adds as much to each configuration
//!   and cancels in the mean of two blocks; every second pair of blocks
//!   starts one configuration later, so no configuration always follows
//!   the same one.
//! - **Looks.** Stopping at the first look that seems decided makes a zero
//!   effect look decided far more often than the level says. So the number
//!   of looks is fixed in advance and the error rate is spent across them:
//!   look `k` of `L` spends `alpha · ((k/L)² − ((k−1)/L)²)`, the power family
//!   `alpha · t^2` of Kim and DeMets ("Design and analysis of group sequential
//!   tests based on the type I error spending rate function", Biometrika
//!   1987; spending functions after Lan and DeMets, Biometrika 1983), little
//!   early and most at the end. The looks are joined by Bonferroni's
//!   inequality (their errors add up to at most `alpha`) rather than by the
//!   exact joint distribution: a little conservative, and true for any
//!   spacing of the looks. A last look before the planned one (the time ran
//!   out) spends all that is left.

use super::Round;

/// The order of `participants` in block `block` (see the module documentation).
pub fn block_order(participants: &[usize], block: usize) -> Vec<usize> {
    let k = participants.len();
    if k == 0 {
        return Vec::new();
    }
    let shift = (block / 2) % k;
    let mut order: Vec<usize> = participants[shift..]
        .iter()
        .chain(&participants[..shift])
        .copied()
        .collect();
    if block % 2 == 1 {
        order.reverse();
    }
    order
}

/// The error rate spent across a fixed number of looks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spending {
    /// The total: the chance of any false call over all looks.
    pub alpha: f64,
    /// The most looks.
    pub looks: usize,
}

impl Spending {
    /// The cumulative share of `alpha` spent by look `k` of the planned ones.
    fn spent_by(&self, k: usize) -> f64 {
        let f = (k as f64 / self.looks.max(1) as f64).min(1.0);
        self.alpha * f * f
    }

    /// What look `k` (1-based) spends; the last look (`last`: the planned
    /// last, or an earlier one because the time ran out) spends all that
    /// is left.
    pub fn at(&self, k: usize, last: bool) -> f64 {
        if last || k >= self.looks {
            self.alpha - self.spent_by(k.saturating_sub(1))
        } else {
            self.spent_by(k) - self.spent_by(k - 1)
        }
    }
}

/// The pairs of configurations `a` and `b` in `rounds`: per block holding
/// both, `ln(b / a)` of `value`. Rounds whose value is missing, zero or not
/// finite make no pair. Also the I/O counts of both rounds of each pair (for
/// percentiles). Blocks in the order of the rounds.
pub fn pairs_of(
    rounds: &[Round],
    a: usize,
    b: usize,
    value: impl Fn(&Round) -> Option<(f64, Option<u64>)>,
) -> (Vec<f64>, Vec<u64>) {
    let mut blocks: Vec<usize> = rounds.iter().map(|r| r.block).collect();
    blocks.dedup();
    let mut logs = Vec::new();
    let mut ios = Vec::new();
    let positive = |r: &Round| value(r).filter(|(v, _)| v.is_finite() && *v > 0.0);
    for blk in blocks {
        let find = |c: usize| rounds.iter().find(|r| r.block == blk && r.config == c);
        let (Some(ra), Some(rb)) = (find(a), find(b)) else {
            continue;
        };
        let (Some((va, na)), Some((vb, nb))) = (positive(ra), positive(rb)) else {
            continue;
        };
        logs.push((vb / va).ln());
        ios.extend(na);
        ios.extend(nb);
    }
    (logs, ios)
}

/// The paired differences `b − a` of a value that may be 0 (a share, a
/// percentage of busy time), per block holding both.
pub fn diffs_of(
    rounds: &[Round],
    a: usize,
    b: usize,
    value: impl Fn(&Round) -> Option<f64>,
) -> Vec<f64> {
    let mut blocks: Vec<usize> = rounds.iter().map(|r| r.block).collect();
    blocks.dedup();
    blocks
        .into_iter()
        .filter_map(|blk| {
            let find = |c: usize| rounds.iter().find(|r| r.block == blk && r.config == c);
            let (va, vb) = (value(find(a)?)?, value(find(b)?)?);
            (va.is_finite() && vb.is_finite()).then_some(vb - va)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_alternate_and_rotate() {
        let p = [0, 1, 2, 3];
        assert_eq!(block_order(&p, 0), [0, 1, 2, 3]);
        assert_eq!(block_order(&p, 1), [3, 2, 1, 0]);
        assert_eq!(block_order(&p, 2), [1, 2, 3, 0]);
        assert_eq!(block_order(&p, 3), [0, 3, 2, 1]);
        // Two configurations: A B | B A | B A | A B.
        let ab: Vec<Vec<usize>> = (0..4).map(|b| block_order(&[0, 1], b)).collect();
        assert_eq!(ab, [[0, 1], [1, 0], [1, 0], [0, 1]]);
        assert!(block_order(&[], 3).is_empty());
    }

    #[test]
    fn spending_adds_up_to_alpha_whenever_the_last_look_comes() {
        let s = Spending {
            alpha: 0.05,
            looks: 4,
        };
        let planned: f64 = (1..=4).map(|k| s.at(k, k == 4)).sum();
        assert!((planned - 0.05).abs() < 1e-15);
        // Little early, most at the end.
        assert!((s.at(1, false) - 0.05 / 16.0).abs() < 1e-15);
        assert!((s.at(4, true) - 0.05 * 7.0 / 16.0).abs() < 1e-15);
        // The time ran out after two looks: the second spends the rest.
        let early = s.at(1, false) + s.at(2, true);
        assert!((early - 0.05).abs() < 1e-15);
        // One look: all of it.
        let one = Spending {
            alpha: 0.05,
            looks: 1,
        };
        assert!((one.at(1, true) - 0.05).abs() < 1e-15);
    }
}
