//! The summary of a recording: devices, duration, and every change with the
//! figures before and after it (`blktune replay FILE --summary`).
//!
//! The figures come from the same frames the [`Player`](super::Player)
//! makes, compared as [`history::compare`] compares a live change (the
//! before/after panel): before, up to [`BEFORE_WINDOW`] seconds (since the
//! device's previous change) that ended by the change; after, from the
//! change to the device's next change. It is computed in one pass, so a
//! pipe works and memory stays bounded however long the recording: a short
//! ring of recent points per device, and one [`MeansAcc`] per side of each
//! change, fed as the points come.

use super::RecordError;
use super::SHOWN_NOTES;
use super::check::MAX_DEVICES;
use super::format::{ChangeRecord, ChangeSource, HostFacts, Record};
use super::latency::{DeviceLat, LatAcc, LatencyFacts};
use super::reader::RecordReader;
use super::recording::{MAX_CHANGES, Recording};
use super::replay::{Frame, Frames};
use crate::compare::{self, Answer, Effect, Metric, Round, Sample};
use crate::device::{DeviceKind, human_size};
use crate::history::{
    self, Delta, MIN_INTERVALS, MIN_IOS_FOR_PCT, Means, MeansAcc, NOISE_FLOOR_PCT, Point,
    pct_change,
};
use crate::latency::{IoLatency, KernelFigures};
use crate::natural::natural_cmp;
use crate::tuner::Wanted;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::path::Path;

/// How far back "before" reaches at most (seconds).
pub const BEFORE_WINDOW: f64 = 60.0;

/// Changes whose windows also pool the kernel's latency histograms (each
/// side holds up to four histograms of up to 1538 slots).
pub const LATENCY_CHANGES: usize = 100;

/// Recent points kept for all devices together (each about 200 bytes); a
/// device's ring holds at most its share, and two windows of time.
const RING_BUDGET: usize = 1 << 18;

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
    /// Whether the kernel's latency histograms were recorded (`null`: a
    /// recording from before they existed).
    pub latency: Option<LatencyFacts>,
    /// In a traced recording, intervals whose histograms could not be read
    /// (the percentiles rest on the others).
    #[serde(skip_serializing_if = "is_zero")]
    pub latency_untraced: usize,
    /// Completions no histogram counted (the kernel had no room), of any
    /// device: the counts may be short by as many.
    #[serde(skip_serializing_if = "is_zero")]
    pub latency_lost: u64,
    /// The kernel's issue program could not be attached while recording, in
    /// the recorder's words: no device span from then on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_no_dev_span: Option<String>,
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
    /// The kernel's percentiles of all its I/O in the recording, pooled
    /// (`null`: not recorded).
    pub latency: Option<KernelFigures>,
}

/// One change with its before/after figures.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeSummary {
    pub device: String,
    /// Seconds since the start of the recording.
    pub t: f64,
    pub label: String,
    pub source: ChangeSource,
    pub settings_before: Wanted,
    pub settings_after: Wanted,
    /// Means over up to [`BEFORE_WINDOW`] seconds before (since the previous change).
    pub before: Option<Means>,
    /// Means from the change to the next change of the device (or the end).
    pub after: Option<Means>,
    /// Percent change of each figure, only when it is more than noise
    /// ([`history::delta`]): both sides have data, at least
    /// [`MIN_INTERVALS`] intervals each, an await from at least
    /// [`MIN_IOS_FOR_PCT`] I/Os each, before is not 0, and the move is
    /// above the noise floor and outside either window's spread.
    pub pct: BTreeMap<String, Option<f64>>,
    /// How each figure moved, as the before/after panel says it: `-42%`,
    /// `~+3%` (inside the noise), `short` (a window under
    /// [`MIN_INTERVALS`] intervals), `few` (an await from under
    /// [`MIN_IOS_FOR_PCT`] I/Os), `n/a` (before was 0); absent without
    /// both sides.
    pub change: BTreeMap<String, String>,
    /// The kernel's percentiles of each window, its intervals' histograms
    /// pooled (`null`: not recorded, or past the first [`LATENCY_CHANGES`]).
    pub latency_before: Option<KernelFigures>,
    pub latency_after: Option<KernelFigures>,
    /// What the comparison engine makes of the two windows: one pair of
    /// rounds, so each figure's change has no interval and the answer is
    /// always undecided ([`crate::compare`]); `null` without both windows.
    pub verdict: Option<OneSwitch>,
}

