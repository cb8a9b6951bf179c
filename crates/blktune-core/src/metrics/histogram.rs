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
//! bucket of `1/per_octave` of a power of two (at 4 per octave: 19 % wide on
//! average), which is the resolution at which it agrees with `watch`'s p99.

use super::{DeviceLabels, Exposition, Kind, number};
use crate::latency::hist::{self, Hist, slot_bounds};

/// The lowest bound is 2^12 ns (4.1 µs): faster I/O all counts there.
pub const LOWEST_EXP: u32 = 12;

/// The bucket densities allowed: divisors of the kernel's 64 slots per octave.
pub const PER_OCTAVE_CHOICES: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The default density: 4 bounds per power of two (89 buckets).
pub const DEFAULT_PER_OCTAVE: u32 = 4;

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

/// Cumulative bucket counts of `hist` for `bounds` (ns): the count of every
/// slot whose upper edge is at or below the bound.
pub fn buckets(hist: &Hist, bounds: &[u64]) -> Vec<u64> {
    let mut out = vec![0u64; bounds.len()];
    let mut b = 0;
    let mut cum = 0u64;
    for (slot, &n) in hist.slots().iter().enumerate() {
        let Some(hi) = slot_bounds(slot).1 else {
            break; // the overflow slot: only +Inf holds it
        };
        while b < bounds.len() && bounds[b] < hi {
            out[b] = cum;
            b += 1;
        }
        cum = cum.saturating_add(n);
    }
    for v in &mut out[b..] {
        *v = cum;
    }
    out
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
    let bounds = bounds_ns(per_octave);
    let les: Vec<String> = bounds.iter().map(|&ns| number(ns as f64 / 1e9)).collect();
    let (bucket, count_name, sum) = (
        format!("{NAME}_bucket"),
        format!("{NAME}_count"),
        format!("{NAME}_sum"),
    );
    for s in series {
        let base = s.device.with(&[("op", s.op), ("span", s.span)]);
        let count = s.hist.count();
        let finite = les.iter().map(String::as_str).zip(buckets(s.hist, &bounds));
        out.samples_by_last_label(
            &bucket,
            &base,
            "le",
            finite.chain(std::iter::once(("+Inf", count))),
        );
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
        let c = buckets(&h, &b);
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
        assert_eq!(h.count(), 8);
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
