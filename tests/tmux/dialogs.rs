//! End to end: the `e` export dialog and the `b` shoot-out of the real binary
//! in tmux (80x24) on a loop device this test creates. Root only; skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::{Tmux, shoot_out_done};
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROMPT: &str = "dlg$";

/// Start the TUI on `dev` with a private journal in a plain shell in tmux.
fn start_tui(dev: &str, journal: &std::path::Path) -> Tmux {
    let t = Tmux::shell(PROMPT, 80, 24);
    t.line(&format!(
        "env BLKTUNE_JOURNAL_DIR={} {} --device {dev} --interval 250ms",
        journal.display(),
        env!("CARGO_BIN_EXE_blktune")
    ));
    t.wait("the TUI with the loop device", |s| {
        s.contains("every 250ms") && s.contains(&format!("▶{dev} "))
    });
    t
}

/// A test's own loop device with the TUI on it (private journal), and what
/// to compare against.
struct Bed {
    lo: TestLoop,
    dev: String,
    /// The loop's backing file, to check it is detached at the end.
    file: PathBuf,
    /// The loop's settings before the TUI started.
    before: Vec<(String, String)>,
    /// Holds the journal; removed on drop.
    tmp: tempfile::TempDir,
    t: Tmux,
}

impl Bed {
    fn new() -> Self {
        let lo = TestLoop::new(32);
        let dev = lo.name().to_string();
        let file = lo.dev.file().to_path_buf();
        let before = lo.settings();
        let tmp = tempfile::tempdir().unwrap();
        let t = start_tui(&dev, &tmp.path().join("journal"));
        Self {
            lo,
            dev,
            file,
            before,
            tmp,
            t,
        }
    }
}

/// Quit the TUI and wait for the shell.
fn quit(tmux: &Tmux) {
    tmux.keys(&["q"]);
    tmux.wait("the prompt back", |s| {
        s.contains("blktune: ") && s.trim_end().ends_with(PROMPT)
    });
}

/// Quit, then: the loop device has its original settings, and once dropped
/// it is gone from `losetup -a`.
fn quit_and_check_gone(tmux: &Tmux, lo: TestLoop, before: &[(String, String)], file: &Path) {
    quit(tmux);
    assert_eq!(lo.settings(), before);
    drop(lo);
    assert!(!attached(file), "our loop device is gone from losetup -a");
}

/// Is a loop device over `file` still attached?
fn attached(file: &std::path::Path) -> bool {
    let o = Command::new("losetup").arg("-a").output().unwrap();
    String::from_utf8_lossy(&o.stdout).contains(&*file.to_string_lossy())
}

#[test]
fn export_dialog_writes_a_kernel_rule_and_asks_before_overwriting() {
    let name = "export_dialog_writes_a_kernel_rule_and_asks_before_overwriting";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let Bed {
        lo,
        dev,
        before,
        tmp,
        t,
        ..
    } = Bed::new();
    let rules: PathBuf = tmp.path().join("61-blktune-e2e.rules");

    t.keys(&["e"]);
    t.wait("the export dialog", |s| s.contains("export a udev rule"));
    // Through every strategy back to kernel (a loop device has no id or model).
    for want in ["id", "model", "class", "kernel"] {
        t.keys(&["m"]);
        t.wait(&format!("match {want}"), |s| {
            s.contains(&format!("match    {want} "))
        });
    }
    t.wait("the kernel rule in the preview", |s| {
        s.contains(&format!("KERNEL==\"{dev}\""))
    });
    t.keys(&["f"]);
    t.keys(&["-N", "80", "BSpace"]);
    t.literal(&rules.to_string_lossy());
    t.keys(&["Enter"]);
    // A kernel-name rule has a warning: Enter lists it, only y writes.
    t.keys(&["Enter"]);
    t.wait("the warnings", |s| s.contains("read before writing"));
    assert!(!rules.exists(), "nothing written before y");
    t.keys(&["y"]);
    let s = t.wait("the write", |s| s.contains("wrote "));
    // The full apply command is in the status (two rows at 80 columns, clipped) and in
    // the header; where the status wraps depends on the lengths of the path and the name.
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("apply: sudo udevadm control"), "{s}");
    let text = std::fs::read_to_string(&rules).unwrap();
    assert!(text.contains("ATTR{queue/scheduler}"), "{text}");
    assert!(text.contains(&format!("KERNEL==\"{dev}\"")), "{text}");

    // Again: the file exists, so the dialog asks; n keeps it, y replaces it.
    std::fs::write(&rules, "old\n").unwrap();
    t.keys(&["e"]);
    t.wait("the export dialog", |s| s.contains("export a udev rule"));
    t.keys(&["f"]);
    t.keys(&["-N", "80", "BSpace"]);
    t.literal(&rules.to_string_lossy());
    t.keys(&["Enter", "Enter"]);
    t.wait("the warnings", |s| s.contains("read before writing"));
    t.keys(&["y"]);
    t.wait("the overwrite question", |s| s.contains("y overwrite"));
    t.keys(&["n"]);
    t.wait("not overwritten", |s| s.contains("not overwritten"));
    assert_eq!(std::fs::read_to_string(&rules).unwrap(), "old\n");
    t.keys(&["Enter"]);
    t.wait("the warnings", |s| s.contains("read before writing"));
    t.keys(&["y"]);
    t.wait("the overwrite question", |s| s.contains("y overwrite"));
    t.keys(&["y"]);
    t.wait("the write", |s| s.contains("wrote "));
    assert!(
        std::fs::read_to_string(&rules)
            .unwrap()
            .contains("ATTR{queue/scheduler}")
    );
    quit(&t);
    assert_eq!(lo.settings(), before, "exporting changes no device");
}

