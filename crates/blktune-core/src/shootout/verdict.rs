//! Pure arithmetic of a shoot-out: the figures of one measurement, their
//! spread across rounds, the winner for a goal, and whether the win is
//! inside the noise.
//!
//! Noise, as defined here: a win is called noise when the winner's advantage
//! over the runner-up is below [`NOISE_FLOOR_PCT`] percent, or smaller than
//! the spread (max − min across rounds) of either of the two. One round has
//! no spread, so only the floor applies and a note says so.

use super::kernel::DwellHists;
use crate::latency::{Dir, KernelFigures, Span};
use crate::load::LatencySummary;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Advantages below this many percent are called noise.
pub const NOISE_FLOOR_PCT: f64 = 5.0;

/// The built-in load's own view of one measurement.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadFigures {
    /// Latency of the load's reads (ms); `None` when it made none.
    pub reads: Option<LatencySummary>,
    /// Latency of the load's writes (ms).
    pub writes: Option<LatencySummary>,
    pub read_iops: f64,
    pub write_iops: f64,
    pub mb_s: f64,
    pub errors: u64,
}

/// Everything measured in one dwell of one scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Figures {
    /// From diskstats over the dwell window, as `iostat -x` would print for
    /// one interval of that length.
    pub r_s: f64,
    pub w_s: f64,
    /// (rkB/s + wkB/s) × 1024 / 10^6: megabytes of 10^6 bytes, like the load's own MB/s.
    pub mb_s: f64,
    pub r_await: f64,
    pub w_await: f64,
    pub aqu_sz: f64,
    pub util: f64,
    /// Only with a built-in load.
    pub load: Option<LoadFigures>,
}

/// A figure a table column or a goal refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Metric {
    #[serde(rename = "r/s")]
    RS,
    #[serde(rename = "w/s")]
    WS,
    #[serde(rename = "MB/s")]
    MbS,
    #[serde(rename = "r_await")]
    RAwait,
    #[serde(rename = "w_await")]
    WAwait,
    #[serde(rename = "aqu-sz")]
    AquSz,
    #[serde(rename = "util")]
    Util,
    /// Percentiles of the built-in load's reads (ms).
    #[serde(rename = "p50")]
    P50,
    #[serde(rename = "p99")]
    P99,
    #[serde(rename = "p99.9")]
    P999,
    /// 99th percentile of the built-in load's writes (ms).
    #[serde(rename = "w_p99")]
    WP99,
    /// The kernel's percentiles of all the device's reads, from their start
    /// to completion (ms; pooled over a scheduler's dwells).
    #[serde(rename = "kernel_r_p50")]
    KRP50,
    #[serde(rename = "kernel_r_p99")]
    KRP99,
    #[serde(rename = "kernel_r_p99.9")]
    KRP999,
    /// The same of its writes.
    #[serde(rename = "kernel_w_p50")]
    KWP50,
    #[serde(rename = "kernel_w_p99")]
    KWP99,
    #[serde(rename = "kernel_w_p99.9")]
    KWP999,
    /// The kernel's p99 of reads and writes on the device alone (issue to completion).
    #[serde(rename = "kernel_r_dev_p99")]
    KRDevP99,
    #[serde(rename = "kernel_w_dev_p99")]
    KWDevP99,
}

impl Metric {
    /// Columns of the table, in order.
    pub const ALL: [Metric; 11] = [
        Metric::RS,
        Metric::WS,
        Metric::MbS,
        Metric::RAwait,
        Metric::WAwait,
        Metric::AquSz,
        Metric::Util,
        Metric::P50,
        Metric::P99,
        Metric::P999,
        Metric::WP99,
    ];

    /// The kernel's figures, in the order of their table.
    pub const KERNEL: [Metric; 8] = [
        Metric::KRP50,
        Metric::KRP99,
        Metric::KRP999,
        Metric::KRDevP99,
        Metric::KWP50,
        Metric::KWP99,
        Metric::KWP999,
        Metric::KWDevP99,
    ];

