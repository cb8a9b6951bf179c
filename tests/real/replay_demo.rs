//! `blktune replay --demo` plays the recording built into the binary: from
//! any directory, without root, leaving no file behind; `blktune demo`
//! without root suggests exactly that (issue 16, item 13).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::{require_root, require_tool, stderr};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

/// Run a copy of the binary in an empty directory (no `assets/` beside it),
/// with its own TMPDIR; as user nobody when `nobody`.
fn run_elsewhere(args: &[&str], nobody: bool) -> (Output, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = dir.path().join("blktune");
    common::copy_binary(&bin);
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = if nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(&bin);
        c
    } else {
        Command::new(&bin)
    };
    let o = cmd
        .args(args)
        .current_dir(dir.path())
        .env("TMPDIR", &tmp)
        .env_remove("BLKTUNE_JOURNAL_DIR")
        .output()
        .unwrap();
    let left = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    (o, left)
}

#[test]
fn replay_demo_works_from_any_directory_and_leaves_nothing_behind() {
    let (o, left) = run_elsewhere(&["replay", "--demo", "--summary"], false);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("mq-deadline→bfq"), "{text}");
    assert!(text.contains("r_await"), "{text}");
    // The built-in asset by its name, not the private copy's temp path
    // (which changed every run and was gone when the summary printed).
    assert!(
        text.starts_with("Recording assets/demo-bfq-switch.ndjson.gz, built in (format 1"),
        "{text}"
    );
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    // A file and --demo together is a usage error.
    let (o, _) = run_elsewhere(&["replay", "--demo", "x.ndjson"], false);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // Without a terminal the full-screen replay says how to get text.
    let (o, left) = run_elsewhere(&["replay", "--demo"], false);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("'blktune replay --demo --summary'"),
        "{}",
        stderr(&o)
    );
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

#[test]
fn without_root_the_demo_suggests_the_built_in_replay_which_works() {
    let name = "without_root_the_demo_suggests_the_built_in_replay_which_works";
    if !require_root(name) || !require_tool(name, "setpriv") {
        return;
    }
    let (o, _) = run_elsewhere(&["demo"], true);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("'blktune replay --demo'"), "{err}");
    assert!(!err.contains("assets/"), "{err}");
    let (o, left) = run_elsewhere(&["replay", "--demo", "--summary"], true);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("→bfq"));
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}
