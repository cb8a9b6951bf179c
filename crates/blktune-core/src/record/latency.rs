//! The kernel's latency histograms in a recording: per sample, per whole
//! device, the histograms of the I/Os completed in the interval that sample
//! ends, by direction and span, each as [`SparseHist`] (only its non-empty
//! slots). Optional fields of format 1: older readers ignore them, and
//! older recordings simply have none.
//!
//! Replay pools them (sums the histograms of the intervals of a window), so
//! the percentiles it shows are the ones the live view would have computed
//! from the same intervals.

use crate::latency::hist::NR_SLOTS;
use crate::latency::{DeviceInterval, Dir, IoLatency, KernelFigures, Span, SparseHist};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One device's histograms of one interval, by key: `r`, `w`, `d`, `f`
/// (from the request's start to completion) and `r_dev`, `w_dev`, `d_dev`,
/// `f_dev` (on the device alone). Only the keys with an I/O.
pub type DeviceLat = BTreeMap<String, SparseHist>;

/// Whether the recorder timed I/O in the kernel (the header's `latency`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LatencyFacts {
    /// Samples carry `lat` histograms (a device without I/O has none).
    pub traced: bool,
    /// Why not, in a few words (`needs root`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// The key of a direction and span.
pub fn key(span: Span, dir: Dir) -> String {
    match span {
        Span::Total => dir.prefix().to_string(),
        Span::Device => format!("{}_dev", dir.prefix()),
    }
}

/// The direction and span of a key; `None` for an unknown one.
pub fn parse_key(k: &str) -> Option<(Span, Dir)> {
    let (p, span) = match k.strip_suffix("_dev") {
        Some(p) => (p, Span::Device),
        None => (k, Span::Total),
    };
    let dir = Dir::ALL.into_iter().find(|d| d.prefix() == p)?;
    Some((span, dir))
}

/// A device's interval as recorded (empty histograms left out).
pub fn of_interval(d: &DeviceInterval) -> DeviceLat {
    d.hists
        .iter()
        .filter(|(_, h)| !h.is_empty())
        .map(|(&(span, dir), h)| (key(span, dir), SparseHist::from(h)))
        .collect()
}

