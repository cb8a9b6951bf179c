//! What an interval's (or a window's) histogram says, in milliseconds, with
//! the number of I/Os it rests on.

use super::hist::Hist;
use super::{Dir, Span};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Below this many I/Os a p99 is one of the slowest few: show the count instead.
pub const MIN_IOS_FOR_P99: u64 = 100;
/// Below this many I/Os a p99.9 is the slowest one or two.
pub const MIN_IOS_FOR_P999: u64 = 1000;

/// Percentiles of one direction and span, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    /// Number of I/Os.
    pub n: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    /// The 99.9th percentile.
    pub p999: f64,
    /// The top of the slowest I/O's slot (at most 1.6 % above it).
    pub max: f64,
}

impl Percentiles {
    /// The percentiles of a histogram; `None` when it has no I/O.
    pub fn of(hist: &Hist) -> Option<Self> {
        let ms = |q: f64| hist.quantile_ns(q).map(|ns| ns / 1e6);
        Some(Self {
            n: hist.count(),
            mean: hist.mean_ns()? / 1e6,
            p50: ms(0.5)?,
            p90: ms(0.9)?,
            p99: ms(0.99)?,
            p999: ms(0.999)?,
            max: hist.max_ns()? / 1e6,
        })
    }

    /// The p99, when it rests on at least [`MIN_IOS_FOR_P99`] I/Os.
    pub fn p99_if_enough(&self) -> Option<f64> {
        (self.n >= MIN_IOS_FOR_P99).then_some(self.p99)
    }

    /// The p99.9, when it rests on at least [`MIN_IOS_FOR_P999`] I/Os.
    pub fn p999_if_enough(&self) -> Option<f64> {
        (self.n >= MIN_IOS_FOR_P999).then_some(self.p999)
    }

    /// The p99, or the count when there are too few I/Os for one.
    pub fn tail(&self) -> Tail {
        match self.p99_if_enough() {
            Some(ms) => Tail::P99(ms),
            None => Tail::Few(self.n),
        }
    }
}

/// The latency (ms) of one direction's I/Os, with the count it rests on.
/// Honest by construction: no p99 under [`MIN_IOS_FOR_P99`] I/Os, no p99.9
/// under [`MIN_IOS_FOR_P999`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IoLatency {
    /// Number of I/Os.
    pub n: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    /// `null` under 100 I/Os.
    pub p99: Option<f64>,
    /// `null` under 1000 I/Os.
    pub p999: Option<f64>,
    /// The top of the slowest I/O's histogram slot (at most 1.6 % above it).
    pub max: f64,
}

impl IoLatency {
    /// Of a histogram; `None` when it has no I/O.
    pub fn of(hist: &Hist) -> Option<Self> {
        let p = Percentiles::of(hist)?;
        Some(Self {
            n: p.n,
            mean: p.mean,
            p50: p.p50,
            p90: p.p90,
            p99: p.p99_if_enough(),
            p999: p.p999_if_enough(),
            max: p.max,
        })
    }
}

/// The kernel's figures of a window (a shoot-out's dwell, a scheduler's
/// dwells pooled, a recording's windows).
/// `reads`/`writes` time each request from its start to completion (the span
/// r_await averages); `dev_*` from its issue to the driver to completion
/// (the device alone; the difference is the time in the scheduler). `null`:
/// no such I/O.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct KernelFigures {
    pub reads: Option<IoLatency>,
    pub writes: Option<IoLatency>,
    pub dev_reads: Option<IoLatency>,
    pub dev_writes: Option<IoLatency>,
}

impl KernelFigures {
    /// The I/O count of a direction and span (0 when none).
    pub fn count(&self, span: Span, dir: Dir) -> u64 {
        self.get(span, dir).map_or(0, |l| l.n)
    }

