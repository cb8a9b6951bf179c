//! The before/after of one change as the comparison engine ([`crate::compare`])
//! reads it: what the panel of a switch says, live and replayed.
//!
//! A switch on a live system has one window before and one after: **one
//! pair**. Its change is a description, never a decision: the noise that
//! fools a storage engineer is *between* windows (a job starts, writeback
//! flushes, the host steals CPU), and one pair cannot show it. So:
//!
//! - every figure (r/s, w/s, MB/s, the awaits, the kernel's percentiles)
//!   gets its change in the engine's one format, `-16% (-19..-13)`, whose
//!   interval is the **windows' own**: Welch's t over each window's
//!   intervals (the variance of a window's mean is its intervals' variance
//!   over their count, by the delta method on the log; Welch 1947 for the
//!   degrees of freedom). It sees how much the intervals of each window
//!   varied, not drift between the windows: the call stays **undecided**
//!   ([`Basis::OnePair`]) whatever its width;
//! - the **controls** of the same windows come first ([`compare::check_one_pair`]):
//!   the offered load, the devices underneath, the system. A failed one makes
//!   the whole before/after unreliable;
//! - an **A/B** (the TUI's `A`: the two configurations alternated in
//!   interleaved rounds) turns it into a decided comparison
//!   ([`from_rounds`], [`Basis::Rounds`]): pairs of rounds, the engine's
//!   t-interval over them and its four answers.
//!
//! Each window is a [`WindowFigures`] (built from diskstats intervals with
//! [`WindowFigures::of_device`], plus the kernel's percentiles, the devices
//! underneath and the system); the same type is one round of an A/B
//! ([`WindowFigures::round`]). Pure: the TUI and the replay give the points.

use crate::compare::stats::{mean_sd, t_quantile};
use crate::compare::{
    self, Answer, ControlCheck, LoadKind, LoadSample, Metric, Options, Round, RoundControls,
    Sample, Spread, Status, SystemSample, UnderSample,
};
use crate::history::{MIN_INTERVALS, MIN_IOS_FOR_PCT, Point};
use crate::iostat::ExtStats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The confidence of the windows' own intervals.
pub const ALPHA: f64 = 0.05;

/// The names the controls' lines give the two sides.
pub const NAMES: [&str; 2] = ["before", "after"];

/// The figures in the order they are shown: the rates first (what a user
/// sees first of a switch: did the device do more or less), then each
/// direction's latencies.
pub const ORDER: [Metric; 13] = [
    Metric::RS,
    Metric::WS,
    Metric::MbS,
    Metric::RAwait,
    Metric::KRP50,
    Metric::KRP99,
    Metric::KRDevP99,
    Metric::KRP999,
    Metric::WAwait,
    Metric::KWP50,
    Metric::KWP99,
    Metric::KWDevP99,
    Metric::KWP999,
];

/// A figure's short name in a before/after: `r/s`, `r_await`, the kernel's
/// `r_p99`, `r_dev99` (its full name says `kernel r_p99`).
pub fn label(m: Metric) -> &'static str {
    match m {
        Metric::KRP50 => "r_p50",
        Metric::KRP99 => "r_p99",
        Metric::KRP999 => "r_p99.9",
        Metric::KRDevP99 => "r_dev99",
        Metric::KWP50 => "w_p50",
        Metric::KWP99 => "w_p99",
        Metric::KWP999 => "w_p99.9",
        Metric::KWDevP99 => "w_dev99",
        m => m.label(),
    }
}

/// One figure over one window: the value of the whole window (a rate over
/// its time, a mean weighted by the I/Os, a percentile of the pooled
/// histograms), the values of its intervals, the I/Os it rests on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    pub value: f64,
    /// One per interval that has the figure (an await: one with I/O of its
    /// direction; a p99: one with enough I/Os for it).
    pub per_interval: Vec<f64>,
    pub ios: Option<u64>,
}

/// The system in one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SystemPoint {
    pub cpu_busy_pct: Option<f64>,
    pub iowait_pct: Option<f64>,
    pub psi_some_pct: Option<f64>,
}

