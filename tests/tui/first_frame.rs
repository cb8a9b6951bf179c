//! The live source sends the devices and their settings before anything
//! slow (loading the BPF tracer takes 100 ms or more): the first frame
//! never waits for it.

use crate::common::tui_fixture;
use blktune::tui::worker::live::LiveSource;
use blktune::tui::worker::protocol::{Feed, Shared, ToWorker};
use blktune_core::diskstats::Counters;
use blktune_core::sampler::{Sampler, SamplerOptions};
use std::sync::mpsc;
use std::time::Duration;
use tui_fixture::*;

#[test]
fn the_first_snapshot_comes_before_the_latency_tracer_is_loaded() {
    let m = Machine::three();
    let c = Counters::default();
    m.tree
        .set_diskstats(&[("sda", 8, 0, c), ("sdb", 8, 16, c), ("zram0", 252, 0, c)])
        .unwrap();
    let sampler = Sampler::with_options(m.tree.root(), SamplerOptions::screen()).unwrap();
    let (ftx, frx) = mpsc::channel();
    let (ctx, crx) = mpsc::channel();
    // A fake tree never loads BPF, but the order is the same as live.
    let handle = LiveSource::new(sampler, None, Duration::from_secs(1))
        .with_latency(false)
        .spawn(ftx, crx)
        .unwrap();
    let first = frx.recv_timeout(Duration::from_secs(30)).unwrap();
    let second = frx.recv_timeout(Duration::from_secs(30)).unwrap();
    ctx.send(ToWorker::Shared(Shared::Stop)).unwrap();
    handle.join().unwrap();
    assert!(
        matches!(&first, Feed::Snapshot(s) if s.interval.is_none() && s.devices.len() == 3),
        "first feed: {first:?}"
    );
    assert!(
        matches!(second, Feed::Latency(_)),
        "second feed: {second:?}"
    );
}
