//! A histogram in few bytes, for recordings: only its non-empty slots, as
//! `[slot, count]` pairs, and the sum of the latencies. An interval of a
//! busy device fills a few dozen of the 1538 slots.

use super::hist::{Hist, NR_SLOTS, VALUE_LEN};
use serde::{Deserialize, Serialize};

/// A histogram's non-empty slots (`[[slot, count], ...]`, slots ascending)
/// and its sum in ns.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SparseHist {
    /// `[slot, count]` of each slot with a count, slots ascending.
    pub slots: Vec<(u32, u64)>,
    /// The sum of the latencies, ns.
    #[serde(default)]
    pub sum_ns: u64,
}

/// Why a stored histogram was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SparseError {
    #[error("histogram slot {0} out of range (0 to {max})", max = NR_SLOTS - 1)]
    Slot(u32),
    #[error("histogram slots not ascending at slot {0}")]
    Order(u32),
}

impl From<&Hist> for SparseHist {
    fn from(hist: &Hist) -> Self {
        Self {
            slots: hist
                .slots()
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, &c)| (i as u32, c))
                .collect(),
            sum_ns: hist.sum_ns(),
        }
    }
}

impl SparseHist {
    /// The histogram back; a slot out of range or out of order (a damaged or
    /// crafted file) is refused, never indexed.
    pub fn to_hist(&self) -> Result<Hist, SparseError> {
        let mut value = vec![0u64; VALUE_LEN];
        let mut last: Option<u32> = None;
        for &(slot, count) in &self.slots {
            if slot as usize >= NR_SLOTS {
                return Err(SparseError::Slot(slot));
            }
            if last.is_some_and(|l| l >= slot) {
                return Err(SparseError::Order(slot));
            }
            last = Some(slot);
            value[slot as usize] = count;
        }
        value[NR_SLOTS] = self.sum_ns;
        // The length is right by construction.
        Ok(Hist::from_value(&value).unwrap_or_default())
    }

    /// Pool another histogram into this one (both ascending; merged in one pass).
    pub fn add(&mut self, other: &SparseHist) {
        let mut out = Vec::with_capacity(self.slots.len().max(other.slots.len()));
        let (mut a, mut b) = (self.slots.iter().peekable(), other.slots.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&&(i, x)), Some(&&(j, y))) if i == j => {
                    a.next();
                    b.next();
                    (i, x.saturating_add(y))
                }
                (Some(&&(i, x)), Some(&&(j, _))) if i < j => {
                    a.next();
                    (i, x)
                }
                (_, Some(&&(j, y))) => {
                    b.next();
                    (j, y)
                }
                (Some(&&(i, x)), None) => {
                    a.next();
                    (i, x)
                }
                (None, None) => break,
            };
            out.push(next);
        }
        self.slots = out;
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
    }

    /// Number of I/Os (saturating: a crafted file cannot overflow it).
    pub fn count(&self) -> u64 {
        self.slots
            .iter()
            .fold(0u64, |a, &(_, c)| a.saturating_add(c))
    }
}

/// Sums sparse histograms: the pooled histogram of a window.
#[derive(Debug, Clone)]
pub struct Pool {
    /// The slots, then the sum in ns (a map value's layout).
    value: Vec<u64>,
}

impl Default for Pool {
    fn default() -> Self {
        Self {
            value: vec![0; VALUE_LEN],
        }
    }
}

impl Pool {
    /// Add one interval's histogram.
    pub fn add(&mut self, sparse_hist: &SparseHist) {
        for &(slot, n) in &sparse_hist.slots {
            // Slots of a recording are range-checked on read; the sum has its own place.
            let i = (slot as usize).min(NR_SLOTS - 1);
            self.value[i] = self.value[i].saturating_add(n);
        }
        self.value[NR_SLOTS] = self.value[NR_SLOTS].saturating_add(sparse_hist.sum_ns);
    }

