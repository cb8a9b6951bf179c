//! The summary of a recording: devices, duration, and every change with the
//! figures before and after it (`blktune replay FILE --summary`).
//!
//! The figures come from replaying the whole recording through [`Player`]
//! into per-device [`DeviceHistory`]s and calling [`history::compare`], the
//! same comparison the live before/after panel uses.

use super::SHOWN_NOTES;
use super::format::{ChangeSource, DeviceFacts, HostFacts, Record};
use super::replay::{Player, Recording};
use crate::device::{DeviceKind, human_size};
use crate::history::{self, DeviceHistory, Means, Point, pct_change};
use crate::tuner::Settings;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// How far back "before" reaches at most (seconds).
pub const BEFORE_WINDOW: f64 = 60.0;

/// The summary, as printed by `--summary --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub file: String,
    pub version: u32,
    pub tool: String,
    pub host: HostFacts,
    /// The recording was made on a host with another name than this one.
    pub other_host: bool,
    pub started: String,
    pub duration_s: f64,
    pub samples: usize,
    pub interval_s: f64,
    /// `duration`, `signal`, `stopped`; `None` when the file has no end record.
    pub end_reason: Option<String>,
    pub devices: Vec<DeviceSummary>,
    pub changes: Vec<ChangeSummary>,
    /// Problems met while reading.
    pub notes: Vec<String>,
}

/// One recorded device.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceSummary {
    pub name: String,
    pub kind: DeviceKind,
    pub model: Option<String>,
    pub size_bytes: u64,
    pub scheduler_first: Option<String>,
    pub scheduler_last: Option<String>,
    pub changes: usize,
}

/// One change with its before/after figures.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeSummary {
    pub device: String,
    /// Seconds since the start of the recording.
    pub t: f64,
    pub label: String,
    pub source: ChangeSource,
    pub settings_before: Settings,
    pub settings_after: Settings,
    /// Means over up to [`BEFORE_WINDOW`] seconds before (since the previous change).
    pub before: Option<Means>,
    /// Means from the change to the next change of the device (or the end).
    pub after: Option<Means>,
    /// Percent change of each figure, when both sides have data and before is not 0.
    pub pct: BTreeMap<String, Option<f64>>,
}

/// The figures compared, as (key, label, unit, getter).
type Figure = (&'static str, &'static str, &'static str, fn(&Means) -> f64);

const FIGURES: [Figure; 6] = [
    ("r_await", "r_await", "ms", |m| m.r_await),
    ("w_await", "w_await", "ms", |m| m.w_await),
    ("r/s", "r/s", "", |m| m.r_s),
    ("w/s", "w/s", "", |m| m.w_s),
    ("aqu-sz", "aqu-sz", "", |m| m.aqu_sz),
    ("util", "%util", "%", |m| m.util),
];

/// Replay the whole recording and summarise it. `local_host` is this
/// machine's host name, to say whether the file comes from elsewhere.
pub fn summarize(rec: &Arc<Recording>, local_host: Option<&str>) -> Summary {
    let mut hist: BTreeMap<String, DeviceHistory> = BTreeMap::new();
    let mut first_sched: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut last_sched: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut notes = rec.notes.clone();
    // Counter problems per device and sample: the first few, then a count.
    let (mut shown, mut unshown) = (0, 0usize);
    for frame in Player::new(Arc::clone(rec)) {
        let s = &frame.snapshot;
        for w in &frame.snapshot.warnings {
            if shown < SHOWN_NOTES {
                notes.push(w.clone());
                shown += 1;
            } else {
                unshown += 1;
            }
        }
        for d in s.devices.iter() {
            let active = d.queue.scheduler.as_ref().map(|x| x.active.clone());
            first_sched
                .entry(d.name.clone())
                .or_insert_with(|| active.clone());
            last_sched.insert(d.name.clone(), active);
        }
        for (name, st) in &s.stats {
            hist.entry(name.clone()).or_default().push(
                Point {
                    t: s.t,
                    itv: s.interval.unwrap_or(0.0),
                    stats: st.stats.ok(),
                },
                f64::INFINITY,
            );
        }
    }
    if unshown > 0 {
        notes.push(format!(
            "{}: {unshown} more device sample(s) with bad counters, left out",
            rec.name
        ));
    }
    let changes: Vec<_> = rec.changes().collect();
    let empty = DeviceHistory::default();
    let summaries: Vec<ChangeSummary> = changes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let prev = changes[..i]
                .iter()
                .rev()
                .find(|p| p.device == c.device)
                .map(|p| p.t);
            let next = changes[i + 1..]
                .iter()
                .find(|n| n.device == c.device)
                .map(|n| n.t);
            let h = hist.get(&c.device).unwrap_or(&empty);
            let cmp = history::compare(h, c.t, BEFORE_WINDOW, prev, next);
            let pct = FIGURES
                .iter()
                .map(|(key, _, _, get)| {
                    let p = match (&cmp.before, &cmp.after) {
                        (Some(b), Some(a)) => pct_change(get(b), get(a)),
                        _ => None,
                    };
                    ((*key).to_owned(), p)
                })
                .collect();
            ChangeSummary {
                device: c.device.clone(),
                t: c.t,
                label: c.label.clone(),
                source: c.source,
                settings_before: c.before.clone(),
                settings_after: c.after.clone(),
                before: cmp.before,
                after: cmp.after,
                pct,
            }
        })
        .collect();
    let header = &rec.header;
    // Devices from the header, then any that were plugged in later.
    let mut facts: Vec<&DeviceFacts> = Vec::new();
    let later = rec.records.iter().filter_map(|r| match r {
        Record::Devices(d) => Some(&d.devices),
        _ => None,
    });
    for d in std::iter::once(&header.devices).chain(later).flatten() {
        if !facts.iter().any(|f| f.name == d.name) {
            facts.push(d);
        }
    }
    let devices = facts
        .into_iter()
        .map(|d| DeviceSummary {
            name: d.name.clone(),
            kind: d.kind,
            model: d.model.clone(),
            size_bytes: d.size_bytes,
            scheduler_first: first_sched.get(&d.name).cloned().flatten(),
            scheduler_last: last_sched.get(&d.name).cloned().flatten(),
            changes: changes.iter().filter(|c| c.device == d.name).count(),
        })
        .collect();
    Summary {
        file: rec.name.clone(),
        version: header.version,
        tool: header.tool.clone(),
        host: header.host.clone(),
        other_host: local_host.is_some_and(|h| rec.is_from_other_host(h)),
        started: header.started.clone(),
        duration_s: rec.duration(),
        samples: rec.samples(),
        interval_s: header.interval_s,
        end_reason: rec.end().map(|e| e.reason.clone()),
        devices,
        changes: summaries,
        notes,
    }
}

