//! End to end: `blktune --probe` in tmux at 80x24 on a loop device this test
//! creates. The probe's figures show next to r_await, a switch gets a
//! `pr_p99` before/after row, `P` turns it off and on, and quitting ends the
//! process (and with it the probe). Root only; skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;
use common::*;
use std::process::Command;
use std::time::{Duration, Instant};

/// A private tmux server with one 80x24 pane running a plain shell; killed on drop.
struct Tmux {
    sock: String,
}

const PROMPT: &str = "e2e$";

impl Tmux {
    fn new(tag: &str) -> Self {
        let t = Self {
            sock: format!("blktune-{tag}-{}", std::process::id()),
        };
        let shell = format!(
            "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=xterm-256color PS1='{PROMPT} ' bash --norc --noprofile"
        );
        let ok = t
            .cmd(&[
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "80",
                "-y",
                "24",
                "-s",
                "e2e",
            ])
            .arg(shell)
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        t.wait_for("the shell prompt", |s| s.contains(PROMPT));
        t
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L").arg(&self.sock).args(args);
        c
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend(keys);
        assert!(self.cmd(&args).status().unwrap().success());
    }

    fn line(&self, text: &str) {
        let ok = self
            .cmd(&["send-keys", "-t", "e2e", "-l", text])
            .status()
            .unwrap()
            .success();
        assert!(ok);
        self.keys(&["Enter"]);
    }

    fn capture(&self) -> String {
        let o = self
            .cmd(&["capture-pane", "-p", "-t", "e2e"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Poll the pane until `pred` holds; panic with the screen after 20 s.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.capture();
            if pred(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).status();
    }
}

/// The side panel's text on a line (right of the chart's `│`).
fn panel(line: &str) -> &str {
    line.rsplit('│').next().unwrap_or("").trim()
}

/// The figures of the panel row starting with `label`, parsed (`-` is None).
fn figures(screen: &str, label: &str) -> Option<Vec<Option<f64>>> {
    screen.lines().map(panel).find_map(|p| {
        let mut w = p.split_whitespace();
        (w.next() == Some(label)).then(|| w.map(|v| v.trim_end_matches('%').parse().ok()).collect())
    })
}

#[test]
fn tui_probe_shows_its_figures_and_the_p99_before_and_after_a_switch() {
    let name = "tui_probe_shows_its_figures_and_the_p99_before_and_after_a_switch";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let lo = TestLoop::new(16);
    let dev = lo.name().to_string();
    let orig = lo.active_scheduler();
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::new("probe");
    t.line(&format!(
        "BLKTUNE_JOURNAL_DIR={} {} --probe --probe-rate 20 --device {dev} --interval 250ms --revert-on-exit",
        tmp.path().join("journal").display(),
        env!("CARGO_BIN_EXE_blktune"),
    ));
    // The probe's own load, then its p50/p99/max next to r_await.
    let s = t.wait_for("the probe's figures", |s| {
        s.contains(&format!("▶{dev} "))
            && s.contains("counted in r/s")
            && s.contains("ms       p50   p99   max r_await")
            && figures(s, "250ms").is_some_and(|f| f.len() == 4 && f[1].is_some_and(|v| v > 0.0))
            && figures(s, "60s").is_some_and(|f| f[1].is_some_and(|v| v > 0.0))
    });
    println!("80x24 with the probe:\n{s}");
    let load = s
        .lines()
        .map(panel)
        .find(|p| p.starts_with("probe ") && p.ends_with("counted in r/s"))
        .unwrap();
    let rate: f64 = load.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!((10.0..=30.0).contains(&rate), "about 20 reads/s: {load}");
    let now = figures(&s, "250ms").unwrap();
    assert!(
        now[0].unwrap() <= now[1].unwrap() && now[1].unwrap() <= now[2].unwrap(),
        "{now:?}"
    );

    // Switch to another scheduler: the before/after table gets the probe's p99.
    std::thread::sleep(Duration::from_secs(2)); // some "before"
    t.keys(&["s"]);
    t.wait_for("the picker", |s| s.contains(&format!("scheduler of {dev}")));
    t.keys(&["Down", "Enter"]);
    let s = t.wait_for("a pr_p99 row with before and after", |s| {
        figures(s, "pr_p99").is_some_and(|f| f.len() >= 2 && f[0].is_some() && f[1].is_some())
    });
    println!("80x24 after the switch:\n{s}");
    assert!(figures(&s, "r_await").is_some(), "{s}");

    // P turns it off: its lines go and the device is closed; P brings it back.
    t.keys(&["P"]);
    let s = t.wait_for("the probe off", |s| {
        s.contains("probe off") && !s.contains("counted in r/s") && !s.contains("pr_p99")
    });
    assert!(figures(&s, "r_await").is_some(), "the rest stays: {s}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while held_open(&dev) {
        assert!(
            Instant::now() < deadline,
            "/dev/{dev} still open with the probe off"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    t.keys(&["P"]);
    t.wait_for("the probe on again", |s| {
        s.contains(&format!("probe on: 20.0 read-only 4 KiB reads/s of {dev}"))
            && figures(s, "250ms").is_some_and(|f| f[1].is_some_and(|v| v > 0.0))
    });
    assert!(held_open(&dev));

    // q: the settings go back and the process (and its probe) ends.
    t.keys(&["q"]);
    t.wait_for("the prompt back after q", |s| {
        s.contains(&format!("blktune: reverted {dev}"))
            && s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with(PROMPT))
    });
    assert_eq!(lo.active_scheduler(), orig);
    assert!(
        !held_open(&dev),
        "nothing holds /dev/{dev} open after quitting"
    );
}

/// Does any other process have `/dev/<dev>` open?
fn held_open(dev: &str) -> bool {
    let me = std::process::id().to_string();
    let path = std::path::Path::new("/dev").join(dev);
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|p| p.file_name().to_str() != Some(me.as_str()))
        .filter_map(|p| std::fs::read_dir(p.path().join("fd")).ok())
        .flat_map(|fds| fds.flatten())
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == path))
}
