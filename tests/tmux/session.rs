//! End to end: the real binary in tmux (80x24) on a loop device this test
//! creates, under fio load. Root only; skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune_core::journal::Journal;
use common::tmux::{Tmux, alive};
use common::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The shell prompt (`PS1` plus a space, which capture-pane trims).
const PROMPT: &str = "e2e$";

/// A plain shell in a private 80x24 tmux pane.
fn shell() -> Tmux {
    Tmux::shell(PROMPT, 80, 24)
}

/// Wait until the TUI has left the alternate screen and the prompt is back.
fn wait_restored(tmux: &Tmux, what: &str) -> String {
    assert!(
        wait_until(TIMEOUT, || !tmux.alternate_on()),
        "{what}: still on the alternate screen:\n{}",
        tmux.capture()
    );
    tmux.wait(&format!("{what}: the prompt back"), |s| {
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.starts_with(PROMPT))
    })
}

/// fio load on our own loop device, killed on drop.
struct Fio(Child);

impl Fio {
    fn start(dev: &str) -> Self {
        let child = Command::new("fio")
            .args([
                "--direct=1",
                "--time_based",
                "--runtime=60",
                "--ioengine=psync",
            ])
            // Jobs as threads of one process, so killing it stops all I/O.
            .arg("--thread")
            .arg(format!("--filename=/dev/{dev}"))
            .args(["--name=randread", "--rw=randread", "--bs=4k"])
            .args(["--name=seqwrite", "--rw=write", "--bs=1M"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Self(child)
    }
}

impl Drop for Fio {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The row of the device table for `dev` (selected or not).
fn row<'a>(screen: &'a str, dev: &str) -> Option<&'a str> {
    screen.lines().find(|l| {
        let mut c = l.chars();
        c.next();
        c.as_str().starts_with(&format!("{dev} ")) && !l.contains("sched ")
    })
}

/// The pid `sh -c 'echo $$ > file; exec ...'` wrote to `file`.
fn pid_of(file: &Path) -> i32 {
    let read = || {
        std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
    };
    assert!(wait_until(TIMEOUT, || read().is_some()), "no pid file");
    read().unwrap()
}

fn wait_sysfs(lo: &TestLoop, want: &str, screen: impl Fn() -> String) {
    assert!(
        wait_until(TIMEOUT, || lo.active_scheduler() == want),
        "sysfs never said {want}; screen:\n{}",
        screen()
    );
}

/// Switch `lo` to kyber in the picker (`s`, arrows, Enter) and wait until sysfs says so.
fn pick_kyber(tmux: &Tmux, lo: &TestLoop) {
    tmux.keys(&["s"]);
    tmux.wait("the picker", |s| {
        s.contains(&format!("scheduler of {}", lo.name()))
    });
    tmux.keys(&moves(lo, "kyber"));
    tmux.keys(&["Enter"]);
    wait_sysfs(lo, "kyber", || tmux.capture());
}

/// Whole seconds since the change the before/after panel compares
/// (`Δ none→kyber  2s ago`): about what its `after` column covers (at
/// 80x24 the panel has no room for the `covers` row).
fn change_age(screen: &str) -> Option<u32> {
    let line = screen
        .lines()
        .find(|l| l.contains("Δ ") && l.contains(" ago"))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let age = words[words.iter().position(|w| *w == "ago")?.checked_sub(1)?];
    let (m, s) = age
        .strip_suffix('s')?
        .split_once('m')
        .unwrap_or(("0", age.strip_suffix('s')?));
    Some(m.parse::<u32>().ok()? * 60 + s.parse::<u32>().ok()?)
}

/// Keys to move the picker's cursor from the active scheduler to `to`.
fn moves(lo: &TestLoop, to: &str) -> Vec<&'static str> {
    let line = lo.queue("scheduler");
    let names: Vec<String> = line
        .split_whitespace()
        .map(|w| w.trim_matches(['[', ']']).to_string())
        .collect();
    let from = names
        .iter()
        .position(|n| *n == lo.active_scheduler())
        .unwrap();
    let to = names.iter().position(|n| n == to).expect("kyber available");
    let key = if to > from { "Down" } else { "Up" };
    vec![key; from.abs_diff(to)]
}

