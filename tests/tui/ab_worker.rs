//! The live A/B's thread (`A`) on a fake tree with a journal: the shoot-out's
//! runner alternates the change's two whole settings in counterbalanced
//! blocks through the tuner (the original journalled before the first
//! switch), gives the rounds back as the engine's, and puts the user's
//! choice back at the end and on a cancel.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use blktune::tui::worker::ab::{self, AbFeed, AbRequest};
use blktune_core::compare::Metric;
use blktune_core::device::QueueSettings;
use blktune_core::fake::{Behaviour, FakeDisk, FakeTree, SimLine, Simulated};
use blktune_core::journal::Journal;
use blktune_core::latency::Unavailable;
use blktune_core::shootout::Tracing;
use blktune_core::tuner::{Tuner, Wanted};
use std::sync::mpsc;
use std::time::Duration;

/// The fake tree, kept behaving as the kernel does after a scheduler
/// write (the name bracketed), with a tuner journalling in its own dir.
struct Setup {
    tree: FakeTree,
    tuner: Tuner,
    journal: Journal,
    _sim: Simulated,
    _dir: tempfile::TempDir,
}

/// sda, switched by the user from mq-deadline (the journalled original) to kyber.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(&dir.path().join("root")).unwrap();
    tree.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
    let sim = tree.simulate(
        "sda",
        &["none", "mq-deadline", "kyber", "bfq"],
        256,
        vec![SimLine {
            name: "sda".into(),
            major: 8,
            minor: 0,
        }],
        // kyber's reads take twice as long.
        |s, _| {
            vec![Behaviour {
                reads_per_s: 1000.0,
                read_ms: if s == "kyber" { 2.0 } else { 1.0 },
                sectors: 8.0,
                ..Behaviour::default()
            }]
        },
    );
    let journal = Journal::new(dir.path().join("journal"));
    let tuner = Tuner::new(tree.root(), Some(journal.clone()));
    // The simulation shows the kernel's bracketed line before anything else.
    let bracketed = || {
        std::fs::read_to_string(tree.dev_dir("sda").join("queue/scheduler"))
            .unwrap()
            .contains('[')
    };
    wait(bracketed);
    tuner.apply("sda", &sched("kyber")).unwrap();
    wait(|| bracketed() && active(&tree) == "kyber");
    Setup {
        tree,
        tuner,
        journal,
        _sim: sim,
        _dir: dir,
    }
}

/// Poll until `ok` (the simulation's thread brackets a written name within
/// milliseconds, later on a loaded machine).
fn wait(ok: impl Fn() -> bool) {
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(
            std::time::Instant::now() < end,
            "the simulation never caught up"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn sched(s: &str) -> Wanted {
    Wanted {
        scheduler: Some(s.into()),
        ..Wanted::default()
    }
}

/// The active scheduler (empty while the file is being written: the tuner's
/// write and the simulation's rename are not one step).
fn active(tree: &FakeTree) -> String {
    let dev = tree.root().device("sda").unwrap();
    QueueSettings::read(&tree.root(), &dev)
        .scheduler
        .map(|s| s.active)
        .unwrap_or_default()
}

fn request(blocks: usize) -> AbRequest {
    AbRequest {
        device: "sda".into(),
        diskseq: None,
        configs: [sched("mq-deadline"), sched("kyber")],
        blocks,
        settle: Duration::from_millis(20),
        dwell: Duration::from_millis(200),
    }
}

/// Start the thread; its feeds arrive on the receiver.
fn start(tuner: &Tuner, req: AbRequest) -> (ab::AbHandle, mpsc::Receiver<AbFeed>) {
    let (tx, rx) = mpsc::channel();
    let h = ab::spawn(
        tuner.root().clone(),
        tuner.journal().cloned(),
        req,
        Tracing::Off(Unavailable::NotLive),
        move |f| {
            let _ = tx.send(f);
        },
    )
    .unwrap();
    (h, rx)
}

/// Every feed until `Done`: the progress reports and the end.
fn until_done(rx: &mpsc::Receiver<AbFeed>) -> (Vec<ab::AbProgress>, Result<ab::AbOutcome, String>) {
    let mut progress = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(60)).unwrap() {
            AbFeed::Progress(p) => progress.push(p),
            AbFeed::Done(r) => return (progress, r),
        }
    }
}

#[test]
fn rounds_alternate_counterbalanced_and_the_users_choice_comes_back() {
    let s = setup();
    let (_h, rx) = start(&s.tuner, request(3));
    let (progress, done) = until_done(&rx);
    let outcome = done.unwrap();
    // A B | B A | B A: a linear drift adds as much to each side.
    let order: Vec<usize> = outcome.rounds.iter().map(|r| r.config).collect();
    assert_eq!(order, [0, 1, 1, 0, 1, 0]);
    assert!(progress.iter().any(|p| p.config == Some(1)), "{progress:?}");
    assert!(
        outcome
            .restored
            .starts_with("your choice restored (scheduler=kyber"),
        "{}",
        outcome.restored
    );
    assert_eq!(active(&s.tree), "kyber");
    // The engine sees kyber's reads twice as slow, from the device's own rounds.
    let ba = blktune_core::before_after::from_rounds(&outcome.rounds, "sda");
    let r = ba.row(Metric::RAwait).unwrap();
    assert!((r.change - 1.0).abs() < 0.2, "{r:?}");
    // The original of the user's change is still the journal's: the A/B's
    // switches are changes like any other, and its restore left the entry.
    let entry = s.journal.load("sda").unwrap().unwrap();
    assert_eq!(entry.original.scheduler.as_deref(), Some("mq-deadline"));
}

#[test]
fn a_cancel_stops_it_and_restores_the_users_choice() {
    let s = setup();
    let (h, rx) = start(&s.tuner, request(100));
    // The first round measures the settings before the change; cancelled
    // once the simulation has bracketed its name (it renames its own copy
    // of the line over the file: a cancel within that moment would race it).
    loop {
        if let AbFeed::Progress(p) = rx.recv_timeout(Duration::from_secs(60)).unwrap()
            && p.config == Some(0)
        {
            break;
        }
    }
    let line = || std::fs::read_to_string(s.tree.dev_dir("sda").join("queue/scheduler")).unwrap();
    wait(|| line().contains("[mq-deadline]"));
    h.cancel();
    let (_, done) = until_done(&rx);
    let why = done.unwrap_err();
    assert!(
        why.contains("cancelled")
            && why.contains("your choice restored")
            && !why.contains("original"),
        "{why}"
    );
    assert_eq!(active(&s.tree), "kyber");
}

#[test]
fn a_device_locked_by_someone_else_is_refused_and_nothing_changes() {
    let s = setup();
    let _held = s.journal.lock("sda", Duration::ZERO).unwrap();
    let (_h, rx) = start(&s.tuner, request(3));
    let (_, done) = until_done(&rx);
    assert!(done.is_err(), "{done:?}");
    assert_eq!(active(&s.tree), "kyber");
}

#[test]
fn a_change_of_read_ahead_alone_is_not_an_ab() {
    let mut req = request(3);
    req.configs = [
        Wanted {
            read_ahead_kb: Some(128),
            ..sched("kyber")
        },
        Wanted {
            read_ahead_kb: Some(4096),
            ..sched("kyber")
        },
    ];
    assert_eq!(req.candidates(), None);
}
