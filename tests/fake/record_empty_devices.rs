//! Unattached loop nodes (size 0) stay out of recordings and their
//! summaries, and devices are listed in natural order (loop2 before loop10).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::record_support;
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::record::{Record, RecordOptions, Recorder, Recording, summarize};
use blktune_core::sampler::Sampler;
use record_support::counters;
use std::time::Duration;

#[test]
fn empty_loop_nodes_are_neither_recorded_nor_summarized() {
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(&dir.path().join("tree")).unwrap();
    tree.add(&FakeDisk::new("sda")).unwrap();
    tree.add(&FakeDisk::new("loop10").dev(7, 10).active("none"))
        .unwrap();
    tree.add(&FakeDisk::new("loop2").dev(7, 2).active("none"))
        .unwrap();
    for n in [0, 1, 3] {
        let name = format!("loop{n}");
        tree.add(&FakeDisk::new(&name).dev(7, n).active("none").size_bytes(0))
            .unwrap();
    }
    let lines = |s: u64| {
        vec![
            ("sda", 8, 0, counters(s, 1)),
            ("loop0", 7, 0, counters(0, 1)),
            ("loop1", 7, 1, counters(0, 1)),
            ("loop2", 7, 2, counters(s, 2)),
            ("loop3", 7, 3, counters(0, 1)),
            ("loop10", 7, 10, counters(s, 3)),
        ]
    };
    tree.set_diskstats(&lines(1)).unwrap();
    let mut sampler = Sampler::new(tree.root()).unwrap();
    let first = sampler.tick().unwrap();
    let file = dir.path().join("rec.ndjson");
    let opts = RecordOptions {
        interval: Duration::from_millis(100),
        ..RecordOptions::default()
    };
    let mut rec = Recorder::create(&file, &tree.root(), &first.devices, first.t, &opts).unwrap();
    for s in 2..6 {
        tree.set_diskstats(&lines(s)).unwrap();
        rec.snapshot(&sampler.tick().unwrap()).unwrap();
    }
    rec.finish("stopped").unwrap();

    let recording = Recording::open(&file).unwrap();
    let names: Vec<&str> = recording
        .header
        .devices
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["loop2", "loop10", "sda"],
        "natural order, no empty nodes"
    );
    let mut samples = 0;
    for r in recording.reopen().unwrap() {
        if let Record::Sample(s) = r {
            samples += 1;
            let disks: Vec<&str> = s.disks.keys().map(String::as_str).collect();
            assert!(
                !disks
                    .iter()
                    .any(|d| ["loop0", "loop1", "loop3"].contains(d)),
                "{disks:?}"
            );
            assert!(disks.contains(&"loop10") && disks.contains(&"sda"));
        }
    }
    assert_eq!(samples, 4);

    let summary = summarize(&recording, None).unwrap();
    let shown: Vec<&str> = summary.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(shown, ["loop2", "loop10", "sda"]);
}

#[test]
fn discovery_lists_names_in_natural_order() {
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(&dir.path().join("tree")).unwrap();
    for (n, minor) in [("loop10", 10), ("loop2", 2), ("loop1", 1)] {
        tree.add(&FakeDisk::new(n).dev(7, minor)).unwrap();
    }
    tree.add(&FakeDisk::new("sda")).unwrap();
    let names: Vec<String> = blktune_core::device::discover(&tree.root())
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["loop1", "loop2", "loop10", "sda"]);
}
