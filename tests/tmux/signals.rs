//! Every catchable signal that would end the TUI ends it as `q` does: the
//! terminal back in cooked mode (`stty` in the pane after it), the cursor
//! shown, the alternate screen left, and `--revert-on-exit` honoured on the
//! test's own loop device. SIGPIPE, which Rust programs ignore, ends
//! nothing: the TUI goes on, and `q` then reverts. Root only (the loop
//! device); skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::{Tmux, alive, blktune_bin};
use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;

const PROMPT: &str = "sig$";

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

/// Keys to move the picker's cursor from the active scheduler to `to`.
fn moves(lo: &TestLoop, to: &str) -> Vec<&'static str> {
    let names: Vec<String> = lo
        .queue("scheduler")
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

/// The pane's terminal modes that raw mode turns off, as `stty -a` prints
/// them (`isig icanon echo` when cooked).
fn tty_modes(tmux: &Tmux, mark: &str) -> String {
    tmux.line(&format!(
        "echo {mark}=$(stty -a | tr -s ' ;' '\\n\\n' | grep -xE -- '-?(isig|icanon|echo)' | tr '\\n' ' ')"
    ));
    let s = tmux.wait(&format!("stty's modes ({mark})"), |s| {
        s.lines().any(|l| l.starts_with(&format!("{mark}=")))
    });
    s.lines()
        .find_map(|l| l.strip_prefix(&format!("{mark}=")))
        .unwrap()
        .trim()
        .to_string()
}

/// Is the pane's cursor shown?
fn cursor_shown(t: &Tmux) -> bool {
    let o = t
        .tmux(&[
            "display",
            "-p",
            "-t",
            common::tmux::SESSION,
            "#{cursor_flag}",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim() == "1"
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

#[test]
fn every_terminating_signal_restores_the_terminal_and_reverts_on_exit() {
    let name = "every_terminating_signal_restores_the_terminal_and_reverts_on_exit";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let before = lo.settings();
    let orig = lo.active_scheduler();
    assert_ne!(orig, "kyber");
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("journal");
    let bin = blktune_bin();
    let pidfile = tmp.path().join("pid");
    let t = Tmux::shell(PROMPT, 80, 24);
    assert_eq!(tty_modes(&t, "BEFORE"), "isig icanon echo");
    for sig in [
        Signal::SIGQUIT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGUSR1,
        Signal::SIGPIPE,
    ] {
        t.line("clear");
        let _ = std::fs::remove_file(&pidfile);
        t.line(&format!(
            "sh -c 'echo $$ > {}; exec env BLKTUNE_JOURNAL_DIR={} {} --device {dev} --interval 250ms --revert-on-exit'",
            pidfile.display(),
            journal.display(),
            bin
        ));
        t.wait(&format!("{sig}: the TUI"), |s| {
            s.contains("every 250ms") && s.contains(&format!("▶{dev} "))
        });
        let pid = pid_of(&pidfile);
        // A change for --revert-on-exit to put back.
        t.keys(&["s"]);
        t.wait(&format!("{sig}: the picker"), |s| {
            s.contains(&format!("scheduler of {dev}"))
        });
        t.keys(&moves(&lo, "kyber"));
        t.keys(&["Enter"]);
        t.wait(&format!("{sig}: the switch done"), |s| {
            s.contains(&format!("{dev}: {orig}→kyber"))
        });
        assert_eq!(lo.active_scheduler(), "kyber", "{sig}");

        kill(Pid::from_raw(pid), sig).unwrap();
        if sig == Signal::SIGPIPE {
            // Ignored: the screen goes on being drawn, nothing is put back.
            t.wait_redraws("the TUI after SIGPIPE", 2);
            assert!(alive(pid) && t.alternate_on(), "SIGPIPE ended the TUI");
            assert_eq!(lo.active_scheduler(), "kyber");
            t.keys(&["q"]);
        }
        let s = wait_restored(&t, &format!("after {sig}"));
        assert!(
            s.contains(&format!("blktune: reverted {dev}: kyber→{orig}")),
            "{sig}: {s}"
        );
        assert_eq!(lo.settings(), before, "{sig}: --revert-on-exit");
        t.line("echo rc=$?");
        t.wait(&format!("{sig}: the exit code"), |s| s.contains("rc=0"));
        assert_eq!(
            tty_modes(&t, &format!("AFTER_{}", sig.as_str())),
            "isig icanon echo",
            "{sig}: the terminal left raw"
        );
        assert!(cursor_shown(&t), "{sig}: the cursor left hidden");
        assert!(!alive(pid), "{sig}: blktune still running");
    }
}
