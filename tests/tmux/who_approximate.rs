//! Where the kernel cannot say who does the I/O, the `i` panel falls back to
//! `/proc` and says it is approximate: the real TUI at 80x24 on a loop device
//! this test creates, with `--no-bpf` as root, and without root (user
//! nobody). The worker decides (no hand-fed answer): it tries the kernel,
//! is refused, and sends the `/proc` view, which names a `dd` writing to the
//! device. Root only (it creates the device); skip otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::Tmux;
use common::*;

/// Open the panel on `dev` in the TUI `t` runs (80x24) and wait for the
/// `/proc` view, called approximate on its top border, in which `shows`
/// holds; never the kernel's view. Then quit. `who` names the case.
fn the_panel_is_approximate(t: &Tmux, dev: &str, who: &str, shows: impl Fn(&str) -> bool) {
    t.wait("the device selected", |s| {
        s.lines().any(|l| l.starts_with(&format!("▶{dev} ")))
    });
    t.keys(&["i"]);
    let s = t.wait("the /proc view, called approximate", |s| {
        s.contains("approximate") && s.contains("COMMAND") && shows(s)
    });
    println!("80x24, {who}:\n{s}");
    let title = s
        .lines()
        .find(|l| l.contains("approximate"))
        .unwrap_or_default();
    assert!(
        title.contains("processes") && title.contains('┌'),
        "the panel's title calls it approximate: {s}"
    );
    assert!(
        !s.contains("from the kernel") && !s.contains("who does the I/O"),
        "no kernel view: {s}"
    );
    t.keys(&["q"]);
    let s = t.wait("the exit after q", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{s}");
}

#[test]
fn with_no_bpf_the_panel_is_the_approximate_proc_view() {
    let name = "with_no_bpf_the_panel_is_the_approximate_proc_view";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "dd") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let _writer = dd_to(&dev);
    let t = Tmux::start(
        &format!(
            "{} --read-only --no-bpf --device {dev} --interval 250ms",
            tmux::blktune_bin()
        ),
        80,
        24,
    );
    // The dd's row, from /proc/PID/io, on our device (guessed from its open
    // files): the worker's sample, not a placeholder.
    the_panel_is_approximate(&t, &dev, "root, --no-bpf", |s| {
        s.lines()
            .any(|l| l.contains(&format!(" {dev} ")) && l.contains(" dd if=/dev/zero"))
    });
}

/// Not root (user nobody, no `--no-bpf`): the kernel refuses the program,
/// and the panel is the `/proc` view of nobody's own processes, saying both.
#[test]
fn without_root_the_panel_is_the_approximate_proc_view() {
    let name = "without_root_the_panel_is_the_approximate_proc_view";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "setpriv") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let dir = tempfile::tempdir().unwrap();
    let bin = tmux::public_binary(dir.path());
    let t = Tmux::start(
        &format!(
            "setpriv --reuid=nobody --regid=nogroup --clear-groups {} --read-only \
             --device {dev} --interval 250ms",
            bin.display()
        ),
        80,
        24,
    );
    the_panel_is_approximate(&t, &dev, "nobody", |s| {
        s.contains("not root: only your own processes are shown")
    });
}
