//! The kernel's per-I/O latency histograms as Prometheus histograms,
//! cumulative since the tracer started (`blktune exporter`), so that
//! `rate()` and `histogram_quantile(0.99, rate(...[5m]))` work as usual.
//!
//! The BPF histogram's slots are 1.6 % wide (64 per power of two, see
//! [`crate::latency::hist`]); a bucket per slot would be 1,500 series per
//! device, op and span. The buckets here are a subset of the slot edges:
//! `per_octave` bounds per power of two (1, 2, 4, 8, 16, 32 or 64), from
//! [`LOWEST_EXP`] (4.1 µs) to [`hist::MAX_EXP`] + 1 (17.2 s). Every bound is
//! exactly the edge of a kernel slot, so each slot lies whole inside one
//! bucket and the bucket counts are exact sums of the kernel's counts, never
//! a re-binning guess; `histogram_quantile` then interpolates inside a
//! bucket of `1/per_octave` of a power of two (at the default 2 per octave:
//! 41 % wide on average, at 4: 19 %), which is the resolution at which it
//! agrees with `watch`'s p99.

use super::{DeviceLabels, Exposition, Kind, LastLabel, number};
use crate::latency::hist::{self, Hist, slot_bounds};

/// The lowest bound is 2^12 ns (4.1 µs): faster I/O all counts there.
pub const LOWEST_EXP: u32 = 12;

/// The bucket densities allowed: divisors of the kernel's 64 slots per octave.
pub const PER_OCTAVE_CHOICES: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The default density: 2 bounds per power of two (45 buckets and +Inf, at
/// most 1.5 times as wide as the one below). At 4, histogram_quantile is
/// twice as fine and a host of 1000 busy devices costs its exporter more
/// than 1 % of a core (`benches/RESULTS.md`), and Prometheus twice the series.
pub const DEFAULT_PER_OCTAVE: u32 = 2;

/// The family's name.
pub const NAME: &str = "blktune_io_latency_seconds";

/// The bucket bounds in ns, ascending (without +Inf), each a kernel slot edge.
pub fn bounds_ns(per_octave: u32) -> Vec<u64> {
    let subs = 1u64 << hist::SUB_BITS;
    let per = u64::from(per_octave.clamp(1, 64));
    let mut out = Vec::new();
    for e in LOWEST_EXP..=hist::MAX_EXP {
        let width = 1u64 << (e - hist::SUB_BITS);
        for k in 0..per {
            out.push((1u64 << e) + k * (subs / per) * width);
        }
    }
    out.push(1u64 << (hist::MAX_EXP + 1));
    out
}

/// The bucket bounds of a density, and for each how many kernel slots lie
/// whole below it: worked out once per scrape, so that a histogram's buckets
/// are one pass of additions over its slots.
#[derive(Debug, Clone)]
pub struct Buckets {
    bounds: Vec<u64>,
    /// Per bound: the slots (from slot 0) whose upper edge is at or below it.
    ends: Vec<usize>,
}

impl Buckets {
    /// The buckets of `per_octave` (see [`bounds_ns`]).
    pub fn new(per_octave: u32) -> Self {
        Self::of(bounds_ns(per_octave))
    }

    /// The buckets of `bounds` (ns, ascending).
    pub fn of(bounds: Vec<u64>) -> Self {
        // The upper edges of the slots that have one (all but the overflow).
        let edges: Vec<u64> = (0..hist::NR_SLOTS)
            .map_while(|s| slot_bounds(s).1)
            .collect();
        let ends = bounds
            .iter()
            .map(|&b| edges.partition_point(|&hi| hi <= b))
            .collect();
        Self { bounds, ends }
    }

    /// The bounds, ns.
    pub fn bounds(&self) -> &[u64] {
        &self.bounds
    }

    /// Cumulative counts of `hist`, one per bound (the count of every slot
    /// whose upper edge is at or below it), into `out`; returns the count of
    /// every slot, the +Inf bucket's (= [`Hist::count`]).
    pub fn cumulative_into(&self, hist: &Hist, out: &mut Vec<u64>) -> u64 {
        out.clear();
        let slots = hist.slots();
        let (mut cum, mut at) = (0u64, 0usize);
        for &end in &self.ends {
            let end = end.clamp(at, slots.len());
            cum = slots[at..end].iter().fold(cum, |a, &n| a.saturating_add(n));
            at = end;
            out.push(cum);
        }
        slots[at..].iter().fold(cum, |a, &n| a.saturating_add(n))
    }
}

/// One histogram to write: a device's op and span.
#[derive(Debug)]
pub struct Series<'a> {
    pub device: &'a DeviceLabels,
    pub op: &'static str,
    pub span: &'static str,
    pub hist: &'a Hist,
}

