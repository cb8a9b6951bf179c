//! What a shoot-out is asked to do, checked before anything changes: the
//! device, its configurations (every scheduler with each nr_requests value,
//! each checked against the scheduler catalogue), the load, the budget.

use super::{Goal, ShootoutError};
use crate::compare::{self, Plan};
use crate::device::{QueueSettings, hw_queue_depth};
use crate::error::TuneError;
use crate::load::{LoadOptions, Target};
use crate::os::{DeviceName, SysRoot};
use crate::tuner::{self, Wanted};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The built-in load of a shoot-out and where it runs.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// Must be the benched device; writes only if [`Target::writable`] allowed them.
    pub target: Target,
    pub options: LoadOptions,
}

/// How long a shoot-out goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// Until the engine decides or the looks run out, within this time.
    Budget(Duration),
    /// Exactly this many blocks of every configuration, one look at the end.
    Rounds(usize),
}

/// The default time budget of `bench`.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(180);

/// What to measure and how. Each configuration is a scheduler with its
/// default tunables (a switch resets them, kernel `elevator_switch()`) and
/// nr_requests at its default or at one of [`Config::nr_requests`].
#[derive(Debug, Clone)]
pub struct Config {
    pub device: String,
    /// Schedulers to compare, in round-1 order; empty: every available one.
    pub schedulers: Vec<String>,
    /// nr_requests values to try with each scheduler (empty: its default).
    pub nr_requests: Vec<u64>,
    /// Exactly these configurations instead of `schedulers` x `nr_requests`
    /// (an A/B of two whole settings, tunables included); empty: those.
    /// A configuration leaves what it does not name as it is: give each
    /// every setting that differs between them (`Candidate::of` of a
    /// [`Wanted::snapshot_of`]).
    pub configurations: Vec<Candidate>,
    pub length: Length,
    /// Time after each switch before measuring (queues refill, caches settle).
    pub settle: Duration,
    /// Measuring time per round.
    pub dwell: Duration,
    /// `None`: passive, diskstats of whatever already runs on the device.
    pub load: Option<LoadSpec>,
    pub goal: Goal,
    /// The smallest effect worth acting on, as a fraction (0.05).
    pub min_effect: f64,
    /// Leave a decided winner applied instead of restoring the original settings.
    pub apply: bool,
    /// The device is a scratch device blktune created (reported only).
    pub scratch: bool,
    /// Do not time the device's I/O in the kernel (no BPF program).
    pub no_bpf: bool,
    /// What the settings it starts from, and puts back, are to the user.
    pub start: StartingPoint,
}

/// What the settings a shoot-out starts from (and puts back at its end) are
/// to the user: its restore line says so, and no caller rewrites it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartingPoint {
    /// The device's settings before anything was tried (`bench`, the TUI's `b`).
    #[default]
    Original,
    /// A change the user just made, tried against what it replaced (the
    /// TUI's A/B): the device's originals stay in the journal.
    UsersChoice,
}

impl StartingPoint {
    /// The restore line's first words: `original settings restored`.
    pub fn restored(self) -> &'static str {
        match self {
            Self::Original => "original settings restored",
            Self::UsersChoice => "your choice restored",
        }
    }
}

impl Config {
    /// Defaults: every scheduler at its default nr_requests, a 3-minute
    /// budget, 1 s settle, 3 s dwell, passive, read latency, 5 % minimum effect.
    pub fn passive(device: &str) -> Self {
        Self {
            device: device.into(),
            schedulers: Vec::new(),
            nr_requests: Vec::new(),
            configurations: Vec::new(),
            length: Length::Budget(DEFAULT_BUDGET),
            settle: Duration::from_secs(1),
            dwell: Duration::from_secs(3),
            load: None,
            goal: Goal::ReadLatency,
            min_effect: compare::DEFAULT_MIN_EFFECT,
            apply: false,
            scratch: false,
            no_bpf: false,
            start: StartingPoint::Original,
        }
    }

