//! The transaction on fake trees: the kernel's order, read-back, rollback,
//! the journal and the one revert policy.
use super::super::test_support::setup;
use super::*;
use crate::fake::{FakeDisk, FakeTree};

#[test]
fn a_stale_journal_entry_is_replaced_by_the_true_original() {
    let (_d, _t, tuner) = setup();
    let j = tuner.journal().unwrap();
    let old = JournalEntry {
        version: JOURNAL_VERSION,
        device: "sda".into(),
        major: 8,
        minor: 0,
        diskseq: None,
        boot_id: Some("an-earlier-boot".into()),
        saved_at: 0.0,
        original: Wanted {
            scheduler: Some("bfq".into()),
            ..Wanted::default()
        },
        tree: j.tree().cloned(),
        pid: None,
    };
    j.save_if_absent(&old).unwrap();
    tuner
        .apply(
            "sda",
            &Wanted {
                read_ahead_kb: Some(256),
                ..Wanted::default()
            },
        )
        .unwrap();
    let e = j.load("sda").unwrap().unwrap();
    assert_eq!(e.original.scheduler.as_deref(), Some("mq-deadline"));
    assert_eq!(e.original.read_ahead_kb, Some(128));
    assert_eq!(
        e.boot_id.as_deref(),
        Some("00000000-0000-0000-0000-000000000001")
    );
}

#[test]
fn a_live_entry_is_kept_on_a_second_change() {
    let (_d, _t, tuner) = setup();
    let ra = |n| Wanted {
        read_ahead_kb: Some(n),
        ..Wanted::default()
    };
    tuner.apply("sda", &ra(256)).unwrap();
    let o = tuner.apply("sda", &ra(512)).unwrap();
    assert_eq!(o.changes[0].before, "256");
    let e = tuner.journal().unwrap().load("sda").unwrap().unwrap();
    assert_eq!(
        e.original.read_ahead_kb,
        Some(128),
        "the first original wins"
    );
}

#[test]
fn a_no_op_writes_no_journal_entry_and_keeps_an_existing_one() {
    let (_d, _t, tuner) = setup();
    let j = tuner.journal().unwrap();
    let same = Wanted {
        scheduler: Some("mq-deadline".into()),
        read_ahead_kb: Some(128),
        ..Wanted::default()
    };
    let o = tuner.apply("sda", &same).unwrap();
    assert!(o.changes.is_empty(), "{:?}", o.changes);
    assert!(j.load("sda").unwrap().is_none(), "a no-op journalled");
    let ra = |n| Wanted {
        read_ahead_kb: Some(n),
        ..Wanted::default()
    };
    tuner.apply("sda", &ra(256)).unwrap();
    let saved = j.load("sda").unwrap().unwrap();
    let o = tuner.apply("sda", &ra(256)).unwrap();
    assert!(o.changes.is_empty());
    assert_eq!(
        j.load("sda").unwrap().unwrap(),
        saved,
        "the original is kept"
    );
}

#[test]
fn a_device_re_created_since_the_caller_looked_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let t = FakeTree::new(&dir.path().join("root")).unwrap();
    let mut disk = FakeDisk::new("loop3").dev(7, 3);
    disk.diskseq = Some(15);
    t.add(&disk).unwrap();
    let root = t.root();
    let dev = root.device("loop3").unwrap();
    let before = QueueSettings::read(&root, &dev);
    let j = Journal::new(dir.path().join("j"));
    let kyber = Wanted {
        scheduler: Some("kyber".into()),
        ..Wanted::default()
    };
    let tuner = Tuner::new(root.clone(), Some(j.clone())).expecting("loop3", Some(14));
    let e = tuner.apply("loop3", &kyber).unwrap_err();
    assert!(matches!(e, TuneError::Replaced { seen: 14, .. }), "{e}");
    assert_eq!(e.exit_code(), 1);
    assert!(e.to_string().contains("diskseq 14, now 15"), "{e}");
    assert!(
        e.to_string()
            .contains("nothing is restored onto the new device"),
        "{e}"
    );
    // A restore through that tuner is refused as well.
    let e = tuner
        .restore("loop3", &Wanted::snapshot_of(&before))
        .unwrap_err();
    assert!(matches!(e, TuneError::Replaced { .. }), "{e}");
    assert_eq!(QueueSettings::read(&root, &dev), before);
    assert!(j.load("loop3").unwrap().is_none());
    // The incarnation the caller saw is written to.
    let tuner = Tuner::new(root.clone(), Some(j)).expecting("loop3", Some(15));
    tuner.apply("loop3", &kyber).unwrap();
    assert_eq!(QueueSettings::read(&root, &dev).active_label(), "kyber");
}

