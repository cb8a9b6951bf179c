//! Cost of the TUI per sample: `cargo bench --bench tui` prints, for 1, 200,
//! 1000 and 4000 fake devices, the time to sample and compute (Sampler::tick on a
//! FakeTree), to take the snapshot into the app, and to render one frame
//! (TestBackend), plus the share of one core that costs at a 1 s interval.
//! The kernel tracer runs (idle devices: empty histograms each tick), so the
//! frame draws the selected device's latency chart too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune::tui::app::{App, Config};
use blktune::tui::render;
use blktune::tui::worker::latency::{LatencyFeed, LatencySample};
use blktune::tui::worker::protocol::Feed;
use blktune_core::diskstats::Counters;
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::host::HostInfo;
use blktune_core::sampler::{HotPlug, SETTINGS_REFRESH, Sampler, SamplerOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Mean time of `f` over `n` runs, in milliseconds.
fn time_ms(n: u32, mut f: impl FnMut()) -> f64 {
    f(); // warm-up
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_secs_f64() * 1000.0 / f64::from(n)
}

fn tree(n: usize) -> (tempfile::TempDir, FakeTree, Vec<(String, u32, u32)>) {
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(dir.path()).unwrap();
    let mut names = Vec::new();
    for i in 0..n {
        let name = format!("nvme{i}n1");
        let (major, minor) = (259, i as u32);
        tree.add(&FakeDisk::new(&name).dev(major, minor)).unwrap();
        names.push((name, major, minor));
    }
    (dir, tree, names)
}

fn write_stats(tree: &FakeTree, names: &[(String, u32, u32)], step: u64) {
    let lines: Vec<(&str, u32, u32, Counters)> = names
        .iter()
        .enumerate()
        .map(|(i, (n, ma, mi))| {
            let k = step * (i as u64 % 7 + 1);
            let c = Counters {
                rd_ios: 100 * k,
                rd_ticks: (150 * k) as u32,
                wr_ios: 40 * k,
                wr_ticks: (90 * k) as u32,
                io_ticks: (500 * k) as u32,
                time_in_queue: (240 * k) as u32,
                rd_sectors: 800 * k,
                wr_sectors: 2000 * k,
                ..Counters::default()
            };
            (n.as_str(), *ma, *mi, c)
        })
        .collect();
    tree.set_diskstats(&lines).unwrap();
}

fn main() {
    println!("blktune TUI cost per sample (mean of repeated runs, release build)");
    println!(
        "{:>7} {:>10} {:>13} {:>10} {:>12} {:>13} {:>11}",
        "devices", "tick ms", "refresh ms", "ingest ms", "frame 80x24", "frame 160x48", "core @1s"
    );
    for n in [1usize, 200, 1000, 4000] {
        let (_dir, tree, names) = tree(n);
        write_stats(&tree, &names, 1);
        // As on the real machine: hot-plug is heard, not polled.
        let opts = SamplerOptions {
            hotplug: HotPlug::Manual,
            ..SamplerOptions::screen()
        };
        let mut sampler = Sampler::with_options(tree.root(), opts).unwrap();
        // Fill every device's identity (done over the first ticks live).
        for _ in 0..=n / 128 {
            sampler.tick().unwrap();
        }
        sampler.set_refresh_every(Duration::from_secs(3600));
        let reps = if n > 1000 { 20 } else { 200 };
        // Parse and compute cost does not depend on the values.
        let tick = time_ms(reps, || {
            black_box(sampler.tick().unwrap());
        });
        // Every device's settings checked on this tick: the round-robin's
        // cost per device is the difference, spread over SETTINGS_REFRESH.
        sampler.set_refresh_every(Duration::ZERO);
        let refresh = time_ms(reps.min(20), || {
            black_box(sampler.tick().unwrap());
        });
        sampler.set_refresh_every(Duration::from_secs(3600));

        let mut app = App::new(Config {
            host: HostInfo::read(&tree.root()),
            read_only: None,
            interval: Duration::from_secs(1),
            page_kb: 4,
            color: true,
            select: None,
        });
        // Ten minutes of history at 1 s (one minute for 4000 devices: the app
        // keeps long history only for the selected and changed ones there).
        let mut snaps = Vec::new();
        let history = if n > 1000 { 60 } else { 600 };
        for step in 2..2 + history {
            write_stats(&tree, &names, step);
            snaps.push(sampler.tick().unwrap());
        }
        // As live with the kernel tracer running: each snapshot is followed
        // by its interval's histograms (none: the devices did no I/O).
        app.on_feed(Feed::Latency(LatencyFeed::Tracing));
        let mut it = snaps.into_iter();
        let ingest = time_ms(history as u32 - 1, || {
            let s = it.next().unwrap();
            let latency = LatencySample {
                t: s.t,
                itv: s.interval.unwrap_or(1.0),
                devices: Default::default(),
                lost: 0,
            };
            app.on_feed(Feed::Snapshot(Box::new(s)));
            app.on_feed(Feed::Latency(LatencyFeed::Sample(latency)));
        });
        let frame = |w, h| {
            let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
            time_ms(reps, || {
                // A fresh backend buffer each time: the whole frame is drawn.
                term.draw(|f| render::draw(f, &app)).unwrap();
                term.clear().unwrap();
            })
        };
        let (small, large) = (frame(80, 24), frame(160, 48));
        let round_robin = (refresh - tick).max(0.0) / SETTINGS_REFRESH.as_secs_f64();
        let core = (tick + round_robin + ingest + large) / 1000.0 * 100.0;
        println!(
            "{n:>7} {tick:>10.3} {refresh:>13.3} {ingest:>10.3} {small:>12.3} {large:>13.3} {core:>10.3}%"
        );
    }
    println!("tick: read+parse diskstats, compute iostat -x for every line; refresh: a tick that");
    println!("also checks every device's settings (the round-robin checks each once per 5 s);");
    println!(
        "core @1s: tick + ingest + one 160x48 frame per second, plus the round-robin's share,"
    );
    println!("as a share of one core.");
}