#[test]
fn tui_switches_undoes_quits_and_survives_signals_and_hot_unplug() {
    let name = "tui_switches_undoes_quits_and_survives_signals_and_hot_unplug";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let orig = lo.active_scheduler();
    let fio = Fio::start(&dev);
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("journal");
    let bin = public_binary(tmp.path());
    let pidfile = tmp.path().join("pid");
    let start = |t: &Tmux| {
        let _ = std::fs::remove_file(&pidfile);
        t.line(&format!(
            "sh -c 'echo $$ > {}; exec env BLKTUNE_JOURNAL_DIR={} {} --device {dev} --interval 250ms'",
            pidfile.display(),
            journal.display(),
            bin.display()
        ));
        let s = t.wait("the TUI with the loop device", |s| {
            s.contains("every 250ms") && s.contains(&format!("▶{dev} ")) && s.contains("r_await")
        });
        assert!(t.alternate_on());
        (pid_of(&pidfile), s)
    };
    let t = shell();

    // Switch to kyber with three keys: s, arrows, Enter, once fio's load shows.
    let (_pid, _) = start(&t);
    t.wait("fio's reads in the row", |s| {
        row(s, &dev).is_some_and(|r| r.split_whitespace().nth(2).is_some_and(|v| v != "0"))
    });
    // Some "before" for the comparison: samples (8 x 250 ms), not seconds.
    t.wait_redraws("some \"before\"", 8);
    pick_kyber(&t, &lo);
    t.wait("kyber in the row and a marker on the time axis", |s| {
        row(s, &dev).is_some_and(|r| r.contains("kyber"))
            && s.lines().any(|l| l.contains('▲') && l.contains("kyber"))
    });
    let s = t.wait("2 s of \"after\" in the before/after panel", |s| {
        change_age(s).is_some_and(|a| a >= 2)
    });
    println!("80x24 after the switch:\n{s}");

    // Undo puts the original back.
    t.keys(&["u"]);
    wait_sysfs(&lo, &orig, || t.capture());
    t.wait("the undo status", |s| s.contains(&format!("undo: {dev}")));

    // Switch again and quit: the summary names the change and the revert command.
    pick_kyber(&t, &lo);
    t.wait("the status of the switch", |s| {
        s.contains(&format!("{dev}: {orig}→kyber"))
    });
    t.keys(&["q"]);
    let s = wait_restored(&t, "after q");
    assert!(s.contains(&format!("  {dev}: {orig}→kyber")), "{s}");
    // The command names the private journal (sudo would drop the variable).
    let cmd = format!(
        "sudo BLKTUNE_JOURNAL_DIR={} blktune revert {dev}",
        journal.display()
    );
    // Whole, however the terminal wrapped it (a long journal path or name).
    let joined = t.capture_joined();
    assert!(joined.contains(&format!("to revert: {cmd}")), "{joined}");
    assert_eq!(lo.active_scheduler(), "kyber", "quitting keeps the change");
    // Run it as printed (we are root already; the binary is not on PATH),
    // with nothing of the test's environment.
    let printed = cmd
        .strip_prefix("sudo ")
        .unwrap()
        .replace(" blktune ", &format!(" {} ", bin.display()));
    let o = Command::new("env")
        .args(["-i", "sh", "-c", &printed])
        .output()
        .unwrap();
    assert!(o.status.success(), "{printed}: {}", stderr(&o));
    assert_eq!(lo.active_scheduler(), orig);
    assert!(
        Journal::new(&journal).load(&dev).unwrap().is_none(),
        "the printed command used the session's journal"
    );

    // --revert-on-exit puts the original back on quit.
    t.line("clear");
    t.line(&format!(
        "BLKTUNE_JOURNAL_DIR={} {} --device {dev} --interval 250ms --revert-on-exit",
        journal.display(),
        bin.display()
    ));
    t.wait("the TUI", |s| s.contains(&format!("▶{dev} ")));
    pick_kyber(&t, &lo);
    t.wait("the status of the switch", |s| {
        s.contains(&format!("{dev}: {orig}→kyber"))
    });
    t.keys(&["q"]);
    let s = wait_restored(&t, "after q with --revert-on-exit");
    assert!(
        s.contains(&format!("blktune: reverted {dev}: kyber→{orig}")),
        "{s}"
    );
    assert_eq!(lo.active_scheduler(), orig);
    assert!(
        Journal::new(&journal).load(&dev).unwrap().is_none(),
        "journal entry cleared"
    );

    // SIGTERM and SIGHUP restore the terminal.
    for sig in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGHUP,
    ] {
        t.line("clear");
        let (pid, _) = start(&t);
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).unwrap();
        let s = wait_restored(&t, &format!("after {sig}"));
        assert!(s.contains("no settings were changed"), "{sig}: {s}");
        t.line("echo rc=$?");
        t.wait("the exit code", |s| s.contains("rc=0"));
    }

    // A dropped session (the pty closes, SIGHUP) with --revert-on-exit
    // still puts the original back.
    let _ = std::fs::remove_file(&pidfile);
    let cmd = format!(
        "sh -c 'echo $$ > {}; exec env BLKTUNE_JOURNAL_DIR={} {} --device {dev} --interval 250ms --revert-on-exit'",
        pidfile.display(),
        journal.display(),
        bin.display()
    );
    assert!(
        t.tmux(&["new-window", "-d", "-t", "e2e", "-n", "hup", &cmd])
            .status()
            .unwrap()
            .success()
    );
    let pid = pid_of(&pidfile);
    let pane = |t: &Tmux| t.capture_of("e2e:hup");
    assert!(
        wait_until(TIMEOUT, || pane(&t).contains(&format!("▶{dev} "))),
        "TUI in the second window:\n{}",
        pane(&t)
    );
    let mut keys = vec!["send-keys", "-t", "e2e:hup", "s"];
    keys.extend(moves(&lo, "kyber"));
    keys.push("Enter");
    assert!(t.tmux(&keys).status().unwrap().success());
    wait_sysfs(&lo, "kyber", || pane(&t));
    assert!(
        wait_until(TIMEOUT, || pane(&t)
            .contains(&format!("{dev}: {orig}→kyber"))),
        "status of the switch:\n{}",
        pane(&t)
    );
    assert!(
        t.tmux(&["kill-window", "-t", "e2e:hup"])
            .status()
            .unwrap()
            .success()
    );
    assert!(
        wait_until(TIMEOUT, || !alive(pid)),
        "blktune still running after its pty closed"
    );
    assert_eq!(lo.active_scheduler(), orig, "--revert-on-exit after SIGHUP");

    // Detaching the loop device while the TUI shows it does not crash it.
    t.line("clear");
    let (pid, _) = start(&t);
    drop(fio);
    let loopdev = lo.dev;
    loopdev.remove().unwrap();
    // Another process may attach the freed loopN at once (seen under load):
    // then the same name is another device, and the TUI says so.
    t.wait("the vanished device in the status line", |s| {
        ["vanished", "was replaced by another device"]
            .iter()
            .any(|how| s.contains(&format!("'{dev}' {how}")))
    });
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok(),
        "still running"
    );
    t.keys(&["q"]);
    wait_restored(&t, "after q with the device gone");
    t.line("echo rc=$?");
    t.wait("the exit code", |s| s.contains("rc=0"));
}

