//! End to end in tmux at 80x24 on our own loop device under fio: 5 s after
//! `s Down Enter` the before/after has a rates row with before, after and
//! the interval, says what else it checked, and calls nothing from one
//! pair (issue 32); `A` starts an A/B and Esc stops it, the user's choice
//! back on the device. Root only (losetup, fio); skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::{Tmux, blktune_bin};
use common::*;

/// The side panel's lines (right of the charts' last `│`).
fn panel(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .filter_map(|l| l.rsplit_once('│').map(|(_, r)| r.trim_end()))
        .collect()
}

/// The panel row of figure `name`.
fn row<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    panel(screen)
        .into_iter()
        .find(|r| r.split_whitespace().next() == Some(name))
}

/// `-16% (-19..-13)` at the end of a row: the change and its interval.
fn has_interval(r: &str) -> bool {
    let Some((_, rest)) = r.split_once('(') else {
        return false;
    };
    rest.ends_with(')') && rest.contains("..") && r.contains('%')
}

/// Seconds since the change, from the panel's `Δ none→mq-deadline  5s ago`.
fn age(screen: &str) -> Option<u64> {
    let head = panel(screen).into_iter().find(|l| l.starts_with('Δ'))?;
    let ago = head.strip_suffix(" ago")?.rsplit(' ').next()?;
    ago.strip_suffix('s')?.parse().ok()
}

/// The TUI on `dev` at 80x24 under fio's random reads, switched from none
/// to mq-deadline; returns when the switch shows.
fn switched(dev: &str, journal: &std::path::Path) -> Tmux {
    let t = Tmux::start(
        &format!(
            "env NO_COLOR=1 BLKTUNE_JOURNAL_DIR='{}' '{}' --device {dev} --interval 250ms",
            journal.display(),
            blktune_bin()
        ),
        80,
        24,
    );
    t.wait("our device selected", |s| s.contains(&format!("▶{dev} ")));
    t.wait_redraws("samples before the switch", 8);
    t.keys(&["s"]);
    t.wait("the picker", |s| s.contains("scheduler of"));
    t.keys(&["Down", "Enter"]);
    t.wait("the switch", |s| s.contains("Δ none→mq-deadline"));
    t
}

#[test]
fn five_seconds_after_a_switch_at_80x24_the_rates_row_has_before_after_and_the_interval() {
    let name =
        "five_seconds_after_a_switch_at_80x24_the_rates_row_has_before_after_and_the_interval";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let _load = FioLoad::randread(&dev);
    let journal = tempfile::tempdir().unwrap();
    assert_eq!(lo.active_scheduler(), "none");
    let t = switched(&dev, journal.path());
    let s = t.wait("5 s after the switch", |s| age(s).is_some_and(|a| a >= 5));
    let r = row(&s, "r/s").unwrap_or_else(|| panic!("no r/s row:\n{s}"));
    let cells: Vec<&str> = r.split_whitespace().collect();
    // r/s, before, after, then the change and its interval.
    assert!(
        cells.len() >= 4 && cells[1].parse::<f64>().is_ok_and(|v| v > 0.0),
        "{r}\n{s}"
    );
    assert!(cells[2].parse::<f64>().is_ok_and(|v| v > 0.0), "{r}\n{s}");
    assert!(has_interval(r), "{r}\n{s}");
    // What else was checked in the same windows, and no call from one pair.
    let text = panel(&s).join(" ");
    assert!(
        text.contains("steady:") || text.contains("moved:") || text.contains("UNRELIABLE"),
        "{s}"
    );
    // No call from one pair: undecided, or unreliable when a control failed
    // (the disk under the loop moved with it: seen in a fresh CI run).
    assert!(
        text.contains("undecided") || text.contains("unreliable"),
        "{s}"
    );
    for word in ["faster", "slower", "better", "worse"] {
        assert!(!text.contains(word), "{word}:\n{s}");
    }
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}

#[test]
fn a_starts_an_ab_and_esc_stops_it_with_the_users_choice_back() {
    let name = "a_starts_an_ab_and_esc_stops_it_with_the_users_choice_back";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let _load = FioLoad::randread(&dev);
    let journal = tempfile::tempdir().unwrap();
    let t = switched(&dev, journal.path());
    assert_eq!(lo.active_scheduler(), "mq-deadline");
    t.keys(&["A"]);
    // The first round switches back to the configuration before the change.
    t.wait("the first round", |s| {
        s.contains("A/B round 1 of 12: before")
    });
    t.wait("the switch back", |_| lo.active_scheduler() == "none");
    t.keys(&["Escape"]);
    let s = t.wait("the A/B stopped", |s| s.contains("your choice restored"));
    assert!(s.contains("cancelled"), "{s}");
    assert_eq!(lo.active_scheduler(), "mq-deadline");
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}
