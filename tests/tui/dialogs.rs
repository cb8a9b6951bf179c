//! The export (`e`) and shoot-out (`b`) dialogs: key sequences drive the app
//! state (pure; the writes and the shoot-out are Control messages), and 80x24
//! snapshots of each dialog on deterministic fake data.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use blktune::tui::app::{App, Overlay};
use blktune::tui::command::Mode;
use blktune::tui::dialogs::export::{Focus, WriteError};
use blktune::tui::dialogs::shootout::{LoadChoice, Stage};
use blktune::tui::worker::protocol::{ApplyKind, Control, Feed, LiveControl};
use blktune::tui::worker::shootout::{ShootOutError, ShootOutFeed};
use blktune_core::compare::{ControlCheck, ControlKind, Status};
use blktune_core::shootout::{
    FakeRounds, Figures, Goal, Phase, Progress, ShootoutError, ShootoutResult, fake_result,
};
use blktune_core::tuner::Wanted;
use crossterm::event::KeyCode;
use std::path::PathBuf;
use std::time::Duration;
use tui_fixture::*;

fn status(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

fn dialog(app: &App) -> &blktune::tui::dialogs::export::ExportDialog {
    match &app.overlay {
        Some(Overlay::Export(d)) => d,
        o => panic!("no export dialog: {o:?}"),
    }
}

fn bench(app: &App) -> &blktune::tui::dialogs::shootout::ShootOutDialog {
    match &app.overlay {
        Some(Overlay::ShootOut(d)) => d,
        o => panic!("no shoot-out dialog: {o:?}"),
    }
}

fn preview(app: &App) -> String {
    dialog(app).preview.as_ref().unwrap().text.clone()
}

fn started() -> (Machine, App) {
    let mut m = Machine::three();
    let app_ro = m.app(None);
    let mut app = app_ro;
    m.run(&mut app, 3, &busy(4));
    (m, app)
}

/// Replace the dialog's path with `p` through the keys.
fn type_path(app: &mut App, p: &str) {
    press(app, &chars("f"));
    assert_eq!(mode(app), Mode::Text);
    let n = dialog(app).path.len();
    press(app, &vec![KeyCode::Backspace; n]);
    press(app, &chars(p));
    press(app, &[KeyCode::Enter]);
    assert_eq!(mode(app), Mode::Export);
}

#[test]
fn export_dialog_cycles_strategies_and_previews_live() {
    let (_m, mut app) = started();
    assert!(press(&mut app, &chars("e")).is_empty());
    assert_eq!(mode(&app), Mode::Export);
    let d = dialog(&app);
    assert_eq!(d.path, "/etc/udev/rules.d/61-blktune.rules");
    // sda has no WWN/serial: the default is its kernel name, with the warning.
    assert_eq!(d.strategy.label(), "kernel");
    let p = preview(&app);
    assert!(p.contains("KERNEL==\"sda\""), "{p}");
    assert!(p.contains("ATTR{queue/scheduler}=\"mq-deadline\""), "{p}");
    press(&mut app, &chars("m"));
    assert_eq!(dialog(&app).strategy.label(), "id");
    assert!(dialog(&app).preview.is_err(), "sda has no id to match on");
    press(&mut app, &chars("m"));
    assert_eq!(dialog(&app).strategy.label(), "model");
    assert!(preview(&app).contains("ATTRS{model}==\"Samsung SSD 870\""));
    press(&mut app, &[KeyCode::Tab]);
    assert_eq!(dialog(&app).strategy.label(), "class");
    assert!(
        preview(&app).contains("ATTR{queue/rotational}==\"0\""),
        "{}",
        preview(&app)
    );
    press(&mut app, &chars("m"));
    assert_eq!(dialog(&app).strategy.label(), "kernel");
    // The preview opens at the rule; ↑ shows the header, and scrolling stays inside the text.
    let first = dialog(&app).scroll as usize;
    assert!(
        p.lines().nth(first).unwrap().starts_with("# sda: ssd"),
        "{p}"
    );
    press(
        &mut app,
        &[
            KeyCode::PageUp,
            KeyCode::PageUp,
            KeyCode::PageUp,
            KeyCode::Up,
        ],
    );
    assert_eq!(dialog(&app).scroll, 0);
    press(&mut app, &[KeyCode::PageDown, KeyCode::Down]);
    assert_eq!(dialog(&app).scroll, 11);
    press(&mut app, &[KeyCode::PageDown; 10]);
    assert_eq!(dialog(&app).scroll as usize, p.lines().count() - 1);
    press(&mut app, &[KeyCode::Esc]);
    assert!(app.overlay.is_none());
}

/// A setting whose file did not read (here nr_requests says `lots`): the
/// export dialog does not open on a rule that would leave it out without a
/// word, and the status says which file and why, as `blktune export` does.
/// A device none of whose settings read says why too, not "not read yet".
#[test]
fn export_refuses_a_device_whose_setting_did_not_read() {
    let (mut m, mut app) = started();
    let queue = m.tree.dev_dir("sda").join("queue");
    std::fs::write(queue.join("nr_requests"), "lots\n").unwrap();
    m.refresh();
    m.run(&mut app, 1, &busy(4));
    assert_eq!(app.selected.as_deref(), Some("sda"));
    assert!(press(&mut app, &chars("e")).is_empty());
    assert!(app.overlay.is_none(), "{:?}", app.overlay);
    assert_eq!(
        status(&app),
        "'sda': cannot read queue/nr_requests: unexpected content 'lots'; nothing exported"
    );

    for file in ["scheduler", "read_ahead_kb"] {
        std::fs::write(queue.join(file), "?\n").unwrap();
    }
    m.refresh();
    m.run(&mut app, 1, &busy(4));
    press(&mut app, &[KeyCode::Esc]);
    assert!(press(&mut app, &chars("n")).is_empty());
    assert_eq!(
        status(&app),
        "'sda': cannot read queue/scheduler: unexpected content '?'"
    );
}

#[test]
fn enter_writes_and_an_existing_file_is_asked_about() {
    let (_m, mut app) = started();
    press(&mut app, &chars("e"));
    type_path(&mut app, "/tmp/x/61-test.rules");
    // Esc while editing restores the old path.
    press(&mut app, &chars("f"));
    press(&mut app, &chars("zzz"));
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(dialog(&app).path, "/tmp/x/61-test.rules");
    assert!(
        preview(&app).contains("/tmp/x/61-test.rules"),
        "install line names the path"
    );
    // The kernel-name rule has a warning: Enter shows it and waits for y.
    assert!(press(&mut app, &[KeyCode::Enter]).is_empty());
    assert_eq!(dialog(&app).focus, Focus::Warnings);
    assert_eq!(mode(&app), Mode::Confirm);
    assert!(press(&mut app, &chars("n")).is_empty());
    assert_eq!(dialog(&app).focus, Focus::Options);
    press(&mut app, &[KeyCode::Enter]);
    let ctl = press(&mut app, &chars("y"));
    let text = preview(&app);
    match &ctl[..] {
        [
            Control::Live(LiveControl::WriteExport {
                path,
                text: t,
                force,
            }),
        ] => {
            assert_eq!(path, &PathBuf::from("/tmp/x/61-test.rules"));
            assert_eq!(t, &text);
            assert!(!force);
        }
        c => panic!("{c:?}"),
    }
    assert_eq!(dialog(&app).focus, Focus::Writing);
    app.on_feed(Feed::ExportWritten(Err(WriteError::Exists(
        "/tmp/x/61-test.rules".into(),
    ))));
    assert_eq!(mode(&app), Mode::Confirm);
    assert!(
        status(&app).contains("exists: y overwrites"),
        "{}",
        status(&app)
    );
    // n keeps the file and goes back to the options.
    assert!(press(&mut app, &chars("n")).is_empty());
    assert_eq!(mode(&app), Mode::Export);
    press(&mut app, &[KeyCode::Enter]);
    press(&mut app, &chars("y"));
    app.on_feed(Feed::ExportWritten(Err(WriteError::Exists("f".into()))));
    let ctl = press(&mut app, &chars("y"));
    assert!(
        matches!(
            &ctl[..],
            [Control::Live(LiveControl::WriteExport { force: true, .. })]
        ),
        "{ctl:?}"
    );
    app.on_feed(Feed::ExportWritten(Ok(PathBuf::from(
        "/tmp/x/61-test.rules",
    ))));
    assert!(app.overlay.is_none());
    let s = status(&app);
    assert!(s.starts_with("wrote /tmp/x/61-test.rules (sda)"), "{s}");
    assert!(
        s.contains(
            "apply: sudo udevadm control --reload && sudo udevadm trigger --action=change /sys/class/block/sda"
        ),
        "{s}"
    );
    assert!(
        !s.contains("--subsystem-match"),
        "only the device concerned: {s}"
    );
}

#[test]
fn a_failed_write_keeps_the_dialog_and_says_why() {
    let (_m, mut app) = started();
    press(&mut app, &chars("e"));
    type_path(&mut app, "");
    assert!(press(&mut app, &[KeyCode::Enter]).is_empty());
    assert!(status(&app).contains("type a path"), "{}", status(&app));
    type_path(&mut app, "/nope/61-x.rules");
    press(&mut app, &[KeyCode::Enter]);
    press(&mut app, &chars("y"));
    app.on_feed(Feed::ExportWritten(Err(WriteError::Failed(
        "/nope/61-x.rules: No such file or directory".into(),
    ))));
    assert_eq!(mode(&app), Mode::Export);
    assert!(
        status(&app).starts_with("not written: /nope"),
        "{}",
        status(&app)
    );
    // Esc while the write is on its way closes the dialog; the answer still shows.
    press(&mut app, &[KeyCode::Enter]);
    press(&mut app, &chars("y"));
    assert_eq!(dialog(&app).focus, Focus::Writing);
    press(&mut app, &[KeyCode::Esc]);
    assert!(app.overlay.is_none());
    app.on_feed(Feed::ExportWritten(Err(WriteError::Exists(
        "/nope/61-x.rules".into(),
    ))));
    assert_eq!(status(&app), "/nope/61-x.rules exists; not overwritten");
}

#[test]
fn all_changed_devices_and_the_measured_change_go_into_the_rule() {
    let (mut m, mut app) = started();
    press(&mut app, &chars("a"));
    // Nothing changed yet: the toggle says so and stays on the device.
    press(&mut app, &chars("e"));
    press(&mut app, &chars("a"));
    assert!(
        status(&app).contains("no device was changed"),
        "{}",
        status(&app)
    );
    press(&mut app, &[KeyCode::Esc]);
    let mark = m.mark("sdb", "bfq→mq-deadline", "bfq", "mq-deadline");
    app.undo.insert("sdb".into(), vec![mark.clone()]);
    app.on_feed(Feed::Change(mark));
    m.run(&mut app, 3, &busy(4));
    press(&mut app, &chars("e"));
    assert!(!dialog(&app).all);
    press(&mut app, &chars("a"));
    assert!(dialog(&app).all);
    assert_eq!(dialog(&app).names(), "sdb");
    let p = preview(&app);
    assert!(p.contains("KERNEL==\"sdb\""), "{p}");
    assert!(
        p.contains("measured: after bfq→mq-deadline: r_await 12.00→12.00 ms"),
        "{p}"
    );
    press(&mut app, &chars("a"));
    assert_eq!(dialog(&app).names(), "sda");
}

#[test]
fn read_only_shows_the_preview_and_refuses_the_shoot_out() {
    let mut m = Machine::three();
    let mut app = m.app(Some("not root"));
    m.run(&mut app, 2, &busy(4));
    assert!(press(&mut app, &chars("b")).is_empty());
    assert!(app.overlay.is_none());
    assert!(
        status(&app).starts_with("read-only (not root)"),
        "{}",
        status(&app)
    );
    press(&mut app, &chars("e"));
    assert_eq!(dialog(&app).read_only.as_deref(), Some("not root"));
    let screen = text(&screen(&app, 80, 24));
    assert!(
        screen.contains("read-only (not root): only a file is written"),
        "{screen}"
    );
}

fn progress(step: usize, sched: &str, left: u64, done: f64) -> Progress {
    Progress {
        device: "sda".into(),
        scheduler: sched.into(),
        configuration: sched.into(),
        step,
        steps: 29,
        block: 1,
        phase: Phase::Measuring,
        time_left: Duration::from_secs(left),
        done,
        look: None,
    }
}

/// Six interleaved rounds of each scheduler, r_await `ms` ± 2 %.
fn rounds(ms: f64, r_s: f64) -> FakeRounds {
    (0..6)
        .map(|i| {
            let f = Figures {
                r_s,
                w_s: 40.0,
                mb_s: 3.4,
                // A wobble of its own for each scheduler: rounds vary.
                r_await: ms * (1.0 + 0.04 * (i as f64 * 1.7 + ms * 3.1).sin()),
                w_await: 10.0,
                aqu_sz: 3.0,
                util: 88.0,
                load: None,
            };
            (f, None)
        })
        .collect()
}

/// A shoot-out of sda's four schedulers whose verdict is decided: kyber.
fn result() -> ShootoutResult {
    let mut r = fake_result(
        "sda",
        Goal::ReadLatency,
        &[
            ("none", rounds(4.2, 790.0)),
            ("mq-deadline", rounds(4.0, 800.0)),
            ("kyber", rounds(1.1, 812.0)),
            ("bfq", rounds(6.5, 610.0)),
        ],
    );
    r.original = Wanted {
        scheduler: Some("mq-deadline".into()),
        ..Wanted::default()
    };
    r.final_settings = "original settings restored (scheduler=mq-deadline)".into();
    r
}

/// The same, but mq-deadline and kyber within the noise of each other.
fn undecided() -> ShootoutResult {
    let mut wide = rounds(1.2, 800.0);
    for (i, (f, _)) in wide.iter_mut().enumerate() {
        f.r_await *= if i % 3 == 0 { 1.6 } else { 0.7 };
    }
    let mut r = fake_result(
        "sda",
        Goal::ReadLatency,
        &[
            ("none", rounds(4.2, 790.0)),
            ("mq-deadline", wide),
            ("kyber", rounds(1.1, 812.0)),
            ("bfq", rounds(6.5, 610.0)),
        ],
    );
    r.final_settings =
        "original settings restored (scheduler=mq-deadline nr_requests=256 read_ahead_kb=2560)"
            .into();
    r
}

#[test]
fn shoot_out_starts_in_the_background_and_esc_cancels() {
    let (_m, mut app) = started();
    assert!(press(&mut app, &chars("b")).is_empty());
    assert_eq!(mode(&app), Mode::ShootOut);
    assert_eq!(bench(&app).load, LoadChoice::Passive);
    assert_eq!(
        bench(&app).schedulers,
        ["none", "mq-deadline", "kyber", "bfq"]
    );
    press(&mut app, &[KeyCode::Tab]);
    assert_eq!(bench(&app).load, LoadChoice::RandRead);
    press(&mut app, &chars("l"));
    assert_eq!(bench(&app).load, LoadChoice::Passive);
    let ctl = press(&mut app, &[KeyCode::Enter]);
    match &ctl[..] {
        [Control::Live(LiveControl::StartShootOut(r))] => {
            assert_eq!(r.device, "sda");
            assert_eq!(r.load, LoadChoice::Passive.mix());
        }
        c => panic!("{c:?}"),
    }
    // The load cannot change while it runs; other keys do nothing.
    press(&mut app, &[KeyCode::Tab]);
    assert_eq!(bench(&app).load, LoadChoice::Passive);
    assert!(press(&mut app, &chars("a")).is_empty());
    app.on_feed(Feed::ShootOut(ShootOutFeed::Progress(progress(
        3, "kyber", 11, 0.55,
    ))));
    assert!(matches!(
        &bench(&app).stage,
        Stage::Running { progress: Some(p), cancelling: false } if p.scheduler == "kyber"
    ));
    assert_eq!(
        press(&mut app, &[KeyCode::Esc]),
        [Control::Live(LiveControl::CancelShootOut)]
    );
    assert!(press(&mut app, &[KeyCode::Esc]).is_empty(), "asked once");
    assert!(
        app.overlay.is_some(),
        "stays open until the restore is done"
    );
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Err(ShootOutError::Run(
        ShootoutError::Cancelled {
            dev: "sda".into(),
            restore: "original settings restored (scheduler=mq-deadline)".into(),
        },
    )))));
    assert!(app.overlay.is_none());
    assert!(status(&app).contains("cancelled; original settings restored"));
}