#[test]
fn tui_as_nobody_is_read_only_and_changes_nothing() {
    let name = "tui_as_nobody_is_read_only_and_changes_nothing";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "setpriv") {
        return;
    }
    let lo = TestLoop::new(16);
    let dev = lo.name().to_string();
    let before = (lo.queue("scheduler"), lo.queue("nr_requests"));
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("journal");
    let bin = public_binary(tmp.path());
    let t = shell();
    t.line(&format!(
        "setpriv --reuid=nobody --regid=nogroup --clear-groups env BLKTUNE_JOURNAL_DIR={} {} --device {dev}",
        journal.display(),
        bin.display()
    ));
    t.wait("the read-only banner", |s| {
        s.contains("READ-ONLY: not root; changes are disabled")
    });
    t.keys(&["s"]);
    t.wait("the explanation", |s| {
        s.contains("read-only (not root)") && s.contains("nothing was changed")
    });
    t.keys(&["Enter", "Down", "Enter", "n", "u"]);
    t.keys(&["q"]);
    let s = wait_restored(&t, "after q");
    assert!(s.contains("no settings were changed"), "{s}");
    assert_eq!((lo.queue("scheduler"), lo.queue("nr_requests")), before);
    assert!(!journal.exists() || std::fs::read_dir(&journal).unwrap().next().is_none());
}

