//! Files of the trees and roots a user names (`--sysfs-root`, `--proc-root`,
//! `--config-root`) are hostile: a FIFO in a file's place never hangs a
//! command, and a file that never ends is not read to its end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::fake::FakeDisk;
use nix::sys::stat::Mode;
use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common;

use common::fake_host::FakeHost;

fn host() -> FakeHost {
    FakeHost::new(&[FakeDisk::new("sda").dev(8, 0)])
}

fn fifo(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    nix::unistd::mkfifo(path, Mode::from_bits_truncate(0o644)).unwrap();
}

/// Run `command`, killed and failed if it takes over 30 s.
fn run_within(mut command: Command) -> Output {
    let what = format!("{command:?}");
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::output_within(child, Duration::from_secs(30), &what)
}

#[test]
fn fifos_under_the_config_root_are_unreadable_not_a_hang() {
    let h = host();
    let root = h.path("config");
    fifo(&root.join("etc/udev/rules.d/99-x.rules"));
    fs::write(root.join("etc/udev/rules.d/60-ok.rules"), "# nothing\n").unwrap();
    let config = root.to_str().unwrap();
    // A rules file on the udev search path.
    let o = run_within(h.command(&["export", "--check", "--config-root", config]));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{out}");
    // The FIFO reads as an empty file.
    assert!(out.contains("2 rules files;"), "{out}");

    // tuned's active profile, for a check and for an export.
    fifo(&root.join("etc/tuned/active_profile"));
    let o = run_within(h.command(&["export", "--check", "--config-root", config]));
    assert!(matches!(o.status.code(), Some(0 | 3)));
    let o = run_within(h.command(&["export", "sda", "--config-root", config]));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // A profile's tuned.conf.
    fs::remove_file(root.join("etc/tuned/active_profile")).unwrap();
    fs::write(root.join("etc/tuned/active_profile"), "odd\n").unwrap();
    fifo(&root.join("etc/tuned/odd/tuned.conf"));
    let o = run_within(h.command(&["export", "--check", "--config-root", config]));
    assert!(matches!(o.status.code(), Some(0 | 3)));
}

#[test]
fn a_proc_file_that_never_ends_is_refused_in_bounded_time() {
    let h = host();
    let stats = h.path("proc/diskstats");
    fs::remove_file(&stats).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &stats).unwrap();
    let mut watch = std::process::Command::new(env!("CARGO_BIN_EXE_blktune"));
    watch
        .args(["--no-bpf", "--sysfs-root"])
        .arg(h.path("sys"))
        .arg("--proc-root")
        .arg(h.path("proc"))
        .args(["watch", "-c", "1", "sda"]);
    let o = run_within(watch);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("larger than 64 MiB"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
