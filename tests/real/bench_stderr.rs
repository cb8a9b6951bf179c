//! `blktune bench`'s stderr lines carry user and file text (paths, device
//! names) escaped: a control character in `--export-output` is shown as
//! `\u001b`, never sent to the terminal. Root only (a real loop device).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{TestLoop, blktune, require_root, stderr};

#[test]
fn an_escape_sequence_in_the_export_path_is_shown_escaped() {
    if !require_root("an_escape_sequence_in_the_export_path_is_shown_escaped") {
        return;
    }
    let lo = TestLoop::new(16);
    let j = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    // A screen clear inside the file name.
    let rules = out.path().join("61-\x1b[2Jx.rules");
    let o = blktune(
        &[
            "bench",
            lo.name(),
            "--load",
            "none",
            "--dwell",
            "500ms",
            "--settle",
            "0s",
            "--rounds",
            "1",
            "--schedulers",
            "none",
            "--json",
            "--export",
            "--export-output",
            rules.to_str().unwrap(),
        ],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(rules.exists(), "the rule was written where asked");
    let err = stderr(&o);
    assert!(err.contains("61-\\u001b[2Jx.rules"), "{err}");
    assert!(
        !err.contains('\x1b'),
        "a raw escape reached stderr: {err:?}"
    );
}