#[test]
fn results_offer_apply_and_export_of_the_winner() {
    let (_m, mut app) = started();
    press(&mut app, &chars("b"));
    press(&mut app, &[KeyCode::Enter]);
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Ok(Box::new(result())))));
    assert_eq!(bench(&app).winner(), Some("kyber"));
    assert!(status(&app).contains("winner kyber"), "{}", status(&app));
    // e: the export dialog, prefilled with the winner and the verdict.
    assert!(press(&mut app, &chars("e")).is_empty());
    let p = preview(&app);
    assert!(p.contains("ATTR{queue/scheduler}=\"kyber\""), "{p}");
    assert!(
        p.contains("measured: blktune shoot-out (passive): winner for read-latency"),
        "{p}"
    );
    press(&mut app, &[KeyCode::Esc]);
    // a: a change through the tuner, like the picker.
    press(&mut app, &chars("b"));
    press(&mut app, &[KeyCode::Enter]);
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Ok(Box::new(result())))));
    let ctl = press(&mut app, &chars("a"));
    match &ctl[..] {
        [Control::Live(LiveControl::Apply(r))] => {
            assert_eq!(r.device, "sda");
            assert_eq!(r.settings.scheduler.as_deref(), Some("kyber"));
            assert_eq!(r.kind, ApplyKind::Change);
        }
        c => panic!("{c:?}"),
    }
    assert!(app.overlay.is_none());
    assert_eq!(app.pending, 1);
}

