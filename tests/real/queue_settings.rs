//! The queue settings next to the scheduler on a real loop device this test
//! creates (root only): `wbt_lat_usec` round-trips through `set` and
//! `revert` (0 turns write-back throttling off, -1 restores the kernel's
//! default and the outcome says which value that was), a scheduler switch
//! in the same change is written first (bfq turns a default throttling
//! off: the value asked for is the one that stays), and values the kernel
//! would refuse, clamp or ignore are refused before anything is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;

/// Puts back the queue settings this test changes (the kernel keeps them
/// across detach and attach of the loop device).
struct Knobs {
    lo: String,
    saved: Vec<(&'static str, String)>,
}

impl Knobs {
    fn save(lo: &TestLoop) -> Self {
        Self {
            lo: lo.name().to_string(),
            saved: ["wbt_lat_usec", "nomerges", "rq_affinity", "max_sectors_kb"]
                .into_iter()
                .map(|k| (k, lo.queue(k)))
                .collect(),
        }
    }
}

impl Drop for Knobs {
    fn drop(&mut self) {
        let _ = std::fs::write(format!("/sys/block/{}/queue/scheduler", self.lo), "none");
        for (k, v) in &self.saved {
            let _ = std::fs::write(format!("/sys/block/{}/queue/{k}", self.lo), v);
        }
    }
}

fn run(args: &[&str], journal: &std::path::Path) -> (i32, String, String) {
    let o = blktune(args, journal);
    (o.status.code().unwrap_or(-1), stdout(&o), stderr(&o))
}

#[test]
fn wbt_lat_usec_round_trips_through_set_and_revert() {
    if !require_root("wbt_lat_usec_round_trips_through_set_and_revert") {
        return;
    }
    let lo = TestLoop::new(32);
    let _k = Knobs::save(&lo);
    // TestLoop starts at the kernel's default (75 ms on a rotational disk,
    // 2 ms on others: a loop device is as rotational as its file's disk).
    let default = if lo.queue("rotational") == "1" {
        "75000"
    } else {
        "2000"
    };
    assert_eq!(lo.queue("wbt_lat_usec"), default);
    let dev = lo.name().to_string();
    let j = tempfile::tempdir().unwrap();
    let (code, out, err) = run(&["set", &dev, "--wbt-lat-usec", "4000"], j.path());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("wbt_lat_usec  {default} -> 4000")),
        "{out}"
    );
    assert_eq!(lo.queue("wbt_lat_usec"), "4000");
    // 0: off.
    let (code, _, err) = run(&["set", &dev, "--wbt-lat-usec", "0"], j.path());
    assert_eq!(code, 0, "{err}");
    assert_eq!(lo.queue("wbt_lat_usec"), "0");
    // -1: the kernel's default, said as such.
    let (code, out, err) = run(&["set", &dev, "--wbt-lat-usec", "-1"], j.path());
    assert_eq!(code, 0, "{err}");
    assert_eq!(lo.queue("wbt_lat_usec"), default);
    assert!(
        out.contains(&format!(
            "kernel set wbt_lat_usec to its default, {default} us"
        )),
        "{out}"
    );
    // Revert goes back to before the first change, from the journal.
    run(
        &["set", &dev, "--wbt-lat-usec", "7000", "--nomerges", "2"],
        j.path(),
    );
    assert_eq!(lo.queue("nomerges"), "2");
    let (code, out, err) = run(&["revert", &dev], j.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wbt_lat_usec"), "{out}");
    assert_eq!(lo.queue("wbt_lat_usec"), default);
    assert_eq!(lo.queue("nomerges"), "0");
    assert!(
        std::fs::read_dir(j.path()).unwrap().next().is_none() || {
            // The journal directory holds no entry for the device any more.
            !std::fs::read_dir(j.path())
                .unwrap()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().contains(&dev))
        }
    );
}

#[test]
fn a_scheduler_switch_in_the_same_change_is_written_first() {
    if !require_root("a_scheduler_switch_in_the_same_change_is_written_first") {
        return;
    }
    let lo = TestLoop::new(32);
    let _k = Knobs::save(&lo);
    let before = lo.queue("wbt_lat_usec");
    let dev = lo.name().to_string();
    let j = tempfile::tempdir().unwrap();
    let (code, out, err) = run(
        &["set", &dev, "--scheduler", "bfq", "--wbt-lat-usec", "3000"],
        j.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(lo.active_scheduler(), "bfq");
    assert_eq!(lo.queue("wbt_lat_usec"), "3000");
    // The outcome lists the switch before the setting.
    let sched = out.find("scheduler").unwrap();
    let wbt = out.find("wbt_lat_usec").unwrap();
    assert!(sched < wbt, "{out}");
    let (code, _, err) = run(&["revert", &dev], j.path());
    assert_eq!(code, 0, "{err}");
    assert_eq!(lo.active_scheduler(), "none");
    assert_eq!(lo.queue("wbt_lat_usec"), before);
}

#[test]
fn values_the_kernel_would_refuse_clamp_or_ignore_are_refused_first() {
    if !require_root("values_the_kernel_would_refuse_clamp_or_ignore_are_refused_first") {
        return;
    }
    let lo = TestLoop::new(32);
    let _k = Knobs::save(&lo);
    let dev = lo.name().to_string();
    let j = tempfile::tempdir().unwrap();
    let before = [
        lo.queue("wbt_lat_usec"),
        lo.queue("nomerges"),
        lo.queue("rq_affinity"),
        lo.queue("max_sectors_kb"),
    ];
    let hw = lo.queue("max_hw_sectors_kb");
    let over = (hw.parse::<u64>().unwrap() + 1).to_string();
    for (flag, v, why) in [
        ("--wbt-lat-usec", "-2", "out of range: -1 to"),
        ("--nomerges", "3", "out of range: 0 to 2"),
        ("--rq-affinity", "3", "out of range: 0 to 2"),
        (
            "--max-sectors-kb",
            "3",
            "out of range: 0 (the default) or 4 to",
        ),
        ("--max-sectors-kb", over.as_str(), "out of range: 0 to"),
        ("--add-random", "2", "out of range: 0 to 1"),
    ] {
        let (code, _, err) = run(&["set", &dev, flag, v], j.path());
        assert_eq!(code, 2, "{flag} {v}: {err}");
        assert!(err.contains(why), "{flag} {v}: {err}");
    }
    assert_eq!(
        [
            lo.queue("wbt_lat_usec"),
            lo.queue("nomerges"),
            lo.queue("rq_affinity"),
            lo.queue("max_sectors_kb"),
        ],
        before
    );
}
