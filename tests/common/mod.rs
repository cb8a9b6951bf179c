//! Shared helpers of the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use blktune::scratch::ScratchLoop;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Are we root? If not: skip (return false) with a message, or fail under CI=true.
pub fn require_root(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: needs root, and under CI=true a skipped test is a failure");
    }
    eprintln!("SKIPPED {test}: needs root (loop devices, sysfs writes)");
    false
}

/// Is a command on PATH? Missing under CI=true is a failure.
pub fn require_tool(test: &str, tool: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: needs '{tool}' (install it in .ci/run)");
    }
    eprintln!("SKIPPED {test}: '{tool}' is not installed");
    false
}

/// A scratch loop device of `mib` MiB over a file in a temp dir, removed on drop.
pub struct TestLoop {
    pub dev: ScratchLoop,
    _dir: tempfile::TempDir,
}

impl TestLoop {
    pub fn new(mib: u64) -> Self {
        // Not /tmp on tmpfs: O_DIRECT needs a real filesystem under the file.
        let base =
            std::env::var_os("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
        let dir = tempfile::tempdir_in(base).expect("temp dir");
        let dev = ScratchLoop::create(dir.path(), mib << 20).expect("losetup");
        Self { dev, _dir: dir }
    }

    pub fn name(&self) -> &str {
        self.dev.name()
    }

    pub fn queue(&self, attr: &str) -> String {
        std::fs::read_to_string(format!("/sys/block/{}/queue/{attr}", self.name()))
            .unwrap()
            .trim()
            .to_string()
    }

    pub fn active_scheduler(&self) -> String {
        let line = self.queue("scheduler");
        line.split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
            .unwrap_or(&line)
            .to_string()
    }
}

/// Run the blktune binary with a private journal dir.
pub fn blktune(args: &[&str], journal: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(args)
        .env("BLKTUNE_JOURNAL_DIR", journal)
        .output()
        .expect("run blktune")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Is some loop device attached to a file inside `dir` (per `losetup -a`)?
pub fn loop_over(dir: &std::path::Path) -> bool {
    let o = Command::new("losetup")
        .arg("-a")
        .output()
        .expect("losetup -a");
    String::from_utf8_lossy(&o.stdout).contains(&dir.display().to_string())
}