#[test]
fn applying_a_winner_the_shoot_out_left_in_force_changes_nothing() {
    // The shoot-out restored kyber, the winner; the last snapshot still shows
    // the scheduler it tried last. What the shoot-out says it left decides.
    let (_m, mut app) = started();
    let active = |app: &App| {
        app.devices
            .iter()
            .find(|d| d.name == "sda")
            .map(|d| d.queue.active_label().to_string())
    };
    assert_ne!(
        active(&app).as_deref(),
        Some("kyber"),
        "the snapshot is stale"
    );
    press(&mut app, &chars("b"));
    press(&mut app, &[KeyCode::Enter]);
    let mut r = result();
    r.original.scheduler = Some("kyber".into());
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Ok(Box::new(r)))));
    assert_eq!(bench(&app).winner(), Some("kyber"));
    assert!(press(&mut app, &chars("a")).is_empty(), "nothing to apply");
    assert!(
        status(&app).contains("'sda': kyber is already active"),
        "{}",
        status(&app)
    );
    assert_eq!(app.pending, 0);
    bench(&app); // the results stay open
}

#[test]
fn an_undecided_shoot_out_offers_nothing_to_apply_and_its_keys_stay_in_the_box() {
    let (_m, mut app) = started();
    press(&mut app, &chars("b"));
    press(&mut app, &[KeyCode::Enter]);
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Ok(
        Box::new(undecided()),
    ))));
    assert_eq!(bench(&app).winner(), None);
    assert!(
        status(&app).ends_with("done: no winner"),
        "{}",
        status(&app)
    );
    assert!(press(&mut app, &chars("a")).is_empty(), "nothing to apply");
    assert_eq!(status(&app), "no decided winner to apply");
    assert!(press(&mut app, &chars("e")).is_empty());
    assert_eq!(status(&app), "no decided winner to export");
    for (w, h) in [(80, 24), (60, 20)] {
        let s = text(&screen(&app, w, h));
        assert!(!s.contains('★'), "no star without a decided winner:\n{s}");
        let lines: Vec<&str> = s.lines().collect();
        let keys = lines
            .iter()
            .position(|l| l.contains("no decided winner: nothing to apply"))
            .unwrap_or_else(|| panic!("{w}x{h}: no result keys:\n{s}"));
        assert!(
            lines[keys + 1].contains('└'),
            "{w}x{h}: the keys sit on the box's last row:\n{s}"
        );
        if w >= 80 {
            assert!(
                s.contains("no winner for read-latency (r_await): kyber leads, undecided against"),
                "{w}x{h}:\n{s}"
            );
        }
    }
}