/// The queue settings of `dev` and of every device that is not a loop device
/// (other tests' loop devices change theirs), read only, to check none changed.
fn queue_settings(dev: &str) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("loop") && name != dev {
            continue;
        }
        for attr in ["scheduler", "nr_requests", "read_ahead_kb"] {
            if let Ok(s) = std::fs::read_to_string(e.path().join("queue").join(attr)) {
                v.push((format!("{name}/{attr}"), s.trim().to_string()));
            }
        }
    }
    v.sort();
    v
}

/// The safety rule end to end: detaching the selected loop device while its
/// picker is open closes the picker, selects nothing, and the keys that
/// follow change no device (in a review they changed the VM's disk).
#[test]
fn tui_a_detached_device_leaves_nothing_selected_and_keys_change_nothing() {
    let name = "tui_a_detached_device_leaves_nothing_selected_and_keys_change_nothing";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let lo = TestLoop::new(16);
    let dev = lo.name().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("journal");
    let bin = public_binary(tmp.path());
    let t = shell();
    t.line(&format!(
        "BLKTUNE_JOURNAL_DIR={} {} --device {dev} --interval 250ms",
        journal.display(),
        bin.display()
    ));
    t.wait("the TUI on the loop device", |s| {
        s.contains(&format!("▶{dev} "))
    });
    t.keys(&["s"]);
    t.wait("the picker", |s| s.contains(&format!("scheduler of {dev}")));
    let loopdev = lo.dev;
    loopdev.remove().unwrap();
    let diskseq = || std::fs::read_to_string(format!("/sys/block/{dev}/diskseq")).ok();
    let seq = diskseq();
    let before = queue_settings(&dev);
    // Another process may attach the freed loopN at once (losetup -f): then
    // the same name is another device, and the TUI says so.
    let s = t.wait("the vanished device in the status line", |s| {
        ["vanished", "was replaced by another device"]
            .iter()
            .any(|how| s.contains(&format!("'{dev}' {how}")))
    });
    println!("80x24 after the detach:\n{s}");
    assert!(!s.contains("scheduler of"), "the picker closed:\n{s}");
    assert!(!s.contains('▶'), "no row is selected:\n{s}");
    assert!(
        !s.contains("s sched") && s.contains("? help  q quit"),
        "the footer offers no change keys:\n{s}"
    );
    // The keys a user would press next: Enter (meant for the picker), s, n...
    // `o` in between puts another status up, so each refusal is its own.
    for k in ["Enter", "s", "n", "t", "r", "u"] {
        t.keys(&["o"]);
        t.wait("the sort status", |s| s.contains("sorted by"));
        t.keys(&[k]);
        let s = t.wait(&format!("'{k}' refused"), |s| {
            s.contains("no device selected: ↑/↓ selects one")
        });
        assert!(
            !s.contains("┌"),
            "'{k}' opened a dialog on another device:\n{s}"
        );
    }
    t.keys(&["q"]);
    wait_restored(&t, "after q");
    // The freed name is compared only while nobody attached it since (a
    // parallel test's loop device under that name changes its own settings;
    // that blktune wrote nothing is shown by its empty journal below).
    let after = queue_settings(&dev);
    let untouched = diskseq() == seq;
    let mine = |v: Vec<(String, String)>| -> Vec<(String, String)> {
        if untouched {
            return v;
        }
        let prefix = format!("{dev}/");
        v.into_iter()
            .filter(|(k, _)| !k.starts_with(&prefix))
            .collect()
    };
    assert_eq!(mine(after), mine(before), "no device changed");
    assert!(
        Journal::new(&journal).list().unwrap().is_empty(),
        "nothing was journalled"
    );
}
