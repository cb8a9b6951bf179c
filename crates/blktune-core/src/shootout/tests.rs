//! Unit tests of the parent module.

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
fn progress_line_rounds_time_left_up() {
    let p = Progress {
        device: "loop3".into(),
        scheduler: "kyber".into(),
        round: 1,
        rounds: 2,
        step: 3,
        steps: 8,
        phase: Phase::Measuring,
        time_left: Duration::from_millis(20_100),
        done: 0.3,
    };
    assert_eq!(p.line(), "round 1/2  kyber (3/8)  measuring  21s left");
}

#[test]
fn p99_without_a_load_or_the_kernel_is_a_usage_error() {
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

#[test]
fn a_callers_tracer_that_could_not_start_gives_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let t = FakeTree::new(dir.path()).unwrap();
    t.add(&FakeDisk::new("sda")).unwrap();
    let cfg = Config {
        goal: Goal::P99,
        ..Config::passive("sda")
    };
    let off = Tracing::Off(crate::latency::Unavailable::NotRoot);
    let err = run_traced(&t.root(), None, &cfg, off, |_| {}, &AtomicBool::new(false)).unwrap_err();
    assert!(err.to_string().contains("(needs root)"), "{err}");
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

/// A restore refused because the device was re-created under its name is
/// said as the shoot-out says it when it sees that between steps: nothing
/// was restored, by design, not a failure (a step that failed on the new
/// device used to end in "RESTORE FAILED").
#[test]
fn a_restore_refused_on_a_re_created_device_says_nothing_was_restored() {
    let dir = tempfile::tempdir().unwrap();
    let t = FakeTree::new(dir.path()).unwrap();
    let mut disk = FakeDisk::new("loop3").dev(7, 3);
    disk.diskseq = Some(15);
    t.add(&disk).unwrap();
    let root = t.root();
    let original = Wanted::snapshot_of(&QueueSettings::read(&root, &root.device("loop3").unwrap()));
    let tuner = Tuner::new(root.clone(), Some(Journal::new(dir.path().join("j"))))
        .expecting("loop3", Some(14));
    let held = tuner.lock("loop3").unwrap();
    let said = restore(&held, &original);
    assert_eq!(said, not_restored("loop3"));
    assert!(
        said.starts_with("nothing was restored onto the new device"),
        "{said}"
    );
}