/// One window (or one round of an A/B): its figures and what else was
/// measured in it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WindowFigures {
    /// Intervals with data.
    pub intervals: usize,
    pub secs: f64,
    pub figures: BTreeMap<Metric, Series>,
    pub controls: RoundControls,
    /// How much the controls varied across the intervals.
    pub spread: Spread,
}

/// Sample standard deviation of `values` (0 under two).
fn sd(values: &[f64]) -> f64 {
    mean_sd(values).map_or(0.0, |(_, s)| s)
}

/// The mean of `values`, when there are any.
fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// A direction of I/O, for [`weighted_await`].
#[derive(Clone, Copy)]
enum Dir {
    Read,
    Write,
}

/// A direction's mean latency over intervals, weighted by their I/Os (what
/// iostat prints for one interval spanning them), with the value of each
/// interval that had I/O of it; `None` without any (`ios`: their count).
fn weighted_await(pts: &[(f64, ExtStats)], ios: f64, dir: Dir) -> Option<Series> {
    if ios < 0.5 {
        return None;
    }
    let of = |s: &ExtStats| match dir {
        Dir::Read => (s.r_s, s.r_await),
        Dir::Write => (s.w_s, s.w_await),
    };
    let ms: f64 = pts
        .iter()
        .map(|(itv, s)| {
            let (rate, lat) = of(s);
            rate * lat * itv
        })
        .sum();
    Some(Series {
        value: ms / ios,
        per_interval: pts
            .iter()
            .map(|(_, s)| of(s))
            .filter(|(rate, _)| *rate > 0.0)
            .map(|(_, lat)| lat)
            .collect(),
        ios: Some(ios.round() as u64),
    })
}

/// The intervals of `points` with data and a length.
fn with_data<'a>(points: impl IntoIterator<Item = &'a Point>) -> Vec<(f64, ExtStats)> {
    points
        .into_iter()
        .filter(|p| p.itv > 0.0)
        .filter_map(|p| Some((p.itv, p.stats?)))
        .collect()
}

