//! The program's maps as plain values: a map value's two spans, the fast
//! array's owned slots, the CPUs' counts, an fd's `fdinfo` field, and the
//! raw entries grouped by device (pure functions, tested in `tests.rs`).

use super::super::hist::{Hist, SPANS_LEN, VALUE_LEN};
use super::super::{DevId, DeviceHists, Span, parse_map_id};
use super::{FAST_OWNED, FAST_SLOTS};
use std::collections::BTreeMap;

/// The two spans' histograms of a map value (total first, as the program
/// lays them out), leaving out a span that saw no I/O (no total span on a
/// queue without statistics, no device span for I/O issued before the
/// program was attached).
pub(super) fn split_value(value: &[u64; SPANS_LEN]) -> impl Iterator<Item = (Span, Hist)> + '_ {
    [Span::Total, Span::Device]
        .into_iter()
        .zip(value.chunks_exact(VALUE_LEN))
        // An empty span is not copied into a histogram at all.
        .filter(|(_, v)| v[..VALUE_LEN - 1].iter().any(|&c| c != 0))
        .filter_map(|(span, v)| Some((span, Hist::from_value(v)?)))
}

/// The slots of `fast` that have an owner with its diskseq set, and not
/// `gone` (a bit per slot), with the owner's key as `hists` has it.
pub(super) fn fast_slots(
    owners: &[u64; 2 * FAST_SLOTS],
    gone: u64,
) -> impl Iterator<Item = (usize, [u64; 2])> + '_ {
    owners
        .chunks_exact(2)
        .enumerate()
        .filter(move |&(slot, o)| o[0] & FAST_OWNED != 0 && o[1] != 0 && gone & (1 << slot) == 0)
        .map(|(slot, o)| (slot, [o[0] & !FAST_OWNED, o[1]]))
}

/// A number field of an fd's `fdinfo` (`name:\t123`).
pub(super) fn fdinfo_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().parse().ok())?
    })
}

/// The CPUs' counts together, modulo 2^64 (as the interval's difference
/// is taken).
pub(super) fn sum_cpus(per_cpu: &[u64]) -> u64 {
    per_cpu.iter().fold(0, |a, &n| a.wrapping_add(n))
}

/// Group raw map entries by device, keeping only each device's newest
/// diskseq and adding up the entries of one key; also returns the keys of
/// the older ones (once each).
pub(super) fn group(
    raw: Vec<([u64; 2], Span, Hist)>,
) -> (BTreeMap<DevId, DeviceHists>, Vec<[u64; 2]>) {
    let mut newest: BTreeMap<DevId, u64> = BTreeMap::new();
    for (key, _, _) in &raw {
        if let Some((dev, _)) = parse_map_id(key[0]) {
            let s = newest.entry(dev).or_insert(key[1]);
            *s = (*s).max(key[1]);
        }
    }
    let mut out = BTreeMap::new();
    let mut stale = Vec::new();
    for (key, span, h) in raw {
        let Some((dev, dir)) = parse_map_id(key[0]) else {
            continue;
        };
        if newest.get(&dev) != Some(&key[1]) {
            if !stale.contains(&key) {
                stale.push(key);
            }
            continue;
        }
        let d = out.entry(dev).or_insert_with(|| DeviceHists {
            diskseq: key[1],
            hists: BTreeMap::new(),
        });
        // A disk's I/Os can be in both maps (`fast` and `hists`): added up.
        d.hists
            .entry((span, dir))
            .and_modify(|sum: &mut Hist| sum.add_reading(&h))
            .or_insert(h);
    }
    (out, stale)
}
