//! From cumulative readings to the histograms of each interval.

use super::hist::Hist;
use super::summary::Summary;
use super::{DevId, DeviceHists, Dir, Readings, Span};
use std::collections::BTreeMap;

/// Keeps the previous reading; each new one gives the interval since.
#[derive(Debug, Default)]
pub struct Intervals {
    prev: Option<Readings>,
}

/// What every traced device did in one interval.
#[derive(Debug, Clone, Default)]
pub struct Interval {
    pub devices: BTreeMap<DevId, DeviceInterval>,
    /// Completions of this interval that no histogram counted (the kernel
    /// had no room for a new one), of any device: the map entry it failed
    /// to make is the only place that would have said which.
    pub lost: u64,
}

/// One device's I/O in one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInterval {
    /// The diskseq of the device these I/Os belong to.
    pub diskseq: u64,
    /// Histograms of this interval's I/Os by span and direction (only those
    /// with a reading; empty ones when nothing happened).
    pub hists: BTreeMap<(Span, Dir), Hist>,
    /// A histogram went backwards (re-created under the same diskseq): its
    /// span and direction are left out of `hists` for this interval.
    pub reset: bool,
}

impl DeviceInterval {
    /// Percentiles of every span and direction.
    pub fn summary(&self) -> Summary {
        Summary::of(self.hists.iter().map(|(&(s, d), h)| (s, d, h)))
    }
}

impl Interval {
    /// The I/O of the device `dev` now is, if its diskseq is `diskseq` (when
    /// the caller knows it). `None` when it did no traced I/O, or when the
    /// histograms belong to an earlier device under that number (detached
    /// and re-attached, and nothing done since): an earlier device's I/O is
    /// never shown as the new one's.
    pub fn device(&self, dev: DevId, diskseq: Option<u64>) -> Option<&DeviceInterval> {
        self.devices
            .get(&dev)
            .filter(|d| diskseq.is_none_or(|s| s == d.diskseq))
    }

    /// The percentiles of a device (all empty when [`Interval::device`] is `None`).
    pub fn summary(&self, dev: DevId, diskseq: Option<u64>) -> Summary {
        self.device(dev, diskseq)
            .map(DeviceInterval::summary)
            .unwrap_or_default()
    }
}

impl Intervals {
    /// No reading yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Take a new reading; the interval since the previous one, or `None` for
    /// the first (its counts started at some unknown point before it).
    ///
    /// A device whose diskseq changed is a new device: its interval is its
    /// whole new histogram, which started after the previous reading (that
    /// reading would otherwise have shown the new diskseq), and nothing of
    /// the old one is carried over. The same holds for a histogram that first
    /// appears.
    pub fn next(&mut self, now: Readings) -> Option<Interval> {
        let prev = self.prev.replace(now)?;
        let now = self.prev.as_ref()?;
        let mut out = Interval {
            devices: BTreeMap::new(),
            lost: lost_since(prev.lost, now.lost),
        };
        for (dev, cur) in &now.devices {
            let before = prev.devices.get(dev).filter(|p| p.diskseq == cur.diskseq);
            out.devices.insert(*dev, delta(cur, before));
        }
        Some(out)
    }
}

/// The completions lost between two readings of one tracer's counter.
///
/// The counter is the CPUs' sum modulo 2^64, so the difference is taken
/// modulo 2^64 too: exact across a wrap. It never goes backwards otherwise:
/// the map lives as long as the [`Tracer`](super::Tracer), and a new tracer
/// (a new map, from 0) starts a new [`Intervals`], whose first reading is
/// only a baseline.
fn lost_since(earlier: u64, now: u64) -> u64 {
    now.wrapping_sub(earlier)
}