    /// Column header (the kernel's figures: `kernel r_p99`).
    pub fn label(self) -> &'static str {
        match self {
            Metric::RS => "r/s",
            Metric::WS => "w/s",
            Metric::MbS => "MB/s",
            Metric::RAwait => "r_await",
            Metric::WAwait => "w_await",
            Metric::AquSz => "aqu-sz",
            Metric::Util => "%util",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::WP99 => "w_p99",
            Metric::KRP50 => "kernel r_p50",
            Metric::KRP99 => "kernel r_p99",
            Metric::KRP999 => "kernel r_p99.9",
            Metric::KWP50 => "kernel w_p50",
            Metric::KWP99 => "kernel w_p99",
            Metric::KWP999 => "kernel w_p99.9",
            Metric::KRDevP99 => "kernel r_dev_p99",
            Metric::KWDevP99 => "kernel w_dev_p99",
        }
    }

    /// The span and direction of one of the kernel's figures.
    pub fn kernel_io(self) -> Option<(Span, Dir)> {
        Some(match self {
            Metric::KRP50 | Metric::KRP99 | Metric::KRP999 => (Span::Total, Dir::Read),
            Metric::KWP50 | Metric::KWP99 | Metric::KWP999 => (Span::Total, Dir::Write),
            Metric::KRDevP99 => (Span::Device, Dir::Read),
            Metric::KWDevP99 => (Span::Device, Dir::Write),
            _ => return None,
        })
    }

    /// The value among the kernel's figures (`None`: not one of them, no
    /// such I/O, or too few I/Os for the percentile).
    pub fn of_kernel(self, k: &KernelFigures) -> Option<f64> {
        let (span, dir) = self.kernel_io()?;
        let l = k.get(span, dir)?;
        match self {
            Metric::KRP50 | Metric::KWP50 => Some(l.p50),
            Metric::KRP999 | Metric::KWP999 => l.p999,
            _ => l.p99,
        }
    }

    /// Unit for sentences (`ms`, `MB/s`).
    pub fn unit(self) -> &'static str {
        match self {
            Metric::RS | Metric::WS => "/s",
            Metric::MbS => " MB/s",
            Metric::AquSz => "",
            Metric::Util => "%",
            _ => " ms",
        }
    }

    /// Is a smaller value better?
    pub fn lower_is_better(self) -> bool {
        !matches!(self, Metric::RS | Metric::WS | Metric::MbS)
    }

    /// The value in a measurement's diskstats or load figures, if it has
    /// one (the kernel's: [`Metric::of_kernel`]).
    pub fn of(self, f: &Figures) -> Option<f64> {
        let reads = f.load.and_then(|l| l.reads);
        match self {
            Metric::RS => Some(f.r_s),
            Metric::WS => Some(f.w_s),
            Metric::MbS => Some(f.mb_s),
            Metric::RAwait => Some(f.r_await),
            Metric::WAwait => Some(f.w_await),
            Metric::AquSz => Some(f.aqu_sz),
            Metric::Util => Some(f.util),
            Metric::P50 => reads.map(|r| r.p50),
            Metric::P99 => reads.map(|r| r.p99),
            Metric::P999 => reads.map(|r| r.p999),
            Metric::WP99 => f.load.and_then(|l| l.writes).map(|w| w.p99),
            _ => None,
        }
    }
}

/// What "better" means for the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Goal {
    /// Lowest r_await (diskstats).
    ReadLatency,
    /// Lowest w_await (diskstats).
    WriteLatency,
    /// Highest MB/s (diskstats).
    Throughput,
    /// Lowest 99th percentile of the device's reads: the kernel's, or the
    /// built-in load's own where the kernel's are unavailable.
    P99,
    /// Lowest 99th percentile of the device's writes (the same sources).
    WriteP99,
}

