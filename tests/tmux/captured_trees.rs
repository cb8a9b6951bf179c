//! The real binary, read-only, on every captured tree (tests/fixtures,
//! NOTICE.md there) in tmux: it starts, shows the devices by their names
//! (a stack's detail by its dm name, selected as `/dev/mapper/NAME`), and
//! quits with exit 0; on a tree without `/proc/diskstats` it says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::Tmux;
use std::path::Path;

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[test]
fn the_read_only_tui_runs_on_every_captured_tree() {
    if !common::require_tool("the_read_only_tui_runs_on_every_captured_tree", "tmux") {
        return;
    }
    let f = fixtures();
    for (tree, device, title, rows) in [
        (
            f.join("vm-6.18"),
            "/dev/vda",
            "─ vda  virt 256G",
            &["loop1", "vda"][..],
        ),
        (
            common::fixture_tree(&f.join("captured/node-exporter")),
            "/dev/mapper/vg0-root",
            "─ dm-7 vg0-root  lvm 20G  no scheduler",
            &["dm-5", "dm-6", "sda"],
        ),
        (
            common::fixture_tree(&f.join("captured/procfs")),
            "/dev/mapper/vg0--lv_root",
            "─ dm-0 vg0--lv_root  lvm -  no scheduler",
            &["dm-1", "md10", "sda"],
        ),
    ] {
        let journal = tempfile::tempdir().unwrap();
        let args = format!("--interval 250ms --device {device}");
        let t = Tmux::on_fake_tree(&tree, journal.path(), &args, 120, 40);
        let s = t.wait(title, |s| s.contains(title));
        for r in rows {
            assert!(s.contains(&format!(" {r} ")), "{r}:\n{s}");
        }
        t.keys(&["q"]);
        t.wait("exit 0", |s| s.contains("EXIT=0"));
    }
}

#[test]
fn the_tui_says_what_a_tree_without_diskstats_lacks() {
    if !common::require_tool("the_tui_says_what_a_tree_without_diskstats_lacks", "tmux") {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        common::fixture_tree(&fixtures().join("captured/procfs")).join("sys"),
        base.path().join("sys"),
    )
    .unwrap();
    std::fs::create_dir(base.path().join("proc")).unwrap();
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::on_fake_tree(base.path(), journal.path(), "--interval 250ms", 120, 40);
    t.wait("the note on the status line", |s| {
        s.contains("diskstats: counters from each device's stat file") && s.contains(" sda ")
    });
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}