/// The engine's view of one switch: one before, one after.
#[derive(Debug, Clone, Serialize)]
pub struct OneSwitch {
    /// Always `undecided`: one before and one after give no interval.
    pub answer: Answer,
    /// Each figure both windows have, in the engine's order.
    pub effects: Vec<Effect>,
}

impl OneSwitch {
    /// The two windows as the engine's rounds (before: configuration 0,
    /// after: 1, one block): awaits where the direction had I/O, rates, and
    /// the kernel's pooled percentiles with their counts.
    pub fn of(
        before: &Means,
        after: &Means,
        lat: (Option<&KernelFigures>, Option<&KernelFigures>),
    ) -> Self {
        let round = |config: usize, m: &Means, k: Option<&KernelFigures>| {
            let mut r = Round::new(config, 0, 0.0);
            let mut put = |metric, value, ios| {
                r.values.insert(metric, Sample { value, ios });
            };
            put(Metric::RS, m.r_s, None);
            put(Metric::WS, m.w_s, None);
            if m.r_s > 0.0 {
                put(Metric::RAwait, m.r_await, None);
            }
            if m.w_s > 0.0 {
                put(Metric::WAwait, m.w_await, None);
            }
            for metric in Metric::KERNEL {
                let (Some(k), Some((span, dir))) = (k, metric.kernel_io()) else {
                    continue;
                };
                if let (Some(v), Some(l)) = (metric.of_kernel(k), k.get(span, dir)) {
                    put(metric, v, Some(l.n));
                }
            }
            r
        };
        let rounds = [round(0, before, lat.0), round(1, after, lat.1)];
        let names = vec!["before".to_string(), "after".to_string()];
        let opts = compare::Options::new(Metric::RAwait, names, "", compare::LoadKind::Unknown);
        let c = compare::compare_two(&rounds, 0, 1, &opts, opts.alpha, 2);
        Self {
            answer: Answer::Undecided,
            effects: c.figures,
        }
    }

    /// `undecided: one before and one after give no interval (r_await -42%,
    /// kernel r_p99 -30%); alternate them to decide`: the text summary's
    /// `verdict` line under each change.
    pub fn line(&self) -> String {
        // The means and the kernel's p99s: enough to see what moved.
        let shown: Vec<String> = self
            .effects
            .iter()
            .filter(|e| {
                matches!(
                    e.metric,
                    Metric::RAwait | Metric::WAwait | Metric::KRP99 | Metric::KWP99
                )
            })
            .map(|e| format!("{} {}", e.metric.label(), compare::change_only(e.change)))
            .collect();
        let figures = if shown.is_empty() {
            String::new()
        } else {
            format!(" ({})", shown.join(", "))
        };
        format!(
            "{}: one before and one after give no interval{figures}; alternate them to decide (blktune bench, the live A/B)",
            self.answer.label()
        )
    }
}

