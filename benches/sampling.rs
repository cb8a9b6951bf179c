//! Cost of sampling and of starting, on generated fake trees:
//! `cargo bench --bench sampling` prints, for 1, 200, 1000 and 4000 devices,
//! the time to start each command's sampler (what happens before the first
//! frame or line) and the cost of one tick at a 1 s interval. Figures only;
//! nothing here asserts a time.
//!
//! A fake tree lives on tmpfs or disk, not sysfs: a real sysfs read costs
//! more (benches/vs-iostat.sh measures the real thing next to iostat).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::device::{self, Identity};
use blktune_core::diskstats::Counters;
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::sampler::{HotPlug, SETTINGS_REFRESH, Sampler, SamplerOptions};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Mean time of `f` over `n` runs, in milliseconds (after one warm-up run).
fn time_ms(n: u32, mut f: impl FnMut()) -> f64 {
    f();
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_secs_f64() * 1000.0 / f64::from(n)
}

/// `n` loop devices with a queue, a size and counters, in a fake tree.
fn tree(n: usize) -> (tempfile::TempDir, FakeTree) {
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(dir.path()).unwrap();
    let mut lines = Vec::new();
    for i in 0..n {
        let name = format!("loop{i}");
        tree.add(
            &FakeDisk::new(&name)
                .dev(7, i as u32)
                .hw_queue_depth(128)
                .ids(None, None),
        )
        .unwrap();
        lines.push((name, i as u32));
    }
    let c = Counters {
        rd_ios: 1000,
        rd_ticks: 1500,
        wr_ios: 400,
        wr_ticks: 900,
        io_ticks: 5000,
        time_in_queue: 2400,
        rd_sectors: 8000,
        wr_sectors: 20000,
        ..Counters::default()
    };
    let stats: Vec<(&str, u32, u32, Counters)> = lines
        .iter()
        .map(|(n, mi)| (n.as_str(), 7, *mi, c))
        .collect();
    tree.set_diskstats(&stats).unwrap();
    (dir, tree)
}

fn opts(identity: bool, hotplug: HotPlug) -> SamplerOptions {
    SamplerOptions {
        identity,
        hotplug,
        ..SamplerOptions::screen()
    }
}

fn main() {
    println!("blktune sampling cost on fake trees (mean of repeated runs, release build)");
    println!();
    println!("startup, ms (before the first frame / line):");
    println!(
        "{:>7} {:>10} {:>10} {:>12} {:>10} {:>10} {:>14}",
        "devices", "tui", "record", "watch", "watch sda", "list", "full discover"
    );
    let sizes = [1usize, 200, 1000, 4000];
    let mut trees = Vec::new();
    for n in sizes {
        let (dir, t) = tree(n);
        let root = t.root();
        let reps = if n >= 1000 { 5 } else { 30 };
        let tui = time_ms(reps, || {
            black_box(Sampler::with_options(root.clone(), opts(true, HotPlug::Manual)).unwrap());
        });
        let record = time_ms(reps, || {
            let o = SamplerOptions {
                hotplug: HotPlug::Manual,
                ..SamplerOptions::default()
            };
            black_box(Sampler::with_options(root.clone(), o).unwrap());
        });
        let watch = time_ms(reps, || {
            black_box(Sampler::with_options(root.clone(), opts(false, HotPlug::Manual)).unwrap());
        });
        let one = time_ms(reps, || {
            let o = SamplerOptions {
                only: Some(vec!["loop0".into()]),
                ..opts(false, HotPlug::Manual)
            };
            black_box(Sampler::with_options(root.clone(), o).unwrap());
        });
        let list = time_ms(reps, || {
            black_box(device::discover_shown(&root, Identity::Table).unwrap());
        });
        let full = time_ms(reps, || {
            black_box(device::discover(&root).unwrap());
        });
        println!(
            "{n:>7} {tui:>10.2} {record:>10.2} {watch:>12.2} {one:>10.2} {list:>10.2} {full:>14.2}"
        );
        trees.push((n, dir, t));
    }

    println!();
    println!(
        "per tick, ms (diskstats parse + iostat math; settings round-robin at a 1 s interval):"
    );
    println!(
        "{:>7} {:>10} {:>12} {:>14} {:>12} {:>11}",
        "devices", "tick", "check/dev", "tick @1s", "poll tick", "core @1s"
    );
    for (n, _dir, t) in &trees {
        let root = t.root();
        let reps = if *n >= 1000 { 20 } else { 200 };
        let mut s = Sampler::with_options(root.clone(), opts(true, HotPlug::Manual)).unwrap();
        for _ in 0..=n / 128 {
            s.tick().unwrap(); // fill every identity, as the first seconds do live
        }
        s.set_refresh_every(Duration::from_secs(3600));
        s.tick().unwrap();
        let tick = time_ms(reps, || {
            black_box(s.tick().unwrap());
        });
        // Every device due on every tick: the cost of one settings check.
        s.set_refresh_every(Duration::ZERO);
        let all = time_ms(reps.min(20), || {
            black_box(s.tick().unwrap());
        });
        let per_dev = (all - tick).max(0.0) / *n as f64;
        // At 1 s, the round-robin checks n / 5 devices per tick.
        let at_1s = tick + per_dev * *n as f64 / SETTINGS_REFRESH.as_secs_f64();
        let mut p = Sampler::with_options(root.clone(), opts(true, HotPlug::Poll)).unwrap();
        p.set_refresh_every(Duration::from_secs(3600));
        let poll = time_ms(reps, || {
            black_box(p.tick().unwrap());
        });
        let core = at_1s / 10.0;
        println!("{n:>7} {tick:>10.3} {per_dev:>12.4} {at_1s:>14.3} {poll:>12.3} {core:>10.3}%");
    }
    println!();
    println!("tui: SamplerOptions::screen (first 64 rows in full, the rest over the first ticks);");
    println!("record: every device's identity and settings before the first sample;");
    println!(
        "watch: sizes + scheduler, nr_requests, read_ahead_kb of every device; watch sda: one;"
    );
    println!(
        "list: discover_shown (the table's columns); full discover: everything of every device."
    );
    println!(
        "tick @1s: one tick plus the round-robin's share; poll tick: without a uevent socket."
    );
}