/// `0.5s`, `29.8s`, `1m30.0s`.
fn secs(s: f64) -> String {
    let s = s.max(0.0);
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        format!("{}m{:04.1}s", (s / 60.0).floor(), s % 60.0)
    }
}

fn fig(v: f64, unit: &str) -> String {
    match unit {
        "" => format!("{v:.1}"),
        "%" => format!("{v:.1}%"),
        u => format!("{v:.2} {u}"),
    }
}

impl Summary {
    /// The text form (notes are left to the caller, for stderr).
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let h = &self.host;
        let _ = writeln!(
            o,
            "Recording {} (format {}, {})",
            self.file, self.version, self.tool
        );
        let _ = writeln!(
            o,
            "  host      {}, Linux {}{}",
            if h.hostname.is_empty() {
                "?"
            } else {
                &h.hostname
            },
            h.kernel,
            if self.other_host {
                " (recorded on another host)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            o,
            "  started   {}, lasted {}, {} samples every {}, {}",
            self.started,
            secs(self.duration_s),
            self.samples,
            secs(self.interval_s),
            match &self.end_reason {
                Some(r) => format!("ended ({r})"),
                None => "no end record".to_owned(),
            }
        );
        for d in &self.devices {
            let sched = match (&d.scheduler_first, &d.scheduler_last) {
                (Some(a), Some(b)) if a != b => format!("{a} at start, {b} at end"),
                (Some(a), _) => a.clone(),
                _ => "no scheduler".to_owned(),
            };
            let _ = writeln!(
                o,
                "  device    {:<10} {:<6} {:>6}  {}  {}",
                d.name,
                d.kind.label(),
                human_size(d.size_bytes),
                d.model.as_deref().unwrap_or("-"),
                sched
            );
        }
        let _ = writeln!(o);
        if self.changes.is_empty() {
            let _ = writeln!(o, "No changes were recorded.");
        } else {
            let _ = writeln!(o, "{} change(s):", self.changes.len());
        }
        for c in &self.changes {
            let how = match c.source {
                ChangeSource::Blktune => "made in blktune",
                ChangeSource::Observed => "seen in sysfs",
            };
            let _ = writeln!(o, "  {} at +{}: {}  ({how})", c.device, secs(c.t), c.label);
            let side = |m: &Option<Means>| m.map_or("no data".to_owned(), |m| secs(m.secs));
            let _ = writeln!(
                o,
                "    {:<9} {:>16} {:>16} {:>9}",
                "",
                format!("before {}", side(&c.before)),
                format!("after {}", side(&c.after)),
                "change"
            );
            if let (Some(b), Some(a)) = (&c.before, &c.after) {
                for (key, label, unit, get) in FIGURES {
                    let pct = c.pct.get(key).copied().flatten();
                    let _ = writeln!(
                        o,
                        "    {:<9} {:>16} {:>16} {:>9}",
                        label,
                        fig(get(b), unit),
                        fig(get(a), unit),
                        pct.map_or("-".to_owned(), |p| format!("{p:+.1}%"))
                    );
                }
            }
        }
        o
    }
}
