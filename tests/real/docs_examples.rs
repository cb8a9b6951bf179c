//! The docs' console examples that change settings (`<!-- run: loop -->`
//! before the block), run as root on a 64 MiB loop device of this test's
//! own, which the docs call `loop0`, with a journal of its own standing for
//! `/run/blktune`. A fake tree cannot show what the kernel does in a
//! scheduler switch (nr_requests and the tunables reset), so these run on
//! the real thing. The machinery and the rules: `tests/common/docs.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::docs::Shell;
use common::{TestLoop, require_root};
use std::fs;
use std::os::unix::fs::PermissionsExt;

/// A loop device at a never-used loop device's settings (`none`, nr_requests
/// 128) and the kernel's default read-ahead, a private journal and a shell
/// whose `blktune` is the binary under test; `loop0` in the docs stands for
/// the device.
fn loop_machine() -> (Shell, (TestLoop, tempfile::TempDir)) {
    let device = TestLoop::new(64);
    // read_ahead_kb is computed at attach from what the backing file's
    // filesystem says (2560 or 4096 here, from one run to the next): the
    // examples start from the kernel's default, VM_READAHEAD_PAGES (128 KiB).
    device.set_queue("read_ahead_kb", "128");
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal");
    for sub in ["journal", "bin", "work"] {
        fs::create_dir(dir.path().join(sub)).unwrap();
    }
    fs::set_permissions(&journal, fs::Permissions::from_mode(0o700)).unwrap();
    let journal = journal.display().to_string();
    let name = device.name().to_string();
    let shell = Shell {
        bin: dir.path().join("bin"),
        work: dir.path().join("work"),
        env: vec![("BLKTUNE_JOURNAL_DIR".into(), journal.clone())],
        to_here: vec![
            ("loop0".into(), name.clone()),
            ("/run/blktune".into(), journal.clone()),
        ],
        to_docs: vec![
            (
                format!("BLKTUNE_JOURNAL_DIR={journal} "),
                String::new(),
                false,
            ),
            (journal, "/run/blktune".into(), false),
            (name, "loop0".into(), true),
        ],
        only_device: Some("loop0".into()),
    };
    shell.write_wrapper(&format!(
        "exec '{}' \"$@\"\n",
        env!("CARGO_BIN_EXE_blktune")
    ));
    (shell, (device, dir))
}

/// Every example that changes settings prints what the docs show.
#[test]
fn every_loop_example_prints_what_the_docs_show() {
    if !require_root("every_loop_example_prints_what_the_docs_show") {
        return;
    }
    let checked = common::docs::check_console_blocks("loop", loop_machine);
    assert!(
        checked > 0,
        "no console example marked to run on a loop device"
    );
}
