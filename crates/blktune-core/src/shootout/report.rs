//! The result of a shoot-out as its own serde types (the `--json` output,
//! stable keys) and the text table `blktune bench` prints.
//!
//! ```text
//! scheduler        r/s     w/s   MB/s  r_await  w_await  aqu-sz  %util    p50    p99  p99.9  w_p99
//! none          2210.4    61.0   73.0     0.55    14.20    2.11   99.8  0.412  2.010  5.100  31.00
//!                ±12.3    ±0.4   ±1.1    ±0.02    ±0.31   ±0.02   ±0.1 ±0.004 ±0.050 ±0.200  ±1.00
//!
//! kernel        r_n  r_p50  r_p99  r_p99.9  r_dev99    w_n  w_p50   w_p99  w_p99.9  w_dev99
//! none       441234  0.402  1.980    4.900    1.700   1220  9.800  31.000        -   30.100
//!                   ±0.004 ±0.050   ±0.200   ±0.040        ±0.100  ±1.000            ±0.900
//! ```

use super::Measurement;
use super::kernel::KernelStatus;
use super::verdict::{Goal, Metric, SchedulerSummary, Verdict};
use crate::latency::{Dir, Span};
use crate::load::{LoadOptions, Mix};
use crate::tuner::Settings;
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
    pub rounds: usize,
    pub settle_s: f64,
    pub dwell_s: f64,
    /// The settings before the shoot-out.
    pub original: Settings,
    /// Every measurement in the order taken.
    pub measurements: Vec<Measurement>,
    /// Per scheduler, in round-1 order.
    pub schedulers: Vec<SchedulerSummary>,
    /// `null` when the goal's metric was not measured.
    pub verdict: Option<Verdict>,
    /// What `--apply` left on the device (`null`: the original is back).
    pub applied: Option<Settings>,
    /// One sentence: what the device was left with.
    pub final_settings: String,
    pub elapsed_s: f64,
}

/// Number of decimals for a metric's column.
fn decimals(m: Metric) -> usize {
    match m {
        Metric::RS | Metric::WS | Metric::MbS | Metric::Util => 1,
        Metric::RAwait | Metric::WAwait | Metric::AquSz => 2,
        _ => 3,
    }
}

