//! The result of a shoot-out as its own serde types (the `--json` output,
//! stable keys) and the text `blktune bench` prints: each configuration's
//! rounds pooled for display, then the verdict ([`verdict_lines`]).
//!
//! ```text
//! configuration  rounds     r/s   w/s  MB/s  r_await  w_await  aqu-sz  %util    p50    p99  p99.9  w_p99
//! none               11  2210.4  61.0  73.0     0.55    14.20    2.11   99.8  0.412  2.010  5.100  31.00
//!
//! kernel        r_n  r_p50  r_p99  r_p99.9  r_dev99    w_n  w_p50   w_p99  w_p99.9  w_dev99
//! none       441234  0.402  1.980    4.900    1.700   1220  9.800  31.000        -   30.100
//! ```

use super::Measurement;
use super::figures::{ConfigSummary, Goal, Metric};
use super::kernel::KernelStatus;
use super::verdict::Verdict;
use crate::compare::Analysis;
use crate::latency::{Dir, Span};
use crate::load::{LoadOptions, Mix};
use crate::tuner::Wanted;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The built-in load of a shoot-out, as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadInfo {
    pub mix: Mix,
    pub queue_depth: usize,
    /// Sequential writers (the `mixed` mix only).
    pub writers: usize,
    pub block_bytes: u64,
    pub seq_block_bytes: u64,
}

impl LoadInfo {
    /// Describe a load's options.
    pub fn of(o: &LoadOptions) -> Self {
        Self {
            mix: o.mix,
            queue_depth: o.queue_depth,
            writers: if o.mix == Mix::Mixed { o.writers } else { 0 },
            block_bytes: o.block,
            seq_block_bytes: o.seq_block,
        }
    }

    /// `mixed: 4 × 4 KiB random reads + 1 × 1 MiB sequential writes`
    pub fn describe(&self) -> String {
        let kib = |b: u64| format!("{} KiB", b / 1024);
        let big = |b: u64| {
            if b >= 1 << 20 {
                format!("{} MiB", b >> 20)
            } else {
                kib(b)
            }
        };
        match self.mix {
            Mix::RandRead => format!(
                "randread: {} × {} random reads",
                self.queue_depth,
                kib(self.block_bytes)
            ),
            Mix::RandRw => format!(
                "randrw: {} × {} random reads/writes (50/50)",
                self.queue_depth,
                kib(self.block_bytes)
            ),
            Mix::Mixed => format!(
                "mixed: {} × {} random reads + {} × {} sequential writes",
                self.queue_depth,
                kib(self.block_bytes),
                self.writers,
                big(self.seq_block_bytes)
            ),
        }
    }
}

/// Everything a shoot-out found (`blktune bench --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShootoutResult {
    pub device: String,
    /// Was the device a scratch device blktune created for the bench?
    pub scratch: bool,
    /// `null`: passive (the device's own workload).
    pub load: Option<LoadInfo>,
    pub goal: Goal,
    /// Whether the kernel timed the device's I/O, and why not.
    #[serde(default)]
    pub kernel: KernelStatus,
    /// The time budget (`null`: a fixed number of rounds).
    #[serde(default)]
    pub budget_s: Option<f64>,
    /// Rounds measured, and the blocks they came in.
    pub rounds: usize,
    pub blocks: usize,
    pub settle_s: f64,
    pub dwell_s: f64,
    /// The settings before the shoot-out.
    pub original: Wanted,
    /// Per configuration, its rounds pooled for display.
    pub configurations: Vec<ConfigSummary>,
    /// Per configuration, the settings it switches to.
    pub settings: Vec<Wanted>,
    /// Every measurement in the order taken.
    pub measurements: Vec<Measurement>,
    /// The comparison engine's last look (`null`: nothing measured).
    pub analysis: Option<Analysis>,
    pub verdict: Verdict,
    /// What `--apply` left on the device (`null`: the original is back).
    pub applied: Option<Wanted>,
    /// One sentence: what the device was left with.
    pub final_settings: String,
    pub elapsed_s: f64,
}

impl ShootoutResult {
    /// The decided winner's label and settings, if there is one.
    pub fn winner(&self) -> Option<(&str, &Wanted)> {
        Some((
            self.verdict.winner.as_deref()?,
            self.verdict.winner_settings.as_ref()?,
        ))
    }
}

/// Number of decimals for a metric's column.
fn decimals(m: Metric) -> usize {
    match m {
        Metric::RS | Metric::WS | Metric::MbS | Metric::Util => 1,
        Metric::RAwait | Metric::WAwait | Metric::AquSz => 2,
        _ => 3,
    }
}

/// Decimals for a pooled value: at least `base`, and enough for three
/// significant digits of the smallest value (up to 4), so sub-0.1 ms
/// latencies on fast devices do not read `0.03` for all.
pub(super) fn value_decimals(base: usize, values: &[Option<f64>]) -> usize {
    let smallest = values
        .iter()
        .flatten()
        .map(|v| v.abs())
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold(f64::INFINITY, f64::min);
    if !smallest.is_finite() {
        return base;
    }
    let need = (2.0 - smallest.log10().floor()).clamp(0.0, 4.0) as usize;
    base.max(need)
}

