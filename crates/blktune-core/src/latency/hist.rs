//! The kernel histogram's bucket layout and its arithmetic, as pure functions.
//!
//! Latencies are counted in nanoseconds in log-linear slots (the layout of
//! `bpf/latency.bpf.c`, which a test below reads): slot 0 holds everything
//! under 2^10 ns (1.02 µs); then every power of two up to 2^34 ns (17.2 s) is
//! split into 64 equal slots, so a slot spans at most 1/64 (1.6 %) of the
//! values in it; the last slot holds anything slower. The map keeps
//! cumulative counts: an interval is the difference of two reads, a window is
//! the sum of its intervals (never an average of their percentiles).

use std::fmt;

/// Sub-slots per power of two, as a power of two.
pub const SUB_BITS: u32 = 6;
const SUBS: usize = 1 << SUB_BITS;
/// Slot 0 holds latencies below 2^MIN_EXP ns.
pub const MIN_EXP: u32 = 10;
/// The highest power of two with its own sub-slots (up to 2^(MAX_EXP+1) ns).
pub const MAX_EXP: u32 = 33;
/// Underflow, the log-linear slots, overflow.
pub const NR_SLOTS: usize = 2 + (MAX_EXP - MIN_EXP + 1) as usize * SUBS;
/// A span's histogram as the kernel keeps it: the slots, then the sum of the
/// latencies in ns.
pub const VALUE_LEN: usize = NR_SLOTS + 1;
/// A map value: the total span's histogram, then the device span's (one
/// lookup per I/O finds both).
pub const SPANS_LEN: usize = 2 * VALUE_LEN;

/// The slot of a latency in ns (the kernel's `slot_of`).
pub fn slot_of(ns: u64) -> usize {
    if ns < 1 << MIN_EXP {
        return 0;
    }
    if ns >> (MAX_EXP + 1) != 0 {
        return NR_SLOTS - 1;
    }
    let e = 63 - ns.leading_zeros();
    let sub = (ns >> (e - SUB_BITS)) as usize & (SUBS - 1);
    1 + (e - MIN_EXP) as usize * SUBS + sub
}

/// The latencies (ns) a slot holds: `lo..hi`, with no `hi` for the last slot.
pub fn slot_bounds(slot: usize) -> (u64, Option<u64>) {
    match slot {
        0 => (0, Some(1 << MIN_EXP)),
        s if s >= NR_SLOTS - 1 => (1 << (MAX_EXP + 1), None),
        s => {
            let j = s - 1;
            let e = MIN_EXP + (j / SUBS) as u32;
            let width = 1u64 << (e - SUB_BITS);
            let lo = (1u64 << e) + (j % SUBS) as u64 * width;
            (lo, Some(lo + width))
        }
    }
}

/// A cumulative reading went backwards: the histogram was re-created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("histogram reset")]
pub struct Reset;

/// Counts of latencies per slot, and their sum in ns.
#[derive(Clone, PartialEq, Eq)]
pub struct Hist {
    slots: Box<[u64]>,
    sum_ns: u64,
}

impl fmt::Debug for Hist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // 1538 slots would drown any assertion message.
        f.debug_struct("Hist")
            .field("count", &self.count())
            .field("sum_ns", &self.sum_ns)
            .field("p50_ns", &self.quantile_ns(0.5))
            .field("max_ns", &self.max_ns())
            .finish()
    }
}

impl Default for Hist {
    fn default() -> Self {
        Self::empty()
    }
}

impl Hist {
    /// No I/O.
    pub fn empty() -> Self {
        Self {
            slots: vec![0; NR_SLOTS].into_boxed_slice(),
            sum_ns: 0,
        }
    }

    /// A map value as the kernel stores it: `NR_SLOTS` counts, then the sum.
    pub fn from_value(value: &[u64]) -> Option<Self> {
        let (sum, slots) = value.split_last()?;
        (slots.len() == NR_SLOTS).then(|| Self {
            slots: slots.into(),
            sum_ns: *sum,
        })
    }

    /// Count one latency, as the kernel does (the sum wraps like its atomic add).
    pub fn record(&mut self, ns: u64) {
        self.slots[slot_of(ns)] += 1;
        self.sum_ns = self.sum_ns.wrapping_add(ns);
    }

    /// The counts per slot.
    pub fn slots(&self) -> &[u64] {
        &self.slots
    }

    /// Number of I/Os.
    pub fn count(&self) -> u64 {
        self.slots.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }

