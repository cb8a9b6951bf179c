//! The TUI's latency probe on real loop devices this test creates (root
//! only): the live source probes only the selected device, follows the
//! selection, and stops when the source does. Never any other device: the
//! app starts on our loop device and every re-target is checked first.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune::tui::app::{App, Config};
use blktune::tui::command::Action;
use blktune::tui::worker::live::LiveSource;
use blktune::tui::worker::protocol::{Control, Feed, LiveControl, ProbeSample, Shared, ToWorker};
use blktune_core::host::HostInfo;
use blktune_core::os::SysRoot;
use blktune_core::sampler::Sampler;
use common::*;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

const INTERVAL: Duration = Duration::from_millis(250);
const RATE: f64 = 20.0;

/// How many descriptors of this process are open on `dev`.
fn opens_of(dev: &str) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.to_str() == Some(dev)))
        .count()
}

/// Reads completed on a device, from its stat file.
fn reads_of(name: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    s.split_whitespace().next().unwrap().parse().unwrap()
}

/// Run the app on the source's feed for `secs`, passing on every probe
/// re-target (each must be one of `allowed`); returns the probe samples seen.
fn pump(
    app: &mut App,
    rx: &Receiver<Feed>,
    ctl: &Sender<ToWorker<LiveControl>>,
    secs: f64,
    allowed: &[&str],
) -> Vec<ProbeSample> {
    let mut seen = Vec::new();
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        if let Ok(f) = rx.recv_timeout(Duration::from_millis(50)) {
            if let Feed::Probe(p) = &f {
                seen.push(p.clone());
            }
            app.on_feed(f);
        }
        if let Some(c) = app.probe_control() {
            match &c {
                Control::Live(LiveControl::Probe(Some(d))) if allowed.contains(&d.as_str()) => {}
                c => panic!("the test would probe something else: {c:?}"),
            }
            ctl.send(c.to_live().unwrap()).unwrap();
        }
    }
    seen
}

#[test]
fn live_source_probes_only_the_selected_device_and_follows_the_selection() {
    if !require_root("live_source_probes_only_the_selected_device_and_follows_the_selection") {
        return;
    }
    let a = TestLoop::new(16);
    let b = TestLoop::new(16);
    let (an, bn) = (a.name().to_string(), b.name().to_string());
    let (adev, bdev) = (format!("/dev/{an}"), format!("/dev/{bn}"));
    let root = SysRoot::default();
    let (ftx, frx) = mpsc::channel();
    let (ctx, crx) = mpsc::channel();
    // Read-only (no tuner), as with --read-only: the probe only reads.
    let handle = LiveSource::new(Sampler::new(root.clone()).unwrap(), None, INTERVAL)
        .with_probe_rate(RATE)
        .spawn(ftx, crx)
        .unwrap();
    let mut app = App::new(Config {
        host: HostInfo::read(&root),
        read_only: Some("--read-only".into()),
        interval: INTERVAL,
        page_kb: 4,
        color: false,
        select: Some(an.clone()),
    });
    app.enable_probe(RATE);

    // On a: its figures arrive, nothing for any other device.
    let seen = pump(&mut app, &frx, &ctx, 2.5, &[&an]);
    assert_eq!(app.selected.as_deref(), Some(an.as_str()));
    assert_eq!((opens_of(&adev), opens_of(&bdev)), (1, 0));
    let with_a: Vec<&ProbeSample> = seen.iter().filter(|s| s.stats.contains_key(&an)).collect();
    assert!(with_a.len() >= 5, "probe samples of {an}: {seen:?}");
    for s in &seen {
        assert!(
            s.stats.keys().all(|k| k == &an),
            "only {an} is probed: {s:?}"
        );
    }
    // Past the first (partial) interval: about RATE reads/s and a real tail.
    let full = &with_a[1..];
    let mean_rate =
        full.iter().map(|s| s.stats[&an].reads_per_sec).sum::<f64>() / full.len() as f64;
    assert!(
        (0.6 * RATE..=1.5 * RATE).contains(&mean_rate),
        "about {RATE} reads/s: {mean_rate}"
    );
    assert!(full.iter().all(|s| s.stats[&an].errors == 0), "{full:?}");
    let p = app.probe.as_ref().unwrap();
    let h = &p.history[&an];
    // Each interval keeps its reads' latencies; a few reads: no p99 of its own.
    assert!(
        h.iter().any(|q| q.figures().max.is_some_and(|v| v > 0.0)),
        "{h:?}"
    );
    assert!(h.iter().all(|q| q.figures().n == q.reads), "{h:?}");
    assert!(h.iter().all(|q| q.figures().p99.is_none()), "{h:?}");
    // Pooled over the window: every read counted once.
    let w = blktune::tui::app::probe_window(h);
    assert_eq!(w.n, h.iter().map(|q| q.reads).sum::<u64>());
    assert!(p.history.keys().all(|k| k == &an), "{:?}", p.history.keys());

    // Select b: the probe moves there and leaves a alone.
    app.selected = Some(bn.clone());
    let seen = pump(&mut app, &frx, &ctx, 0.6, &[&bn]);
    assert!(seen.iter().any(|s| s.stats.contains_key(&bn)), "{seen:?}");
    let a_reads = reads_of(&an);
    let seen = pump(&mut app, &frx, &ctx, 2.0, &[&bn]);
    assert_eq!(reads_of(&an), a_reads, "no more reads of {an}");
    assert_eq!((opens_of(&adev), opens_of(&bdev)), (0, 1));
    assert!(seen.len() >= 4, "{seen:?}");
    for s in &seen {
        assert_eq!(s.stats.keys().collect::<Vec<_>>(), vec![&bn], "{s:?}");
    }
    let last = app.probe.as_ref().unwrap().latest(&bn).unwrap();
    assert!(
        last.reads > 0 && last.figures().p50.is_some_and(|v| v > 0.0),
        "{last:?}"
    );

    // P turns it off: the source stops the probe and closes the device while
    // sampling goes on; P again starts it anew.
    let off = app.on_action(Action::ToggleProbe);
    assert_eq!(off, vec![Control::Live(LiveControl::Probe(None))]);
    off.into_iter()
        .for_each(|c| ctx.send(c.to_live().unwrap()).unwrap());
    pump(&mut app, &frx, &ctx, 0.5, &[]);
    let b_reads = reads_of(&bn);
    let seen = pump(&mut app, &frx, &ctx, 1.0, &[]);
    assert!(seen.is_empty(), "no probe figures while off: {seen:?}");
    assert_eq!(reads_of(&bn), b_reads, "no reads of {bn} while off");
    assert_eq!(opens_of(&bdev), 0);
    assert!(app.samples > 0 && app.probe.is_none());
    let on = app.on_action(Action::ToggleProbe);
    assert_eq!(
        on,
        vec![Control::Live(LiveControl::Probe(Some(bn.clone())))]
    );
    on.into_iter()
        .for_each(|c| ctx.send(c.to_live().unwrap()).unwrap());
    pump(&mut app, &frx, &ctx, 1.5, &[&bn]);
    assert!(
        app.probe
            .as_ref()
            .unwrap()
            .latest(&bn)
            .is_some_and(|p| p.reads > 0),
        "probing {bn} again"
    );
    assert_eq!(opens_of(&bdev), 1);

    // The probe stops with the source: no descriptor left on either device.
    ctx.send(Shared::Stop.into()).unwrap();
    handle.join().unwrap();
    assert_eq!((opens_of(&adev), opens_of(&bdev)), (0, 0));
}
