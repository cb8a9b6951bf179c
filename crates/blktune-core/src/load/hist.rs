//! A latency histogram with log-linear buckets, in the manner of HdrHistogram:
//! values below `2^SUB_BITS` get a bucket each; above that every power of two
//! is split into `2^SUB_BITS` equal buckets, so any recorded value is known to
//! within 1/32 (about 3 %) of itself, from nanoseconds to hours, in a fixed
//! 15 KiB table that records in O(1) and merges by addition.

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two, as a power of two (32: relative error < 3.2 %).
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Enough buckets for every u64 value.
const BUCKETS: usize = ((64 - SUB_BITS + 1) as usize) * SUB as usize;

/// Bucket index of a value.
fn index(value: u64) -> usize {
    if value < SUB {
        return value as usize;
    }
    let msb = 63 - value.leading_zeros();
    let shift = msb - SUB_BITS;
    let mantissa = value >> shift; // in [SUB, 2*SUB)
    ((shift as u64 + 1) * SUB + (mantissa - SUB)) as usize
}

/// The smallest and largest value that land in bucket `index`.
fn bounds(index: usize) -> (u64, u64) {
    let i = index as u64;
    if i < SUB {
        return (i, i);
    }
    let shift = i / SUB - 1;
    let mantissa = i % SUB + SUB;
    let low = mantissa << shift;
    let high = low.saturating_add((1u64 << shift) - 1);
    (low, high)
}

/// Counts of values (nanoseconds, by convention) in log-linear buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    min: u64,
    max: u64,
    sum: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; BUCKETS],
            total: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record one value.
    pub fn record(&mut self, value: u64) {
        self.counts[index(value)] += 1;
        self.total += 1;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.sum += u128::from(value);
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    /// Forget everything.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Smallest recorded value (exact).
    pub fn min(&self) -> Option<u64> {
        (self.total > 0).then_some(self.min)
    }

    /// Largest recorded value (exact).
    pub fn max(&self) -> Option<u64> {
        (self.total > 0).then_some(self.max)
    }

    /// Mean of the recorded values (exact).
    pub fn mean(&self) -> Option<f64> {
        (self.total > 0).then(|| self.sum as f64 / self.total as f64)
    }

    /// The value at percentile `quantile` (0–100): the highest value equivalent to
    /// the bucket holding the ⌈q/100 × n⌉-th smallest value, clamped to the
    /// exact min and max (HdrHistogram's `getValueAtPercentile`).
    pub fn percentile(&self, quantile: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let q = quantile.clamp(0.0, 100.0);
        let rank = ((q / 100.0 * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(bounds(i).1.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// The usual percentiles, in milliseconds (values recorded in ns).
    pub fn summary_ms(&self) -> Option<LatencySummary> {
        let ms = |v: u64| v as f64 / 1e6;
        Some(LatencySummary {
            count: self.total,
            mean: self.mean()? / 1e6,
            min: ms(self.min()?),
            p50: ms(self.percentile(50.0)?),
            p90: ms(self.percentile(90.0)?),
            p99: ms(self.percentile(99.0)?),
            p999: ms(self.percentile(99.9)?),
            max: ms(self.max()?),
        })
    }
}

/// Latency percentiles of a set of I/Os, in milliseconds. JSON keys as named.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of I/Os measured.
    pub count: u64,
    pub mean: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    /// The 99.9th percentile.
    pub p999: f64,
    pub max: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::new();
        for v in 0..64 {
            h.record(v);
        }
        assert_eq!(h.percentile(50.0), Some(31));
        assert_eq!(h.percentile(100.0), Some(63));
        assert_eq!(h.percentile(0.0), Some(0));
        assert_eq!(h.min(), Some(0));
        assert_eq!(h.count(), 64);
    }

    #[test]
    fn empty_has_no_percentiles() {
        let h = Histogram::new();
        assert_eq!(h.percentile(50.0), None);
        assert_eq!(h.summary_ms(), None);
    }

    #[test]
    fn uniform_distribution_percentiles_are_within_bucket_precision() {
        // 1..=100_000 µs in ns: the true p-th percentile is p * 1000 µs.
        let mut h = Histogram::new();
        for us in 1..=100_000u64 {
            h.record(us * 1000);
        }
        for (q, want) in [(50.0, 50_000e3), (90.0, 90_000e3), (99.0, 99_000e3)] {
            let got = h.percentile(q).unwrap() as f64;
            let err = (got - want).abs() / want;
            assert!(err < 1.0 / 32.0, "p{q}: {got} vs {want} ({err})");
        }
        // p99.9 of 100k values is the 99_900th: 99.9 ms.
        let got = h.percentile(99.9).unwrap() as f64;
        assert!((got - 99_900e3).abs() / 99_900e3 < 1.0 / 32.0);
        assert_eq!(h.max(), Some(100_000_000));
        assert_eq!(h.mean(), Some(50_000_500.0));
    }

    #[test]
    fn a_tail_shows_in_p99_but_not_p50() {
        // 990 fast I/Os at 100 µs and 10 slow ones at 50 ms.
        let mut h = Histogram::new();
        for _ in 0..990 {
            h.record(100_000);
        }
        for _ in 0..10 {
            h.record(50_000_000);
        }
        let s = h.summary_ms().unwrap();
        assert!((s.p50 - 0.1).abs() < 0.004, "{s:?}");
        assert!(
            (s.p99 - 0.1).abs() < 0.004,
            "990th of 1000 is still fast: {s:?}"
        );
        assert!((s.p999 - 50.0).abs() < 1.6, "{s:?}");
        assert_eq!(s.max, 50.0);
        assert_eq!(s.count, 1000);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in [5u64, 900, 70_000, 3_000_000_000] {
            a.record(v);
            all.record(v);
        }
        for v in [1u64, 123_456, 9_999_999] {
            b.record(v);
            all.record(v);
        }
        a.merge(&b);
        assert_eq!(a, all);
        a.clear();
        assert_eq!(a, Histogram::new());
    }

    #[test]
    fn bucket_bounds_tile_the_number_line() {
        let mut next = 0u64;
        for i in 0..BUCKETS {
            let (lo, hi) = bounds(i);
            assert_eq!(lo, next, "bucket {i}");
            assert!(hi >= lo);
            assert_eq!(index(lo), i);
            assert_eq!(index(hi), i);
            next = hi.wrapping_add(1);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
    }

    proptest! {
        #[test]
        fn every_value_is_known_within_one_part_in_32(v in 0u64..u64::MAX / 2) {
            let mut h = Histogram::new();
            h.record(v);
            h.record(v.saturating_mul(2));
            let p = h.percentile(50.0).unwrap();
            prop_assert!(p >= v);
            prop_assert!((p - v) as f64 <= v as f64 / 32.0);
        }
    }
}