impl Goal {
    /// Every goal.
    pub const ALL: [Goal; 5] = [
        Goal::ReadLatency,
        Goal::WriteLatency,
        Goal::Throughput,
        Goal::P99,
        Goal::WriteP99,
    ];

    /// The name on the command line.
    pub fn label(self) -> &'static str {
        match self {
            Goal::ReadLatency => "read-latency",
            Goal::WriteLatency => "write-latency",
            Goal::Throughput => "throughput",
            Goal::P99 => "p99",
            Goal::WriteP99 => "write-p99",
        }
    }

    /// The figure it ranks by when the kernel's percentiles are there.
    pub fn metric(self) -> Metric {
        match self {
            Goal::ReadLatency => Metric::RAwait,
            Goal::WriteLatency => Metric::WAwait,
            Goal::Throughput => Metric::MbS,
            Goal::P99 => Metric::KRP99,
            Goal::WriteP99 => Metric::KWP99,
        }
    }

    /// The figure it ranks by without the kernel's percentiles (the
    /// built-in load's own), for the goals that rank by them.
    pub fn fallback(self) -> Option<Metric> {
        match self {
            Goal::P99 => Some(Metric::P99),
            Goal::WriteP99 => Some(Metric::WP99),
            _ => None,
        }
    }

    /// The figure it ranks by in these summaries: the kernel's when they have
    /// them, else the fallback.
    pub fn metric_in(self, summaries: &[SchedulerSummary]) -> Metric {
        match self.fallback() {
            Some(f) if !summaries.iter().any(|s| s.kernel.is_some()) => f,
            _ => self.metric(),
        }
    }
}

impl fmt::Display for Goal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for Goal {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Goal::ALL
            .into_iter()
            .find(|g| g.label() == s)
            .ok_or_else(|| {
                format!(
                    "unknown goal '{s}'; choose read-latency, write-latency, throughput, p99 or write-p99"
                )
            })
    }
}

/// Mean and spread of one metric across rounds.
///
/// For the kernel's percentiles (`kernel_*`) `mean` is the percentile of the
/// histogram pooled over every round (percentiles are never averaged), and
/// `min`, `max`, `stddev` and `rounds` are over the rounds that had enough
/// I/Os for a percentile of their own.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub metric: Metric,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Population standard deviation across rounds (0 for one round).
    pub stddev: f64,
    pub rounds: usize,
}

impl Spread {
    /// Of the values, or `None` when there are none.
    pub fn of(metric: Metric, values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        Some(Self {
            metric,
            mean,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stddev: var.sqrt(),
            rounds: values.len(),
        })
    }

    /// max − min.
    pub fn range(&self) -> f64 {
        self.max - self.min
    }
}

/// One scheduler's measurements and their spreads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedulerSummary {
    pub scheduler: String,
    /// One entry per round, in round order.
    pub rounds: Vec<Figures>,
    /// Every metric that has values, in table order.
    pub metrics: Vec<Spread>,
    /// The kernel's figures of the device's I/O, pooled over every round
    /// (`null`: not traced).
    #[serde(default)]
    pub kernel: Option<KernelFigures>,
}

impl SchedulerSummary {
    /// Summarise one scheduler's rounds.
    pub fn new(scheduler: &str, rounds: Vec<Figures>) -> Self {
        let metrics = Metric::ALL
            .into_iter()
            .filter_map(|m| {
                let v: Vec<f64> = rounds.iter().filter_map(|f| m.of(f)).collect();
                Spread::of(m, &v)
            })
            .collect();
        Self {
            scheduler: scheduler.into(),
            rounds,
            metrics,
            kernel: None,
        }
    }

