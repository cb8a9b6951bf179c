//! The figures of a shoot-out's rounds as measured, and pooled per
//! configuration for display: diskstats' means, the built-in load's own
//! latencies, the kernel's percentiles (pooled over a configuration's rounds,
//! never averaged); the goals and the figure each ranks by.

use super::kernel::DwellHists;
pub use crate::compare::Metric;
use crate::latency::{Dir, KernelFigures};
use crate::load::LatencySummary;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

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

impl Figures {
    /// The figures of one dwell: diskstats over it, and the built-in load's own.
    pub fn of(ext: &crate::iostat::ExtStats, load: Option<&crate::load::LoadStats>) -> Self {
        Self {
            r_s: ext.r_s,
            w_s: ext.w_s,
            // iostat's kB are 1024 bytes (sectors / 2); report 10^6-byte MB like the load.
            mb_s: (ext.rkb_s + ext.wkb_s) * 1024.0 / 1e6,
            r_await: ext.r_await,
            w_await: ext.w_await,
            aqu_sz: ext.aqu_sz,
            util: ext.util,
            load: load.map(|l| LoadFigures {
                reads: l.reads.hist.summary_ms(),
                writes: l.writes.hist.summary_ms(),
                read_iops: l.read_iops(),
                write_iops: l.write_iops(),
                mb_s: l.mb_s(),
                errors: l.reads.errors + l.writes.errors,
            }),
        }
    }
}

impl Metric {
    /// The value in a measurement's diskstats or load figures, if it has
    /// one (the kernel's: [`Metric::of_kernel`]).
    pub fn of(self, figures: &Figures) -> Option<f64> {
        let reads = figures.load.and_then(|l| l.reads);
        match self {
            Metric::RS => Some(figures.r_s),
            Metric::WS => Some(figures.w_s),
            Metric::MbS => Some(figures.mb_s),
            Metric::RAwait => Some(figures.r_await),
            Metric::WAwait => Some(figures.w_await),
            Metric::AquSz => Some(figures.aqu_sz),
            Metric::Util => Some(figures.util),
            Metric::P50 => reads.map(|r| r.p50),
            Metric::P99 => reads.map(|r| r.p99),
            Metric::P999 => reads.map(|r| r.p999),
            Metric::WP99 => figures.load.and_then(|l| l.writes).map(|w| w.p99),
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
    pub fn metric_in(self, summaries: &[ConfigSummary]) -> Metric {
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
    fn from_str(text: &str) -> Result<Self, String> {
        Goal::ALL
            .into_iter()
            .find(|g| g.label() == text)
            .ok_or_else(|| {
                format!(
                    "unknown goal '{text}'; choose read-latency, write-latency, throughput, p99 or write-p99"
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

/// One configuration's measurements and their spreads (pooled, for
/// display: the verdict rests on the rounds' pairs, [`crate::compare`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigSummary {
    /// `kyber`, or `kyber nr_requests=256` when nr_requests was varied.
    pub configuration: String,
    /// One entry per round, in round order.
    pub rounds: Vec<Figures>,
    /// Every metric that has values, in table order.
    pub metrics: Vec<Spread>,
    /// The kernel's figures of the device's I/O, pooled over every round
    /// (`null`: not traced).
    #[serde(default)]
    pub kernel: Option<KernelFigures>,
}

impl ConfigSummary {
    /// Summarise one configuration's rounds.
    pub fn new(configuration: &str, rounds: Vec<Figures>) -> Self {
        let metrics = Metric::ALL
            .into_iter()
            .filter_map(|m| {
                let v: Vec<f64> = rounds.iter().filter_map(|f| m.of(f)).collect();
                Spread::of(m, &v)
            })
            .collect();
        Self {
            configuration: configuration.into(),
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

/// The configurations left out of a ranking by the kernel's percentiles because
/// they had too few I/Os for one: `kyber: 42 reads, too few for a p99`.
pub fn too_few_notes(metric: Metric, summaries: &[ConfigSummary]) -> Vec<String> {
    let Some((span, dir)) = metric.kernel_io() else {
        return Vec::new();
    };
    let (what, need) = match metric {
        Metric::KRP999 | Metric::KWP999 => ("p99.9", crate::latency::MIN_IOS_FOR_P999),
        Metric::KRP50 | Metric::KWP50 => ("p50", 1),
        _ => ("p99", crate::latency::MIN_IOS_FOR_P99),
    };
    let ios = if dir == Dir::Read { "reads" } else { "writes" };
    summaries
        .iter()
        .filter(|s| s.get(metric).is_none())
        .filter_map(|s| {
            let n = s.kernel.as_ref()?.count(span, dir);
            Some(format!(
                "{}: {n} {ios}, too few for a {what} (needs {need}): not ranked",
                s.configuration
            ))
        })
        .collect()
}

/// A winner on read latency that nearly stopped the writes (or on write
/// latency that nearly stopped the reads) won at their cost: bfq can starve
/// a sequential writer for a whole dwell. Says so when the winner's rate of
/// the other direction is below a tenth of the best other configuration's.
pub fn starvation_note(
    metric: Metric,
    winner: &str,
    summaries: &[ConfigSummary],
) -> Option<String> {
    let (other, what) = match metric {
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
    let rate = |s: &ConfigSummary| s.get(other).map(|sp| sp.mean);
    let mine = summaries
        .iter()
        .find(|s| s.configuration == winner)
        .and_then(rate)?;
    let best = summaries
        .iter()
        .filter(|s| s.configuration != winner)
        .filter_map(rate)
        .fold(0.0_f64, f64::max);
    (best >= 1.0 && mine < best / 10.0).then(|| {
        format!(
            "{winner} nearly stopped the {what} ({mine:.1} {l} vs {best:.1} under another configuration): \
             its {} is bought with them",
            metric.label(),
            l = other.label()
        )
    })
}
