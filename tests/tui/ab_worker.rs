//! The live A/B's thread (`A`) on a fake tree with a journal: it alternates
//! the change's two configurations in counterbalanced blocks through the
//! tuner (the original journalled before the first switch), says when each
//! round dwelt, and puts the user's choice back at the end and on a cancel.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use blktune::tui::worker::ab::{self, AbFeed, AbRequest};
use blktune_core::device::QueueSettings;
use blktune_core::fake::{Behaviour, FakeDisk, FakeTree, SimLine, Simulated};
use blktune_core::journal::Journal;
use blktune_core::tuner::{Tuner, Wanted};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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
        |_, _| {
            vec![Behaviour {
                reads_per_s: 1000.0,
                read_ms: 1.0,
                sectors: 8.0,
                ..Behaviour::default()
            }]
        },
    );
    let journal = Journal::new(dir.path().join("journal"));
    let tuner = Tuner::new(tree.root(), Some(journal.clone()));
    tuner.apply("sda", &sched("kyber")).unwrap();
    Setup {
        tree,
        tuner,
        journal,
        _sim: sim,
        _dir: dir,
    }
}

fn sched(s: &str) -> Wanted {
    Wanted {
        scheduler: Some(s.into()),
        ..Wanted::default()
    }
}

fn active(tree: &FakeTree) -> String {
    let dev = tree.root().device("sda").unwrap();
    QueueSettings::read(&tree.root(), &dev)
        .scheduler
        .unwrap()
        .active
}

fn request(rounds: usize) -> AbRequest {
    AbRequest {
        device: "sda".into(),
        diskseq: None,
        configs: [sched("mq-deadline"), sched("kyber")],
        rounds,
        settle: Duration::from_millis(10),
        dwell: Duration::from_millis(30),
    }
}

/// Start the thread; its feeds arrive on the receiver.
fn start(tuner: Tuner, req: AbRequest) -> (ab::AbHandle, mpsc::Receiver<AbFeed>) {
    let (tx, rx) = mpsc::channel();
    let epoch = Instant::now();
    let h = ab::spawn(
        tuner,
        req,
        move |at| at.duration_since(epoch).as_secs_f64(),
        move |f| {
            let _ = tx.send(f);
        },
    )
    .unwrap();
    (h, rx)
}

#[test]
fn rounds_alternate_counterbalanced_and_the_users_choice_comes_back() {
    let s = setup();
    let (_h, rx) = start(s.tuner.clone(), request(4));
    let mut switched = Vec::new();
    let mut dwelt = Vec::new();
    let done = loop {
        match rx.recv_timeout(Duration::from_secs(30)).unwrap() {
            AbFeed::Switched { config, .. } => switched.push(config),
            AbFeed::Dwelt {
                config,
                block,
                from,
                to,
                ..
            } => {
                assert!(to - from >= 0.03 - 1e-3, "{from}..{to}");
                dwelt.push((config, block));
            }
            AbFeed::Done(r) => break r,
        }
    };
    // A B | B A: a linear drift adds as much to each side.
    assert_eq!(switched, [0, 1, 1, 0]);
    assert_eq!(dwelt, [(0, 0), (1, 0), (1, 1), (0, 1)]);
    assert_eq!(
        done,
        Ok("your choice is back (kyber nr_requests=256)".into())
    );
    assert_eq!(active(&s.tree), "kyber");
    // The original of the user's change is still the journal's: the A/B's
    // switches are changes like any other, and its restore left the entry.
    let entry = s.journal.load("sda").unwrap().unwrap();
    assert_eq!(entry.original.scheduler.as_deref(), Some("mq-deadline"));
}

#[test]
fn a_cancel_stops_it_and_restores_the_users_choice() {
    let s = setup();
    let (h, rx) = start(s.tuner.clone(), request(100));
    // The first switch (to the configuration before the change) is made.
    loop {
        if let AbFeed::Switched { config: 0, .. } =
            rx.recv_timeout(Duration::from_secs(30)).unwrap()
        {
            break;
        }
    }
    h.cancel();
    let done = loop {
        if let AbFeed::Done(r) = rx.recv_timeout(Duration::from_secs(30)).unwrap() {
            break r;
        }
    };
    let why = done.unwrap_err();
    assert!(
        why.starts_with("A/B on sda stopped; your choice is back (kyber"),
        "{why}"
    );
    assert_eq!(active(&s.tree), "kyber");
}

#[test]
fn a_device_locked_by_someone_else_is_refused_and_nothing_changes() {
    let s = setup();
    let _held = s.journal.lock("sda", Duration::ZERO).unwrap();
    let tuner = s.tuner.clone().with_lock_wait(Duration::from_millis(50));
    let (_h, rx) = start(tuner, request(4));
    let done = loop {
        if let AbFeed::Done(r) = rx.recv_timeout(Duration::from_secs(30)).unwrap() {
            break r;
        }
    };
    assert!(done.is_err(), "{done:?}");
    assert_eq!(active(&s.tree), "kyber");
}
