//! Stacks in the full-screen tuner, on a fake RAID + LVM + multipath +
//! NVMe server (`common::fake_host::stack_disks`): the detail pane of a
//! stack without a scheduler says which disks carry its I/O, `s` offers to
//! change those disks (one change each, through the tuner and its
//! journal), and asks again first when a disk also carries another stack.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::fake_host::stack_disks;
use crate::common::tui_fixture;
use blktune::tui::app::Overlay;
use blktune::tui::worker::protocol::{Control, LiveControl};
use crossterm::event::KeyCode;
use tui_fixture::*;

fn status(app: &blktune::tui::app::App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

/// The changes `ctl` asks the worker for: (device, scheduler).
fn applied(ctl: &[Control]) -> Vec<(String, String)> {
    ctl.iter()
        .filter_map(|c| match c {
            Control::Live(LiveControl::Apply(r)) => Some((
                r.device.clone(),
                r.settings.scheduler.clone().unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn a_stacks_detail_names_the_disks_that_carry_it() {
    let m = Machine::new(&stack_disks());
    let app = m.app_with(None, Some("dm-1".into()));
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("─ dm-1 vg0-root  lvm 20G  no scheduler"), "{s}");
    assert!(s.contains("no I/O scheduler of its own: its I/O is"), "{s}");
    assert!(
        s.contains("scheduled on sda (sda also carries dm-2, md0)"),
        "{s}"
    );
    assert!(s.contains("s: the scheduler of those disks"), "{s}");
    // The NVMe paths are no rows; their head is.
    assert!(!s.contains("nvme0c0n1 "), "{s}");
    assert!(s.contains(" nvme0n1 "), "{s}");
}

#[test]
fn s_on_a_stack_changes_the_disks_under_it_after_asking_about_shared_ones() {
    let m = Machine::new(&stack_disks());
    // md0 sits on sda1 and sdb1; sda also carries the LUKS volume and its LVs.
    let mut app = m.app_with(None, Some("md0".into()));
    assert!(press(&mut app, &chars("s")).is_empty());
    let p = match &app.overlay {
        Some(Overlay::Picker(p)) => p.clone(),
        o => panic!("no picker: {o:?}"),
    };
    let members: Vec<&str> = p.members.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(members, ["sda", "sdb"]);
    assert_eq!(p.active, "mq-deadline");
    assert_eq!(p.shared, ["sda also carries dm-0, dm-1, dm-2"]);
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("scheduler of the disks under md0: sda, sdb"),
        "{s}"
    );
    assert!(
        s.contains("sda also carries dm-0, dm-1, dm-2: changed for it too"),
        "{s}"
    );
    // Down to kyber, Enter once: refused until confirmed, nothing sent.
    press(&mut app, &[KeyCode::Down]);
    assert!(applied(&press(&mut app, &[KeyCode::Enter])).is_empty());
    assert!(
        status(&app).contains("Enter again to change"),
        "{}",
        status(&app)
    );
    assert!(matches!(app.overlay, Some(Overlay::Picker(_))));
    // Moving on to bfq asks again; Enter twice on bfq changes both disks.
    press(&mut app, &[KeyCode::Down]);
    assert!(applied(&press(&mut app, &[KeyCode::Enter])).is_empty());
    let ctl = press(&mut app, &[KeyCode::Enter]);
    assert_eq!(
        applied(&ctl),
        [
            ("sda".to_string(), "bfq".to_string()),
            ("sdb".to_string(), "bfq".to_string())
        ]
    );
    assert!(app.overlay.is_none());
    assert_eq!(app.pending, 2);
}

#[test]
fn a_stack_on_disks_no_other_stack_uses_changes_them_at_once() {
    let m = Machine::new(&stack_disks());
    // The NVMe head: its two paths, shared with nothing.
    let mut app = m.app_with(None, Some("nvme0n1".into()));
    press(&mut app, &chars("s"));
    match &app.overlay {
        Some(Overlay::Picker(p)) => assert!(p.shared.is_empty(), "{p:?}"),
        o => panic!("no picker: {o:?}"),
    }
    press(&mut app, &[KeyCode::Down]);
    let ctl = press(&mut app, &[KeyCode::Enter]);
    assert_eq!(
        applied(&ctl),
        [
            ("nvme0c0n1".to_string(), "mq-deadline".to_string()),
            ("nvme0c1n1".to_string(), "mq-deadline".to_string())
        ]
    );
    // nr_requests on a stack: refused, naming the disks.
    let mut app = m.app_with(None, Some("dm-1".into()));
    assert!(press(&mut app, &chars("n")).is_empty());
    assert!(
        status(&app).contains("'dm-1' has no I/O scheduler: its I/O is scheduled on sda"),
        "{}",
        status(&app)
    );
}

/// Through the live worker and the real tuner on the fake tree: `s` on the
/// NVMe head writes the scheduler of both its paths and journals each.
#[test]
fn the_disks_of_a_stack_are_changed_and_journalled_one_by_one() {
    use blktune::tui::worker::live::LiveSource;
    use blktune_core::journal::Journal;
    use blktune_core::sampler::Sampler;
    use blktune_core::tuner::Tuner;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let m = Machine::new(&stack_disks());
    let journal = tempfile::tempdir().unwrap();
    let root = m.tree.root();
    let tuner = Tuner::new(root.clone(), Some(Journal::new(journal.path())));
    let (ftx, frx) = mpsc::channel();
    let (ctx, crx) = mpsc::channel();
    let handle = LiveSource::new(
        Sampler::new(root).unwrap(),
        Some(tuner),
        Duration::from_millis(100),
    )
    .spawn(ftx, crx)
    .unwrap();
    let mut app = m.app_with(None, Some("nvme0n1".into()));
    while app.samples == 0 {
        app.on_feed(frx.recv_timeout(Duration::from_secs(60)).unwrap());
    }
    press(&mut app, &chars("s"));
    press(&mut app, &[KeyCode::Down, KeyCode::Down]);
    for c in press(&mut app, &[KeyCode::Enter]) {
        ctx.send(c.to_live().unwrap()).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while app.pending > 0 {
        assert!(Instant::now() < deadline, "no answer from the source");
        if let Ok(f) = frx.recv_timeout(Duration::from_millis(50)) {
            app.on_feed(f);
        }
    }
    for path in ["nvme0c0n1", "nvme0c1n1"] {
        let line = std::fs::read_to_string(m.tree.dev_dir(path).join("queue/scheduler")).unwrap();
        assert_eq!(line.trim(), "kyber", "{path}");
    }
    let journalled: Vec<String> = Journal::new(journal.path())
        .list()
        .unwrap()
        .into_iter()
        .map(|e| e.unwrap().device)
        .collect();
    assert_eq!(journalled.len(), 2, "{journalled:?}");
    assert!(journalled.contains(&"nvme0c0n1".to_string()));
    assert!(journalled.contains(&"nvme0c1n1".to_string()));
    drop(ctx);
    handle.join().unwrap();
}