/// The line under the table: what its figures are, naming only the columns it shows.
fn footnote(r: &ShootoutResult, cols: &[Metric]) -> String {
    let mut parts = vec![format!(
        "each configuration's rounds of {} pooled, for display only: the verdict rests on the rounds' pairs",
        crate::units::format_duration(std::time::Duration::from_secs_f64(r.dwell_s))
    )];
    parts.push("r_await/w_await/aqu-sz/%util from diskstats".into());
    let reads = [Metric::P50, Metric::P99, Metric::P999]
        .into_iter()
        .filter(|m| cols.contains(m))
        .map(Metric::label)
        .collect::<Vec<_>>();
    match (reads.is_empty(), cols.contains(&Metric::WP99)) {
        (false, true) => parts.push(format!(
            "{} of the load's reads and w_p99 of its writes, in ms",
            reads.join("/")
        )),
        (false, false) => parts.push(format!("{} of the load's reads, in ms", reads.join("/"))),
        (true, true) => parts.push("w_p99 of the load's writes, in ms".into()),
        (true, false) => {}
    }
    format!("({})", parts.join("; "))
}

/// The results: each configuration's rounds pooled (means; the kernel's
/// percentiles from the pooled histograms), then the verdict.
pub fn table(r: &ShootoutResult) -> String {
    let cols: Vec<Metric> = Metric::ALL
        .into_iter()
        .filter(|m| r.configurations.iter().any(|s| s.get(*m).is_some()))
        .collect();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["configuration".to_string(), "rounds".to_string()];
    head.extend(cols.iter().map(|m| m.label().to_string()));
    rows.push(head);
    for s in &r.configurations {
        let mut row = vec![s.configuration.clone(), s.rounds.len().to_string()];
        for m in &cols {
            let values: Vec<Option<f64>> = r
                .configurations
                .iter()
                .map(|o| o.get(*m).map(|sp| sp.mean))
                .collect();
            let d = value_decimals(decimals(*m), &values);
            row.push(
                s.get(*m)
                    .map_or("-".into(), |sp| format!("{:.d$}", sp.mean)),
            );
        }
        rows.push(row);
    }
    let mut out = grid(&rows, 0);
    let _ = writeln!(out, "{}", footnote(r, &cols));
    out.push('\n');
    out.push_str(&kernel_table(r));
    let metric = r.verdict.metric;
    if r.goal.fallback() == Some(metric) {
        let why = r.kernel.unavailable.as_deref().unwrap_or("not traced");
        let _ = writeln!(
            out,
            "{} is ranked by the built-in load's own latencies: no kernel percentiles ({why})",
            r.goal
        );
    }
    for line in super::conclusion::verdict_lines(r, true) {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "{}", r.final_settings);
    out
}

/// Rows of cells as aligned text: the first column left-aligned and at
/// least `name_w` wide, the others right-aligned, two spaces apart.
fn grid(rows: &[Vec<String>], name_w: usize) -> String {
    let mut widths = vec![0usize; rows.first().map_or(0, Vec::len)];
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    if let Some(w) = widths.first_mut() {
        *w = (*w).max(name_w);
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
            let pad = w.saturating_sub(c.chars().count());
            if i == 0 {
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The kernel's percentiles of the device's own I/O per configuration, pooled
/// over its rounds, with the I/O counts; a count instead of a p99 under 100
/// I/Os. One line saying why when they are missing.
fn kernel_table(r: &ShootoutResult) -> String {
    if !r.configurations.iter().any(|s| s.kernel.is_some()) {
        let why = r.kernel.unavailable.as_deref().unwrap_or("not traced");
        return format!("no kernel latency percentiles: {why}\n\n");
    }
    let count = |s: &ConfigSummary, dir| s.kernel.map_or(0, |k| k.count(Span::Total, dir));
    // Reads always; writes when any configuration saw one.
    let mut dirs = vec![Dir::Read];
    if r.configurations.iter().any(|s| count(s, Dir::Write) > 0) {
        dirs.push(Dir::Write);
    }
    let mut head = vec!["kernel".to_string()];
    for d in &dirs {
        let p = d.prefix();
        for c in ["n", "p50", "p99", "p99.9", "dev99"] {
            head.push(format!("{p}_{c}"));
        }
    }
    let mut rows = vec![head];
    for s in &r.configurations {
        let mut mean = vec![s.configuration.clone()];
        for &d in &dirs {
            let n = count(s, d);
            mean.push(if s.kernel.is_some() {
                n.to_string()
            } else {
                "-".into()
            });
            let cols = if d == Dir::Read {
                [
                    Metric::KRP50,
                    Metric::KRP99,
                    Metric::KRP999,
                    Metric::KRDevP99,
                ]
            } else {
                [
                    Metric::KWP50,
                    Metric::KWP99,
                    Metric::KWP999,
                    Metric::KWDevP99,
                ]
            };
            for m in cols {
                match s.get(m) {
                    Some(sp) => mean.push(format!("{:.3}", sp.mean)),
                    None => {
                        // The count stands in for a p99 it cannot give.
                        let few = matches!(m, Metric::KRP99 | Metric::KWP99) && n > 0;
                        mean.push(if few { format!("n={n}") } else { "-".into() });
                    }
                }
            }
        }
        rows.push(mean);
    }
    let mut out = grid(&rows, 0);
    let _ = writeln!(
        out,
        "(the kernel's latency of every I/O on {} in ms, whoever issued it: from its start, the span \
         r_await averages, and on the device alone (dev99: issue to completion); each \
         configuration's rounds pooled; n = I/Os; no p99 under 100 I/Os, no p99.9 under 1000)",
        r.device,
    );
    out.push('\n');
    out
}

#[cfg(test)]
mod tests;
