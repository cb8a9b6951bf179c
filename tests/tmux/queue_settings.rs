//! End to end in tmux (80x24), on a loop device this test creates:
//! `wbt_lat_usec` changed through the TUI (`t`, then Enter on it: the
//! queue settings come after the scheduler's tunables, none under `none`)
//! reaches sysfs, the detail pane shows it, `u` undoes it, and the quit
//! summary says nothing is left to revert. Root only; skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::Tmux;
use common::*;

const PROMPT: &str = "wbt35$";

/// The detail pane's lines (right of the charts' `│`), trimmed.
fn detail_pane(screen: &str) -> Vec<String> {
    screen
        .lines()
        .filter(|l| l.contains('│'))
        .map(|l| l.rsplit('│').next().unwrap_or("").trim().to_string())
        .collect()
}

#[test]
fn wbt_lat_usec_round_trips_through_the_tui() {
    let name = "wbt_lat_usec_round_trips_through_the_tui";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let lo = TestLoop::new(32);
    let dev = lo.name().to_string();
    let before = lo.queue("wbt_lat_usec");
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
    // Under none there are no tunables: the list starts at wbt_lat_usec.
    t.keys(&["t"]);
    t.wait("the queue settings of the device", |s| {
        s.contains(&format!("queue settings of {dev}")) && s.contains("▶ wbt_lat_usec")
    });
    t.keys(&["Enter"]);
    t.wait("the editor of wbt_lat_usec", |s| {
        s.contains(&format!("wbt_lat_usec of {dev}")) && s.contains(&format!("now  {before}"))
    });
    t.keys(&["3", "0", "0", "0"]);
    t.wait("a valid value", |s| {
        s.contains("new  3000▏") && s.contains("✓ valid")
    });
    t.keys(&["Enter"]);
    assert!(
        wait_until(TIMEOUT, || lo.queue("wbt_lat_usec") == "3000"),
        "wbt_lat_usec is {}:\n{}",
        lo.queue("wbt_lat_usec"),
        t.capture()
    );
    t.wait("the change in the status line", |s| {
        s.contains(&format!("wbt_lat_usec {before}→3000"))
    });
    // The detail pane (right of the charts' `│`) shows the new value under
    // its queue settings.
    let s = t.wait("wbt_lat_usec 3000 in the detail pane", |s| {
        let side = detail_pane(s);
        side.iter().any(|l| l == "queue settings")
            && side
                .iter()
                .any(|l| l.split_whitespace().eq(["wbt_lat_usec", "3000"]))
    });
    println!("80x24 after the change:\n{s}");
    // Undo: back to what it was.
    t.keys(&["u"]);
    assert!(
        wait_until(TIMEOUT, || lo.queue("wbt_lat_usec") == before),
        "wbt_lat_usec is {}:\n{}",
        lo.queue("wbt_lat_usec"),
        t.capture()
    );
    t.keys(&["q"]);
    let s = t.wait("the shell after q", |s| s.trim_end().ends_with(PROMPT));
    assert!(!s.contains("to revert:"), "nothing left to revert:\n{s}");
}