/// A device's interval from its reading now and its earlier reading, if the
/// same device (diskseq) had one.
fn delta(cur: &DeviceHists, before: Option<&DeviceHists>) -> DeviceInterval {
    let mut d = DeviceInterval {
        diskseq: cur.diskseq,
        hists: BTreeMap::new(),
        reset: false,
    };
    let empty = Hist::empty();
    for (key, h) in &cur.hists {
        let then = before.and_then(|b| b.hists.get(key)).unwrap_or(&empty);
        match h.since(then) {
            Ok(x) => {
                d.hists.insert(*key, x);
            }
            Err(_) => d.reset = true,
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOP0: DevId = DevId { major: 7, minor: 0 };

    fn reading(diskseq: u64, reads: &[u64], writes: &[u64]) -> Readings {
        let mut hists = BTreeMap::new();
        for (dir, v) in [(Dir::Read, reads), (Dir::Write, writes)] {
            if v.is_empty() {
                continue;
            }
            let mut h = Hist::empty();
            for &ns in v {
                h.record(ns);
            }
            hists.insert((Span::Total, dir), h);
        }
        Readings {
            devices: BTreeMap::from([(LOOP0, DeviceHists { diskseq, hists })]),
            lost: 0,
        }
    }

    /// A reading of no I/O with the lost counter at `lost`.
    fn lost_at(lost: u64) -> Readings {
        Readings {
            lost,
            ..reading(1, &[], &[])
        }
    }

    fn count(interval: &Interval, diskseq: Option<u64>, dir: Dir) -> u64 {
        interval
            .summary(LOOP0, diskseq)
            .get(Span::Total, dir)
            .map_or(0, |p| p.n)
    }

    #[test]
    fn the_first_reading_is_only_a_baseline() {
        let mut t = Intervals::new();
        assert!(t.next(reading(1, &[1_000_000], &[])).is_none());
        let i = t.next(reading(1, &[1_000_000, 2_000_000], &[])).unwrap();
        assert_eq!(count(&i, None, Dir::Read), 1);
        assert_eq!(count(&i, Some(1), Dir::Read), 1);
    }

    #[test]
    fn a_new_diskseq_does_not_inherit_the_old_histogram() {
        let mut t = Intervals::new();
        t.next(reading(5, &[1_000_000; 50], &[]));
        // Detached and attached again: diskseq 6, 3 writes so far.
        let i = t.next(reading(6, &[], &[3_000_000; 3])).unwrap();
        assert_eq!(count(&i, Some(6), Dir::Read), 0);
        assert_eq!(count(&i, Some(6), Dir::Write), 3);
        // The caller, knowing the device is now diskseq 7 (attached again,
        // no I/O yet), gets nothing from diskseq 6.
        assert!(i.device(LOOP0, Some(7)).is_none());
        assert_eq!(count(&i, Some(7), Dir::Write), 0);
        // And the next interval subtracts diskseq 6's own reading.
        let i = t.next(reading(6, &[], &[3_000_000; 5])).unwrap();
        assert_eq!(count(&i, Some(6), Dir::Write), 2);
    }

    #[test]
    fn a_histogram_that_went_backwards_is_left_out() {
        let mut t = Intervals::new();
        t.next(reading(1, &[1_000; 10], &[2_000; 10]));
        let i = t.next(reading(1, &[1_000; 4], &[2_000; 12])).unwrap();
        let d = i.device(LOOP0, Some(1)).unwrap();
        assert!(d.reset);
        assert!(!d.hists.contains_key(&(Span::Total, Dir::Read)));
        assert_eq!(count(&i, Some(1), Dir::Write), 2);
    }

    #[test]
    fn an_idle_interval_is_empty_not_missing() {
        let mut t = Intervals::new();
        t.next(reading(1, &[1_000; 10], &[]));
        let i = t.next(reading(1, &[1_000; 10], &[])).unwrap();
        let d = i.device(LOOP0, Some(1)).unwrap();
        assert!(d.hists[&(Span::Total, Dir::Read)].is_empty());
        assert_eq!(d.summary().get(Span::Total, Dir::Read), None);
    }

    #[test]
    fn lost_completions_are_the_counters_difference() {
        let mut t = Intervals::new();
        // Lost before the baseline: not this interval's.
        assert!(t.next(lost_at(7)).is_none());
        assert_eq!(t.next(lost_at(7)).unwrap().lost, 0);
        assert_eq!(t.next(lost_at(10)).unwrap().lost, 3);
        // The CPUs' sum wrapped past 2^64: still the 5 lost since.
        let mut t = Intervals::new();
        t.next(lost_at(u64::MAX - 1));
        assert_eq!(t.next(lost_at(3)).unwrap().lost, 5);
    }

    #[test]
    fn lost_completions_ignore_device_resets() {
        let mut t = Intervals::new();
        t.next(Readings {
            lost: 2,
            ..reading(5, &[1_000; 10], &[])
        });
        // The device was replaced (new diskseq): its histograms start over,
        // the machine-wide counter does not.
        let i = t
            .next(Readings {
                lost: 3,
                ..reading(6, &[1_000; 3], &[])
            })
            .unwrap();
        assert_eq!(i.lost, 1);
        assert_eq!(count(&i, Some(6), Dir::Read), 3);
        // A histogram re-created under the same diskseq (it went backwards):
        // the same.
        let i = t
            .next(Readings {
                lost: 4,
                ..reading(6, &[1_000], &[])
            })
            .unwrap();
        assert!(i.device(LOOP0, Some(6)).unwrap().reset);
        assert_eq!(i.lost, 1);
        // A new tracer has a new map, counting from 0: a new `Intervals`,
        // whose first reading is a baseline, so its 0 is never taken as
        // 2^64 - 4 lost.
        let mut t = Intervals::new();
        assert!(t.next(lost_at(0)).is_none());
        assert_eq!(t.next(lost_at(1)).unwrap().lost, 1);
    }
}