/// The shoot-out dialog showing [`undecided`]'s result with these controls
/// added (their kind, status and text) and, when given, this restore line:
/// the machine, the app, and the result as it was fed.
fn undecided_shown(
    controls: &[(ControlKind, Status, &str)],
    final_settings: Option<&str>,
) -> (Machine, App, ShootoutResult) {
    let (m, mut app) = started();
    press(&mut app, &chars("b"));
    press(&mut app, &[KeyCode::Enter]);
    let mut r = undecided();
    let a = r.analysis.as_mut().unwrap();
    for &(kind, status, text) in controls {
        a.controls.push(ControlCheck {
            kind,
            status,
            text: text.into(),
        });
    }
    if let Some(f) = final_settings {
        r.final_settings = f.into();
    }
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Ok(Box::new(r.clone())))));
    (m, app, r)
}

/// A real run at 80x24 (the tmux test's): two control notes of two rows
/// each and a long restore line pushed the conclusion's end and what the
/// device was left with out of the box. Now the notes are said in one line
/// there and the restore line keeps one row; a tall screen shows them all.
#[test]
fn a_small_screen_keeps_the_conclusion_and_the_restore_line_and_counts_the_notes() {
    let (_m, app, _) = undecided_shown(
        &[
            (
                ControlKind::System,
                Status::Note,
                "system: the CPU was saturated (>= 90% busy) in 16 of 16 rounds: the figures include waiting for a CPU",
            ),
            (
                ControlKind::System,
                Status::Note,
                "load: IOPS +95% (+24..+206) under none against bfq, the load is closed-loop (a fixed number of I/Os in flight): part of the effect",
            ),
        ],
        Some(
            "original settings restored (scheduler=mq-deadline async_depth=192 fifo_batch=16 front_merges=1 prio_aging_expire=10000 read_expire=500 write_expire=5000 writes_starved=2 nr_requests=256 read_ahead_kb=128)",
        ),
    );
    let s = text(&screen(&app, 80, 24));
    for want in [
        "r_await of kyber against each:",
        "no winner for read-latency (r_await): kyber leads, undecided against",
        "original settings restored (scheduler=mq-deadline async_depth=192",
        "no decided winner: nothing to apply",
        "controls: nothing failed; 2 notes (a taller terminal shows them)",
    ] {
        assert!(s.contains(want), "80x24: no '{want}':\n{s}");
    }
    assert!(!s.contains("the CPU was saturated"), "{s}");
    let s = text(&screen(&app, 120, 40));
    for want in [
        "controls (what else changed in the same rounds):",
        "  note    system: the CPU was saturated (>= 90% busy) in 16 of 16 rounds",
        "original settings restored (scheduler=mq-deadline async_depth=192",
        "no decided winner: nothing to apply",
    ] {
        assert!(s.contains(want), "120x40: no '{want}':\n{s}");
    }
}

