//! The kernel's per-I/O latency as the TUI gets it: the live source's hook
//! on the tracer (one read of the BPF histograms per tick, right after the
//! diskstats sample, so both cover the same interval) and the message it
//! sends the app with each snapshot.
//!
//! Histograms travel and are kept sparse (only their non-empty slots), so
//! that the app can pool any window by summing them: percentiles of a
//! window are never averaged from the intervals' percentiles.

use blktune_core::latency::{DevId, Dir, Interval, Span, SparseHist, Unavailable};
use blktune_core::record::latency::{DeviceLat, LatencyFacts, parse_key};
use blktune_core::sampler::Snapshot;
use std::collections::BTreeMap;

/// The spans and directions the TUI shows (discards and flushes are left
/// to `watch --json`).
pub const KEPT: [(Span, Dir); 4] = [
    (Span::Total, Dir::Read),
    (Span::Device, Dir::Read),
    (Span::Total, Dir::Write),
    (Span::Device, Dir::Write),
];

/// One device's histograms of one interval.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeviceLatency {
    /// The device these I/Os belong to (a new one under the same name has another).
    pub diskseq: Option<u64>,
    /// Only the [`KEPT`] spans and directions that saw I/O.
    pub hists: BTreeMap<(Span, Dir), SparseHist>,
}

impl DeviceLatency {
    /// The histogram of a span and direction; `None` when it saw no I/O.
    pub fn get(&self, span: Span, dir: Dir) -> Option<&SparseHist> {
        self.hists.get(&(span, dir))
    }
}

/// What the kernel timed in one sample interval, per device.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySample {
    /// End of the interval (the snapshot's `t`).
    pub t: f64,
    /// Length of the interval in seconds.
    pub itv: f64,
    /// Every traced device (those with a blk-mq queue); a device without an
    /// entry did no I/O.
    pub devices: BTreeMap<String, DeviceLatency>,
    /// Completions of any device the kernel could not count in this
    /// interval ([`Interval::lost`]; a recording does not keep it: 0).
    pub lost: u64,
}

/// What the live source says about tracing.
#[derive(Debug, Clone, PartialEq)]
pub enum LatencyFeed {
    /// Tracing runs; samples follow the snapshots.
    Tracing,
    /// No tracing, and why in a few words.
    Unavailable(String),
    /// One interval's histograms.
    Sample(LatencySample),
    /// The issue program could not be attached (why): queues that do not
    /// time their issues themselves get no device span. Sent once.
    NoDeviceSpan(String),
}

/// The header's few words for why there are no percentiles.
pub fn reason(unavailable: &Unavailable) -> String {
    match unavailable {
        Unavailable::Disabled => "--no-bpf".into(),
        Unavailable::NotRoot => "not root".into(),
        Unavailable::NotLive => "fake tree".into(),
        Unavailable::NoBtf => "no BTF".into(),
        Unavailable::Lockdown(_) => "lockdown".into(),
        Unavailable::Load(_) => "BPF load failed".into(),
        Unavailable::Read(_) => "BPF read failed".into(),
    }
}

/// What the app is sent of a tracer's `interval` read right after the
/// snapshot `snapshot`: the [`KEPT`] histograms of each whole device of `snapshot` (an
/// earlier device under the same number is never taken for it). `None`
/// when `snapshot` has no rates.
pub fn sample_of(interval: &Interval, snapshot: &Snapshot) -> Option<LatencySample> {
    let itv = snapshot.interval?;
    let devices = snapshot
        .devices
        .iter()
        .filter(|d| d.size_bytes > 0)
        .filter_map(|d| {
            let id = DevId {
                major: d.major,
                minor: d.minor,
            };
            let di = interval.device(id, d.diskseq)?;
            let hists = KEPT
                .iter()
                .filter_map(|k| Some((*k, SparseHist::from(di.hists.get(k)?))))
                .filter(|(_, c)| c.count() > 0)
                .collect();
            Some((
                d.name.clone(),
                DeviceLatency {
                    diskseq: d.diskseq,
                    hists,
                },
            ))
        })
        .collect();
    Some(LatencySample {
        t: snapshot.t,
        itv,
        devices,
        lost: interval.lost,
    })
}

/// The same message from a recorded frame: the snapshot `snapshot` the player
/// rebuilt and the histograms recorded with it (`lat`, by device and key);
/// the diskseq is the recorded device's; `lost` its lost completions.
/// `None` when `snapshot` has no rates.
pub fn sample_of_recorded(
    snapshot: &Snapshot,
    lat: &BTreeMap<String, DeviceLat>,
    lost: u64,
) -> Option<LatencySample> {
    let itv = snapshot.interval?;
    let devices = lat
        .iter()
        .filter_map(|(name, keys)| {
            let d = snapshot.devices.iter().find(|d| &d.name == name)?;
            let hists = keys
                .iter()
                .filter_map(|(k, h)| Some((parse_key(k)?, h)))
                .filter(|(k, h)| KEPT.contains(k) && h.count() > 0)
                .map(|(k, h)| (k, h.clone()))
                .collect();
            Some((
                name.clone(),
                DeviceLatency {
                    diskseq: d.diskseq,
                    hists,
                },
            ))
        })
        .collect();
    Some(LatencySample {
        t: snapshot.t,
        itv,
        devices,
        lost,
    })
}

/// What a recording's header says about percentiles, as the live source
/// would say it: tracing, or why there are none (`not recorded`, with the
/// recorder's reason in its first few words).
pub fn recorded_feed(facts: Option<&LatencyFacts>) -> LatencyFeed {
    match facts {
        Some(f) if f.traced => LatencyFeed::Tracing,
        Some(f) => LatencyFeed::Unavailable(match f.unavailable.as_deref() {
            // `BPF load failed: <the loader's words>` → `BPF load failed`.
            Some(why) => {
                let short = why.split([':', '(']).next().unwrap_or(why).trim();
                format!("not recorded ({short})")
            }
            None => "not recorded".into(),
        }),
        None => LatencyFeed::Unavailable("not recorded".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_header_says_tracing_or_why_not_in_a_few_words() {
        let facts = |traced, why: Option<&str>| LatencyFacts {
            traced,
            unavailable: why.map(String::from),
        };
        assert_eq!(
            recorded_feed(Some(&facts(true, None))),
            LatencyFeed::Tracing
        );
        let off = |f: Option<&LatencyFacts>| match recorded_feed(f) {
            LatencyFeed::Unavailable(w) => w,
            other => panic!("{other:?}"),
        };
        assert_eq!(off(None), "not recorded");
        assert_eq!(off(Some(&facts(false, None))), "not recorded");
        assert_eq!(
            off(Some(&facts(false, Some("needs root")))),
            "not recorded (needs root)"
        );
        assert_eq!(
            off(Some(&facts(false, Some("BPF load failed: EPERM")))),
            "not recorded (BPF load failed)"
        );
        assert_eq!(
            off(Some(&facts(
                false,
                Some("no kernel BTF (/sys/kernel/btf/vmlinux)")
            ))),
            "not recorded (no kernel BTF)"
        );
    }

    #[test]
    fn reasons_are_a_few_words() {
        assert_eq!(reason(&Unavailable::NotRoot), "not root");
        assert_eq!(reason(&Unavailable::Disabled), "--no-bpf");
        assert_eq!(reason(&Unavailable::NoBtf), "no BTF");
        assert_eq!(reason(&Unavailable::Load("x".into())), "BPF load failed");
    }
}