    /// No I/O at all?
    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(|&c| c == 0)
    }

    /// Sum of the latencies, ns (wraps modulo 2^64 in a cumulative reading).
    pub fn sum_ns(&self) -> u64 {
        self.sum_ns
    }

    /// Mean latency in ns, exact up to the sum's wrap (comparable with r_await).
    pub fn mean_ns(&self) -> Option<f64> {
        let n = self.count();
        (n > 0).then(|| self.sum_ns as f64 / n as f64)
    }

    /// Pool another histogram into this one (a window is the sum of its intervals).
    pub fn add(&mut self, other: &Hist) {
        for (a, &b) in self.slots.iter_mut().zip(other.slots.iter()) {
            *a = a.saturating_add(b);
        }
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
    }

    /// Add another cumulative reading kept apart (the program's two maps
    /// of one disk): like [`Hist::add`], but the sum adds modulo 2^64, as
    /// the kernel's wraps, so that [`Hist::since`] stays exact across a wrap.
    pub fn add_reading(&mut self, other: &Hist) {
        for (a, &b) in self.slots.iter_mut().zip(other.slots.iter()) {
            *a = a.saturating_add(b);
        }
        self.sum_ns = self.sum_ns.wrapping_add(other.sum_ns);
    }

    /// What happened between an earlier cumulative reading and this one.
    ///
    /// Counts only grow; one that shrank means the histogram was re-created
    /// (a u64 count cannot wrap: 584 000 years at a million I/Os per second).
    /// The sum of nanoseconds can wrap (in weeks at a million slow I/Os per
    /// second), so it is subtracted modulo 2^64.
    pub fn since(&self, earlier: &Hist) -> Result<Hist, Reset> {
        let mut slots = vec![0; NR_SLOTS].into_boxed_slice();
        for ((d, &now), &then) in slots
            .iter_mut()
            .zip(self.slots.iter())
            .zip(earlier.slots.iter())
        {
            *d = now.checked_sub(then).ok_or(Reset)?;
        }
        Ok(Hist {
            slots,
            sum_ns: self.sum_ns.wrapping_sub(earlier.sum_ns),
        })
    }

    /// The latency (ns) below which a fraction `quantile` (0 to 1) of the I/Os lie,
    /// interpolated linearly inside its slot; `None` without I/O.
    ///
    /// The I/O of rank ⌈q·n⌉ lies in the slot the rank q·n falls in, so the
    /// answer is off by at most one slot's width (1.6 %) from the exact one.
    pub fn quantile_ns(&self, quantile: f64) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = quantile.clamp(0.0, 1.0) * n as f64;
        let mut below = 0u64;
        let mut last = 0;
        for (i, &c) in self.slots.iter().enumerate() {
            if c == 0 {
                continue;
            }
            last = i;
            if (below + c) as f64 >= rank {
                return Some(interpolate(i, (rank - below as f64) / c as f64));
            }
            below += c;
        }
        // Only float rounding gets here: the top of the highest slot.
        Some(interpolate(last, 1.0))
    }

    /// The top of the highest slot with an I/O (at most 1.6 % above the
    /// slowest I/O; the bottom of the overflow slot when that is the one).
    pub fn max_ns(&self) -> Option<f64> {
        self.quantile_ns(1.0)
    }
}