/// Two failed controls wrap over three rows each at 80 columns: what stays
/// must still end with what the device was left with (seen in a CI run:
/// the restore line fell below the box).
#[test]
fn a_small_screen_with_failed_controls_still_says_what_the_device_was_left_with() {
    let (_m, app, _) = undecided_shown(
        &[
            (
                ControlKind::Load,
                Status::Failed,
                "load: IOPS +44% (+30..+58) under none against mq-deadline, with +13% (+4..+24) I/Os in flight (aqu-sz): the offered load changed; the switch is not the only change",
            ),
            (
                ControlKind::Load,
                Status::Failed,
                "vda (under loop2) sped up too: await 1.3 -> 0.12 ms (mq-deadline -> none, -95%); the switch is not the only change",
            ),
            (
                ControlKind::System,
                Status::Note,
                "system: CPU busy 95% -> 96%",
            ),
            (
                ControlKind::System,
                Status::Note,
                "system: PSI io some 0.1% -> 0.2%",
            ),
        ],
        Some(
            "original settings restored (scheduler=none nr_requests=128 read_ahead_kb=2560 wbt_lat_usec=75000 nomerges=0 rq_affinity=1 max_sectors_kb=1280 add_random=0)",
        ),
    );
    let s = text(&screen(&app, 80, 24));
    for want in [
        "FAILED  load: IOPS +44%",
        "original settings restored",
        "no decided winner: nothing to apply",
    ] {
        assert!(s.contains(want), "80x24: no '{want}':\n{s}");
    }
}

