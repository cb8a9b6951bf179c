//! End to end: the `e` export dialog and the `b` shoot-out of the real binary
//! in tmux (80x24) on a loop device this test creates. Root only; skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// A private tmux server with one 80x24 pane running a plain shell.
struct Tmux {
    sock: String,
}

const PROMPT: &str = "dlg$";

impl Tmux {
    fn new(tag: &str) -> Self {
        let t = Self {
            sock: format!("blktune-dlg-{tag}-{}", std::process::id()),
        };
        let ok = t
            .cmd(&["-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24", "-s", "e2e"])
            .arg(format!(
                "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=xterm-256color PS1='{PROMPT} ' bash --norc --noprofile"
            ))
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

    fn literal(&self, text: &str) {
        assert!(
            self.cmd(&["send-keys", "-t", "e2e", "-l", text])
                .status()
                .unwrap()
                .success()
        );
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

    /// Start the TUI on `dev` with a private journal.
    fn start_tui(&self, dev: &str, journal: &std::path::Path) {
        self.literal(&format!(
            "env BLKTUNE_JOURNAL_DIR={} {} --device {dev} --interval 250ms",
            journal.display(),
            env!("CARGO_BIN_EXE_blktune")
        ));
        self.keys(&["Enter"]);
        self.wait_for("the TUI with the loop device", |s| {
            s.contains("every 250ms") && s.contains(&format!("▶{dev} "))
        });
    }

    /// Quit the TUI and wait for the shell.
    fn quit(&self) {
        self.keys(&["q"]);
        self.wait_for("the prompt back", |s| {
            s.contains("blktune: ") && s.trim_end().ends_with(PROMPT)
        });
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).status();
    }
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
    let lo = TestLoop::new(32);
    let dev = lo.name().to_string();
    let before = lo.settings();
    let tmp = tempfile::tempdir().unwrap();
    let rules: PathBuf = tmp.path().join("61-blktune-e2e.rules");
    let t = Tmux::new("export");
    t.start_tui(&dev, &tmp.path().join("journal"));

    t.keys(&["e"]);
    t.wait_for("the export dialog", |s| s.contains("export a udev rule"));
    // Through every strategy back to kernel (a loop device has no id or model).
    for want in ["id", "model", "class", "kernel"] {
        t.keys(&["m"]);
        t.wait_for(&format!("match {want}"), |s| {
            s.contains(&format!("match    {want} "))
        });
    }
    t.wait_for("the kernel rule in the preview", |s| {
        s.contains(&format!("KERNEL==\"{dev}\""))
    });
    t.keys(&["p"]);
    t.keys(&["-N", "80", "BSpace"]);
    t.literal(&rules.to_string_lossy());
    t.keys(&["Enter"]);
    t.keys(&["Enter"]);
    let s = t.wait_for("the write", |s| s.contains("wrote "));
    // The full apply command is in the status line (clipped at 80 columns) and in the header.
    assert!(s.contains("apply: sudo udevadm control"), "{s}");
    let text = std::fs::read_to_string(&rules).unwrap();
    assert!(text.contains("ATTR{queue/scheduler}"), "{text}");
    assert!(text.contains(&format!("KERNEL==\"{dev}\"")), "{text}");

    // Again: the file exists, so the dialog asks; n keeps it, y replaces it.
    std::fs::write(&rules, "old\n").unwrap();
    t.keys(&["e"]);
    t.wait_for("the export dialog", |s| s.contains("export a udev rule"));
    t.keys(&["p"]);
    t.keys(&["-N", "80", "BSpace"]);
    t.literal(&rules.to_string_lossy());
    t.keys(&["Enter", "Enter"]);
    t.wait_for("the overwrite question", |s| s.contains("y overwrite"));
    t.keys(&["n"]);
    t.wait_for("not overwritten", |s| s.contains("not overwritten"));
    assert_eq!(std::fs::read_to_string(&rules).unwrap(), "old\n");
    t.keys(&["Enter"]);
    t.wait_for("the overwrite question", |s| s.contains("y overwrite"));
    t.keys(&["y"]);
    t.wait_for("the write", |s| s.contains("wrote "));
    assert!(
        std::fs::read_to_string(&rules)
            .unwrap()
            .contains("ATTR{queue/scheduler}")
    );
    t.quit();
    assert_eq!(lo.settings(), before, "exporting changes no device");
}

#[test]
fn shoot_out_shows_progress_and_esc_restores_the_originals() {
    let name = "shoot_out_shows_progress_and_esc_restores_the_originals";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let lo = TestLoop::new(32);
    let dev = lo.name().to_string();
    let file = lo.dev.file().to_path_buf();
    let before = lo.settings();
    let orig = lo.active_scheduler();
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::new("bench");
    t.start_tui(&dev, &tmp.path().join("journal"));

    t.keys(&["b"]);
    t.wait_for("the shoot-out setup", |s| {
        s.contains(&format!("scheduler shoot-out on {dev}")) && s.contains("passive")
    });
    t.keys(&["Enter"]);
    t.wait_for("the progress bar", |s| {
        s.contains("round 1/1") && s.contains("left") && s.contains('█')
    });
    // Wait for a switch away from the original, so Esc has something to restore.
    let deadline = Instant::now() + Duration::from_secs(20);
    while lo.active_scheduler() == orig {
        assert!(
            Instant::now() < deadline,
            "no switch seen; screen:\n{}",
            t.capture()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    t.keys(&["Escape"]);
    let s = t.wait_for("the cancel", |s| {
        s.contains("cancelled; original settings restored")
    });
    assert!(!s.contains("scheduler shoot-out on"), "dialog closed: {s}");
    assert_eq!(lo.settings(), before, "settings back to the originals");
    t.quit();
    assert_eq!(lo.settings(), before);
    drop(lo);
    assert!(!attached(&file), "our loop device is gone from losetup -a");
}
