//! The shoot-out: switch a device through its schedulers, measure each under
//! the same load, and say which one won and whether the win is real.
//!
//! For every (round, scheduler) of [`plan`] the device is switched through
//! [`Tuner`] (journalled, so a crash leaves `blktune revert` able to undo it),
//! the load starts, [`Config::settle`] passes, then diskstats are sampled at
//! both ends of [`Config::dwell`] (one [`RateTracker`] interval, i.e. exactly
//! what `iostat -x` prints for one interval of that length) while the
//! built-in load times its own I/Os. Afterwards the original settings come
//! back ([`tuner::Locked::restore`] with the snapshot taken first, and the one
//! revert policy for the journal entry), or the winner is applied with
//! [`Config::apply`]. Cancelling (the `cancel` flag: Ctrl-C, SIGTERM, Esc in
//! the TUI) stops within a tenth of a second and restores too; so does a
//! panic in the `progress` callback (a closed stderr). The device's lock is
//! held from the snapshot to the restore, so no other change slips in.
//!
//! Library use, for the TUI's `b` key:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use blktune_core::shootout::{self, Config};
//! use std::sync::atomic::AtomicBool;
//! let root = blktune_core::os::SysRoot::default();
//! let cancel = AtomicBool::new(false);            // set it from Esc
//! let cfg = Config::passive("sda");               // or with a load: Config { load: Some(..), .. }
//! let journal = Some(blktune_core::journal::Journal::for_root(&root));
//! let result = shootout::run(&root, journal, &cfg, |p| eprintln!("{}", p.line()), &cancel)?;
//! println!("{}", shootout::table(&result));
//! # Ok(()) }
//! ```

mod export;
mod kernel;
mod report;
mod verdict;

pub use crate::latency::{IoLatency, KernelFigures};
pub use export::{WinnerExport, export_winner};
pub use kernel::{DwellHists, KernelStatus, SharedTracer, Tracing};
pub use report::{LoadInfo, ShootoutResult, table, verdict_text};
pub use verdict::{
    Figures, Goal, LoadFigures, Metric, NOISE_FLOOR_PCT, SchedulerSummary, Spread, Verdict, plan,
    verdict,
};

use crate::device::QueueSettings;
use crate::diskstats;
use crate::error::TuneError;
use crate::iostat::ExtStats;
use crate::journal::Journal;
use crate::load::{Load, LoadError, LoadOptions, LoadStats, Target};
use crate::os::SysRoot;
use crate::sampler::RateTracker;
use crate::tuner::{self, Tuner, Wanted};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The built-in load of a shoot-out and where it runs.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// Must be the benched device; writes only if [`Target::writable`] allowed them.
    pub target: Target,
    pub options: LoadOptions,
}

/// What to measure and how. Each scheduler runs with its default tunables
/// and nr_requests: a switch resets them (kernel `elevator_switch()`).
#[derive(Debug, Clone)]
pub struct Config {
    pub device: String,
    /// Schedulers to compare, in round-1 order; empty: every available one.
    pub schedulers: Vec<String>,
    pub rounds: usize,
    /// Time after each switch before measuring (queues refill, caches settle).
    pub settle: Duration,
    /// Measuring time per scheduler and round.
    pub dwell: Duration,
    /// `None`: passive, diskstats of whatever already runs on the device.
    pub load: Option<LoadSpec>,
    pub goal: Goal,
    /// Leave the winner applied instead of restoring the original settings.
    pub apply: bool,
    /// The device is a scratch device blktune created (reported only).
    pub scratch: bool,
    /// Do not time the device's I/O in the kernel (no BPF program).
    pub no_bpf: bool,
}

impl Config {
    /// Defaults: every scheduler, 2 rounds, 1 s settle, 10 s dwell, passive, read latency.
    pub fn passive(device: &str) -> Self {
        Self {
            device: device.into(),
            schedulers: Vec::new(),
            rounds: 2,
            settle: Duration::from_secs(1),
            dwell: Duration::from_secs(10),
            load: None,
            goal: Goal::ReadLatency,
            apply: false,
            scratch: false,
            no_bpf: false,
        }
    }

    /// Total time the measurements take (without the switches).
    pub fn planned_time(&self, schedulers: usize) -> Duration {
        (self.settle + self.dwell) * (schedulers * self.rounds) as u32
    }
}