/// Three failed controls and three comparisons are more than 80x24 holds
/// wrapped (seen in a CI run: the conclusion and two comparisons fell below
/// the box): each then takes one row, and the conclusion is always there.
#[test]
fn a_small_screen_with_three_failed_controls_still_shows_every_comparison_and_the_conclusion() {
    let (_m, app, r) = undecided_shown(
        &[
            (
                ControlKind::Under,
                Status::Failed,
                "vda (under loop2) sped up too: await 1.2 -> 0.094 ms (mq-deadline -> none, -96%); the switch is not the only change",
            ),
            (
                ControlKind::Load,
                Status::Failed,
                "load: IOPS +26% (+15..+38) under none against kyber, with +11% (+5..+17) I/Os in flight (aqu-sz): the offered load changed; the switch is not the only change",
            ),
            (
                ControlKind::Load,
                Status::Failed,
                "load: IOPS +61% (+41..+83) under none against bfq, with +11% (+7..+16) I/Os in flight (aqu-sz): the offered load changed; the switch is not the only change",
            ),
        ],
        Some(
            "original settings restored (scheduler=none nr_requests=128 read_ahead_kb=2560 wbt_lat_usec=75000 nomerges=0 rq_affinity=1 max_sectors_kb=1280 add_random=0)",
        ),
    );
    let s = text(&screen(&app, 80, 24));
    let others: Vec<String> = (r.configurations.iter())
        .map(|c| c.configuration.clone())
        .filter(|c| Some(c) != r.verdict.leader.as_ref())
        .collect();
    let head: String = r.verdict.brief.chars().take(40).collect();
    for want in [
        "FAILED  vda (under loop2)",
        "FAILED  load: IOPS +26%",
        "FAILED  load: IOPS +61%",
        "original settings restored",
        "% intervals, minimum ±5%",
        head.as_str(),
        "no decided winner: nothing to apply",
    ] {
        assert!(s.contains(want), "80x24: no '{want}':\n{s}");
    }
    // Every comparison: a line that starts with the other's name and says
    // what it found.
    for other in &others {
        assert!(
            s.lines().any(|l| {
                let inner = l
                    .trim_start_matches(|c: char| c != '│')
                    .trim_start_matches('│');
                inner.trim_start().starts_with(&format!("{other} "))
                    && (inner.contains('%') || inner.contains("no pair"))
            }),
            "80x24: no comparison against {other}:\n{s}"
        );
    }
}