    /// Add the kernel's figures from the histograms of every dwell (none:
    /// not traced, nothing added).
    pub fn with_kernel(mut self, dwells: &[DwellHists]) -> Self {
        if dwells.is_empty() {
            return self;
        }
        let pooled = DwellHists::pooled(dwells).figures();
        let per_round: Vec<KernelFigures> = dwells.iter().map(DwellHists::figures).collect();
        for m in Metric::KERNEL {
            let Some(value) = m.of_kernel(&pooled) else {
                continue;
            };
            let own: Vec<f64> = per_round.iter().filter_map(|k| m.of_kernel(k)).collect();
            let mut sp = Spread::of(m, &own).unwrap_or(Spread {
                metric: m,
                mean: value,
                min: value,
                max: value,
                stddev: 0.0,
                rounds: 0,
            });
            sp.mean = value;
            self.metrics.push(sp);
        }
        self.kernel = Some(pooled);
        self
    }

    /// The spread of one metric.
    pub fn get(&self, m: Metric) -> Option<&Spread> {
        self.metrics.iter().find(|s| s.metric == m)
    }
}

/// The winner for a goal, and how sure we are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub goal: Goal,
    pub metric: Metric,
    pub winner: String,
    /// Mean of the metric across rounds.
    pub winner_value: f64,
    pub runner_up: Option<String>,
    pub runner_up_value: Option<f64>,
    /// How much better the winner is than the runner-up, in percent of the runner-up.
    pub advantage_pct: Option<f64>,
    /// The I/O counts the kernel's percentiles rest on (pooled over the rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner_n: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_up_n: Option<u64>,
    /// Is the win inside the noise (see the module documentation)?
    pub noisy: bool,
    /// Why it is noise, or caveats (one round, one scheduler).
    pub notes: Vec<String>,
}

/// Pick the winner for `goal`; `None` when no scheduler has the goal's
/// metric. The p99 goals rank by the kernel's percentiles when the
/// summaries have them ([`Goal::metric_in`]); a scheduler with too few I/Os
/// for one is left out, with a note.
pub fn verdict(goal: Goal, summaries: &[SchedulerSummary]) -> Option<Verdict> {
    let m = goal.metric_in(summaries);
    let count = |s: &SchedulerSummary| {
        let (span, dir) = m.kernel_io()?;
        Some(s.kernel.as_ref()?.count(span, dir))
    };
    let mut ranked: Vec<(&SchedulerSummary, &Spread)> = summaries
        .iter()
        .filter_map(|s| s.get(m).map(|sp| (s, sp)))
        .collect();
    if ranked.is_empty() {
        return None;
    }
    // Stable sort: ties keep the measuring order.
    ranked.sort_by(|a, b| {
        let (x, y) = (a.1.mean, b.1.mean);
        let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
        if m.lower_is_better() { o } else { o.reverse() }
    });
    let (w, ws) = ranked[0];
    let mut v = Verdict {
        goal,
        metric: m,
        winner: w.scheduler.clone(),
        winner_value: ws.mean,
        runner_up: None,
        runner_up_value: None,
        advantage_pct: None,
        winner_n: count(w),
        runner_up_n: None,
        noisy: false,
        notes: too_few_notes(m, summaries),
    };
    let Some(&(r, rs)) = ranked.get(1) else {
        v.notes
            .push("only one scheduler measured: nothing to compare".into());
        return Some(v);
    };
    v.runner_up = Some(r.scheduler.clone());
    v.runner_up_value = Some(rs.mean);
    v.runner_up_n = count(r);
    let gap = (rs.mean - ws.mean).abs();
    if rs.mean.abs() < f64::EPSILON && ws.mean.abs() < f64::EPSILON {
        v.noisy = true;
        v.notes.push(format!(
            "no {} was measured for any scheduler (is there any such I/O?)",
            m.label()
        ));
        return Some(v);
    }
    let adv = if rs.mean.abs() > f64::EPSILON {
        gap / rs.mean.abs() * 100.0
    } else {
        100.0
    };
    v.advantage_pct = Some(adv);
    if adv < NOISE_FLOOR_PCT {
        v.noisy = true;
        v.notes.push(format!(
            "the advantage ({adv:.1}%) is below the {NOISE_FLOOR_PCT:.0}% noise floor"
        ));
    }
    let spread = ws.range().max(rs.range());
    if gap < spread {
        v.noisy = true;
        v.notes.push(format!(
            "the gap ({:.3}{u}) is smaller than the spread across rounds ({} {:.3}–{:.3}, {} {:.3}–{:.3})",
            gap,
            w.scheduler,
            ws.min,
            ws.max,
            r.scheduler,
            rs.min,
            rs.max,
            u = m.unit()
        ));
    }
    if ws.rounds < 2 || rs.rounds < 2 {
        v.notes.push("one round only: the spread is unknown".into());
    }
    if let Some(n) = starvation_note(m, &w.scheduler, summaries) {
        v.notes.push(n);
    }
    Some(v)
}

