//! End to end: `blktune --probe` in tmux at 80x24 on a loop device this test
//! creates. The probe says what it is and shows its figures with the count
//! of reads they rest on (no p99 of an interval's dozen reads; one of the
//! minute's pooled reads once there are 100), a switch gets `pr_n` and
//! `pr_p99` before/after rows, `P` turns it off and on, and quitting ends
//! the process (and with it the probe). Root only; skips otherwise; `P`
//! without a selected row is refused, on a fake tree (no root).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune_core::fake::FakeDisk;
use common::tmux::Tmux;
use common::*;

/// The side panel's text on a line (right of the chart's `│`).
fn panel(line: &str) -> &str {
    line.rsplit('│').next().unwrap_or("").trim()
}

/// The figures of the panel row starting with `label`, parsed (`-` is None).
fn figures(screen: &str, label: &str) -> Option<Vec<Option<f64>>> {
    screen.lines().map(panel).find_map(|p| {
        let mut w = p.split_whitespace();
        (w.next() == Some(label)).then(|| w.map(|v| v.trim_end_matches('%').parse().ok()).collect())
    })
}

#[test]
fn tui_probe_shows_its_figures_and_the_p99_before_and_after_a_switch() {
    let name = "tui_probe_shows_its_figures_and_the_p99_before_and_after_a_switch";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    let lo = TestLoop::new(16);
    let dev = lo.name().to_string();
    let orig = lo.active_scheduler();
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        &format!(
            "BLKTUNE_JOURNAL_DIR={} {} --probe --probe-rate 50 --device {dev} --interval 250ms --revert-on-exit",
            tmp.path().join("journal").display(),
            env!("CARGO_BIN_EXE_blktune"),
        ),
        80,
        24,
    );
    // Only this device's row (other tests' loop devices would take the
    // detail pane's rows), typed as a fast typist sends it.
    t.wait("the device's row", |s| s.contains(&format!("▶{dev} ")));
    let mut keys = vec!["/"];
    let typed: Vec<String> = dev.chars().map(String::from).collect();
    keys.extend(typed.iter().map(String::as_str));
    keys.push("Enter");
    t.keys(&keys);
    t.wait("the filter kept", |s| s.contains(&format!("filter: {dev}")));

    // What it is and its own load, then its count, p50, p99 and max: the
    // newest interval (about 12 reads) has no p99, the last minute's pooled
    // reads have one from 100 reads on.
    let s = t.wait("the probe's figures", |s| {
        s.contains(&format!("▶{dev} "))
            && s.contains("above the block layer (in r/s)")
            && s.contains("ms       n   p50   p99   max")
            && figures(s, "250ms").is_some_and(|f| f.len() == 4 && f[1].is_some_and(|v| v > 0.0))
            && figures(s, "60s").is_some_and(|f| f[0].is_some_and(|n| n >= 100.0) && f[2].is_some())
    });
    println!("80x24 with the probe:\n{s}");
    let load = s
        .lines()
        .map(panel)
        .find(|p| p.starts_with("probe: ") && p.ends_with("direct 4 KiB reads"))
        .unwrap();
    let rate: f64 = load
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches("/s")
        .parse()
        .unwrap();
    assert!((25.0..=75.0).contains(&rate), "about 50 reads/s: {load}");
    let now = figures(&s, "250ms").unwrap();
    assert!(
        (1.0..100.0).contains(&now[0].unwrap()),
        "a dozen reads: {now:?}"
    );
    assert_eq!(now[2], None, "no p99 of an interval's reads: {now:?}");
    assert!(now[1].unwrap() <= now[3].unwrap(), "{now:?}");
    let minute = figures(&s, "60s").unwrap();
    assert!(
        minute[1].unwrap() <= minute[2].unwrap() && minute[2].unwrap() <= minute[3].unwrap(),
        "{minute:?}"
    );

    // Switch to another scheduler: the before/after table gets the probe's
    // read counts and, once each side has 100 reads, their p99 (the "before"
    // already has them: the minute's row showed a p99).
    t.keys(&["s"]);
    t.wait("the picker", |s| s.contains(&format!("scheduler of {dev}")));
    t.keys(&["Down", "Enter"]);
    let s = t.wait("pr_n and pr_p99 rows with before and after", |s| {
        figures(s, "pr_n")
            .is_some_and(|f| f.len() == 2 && f.iter().all(|n| n.is_some_and(|n| n >= 100.0)))
            && figures(s, "pr_p99")
                .is_some_and(|f| f.len() >= 2 && f[0].is_some() && f[1].is_some())
    });
    println!("80x24 after the switch:\n{s}");
    assert!(figures(&s, "r_await").is_some(), "{s}");

    // P turns it off: its lines go and the device is closed; P brings it back.
    t.keys(&["P"]);
    let s = t.wait("the probe off", |s| {
        s.contains("probe off") && !s.contains("above the block layer") && !s.contains("pr_")
    });
    assert!(figures(&s, "r_await").is_some(), "the rest stays: {s}");
    assert!(
        wait_until(TIMEOUT, || !held_open(&dev)),
        "/dev/{dev} still open with the probe off"
    );
    t.keys(&["P"]);
    t.wait("the probe on again", |s| {
        s.contains(&format!(
            "probe on: 50.0 read-only direct 4 KiB reads/s of {dev}"
        )) && figures(s, "250ms").is_some_and(|f| f[1].is_some_and(|v| v > 0.0))
    });
    assert!(held_open(&dev));

    // q: the settings go back and the process (and its probe) ends.
    t.keys(&["q"]);
    let s = t.wait("the exit after q", |s| s.contains("EXIT="));
    assert!(s.contains(&format!("blktune: reverted {dev}")), "{s}");
    assert!(s.contains("EXIT=0"), "{s}");
    assert_eq!(lo.active_scheduler(), orig);
    assert!(
        !held_open(&dev),
        "nothing holds /dev/{dev} open after quitting"
    );
}

