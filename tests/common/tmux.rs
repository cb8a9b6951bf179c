//! A private tmux server with one pane of a fixed size: how the end-to-end
//! tests run the real binary in a real terminal and read what it drew.
//!
//! ```text
//! let t = Tmux::start("blktune --device loop7", 80, 24); // or Tmux::shell("e2e$", 80, 24)
//! t.wait("the device table", |s| s.contains("▶loop7 "));
//! t.keys(&["s", "Down", "Enter"]);
//! t.keys(&["q"]);
//! t.wait("the exit code", |s| s.contains("EXIT=0"));
//! ```
//!
//! Each server has a socket of its own (`tmux -L`), no configuration
//! (`-f /dev/null`) and a clean environment (`env -i` with PATH and TERM
//! only), so neither the user's tmux nor a parallel test leaks in. Drop
//! ends what the panes still run with SIGTERM while their terminal is still
//! there (a failed test must not leave a TUI holding a loop device), then
//! kills the server.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

// Lived here first; tests that drive nobody's TUI may import it from here.
#[allow(unused_imports)]
pub use super::public_binary;
use super::{TIMEOUT, wait_until};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The blktune binary the end-to-end tests run: this build's, or the one
/// named by `BLKTUNE_TEST_BIN` (to show that a test fails on an older build).
pub fn blktune_bin() -> String {
    std::env::var("BLKTUNE_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_blktune").into())
}

/// The session (and so the first window's target) of every server.
pub const SESSION: &str = "e2e";

/// How often `wait_for` looks at the screen: cheap, and fast when the machine is idle.
const POLL: Duration = Duration::from_millis(50);

/// One private tmux server; the pane to drive is the first window of [`SESSION`].
pub struct Tmux {
    sock: String,
}

impl Tmux {
    /// Run the `sh -c` command line `cmd` in a new `width`x`height` pane. When `cmd`
    /// ends the pane shows `EXIT=<status>` and stays, so its last screen can
    /// be read (so `cmd` must not `exit` or `exec`; the pane would close).
    pub fn start(cmd: &str, width: u16, height: u16) -> Self {
        // Tests of one binary run in parallel threads of one process.
        static SERVERS: AtomicUsize = AtomicUsize::new(0);
        let n = SERVERS.fetch_add(1, Ordering::Relaxed);
        let t = Self {
            sock: format!("blktune-test-{}-{n}", std::process::id()),
        };
        // More than one argument: tmux runs them directly, no quoting needed.
        let script = format!("{cmd}\necho EXIT=$?\nexec sleep 300");
        let ok = t
            .tmux(&["-f", "/dev/null", "new-session", "-d", "-s", SESSION])
            .args(["-x", &width.to_string(), "-y", &height.to_string(), "--"])
            .args(["env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"])
            .args(["TERM=xterm-256color", "sh", "-c", &script])
            .status()
            .expect("run tmux")
            .success();
        assert!(ok, "tmux new-session failed for: {cmd}");
        t
    }

    /// `blktune --read-only ARGS` in a `width`x`height` pane on the fake tree under
    /// `base` (its `sys` and `proc`), with a private journal in `journal`.
    pub fn on_fake_tree(base: &Path, journal: &Path, args: &str, width: u16, height: u16) -> Self {
        Self::start(
            &format!(
                "env BLKTUNE_JOURNAL_DIR='{}' '{}' --read-only --sysfs-root '{}' --proc-root '{}' {args}",
                journal.display(),
                blktune_bin(),
                base.join("sys").display(),
                base.join("proc").display(),
            ),
            width,
            height,
        )
    }

    /// An interactive bash (no rc files) whose prompt is `prompt`, once the prompt shows.
    pub fn shell(prompt: &str, width: u16, height: u16) -> Self {
        // `exec`: bash is the pane's own process, so Drop's SIGTERM (which
        // bash ignores) goes only to what bash runs.
        let t = Self::start(
            &format!("exec env PS1='{prompt} ' bash --norc --noprofile"),
            width,
            height,
        );
        t.wait("the shell prompt", |s| s.contains(prompt));
        t
    }

    /// A tmux command for this server (`tmux -L <socket> args...`), for what the helpers here lack.
    pub fn tmux(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L").arg(&self.sock).args(args);
        c
    }