/// The family, with every series in `series`.
pub fn render(out: &mut Exposition, series: &[Series<'_>], per_octave: u32) {
    out.family(
        NAME,
        Kind::Histogram,
        "I/O latency as the kernel measured it (span total: from start, what r_await averages; device: from issue), cumulative since the tracer started.",
    );
    let buckets = Buckets::new(per_octave);
    let les: Vec<String> = buckets
        .bounds()
        .iter()
        .map(|&ns| number(ns as f64 / 1e9))
        .chain(std::iter::once("+Inf".to_owned()))
        .collect();
    let le = LastLabel::new("le", les.iter().map(String::as_str));
    let mut counts = Vec::with_capacity(les.len());
    let (bucket, count_name, sum) = (
        format!("{NAME}_bucket"),
        format!("{NAME}_count"),
        format!("{NAME}_sum"),
    );
    for s in series {
        let base = s.device.with(&[("op", s.op), ("span", s.span)]);
        let count = buckets.cumulative_into(s.hist, &mut counts);
        counts.push(count);
        out.samples_by_last_label(&bucket, &base, &le, counts.iter().copied());
        out.sample(&count_name, &base, count);
        out.sample(&sum, &base, number(s.hist.sum_ns() as f64 / 1e9));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bound_is_a_kernel_slot_edge() {
        for per in PER_OCTAVE_CHOICES {
            let b = bounds_ns(per);
            assert_eq!(
                b.len(),
                (hist::MAX_EXP - LOWEST_EXP + 1) as usize * per as usize + 1
            );
            assert!(b.windows(2).all(|w| w[0] < w[1]));
            for &ns in &b {
                // An edge: the slot of ns starts exactly at ns.
                assert_eq!(slot_bounds(hist::slot_of(ns)).0, ns, "{per}: {ns}");
            }
        }
        assert_eq!(bounds_ns(4)[..3], [4096, 5120, 6144]);
    }

    #[test]
    fn bucket_counts_are_exact_sums_of_slots() {
        let mut h = Hist::empty();
        for ns in [
            100,
            4095,
            4096,
            5119,
            5120,
            1_000_000,
            1_000_000,
            50_000_000_000,
        ] {
            h.record(ns);
        }
        let b = bounds_ns(4);
        let mut c = Vec::new();
        let count = Buckets::of(b.clone()).cumulative_into(&h, &mut c);
        assert_eq!(c.len(), b.len());
        // le=4096 ns: 100 and 4095 (4096 starts the next slot).
        assert_eq!(c[0], 2);
        // le=5120: also 4096 and 5119.
        assert_eq!(c[1], 4);
        assert_eq!(c[2], 5);
        // The 1 ms pair below the first bound above 1 ms, not below the one under it.
        let above = b.iter().position(|&x| x > 1_000_000).unwrap();
        assert_eq!(c[above], 7);
        assert_eq!(c[above - 1], 5);
        // The 50 s I/O is only in +Inf (count 8).
        assert_eq!(*c.last().unwrap(), 7);
        assert_eq!((h.count(), count), (8, 8));
        assert!(c.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn renders_buckets_count_and_sum() {
        let mut h = Hist::empty();
        h.record(2_000_000);
        let dev = DeviceLabels {
            device: "sda".into(),
            major: "8".into(),
            minor: "0".into(),
        };
        let mut out = Exposition::new();
        render(
            &mut out,
            &[Series {
                device: &dev,
                op: "read",
                span: "total",
                hist: &h,
            }],
            1,
        );
        let text = out.finish();
        let l = "device=\"sda\",major=\"8\",minor=\"0\",op=\"read\",span=\"total\"";
        assert!(text.contains("# TYPE blktune_io_latency_seconds histogram\n"));
        assert!(
            text.contains(&format!(
                "blktune_io_latency_seconds_bucket{{{l},le=\"0.000004096\"}} 0\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "blktune_io_latency_seconds_bucket{{{l},le=\"0.002097152\"}} 1\n"
            )),
            "{text}"
        );
        assert!(text.contains(&format!(
            "blktune_io_latency_seconds_bucket{{{l},le=\"+Inf\"}} 1\n"
        )));
        assert!(text.contains(&format!("blktune_io_latency_seconds_count{{{l}}} 1\n")));
        assert!(text.contains(&format!("blktune_io_latency_seconds_sum{{{l}}} 0.002\n")));
    }
}