/// The schedulers left out of a ranking by the kernel's percentiles because
/// they had too few I/Os for one: `kyber: 42 reads, too few for a p99`.
pub fn too_few_notes(m: Metric, summaries: &[SchedulerSummary]) -> Vec<String> {
    let Some((span, dir)) = m.kernel_io() else {
        return Vec::new();
    };
    let (what, need) = match m {
        Metric::KRP999 | Metric::KWP999 => ("p99.9", crate::latency::MIN_IOS_FOR_P999),
        Metric::KRP50 | Metric::KWP50 => ("p50", 1),
        _ => ("p99", crate::latency::MIN_IOS_FOR_P99),
    };
    let ios = if dir == Dir::Read { "reads" } else { "writes" };
    summaries
        .iter()
        .filter(|s| s.get(m).is_none())
        .filter_map(|s| {
            let n = s.kernel.as_ref()?.count(span, dir);
            Some(format!(
                "{}: {n} {ios}, too few for a {what} (needs {need}): not ranked",
                s.scheduler
            ))
        })
        .collect()
}

/// A winner on read latency that nearly stopped the writes (or on write
/// latency that nearly stopped the reads) won at their cost: bfq can starve
/// a sequential writer for a whole dwell. Says so when the winner's rate of
/// the other direction is below a tenth of the best other scheduler's.
fn starvation_note(m: Metric, winner: &str, summaries: &[SchedulerSummary]) -> Option<String> {
    let (other, what) = match m {
        Metric::RAwait
        | Metric::P50
        | Metric::P99
        | Metric::P999
        | Metric::KRP50
        | Metric::KRP99
        | Metric::KRP999
        | Metric::KRDevP99 => (Metric::WS, "writes"),
        Metric::WAwait
        | Metric::WP99
        | Metric::KWP50
        | Metric::KWP99
        | Metric::KWP999
        | Metric::KWDevP99 => (Metric::RS, "reads"),
        _ => return None,
    };
    let rate = |s: &SchedulerSummary| s.get(other).map(|sp| sp.mean);
    let mine = summaries
        .iter()
        .find(|s| s.scheduler == winner)
        .and_then(rate)?;
    let best = summaries
        .iter()
        .filter(|s| s.scheduler != winner)
        .filter_map(rate)
        .fold(0.0_f64, f64::max);
    (best >= 1.0 && mine < best / 10.0).then(|| {
        format!(
            "{winner} nearly stopped the {what} ({mine:.1} {l} vs {best:.1} under another scheduler): \
             its {} is bought with them",
            m.label(),
            l = other.label()
        )
    })
}