/// The figures compared, as (key, label, unit, figure).
type Row = (&'static str, &'static str, &'static str, history::Figure);

const FIGURES: [Row; 6] = [
    ("r_await", "r_await", "ms", history::Figure::RAwait),
    ("w_await", "w_await", "ms", history::Figure::WAwait),
    ("r/s", "r/s", "", history::Figure::RS),
    ("w/s", "w/s", "", history::Figure::WS),
    ("aqu-sz", "aqu-sz", "", history::Figure::AquSz),
    ("util", "%util", "%", history::Figure::Util),
];

/// Read the recording at `path` once and summarise it: the recording (for
/// its notes and length) and its summary. Works on a pipe. `local_host` is
/// this machine's host name, to say whether the file comes from elsewhere.
pub fn summarize_file(
    path: &Path,
    local_host: Option<&str>,
) -> Result<(Recording, Summary), RecordError> {
    let (mut reader, mut scan) = Recording::start(path)?;
    let traced = reader.header().latency.as_ref().is_some_and(|l| l.traced);
    let mut acc = Acc::new(reader.header().devices.clone(), f64::INFINITY, traced);
    for r in reader.by_ref() {
        if scan.take(&r) {
            acc.take(r);
        }
    }
    let rec = scan.finish(reader.take_notes());
    let summary = acc.finish(&rec, local_host);
    Ok((rec, summary))
}

/// Summarise a recording already opened, reading its file again.
pub fn summarize(rec: &Recording, local_host: Option<&str>) -> Result<Summary, RecordError> {
    let reader: RecordReader = rec.reopen()?;
    let traced = rec.header.latency.as_ref().is_some_and(|l| l.traced);
    let mut acc = Acc::new(rec.header.devices.clone(), rec.duration(), traced);
    for r in reader {
        acc.take(r);
        if acc.frames.past_end {
            break;
        }
    }
    Ok(acc.finish(rec, local_host))
}

/// One side of a change being accumulated.
#[derive(Debug)]
struct Sides {
    change: ChangeRecord,
    /// "Before" starts here: the window or the device's previous change.
    from: f64,
    /// The device's next change, once met.
    next_t: Option<f64>,
    before: MeansAcc,
    after: MeansAcc,
    /// The kernel's histograms of each side (the first [`LATENCY_CHANGES`] only).
    lat: Option<(LatAcc, LatAcc)>,
}

impl Sides {
    /// Count `p` on whichever side it belongs to (the straddling interval
    /// on neither), as [`crate::history::compare`] does.
    fn add(&mut self, p: &Point, lat: Option<&DeviceLat>) {
        let t = self.change.t;
        if p.t <= t + 1e-9 && p.start() >= self.from - 1e-9 {
            self.before.add(p);
            // Histograms only with the interval's statistics, so both rest
            // on the same intervals.
            if let (Some((b, _)), Some(_)) = (&mut self.lat, p.stats) {
                b.add(lat);
            }
        }
        if p.start() >= t - 1e-9 && self.next_t.is_none_or(|n| p.t <= n + 1e-9) {
            self.after.add(p);
            if let (Some((_, a)), Some(_)) = (&mut self.lat, p.stats) {
                a.add(lat);
            }
        }
    }

    /// Can no later point count (points come in rising time)?
    fn closed_by(&self, p: &Point) -> bool {
        self.next_t.is_some_and(|n| p.t > n + 1e-9)
    }
}

/// The one-pass summary's state.
#[derive(Debug)]
struct Acc {
    frames: Frames,
    /// Recent points of each whole device, oldest first, with the kernel's
    /// histograms of the interval (empty: traced, no I/O; `None`: not
    /// traced).
    rings: HashMap<String, VecDeque<(Point, Option<DeviceLat>)>>,
    /// Samples carry histograms: a device without any had no I/O.
    traced: bool,
    /// Frames not traced (a device without histograms then: unknown).
    untraced: usize,
    lost: u64,
    no_dev_span: Option<String>,
    /// Each whole device's histograms over the whole recording.
    device_lat: HashMap<String, LatAcc>,
    ring_cap: usize,
    /// The first [`MAX_CHANGES`] changes, being accumulated.
    sides: Vec<Sides>,
    /// Per device, the changes whose sides can still grow.
    open: HashMap<String, Vec<usize>>,
    first_sched: BTreeMap<String, Option<String>>,
    last_sched: BTreeMap<String, Option<String>>,
    /// Counter problems per device and sample: the first few, then a count.
    warnings: Vec<String>,
    unshown: usize,
}

impl Acc {
    fn new(facts: Vec<super::format::DeviceFacts>, until: f64, traced: bool) -> Self {
        Self {
            frames: Frames::new(facts, until),
            rings: HashMap::new(),
            traced,
            untraced: 0,
            lost: 0,
            no_dev_span: None,
            device_lat: HashMap::new(),
            ring_cap: RING_BUDGET,
            sides: Vec::new(),
            open: HashMap::new(),
            first_sched: BTreeMap::new(),
            last_sched: BTreeMap::new(),
            warnings: Vec::new(),
            unshown: 0,
        }
    }

    fn take(&mut self, r: Record) {
        if let Record::Change(c) = &r {
            self.change(c);
        }
        if let Some(f) = self.frames.push(r) {
            self.frame(&f);
        }
    }

    /// A change: close the device's previous one, and count what is
    /// already in the ring on its sides.
    fn change(&mut self, c: &ChangeRecord) {
        if self.sides.len() >= MAX_CHANGES {
            return;
        }
        let prev = self.open.get(&c.device).and_then(|v| {
            v.iter()
                .rev()
                .find(|&&i| self.sides[i].next_t.is_none())
                .copied()
        });
        let prev_t = prev.map(|i| self.sides[i].change.t);
        if let Some(i) = prev {
            self.sides[i].next_t = Some(c.t);
        }
        let from = prev_t.map_or(c.t - BEFORE_WINDOW, |p| p.max(c.t - BEFORE_WINDOW));
        let mut side = Sides {
            change: c.clone(),
            from,
            next_t: None,
            before: MeansAcc::default(),
            after: MeansAcc::default(),
            lat: (self.sides.len() < LATENCY_CHANGES).then(Default::default),
        };
        for (p, lat) in self.rings.get(&c.device).into_iter().flatten() {
            side.add(p, lat.as_ref());
        }
        self.open
            .entry(c.device.clone())
            .or_default()
            .push(self.sides.len());
        self.sides.push(side);
    }

    fn frame(&mut self, f: &Frame) {
        let s = &f.snapshot;
        self.untraced += usize::from(self.traced && f.untraced);
        self.lost = self.lost.saturating_add(f.lost);
        if self.no_dev_span.is_none() {
            self.no_dev_span.clone_from(&f.no_dev_span);
        }
        for w in &s.warnings {
            if self.warnings.len() < SHOWN_NOTES {
                self.warnings.push(w.clone());
            } else {
                self.unshown += 1;
            }
        }
        if s.refreshed {
            // Rings only for the whole devices there are now.
            self.rings
                .retain(|name, _| s.devices.iter().any(|d| &d.name == name));
            self.ring_cap = (RING_BUDGET / s.devices.len().max(1)).max(16);
        }
        for d in s.devices.iter() {
            let known = self.first_sched.contains_key(&d.name);
            if !known && self.first_sched.len() >= MAX_DEVICES {
                continue;
            }
            let active = d.queue.scheduler.as_ref().map(|x| x.active.clone());
            if !known {
                self.first_sched.insert(d.name.clone(), active.clone());
            }
            self.last_sched.insert(d.name.clone(), active);
            self.rings.entry(d.name.clone()).or_default();
        }
        for (name, st) in &s.stats {
            let p = Point {
                t: s.t,
                itv: s.interval.unwrap_or(0.0),
                stats: st.stats.ok(),
            };
            let recorded = f.latency.get(name);
            let lat = self.lat_of(recorded, f.untraced);
            if p.stats.is_some() && self.rings.contains_key(name) {
                self.device_lat.entry(name.clone()).or_default().add(lat);
            }
            if let Some(open) = self.open.get_mut(name) {
                let sides = &mut self.sides;
                open.retain(|&i| {
                    sides[i].add(&p, lat);
                    !sides[i].closed_by(&p)
                });
            }
            if let Some(ring) = self.rings.get_mut(name) {
                ring.push_back((p, lat.cloned()));
                while ring.len() > self.ring_cap
                    || ring
                        .front()
                        .is_some_and(|(f, _)| f.t < p.t - 2.0 * BEFORE_WINDOW)
                {
                    ring.pop_front();
                }
            }
        }
    }

    /// A device's histograms of an interval: the recorded ones; empty when
    /// the recording was traced and the device had none (no I/O); `None`
    /// when not traced.
    fn lat_of<'a>(&self, recorded: Option<&'a DeviceLat>, untraced: bool) -> Option<&'a DeviceLat> {
        static NONE: DeviceLat = DeviceLat::new();
        recorded.or((self.traced && !untraced).then_some(&NONE))
    }

    fn finish(mut self, rec: &Recording, local_host: Option<&str>) -> Summary {
        if let Some(f) = self.frames.finish() {
            self.frame(&f);
        }
        let mut notes = rec.notes.clone();
        notes.append(&mut self.warnings);
        if self.unshown > 0 {
            notes.push(format!(
                "{}: {} more device sample(s) with bad counters, left out",
                rec.name, self.unshown
            ));
        }
        let changes: Vec<ChangeSummary> = self
            .sides
            .into_iter()
            .map(|side| {
                let (before, after) = (side.before.means(), side.after.means());
                let (latency_before, latency_after) = side
                    .lat
                    .as_ref()
                    .map_or((None, None), |(b, a)| (b.figures(), a.figures()));
                let c = side.change;
                // The before/after panel's rules: no percent from a short
                // window or from a move inside the noise.
                let deltas: Vec<(&str, Option<Delta>)> = FIGURES
                    .iter()
                    .map(|&(key, _, _, fig)| {
                        let d = match (&before, &after) {
                            (Some(b), Some(a)) => Some(history::delta(b, a, fig)),
                            _ => None,
                        };
                        (key, d)
                    })
                    .collect();
                let pct = deltas
                    .iter()
                    .map(|&(k, d)| (k.to_owned(), d.and_then(Delta::significant)))
                    .collect();
                let change = deltas
                    .iter()
                    .filter_map(|&(k, d)| Some((k.to_owned(), d?.label())))
                    .collect();
                let verdict = match (&before, &after) {
                    (Some(b), Some(a)) => Some(OneSwitch::of(
                        b,
                        a,
                        (latency_before.as_ref(), latency_after.as_ref()),
                    )),
                    _ => None,
                };
                ChangeSummary {
                    verdict,
                    device: c.device,
                    t: c.t,
                    label: c.label,
                    source: c.source,
                    settings_before: c.before,
                    settings_after: c.after,
                    before,
                    after,
                    pct,
                    change,
                    latency_before,
                    latency_after,
                }
            })
            .collect();
        // An unattached loop node (size 0) with no change says nothing;
        // recordings made before the recorder left them out list hundreds.
        let mut devices: Vec<DeviceSummary> = rec
            .devices()
            .iter()
            .filter(|d| d.size_bytes > 0 || changes.iter().any(|c| c.device == d.name))
            .map(|d| DeviceSummary {
                name: d.name.clone(),
                kind: d.kind,
                model: d.model.clone(),
                size_bytes: d.size_bytes,
                scheduler_first: self.first_sched.get(&d.name).cloned().flatten(),
                scheduler_last: self.last_sched.get(&d.name).cloned().flatten(),
                changes: changes.iter().filter(|c| c.device == d.name).count(),
                latency: self.device_lat.get(&d.name).and_then(LatAcc::figures),
            })
            .collect();
        devices.sort_by(|a, b| natural_cmp(&a.name, &b.name));
        let header = &rec.header;
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
            latency: header.latency.clone(),
            latency_untraced: self.untraced,
            latency_lost: self.lost,
            latency_no_dev_span: self.no_dev_span.clone(),
            devices,
            changes,
            notes,
        }
    }
}

