//! One interval's numbers of every diskstats line, kept in the order of
//! the names (a sorted vector: one search per lookup, no hashing).

use crate::diskstats::{Counters, InFlight};
use crate::iostat::{ExtStats, NoData};
use std::collections::BTreeMap;

/// One device's numbers for one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceStat {
    pub counters: Counters,
    /// I/Os in flight now, reads and writes; `None` where the split is not
    /// known (a replay: recordings keep diskstats' total; a partition; an
    /// unreadable file). Read only where diskstats counts any in flight.
    pub in_flight: Option<InFlight>,
    /// `Err` when this interval has no data (first sample, reset counters).
    pub stats: Result<ExtStats, NoData>,
}

impl DeviceStat {
    /// A line's counters and the interval's rates; the in-flight split is
    /// the sampler's to read.
    pub fn new(counters: Counters, stats: Result<ExtStats, NoData>) -> Self {
        Self {
            counters,
            in_flight: None,
            stats,
        }
    }
}

/// Every diskstats line's numbers by device name, in name (byte) order.
///
/// A sorted vector rather than a map: the rate tracker makes one per tick
/// already in that order (no tree to build and no nodes to free, at a
/// thousand lines a tick), and a lookup is a binary search.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceStats(Vec<(String, DeviceStat)>);

impl DeviceStats {
    /// From entries already in name order, each name once.
    pub(super) fn from_sorted(entries: Vec<(String, DeviceStat)>) -> Self {
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        Self(entries)
    }

    fn at(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    /// A device's numbers.
    pub fn get(&self, name: &str) -> Option<&DeviceStat> {
        let i = self.at(name).ok()?;
        self.0.get(i).map(|(_, st)| st)
    }

    /// A device's numbers, to change.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut DeviceStat> {
        let i = self.at(name).ok()?;
        self.0.get_mut(i).map(|(_, st)| st)
    }

    /// Has this device a line?
    pub fn contains_key(&self, name: &str) -> bool {
        self.at(name).is_ok()
    }

    /// Take a device's numbers out.
    pub fn remove(&mut self, name: &str) -> Option<DeviceStat> {
        let i = self.at(name).ok()?;
        Some(self.0.remove(i).1)
    }

    /// Forget every line.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Names and numbers, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &DeviceStat)> {
        self.0.iter().map(|(n, st)| (n, st))
    }

    /// Names and numbers to change, in name order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut DeviceStat)> {
        self.0.iter_mut().map(|(n, st)| (&*n, st))
    }
}

impl<'a> IntoIterator for &'a DeviceStats {
    type Item = (&'a String, &'a DeviceStat);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, DeviceStat)>,
        fn(&'a (String, DeviceStat)) -> (&'a String, &'a DeviceStat),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(n, st)| (n, st))
    }
}

impl IntoIterator for DeviceStats {
    type Item = (String, DeviceStat);
    type IntoIter = std::vec::IntoIter<(String, DeviceStat)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// As a map would: a name given twice keeps its last numbers.
impl FromIterator<(String, DeviceStat)> for DeviceStats {
    fn from_iter<I: IntoIterator<Item = (String, DeviceStat)>>(iter: I) -> Self {
        let map: BTreeMap<String, DeviceStat> = iter.into_iter().collect();
        Self::from_sorted(map.into_iter().collect())
    }
}

impl std::ops::Index<&str> for DeviceStats {
    type Output = DeviceStat;

    /// A device's numbers; panics when it has no line, as a map's index.
    fn index(&self, name: &str) -> &DeviceStat {
        match self.get(name) {
            Some(st) => st,
            None => panic!("no diskstats line for {name:?}"),
        }
    }
}