    /// The figures of a direction and span (reads and writes only).
    pub fn get(&self, span: Span, dir: Dir) -> Option<&IoLatency> {
        match (span, dir) {
            (Span::Total, Dir::Read) => self.reads.as_ref(),
            (Span::Total, Dir::Write) => self.writes.as_ref(),
            (Span::Device, Dir::Read) => self.dev_reads.as_ref(),
            (Span::Device, Dir::Write) => self.dev_writes.as_ref(),
            _ => None,
        }
    }
}

/// A p99 cell: the value, or how few I/Os there were.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tail {
    /// p99 in ms.
    P99(f64),
    /// Fewer than [`MIN_IOS_FOR_P99`] I/Os (maybe none).
    Few(u64),
}

impl fmt::Display for Tail {
    /// `12.345` (ms) or `n=42`; honours width and alignment.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match *self {
            Tail::P99(ms) => format!("{ms:.3}"),
            Tail::Few(n) => format!("n={n}"),
        };
        f.pad(&s)
    }
}

/// Percentiles of every direction and span of one device over one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    total: [Option<Percentiles>; 4],
    device: [Option<Percentiles>; 4],
}

impl Summary {
    /// Summarise a device's histograms (those missing had no I/O).
    pub fn of<'a>(hists: impl IntoIterator<Item = (Span, Dir, &'a Hist)>) -> Self {
        let mut s = Self::default();
        for (span, dir, h) in hists {
            s.slot(span)[dir.index()] = Percentiles::of(h);
        }
        s
    }

    fn slot(&mut self, span: Span) -> &mut [Option<Percentiles>; 4] {
        match span {
            Span::Total => &mut self.total,
            Span::Device => &mut self.device,
        }
    }

    /// The percentiles of one direction and span; `None` without I/O.
    pub fn get(&self, span: Span, dir: Dir) -> Option<&Percentiles> {
        match span {
            Span::Total => self.total[dir.index()].as_ref(),
            Span::Device => self.device[dir.index()].as_ref(),
        }
    }

    /// The p99 cell of a direction (total span); `Few(0)` without I/O.
    pub fn tail(&self, span: Span, dir: Dir) -> Tail {
        self.get(span, dir).map_or(Tail::Few(0), Percentiles::tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(count: u64, ns: u64) -> Hist {
        let mut h = Hist::empty();
        for _ in 0..count {
            h.record(ns);
        }
        h
    }

    #[test]
    fn fewer_than_100_ios_give_a_count_not_a_p99() {
        let p = Percentiles::of(&hist(99, 2_000_000)).unwrap();
        assert_eq!(p.n, 99);
        assert_eq!(p.p99_if_enough(), None);
        assert_eq!(p.tail(), Tail::Few(99));
        assert_eq!(format!("{:>7}", p.tail()), "   n=99");
        let p = Percentiles::of(&hist(100, 2_000_000)).unwrap();
        assert!(p.p99_if_enough().is_some());
        assert_eq!(p.p999_if_enough(), None);
        assert!(matches!(p.tail(), Tail::P99(ms) if (ms - 2.0).abs() < 2.0 / 64.0));
        assert_eq!(format!("{:>7}", Tail::P99(1.5)), "  1.500");
        assert!(
            Percentiles::of(&hist(1000, 5))
                .unwrap()
                .p999_if_enough()
                .is_some()
        );
    }

    #[test]
    fn summary_keeps_directions_and_spans_apart() {
        let reads = hist(200, 3_000_000);
        let dev = hist(200, 1_000_000);
        let s = Summary::of([
            (Span::Total, Dir::Read, &reads),
            (Span::Device, Dir::Read, &dev),
        ]);
        assert!((s.get(Span::Total, Dir::Read).unwrap().p50 - 3.0).abs() < 0.05);
        assert!((s.get(Span::Device, Dir::Read).unwrap().p50 - 1.0).abs() < 0.02);
        assert_eq!(s.get(Span::Total, Dir::Write), None);
        assert_eq!(s.tail(Span::Total, Dir::Write), Tail::Few(0));
        assert_eq!(Percentiles::of(&Hist::empty()), None);
    }
}