impl WindowFigures {
    /// The device's own figures and offered load from its diskstats
    /// intervals (those without data are left out); `None` without any.
    pub fn of_device<'a>(points: impl IntoIterator<Item = &'a Point>) -> Option<Self> {
        let pts = with_data(points);
        if pts.is_empty() {
            return None;
        }
        let secs: f64 = pts.iter().map(|(itv, _)| itv).sum();
        let total = |f: fn(&ExtStats) -> f64| pts.iter().map(|(itv, s)| f(s) * itv).sum::<f64>();
        let each =
            |f: fn(&ExtStats) -> f64| -> Vec<f64> { pts.iter().map(|(_, s)| f(s)).collect() };
        let (reads, writes) = (total(|s| s.r_s), total(|s| s.w_s));
        let kb = total(|s| s.rkb_s + s.wkb_s);
        let mut figures = BTreeMap::new();
        let mb = |kb_s: f64| kb_s * 1024.0 / 1e6;
        figures.insert(
            Metric::RS,
            Series {
                value: reads / secs,
                per_interval: each(|s| s.r_s),
                ios: None,
            },
        );
        figures.insert(
            Metric::WS,
            Series {
                value: writes / secs,
                per_interval: each(|s| s.w_s),
                ios: None,
            },
        );
        figures.insert(
            Metric::MbS,
            Series {
                value: mb(kb / secs),
                per_interval: pts.iter().map(|(_, s)| mb(s.rkb_s + s.wkb_s)).collect(),
                ios: None,
            },
        );
        for (metric, ios, dir) in [
            (Metric::RAwait, reads, Dir::Read),
            (Metric::WAwait, writes, Dir::Write),
        ] {
            if let Some(series) = weighted_await(&pts, ios, dir) {
                figures.insert(metric, series);
            }
        }
        let iops = each(|s| s.r_s + s.w_s);
        let aqu = each(|s| s.aqu_sz);
        let all = reads + writes;
        let load = LoadSample {
            iops: all / secs,
            mb_s: mb(kb / secs),
            read_share: if all > 0.0 { reads / all } else { 0.0 },
            req_kb: if all > 0.0 { kb / all } else { 0.0 },
            aqu_sz: total(|s| s.aqu_sz) / secs,
        };
        Some(Self {
            intervals: pts.len(),
            secs,
            figures,
            controls: RoundControls {
                load: Some(load),
                ..RoundControls::default()
            },
            spread: Spread {
                iops: sd(&iops),
                aqu_sz: sd(&aqu),
                cpu_busy: 0.0,
            },
        })
    }

    /// Add a figure measured apart (the kernel's percentiles).
    pub fn with_figure(mut self, metric: Metric, series: Series) -> Self {
        self.figures.insert(metric, series);
        self
    }

    /// Add a device the compared one's I/O goes to (`relation`: `under
    /// loop0`), from its diskstats intervals of the same window: the await of
    /// all its reads and writes, with its spread across the intervals.
    pub fn with_under<'a>(
        mut self,
        name: &str,
        relation: &str,
        points: impl IntoIterator<Item = &'a Point>,
    ) -> Self {
        let pts = with_data(points);
        let secs: f64 = pts.iter().map(|(itv, _)| itv).sum();
        if secs <= 0.0 {
            return self;
        }
        let ios: f64 = pts.iter().map(|(itv, s)| (s.r_s + s.w_s) * itv).sum();
        let ms: f64 = pts
            .iter()
            .map(|(itv, s)| (s.r_await * s.r_s + s.w_await * s.w_s) * itv)
            .sum();
        let per: Vec<f64> = pts
            .iter()
            .filter(|(_, s)| s.r_s + s.w_s > 0.0)
            .map(|(_, s)| (s.r_await * s.r_s + s.w_await * s.w_s) / (s.r_s + s.w_s))
            .collect();
        self.controls.under.push(UnderSample {
            name: name.into(),
            relation: relation.into(),
            await_ms: if ios > 0.0 { ms / ios } else { 0.0 },
            await_sd: Some(sd(&per)),
            util: pts.iter().map(|(itv, s)| s.util * itv).sum::<f64>() / secs,
            iops: ios / secs,
        });
        self
    }

    /// Add the system over the same intervals (nothing when the CPU's busy
    /// share is unknown in all of them).
    pub fn with_system(mut self, points: &[SystemPoint]) -> Self {
        let busy: Vec<f64> = points.iter().filter_map(|p| p.cpu_busy_pct).collect();
        let Some(cpu) = mean(&busy) else {
            return self;
        };
        let iowait: Vec<f64> = points.iter().filter_map(|p| p.iowait_pct).collect();
        let psi: Vec<f64> = points.iter().filter_map(|p| p.psi_some_pct).collect();
        self.controls.system = Some(SystemSample {
            cpu_busy_pct: cpu,
            iowait_pct: mean(&iowait).unwrap_or(0.0),
            psi_some_pct: mean(&psi),
            psi_full_pct: None,
        });
        self.spread.cpu_busy = sd(&busy);
        self
    }

    /// This window as one round of the engine.
    pub fn round(&self, config: usize, block: usize, at_s: f64) -> Round {
        let mut r = Round::new(config, block, at_s);
        for (m, s) in &self.figures {
            r.values.insert(
                *m,
                Sample {
                    value: s.value,
                    ios: s.ios,
                },
            );
        }
        r.controls = self.controls.clone();
        r
    }
}

/// What a before/after rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Basis {
    /// One window before and one after: descriptive, always undecided.
    OnePair,
    /// Interleaved rounds of an A/B: this many pairs.
    Rounds { pairs: usize },
}

/// One figure of a before/after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub metric: Metric,
    /// The figure over the before side: a window's, or the geometric mean
    /// of an A/B's rounds of it.
    pub before: f64,
    pub after: f64,
    /// After against before, as a fraction (−0.16: 16 % lower).
    pub change: f64,
    /// Its interval (one pair: the windows' own; rounds: the engine's);
    /// `None` when a side has too few intervals or pairs for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lo: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hi: Option<f64>,
    /// The engine's call: always undecided for one pair.
    pub answer: Answer,
    /// The I/Os each side rests on (latencies only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ios: Option<(u64, u64)>,
    /// Why no change is stated, when none is (the values still are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<Withheld>,
}

