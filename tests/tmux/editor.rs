//! End to end in tmux (80x24), on a loop device this test creates: the
//! editor's first typed character replaces the prefilled value (the digits
//! sent in one packet, as a paste or a fast typist does), Ctrl-U clears,
//! and the quit summary says original → now, not the steps (issue 16,
//! items 9 and 10). Root only; skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::Tmux;
use common::*;

const PROMPT: &str = "edit16$";

#[test]
fn typing_replaces_the_prefilled_value_ctrl_u_clears_and_the_summary_is_original_to_now() {
    let name =
        "typing_replaces_the_prefilled_value_ctrl_u_clears_and_the_summary_is_original_to_now";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let lo = TestLoop::new(32);
    let dev = lo.name().to_string();
    lo.set_queue("read_ahead_kb", "128");
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::shell(PROMPT, 80, 24);
    t.line(&format!(
        "env BLKTUNE_JOURNAL_DIR={} {} --device {dev} --interval 250ms",
        tmp.path().join("journal").display(),
        common::tmux::blktune_bin()
    ));
    t.wait("the TUI with the loop device", |s| {
        s.contains(&format!("▶{dev} "))
    });
    // `r`, then 2048 in one packet: 2048, not 1282048.
    t.keys(&["r", "2", "0", "4", "8"]);
    t.wait("the typed value replacing 128", |s| {
        s.contains("new  2048▏") && s.contains("✓ valid")
    });
    t.keys(&["Enter"]);
    assert!(
        wait_until(TIMEOUT, || lo.queue("read_ahead_kb") == "2048"),
        "read_ahead_kb is {}:\n{}",
        lo.queue("read_ahead_kb"),
        t.capture()
    );
    t.wait("the applied value in the title", |s| s.contains("ra 2048 "));
    // Again: edit the value by Backspace, then Ctrl-U clears it all.
    t.keys(&["r", "BSpace", "C-u", "5", "1", "2"]);
    t.wait("Ctrl-U cleared the value", |s| s.contains("new  512▏"));
    t.keys(&["Enter"]);
    assert!(
        wait_until(TIMEOUT, || lo.queue("read_ahead_kb") == "512"),
        "read_ahead_kb is {}:\n{}",
        lo.queue("read_ahead_kb"),
        t.capture()
    );
    // Two steps (128→2048, 2048→512); the summary says 128→512.
    t.keys(&["q"]);
    let s = t.wait("the summary", |s| {
        s.contains("to revert:") && s.trim_end().ends_with(PROMPT)
    });
    assert!(
        s.contains(&format!("  {dev}: read_ahead_kb 128→512")),
        "{s}"
    );
    assert!(!s.contains("2048"), "no steps in the summary:\n{s}");
}