/// The value a fraction `frac` of the way through slot `index`.
fn interpolate(index: usize, frac: f64) -> f64 {
    match slot_bounds(index) {
        (lo, Some(hi)) => lo as f64 + frac.clamp(0.0, 1.0) * (hi - lo) as f64,
        (lo, None) => lo as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hist_of(values: &[u64]) -> Hist {
        let mut h = Hist::empty();
        for &v in values {
            h.record(v);
        }
        h
    }

    /// The BPF program's defines, so the two layouts cannot drift apart.
    #[test]
    fn layout_matches_the_bpf_program() {
        let define = |name: &str| -> u32 {
            let v = super::super::bpf_define(name);
            v.parse()
                .unwrap_or_else(|_| panic!("#define {name} {v}: not a number"))
        };
        assert_eq!(define("SUB_BITS"), SUB_BITS);
        assert_eq!(define("MIN_EXP"), MIN_EXP);
        assert_eq!(define("MAX_EXP"), MAX_EXP);
        // The tracer splits a map value at VALUE_LEN: total first, then device.
        assert_eq!(define("SPAN_TOTAL"), 0);
        assert_eq!(define("SPAN_DEVICE"), 1);
        assert_eq!(super::super::bpf_define("SPANS_LEN"), "(2 * VALUE_LEN)");
    }

    /// The program's own `slot_of` (branch-free, unlike this one), compiled
    /// for the host with the system's C compiler (Rust links with it, so it
    /// is there wherever this builds), slots every power of two and its
    /// neighbours and a spread of other latencies as this module does.
    #[test]
    fn the_programs_slot_of_is_this_one() {
        let src = include_str!("../../bpf/latency.bpf.c");
        let part = |from: &str, to: &str| {
            let at = src.find(from).expect("begin marker") + from.len();
            &src[at..at + src[at..].find(to).expect("end marker")]
        };
        let code = part("/* slot_of, from here", "/* slot_of: end */");
        let defines: String = src
            .lines()
            .filter(|l| l.starts_with("#define "))
            .map(|l| format!("{l}\n"))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("slot_of.c");
        std::fs::write(
            &c,
            format!(
                "#include <stdio.h>\n#include <stdint.h>\ntypedef uint64_t __u64;\ntypedef uint32_t __u32;\n\
                 #define __always_inline inline\n{defines}\n/* {code}\n\
                 int main(void) {{ unsigned long long v; \
                 while (scanf(\"%llu\", &v) == 1) printf(\"%llu\\n\", \
                 (unsigned long long)slot_of(v)); return 0; }}\n"
            ),
        )
        .unwrap();
        let bin = dir.path().join("slot_of");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let built = std::process::Command::new(&cc)
            .args(["-O2", "-o"])
            .arg(&bin)
            .arg(&c)
            .status()
            .unwrap_or_else(|e| panic!("{cc}: {e}"));
        assert!(
            built.success(),
            "{cc} could not build the program's slot_of"
        );
        let mut values: Vec<u64> = (0..63)
            .flat_map(|e| {
                let p = 1u64 << e;
                [p - 1, p, p + 1]
            })
            .collect();
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..20_000 {
            // xorshift, then a random scale: latencies from ns to minutes.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 40 + 24));
        }
        let input: String = values.iter().map(|v| format!("{v}\n")).collect();
        let mut child = std::process::Command::new(&bin)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let slots: Vec<usize> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(slots.len(), values.len());
        for (v, got) in values.iter().zip(slots) {
            assert_eq!(got, slot_of(*v), "slot of {v} ns");
        }
    }

    #[test]
    fn bucket_boundaries() {
        assert_eq!(NR_SLOTS, 2 + 24 * 64);
        assert_eq!(slot_of(0), 0);
        assert_eq!(slot_of(1023), 0);
        assert_eq!(slot_of(1024), 1);
        assert_eq!(slot_bounds(1), (1024, Some(1040)));
        assert_eq!(slot_of(1039), 1);
        assert_eq!(slot_of(1040), 2);
        // 2048 starts the next power of two with twice the width.
        assert_eq!(slot_of(2047), 64);
        assert_eq!(slot_of(2048), 65);
        assert_eq!(slot_bounds(65), (2048, Some(2080)));
        // 1 ms and 10 s are inside the log-linear range.
        let (lo, hi) = slot_bounds(slot_of(1_000_000));
        assert!(lo <= 1_000_000 && 1_000_000 < hi.unwrap());
        assert!(slot_of(10_000_000_000) < NR_SLOTS - 1);
        assert_eq!(slot_of((1 << 34) - 1), NR_SLOTS - 2);
        assert_eq!(slot_bounds(NR_SLOTS - 2).1, Some(1 << 34));
        assert_eq!(slot_of(1 << 34), NR_SLOTS - 1);
        assert_eq!(slot_of(u64::MAX), NR_SLOTS - 1);
        assert_eq!(slot_bounds(NR_SLOTS - 1), (1 << 34, None));
    }

    #[test]
    fn percentile_interpolates_inside_a_slot() {
        // 100 I/Os in the slot [1024, 1040): p50 is halfway, max its top.
        let h = hist_of(&[1030; 100]);
        assert_eq!(h.quantile_ns(0.5), Some(1032.0));
        assert_eq!(h.quantile_ns(0.0), Some(1024.0));
        assert_eq!(h.max_ns(), Some(1040.0));
        // 90 fast and 10 slow: p90 is the top of the fast slot, p95 halfway
        // through the slow one.
        let mut v = vec![1030; 90];
        v.extend([2_050; 10]);
        let h = hist_of(&v);
        assert_eq!(h.quantile_ns(0.9), Some(1040.0));
        assert_eq!(h.quantile_ns(0.95), Some(2048.0 + 16.0));
        assert_eq!(h.count(), 100);
        assert_eq!(h.mean_ns(), Some((90.0 * 1030.0 + 10.0 * 2050.0) / 100.0));
    }

    #[test]
    fn overflow_reports_its_floor() {
        let h = hist_of(&[20_000_000_000]);
        assert_eq!(h.max_ns(), Some((1u64 << 34) as f64));
        assert_eq!(h.quantile_ns(0.5), Some((1u64 << 34) as f64));
    }

    #[test]
    fn empty_windows_have_no_percentiles() {
        let h = Hist::empty();
        assert!(h.is_empty());
        assert_eq!(h.count(), 0);
        assert_eq!(h.quantile_ns(0.99), None);
        assert_eq!(h.max_ns(), None);
        assert_eq!(h.mean_ns(), None);
        // An interval with no new I/O is empty too.
        let a = hist_of(&[5_000, 7_000]);
        assert!(a.since(&a).unwrap().is_empty());
    }

    #[test]
    fn difference_of_cumulative_readings() {
        let a = hist_of(&[5_000, 7_000]);
        let mut b = a.clone();
        b.record(1_000_000);
        let d = b.since(&a).unwrap();
        assert_eq!(d, hist_of(&[1_000_000]));
        // Re-created: a count went down.
        assert_eq!(hist_of(&[5_000]).since(&a), Err(Reset));
    }

    #[test]
    fn the_sum_may_wrap_but_counts_may_not() {
        let mut before =
            Hist::from_value(&[&[0; NR_SLOTS][..], &[u64::MAX - 10]].concat()).unwrap();
        before.slots[5] = 3;
        let mut after = before.clone();
        after.record(1_000); // the sum wraps past 2^64
        assert_eq!(after.sum_ns(), 989);
        let d = after.since(&before).unwrap();
        assert_eq!((d.count(), d.sum_ns()), (1, 1_000));
    }

    #[test]
    fn map_values_of_the_wrong_length_are_refused() {
        assert!(Hist::from_value(&[0; VALUE_LEN]).is_some());
        assert!(Hist::from_value(&[0; VALUE_LEN - 1]).is_none());
        assert!(Hist::from_value(&[]).is_none());
    }

    proptest! {
        #[test]
        fn every_value_lies_in_its_slot(v in any::<u64>()) {
            let s = slot_of(v);
            prop_assert!(s < NR_SLOTS);
            let (lo, hi) = slot_bounds(s);
            prop_assert!(lo <= v || s == 0);
            if let Some(hi) = hi {
                prop_assert!(v < hi);
                // 1.6 % resolution from 1 µs up.
                if s > 0 {
                    prop_assert!((hi - lo) as f64 <= lo as f64 / 64.0);
                }
            }
        }

        #[test]
        fn slots_grow_with_the_value(a in any::<u64>(), b in any::<u64>()) {
            prop_assert!(slot_of(a.min(b)) <= slot_of(a.max(b)));
        }

        #[test]
        fn percentiles_are_within_one_slot_of_the_exact_ones(
            mut v in prop::collection::vec(1_024u64..(1 << 34), 1..400),
            q in 0.0f64..=1.0,
        ) {
            let h = hist_of(&v);
            v.sort_unstable();
            let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
            let exact = v[rank - 1] as f64;
            let got = h.quantile_ns(q).unwrap();
            prop_assert!((got - exact).abs() <= exact / 64.0, "q {} got {} exact {}", q, got, exact);
        }

        #[test]
        fn percentiles_grow_with_q(v in prop::collection::vec(any::<u64>(), 1..200), a in 0.0f64..=1.0, b in 0.0f64..=1.0) {
            let h = hist_of(&v);
            let (lo, hi) = (a.min(b), a.max(b));
            prop_assert!(h.quantile_ns(lo).unwrap() <= h.quantile_ns(hi).unwrap());
            prop_assert!(h.quantile_ns(hi).unwrap() <= h.max_ns().unwrap());
        }

        #[test]
        fn pooling_is_recording_everything_in_one(
            a in prop::collection::vec(0u64..(1 << 36), 0..200),
            b in prop::collection::vec(0u64..(1 << 36), 0..200),
        ) {
            let mut pooled = hist_of(&a);
            pooled.add(&hist_of(&b));
            let all: Vec<u64> = a.iter().chain(&b).copied().collect();
            prop_assert_eq!(&pooled, &hist_of(&all));
            prop_assert_eq!(pooled.count(), all.len() as u64);
        }

        #[test]
        fn intervals_add_up_to_the_cumulative_reading(
            first in prop::collection::vec(any::<u64>(), 0..100),
            second in prop::collection::vec(any::<u64>(), 0..100),
        ) {
            let t1 = hist_of(&first);
            let mut t2 = t1.clone();
            for &v in &second {
                t2.record(v);
            }
            let d = t2.since(&t1).unwrap();
            prop_assert_eq!(&d, &hist_of(&second));
            // Pooling the first reading and the interval gives the second back
            // (sums compared modulo 2^64, as the kernel keeps them).
            let mut back = t1.clone();
            back.add(&d);
            prop_assert_eq!(back.slots(), t2.slots());
            prop_assert!(t2.since(&t2).unwrap().is_empty());
        }
    }
}