fn nr(count: u64) -> Wanted {
    Wanted {
        nr_requests: Some(count),
        ..Wanted::default()
    }
}

fn attr(fake_tree: &FakeTree, arg: &str) -> String {
    std::fs::read_to_string(fake_tree.dev_dir("sda").join("queue").join(arg))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn a_refused_journal_entry_refuses_the_change_and_writes_nothing() {
    let (d, t, tuner) = setup();
    let j = tuner.journal().unwrap();
    std::fs::create_dir_all(j.dir()).unwrap();
    let mut forged = serde_json::to_value(JournalEntry {
        version: JOURNAL_VERSION,
        device: "sda".into(),
        major: 8,
        minor: 0,
        diskseq: None,
        boot_id: None,
        saved_at: 0.0,
        original: nr(4),
        tree: None,
        pid: None,
    })
    .unwrap();
    forged["version"] = 99.into();
    let path = j.dir().join("sda.json");
    std::fs::write(&path, forged.to_string()).unwrap();
    let before = attr(&t, "nr_requests");
    let e = tuner.apply("sda", &nr(64)).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("nothing was changed"), "{msg}");
    assert_eq!(attr(&t, "nr_requests"), before, "nothing written");
    assert!(
        std::fs::read_to_string(&path).unwrap().contains("99"),
        "not replaced"
    );
    drop(d);
}

/// A number this change would write, or a scheduler switch reset,
/// that cannot be read: its original could not be journalled, and a
/// revert would say "already set". Refused, nothing written.
#[test]
fn an_unreadable_original_refuses_the_change_and_writes_nothing() {
    for (file, content, want) in [
        (
            "read_ahead_kb",
            "abc\n",
            Wanted {
                read_ahead_kb: Some(256),
                ..Wanted::default()
            },
        ),
        ("nr_requests", "\n", nr(64)),
        (
            "nr_requests",
            "-5\n",
            Wanted {
                scheduler: Some("kyber".into()),
                ..Wanted::default()
            },
        ),
    ] {
        let (_d, t, tuner) = setup();
        std::fs::write(t.dev_dir("sda").join("queue").join(file), content).unwrap();
        let sched = attr(&t, "scheduler");
        let e = tuner.apply("sda", &want).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, TuneError::ReadFailed { .. }), "{file}: {msg}");
        assert_eq!(e.exit_code(), 1, "{msg}");
        assert!(
            msg.contains(&format!("queue/{file}")) && msg.contains("unexpected content"),
            "{msg}"
        );
        assert_eq!(attr(&t, file), content.trim(), "{file} written");
        assert_eq!(attr(&t, "scheduler"), sched, "scheduler switched");
        assert!(tuner.journal().unwrap().load("sda").unwrap().is_none());
    }
    // Without a switch, a scheduler's other settings may still change.
    let (_d, t, tuner) = setup();
    std::fs::write(t.dev_dir("sda").join("queue/read_ahead_kb"), "abc\n").unwrap();
    tuner.apply("sda", &nr(64)).unwrap();
    assert_eq!(attr(&t, "nr_requests"), "64");
}