/// Why a row states no change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Withheld {
    /// A window under [`MIN_INTERVALS`] intervals: one second before a
    /// change is no basis for +936 %.
    Short,
    /// A latency from under [`MIN_IOS_FOR_PCT`] I/Os on a side: a handful
    /// of I/Os moves a mean or a percentile by tens of percent.
    Few,
}

impl Row {
    /// `-16% (-19..-13)`, `-16%` without an interval, `short` or `few`
    /// when no change is stated.
    pub fn number(&self) -> String {
        match self.withheld {
            Some(Withheld::Short) => return "short".into(),
            Some(Withheld::Few) => return "few".into(),
            None => {}
        }
        // A change within a twentieth of a percent of none is none: never `-0.0`.
        let snap = |x: f64| if (x * 100.0).abs() < 0.05 { 0.0 } else { x };
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) => compare::change_text(snap(self.change), snap(lo), snap(hi)),
            _ => compare::change_only(snap(self.change)),
        }
    }
}

/// The before/after of one change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeforeAfter {
    pub basis: Basis,
    /// In [`ORDER`], the figures both sides have.
    pub rows: Vec<Row>,
    /// What else changed in the same windows, failed ones first.
    pub controls: Vec<ControlCheck>,
}

impl BeforeAfter {
    /// Did a control fail (the switch is not the only change)?
    pub fn unreliable(&self) -> bool {
        self.controls.iter().any(|c| c.status == Status::Failed)
    }

    /// The row of a figure.
    pub fn row(&self, metric: Metric) -> Option<&Row> {
        self.rows.iter().find(|r| r.metric == metric)
    }

    /// The controls that failed, and then the notes: what is said next to
    /// the result (the steady ones go to the wider layouts and JSON).
    pub fn said(&self) -> impl Iterator<Item = &ControlCheck> {
        self.controls.iter().filter(|c| c.status != Status::Ok)
    }

    /// The call in one line: unreliable (why first), one pair (undecided,
    /// and what decides it), or the rounds' answer on the figures.
    pub fn call(&self) -> String {
        if let Some(c) = self.controls.iter().find(|c| c.status == Status::Failed) {
            return format!("unreliable: {}", c.text);
        }
        match self.basis {
            Basis::OnePair => "one before, one after: undecided (intervals within each window, blind to drift between them)".into(),
            Basis::Rounds { pairs } => {
                let decided = self.rows.iter().filter(|r| r.answer.decided()).count();
                format!(
                    "A/B, {pairs} pairs of interleaved rounds: {decided} of {} figures decided",
                    self.rows.len()
                )
            }
        }
    }
}

/// The windows' own interval of `after` against `before` (as fractions),
/// centred on the ratio of the windows' values: Welch's t over the two
/// windows' intervals. `None` under [`MIN_INTERVALS`] intervals a side.
pub fn within(before: &Series, after: &Series, alpha: f64) -> Option<(f64, f64)> {
    let var = |s: &Series| {
        let n = s.per_interval.len();
        if n < MIN_INTERVALS {
            return None;
        }
        let m = s.per_interval.iter().sum::<f64>() / n as f64;
        if m <= 0.0 {
            return None;
        }
        let ss = s.per_interval.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64;
        // The delta method: var(ln mean) ≈ var(mean) / mean².
        Some((ss / n as f64 / (m * m), n))
    };
    let ((vb, nb), (va, na)) = (var(before)?, var(after)?);
    if before.value <= 0.0 || after.value <= 0.0 {
        return None;
    }
    let centre = (after.value / before.value).ln();
    let v = vb + va;
    let half = if v > 0.0 {
        // Welch–Satterthwaite.
        let df = v * v / (vb * vb / (nb - 1) as f64 + va * va / (na - 1) as f64);
        t_quantile(1.0 - alpha / 2.0, df.max(1.0)) * v.sqrt()
    } else {
        0.0
    };
    Some(((centre - half).exp_m1(), (centre + half).exp_m1()))
}

/// The figure whose change the controls weigh a device underneath against:
/// the reads' mean latency, else the writes'.
fn ours(changes: &[(Metric, f64)]) -> Option<f64> {
    [Metric::RAwait, Metric::WAwait]
        .iter()
        .find_map(|m| changes.iter().find(|(x, _)| x == m).map(|(_, c)| *c))
}