#[test]
fn shoot_out_shows_progress_and_esc_restores_the_originals() {
    let name = "shoot_out_shows_progress_and_esc_restores_the_originals";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let Bed {
        lo,
        dev,
        file,
        before,
        tmp: _tmp,
        t,
    } = Bed::new();
    let orig = lo.active_scheduler();

    t.keys(&["b"]);
    t.wait("the shoot-out setup", |s| {
        s.contains(&format!("scheduler shoot-out on {dev}")) && s.contains("passive")
    });
    t.keys(&["Enter"]);
    t.wait("the progress bar", |s| {
        s.contains("round 1 of at most ") && s.contains("left") && s.contains('█')
    });
    // Wait for a switch away from the original, so Esc has something to restore.
    assert!(
        wait_until(TIMEOUT, || lo.active_scheduler() != orig),
        "no switch seen; screen:\n{}",
        t.capture()
    );
    t.keys(&["Escape"]);
    let s = t.wait("the cancel", |s| {
        s.contains("cancelled; original settings restored")
    });
    assert!(!s.contains("scheduler shoot-out on"), "dialog closed: {s}");
    assert_eq!(lo.settings(), before, "settings back to the originals");
    quit_and_check_gone(&t, lo, &before, &file);
}

#[test]
fn shoot_out_runs_to_the_end_shows_results_and_applies_the_winner() {
    let name = "shoot_out_runs_to_the_end_shows_results_and_applies_the_winner";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let Bed {
        lo,
        dev,
        file,
        before,
        tmp: _tmp,
        t,
    } = Bed::new();

    t.keys(&["b"]);
    t.wait("the shoot-out setup", |s| s.contains("passive"));
    t.keys(&["l"]);
    t.wait("the read load chosen", |s| {
        s.contains("randread (4 × 4 KiB")
    });
    t.keys(&["Enter"]);
    t.wait("the progress bar", |s| s.contains("round 1 of at most "));
    // Four schedulers in rounds of 1 s settle + 3 s dwell, interleaved until
    // decided or 60 s have passed; more on a busy box.
    let s = t
        .wait_for(shoot_out_done, std::time::Duration::from_secs(150))
        .unwrap_or_else(|s| panic!("no results; screen:\n{s}"));
    // Every scheduler the device offers has a row with a non-zero r/s (rows
    // sit inside the dialog's border; the winner's is starred).
    let cells = |l: &str| -> Option<Vec<String>> {
        let inner = l.split('│').nth(1)?;
        Some(
            inner
                .trim_start_matches([' ', '★'])
                .split_whitespace()
                .map(str::to_string)
                .collect(),
        )
    };
    let offered = lo.queue("scheduler").replace(['[', ']'], "");
    for sched in offered.split_whitespace() {
        let row = s
            .lines()
            .filter_map(cells)
            .find(|c| c.first().map(String::as_str) == Some(sched))
            .unwrap_or_else(|| panic!("no row for {sched}:\n{s}"));
        assert_ne!(row[1], "0", "{sched} measured no reads: {row:?}");
    }
    assert_eq!(
        lo.settings(),
        before,
        "the originals are back after the run"
    );
    // A star only for a decided winner; without one, `a` changes nothing.
    let Some(winner) = s
        .lines()
        .find_map(|l| l.split('★').nth(1))
        .and_then(|r| r.split_whitespace().next())
        .map(str::to_string)
    else {
        assert!(s.contains("no decided winner: nothing to apply"), "{s}");
        t.keys(&["a"]);
        t.wait("the refusal", |s| s.contains("no decided winner to apply"));
        assert_eq!(lo.settings(), before, "nothing applied");
        t.keys(&["Escape"]);
        t.wait("the results closed", |s| {
            !s.contains("scheduler shoot-out on")
        });
        quit_and_check_gone(&t, lo, &before, &file);
        return;
    };

    // a: the winner goes in through the tuner (its answer is on the status
    // line), u undoes it.
    t.keys(&["a"]);
    let orig = before[0].1.clone();
    let answer = if winner == orig {
        // Nothing to apply: said on the status line, the results stay open.
        format!("'{dev}': {orig} is already active")
    } else {
        format!("{dev}: {orig}→{winner}")
    };
    t.wait("the apply's answer", |s| s.contains(&answer));
    assert_eq!(lo.active_scheduler(), winner, "the winner is in force");
    if winner != orig {
        t.keys(&["u"]);
        t.wait("the undo's answer", |s| s.contains(&format!("undo: {dev}")));
        assert_eq!(lo.settings(), before, "u put the originals back");
    } else {
        t.keys(&["Escape"]);
        t.wait("the results closed", |s| {
            !s.contains("scheduler shoot-out on")
        });
    }
    quit_and_check_gone(&t, lo, &before, &file);
}
