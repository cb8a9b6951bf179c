//! The runner: check the request, take the device's lock, snapshot, switch
//! through the plan measuring each step ([`super::measure`]), then restore
//! the original settings or apply the winner.

use super::measure::measure_all;
use super::{
    Config, Goal, Phase, Progress, SchedulerSummary, ShootoutError, ShootoutResult, plan, report,
    verdict,
};
use crate::device::QueueSettings;
use crate::error::TuneError;
use crate::journal::Journal;
use crate::load::LoadError;
use crate::os::SysRoot;
use crate::tuner::{self, Tuner, Wanted};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Run a shoot-out. `progress` is called from this thread; `cancel` is polled
/// every 100 ms. Returns after the original settings are back (or the winner
/// applied); on error or cancel the settings are restored before returning.
pub fn run(
    root: &SysRoot,
    journal: Option<Journal>,
    cfg: &Config,
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
    if cfg.goal == Goal::P99 && cfg.load.is_none() {
        return Err(ShootoutError::Usage(
            "--goal p99 ranks by the built-in load's own latencies: choose a --load".into(),
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
    // Every switch, the winner and the restore write only to the device seen
    // now: one detached and re-attached under the name is another device.
    let seq = tuner::read_diskseq(root, &dev);
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
    let tuner = Tuner::new(root.clone(), journal).expecting(dev.as_str(), seq);
    let held = tuner.hold(dev.as_str())?;
    // The original is read under the lock: no other change is half-way now.
    let original = Wanted::snapshot_of(&QueueSettings::read(root, &dev));
    let steps = plan(&schedulers, cfg.rounds);
    let started = Instant::now();

    let mut guard = RestoreOnUnwind {
        held: &held,
        original: Some(original.clone()),
    };
    let outcome = measure_all(root, &held, cfg, &steps, started, &mut progress, cancel);

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
    let measurements = match outcome {
        Ok(m) => m,
        Err(Stop::Replaced(cause)) => {
            // Nothing of the original goes onto another device; the journal
            // entry names the old diskseq, so 'revert' drops it as stale.
            return Err(ShootoutError::Aborted {
                cause,
                restore: format!(
                    "nothing was restored onto the new device; 'blktune revert {dev}' drops the stale journal entry"
                ),
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
            SchedulerSummary::new(s, rounds)
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
fn restore(held: &tuner::Held<'_>, original: &Wanted) -> String {
    let dev = held.name();
    match held.restore(original) {
        Ok(_) => format!("original settings restored ({})", original.summary()),
        Err(e) => format!("RESTORE FAILED ({e}); run 'blktune revert {dev}'"),
    }
}

/// Restores the original settings if the shoot-out unwinds (a panic in the
/// caller's `progress`, e.g. writing to a closed stderr) before it restored
/// them itself; [`RestoreOnUnwind::disarm`] once it takes over.
struct RestoreOnUnwind<'a, 'b> {
    held: &'a tuner::Held<'b>,
    original: Option<Wanted>,
}

impl<'a, 'b> RestoreOnUnwind<'a, 'b> {
    /// The held device, for the normal restore; the guard does nothing more.
    fn disarm(&mut self) -> &'a tuner::Held<'b> {
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

pub(super) enum Stop {
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
pub(super) fn wait(
    until: Instant,
    cancel: &AtomicBool,
    mut tick: impl FnMut(Duration),
) -> Result<(), Stop> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeDisk, FakeTree};

    #[test]
    fn scheduler_choice_is_checked_and_deduplicated() {
        let avail: Vec<String> = ["none", "kyber"].iter().map(|s| s.to_string()).collect();
        assert_eq!(choose_schedulers("sda", &[], &avail).unwrap(), avail);
        let want = vec!["kyber".to_string(), "none".into(), "kyber".into()];
        assert_eq!(
            choose_schedulers("sda", &want, &avail).unwrap(),
            vec!["kyber".to_string(), "none".into()]
        );
        let err = choose_schedulers("sda", &["bfq".into()], &avail).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("'bfq'"));
    }

    #[test]
    fn a_cancel_before_the_first_switch_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        t.add(&FakeDisk::new("sda")).unwrap();
        t.set_diskstats(&[]).unwrap();
        let root = t.root();
        let before = QueueSettings::read(&root, &root.device("sda").unwrap());
        let cancel = AtomicBool::new(true);
        let mut phases = Vec::new();
        let err = run(
            &root,
            None,
            &Config::passive("sda"),
            |p| phases.push(p.phase),
            &cancel,
        )
        .unwrap_err();
        assert!(matches!(err, ShootoutError::Cancelled { .. }), "{err}");
        assert_eq!(err.exit_code(), 130);
        assert!(err.to_string().contains("original settings restored"));
        assert_eq!(phases, [Phase::Restoring]);
        assert_eq!(
            QueueSettings::read(&root, &root.device("sda").unwrap()),
            before
        );
    }

    #[test]
    fn p99_without_a_load_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        t.add(&FakeDisk::new("sda")).unwrap();
        let cfg = Config {
            goal: Goal::P99,
            ..Config::passive("sda")
        };
        let err = run(&t.root(), None, &cfg, |_| {}, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    /// A fake sda, a journal, and a one-step shoot-out config (no diskstats
    /// for sda, so the step fails at its first sample, after the switch).
    fn one_step() -> (tempfile::TempDir, FakeTree, Journal, Config) {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(&dir.path().join("root")).unwrap();
        t.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
        t.set_diskstats(&[]).unwrap();
        let j = Journal::new(dir.path().join("j"));
        let cfg = Config {
            schedulers: vec!["kyber".into()],
            rounds: 1,
            settle: Duration::ZERO,
            dwell: Duration::from_millis(10),
            ..Config::passive("sda")
        };
        (dir, t, j, cfg)
    }

    /// The fake tree keeps a written scheduler name as written: give the
    /// file the kernel's form again (every scheduler, the active one in brackets).
    fn bracket(t: &FakeTree) {
        let all: Vec<String> = ["none", "mq-deadline", "kyber", "bfq"]
            .map(String::from)
            .to_vec();
        std::fs::write(
            t.dev_dir("sda").join("queue/scheduler"),
            crate::fake::scheduler_line(&all, &active(t)),
        )
        .unwrap();
    }

    fn active(t: &FakeTree) -> String {
        let root = t.root();
        QueueSettings::read(&root, &root.device("sda").unwrap())
            .active_label()
            .to_string()
    }

    #[test]
    fn the_restore_follows_the_one_revert_policy() {
        let (_d, t, j, cfg) = one_step();
        let root = t.root();
        let tuner = Tuner::new(root.clone(), Some(j.clone()));
        let never = AtomicBool::new(false);
        // No entry before: none after.
        let err = run(&root, Some(j.clone()), &cfg, |_| {}, &never).unwrap_err();
        assert!(
            err.to_string().contains("original settings restored"),
            "{err}"
        );
        assert_eq!(active(&t), "mq-deadline");
        assert!(j.load("sda").unwrap().is_none());
        // An entry whose original is what the device has now (an earlier
        // change undone by hand): the device ends at the originals, so the
        // entry goes, though the shoot-out did not make it.
        tuner
            .apply(
                "sda",
                &Wanted {
                    read_ahead_kb: Some(256),
                    ..Wanted::default()
                },
            )
            .unwrap();
        std::fs::write(t.dev_dir("sda").join("queue/read_ahead_kb"), "128").unwrap();
        assert!(j.load("sda").unwrap().is_some());
        bracket(&t);
        run(&root, Some(j.clone()), &cfg, |_| {}, &never).unwrap_err();
        assert!(j.load("sda").unwrap().is_none(), "nothing left to revert");
        // An entry of a change still in force: kept, with its true original.
        tuner
            .apply(
                "sda",
                &Wanted {
                    read_ahead_kb: Some(256),
                    ..Wanted::default()
                },
            )
            .unwrap();
        bracket(&t);
        run(&root, Some(j.clone()), &cfg, |_| {}, &never).unwrap_err();
        let e = j.load("sda").unwrap().unwrap();
        assert_eq!(e.original.read_ahead_kb, Some(128));
        assert_eq!(active(&t), "mq-deadline");
    }

    #[test]
    fn a_panic_in_the_progress_callback_still_restores_and_unlocks() {
        let (_d, t, j, cfg) = one_step();
        let root = t.root();
        let never = AtomicBool::new(false);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(
                &root,
                Some(j.clone()),
                &cfg,
                |p| {
                    // What `eprint!` does on a closed stderr.
                    if p.phase == Phase::Settling {
                        panic!("failed printing to stderr");
                    }
                },
                &never,
            )
        }));
        assert!(r.is_err(), "the callback panicked");
        assert_eq!(active(&t), "mq-deadline", "restored on the way out");
        assert!(j.load("sda").unwrap().is_none());
        drop(j.lock("sda", Duration::ZERO).unwrap());
    }

    #[test]
    fn a_device_held_by_another_change_is_not_shot_out() {
        let (_d, t, j, cfg) = one_step();
        let _held = j.lock("sda", Duration::ZERO).unwrap();
        // The shoot-out waits LOCK_WAIT, then says who holds it.
        let err = run(
            &t.root(),
            Some(j.clone()),
            &cfg,
            |_| {},
            &AtomicBool::new(false),
        )
        .unwrap_err();
        assert!(err.to_string().contains("being changed by"), "{err}");
        assert_eq!(active(&t), "mq-deadline");
    }
}
