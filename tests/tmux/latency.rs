//! End to end: the kernel's latency in the real TUI in tmux. As root, on a
//! loop device this test creates under an fio load it starts and stops, the
//! table has a read p99, and a scheduler switch gets before/after rows of
//! p50/p99 with each window's count. As `nobody`, the header says why there
//! are no percentiles, the column is all `-`, and no bpf() call is made.
//! Root only (it creates the device and becomes nobody); skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::Tmux;
use common::*;
use std::process::{Child, Command, Stdio};

/// fio on the device in the background; killed and reaped on drop.
struct Fio(Child);

impl Drop for Fio {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The side panel's text on a line (right of the chart's `│`).
fn panel(line: &str) -> &str {
    line.rsplit('│').next().unwrap_or("").trim()
}

/// The cells of the panel row starting with `label`.
fn cells(screen: &str, label: &str) -> Option<Vec<String>> {
    screen.lines().map(panel).find_map(|p| {
        let mut w = p.split_whitespace();
        (w.next() == Some(label)).then(|| w.map(String::from).collect())
    })
}

#[test]
fn a_switch_under_load_gets_p99_rows_with_counts() {
    let name = "a_switch_under_load_gets_p99_rows_with_counts";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let orig = lo.active_scheduler();
    let _fio = Fio(Command::new("fio")
        .args([
            "--name=mixed",
            &format!("--filename=/dev/{dev}"),
            "--rw=randrw",
            "--rwmixread=70",
            "--bs=4k",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=8",
            "--time_based",
            "--runtime=120",
            "--output=/dev/null",
            "--thread",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("fio"));
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        &format!(
            "BLKTUNE_JOURNAL_DIR={} {} --device {dev} --interval 250ms --revert-on-exit",
            tmp.path().join("journal").display(),
            env!("CARGO_BIN_EXE_blktune"),
        ),
        160,
        48,
    );
    // The table's read p99: a number in ms (fio reads thousands a second).
    let s = t.wait("a read p99 in the table", |s| {
        s.contains("r_p99")
            && s.lines().any(|l| {
                l.starts_with(&format!("▶{dev} ")) && !l.contains("n=") && !l.contains(" - ")
            })
            && !s.contains("no p99")
    });
    println!("160x48 under load:\n{s}");
    // Some "before": intervals, not seconds.
    t.wait_redraws("some \"before\"", 8);
    t.keys(&["s"]);
    t.wait("the picker", |s| s.contains(&format!("scheduler of {dev}")));
    t.keys(&["Down", "Enter"]);
    let num = |c: &str| c.parse::<f64>().is_ok();
    let s = t.wait("p99 rows with counts before and after", |s| {
        // The reads' counts: the first `I/Os` row, under r_await (`23729  836k`).
        let (Some(reads), Some(p99)) = (cells(s, "I/Os"), cells(s, "r_p99")) else {
            return false;
        };
        let count = |c: &str| match c.strip_suffix('k') {
            Some(k) => k.parse::<f64>().ok().map(|v| v * 1e3),
            None => c.parse::<f64>().ok(),
        };
        // Counts each side, a p99 each side, and a diff once the windows are long enough.
        reads.len() >= 2
            && reads[..2].iter().all(|c| count(c).is_some_and(|n| n >= 100.0))
            && p99.len() >= 3
            && p99[..2].iter().all(|c| num(c))
            // Three intervals after the switch: a percent, or `~` inside the noise.
            && p99[2] != "short"
            && cells(s, "w_p99").is_some()
    });
    println!("160x48 after the switch:\n{s}");
    assert!(cells(&s, "r_p50").is_some(), "{s}");
    assert!(cells(&s, "r_dev99").is_some(), "{s}");
    t.keys(&["q"]);
    let s = t.wait("the exit after q", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{s}");
    assert_eq!(lo.active_scheduler(), orig);
}

#[test]
fn as_nobody_the_header_says_why_and_no_bpf_is_attempted() {
    let name = "as_nobody_the_header_says_why_and_no_bpf_is_attempted";
    if !require_root(name)
        || !require_tool(name, "tmux")
        || !require_tool(name, "strace")
        || !require_tool(name, "setpriv")
    {
        return;
    }
    let lo = TestLoop::new(16);
    let dev = lo.name().to_string();
    let dir = temp_in_target();
    let bin = public_binary(dir.path());
    let log = dir.path().join("strace.log");
    let t = Tmux::start(
        &format!(
            "strace -f -e trace=bpf -o {} setpriv --reuid=nobody --regid=nogroup --clear-groups {} --device {dev} --interval 250ms",
            log.display(),
            bin.display(),
        ),
        80,
        24,
    );
    let s = t.wait("the reason in the header and a - for the p99", |s| {
        s.contains("no p99: not root")
            && s.contains("r_p99")
            && s.lines()
                .any(|l| l.starts_with(&format!("▶{dev} ")) && l.contains(" - "))
    });
    println!("80x24 as nobody:\n{s}");
    assert!(s.contains("READ-ONLY"), "{s}");
    t.keys(&["q"]);
    let s = t.wait("the exit after q", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{s}");
    let calls: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("bpf("))
        .map(String::from)
        .collect();
    assert!(calls.is_empty(), "bpf() called as nobody: {calls:?}");
}
