//! `R` in the live TUI while the kernel tracer runs: the live worker, on
//! the real system, under an fio read load on a loop device this test
//! creates, records the kernel's latency histograms with each sample, and
//! exactly the ones of the interval the app was sent with that snapshot.
//! Root only; read-only worker (nothing is tuned).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune::tui::worker::latency::LatencyFeed;
use blktune::tui::worker::live::LiveSource;
use blktune::tui::worker::protocol::{Feed, LiveControl, Shared, ToWorker};
use blktune::tui::worker::recorder::RecordEvent;
use blktune_core::latency::{Dir, Span, SparseHist};
use blktune_core::os::SysRoot;
use blktune_core::sampler::Sampler;
use common::{FioLoad, TestLoop, require_root, require_tool};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Recorded samples to wait for.
const SAMPLES: usize = 6;

#[test]
fn r_records_the_histograms_the_live_view_was_sent() {
    let test = "r_records_the_histograms_the_live_view_was_sent";
    if !require_root(test) || !require_tool(test, "fio") {
        return;
    }
    let lo = TestLoop::new(64);
    let _fio = FioLoad::randread(lo.name());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tui.ndjson");

    let sampler = Sampler::new(SysRoot::default()).unwrap();
    let (feed_tx, feed) = mpsc::channel();
    let (ctl, ctl_rx) = mpsc::channel();
    let handle = LiveSource::new(sampler, None, Duration::from_millis(250))
        .with_latency(false)
        .spawn(feed_tx, ctl_rx)
        .unwrap();
    let next = || feed.recv_timeout(Duration::from_secs(10)).expect("a feed");
    // The first frame is sent before the tracer loads: skip to its word.
    loop {
        match next() {
            Feed::Latency(LatencyFeed::Tracing) => break,
            Feed::Latency(other) => panic!("tracing should run: {other:?}"),
            _ => {}
        }
    }

    ctl.send(ToWorker::Own(LiveControl::Record(Some(file.clone()))))
        .unwrap();
    // What the app was sent while recording: the loop device's reads, per interval.
    let mut sent: Vec<Option<SparseHist>> = Vec::new();
    let mut recording = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "no end of the recording");
        match next() {
            Feed::Record(RecordEvent::Started(p)) => {
                assert_eq!(p, file);
                recording = true;
            }
            Feed::Record(RecordEvent::Stopped { samples, .. }) => {
                assert_eq!(samples as usize, sent.len());
                break;
            }
            Feed::Record(RecordEvent::Failed(e)) => panic!("{e}"),
            Feed::Latency(LatencyFeed::Sample(s)) if recording => {
                sent.push(
                    s.devices
                        .get(lo.name())
                        .and_then(|d| d.get(Span::Total, Dir::Read))
                        .cloned(),
                );
                if sent.len() == SAMPLES {
                    ctl.send(ToWorker::Own(LiveControl::Record(None))).unwrap();
                }
            }
            Feed::Latency(LatencyFeed::Unavailable(why)) => panic!("tracing stopped: {why}"),
            _ => {}
        }
    }
    ctl.send(ToWorker::Shared(Shared::Stop)).unwrap();
    handle.join().unwrap();

    // The file: the header says traced, and each sample has the very
    // histograms of the loop device's reads the app was sent with it.
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    let header = lines.next().unwrap();
    assert_eq!(header["latency"]["traced"], true, "{header}");
    let recorded: Vec<Option<SparseHist>> = lines
        .filter(|v| v["type"] == "sample")
        .map(|v| serde_json::from_value(v["lat"][lo.name()]["r"].clone()).ok())
        .collect();
    assert_eq!(recorded.len(), SAMPLES);
    assert_eq!(recorded, sent);
    let reads: u64 = recorded.iter().flatten().map(SparseHist::count).sum();
    assert!(reads >= 100, "fio's reads in {SAMPLES} intervals: {reads}");
    assert!(
        recorded.iter().filter(|r| r.is_some()).count() >= SAMPLES - 1,
        "{recorded:?}"
    );
}
