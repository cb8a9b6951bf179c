//! End to end: who does the I/O and where it goes, in the real TUI in tmux.
//! As root, `dd` writes to a loop device this test creates; `i` opens the
//! processes panel, which shows the dd with that device; Esc closes it; the
//! detail pane of the loop device names its backing file. Root only (it
//! creates the device); skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::Tmux;
use common::*;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// A shell that keeps starting `dd` writes to the device, in its own
/// process group; the whole group is killed and reaped on drop.
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let pg = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::killpg(pg, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// The side panel's text (right of the charts' `│`), lines trimmed and
/// joined: a long path wrapped over several lines reads whole again.
fn side_panel(screen: &str) -> String {
    screen
        .lines()
        .filter(|l| l.contains('│'))
        .map(|l| l.rsplit('│').next().unwrap_or("").trim())
        .collect()
}

#[test]
fn a_dd_to_our_loop_device_shows_in_the_panel_and_its_file_in_the_detail() {
    let name = "a_dd_to_our_loop_device_shows_in_the_panel_and_its_file_in_the_detail";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "dd") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    // Synchronous 4 KiB writes, a new dd every 16 MiB so that one is
    // always running however long the TUI takes to start.
    let script = format!(
        "while :; do dd if=/dev/zero of=/dev/{dev} bs=4k count=4096 oflag=dsync status=none; done"
    );
    let _writer = Writer(
        Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh"),
    );
    let t = Tmux::start(
        &format!(
            "{} --read-only --device {dev} --interval 250ms",
            tmux::blktune_bin()
        ),
        200,
        50,
    );
    t.wait("the device selected", |s| {
        s.lines().any(|l| l.starts_with(&format!("▶{dev} ")))
    });
    // Where the I/O goes: the loop device's backing file, in the detail pane.
    let file = lo.dev.file().display().to_string();
    let s = t.wait("the backing file in the detail pane", |s| {
        let side = side_panel(s);
        side.contains("where the I/O goes") && side.contains(&format!("file{file}"))
    });
    println!("200x50, the detail pane:\n{s}");
    t.keys(&["i"]);
    let row = format!("dd if=/dev/zero of=/dev/{dev} ");
    let s = t.wait("the dd in the processes panel with its device", |s| {
        s.contains("processes doing I/O now")
            && s.lines().any(|l| {
                l.contains(&row) && l.contains(&format!(" {dev} ")) && l.contains(" root ")
            })
    });
    println!("200x50, the processes panel:\n{s}");
    // As root nothing is hidden.
    assert!(!s.contains("only your own processes"), "{s}");
    // Esc closes it, as does i; the detail pane is back.
    t.keys(&["Escape"]);
    t.wait("the panel closed by Esc", |s| {
        !s.contains("processes doing I/O now") && side_panel(s).contains("where the I/O goes")
    });
    t.keys(&["i"]);
    t.wait("the panel open again", |s| {
        s.contains("processes doing I/O now")
    });
    t.keys(&["i"]);
    t.wait("the panel closed by i", |s| {
        !s.contains("processes doing I/O now")
    });
    t.keys(&["q"]);
    let s = t.wait("the exit after q", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{s}");
}
