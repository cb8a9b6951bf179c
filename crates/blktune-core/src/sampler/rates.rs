//! Rates from two diskstats samples: the pure part of the sampler, used
//! live and by replay with recorded times.

use super::stats::{DeviceStat, DeviceStats};
use crate::diskstats::{Counters, DiskStatsLine};
use crate::iostat::{self, NoData};
use std::collections::{BTreeMap, HashMap};

/// Pure rate computation over a stream of diskstats samples at monotonic times.
///
/// Used live by [`Sampler`] and by replay with recorded times.
#[derive(Debug, Default, Clone)]
pub struct RateTracker {
    /// Each name of the last update with its counters then, in the order of
    /// its lines (a name listed twice: once, where it came first, with its
    /// last line's counters).
    prev: Vec<(String, Counters)>,
    /// Positions in `prev` in name order: the order of the output.
    order: Vec<usize>,
    /// Was a name listed twice in the last update?
    dupes: bool,
    /// Did the last update list other names than the one before (or the
    /// same in another order)? Each name counted once.
    names_changed: bool,
    prev_t: Option<f64>,
}

impl RateTracker {
    /// Feed the counters seen at monotonic time `t` (seconds); returns each
    /// device's statistics over the interval since the previous call.
    pub fn update(&mut self, t: f64, lines: &[DiskStatsLine]) -> DeviceStats {
        let itv = self.prev_t.map(|p| t - p);
        self.prev_t = Some(t);
        // Usually the kernel lists the same names in the same order as last
        // time: then each line's counters before are at its own position,
        // and the output order is known, with no lookup and no sort.
        let same = !self.dupes
            && lines.len() == self.prev.len()
            && lines.iter().zip(&self.prev).all(|(l, (n, _))| l.name == *n);
        self.names_changed = !same;
        if !same {
            return self.update_names(itv, lines);
        }
        let mut out = Vec::with_capacity(lines.len());
        for &i in &self.order {
            let (Some(l), Some((_, before))) = (lines.get(i), self.prev.get_mut(i)) else {
                continue;
            };
            let stats = match itv {
                Some(itv) => iostat::compute(before, &l.counters, itv),
                None => Err(NoData::FirstSample),
            };
            *before = l.counters;
            out.push((l.name.clone(), DeviceStat::new(l.counters, stats)));
        }
        // Already in order, each name once.
        DeviceStats::from_sorted(out)
    }

    /// [`RateTracker::update`] when the names changed: each line's
    /// counters before are looked up by name.
    fn update_names(&mut self, itv: Option<f64>, lines: &[DiskStatsLine]) -> DeviceStats {
        let before: HashMap<&str, &Counters> =
            self.prev.iter().map(|(n, c)| (n.as_str(), c)).collect();
        let mut out = BTreeMap::new();
        let mut prev: Vec<(String, Counters)> = Vec::with_capacity(lines.len());
        let mut at: HashMap<&str, usize> = HashMap::with_capacity(lines.len());
        let mut dupes = false;
        for l in lines {
            // A name listed twice: the last line counts, against the
            // previous update too. A name not seen in the previous update
            // (new, or back after it vanished) starts over.
            let stats = match (before.get(l.name.as_str()), itv) {
                (Some(b), Some(itv)) => iostat::compute(b, &l.counters, itv),
                _ => Err(NoData::FirstSample),
            };
            match at.get(l.name.as_str()) {
                Some(&j) => {
                    dupes = true;
                    if let Some((_, c)) = prev.get_mut(j) {
                        *c = l.counters;
                    }
                }
                None => {
                    at.insert(&l.name, prev.len());
                    prev.push((l.name.clone(), l.counters));
                }
            }
            out.insert(l.name.clone(), DeviceStat::new(l.counters, stats));
        }
        let mut order: Vec<usize> = (0..prev.len()).collect();
        order.sort_by(|&a, &b| prev[a].0.cmp(&prev[b].0));
        drop(before);
        // The names once each, as they came: a name listed twice on every
        // tick (takes this path every time) is no change of names.
        self.names_changed =
            prev.len() != self.prev.len() || prev.iter().zip(&self.prev).any(|(a, b)| a.0 != b.0);
        self.prev = prev;
        self.order = order;
        self.dupes = dupes;
        DeviceStats::from_sorted(out.into_iter().collect())
    }

    /// Did the last [`RateTracker::update`] see other names than the one
    /// before it (or the same in another order; a name listed twice counts
    /// once)?
    pub fn names_changed(&self) -> bool {
        self.names_changed
    }

    /// Seconds between the last two updates.
    pub fn last_interval(&self, at: f64) -> Option<f64> {
        self.prev_t.map(|p| at - p)
    }
}