/// What the shoot-out is doing right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Switching,
    Settling,
    Measuring,
    Restoring,
}

/// A progress report, sent at every phase change and a few times a second.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub device: String,
    pub scheduler: String,
    /// 1-based.
    pub round: usize,
    pub rounds: usize,
    /// 1-based index of the (round, scheduler) step.
    pub step: usize,
    pub steps: usize,
    pub phase: Phase,
    /// Estimated time until the last measurement ends.
    pub time_left: Duration,
    /// Fraction done, 0 to 1, for a progress bar.
    pub done: f64,
}

impl Progress {
    /// `round 1/2  kyber (3/8)  measuring  21s left`
    pub fn line(&self) -> String {
        let phase = match self.phase {
            Phase::Switching => "switching",
            Phase::Settling => "settling",
            Phase::Measuring => "measuring",
            Phase::Restoring => "restoring",
        };
        format!(
            "round {}/{}  {} ({}/{})  {}  {}s left",
            self.round,
            self.rounds,
            self.scheduler,
            self.step,
            self.steps,
            phase,
            self.time_left.as_secs_f64().ceil() as u64
        )
    }
}

/// One measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// 1-based.
    pub round: usize,
    pub scheduler: String,
    /// Seconds from the start of the shoot-out to the start of the dwell.
    pub at_s: f64,
    pub dwell_s: f64,
    pub figures: Figures,
    /// The kernel's percentiles of the device's I/O in this dwell (`null`: not traced).
    #[serde(default)]
    pub kernel: Option<KernelFigures>,
    /// The settings the kernel reported while measuring (`kyber nr_requests=256`).
    pub settings: String,
}

/// Why a shoot-out did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ShootoutError {
    /// Bad request; nothing was changed.
    #[error(transparent)]
    Tune(#[from] TuneError),
    /// Bad request; nothing was changed.
    #[error("{0}")]
    Usage(String),
    /// Something failed midway; `restore` says what happened to the settings.
    #[error("{cause}; {restore}")]
    Aborted { cause: String, restore: String },
    /// The cancel flag was set; `restore` says what happened to the settings.
    #[error("shoot-out on '{dev}' cancelled; {restore}")]
    Cancelled { dev: String, restore: String },
}

impl ShootoutError {
    /// 2 for bad requests, 1 for failures, 130 for a cancel (like Ctrl-C).
    pub fn exit_code(&self) -> i32 {
        match self {
            ShootoutError::Tune(t) => t.exit_code(),
            ShootoutError::Usage(_) => 2,
            ShootoutError::Aborted { .. } => 1,
            ShootoutError::Cancelled { .. } => 130,
        }
    }
}

/// Run a shoot-out. `progress` is called from this thread; `cancel` is polled
/// every 100 ms. Returns after the original settings are back (or the winner
/// applied); on error or cancel the settings are restored before returning.
/// The kernel's percentiles come from a tracer of its own ([`Tracing::Own`]).
pub fn run(
    root: &SysRoot,
    journal: Option<Journal>,
    cfg: &Config,
    progress: impl FnMut(&Progress),
    cancel: &AtomicBool,
) -> Result<ShootoutResult, ShootoutError> {
    run_traced(root, journal, cfg, Tracing::Own, progress, cancel)
}