/// The kernel's p99 rows of a change, as (label, getter).
type LatencyRow = (&'static str, fn(&KernelFigures) -> Option<&IoLatency>);

const LATENCY_ROWS: [LatencyRow; 4] = [
    ("r_p99", |k| k.reads.as_ref()),
    ("w_p99", |k| k.writes.as_ref()),
    ("r_dev_p99", |k| k.dev_reads.as_ref()),
    ("w_dev_p99", |k| k.dev_writes.as_ref()),
];

/// `1.234 ms n=4000`, or `n=42` when too few I/Os for a p99.
fn p99_cell(l: Option<&IoLatency>) -> String {
    match l {
        Some(IoLatency {
            p99: Some(ms), n, ..
        }) => format!("{ms:.3} ms n={n}"),
        Some(l) => format!("n={}", l.n),
        None => "n=0".to_owned(),
    }
}

/// The p99's change: a percent only with a p99 on both sides, windows of
/// at least [`MIN_INTERVALS`] intervals, and above the noise floor.
fn p99_change(b: Option<&IoLatency>, a: Option<&IoLatency>, enough: bool) -> String {
    match (b.and_then(|l| l.p99), a.and_then(|l| l.p99)) {
        (Some(x), Some(y)) if enough => match pct_change(x, y) {
            Some(p) if p.abs() >= NOISE_FLOOR_PCT => format!("{p:+.1}%"),
            // As the means say a move inside the noise (`~+2%`, the
            // legend's `~`), not a word of its own.
            Some(p) => format!("~{p:+.1}%"),
            None => "-".to_owned(),
        },
        (Some(_), Some(_)) => "short".to_owned(),
        _ => "-".to_owned(),
    }
}

/// `reads p50 0.010 p99 0.120 ms (n=123456); writes n=0`
fn device_latency(k: &KernelFigures) -> String {
    let one = |what: &str, l: Option<&IoLatency>, dev: Option<&IoLatency>| match l {
        Some(l) => match l.p99 {
            Some(p99) => format!(
                "{what} p50 {:.3} p99 {p99:.3} ms (n={}, device p99 {})",
                l.p50,
                l.n,
                match dev {
                    Some(d) => d.p99.map_or(format!("n={}", d.n), |v| format!("{v:.3}")),
                    None => "-".to_owned(),
                }
            ),
            None => format!("{what} p50 {:.3} ms (n={}, too few for a p99)", l.p50, l.n),
        },
        None => format!("{what} n=0"),
    };
    format!(
        "kernel latency: {}; {}",
        one("reads", k.reads.as_ref(), k.dev_reads.as_ref()),
        one("writes", k.writes.as_ref(), k.dev_writes.as_ref())
    )
}

/// `0.5s`, `29.8s`, `1m30.0s`.
fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

fn secs(s: f64) -> String {
    let s = s.max(0.0);
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        format!("{}m{:04.1}s", (s / 60.0).floor(), s % 60.0)
    }
}

