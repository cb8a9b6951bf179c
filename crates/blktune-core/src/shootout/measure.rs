//! One step's measurement: sample diskstats at both ends of the dwell (one
//! [`RateTracker`] interval, what `iostat -x` prints for it) while the
//! built-in load times its own I/Os, and turn them into [`Figures`].

use super::run::{Stop, wait};
use super::{Config, Figures, LoadFigures, Measurement, Phase, Progress};
use crate::diskstats;
use crate::iostat::ExtStats;
use crate::load::{Load, LoadStats};
use crate::os::SysRoot;
use crate::sampler::RateTracker;
use crate::tuner::{self, Wanted};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Switch to each step's scheduler and measure it (the steps of [`super::plan`]).
pub(super) fn measure_all(
    root: &SysRoot,
    held: &tuner::Held<'_>,
    cfg: &Config,
    steps: &[(usize, String)],
    started: Instant,
    progress: &mut impl FnMut(&Progress),
    cancel: &AtomicBool,
) -> Result<Vec<Measurement>, Stop> {
    let per_step = cfg.settle + cfg.dwell;
    let mut out = Vec::with_capacity(steps.len());
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
        progress(&report(Phase::Measuring, cfg.dwell));
        wait(t0 + cfg.dwell, cancel, |left| {
            progress(&report(Phase::Measuring, left))
        })?;
        let lstats = load.as_ref().map(Load::stats);
        let itv = t0.elapsed().as_secs_f64();
        let stats = sample(root, &mut rates, itv)?;
        drop(load);
        // A dwell that ended on another device measured nothing of this one.
        let seen = held.seen_diskseq();
        if let Some(s) = seen
            && root
                .device(&cfg.device)
                .and_then(|d| tuner::read_diskseq(root, &d))
                != Some(s)
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
            settings,
        });
    }
    Ok(out)
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