/// More failed controls than rows: the first stays, the rest are counted,
/// and the comparisons and the conclusion are still on the screen.
#[test]
fn failed_controls_beyond_the_rows_are_counted_in_one_line() {
    let texts: Vec<String> = (0..8)
        .map(|i| format!("control {i} failed: the switch is not the only change"))
        .collect();
    let controls: Vec<_> = (texts.iter())
        .map(|t| (ControlKind::Load, Status::Failed, t.as_str()))
        .collect();
    let (_m, app, r) = undecided_shown(&controls, None);
    let s = text(&screen(&app, 80, 24));
    let head: String = r.verdict.brief.chars().take(40).collect();
    for want in [
        "FAILED  control 0 failed",
        "more failed controls (a taller terminal shows them)",
        "original settings restored",
        head.as_str(),
        "  none ",
        "  mq-deadline ",
        "  bfq ",
    ] {
        assert!(s.contains(want), "80x24: no '{want}':\n{s}");
    }
    assert!(!s.contains("control 7 failed"), "{s}");
}

#[test]
fn a_failed_shoot_out_is_shown_until_closed() {
    let (_m, mut app) = started();
    press(&mut app, &chars("b"));
    press(&mut app, &[KeyCode::Enter]);
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Err(load_failed()))));
    assert!(matches!(bench(&app).stage, Stage::Failed(_)));
    press(&mut app, &[KeyCode::Esc]);
    assert!(app.overlay.is_none());
}

#[test]
fn snapshot_export_dialog() {
    let (_m, mut app) = started();
    press(&mut app, &chars("e"));
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn snapshot_shoot_out_setup() {
    let (_m, mut app) = started();
    press(&mut app, &chars("b"));
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn snapshot_shoot_out_progress() {
    let (_m, mut app) = started();
    press(&mut app, &chars("b"));
    press(&mut app, &[KeyCode::Enter]);
    app.on_feed(Feed::ShootOut(ShootOutFeed::Progress(progress(
        3, "kyber", 11, 0.55,
    ))));
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn snapshot_shoot_out_results() {
    let (_m, mut app) = started();
    press(&mut app, &chars("b"));
    press(&mut app, &[KeyCode::Enter]);
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Ok(Box::new(result())))));
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

/// The footer of the shoot-out shows only the keys that do something in
/// its stage (it used to offer start and apply while it ran).
#[test]
fn shoot_out_footer_shows_the_keys_of_its_stage() {
    let footer = |app: &App| {
        let s = text(&screen(app, 80, 24));
        s.lines()
            .nth(23)
            .unwrap()
            .trim_matches(['"', ' '])
            .to_string()
    };
    let (_m, mut app) = started();
    press(&mut app, &chars("b"));
    assert_eq!(footer(&app), "l load  Enter start  Esc close");
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(footer(&app), "Esc cancel");
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(footer(&app), "", "nothing to press while it restores");
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Ok(Box::new(result())))));
    assert_eq!(footer(&app), "a apply  e export  Esc close");
    press(&mut app, &[KeyCode::Esc]);
    press(&mut app, &chars("b"));
    press(&mut app, &[KeyCode::Enter]);
    app.on_feed(Feed::ShootOut(ShootOutFeed::Done(Err(load_failed()))));
    assert_eq!(footer(&app), "Esc close");
}

/// The open export dialog with its warnings replaced by `count` long ones.
fn with_warnings(app: &mut App, count: usize) {
    let Some(Overlay::Export(d)) = &mut app.overlay else {
        panic!("no export dialog");
    };
    d.preview.as_mut().unwrap().warnings = (1..=count)
        .map(|i| {
            format!(
                "warning {i}: the class rule also matches loop{i} on this host, and more words so that it wraps"
            )
        })
        .collect();
}