    /// One round's planned time (without the switch).
    pub fn round_time(&self) -> Duration {
        self.settle + self.dwell
    }
}

/// One configuration of a shoot-out: a scheduler, with nr_requests or its
/// default (and, for an A/B of whole settings, its tunables).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub scheduler: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_requests: Option<u64>,
    /// Tunables of the scheduler, set after the switch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tunables: Vec<(String, String)>,
}

impl Candidate {
    /// A scheduler with its defaults.
    pub fn scheduler(name: &str) -> Self {
        Self {
            scheduler: name.into(),
            nr_requests: None,
            tunables: Vec::new(),
        }
    }

    /// The scheduler, nr_requests and tunables of whole settings (an A/B's
    /// before and after); `None` without a scheduler.
    pub fn of(wanted: &Wanted) -> Option<Self> {
        Some(Self {
            scheduler: wanted.scheduler.clone()?,
            nr_requests: wanted.nr_requests,
            tunables: wanted.tunables.clone(),
        })
    }

    /// `kyber`, `kyber nr_requests=256`, `mq-deadline read_expire=100`.
    pub fn label(&self) -> String {
        let mut s = self.scheduler.clone();
        for (k, v) in &self.tunables {
            s.push_str(&format!(" {k}={v}"));
        }
        if let Some(n) = self.nr_requests {
            s.push_str(&format!(" nr_requests={n}"));
        }
        s
    }

    /// The request that switches to it.
    pub fn wanted(&self) -> Wanted {
        Wanted {
            scheduler: Some(self.scheduler.clone()),
            tunables: self.tunables.clone(),
            nr_requests: self.nr_requests,
            ..Wanted::default()
        }
    }
}

/// What [`run_traced`] checked before anything changed.
pub(super) struct Prepared {
    pub dev: DeviceName,
    pub candidates: Vec<Candidate>,
    pub skipped: Vec<String>,
    pub seq: Option<u64>,
}

/// Check the request; nothing is changed.
pub(super) fn prepare(root: &SysRoot, cfg: &Config) -> Result<Prepared, ShootoutError> {
    let dev = tuner::resolve(root, &cfg.device)?;
    let q = QueueSettings::read(root, &dev);
    let Some(sched) = q.scheduler.clone() else {
        return Err(TuneError::NoScheduler {
            dev: dev.to_string(),
        }
        .into());
    };
    let schedulers = choose_schedulers(dev.as_str(), &cfg.schedulers, &sched.available)?;
    if cfg.length == Length::Rounds(0) {
        return Err(ShootoutError::Usage("--rounds must be at least 1".into()));
    }
    if !(cfg.min_effect > 0.0 && cfg.min_effect < 1.0) {
        return Err(ShootoutError::Usage(
            "--min-effect must be above 0% and below 100%".into(),
        ));
    }
    if let Some(l) = &cfg.load
        && l.target.name() != dev.as_str()
    {
        return Err(ShootoutError::Usage(format!(
            "the load runs on '{}' but the shoot-out measures '{dev}'",
            l.target.name()
        )));
    }
    let (candidates, skipped) = if cfg.configurations.is_empty() {
        candidates(root, &dev, &q, &schedulers, &cfg.nr_requests)?
    } else {
        given(root, &dev, &q, &cfg.configurations)?
    };
    if let Length::Budget(b) = cfg.length {
        // Two blocks of every configuration are the least that gives an interval.
        let least = cfg.round_time() * (2 * candidates.len()) as u32;
        if b < least {
            return Err(ShootoutError::Usage(format!(
                "--budget {} is too short for {} configurations of {} a round: give at least {} (two rounds of each)",
                crate::units::format_duration(b),
                candidates.len(),
                crate::units::format_duration(cfg.round_time()),
                crate::units::format_duration(least)
            )));
        }
    }
    // Every switch, the winner and the restore write only to the device seen
    // now: one detached and re-attached under the name is another device.
    let seq = root.read_diskseq(&dev);
    if let (Some(l), Some(s)) = (&cfg.load, seq)
        && l.target.diskseq().is_some_and(|t| t != s)
    {
        return Err(TuneError::Replaced {
            dev: dev.to_string(),
            seen: l.target.diskseq().unwrap_or_default(),
            now: s.to_string(),
        }
        .into());
    }
    Ok(Prepared {
        dev,
        candidates,
        skipped,
        seq,
    })
}