/// Does any other process have `/dev/<dev>` open?
fn held_open(dev: &str) -> bool {
    let me = std::process::id().to_string();
    let path = std::path::Path::new("/dev").join(dev);
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|p| p.file_name().to_str() != Some(me.as_str()))
        .filter_map(|p| std::fs::read_dir(p.path().join("fd")).ok())
        .flat_map(|fds| fds.flatten())
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == path))
}

/// The screen with its rows joined by single spaces (the status line wraps).
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `P` with no device to read refuses, says why on the status line and
/// starts nothing: with the selection hidden by a filter typed fast (the
/// filter, Enter and `P` in one packet), and with no device selected
/// (`--device` naming a detached loop node, size 0: not a row). On a fake
/// tree (`--read-only`); no root.
#[test]
fn p_refuses_without_a_selected_row() {
    let name = "p_refuses_without_a_selected_row";
    if !require_tool(name, "tmux") {
        return;
    }
    let (dir, tree) = fake_host::loop_tree([1, 10]);
    tree.add(&FakeDisk::new("loop2").dev(7, 2).size_bytes(0))
        .unwrap();
    let journal = tempfile::tempdir().unwrap();
    let t = Tmux::on_fake_tree(
        dir.path(),
        journal.path(),
        "--device loop1 --interval 250ms",
        80,
        24,
    );
    t.wait("loop1 selected", |s| s.contains("▶loop1 "));
    t.keys(&["/", "z", "z", "Enter", "P"]);
    let s = t.wait("the refusal", |s| {
        flat(s).contains("'loop1' is selected but hidden by the filter 'zz'")
    });
    assert!(!flat(&s).contains("probe on"), "{s}");
    assert!(!s.contains("above the block layer"), "{s}");
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));

    let t = Tmux::on_fake_tree(
        dir.path(),
        journal.path(),
        "--device loop2 --interval 250ms",
        80,
        24,
    );
    t.wait("no selection", |s| flat(s).contains("'loop2' is not shown"));
    t.keys(&["P"]);
    let s = t.wait("the refusal", |s| {
        flat(s).contains("no device selected: ↑/↓ selects one")
    });
    assert!(!flat(&s).contains("probe on"), "{s}");
    t.keys(&["q"]);
    t.wait("exit 0", |s| s.contains("EXIT=0"));
}