    /// Send keys by tmux name (`"q"`, `"Enter"`, `"Down"`, `"C-c"`, `"-N", "80", "BSpace"`),
    /// all in one `send-keys`: the program reads them as a terminal delivers
    /// keys typed fast or over SSH, several in one read (`Escape Enter`
    /// arrives as one `ESC CR`). Between keys that must act one after the
    /// other, wait for the screen, not for a time.
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", SESSION];
        args.extend(keys);
        assert!(self.tmux(&args).status().unwrap().success(), "{keys:?}");
    }

    /// Type `text` as it is (no key names).
    pub fn literal(&self, text: &str) {
        let ok = self
            .tmux(&["send-keys", "-t", SESSION, "-l", text])
            .status()
            .unwrap()
            .success();
        assert!(ok, "typing {text:?}");
    }

    /// Type `text` and press Enter (a command line for [`Tmux::shell`]).
    pub fn line(&self, text: &str) {
        self.literal(text);
        self.keys(&["Enter"]);
    }

    /// The pane's screen as text, one line per row (trailing blanks trimmed by tmux).
    pub fn capture(&self) -> String {
        self.capture_of(SESSION)
    }

    /// The screen with the lines the terminal wrapped joined again, as a
    /// user copying a long command out of it gets it.
    pub fn capture_joined(&self) -> String {
        let o = self
            .tmux(&["capture-pane", "-p", "-J", "-t", SESSION])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The screen of the pane `target` (e.g. `"e2e:other"`, a window of [`SESSION`]).
    pub fn capture_of(&self, target: &str) -> String {
        let o = self
            .tmux(&["capture-pane", "-p", "-t", target])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Poll the screen until `pred` holds: `Ok(screen)`, or after `timeout`
    /// `Err(the last screen seen)` so that a failure can show it.
    pub fn wait_for(
        &self,
        pred: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.capture();
            if pred(&s) {
                return Ok(s);
            }
            if Instant::now() >= deadline {
                return Err(s);
            }
            std::thread::sleep(POLL);
        }
    }

    /// [`Tmux::wait_for`] with the common [`TIMEOUT`]; panics naming `what`
    /// and showing the screen.
    pub fn wait(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.wait_for(pred, TIMEOUT).unwrap_or_else(|s| {
            panic!("timed out after {TIMEOUT:?} waiting for {what}; screen:\n{s}")
        })
    }

    /// Wait until the screen has been redrawn with new content `count` times:
    /// `count` samples of a live TUI under load (its figures move every sample).
    /// For "some history first", counted in samples rather than seconds, so
    /// a slow machine waits longer instead of getting less.
    pub fn wait_redraws(&self, what: &str, count: usize) -> String {
        let mut last = self.capture();
        for i in 0..count {
            last = self.wait(&format!("{what} (redraw {} of {count})", i + 1), |s| {
                s != last
            });
        }
        last
    }

    /// Is the pane on the alternate screen (a full-screen program is running)?
    pub fn alternate_on(&self) -> bool {
        let o = self
            .tmux(&["display", "-p", "-t", SESSION, "#{alternate_on}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim() == "1"
    }

    /// The processes the pane's own process started (its direct children).
    pub fn children(&self) -> Vec<i32> {
        self.pane_pids().into_iter().flat_map(children).collect()
    }

    /// Kill the server now (the panes' terminals vanish); Drop does it anyway.
    pub fn kill_server(&self) {
        let _ = self.tmux(&["kill-server"]).stderr(Stdio::null()).status();
    }

    /// The process of every pane of this server (none once it is gone).
    fn pane_pids(&self) -> Vec<i32> {
        self.tmux(&["list-panes", "-a", "-F", "#{pane_pid}"])
            .stderr(Stdio::null())
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // After a failed test a program may still run in a pane: end it
        // while its terminal is alive so that its own guards restore what
        // it changed, and wait for that. The leaves of the process trees are
        // the programs; the shells above them go with the server.
        let leaves: Vec<i32> = self
            .pane_pids()
            .into_iter()
            .flat_map(|p| {
                descendants(p)
                    .into_iter()
                    .filter(|&d| children(d).is_empty())
            })
            .collect();
        for &p in &leaves {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let gone = wait_until(Duration::from_secs(20), || {
            leaves.iter().all(|&p| !alive(p))
        });
        if !gone {
            eprintln!("tmux harness: still running after SIGTERM: {leaves:?}");
        }
        self.kill_server();
    }
}

/// Is process `pid` still there (a zombie counts until its parent reaps it)?
pub fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The direct children of `pid`, from every thread's `children` list
/// (proc(5); needs CONFIG_PROC_CHILDREN, which Debian kernels have).
fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|c| c.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// Every process below `pid` (not `pid` itself).
fn descendants(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut todo = children(pid);
    while let Some(p) = todo.pop() {
        todo.extend(children(p));
        out.push(p);
    }
    out
}

/// A finished shoot-out's dialog, drawn whole: its restore line and its
/// key line, and nothing left of the running dialog (a capture taken while
/// the terminal is still being written can hold the new rows above the
/// old ones: seen in a fresh CI run, the restore line over `Esc cancels`).
pub fn shoot_out_done(screen: &str) -> bool {
    screen.contains("original settings restored")
        && (screen.contains("nothing to apply") || screen.contains("a apply the winner"))
        && !screen.contains("Esc cancels")
}