/// The configurations: every scheduler with each nr_requests value (or
/// its default), checked against the catalogue without writing; a
/// combination the kernel would refuse (nr_requests above the queue depth
/// under none) is left out with a note, unless nothing is left.
pub(super) fn candidates(
    root: &SysRoot,
    dev: &DeviceName,
    queue_settings: &QueueSettings,
    schedulers: &[String],
    nr_requests: &[u64],
) -> Result<(Vec<Candidate>, Vec<String>), ShootoutError> {
    let depth = hw_queue_depth(root, dev);
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let mut first_error = None;
    for s in schedulers {
        let nrs: Vec<Option<u64>> = if nr_requests.is_empty() {
            vec![None]
        } else {
            nr_requests.iter().map(|&n| Some(n)).collect()
        };
        for nr in nrs {
            let c = Candidate {
                nr_requests: nr,
                ..Candidate::scheduler(s)
            };
            match tuner::validate(dev, queue_settings, depth, &c.wanted()) {
                Ok(_) => {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
                Err(e) => {
                    skipped.push(format!("{}: left out ({e})", c.label()));
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    match (out.is_empty(), first_error) {
        (true, Some(e)) => Err(e.into()),
        _ => Ok((out, skipped)),
    }
}

/// The engine's plan for this request.
pub(super) fn plan_of(cfg: &Config, configs: usize) -> Plan {
    match cfg.length {
        Length::Rounds(n) => Plan::fixed(configs, n),
        Length::Budget(b) => {
            // A switch takes some tens of ms; a round a little over its time.
            let max_rounds = ((b.as_secs_f64() / (cfg.round_time().as_secs_f64() + 0.05)) as usize)
                .max(2 * configs);
            // A look needs blocks of its own to see more than the last:
            // a short budget looks fewer times (each look spends its share
            // of the error rate, however little it adds).
            let first = configs.max(1) * compare::DEFAULT_MIN_BLOCKS;
            Plan {
                max_rounds,
                looks: (max_rounds / first).clamp(1, compare::DEFAULT_LOOKS),
                min_blocks: compare::DEFAULT_MIN_BLOCKS,
                adaptive: true,
            }
        }
    }
}

/// Configurations given whole (an A/B): each checked against the
/// catalogue; one it refuses is an error, before any change.
fn given(
    root: &SysRoot,
    dev: &DeviceName,
    queue_settings: &QueueSettings,
    configurations: &[Candidate],
) -> Result<(Vec<Candidate>, Vec<String>), ShootoutError> {
    let depth = hw_queue_depth(root, dev);
    let mut out: Vec<Candidate> = Vec::new();
    for c in configurations {
        tuner::validate(dev, queue_settings, depth, &c.wanted())?;
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    Ok((out, Vec::new()))
}

/// The schedulers to measure: the requested ones (checked, deduplicated) or every available one.
pub(super) fn choose_schedulers(
    dev: &str,
    wanted: &[String],
    available: &[String],
) -> Result<Vec<String>, ShootoutError> {
    if wanted.is_empty() {
        return Ok(available.to_vec());
    }
    let mut out: Vec<String> = Vec::new();
    for w in wanted {
        if !available.contains(w) {
            return Err(TuneError::UnknownScheduler {
                dev: dev.into(),
                name: w.chars().take(32).collect(),
                available: available.to_vec(),
            }
            .into());
        }
        if !out.contains(w) {
            out.push(w.clone());
        }
    }
    Ok(out)
}