/// Decimals for the verdict line: at least `base`, and enough for three
/// significant digits of the smaller value (up to 4), so sub-0.1 ms latencies
/// on fast devices do not read `0.03 ms vs 0.03 ms (11.7% better)`.
fn verdict_decimals(base: usize, values: &[Option<f64>]) -> usize {
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

/// The line under the table: what its figures are, naming only the columns
/// and the spread rows it shows.
fn footnote(r: &ShootoutResult, cols: &[Metric]) -> String {
    let mut parts = vec![format!(
        "means over {} round{} of {:.0}s",
        r.rounds,
        if r.rounds == 1 { "" } else { "s" },
        r.dwell_s
    )];
    if r.rounds > 1 {
        parts.push("± is half the range across rounds".into());
    }
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

/// The results table: per scheduler a row of means and a row of ± half the
/// range across rounds; then the verdict and any noise warning.
pub fn table(r: &ShootoutResult) -> String {
    let cols: Vec<Metric> = Metric::ALL
        .into_iter()
        .filter(|m| r.schedulers.iter().any(|s| s.get(*m).is_some()))
        .collect();
    let name_w = r
        .schedulers
        .iter()
        .map(|s| s.scheduler.len())
        .max()
        .unwrap_or(0)
        .max("scheduler".len());
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["scheduler".to_string()];
    head.extend(cols.iter().map(|m| m.label().to_string()));
    rows.push(head);
    for s in &r.schedulers {
        let mut mean = vec![s.scheduler.clone()];
        let mut spread = vec![String::new()];
        for m in &cols {
            let d = decimals(*m);
            match s.get(*m) {
                Some(sp) => {
                    mean.push(format!("{:.d$}", sp.mean));
                    spread.push(if sp.rounds > 1 {
                        format!("±{:.d$}", sp.range() / 2.0)
                    } else {
                        String::new()
                    });
                }
                None => {
                    mean.push("-".into());
                    spread.push(String::new());
                }
            }
        }
        rows.push(mean);
        if r.rounds > 1 {
            rows.push(spread);
        }
    }
    let mut out = grid(&rows, name_w);
    let _ = writeln!(out, "{}", footnote(r, &cols));
    out.push('\n');
    out.push_str(&kernel_table(r));
    let metric = r.goal.metric_in(&r.schedulers);
    if r.goal.fallback() == Some(metric) {
        let why = r.kernel.unavailable.as_deref().unwrap_or("not traced");
        let _ = writeln!(
            out,
            "{} is ranked by the built-in load's own latencies: no kernel percentiles ({why})",
            r.goal
        );
    }
    match &r.verdict {
        None => {
            let few = super::verdict::too_few_notes(metric, &r.schedulers);
            if few.is_empty() {
                let _ = writeln!(
                    out,
                    "no winner for {}: its figure ({}) was not measured",
                    r.goal,
                    metric.label()
                );
            } else {
                let _ = writeln!(out, "no winner for {}: {}", r.goal, few.join("; "));
            }
        }
        Some(v) => out.push_str(&verdict_text(v)),
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

/// The kernel's percentiles of the device's own I/O per scheduler, pooled
/// over its rounds, with the I/O counts; a count instead of a p99 under 100
/// I/Os. One line saying why when they are missing.
fn kernel_table(r: &ShootoutResult) -> String {
    if !r.schedulers.iter().any(|s| s.kernel.is_some()) {
        let why = r.kernel.unavailable.as_deref().unwrap_or("not traced");
        return format!("no kernel latency percentiles: {why}\n\n");
    }
    let count = |s: &SchedulerSummary, dir| s.kernel.map_or(0, |k| k.count(Span::Total, dir));
    // Reads always; writes when any scheduler saw one.
    let mut dirs = vec![Dir::Read];
    if r.schedulers.iter().any(|s| count(s, Dir::Write) > 0) {
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
    for s in &r.schedulers {
        let mut mean = vec![s.scheduler.clone()];
        let mut spread = vec![String::new()];
        for &d in &dirs {
            let n = count(s, d);
            mean.push(if s.kernel.is_some() {
                n.to_string()
            } else {
                "-".into()
            });
            spread.push(String::new());
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
                    Some(sp) => {
                        mean.push(format!("{:.3}", sp.mean));
                        spread.push(if sp.rounds > 1 {
                            format!("±{:.3}", sp.range() / 2.0)
                        } else {
                            String::new()
                        });
                    }
                    None => {
                        // The count stands in for a p99 it cannot give.
                        let few = matches!(m, Metric::KRP99 | Metric::KWP99) && n > 0;
                        mean.push(if few { format!("n={n}") } else { "-".into() });
                        spread.push(String::new());
                    }
                }
            }
        }
        rows.push(mean);
        if r.rounds > 1 && spread.iter().any(|c| !c.is_empty()) {
            rows.push(spread);
        }
    }
    let mut out = grid(&rows, 0);
    let _ = writeln!(
        out,
        "(the kernel's latency of every I/O on {} in ms, whoever issued it: from its start, the span \
         r_await averages, and on the device alone (dev99: issue to completion); pooled over {} \
         round{}{}; n = I/Os; no p99 under 100 I/Os, no p99.9 under 1000)",
        r.device,
        r.rounds,
        if r.rounds == 1 { "" } else { "s" },
        if r.rounds > 1 {
            ", ± is half the range of the rounds' own figures"
        } else {
            ""
        }
    );
    out.push('\n');
    out
}

/// `winner for read-latency (r_await): kyber, 0.62 ms vs 0.80 ms for none (22.5% better)`
pub fn verdict_text(v: &Verdict) -> String {
    let d = verdict_decimals(
        decimals(v.metric),
        &[Some(v.winner_value), v.runner_up_value],
    );
    let u = v.metric.unit();
    let n = |c: Option<u64>| c.map_or(String::new(), |c| format!(" (n={c})"));
    let mut s = format!(
        "winner for {} ({}): {}, {:.d$}{u}{}",
        v.goal,
        v.metric.label(),
        v.winner,
        v.winner_value,
        n(v.winner_n)
    );
    if let (Some(r), Some(rv)) = (&v.runner_up, v.runner_up_value) {
        let _ = write!(s, " vs {rv:.d$}{u}{} for {r}", n(v.runner_up_n));
        if let Some(a) = v.advantage_pct {
            let _ = write!(s, " ({a:.1}% better)");
        }
    }
    s.push('\n');
    if v.noisy {
        let _ = writeln!(
            s,
            "WARNING: inside the noise: {}; measure longer (--dwell) or more rounds (--rounds) before acting on it",
            v.notes.join("; ")
        );
    } else {
        for n in &v.notes {
            let _ = writeln!(s, "note: {n}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::verdict::{Figures, verdict};
    use super::*;

    fn result(rounds: &[(&str, &[f64])]) -> ShootoutResult {
        let schedulers: Vec<SchedulerSummary> = rounds
            .iter()
            .map(|(n, v)| {
                SchedulerSummary::new(
                    n,
                    v.iter()
                        .map(|&a| Figures {
                            r_s: 1000.0,
                            r_await: a,
                            ..Figures::default()
                        })
                        .collect(),
                )
            })
            .collect();
        ShootoutResult {
            device: "loop3".into(),
            scratch: true,
            load: None,
            goal: Goal::ReadLatency,
            kernel: KernelStatus::default(),
            rounds: rounds[0].1.len(),
            settle_s: 1.0,
            dwell_s: 3.0,
            original: Settings::default(),
            measurements: Vec::new(),
            verdict: verdict(Goal::ReadLatency, &schedulers),
            schedulers,
            applied: None,
            final_settings: "original settings restored (scheduler=none)".into(),
            elapsed_s: 8.0,
        }
    }

    #[test]
    fn table_shows_means_spreads_and_the_winner() {
        let t = table(&result(&[("none", &[2.0, 2.2]), ("kyber", &[1.0, 1.2])]));
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("scheduler"), "{t}");
        assert!(
            lines[0].contains("r_await") && !lines[0].contains("p99"),
            "{t}"
        );
        assert!(
            lines[1].starts_with("none") && lines[1].contains("2.10"),
            "{t}"
        );
        assert!(lines[2].contains("±0.10"), "{t}");
        assert!(
            t.contains("winner for read-latency (r_await): kyber, 1.10 ms vs 2.10 ms for none (47.6% better)"),
            "{t}"
        );
        assert!(!t.contains("WARNING"), "{t}");
        assert!(t.contains("original settings restored"));
    }

    #[test]
    fn a_verdict_on_sub_millisecond_latencies_shows_the_difference() {
        let t = table(&result(&[
            ("none", &[0.0312, 0.0312]),
            ("bfq", &[0.0276, 0.0276]),
        ]));
        assert!(
            t.contains("bfq, 0.0276 ms vs 0.0312 ms for none (11.5% better)"),
            "{t}"
        );
        assert_eq!(verdict_decimals(2, &[Some(1.1), Some(2.1)]), 2);
        assert_eq!(verdict_decimals(2, &[Some(0.62), Some(0.8)]), 3);
        assert_eq!(verdict_decimals(1, &[Some(5000.0), None]), 1);
        assert_eq!(verdict_decimals(2, &[Some(0.0), None]), 2);
    }

    #[test]
    fn the_footnote_names_only_what_the_table_shows() {
        let one = result(&[("none", &[2.0]), ("kyber", &[1.0])]);
        let reads = [Metric::RAwait, Metric::P50, Metric::P99, Metric::P999];
        let f = footnote(&one, &reads);
        assert_eq!(
            f,
            "(means over 1 round of 3s; r_await/w_await/aqu-sz/%util from diskstats; p50/p99/p99.9 of the load's reads, in ms)"
        );
        let two = result(&[("none", &[2.0, 2.2]), ("kyber", &[1.0, 1.2])]);
        let mut mixed = reads.to_vec();
        mixed.push(Metric::WP99);
        let f = footnote(&two, &mixed);
        assert!(
            f.contains("means over 2 rounds of 3s; ± is half the range across rounds"),
            "{f}"
        );
        assert!(
            f.ends_with("p50/p99/p99.9 of the load's reads and w_p99 of its writes, in ms)"),
            "{f}"
        );
        // Passive: diskstats only.
        assert!(!footnote(&two, &[Metric::RAwait]).contains("load"));
    }

    #[test]
    fn the_kernel_table_shows_counts_and_no_p99_under_100_ios() {
        use super::super::kernel::tests::hist;
        use super::super::kernel::{DwellHists, KernelStatus};
        let dwell = |reads: u64, ns: u64| DwellHists {
            reads: hist(reads, ns),
            dev_reads: hist(reads, ns / 2),
            ..DwellHists::default()
        };
        let mut r = result(&[("none", &[2.0]), ("kyber", &[1.0])]);
        r.goal = Goal::P99;
        r.kernel = KernelStatus {
            traced: true,
            unavailable: None,
        };
        r.schedulers = vec![
            r.schedulers[0]
                .clone()
                .with_kernel(&[dwell(4000, 3_000_000)]),
            r.schedulers[1].clone().with_kernel(&[dwell(42, 1_000_000)]),
        ];
        r.verdict = verdict(Goal::P99, &r.schedulers);
        let t = table(&r);
        // The rows of the kernel table, which follows the main one.
        let line = |start: &str| {
            t.lines()
                .skip_while(|l| !l.starts_with("kernel"))
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no {start} row in {t}"))
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        // Reads only (no writes anywhere): n, p50, p99, p99.9, dev99.
        assert_eq!(
            line("kernel"),
            ["kernel", "r_n", "r_p50", "r_p99", "r_p99.9", "r_dev99"]
        );
        let none = line("none  ");
        assert_eq!(none.len(), 6, "{t}");
        assert_eq!(none[1], "4000");
        assert!(none[3].starts_with("3.0"), "{t}");
        assert!(none[5].starts_with("1.5"), "{t}");
        // 42 reads: a count instead of a p99, no p99.9 or dev99.
        assert_eq!(line("kyber  ")[1..], ["42", "1.004", "n=42", "-", "-"]);
        assert!(
            t.contains("the kernel's latency of every I/O on loop3"),
            "{t}"
        );
        assert!(
            t.contains("kyber: 42 reads, too few for a p99 (needs 100): not ranked"),
            "{t}"
        );
        assert!(t.contains("winner for p99 (kernel r_p99): none"), "{t}");
        assert!(t.contains("(n=4000)"), "{t}");
        // JSON: the pooled figures per scheduler, p99 null under 100.
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["kernel"]["traced"], true);
        assert_eq!(v["schedulers"][1]["kernel"]["reads"]["n"], 42);
        assert!(v["schedulers"][1]["kernel"]["reads"]["p99"].is_null());
        assert!(v["schedulers"][0]["kernel"]["reads"]["p99"].is_f64());
        assert_eq!(v["verdict"]["metric"], "kernel_r_p99");
        assert_eq!(v["verdict"]["winner_n"], 4000);
        let back: ShootoutResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn without_the_kernel_one_line_says_why_and_p99_says_what_it_ranks_by() {
        let mut r = result(&[("none", &[2.0]), ("kyber", &[1.0])]);
        r.kernel.unavailable = Some("disabled by --no-bpf".into());
        r.goal = Goal::P99;
        r.verdict = verdict(Goal::P99, &r.schedulers);
        let t = table(&r);
        assert!(
            t.contains("no kernel latency percentiles: disabled by --no-bpf\n"),
            "{t}"
        );
        assert!(
            t.contains(
                "p99 is ranked by the built-in load's own latencies: no kernel percentiles (disabled by --no-bpf)"
            ),
            "{t}"
        );
        assert!(!t.contains("r_p99"), "{t}");
        // An old result without the `kernel` key still reads.
        let mut v = serde_json::to_value(&r).unwrap();
        v.as_object_mut().unwrap().remove("kernel");
        let back: ShootoutResult = serde_json::from_value(v).unwrap();
        assert!(!back.kernel.traced);
    }

    #[test]
    fn noisy_results_carry_a_warning() {
        let t = table(&result(&[("none", &[1.0, 1.5]), ("kyber", &[1.0, 1.4])]));
        assert!(t.contains("WARNING: inside the noise"), "{t}");
    }

    #[test]
    fn json_has_stable_keys() {
        let r = result(&[("none", &[2.0, 2.2]), ("kyber", &[1.0, 1.2])]);
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(v["goal"], "read-latency");
        assert_eq!(v["verdict"]["winner"], "kyber");
        assert_eq!(v["schedulers"][0]["metrics"][3]["metric"], "r_await");
        assert_eq!(v["schedulers"][0]["rounds"][1]["r_await"], 2.2);
        let back: ShootoutResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}