/// Is a stored device entry well formed (known keys, slots in range and order)?
pub fn check(lat: &DeviceLat) -> Result<(), String> {
    for (k, h) in lat {
        if parse_key(k).is_none() {
            return Err(format!(
                "unknown latency key '{}'",
                k.chars().take(16).collect::<String>()
            ));
        }
        if h.slots.len() > NR_SLOTS {
            return Err(format!(
                "{} latency slots (at most {NR_SLOTS})",
                h.slots.len()
            ));
        }
        h.to_hist().map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Histograms pooled over a window, for the reads and writes of both spans.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LatAcc {
    reads: SparseHist,
    writes: SparseHist,
    dev_reads: SparseHist,
    dev_writes: SparseHist,
    /// Some interval had histograms.
    any: bool,
}

impl LatAcc {
    /// Pool one interval of a device (`None`: not traced then).
    pub fn add(&mut self, lat: Option<&DeviceLat>) {
        let Some(lat) = lat else { return };
        self.any = true;
        for (k, h) in lat {
            let slot = match parse_key(k) {
                Some((Span::Total, Dir::Read)) => &mut self.reads,
                Some((Span::Total, Dir::Write)) => &mut self.writes,
                Some((Span::Device, Dir::Read)) => &mut self.dev_reads,
                Some((Span::Device, Dir::Write)) => &mut self.dev_writes,
                _ => continue,
            };
            slot.add(h);
        }
    }

    /// The pooled percentiles and counts; `None` when no interval was traced.
    pub fn figures(&self) -> Option<KernelFigures> {
        let of = |s: &SparseHist| s.to_hist().ok().as_ref().and_then(IoLatency::of);
        self.any.then(|| KernelFigures {
            reads: of(&self.reads),
            writes: of(&self.writes),
            dev_reads: of(&self.dev_reads),
            dev_writes: of(&self.dev_writes),
        })
    }
}

/// Pool `from` into `into`, device by device (samples merged into one frame).
pub fn merge(into: &mut BTreeMap<String, DeviceLat>, from: BTreeMap<String, DeviceLat>) {
    for (dev, lat) in from {
        let e = into.entry(dev).or_default();
        for (k, h) in lat {
            e.entry(k).or_default().add(&h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::{Hist, Percentiles};
    use crate::record::format::{
        ChangeRecord, ChangeSource, DeviceFacts, Header, HostFacts, Record, Sample,
    };
    use std::io::Write as _;

    /// `n` reads of `ms` each, and a few slow ones.
    fn reads(n: u64, ms: f64, slow: u64) -> Hist {
        let mut h = Hist::empty();
        for _ in 0..n {
            h.record((ms * 1e6) as u64);
        }
        for _ in 0..slow {
            h.record(40_000_000);
        }
        h
    }

    /// A recording of sda, samples at t = 1..=10 s, each with the
    /// histograms `hists[i]` of its interval; mq-deadline→kyber at 5.5 s.
    fn recording(
        dir: &std::path::Path,
        hists: &[Hist],
        traced: Option<bool>,
    ) -> std::path::PathBuf {
        recording_with_gaps(dir, hists, traced, &[], 0)
    }

    /// [`recording`] whose samples `gaps` (indices) could not be traced,
    /// and whose every sample lost `lost` completions.
    fn recording_with_gaps(
        dir: &std::path::Path,
        hists: &[Hist],
        traced: Option<bool>,
        gaps: &[usize],
        lost: u64,
    ) -> std::path::PathBuf {
        let path = dir.join("lat.ndjson");
        let mut f = std::fs::File::create(&path).unwrap();
        let mut line = |r: &Record| writeln!(f, "{}", serde_json::to_string(r).unwrap()).unwrap();
        line(&Record::Header(Header {
            version: 1,
            tool: "blktune test".into(),
            started_wall: 1.7e9,
            started: "2023-11-14T22:13:20Z".into(),
            interval_s: 1.0,
            host: HostFacts::default(),
            devices: vec![DeviceFacts {
                name: "sda".into(),
                major: 8,
                minor: 0,
                kind: crate::device::DeviceKind::Ssd,
                model: None,
                vendor: None,
                size_bytes: 1 << 30,
                rotational: Some(false),
                removable: false,
                read_only: false,
                partitions: vec![],
                holders: vec![],
                slaves: vec![],
                diskseq: Some(1),
                hw_queue_depth: None,
                stack: None,
            }],
            only: None,
            latency: traced.map(|traced| LatencyFacts {
                traced,
                unavailable: None,
            }),
        }));
        let mut total = 0;
        for (i, h) in hists.iter().enumerate() {
            let t = (i + 1) as f64;
            if i == 5 {
                line(&Record::Change(ChangeRecord {
                    t: 5.5,
                    device: "sda".into(),
                    label: "mq-deadline→kyber".into(),
                    source: ChangeSource::Observed,
                    before: Default::default(),
                    after: Default::default(),
                }));
            }
            total += h.count();
            let untraced = gaps.contains(&i);
            let lat = if traced == Some(true) && !h.is_empty() && !untraced {
                BTreeMap::from([(
                    "sda".to_string(),
                    BTreeMap::from([("r".to_string(), SparseHist::from(h))]),
                )])
            } else {
                BTreeMap::new()
            };
            line(&Record::Sample(Sample {
                t,
                wall: 1.7e9 + t,
                iowait_pct: None,
                cpu_busy_pct: None,
                psi_some_pct: None,
                disks: BTreeMap::from([(
                    "sda".to_string(),
                    vec![total, 0, total * 8, total, 0, 0, 0, 0, 0, t as u64 * 500, 0],
                )]),
                lat,
                lost,
                untraced,
                no_dev_span: None,
                psi: None,
                who: Default::default(),
            }));
        }
        path
    }

    #[test]
    fn a_replay_shows_the_percentiles_of_the_recorded_histograms_pooled() {
        let dir = tempfile::tempdir().unwrap();
        // Before the change: 4 ms with 2 % slow; after: 1 ms with 0.5 % slow.
        let hists: Vec<Hist> = (0..10)
            .map(|i| {
                if i < 5 {
                    reads(980, 4.0, 20)
                } else {
                    reads(995, 1.0, 5)
                }
            })
            .collect();
        let path = recording(dir.path(), &hists, Some(true));
        let (_, s) = crate::record::summarize_file(&path, None).unwrap();
        assert!(s.latency.as_ref().unwrap().traced);
        // What the live view pools: the intervals with statistics (the
        // first sample has none: nothing to compare it with).
        let pooled = |range: std::ops::Range<usize>| {
            let mut h = Hist::empty();
            for x in &hists[range] {
                h.add(x);
            }
            Percentiles::of(&h).unwrap()
        };
        let c = &s.changes[0];
        let before = c.latency_before.unwrap().reads.unwrap();
        let after = c.latency_after.unwrap().reads.unwrap();
        let (want_b, want_a) = (pooled(1..5), pooled(6..10));
        assert_eq!((before.n, before.p99), (want_b.n, Some(want_b.p99)));
        assert_eq!((after.n, after.p99), (want_a.n, Some(want_a.p99)));
        assert_eq!(before.p50, want_b.p50);
        assert!(before.p99.unwrap() > 30.0 && after.p99.unwrap() < 1.1);
        let whole = s.devices[0].latency.unwrap().reads.unwrap();
        assert_eq!(
            (whole.n, whole.p99),
            (pooled(1..10).n, Some(pooled(1..10).p99))
        );
        // Text and JSON carry them.
        let t = s.to_text();
        assert!(t.contains("latency   the kernel's histograms"), "{t}");
        assert!(t.contains(&format!("n={}", want_b.n)), "{t}");
        assert!(t.contains("kernel latency: reads p50"), "{t}");
        let r_p99 = t
            .lines()
            .find(|l| l.trim_start().starts_with("r_p99"))
            .unwrap();
        assert!(r_p99.trim_end().ends_with('%'), "{r_p99}");
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["changes"][0]["latency_before"]["reads"]["n"], want_b.n);
        assert_eq!(
            v["devices"][0]["latency"]["reads"]["p99"],
            whole.p99.unwrap()
        );
        assert!(v["changes"][0]["latency_after"]["writes"].is_null());
    }

    #[test]
    fn few_ios_show_a_count_and_old_recordings_have_no_latency() {
        let dir = tempfile::tempdir().unwrap();
        let hists: Vec<Hist> = (0..10).map(|_| reads(10, 2.0, 0)).collect();
        let path = recording(dir.path(), &hists, Some(true));
        let (_, s) = crate::record::summarize_file(&path, None).unwrap();
        let b = s.changes[0].latency_before.unwrap().reads.unwrap();
        assert_eq!((b.n, b.p99), (40, None));
        let t = s.to_text();
        let row = t
            .lines()
            .find(|l| l.trim_start().starts_with("r_p99"))
            .unwrap();
        assert!(
            row.contains("n=40") && row.trim_end().ends_with('-'),
            "{row}"
        );
        // Traced, but no I/O at all: known to be none (n=0), not unknown.
        let idle: Vec<Hist> = (0..10).map(|_| Hist::empty()).collect();
        let (_, s) =
            crate::record::summarize_file(&recording(dir.path(), &idle, Some(true)), None).unwrap();
        let k = s.changes[0].latency_before.unwrap();
        assert_eq!(k.reads, None);
        // A recording without histograms: no latency anywhere, said so.
        let (_, s) =
            crate::record::summarize_file(&recording(dir.path(), &hists, None), None).unwrap();
        assert!(s.latency.is_none() && s.devices[0].latency.is_none());
        assert!(s.changes[0].latency_before.is_none());
        assert!(
            s.to_text().contains("latency   not recorded"),
            "{}",
            s.to_text()
        );
    }

    /// Intervals the recorder could not trace are unknown, not idle: a
    /// window made only of them has no figures (not `n=0`), the pooled
    /// figures rest on the others, and the summary says how many there
    /// were and how many completions the kernel could not count.
    #[test]
    fn untraced_intervals_are_unknown_and_said_with_the_lost_count() {
        let dir = tempfile::tempdir().unwrap();
        let hists: Vec<Hist> = (0..10).map(|_| reads(500, 2.0, 0)).collect();
        // Samples 1-5 are the change's before window (the first has no rates).
        let path = recording_with_gaps(dir.path(), &hists, Some(true), &[1, 2, 3, 4, 7], 3);
        let (_, s) = crate::record::summarize_file(&path, None).unwrap();
        let c = &s.changes[0];
        assert!(c.latency_before.is_none(), "{:?}", c.latency_before);
        // After: the intervals wholly after the switch (7-10 s), 8 s untraced.
        assert_eq!(c.latency_after.unwrap().reads.unwrap().n, 3 * 500);
        assert_eq!(s.devices[0].latency.unwrap().reads.unwrap().n, 4 * 500);
        assert_eq!((s.latency_untraced, s.latency_lost), (5, 30));
        let t = s.to_text();
        assert!(t.contains("5 interval(s) could not be read"), "{t}");
        assert!(t.contains("30 completion(s) no histogram counted"), "{t}");
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            (v["latency_untraced"].as_u64(), v["latency_lost"].as_u64()),
            (Some(5), Some(30))
        );
        // Every interval traced: nothing said, nothing in the JSON.
        let path = recording(dir.path(), &hists, Some(true));
        let (_, s) = crate::record::summarize_file(&path, None).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert!(v.get("latency_untraced").is_none() && v.get("latency_lost").is_none());
        assert!(s.to_text().contains("histograms of every interval"));
    }

    #[test]
    fn keys_round_trip_and_unknown_ones_are_refused() {
        for span in [Span::Total, Span::Device] {
            for dir in Dir::ALL {
                assert_eq!(parse_key(&key(span, dir)), Some((span, dir)));
            }
        }
        assert_eq!(key(Span::Device, Dir::Write), "w_dev");
        assert_eq!(parse_key("x"), None);
        assert_eq!(parse_key("r_dev_dev"), None);
        let bad: DeviceLat = BTreeMap::from([("q".to_string(), SparseHist::default())]);
        assert!(check(&bad).unwrap_err().contains("unknown latency key 'q'"));
        let bad: DeviceLat = BTreeMap::from([(
            "r".to_string(),
            SparseHist {
                slots: vec![(99_999, 1)],
                sum_ns: 0,
            },
        )]);
        assert!(check(&bad).unwrap_err().contains("out of range"));
    }
}