/// A mean with its spread (one standard deviation of the intervals):
/// `2.74±0.31 ms`, `5634.4±120.5`, `100.0±0.0%`.
fn fig((v, sd): (f64, f64), unit: &str) -> String {
    match unit {
        "" => format!("{v:.1}±{sd:.1}"),
        "%" => format!("{v:.1}±{sd:.1}%"),
        u => format!("{v:.2}±{sd:.2} {u}"),
    }
}

impl Summary {
    /// The text form (notes are left to the caller, for stderr).
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let h = &self.host;
        // Every text from the file on one line of its own: a newline in a
        // host or device name would forge lines of this report.
        let p = |s: &str| crate::text::printable(s).into_owned();
        let _ = writeln!(
            o,
            "Recording {} (format {}, {})",
            p(&self.file),
            self.version,
            p(&self.tool)
        );
        let _ = writeln!(
            o,
            "  host      {}, Linux {}{}",
            if h.hostname.is_empty() {
                "?".to_owned()
            } else {
                p(&h.hostname)
            },
            p(&h.kernel),
            if self.other_host {
                " (recorded on another host)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            o,
            "  started   {}, lasted {}, {} samples every {}, {}",
            p(&self.started),
            secs(self.duration_s),
            self.samples,
            secs(self.interval_s),
            match &self.end_reason {
                Some(r) => format!("ended ({})", p(r)),
                None => "no end record".to_owned(),
            }
        );
        let _ = writeln!(
            o,
            "  latency   {}",
            match &self.latency {
                Some(l) if l.traced && self.latency_untraced == 0 => "the kernel's histograms of every interval (percentiles pooled per window; p99 from 100 I/Os)".to_owned(),
                Some(l) if l.traced => format!(
                    "the kernel's histograms, but {} interval(s) could not be read: the percentiles rest on the others",
                    self.latency_untraced
                ),
                Some(l) => format!(
                    "not recorded ({})",
                    p(l.unavailable.as_deref().unwrap_or("not traced"))
                ),
                None => "not recorded (made before blktune recorded them)".to_owned(),
            }
        );
        if self.latency_lost > 0 {
            let _ = writeln!(
                o,
                "            {} completion(s) no histogram counted: the counts may be short by as many",
                self.latency_lost
            );
        }
        if let Some(why) = &self.latency_no_dev_span {
            let _ = writeln!(
                o,
                "            no device span from some point on: the issue program could not be attached ({})",
                p(why)
            );
        }
        for d in &self.devices {
            let sched = match (&d.scheduler_first, &d.scheduler_last) {
                (Some(a), Some(b)) if a != b => format!("{} at start, {} at end", p(a), p(b)),
                (Some(a), _) => p(a),
                _ => "no scheduler".to_owned(),
            };
            let _ = writeln!(
                o,
                "  device    {:<10} {:<6} {:>6}  {}  {}",
                p(&d.name),
                d.kind.label(),
                human_size(d.size_bytes),
                p(d.model.as_deref().unwrap_or("-")),
                sched
            );
            if let Some(k) = &d.latency {
                let _ = writeln!(o, "            {}", device_latency(k));
            }
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
            let _ = writeln!(
                o,
                "  {} at +{}: {}  ({how})",
                p(&c.device),
                secs(c.t),
                p(&c.label)
            );
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
                let enough = b.intervals >= MIN_INTERVALS && a.intervals >= MIN_INTERVALS;
                if let (Some(lb), Some(la)) = (&c.latency_before, &c.latency_after) {
                    for (label, get) in LATENCY_ROWS {
                        let (x, y) = (get(lb), get(la));
                        if x.is_none() && y.is_none() {
                            continue;
                        }
                        let _ = writeln!(
                            o,
                            "    {:<9} {:>16} {:>16} {:>9}",
                            label,
                            p99_cell(x),
                            p99_cell(y),
                            p99_change(x, y, enough)
                        );
                    }
                }
                for (key, label, unit, f) in FIGURES {
                    let _ = writeln!(
                        o,
                        "    {:<9} {:>16} {:>16} {:>9}",
                        label,
                        fig(f.of(b), unit),
                        fig(f.of(a), unit),
                        c.change.get(key).map_or("-", String::as_str)
                    );
                }
                if let Some(v) = &c.verdict {
                    let _ = writeln!(o, "    verdict   {}", v.line());
                }
            }
        }
        if !self.changes.is_empty() {
            let _ = writeln!(
                o,
                "\n± the spread of the intervals (1 sd); ~ a move inside the noise; short: a window under {MIN_INTERVALS} intervals; few: an await from under {MIN_IOS_FOR_PCT} I/Os (no percent)"
            );
        }
        o
    }
}