/// Failed controls first, then notes, then the steady ones.
fn ordered(mut controls: Vec<ControlCheck>) -> Vec<ControlCheck> {
    controls.sort_by_key(|c| std::cmp::Reverse(c.status));
    controls
}

/// One window before a switch of `device` and one after: one pair (see the
/// module documentation).
pub fn one_pair(before: &WindowFigures, after: &WindowFigures, device: &str) -> BeforeAfter {
    let rows: Vec<Row> = ORDER
        .iter()
        .filter_map(|&m| {
            let (b, a) = (before.figures.get(&m)?, after.figures.get(&m)?);
            if b.value <= 0.0 || a.value <= 0.0 {
                return None;
            }
            let ios = b.ios.zip(a.ios);
            let withheld = if before.intervals.min(after.intervals) < MIN_INTERVALS {
                Some(Withheld::Short)
            } else if ios.is_some_and(|(x, y)| x.min(y) < MIN_IOS_FOR_PCT) {
                Some(Withheld::Few)
            } else {
                None
            };
            let iv = within(b, a, ALPHA).filter(|_| withheld.is_none());
            Some(Row {
                metric: m,
                before: b.value,
                after: a.value,
                change: a.value / b.value - 1.0,
                lo: iv.map(|i| i.0),
                hi: iv.map(|i| i.1),
                answer: Answer::Undecided,
                ios,
                withheld,
            })
        })
        .collect();
    let changes: Vec<(Metric, f64)> = rows.iter().map(|r| (r.metric, r.change)).collect();
    let rounds = [before.round(0, 0, 0.0), after.round(1, 0, before.secs)];
    let controls = compare::check_one_pair(
        &rounds,
        ((0, NAMES[0]), before.spread),
        ((1, NAMES[1]), after.spread),
        device,
        LoadKind::Unknown,
        ours(&changes),
    );
    BeforeAfter {
        basis: Basis::OnePair,
        rows,
        controls: ordered(controls),
    }
}

/// The rounds of an A/B of `device` (configuration 0: before the change,
/// 1: after it; blocks interleaved and counterbalanced) read by the engine:
/// each figure's effect with its interval over the pairs and its answer,
/// the controls over the same rounds. The passive load is of unknown kind.
pub fn from_rounds(rounds: &[Round], device: &str) -> BeforeAfter {
    let has = |m: Metric| rounds.iter().any(|r| r.values.contains_key(&m));
    let goal = if has(Metric::RAwait) {
        Metric::RAwait
    } else {
        Metric::WAwait
    };
    let opts = Options::new(
        goal,
        NAMES.iter().map(|s| s.to_string()).collect(),
        device,
        LoadKind::Unknown,
    );
    let c = compare::compare_two(rounds, 0, 1, &opts, compare::DEFAULT_ALPHA, 2);
    // Each side's geometric mean over its rounds: with every round paired,
    // their ratio is the engine's change (the mean of the log ratios).
    let side = |config: usize, m: Metric| {
        let v: Vec<f64> = rounds
            .iter()
            .filter(|r| r.config == config)
            .filter_map(|r| r.values.get(&m).map(|s| s.value))
            .filter(|v| *v > 0.0)
            .map(f64::ln)
            .collect();
        mean(&v).map(f64::exp)
    };
    let ios = |config: usize, m: Metric| -> Option<u64> {
        rounds
            .iter()
            .filter(|r| r.config == config)
            .map(|r| r.values.get(&m).and_then(|s| s.ios))
            .sum()
    };
    let rows: Vec<Row> = ORDER
        .iter()
        .filter_map(|&m| {
            let e = c.figures.iter().find(|e| e.metric == m)?;
            Some(Row {
                metric: m,
                before: side(0, m)?,
                after: side(1, m)?,
                change: e.change,
                lo: e.lo,
                hi: e.hi,
                answer: e.answer,
                ios: ios(0, m).zip(ios(1, m)),
                withheld: None,
            })
        })
        .collect();
    let pairs = c.figures.iter().map(|e| e.pairs).max().unwrap_or(0);
    BeforeAfter {
        basis: Basis::Rounds { pairs },
        rows,
        controls: ordered(c.controls),
    }
}

#[cfg(test)]
mod tests;