    /// The pooled histogram.
    pub fn hist(&self) -> Hist {
        // The length is right by construction.
        Hist::from_value(&self.value).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::Percentiles;
    use proptest::prelude::*;

    #[test]
    fn only_non_empty_slots_are_kept_as_pairs() {
        let mut h = Hist::empty();
        for ns in [1_000, 1_030, 2_050, 2_050, 20_000_000_000] {
            h.record(ns);
        }
        let s = SparseHist::from(&h);
        assert_eq!(s.slots, [(0, 1), (1, 1), (65, 2), (NR_SLOTS as u32 - 1, 1)]);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            format!(
                r#"{{"slots":[[0,1],[1,1],[65,2],[{},1]],"sum_ns":20000006130}}"#,
                NR_SLOTS - 1
            )
        );
        assert_eq!(s.to_hist().unwrap(), h);
        assert_eq!(s.count(), 5);
        assert_eq!(SparseHist::from(&Hist::empty()).slots, []);
    }

    #[test]
    fn damaged_slots_are_refused() {
        let bad = |slots: Vec<(u32, u64)>| SparseHist { slots, sum_ns: 0 }.to_hist();
        assert_eq!(
            bad(vec![(NR_SLOTS as u32, 1)]),
            Err(SparseError::Slot(NR_SLOTS as u32))
        );
        assert_eq!(bad(vec![(5, 1), (5, 1)]), Err(SparseError::Order(5)));
        assert_eq!(bad(vec![(7, 1), (3, 1)]), Err(SparseError::Order(3)));
        assert!(bad(vec![(3, u64::MAX), (7, u64::MAX)]).is_ok());
        assert!(serde_json::from_str::<SparseHist>(r#"{"slots":[[-1,2]]}"#).is_err());
    }

    proptest! {
        #[test]
        fn adding_sparse_is_adding_dense(
            a in prop::collection::vec(any::<u64>(), 0..200),
            b in prop::collection::vec(any::<u64>(), 0..200),
        ) {
            let (mut ha, mut hb) = (Hist::empty(), Hist::empty());
            a.iter().for_each(|&ns| ha.record(ns));
            b.iter().for_each(|&ns| hb.record(ns));
            let mut s = SparseHist::from(&ha);
            s.add(&SparseHist::from(&hb));
            ha.add(&hb);
            let back = s.to_hist().unwrap();
            prop_assert_eq!(back.slots(), ha.slots());
            prop_assert_eq!(s.count(), (a.len() + b.len()) as u64);
        }

        #[test]
        fn round_trips_through_json(v in prop::collection::vec(any::<u64>(), 0..300)) {
            let mut h = Hist::empty();
            for ns in v {
                h.record(ns);
            }
            let s = SparseHist::from(&h);
            let back: SparseHist = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
            prop_assert_eq!(back.to_hist().unwrap(), h);
        }
    }

    fn hist(values: &[u64]) -> Hist {
        let mut h = Hist::empty();
        for &v in values {
            h.record(v);
        }
        h
    }

    #[test]
    fn compact_keeps_only_non_empty_slots_and_pools_back_exactly() {
        let a = hist(&[1_000_000; 90]);
        let b = hist(&[10_000_000; 10]);
        let (ca, cb) = (SparseHist::from(&a), SparseHist::from(&b));
        assert_eq!(ca.slots.len(), 1);
        assert_eq!((ca.count(), cb.count()), (90, 10));
        let mut p = Pool::default();
        p.add(&ca);
        p.add(&cb);
        let mut whole = a.clone();
        whole.add(&b);
        assert_eq!(p.hist(), whole);
        // The pooled p99 is the slow tenth's, which no average of the two
        // intervals' p99s (1 ms and 10 ms) would give.
        let pct = Percentiles::of(&p.hist()).unwrap();
        assert_eq!(pct.n, 100);
        assert!((pct.p99 - 10.0).abs() < 0.2, "{pct:?}");
        assert!((pct.p50 - 1.0).abs() < 0.02, "{pct:?}");
        assert_eq!(Pool::default().hist(), Hist::empty());
    }
}