#[test]
fn every_warning_is_counted_and_listed_before_the_write() {
    let (_m, mut app) = started();
    press(&mut app, &chars("e"));
    with_warnings(&mut app, 7);
    // Above the preview: two warnings, then how many more.
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("! warning 1:"), "{s}");
    assert!(s.contains("! warning 2:"), "{s}");
    assert!(!s.contains("! warning 3:"), "{s}");
    assert!(
        s.contains("! +5 more warnings (Enter lists them all before writing)"),
        "{s}"
    );
    // Enter lists all seven, wrapped; nothing is written without y.
    assert!(press(&mut app, &[KeyCode::Enter]).is_empty());
    assert_eq!(dialog(&app).focus, Focus::Warnings);
    let term = screen(&app, 80, 24);
    let s = text(&term);
    for i in 1..=7 {
        assert!(
            s.contains(&format!("! warning {i}: the class rule")),
            "{i}: {s}"
        );
    }
    assert!(s.contains("7 warnings: read before writing"), "{s}");
    assert!(
        s.contains("y write /etc/udev/rules.d/61-blktune.rules anyway"),
        "{s}"
    );
    insta::assert_snapshot!("export_warnings_confirm", term.backend());
    // Only y writes: a second Enter (typed ahead) does nothing.
    assert!(press(&mut app, &[KeyCode::Enter]).is_empty());
    assert_eq!(dialog(&app).focus, Focus::Warnings);
    // Esc (n) goes back; Enter, then y writes.
    assert!(press(&mut app, &[KeyCode::Esc]).is_empty());
    assert_eq!(dialog(&app).focus, Focus::Options);
    assert_eq!(
        status(&app),
        "/etc/udev/rules.d/61-blktune.rules not written; Enter lists the warnings again",
        "the y/n prompt is gone from the status line"
    );
    press(&mut app, &[KeyCode::Enter]);
    let ctl = press(&mut app, &chars("y"));
    assert!(
        matches!(
            &ctl[..],
            [Control::Live(LiveControl::WriteExport { force: false, .. })]
        ),
        "{ctl:?}"
    );

    // More than fit: the rest is counted.
    let (_m, mut app) = started();
    press(&mut app, &chars("e"));
    with_warnings(&mut app, 12);
    press(&mut app, &[KeyCode::Enter]);
    let s = text(&screen(&app, 80, 24));
    let shown = (1..=12)
        .filter(|i| s.contains(&format!("! warning {i}: ")))
        .count();
    assert!(shown >= 5, "{s}");
    assert!(
        s.contains(&format!("+{} more (all are in the file's", 12 - shown)),
        "{s}"
    );
}

#[test]
fn a_rule_without_warnings_is_written_at_once() {
    let (_m, mut app) = started();
    press(&mut app, &chars("e"));
    with_warnings(&mut app, 0);
    let ctl = press(&mut app, &[KeyCode::Enter]);
    assert!(
        matches!(
            &ctl[..],
            [Control::Live(LiveControl::WriteExport { force: false, .. })]
        ),
        "{ctl:?}"
    );
}

/// A shoot-out whose load failed midway (the engine's words).
fn load_failed() -> ShootOutError {
    ShootOutError::Run(ShootoutError::Aborted {
        cause: "'sda': the load failed".into(),
        restore: "original settings restored (scheduler=mq-deadline)".into(),
    })
}

/// The help scrolls with Home and End too, and never past its end: Up
/// after many Downs moves at once (the scroll used to run on unseen).
#[test]
fn help_scrolls_to_its_ends_and_not_past_them() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 2, &busy(4));
    let (w, h) = (80, 24);
    press(&mut app, &chars("?"));
    // As the event loop does before each draw.
    blktune::tui::event_loop::on_size(w, h, &mut app);
    let max = blktune::tui::render::overlay::help_max_scroll(w, h, &app).unwrap();
    assert!(max > 0, "the help fits 80x24: nothing to test");
    let top = text(&screen(&app, w, h));
    press(&mut app, &[KeyCode::End]);
    assert!(matches!(app.overlay, Some(Overlay::Help { scroll }) if scroll as usize == max));
    let end = text(&screen(&app, w, h));
    assert_ne!(end, top);
    for _ in 0..50 {
        press(&mut app, &[KeyCode::Down]);
    }
    assert_eq!(text(&screen(&app, w, h)), end);
    press(&mut app, &[KeyCode::Up]);
    assert!(matches!(app.overlay, Some(Overlay::Help { scroll }) if scroll as usize == max - 1));
    assert_ne!(text(&screen(&app, w, h)), end, "Up moved nothing");
    press(&mut app, &[KeyCode::Home]);
    assert_eq!(text(&screen(&app, w, h)), top);
}