/// A scheduler file that is there but not what the kernel writes is not
/// "no I/O scheduler": the change is refused naming the file (exit 1).
/// A lone `none` is a queue without a scheduler (exit 2, as before).
#[test]
fn a_malformed_scheduler_file_is_named_not_taken_for_no_scheduler() {
    for content in [&b"none mq-deadline kyber\n"[..], b"[none] \xff\xfe\n"] {
        let (_d, t, tuner) = setup();
        std::fs::write(t.dev_dir("sda").join("queue/scheduler"), content).unwrap();
        let e = tuner.apply("sda", &nr(64)).unwrap_err();
        assert!(matches!(e, TuneError::ReadFailed { .. }), "{e}");
        assert!(e.to_string().contains("queue/scheduler"), "{e}");
        assert_eq!(e.exit_code(), 1);
        assert_ne!(attr(&t, "nr_requests"), "64");
    }
    let (_d, t, tuner) = setup();
    std::fs::write(t.dev_dir("sda").join("queue/scheduler"), "none\n").unwrap();
    let e = tuner.apply("sda", &nr(64)).unwrap_err();
    assert!(matches!(e, TuneError::NoScheduler { .. }), "{e}");
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn a_device_held_by_another_change_is_busy_and_nothing_is_written() {
    let (_d, t, tuner) = setup();
    let tuner = tuner.with_lock_wait(Duration::from_millis(50));
    let held = tuner.lock("sda").unwrap();
    let before = attr(&t, "nr_requests");
    let e = tuner.apply("sda", &nr(64)).unwrap_err();
    assert!(matches!(e, TuneError::Busy(_)), "{e}");
    assert_eq!(e.exit_code(), 1);
    assert!(e.to_string().contains("pid"), "{e}");
    assert!(tuner.restore("sda", &nr(32)).is_err());
    assert_eq!(attr(&t, "nr_requests"), before);
    assert!(tuner.journal().unwrap().load("sda").unwrap().is_none());
    // The holder itself changes it.
    held.apply(&nr(64)).unwrap();
    assert_eq!(attr(&t, "nr_requests"), "64");
    drop(held);
    tuner.apply("sda", &nr(48)).unwrap();
}

#[test]
fn a_restore_drops_the_entry_only_when_the_device_is_back_at_the_original() {
    let (_d, t, tuner) = setup();
    let j = tuner.journal().unwrap();
    let orig = attr(&t, "nr_requests");
    let o1 = tuner.apply("sda", &nr(64)).unwrap();
    tuner.apply("sda", &nr(32)).unwrap();
    // An undo of the second change: back to 64, not the original: kept.
    tuner
        .restore("sda", &Wanted::snapshot_of(&o1.after))
        .unwrap();
    assert_eq!(attr(&t, "nr_requests"), "64");
    assert!(
        j.load("sda").unwrap().is_some(),
        "the true original is kept"
    );
    // An undo of the first: back at the original: dropped.
    tuner
        .restore("sda", &Wanted::snapshot_of(&o1.before))
        .unwrap();
    assert_eq!(attr(&t, "nr_requests"), orig);
    assert!(j.load("sda").unwrap().is_none(), "nothing left to revert");
    // A restore that finds the device already back drops a leftover entry too.
    tuner.apply("sda", &nr(64)).unwrap();
    std::fs::write(t.dev_dir("sda").join("queue/nr_requests"), &orig).unwrap();
    tuner
        .restore("sda", &Wanted::snapshot_of(&o1.before))
        .unwrap();
    assert!(j.load("sda").unwrap().is_none());
}

/// A journal entry is a file: a revert checks each of its values with
/// the catalogue (as `set` would) before its first write, and refuses
/// the whole revert naming the value; nothing is written.
#[test]
fn a_revert_refuses_an_original_set_would_refuse_before_any_write() {
    let (_d, t, tuner) = setup();
    tuner
        .apply(
            "sda",
            &Wanted {
                scheduler: Some("kyber".into()),
                read_ahead_kb: Some(256),
                ..Wanted::default()
            },
        )
        .unwrap();
    let held = tuner.lock("sda").unwrap();
    let mut original = held.entry().unwrap().unwrap().original;
    let good = original.clone();
    for (what, bad) in [
        ("front_merges '7'", {
            let mut w = good.clone();
            w.tunables = vec![("front_merges".into(), "7".into())];
            w
        }),
        (
            "nr_requests '3'",
            Wanted {
                nr_requests: Some(3),
                ..good.clone()
            },
        ),
        (
            "read_ahead_kb '5'",
            Wanted {
                read_ahead_kb: Some(5),
                ..good.clone()
            },
        ),
    ] {
        original = bad;
        let e = held.revert(&original).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, TuneError::BadOriginal { .. }), "{msg}");
        assert_eq!(e.exit_code(), 1, "{msg}");
        assert!(
            msg.contains(what) && msg.contains("nothing was written"),
            "{msg}"
        );
        assert_eq!(attr(&t, "scheduler"), "kyber", "{what}");
        assert_eq!(attr(&t, "read_ahead_kb"), "256", "{what}");
        assert!(held.entry().unwrap().is_some(), "the entry is kept");
    }
    // The true originals go back.
    held.revert(&good).unwrap();
    assert_eq!(attr(&t, "read_ahead_kb"), "128");
    assert!(held.entry().unwrap().is_none());
}