/// The measuring order: round 1 as given, round 2 reversed, and so on, so
/// a slow drift (cache warming, a neighbour's backup) does not always
/// favour the same scheduler.
pub fn plan(schedulers: &[String], rounds: usize) -> Vec<(usize, String)> {
    let mut out = Vec::with_capacity(schedulers.len() * rounds);
    for r in 0..rounds {
        if r % 2 == 0 {
            out.extend(schedulers.iter().map(|s| (r, s.clone())));
        } else {
            out.extend(schedulers.iter().rev().map(|s| (r, s.clone())));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_latency_win_that_starved_the_writes_says_so() {
        let f = |r_await: f64, w_s: f64| Figures {
            r_s: 1000.0,
            w_s,
            r_await,
            ..Figures::default()
        };
        let s = vec![
            SchedulerSummary::new("kyber", vec![f(0.31, 3300.0), f(0.31, 3250.0)]),
            SchedulerSummary::new("bfq", vec![f(0.28, 0.5), f(0.28, 0.7)]),
        ];
        let v = verdict(Goal::ReadLatency, &s).unwrap();
        assert_eq!(v.winner, "bfq");
        assert!(
            v.notes.iter().any(|n| n
                == "bfq nearly stopped the writes (0.6 w/s vs 3275.0 under another scheduler): its r_await is bought with them"),
            "{:?}",
            v.notes
        );
        // Writes kept going: no such note; a read-only load has none either.
        let fair = vec![
            SchedulerSummary::new("kyber", vec![f(0.31, 3300.0)]),
            SchedulerSummary::new("bfq", vec![f(0.28, 2900.0)]),
        ];
        let reads_only = vec![
            SchedulerSummary::new("kyber", vec![f(0.31, 0.0)]),
            SchedulerSummary::new("bfq", vec![f(0.28, 0.0)]),
        ];
        for s in [fair, reads_only] {
            let v = verdict(Goal::ReadLatency, &s).unwrap();
            assert!(
                !v.notes.iter().any(|n| n.contains("nearly stopped")),
                "{:?}",
                v.notes
            );
        }
        // Throughput has no other direction to starve.
        let v = verdict(Goal::Throughput, &s).unwrap();
        assert!(!v.notes.iter().any(|n| n.contains("nearly stopped")));
    }

    fn fig(r_await: f64, mb_s: f64) -> Figures {
        Figures {
            r_s: 100.0,
            r_await,
            mb_s,
            ..Figures::default()
        }
    }

    fn with_p99(f: Figures, p99: f64) -> Figures {
        Figures {
            load: Some(LoadFigures {
                reads: Some(LatencySummary {
                    count: 10,
                    p99,
                    ..LatencySummary::default()
                }),
                ..LoadFigures::default()
            }),
            ..f
        }
    }

    fn sum(name: &str, r_awaits: &[f64]) -> SchedulerSummary {
        SchedulerSummary::new(name, r_awaits.iter().map(|&a| fig(a, 10.0 / a)).collect())
    }

    #[test]
    fn plan_alternates_the_order_every_round() {
        let s: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let p: Vec<String> = plan(&s, 3)
            .into_iter()
            .map(|(r, s)| format!("{r}{s}"))
            .collect();
        assert_eq!(p, ["0a", "0b", "0c", "1c", "1b", "1a", "2a", "2b", "2c"]);
        assert!(plan(&s, 0).is_empty());
    }

    #[test]
    fn spread_statistics() {
        let s = Spread::of(Metric::RS, &[1.0, 3.0]).unwrap();
        assert_eq!(
            (s.mean, s.min, s.max, s.stddev, s.range()),
            (2.0, 1.0, 3.0, 1.0, 2.0)
        );
        assert!(Spread::of(Metric::RS, &[]).is_none());
    }

    #[test]
    fn clear_winner_by_read_latency() {
        // kyber 1.0 ms ± 0.1, none 2.0 ms ± 0.1: 50 % better, well outside the noise.
        let v = verdict(
            Goal::ReadLatency,
            &[sum("none", &[1.9, 2.1]), sum("kyber", &[0.9, 1.1])],
        )
        .unwrap();
        assert_eq!(v.winner, "kyber");
        assert_eq!(v.runner_up.as_deref(), Some("none"));
        assert!((v.advantage_pct.unwrap() - 50.0).abs() < 1e-9);
        assert!(!v.noisy, "{:?}", v.notes);
        assert!(v.notes.is_empty());
    }

    #[test]
    fn throughput_prefers_the_higher_value() {
        let v = verdict(
            Goal::Throughput,
            &[sum("none", &[1.0, 1.0]), sum("bfq", &[2.0, 2.0])],
        )
        .unwrap();
        // mb_s = 10 / r_await: none 10 MB/s beats bfq 5 MB/s by 100 %.
        assert_eq!(v.winner, "none");
        assert!((v.advantage_pct.unwrap() - 100.0).abs() < 1e-9);
        assert!(!v.noisy);
    }

    #[test]
    fn small_advantage_is_noise() {
        // 3 % better and perfectly repeatable: still below the floor.
        let v = verdict(
            Goal::ReadLatency,
            &[sum("a", &[1.00, 1.00]), sum("b", &[0.97, 0.97])],
        )
        .unwrap();
        assert_eq!(v.winner, "b");
        assert!(v.noisy);
        assert!(v.notes[0].contains("noise floor"), "{:?}", v.notes);
    }

    #[test]
    fn advantage_within_the_spread_is_noise() {
        // 20 % better on average, but one of a's rounds beat b's worst.
        let v = verdict(
            Goal::ReadLatency,
            &[sum("a", &[0.5, 2.0]), sum("b", &[0.9, 1.1])],
        )
        .unwrap();
        assert_eq!(v.winner, "b");
        assert!((v.advantage_pct.unwrap() - 20.0).abs() < 1e-9);
        assert!(v.noisy);
        assert!(v.notes.iter().any(|n| n.contains("spread across rounds")));
    }

    #[test]
    fn one_round_is_flagged_and_one_scheduler_has_no_runner_up() {
        let v = verdict(Goal::ReadLatency, &[sum("a", &[2.0]), sum("b", &[1.0])]).unwrap();
        assert!(!v.noisy);
        assert!(v.notes.iter().any(|n| n.contains("one round")));
        let v = verdict(Goal::ReadLatency, &[sum("a", &[2.0, 2.1])]).unwrap();
        assert_eq!(v.winner, "a");
        assert_eq!(v.runner_up, None);
        assert!(v.notes[0].contains("only one scheduler"));
    }

    #[test]
    fn p99_goal_needs_load_figures() {
        assert!(verdict(Goal::P99, &[sum("a", &[1.0]), sum("b", &[2.0])]).is_none());
        let a = SchedulerSummary::new("a", vec![with_p99(fig(1.0, 1.0), 9.0)]);
        let b = SchedulerSummary::new("b", vec![with_p99(fig(2.0, 1.0), 3.0)]);
        let v = verdict(Goal::P99, &[a, b]).unwrap();
        assert_eq!(v.winner, "b", "p99 ranks by the load's tail, not r_await");
        assert_eq!(v.metric, Metric::P99);
    }

    /// A scheduler whose load saw `load_p99` and whose dwells the kernel
    /// timed: per dwell, reads of (count, ns) groups.
    fn traced(name: &str, load_p99: f64, dwells: &[&[(u64, u64)]]) -> SchedulerSummary {
        use super::super::kernel::tests::hist;
        let hists: Vec<DwellHists> = dwells
            .iter()
            .map(|groups| {
                let mut reads = crate::latency::Hist::empty();
                for &(n, ns) in *groups {
                    reads.add(&hist(n, ns));
                }
                DwellHists {
                    reads,
                    ..DwellHists::default()
                }
            })
            .collect();
        let figs = vec![with_p99(fig(1.0, 1.0), load_p99); dwells.len()];
        SchedulerSummary::new(name, figs).with_kernel(&hists)
    }

    #[test]
    fn p99_ranks_by_the_kernels_pooled_histograms() {
        // a: one clean round and one with 20 slow reads in 1000: each round's
        // own p99 is ~1 and ~50 ms (their mean ~25 ms), but 20 of 2000 is
        // 1 %: the pooled p99 is ~1 ms. b: 2 ms throughout. The load's own
        // p99 says b; the kernel's pooled histograms say a.
        let a = traced(
            "a",
            9.0,
            &[&[(1000, 1_000_000)], &[(980, 1_000_000), (20, 50_000_000)]],
        );
        let b = traced("b", 3.0, &[&[(1000, 2_000_000)], &[(1000, 2_000_000)]]);
        // c did almost no reads: no p99, not ranked, said so.
        let c = traced("c", 0.5, &[&[(30, 100_000)], &[(20, 100_000)]]);
        let v = verdict(Goal::P99, &[a.clone(), b.clone(), c]).unwrap();
        assert_eq!(v.metric, Metric::KRP99);
        assert_eq!(v.winner, "a", "{v:?}");
        assert!((v.winner_value - 1.0).abs() < 0.05, "{v:?}");
        assert_eq!((v.winner_n, v.runner_up_n), (Some(2000), Some(2000)));
        assert_eq!(v.runner_up.as_deref(), Some("b"));
        assert!(
            v.notes
                .contains(&"c: 50 reads, too few for a p99 (needs 100): not ranked".to_string()),
            "{:?}",
            v.notes
        );
        // a's spread is its rounds' own p99s: far apart, so the win is noise.
        let sp = a.get(Metric::KRP99).unwrap();
        assert_eq!(sp.rounds, 2);
        assert!(sp.min < 1.1 && sp.max > 45.0, "{sp:?}");
        assert!(v.noisy);
        // The same figures without the kernel: the load's p99 decides.
        let untraced: Vec<SchedulerSummary> = [a, b]
            .into_iter()
            .map(|s| SchedulerSummary::new(&s.scheduler, s.rounds))
            .collect();
        let v = verdict(Goal::P99, &untraced).unwrap();
        assert_eq!((v.metric, v.winner.as_str()), (Metric::P99, "b"));
        assert_eq!(v.winner_n, None);
    }

    #[test]
    fn too_few_ios_everywhere_is_no_winner() {
        let a = traced("a", 1.0, &[&[(99, 1_000_000)]]);
        let b = traced("b", 2.0, &[&[(10, 1_000_000)]]);
        assert!(verdict(Goal::P99, &[a.clone(), b.clone()]).is_none());
        assert_eq!(
            too_few_notes(Metric::KRP99, &[a, b]),
            [
                "a: 99 reads, too few for a p99 (needs 100): not ranked",
                "b: 10 reads, too few for a p99 (needs 100): not ranked"
            ]
        );
    }

    #[test]
    fn write_p99_ranks_by_the_kernels_writes() {
        use super::super::kernel::tests::hist;
        let w = |name: &str, ns: u64| {
            SchedulerSummary::new(name, vec![fig(1.0, 1.0)]).with_kernel(&[DwellHists {
                writes: hist(500, ns),
                ..DwellHists::default()
            }])
        };
        let v = verdict(Goal::WriteP99, &[w("a", 8_000_000), w("b", 4_000_000)]).unwrap();
        assert_eq!((v.metric, v.winner.as_str()), (Metric::KWP99, "b"));
        assert_eq!(Goal::WriteP99.fallback(), Some(Metric::WP99));
        assert_eq!("write-p99".parse::<Goal>(), Ok(Goal::WriteP99));
    }

    #[test]
    fn nothing_measured_is_called_out() {
        let a = SchedulerSummary::new("a", vec![Figures::default(); 2]);
        let b = SchedulerSummary::new("b", vec![Figures::default(); 2]);
        let v = verdict(Goal::WriteLatency, &[a, b]).unwrap();
        assert!(v.noisy);
        assert!(v.notes[0].contains("no w_await"), "{:?}", v.notes);
    }

    #[test]
    fn goal_names_round_trip() {
        for g in Goal::ALL {
            assert_eq!(g.label().parse::<Goal>(), Ok(g));
        }
        assert!("fast".parse::<Goal>().is_err());
    }
}