/// [`run`], with the kernel's histograms from `tracing` (the TUI shares
/// the tracer its sampler already runs, so the program is loaded once).
pub fn run_traced(
    root: &SysRoot,
    journal: Option<Journal>,
    cfg: &Config,
    tracing: Tracing,
    mut progress: impl FnMut(&Progress),
    cancel: &AtomicBool,
) -> Result<ShootoutResult, ShootoutError> {
    let dev = tuner::resolve(root, &cfg.device)?;
    let q = QueueSettings::read(root, &dev);
    let Some(sched) = q.scheduler.clone() else {
        return Err(TuneError::NoScheduler {
            dev: dev.to_string(),
        }
        .into());
    };
    let schedulers = choose_schedulers(&dev.to_string(), &cfg.schedulers, &sched.available)?;
    if cfg.rounds == 0 {
        return Err(ShootoutError::Usage("--rounds must be at least 1".into()));
    }
    if let Some(l) = &cfg.load
        && l.target.name() != dev.as_str()
    {
        return Err(ShootoutError::Usage(format!(
            "the load runs on '{}' but the shoot-out measures '{dev}'",
            l.target.name()
        )));
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
    // The kernel's percentiles of the device's own I/O, when it can.
    let mut tracer = kernel::DwellTracer::start(root, &dev, cfg.no_bpf, tracing);
    if let (Some(_), None, Err(why)) = (cfg.goal.fallback(), &cfg.load, &tracer) {
        return Err(ShootoutError::Usage(format!(
            "--goal {} without a --load needs the kernel's percentiles, and there are none here ({why}); choose a --load",
            cfg.goal
        )));
    }
    let kernel_status = KernelStatus {
        traced: tracer.is_ok(),
        unavailable: tracer.as_ref().err().map(ToString::to_string),
    };
    let tuner = Tuner::new(root.clone(), journal).expecting(dev.as_str(), seq);
    let held = tuner.lock(dev.as_str())?;
    // The original is read under the lock: no other change is half-way now.
    let original = Wanted::snapshot_of(&QueueSettings::read(root, &dev));
    let steps = plan(&schedulers, cfg.rounds);
    let started = Instant::now();

    let mut guard = RestoreOnUnwind {
        held: &held,
        original: Some(original.clone()),
    };
    let outcome = measure_all(
        root,
        &held,
        cfg,
        &steps,
        started,
        tracer.as_mut().ok(),
        &mut progress,
        cancel,
    );

    progress(&Progress {
        device: dev.to_string(),
        scheduler: original.scheduler.clone().unwrap_or_default(),
        round: cfg.rounds,
        rounds: cfg.rounds,
        step: steps.len(),
        steps: steps.len(),
        phase: Phase::Restoring,
        time_left: Duration::ZERO,
        done: 1.0,
    });
    let (measurements, hists) = match outcome {
        Ok(m) => m,
        Err(Stop::Replaced(cause)) => {
            // Nothing of the original goes onto another device; the journal
            // entry names the old diskseq, so 'revert' drops it as stale.
            return Err(ShootoutError::Aborted {
                cause,
                restore: not_restored(dev.as_str()),
            });
        }
        Err(e) => {
            let restore = restore(guard.disarm(), &original);
            return Err(match e {
                Stop::Cancelled => ShootoutError::Cancelled {
                    dev: dev.to_string(),
                    restore,
                },
                Stop::Failed(cause) => ShootoutError::Aborted { cause, restore },
                Stop::Replaced(_) => unreachable!("handled above"),
            });
        }
    };
    let summaries: Vec<SchedulerSummary> = schedulers
        .iter()
        .map(|s| {
            let rounds = measurements
                .iter()
                .filter(|m| &m.scheduler == s)
                .map(|m| m.figures)
                .collect();
            let dwells: Vec<DwellHists> = measurements
                .iter()
                .zip(&hists)
                .filter(|(m, _)| &m.scheduler == s)
                .filter_map(|(_, h)| h.clone())
                .collect();
            SchedulerSummary::new(s, rounds).with_kernel(&dwells)
        })
        .collect();
    let verdict = verdict(cfg.goal, &summaries);
    let (final_settings, applied) = match (&verdict, cfg.apply) {
        (Some(v), true) if Some(&v.winner) != original.scheduler.as_ref() => {
            let want = Wanted {
                scheduler: Some(v.winner.clone()),
                ..Wanted::default()
            };
            match held.apply(&want) {
                Ok(_) => (
                    format!(
                        "winner applied: {} (undo with 'blktune revert {dev}')",
                        want.summary()
                    ),
                    Some(want),
                ),
                Err(e) => {
                    let restore = restore(guard.disarm(), &original);
                    return Err(ShootoutError::Aborted {
                        cause: format!("cannot apply the winner: {e}"),
                        restore,
                    });
                }
            }
        }
        _ => (restore(guard.disarm(), &original), None),
    };
    guard.disarm();
    Ok(ShootoutResult {
        device: dev.to_string(),
        scratch: cfg.scratch,
        load: cfg.load.as_ref().map(|l| report::LoadInfo::of(&l.options)),
        goal: cfg.goal,
        kernel: kernel_status,
        rounds: cfg.rounds,
        settle_s: cfg.settle.as_secs_f64(),
        dwell_s: cfg.dwell.as_secs_f64(),
        original,
        measurements,
        schedulers: summaries,
        verdict,
        applied,
        final_settings,
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}

/// The schedulers to measure: the requested ones (checked, deduplicated) or every available one.
fn choose_schedulers(
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

/// Put the original settings back; a sentence saying what happened. The
/// journal entry follows the one revert policy (dropped when the device is
/// back at the journalled originals, whoever made the entry).
fn restore(held: &tuner::Locked<'_>, original: &Wanted) -> String {
    let dev = held.name();
    match held.restore(original) {
        Ok(_) => format!("original settings restored ({})", original.summary()),
        // Refused, as it must be: said as when the shoot-out saw it first.
        Err(TuneError::Replaced { .. }) => not_restored(dev),
        Err(e) => format!("RESTORE FAILED ({e}); run 'blktune revert {dev}'"),
    }
}

/// What a shoot-out whose device was re-created under its name did with
/// the original settings: nothing (they are the old device's), however it
/// found out (between steps, or when a step failed on the new device).
fn not_restored(dev: &str) -> String {
    format!(
        "nothing was restored onto the new device; 'blktune revert {dev}' drops the stale journal entry"
    )
}

/// Restores the original settings if the shoot-out unwinds (a panic in the
/// caller's `progress`, e.g. writing to a closed stderr) before it restored
/// them itself; [`RestoreOnUnwind::disarm`] once it takes over.
struct RestoreOnUnwind<'a, 'b> {
    held: &'a tuner::Locked<'b>,
    original: Option<Wanted>,
}

impl<'a, 'b> RestoreOnUnwind<'a, 'b> {
    /// The held device, for the normal restore; the guard does nothing more.
    fn disarm(&mut self) -> &'a tuner::Locked<'b> {
        self.original = None;
        self.held
    }
}

impl Drop for RestoreOnUnwind<'_, '_> {
    fn drop(&mut self) {
        if let Some(original) = &self.original
            && std::thread::panicking()
        {
            let _ = self.held.restore(original);
        }
    }
}

enum Stop {
    Cancelled,
    Failed(String),
    /// The device was re-created under its name (new diskseq).
    Replaced(String),
}

impl From<TuneError> for Stop {
    fn from(e: TuneError) -> Self {
        match e {
            TuneError::Replaced { .. } => Stop::Replaced(e.to_string()),
            e => Stop::Failed(e.to_string()),
        }
    }
}

impl From<LoadError> for Stop {
    fn from(e: LoadError) -> Self {
        match e {
            LoadError::Replaced { .. } => Stop::Replaced(e.to_string()),
            e => Stop::Failed(e.to_string()),
        }
    }
}

/// Sleep until `until`, in slices, reporting progress; `Err` on cancel.
fn wait(until: Instant, cancel: &AtomicBool, mut tick: impl FnMut(Duration)) -> Result<(), Stop> {
    let mut last = Instant::now();
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Err(Stop::Cancelled);
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        if now.duration_since(last) >= Duration::from_millis(250) {
            tick(until - now);
            last = now;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(100)));
    }
}

/// Every step's measurement, and its kernel histograms when traced.
#[expect(
    clippy::too_many_arguments,
    reason = "one call site, all of them needed"
)]
fn measure_all(
    root: &SysRoot,
    held: &tuner::Locked<'_>,
    cfg: &Config,
    steps: &[(usize, String)],
    started: Instant,
    mut tracer: Option<&mut kernel::DwellTracer>,
    progress: &mut impl FnMut(&Progress),
    cancel: &AtomicBool,
) -> Result<(Vec<Measurement>, Vec<Option<DwellHists>>), Stop> {
    let per_step = cfg.settle + cfg.dwell;
    let mut out = Vec::with_capacity(steps.len());
    let mut hists = Vec::with_capacity(steps.len());
    for (i, (round, sched)) in steps.iter().enumerate() {
        if cancel.load(Ordering::Relaxed) {
            return Err(Stop::Cancelled);
        }
        let after = per_step * (steps.len() - i - 1) as u32;
        let report = |phase: Phase, left_in_step: Duration| Progress {
            device: cfg.device.clone(),
            scheduler: sched.clone(),
            round: round + 1,
            rounds: cfg.rounds,
            step: i + 1,
            steps: steps.len(),
            phase,
            time_left: after + left_in_step,
            done: 1.0
                - (after + left_in_step).as_secs_f64()
                    / (per_step * steps.len() as u32).as_secs_f64().max(1e-9),
        };
        progress(&report(Phase::Switching, per_step));
        let want = Wanted {
            scheduler: Some(sched.clone()),
            ..Wanted::default()
        };
        let outcome = held.apply(&want)?;
        let settings = Wanted::snapshot_of(&outcome.after);
        let settings = format!(
            "{}{}",
            settings.scheduler.clone().unwrap_or_default(),
            settings
                .nr_requests
                .map(|n| format!(" nr_requests={n}"))
                .unwrap_or_default()
        );
        let load = match &cfg.load {
            Some(l) => Some(Load::start(&l.target, &l.options, None)?),
            None => None,
        };
        progress(&report(Phase::Settling, per_step));
        let settle_end = Instant::now() + cfg.settle;
        wait(settle_end, cancel, |left| {
            progress(&report(Phase::Settling, left + cfg.dwell))
        })?;

        if let Some(l) = &load {
            l.reset();
        }
        let mut rates = RateTracker::default();
        let t0 = Instant::now();
        let at_s = t0.duration_since(started).as_secs_f64();
        sample(root, &mut rates, 0.0)?;
        if let Some(t) = tracer.as_deref_mut() {
            t.begin();
        }
        progress(&report(Phase::Measuring, cfg.dwell));
        wait(t0 + cfg.dwell, cancel, |left| {
            progress(&report(Phase::Measuring, left))
        })?;
        let lstats = load.as_ref().map(Load::stats);
        let itv = t0.elapsed().as_secs_f64();
        let stats = sample(root, &mut rates, itv)?;
        let dwell_hists = tracer.as_deref_mut().and_then(kernel::DwellTracer::end);
        drop(load);
        // A dwell that ended on another device measured nothing of this one.
        let seen = held.seen_diskseq();
        if let Some(s) = seen
            && root.device(&cfg.device).and_then(|d| root.read_diskseq(&d)) != Some(s)
        {
            return Err(Stop::Replaced(format!(
                "'{}' was re-created during the measurement of {sched} (diskseq {s} changed: detached and re-attached); its figures are another device's",
                cfg.device
            )));
        }
        let ext = stats
            .iter()
            .find(|(n, _)| n == &cfg.device)
            .and_then(|(_, s)| *s)
            .ok_or_else(|| {
                Stop::Failed(format!(
                    "'{}' has no usable diskstats for the dwell (vanished or counters reset)",
                    cfg.device
                ))
            })?;
        if let Some(err) = lstats.as_ref().and_then(|l| l.first_error.clone()) {
            return Err(Stop::Failed(format!(
                "the load on '{}' failed: {err}",
                cfg.device
            )));
        }
        out.push(Measurement {
            round: round + 1,
            scheduler: sched.clone(),
            at_s,
            dwell_s: itv,
            figures: figures(&ext, lstats.as_ref()),
            kernel: dwell_hists.as_ref().map(DwellHists::figures),
            settings,
        });
        hists.push(dwell_hists);
    }
    Ok((out, hists))
}

/// Read diskstats into the tracker at time `t`; each device's stats (`None`: no data).
fn sample(
    root: &SysRoot,
    rates: &mut RateTracker,
    t: f64,
) -> Result<Vec<(String, Option<ExtStats>)>, Stop> {
    let text = root.read_diskstats().map_err(|e| {
        Stop::Failed(format!(
            "cannot read {}/diskstats: {e}",
            root.procfs().display()
        ))
    })?;
    let (lines, _) = diskstats::parse(&text);
    Ok(rates
        .update(t, &lines)
        .into_iter()
        .map(|(n, s)| (n, s.stats.ok()))
        .collect())
}

/// The figures of one dwell.
pub fn figures(ext: &ExtStats, load: Option<&LoadStats>) -> Figures {
    Figures {
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

#[cfg(test)]
mod tests;
