//! Unit tests of the sampler.

use super::*;
use crate::diskstats::{Counters, DiskStatsLine};
use crate::iostat::{self, NoData};
use std::collections::HashMap;

fn line(name: &str, rd_ios: u64, rd_ticks: u32) -> DiskStatsLine {
    DiskStatsLine {
        major: 7,
        minor: 0,
        name: name.into(),
        counters: Counters {
            rd_ios,
            rd_ticks,
            ..Counters::default()
        },
    }
}

#[test]
fn first_sample_and_new_devices_have_no_data() {
    let mut r = RateTracker::default();
    let out = r.update(0.0, &[line("a", 0, 0)]);
    assert_eq!(out["a"].stats, Err(NoData::FirstSample));
    let out = r.update(1.0, &[line("a", 100, 300), line("b", 5, 5)]);
    assert_eq!(out["a"].stats.unwrap().r_s, 100.0);
    assert_eq!(out["a"].stats.unwrap().r_await, 3.0);
    assert_eq!(out["b"].stats, Err(NoData::FirstSample));
}

#[test]
fn a_device_that_vanished_and_came_back_starts_over() {
    let mut r = RateTracker::default();
    r.update(0.0, &[line("a", 100, 0)]);
    r.update(1.0, &[]);
    let out = r.update(2.0, &[line("a", 3, 0)]);
    assert_eq!(out["a"].stats, Err(NoData::FirstSample));
}

#[test]
fn a_vanished_device_starts_over_while_the_others_go_on() {
    let mut r = RateTracker::default();
    r.update(0.0, &[line("a", 0, 0), line("b", 0, 0)]);
    r.update(1.0, &[line("b", 10, 0)]);
    let out = r.update(2.0, &[line("a", 50, 0), line("b", 30, 0)]);
    assert_eq!(out["a"].stats, Err(NoData::FirstSample));
    assert_eq!(out["b"].stats.unwrap().r_s, 20.0);
}

#[test]
fn a_name_listed_twice_counts_its_last_line_against_the_previous_update() {
    let mut r = RateTracker::default();
    let out = r.update(0.0, &[line("a", 0, 0), line("a", 5, 0)]);
    assert_eq!(out["a"].stats, Err(NoData::FirstSample));
    let out = r.update(1.0, &[line("a", 10, 0), line("a", 20, 0)]);
    assert_eq!(out["a"].stats.unwrap().r_s, 15.0);
    let out = r.update(2.0, &[line("a", 40, 0)]);
    assert_eq!(out["a"].stats.unwrap().r_s, 20.0);
}

#[test]
fn recreated_device_with_smaller_counters_is_no_data() {
    let mut r = RateTracker::default();
    r.update(0.0, &[line("a", 100, 0)]);
    let out = r.update(1.0, &[line("a", 3, 0)]);
    assert_eq!(out["a"].stats, Err(NoData::CounterReset));
    // and the interval after that is normal again
    let out = r.update(2.0, &[line("a", 13, 0)]);
    assert_eq!(out["a"].stats.unwrap().r_s, 10.0);
}

/// The tracker as it was before it kept the last update's order: every
/// line looked up by name. The reference its answers must equal.
#[derive(Default)]
struct ByName {
    prev: HashMap<String, (Counters, u64, Option<Counters>)>,
    prev_t: Option<f64>,
    generation: u64,
}

impl ByName {
    fn update(&mut self, at: f64, lines: &[DiskStatsLine]) -> BTreeMap<String, DeviceStat> {
        let itv = self.prev_t.map(|p| at - p);
        self.generation += 1;
        let generation = self.generation;
        let mut out = BTreeMap::new();
        for l in lines {
            let stats = match self.prev.get_mut(&l.name) {
                Some((p, g, before)) => {
                    if *g != generation {
                        *before = Some(*p);
                    }
                    *p = l.counters;
                    *g = generation;
                    match (before, itv) {
                        (Some(b), Some(itv)) => iostat::compute(b, &l.counters, itv),
                        _ => Err(NoData::FirstSample),
                    }
                }
                None => {
                    self.prev
                        .insert(l.name.clone(), (l.counters, generation, None));
                    Err(NoData::FirstSample)
                }
            };
            out.insert(l.name.clone(), DeviceStat::new(l.counters, stats));
        }
        self.prev.retain(|_, (_, g, _)| *g == generation);
        self.prev_t = Some(at);
        out
    }
}

proptest::proptest! {
    /// Names that stay, come, go, come back, move and are listed twice,
    /// with counters that grow or reset: the same statistics as looking
    /// every line up by name, and a change of names is reported.
    #[test]
    fn the_same_answers_as_a_lookup_by_name(
        updates in proptest::collection::vec(
            proptest::collection::vec((0usize..5, 0u64..1000), 0..7), 1..12),
        keep in proptest::collection::vec(proptest::bool::ANY, 12),
    ) {
        let names = ["a", "b", "loop10", "loop2", "sda"];
        let mut fast = RateTracker::default();
        let mut slow = ByName::default();
        let mut last: Option<Vec<String>> = Some(Vec::new());
        let mut prev_lines: Vec<DiskStatsLine> = Vec::new();
        for (k, u) in updates.iter().enumerate() {
            // Often the same names in the same order again, as the kernel lists them.
            let lines: Vec<DiskStatsLine> = if keep[k] && !prev_lines.is_empty() {
                prev_lines.iter().map(|l| line(&l.name, l.counters.rd_ios + 7, 3)).collect()
            } else {
                u.iter().map(|&(n, ios)| line(names[n], ios, (ios / 2) as u32)).collect()
            };
            let t = k as f64;
            proptest::prop_assert_eq!(
                fast.update(t, &lines),
                slow.update(t, &lines).into_iter().collect::<DeviceStats>()
            );
            // Each name once, in the order it first came.
            let mut now: Vec<String> = Vec::new();
            for l in &lines {
                if !now.contains(&l.name) {
                    now.push(l.name.clone());
                }
            }
            // A change of names, and only that, is one (a name listed twice
            // on every tick is not).
            proptest::prop_assert_eq!(fast.names_changed(), last.as_ref() != Some(&now));
            last = Some(now);
            prev_lines = lines;
        }
    }
}

mod cache {
    use super::super::*;
    use crate::diskstats::Counters;
    use crate::fake::{FakeDisk, FakeTree};
    use crate::iostat::NoData;

    fn nr_of(snap: &Snapshot, name: &str) -> Option<u64> {
        snap.device(name).and_then(|d| d.queue.nr_requests)
    }

    fn tree() -> (tempfile::TempDir, FakeTree) {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        t.add(&FakeDisk::new("sda")).unwrap();
        t.set_diskstats(&[("sda", 8, 0, Counters::default())])
            .unwrap();
        (dir, t)
    }

    /// [`tree`] with sdb (8:16) too, both in diskstats.
    fn two_disks() -> (tempfile::TempDir, FakeTree) {
        let (d, t) = tree();
        t.add(&FakeDisk::new("sdb").dev(8, 16)).unwrap();
        t.set_diskstats(&[
            ("sda", 8, 0, Counters::default()),
            ("sdb", 8, 16, Counters::default()),
        ])
        .unwrap();
        (d, t)
    }

    /// PSI is read each tick where the kernel has it; the interval's share
    /// comes from the two totals; no file (an older kernel) is no figure.
    #[test]
    fn io_pressure_is_sampled_with_its_share_of_the_interval() {
        let (_d, t) = tree();
        let mut s = Sampler::new(t.root()).unwrap();
        let first = s.tick().unwrap();
        assert_eq!(first.pressure, None, "no pressure file: none");
        let psi = t.root().procfs().join("pressure");
        std::fs::create_dir_all(&psi).unwrap();
        let write = |total: u64| {
            std::fs::write(
                psi.join("io"),
                format!(
                    "some avg10=1.00 avg60=2.00 avg300=3.00 total={total}\n\
                     full avg10=0.50 avg60=0.10 avg300=0.00 total=7\n"
                ),
            )
            .unwrap();
        };
        write(1_000_000);
        let snap = s.tick().unwrap();
        let p = snap.pressure.unwrap();
        assert_eq!(p.file.some.avg60, 2.0);
        assert_eq!(p.some_pct, None, "no reading before");
        std::thread::sleep(Duration::from_millis(20));
        write(1_000_000 + 5_000);
        let snap = s.tick().unwrap();
        let p = snap.pressure.unwrap();
        let itv = snap.interval.unwrap();
        let want = 5_000.0 / (itv * 1e6) * 100.0;
        assert!(
            (p.some_pct.unwrap() - want.min(100.0)).abs() < 1e-9,
            "{p:?} {itv}"
        );
        assert_eq!(p.full_pct, Some(0.0));
    }

    #[test]
    fn queue_settings_are_cached_until_invalidated() {
        let (_d, t) = tree();
        let mut s = Sampler::new(t.root()).unwrap();
        s.set_refresh_every(Duration::from_secs(3600));
        std::fs::write(t.dev_dir("sda").join("queue/nr_requests"), "64\n").unwrap();
        let snap = s.tick().unwrap();
        assert!(!snap.refreshed);
        assert_eq!(nr_of(&snap, "sda"), Some(256), "not re-read every tick");
        s.invalidate();
        let snap = s.tick().unwrap();
        assert!(snap.refreshed);
        assert_eq!(nr_of(&snap, "sda"), Some(64));
        let snap = s.tick().unwrap();
        assert!(!snap.refreshed, "one refresh per invalidate");
    }

    #[test]
    fn queue_settings_are_re_read_after_the_refresh_period() {
        let (_d, t) = tree();
        let mut s = Sampler::new(t.root()).unwrap();
        s.set_refresh_every(Duration::from_millis(50));
        std::fs::write(t.dev_dir("sda").join("queue/nr_requests"), "32\n").unwrap();
        std::thread::sleep(Duration::from_millis(60));
        let snap = s.tick().unwrap();
        assert!(snap.refreshed);
        assert_eq!(nr_of(&snap, "sda"), Some(32));
    }

    /// With rows in view (a screen), the others are checked only every
    /// few periods, and at the next tick once they come into view.
    #[test]
    fn rows_out_of_view_are_checked_less_often_and_at_once_in_view() {
        let (_d, t) = two_disks();
        let opts = SamplerOptions {
            hotplug: HotPlug::Manual,
            ..SamplerOptions::default()
        };
        let mut s = Sampler::with_options(t.root(), opts).unwrap();
        s.set_refresh_every(Duration::from_millis(100));
        s.set_in_view(Some(&["sda".to_string()]));
        // Every row's first check, spread over one period.
        std::thread::sleep(Duration::from_millis(120));
        s.tick().unwrap();
        for d in ["sda", "sdb"] {
            std::fs::write(t.dev_dir(d).join("queue/nr_requests"), "32\n").unwrap();
        }
        std::thread::sleep(Duration::from_millis(120));
        let snap = s.tick().unwrap();
        assert_eq!(nr_of(&snap, "sda"), Some(32), "in view: every period");
        assert_eq!(nr_of(&snap, "sdb"), Some(256), "out of view: not yet");
        s.set_in_view(Some(&["sdb".to_string()]));
        let snap = s.tick().unwrap();
        assert_eq!(
            nr_of(&snap, "sdb"),
            Some(32),
            "checked as it came into view"
        );
        // sda, checked while out of view (so next due OFF_VIEW_EVERY
        // periods later), comes back into view a moment after that check:
        // checked a period after it, as if it had stayed in view.
        std::thread::sleep(Duration::from_millis(120));
        s.tick().unwrap();
        std::fs::write(t.dev_dir("sda").join("queue/nr_requests"), "8\n").unwrap();
        s.set_in_view(Some(&["sda".to_string()]));
        std::thread::sleep(Duration::from_millis(120));
        let snap = s.tick().unwrap();
        assert_eq!(
            nr_of(&snap, "sda"),
            Some(8),
            "a period after its last check"
        );
        // Every row counts as shown again: each within a period.
        std::fs::write(t.dev_dir("sda").join("queue/nr_requests"), "16\n").unwrap();
        s.set_in_view(None);
        std::thread::sleep(Duration::from_millis(120));
        let snap = s.tick().unwrap();
        assert_eq!(nr_of(&snap, "sda"), Some(16));
    }

    /// Off screen, a check reads the scheduler line only (the rest when it
    /// moved); a row that comes into view is read in full at its first
    /// check there.
    #[test]
    fn rows_out_of_view_read_their_scheduler_line_until_in_view() {
        let (_d, t) = two_disks();
        let mut s = manual(&t);
        s.set_refresh_every(Duration::from_millis(20));
        s.set_in_view(Some(&["sda".to_string()]));
        std::thread::sleep(Duration::from_millis(30));
        s.tick().unwrap();
        std::fs::write(t.dev_dir("sdb").join("queue/nr_requests"), "32\n").unwrap();
        // Off-screen checks come every 120 ms: several of them.
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(130));
            s.tick().unwrap();
        }
        let snap = s.tick().unwrap();
        assert_eq!(nr_of(&snap, "sdb"), Some(256), "off screen: scheduler only");
        // Its scheduler moved: that check reads the rest too.
        std::fs::write(t.dev_dir("sdb").join("queue/scheduler"), "kyber\n").unwrap();
        t.settle("sdb", &["none", "mq-deadline", "kyber", "bfq"], 64)
            .unwrap();
        std::thread::sleep(Duration::from_millis(130));
        let snap = s.tick().unwrap();
        let q = &snap.device("sdb").unwrap().queue;
        assert_eq!(q.active_label(), "kyber");
        assert_eq!(q.nr_requests, Some(64));
        // In view: read in full at its first check, the scheduler unmoved.
        std::fs::write(t.dev_dir("sdb").join("queue/nr_requests"), "16\n").unwrap();
        s.set_in_view(Some(&["sdb".to_string()]));
        std::thread::sleep(Duration::from_millis(30));
        let snap = s.tick().unwrap();
        assert_eq!(nr_of(&snap, "sdb"), Some(16), "in view: read in full");
    }

    #[test]
    fn hot_plug_refreshes_and_the_new_device_has_no_data_yet() {
        let (_d, t) = tree();
        let mut s = Sampler::new(t.root()).unwrap();
        s.set_refresh_every(Duration::from_secs(3600));
        t.add(&FakeDisk::new("sdb").dev(8, 16)).unwrap();
        t.set_diskstats(&[
            ("sda", 8, 0, Counters::default()),
            (
                "sdb",
                8,
                16,
                Counters {
                    rd_ios: 1_000_000,
                    ..Counters::default()
                },
            ),
        ])
        .unwrap();
        let snap = s.tick().unwrap();
        assert!(snap.refreshed, "a new name in diskstats is hot-plug");
        assert!(snap.device("sdb").is_some());
        assert_eq!(snap.stats["sdb"].stats, Err(NoData::FirstSample));
        assert!(snap.stats["sda"].stats.is_ok());
        // and when it goes away
        t.remove("sdb").unwrap();
        t.set_diskstats(&[("sda", 8, 0, Counters::default())])
            .unwrap();
        let snap = s.tick().unwrap();
        assert!(snap.refreshed);
        assert!(snap.device("sdb").is_none() && !snap.stats.contains_key("sdb"));
    }

    fn manual(fake_tree: &FakeTree) -> Sampler {
        let opts = SamplerOptions {
            hotplug: HotPlug::Manual,
            ..SamplerOptions::screen()
        };
        Sampler::with_options(fake_tree.root(), opts).unwrap()
    }

    fn change(name: &str, diskseq: u64) -> Uevent {
        let path = format!("/devices/virtual/block/{name}");
        let m = format!(
            "change@{path}\0ACTION=change\0DEVPATH={path}\0SUBSYSTEM=block\0\
             DEVNAME={name}\0DEVTYPE=disk\0DISKSEQ={diskseq}\0"
        );
        crate::uevent::parse(m.as_bytes()).unwrap()
    }

    fn reads(count: u64) -> Counters {
        Counters {
            rd_ios: count,
            rd_sectors: 8 * count,
            ..Counters::default()
        }
    }

    /// Detached loop devices stay in diskstats and /sys/block with size
    /// 0; an attach changes the size and diskseq, and no name.
    fn detached_loops(fake_tree: &FakeTree, count: u32) {
        let mut lines = Vec::new();
        for i in 0..count {
            let name = format!("loop{i}");
            fake_tree
                .add(&FakeDisk::new(&name).dev(7, i).size_bytes(0))
                .unwrap();
            std::fs::write(
                fake_tree.dev_dir(&name).join("diskseq"),
                format!("{}\n", 10 + i),
            )
            .unwrap();
            lines.push((name, i));
        }
        let stats: Vec<_> = lines
            .iter()
            .map(|(n, i)| (n.as_str(), 7, *i, Counters::default()))
            .collect();
        fake_tree.set_diskstats(&stats).unwrap();
    }

    fn attach(fake_tree: &FakeTree, name: &str, diskseq: u64) {
        std::fs::write(fake_tree.dev_dir(name).join("size"), "2048\n").unwrap();
        std::fs::write(
            fake_tree.dev_dir(name).join("diskseq"),
            format!("{diskseq}\n"),
        )
        .unwrap();
    }

    #[test]
    fn a_loop_attached_to_an_existing_node_shows_at_the_next_tick_with_rates() {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        detached_loops(&t, 2);
        let mut s = manual(&t);
        s.set_refresh_every(Duration::from_secs(3600));
        assert_eq!(s.tick().unwrap().device("loop1").unwrap().size_bytes, 0);
        attach(&t, "loop1", 99);
        s.push_uevent(change("loop1", 99));
        t.set_diskstats(&[
            ("loop0", 7, 0, Counters::default()),
            ("loop1", 7, 1, reads(500)),
        ])
        .unwrap();
        let snap = s.tick().unwrap();
        assert!(snap.refreshed);
        let d = snap.device("loop1").unwrap();
        assert_eq!(d.size_bytes, 2048 * 512);
        assert_eq!(d.diskseq, Some(99));
        assert_eq!(d.queue.active_label(), "mq-deadline");
        let itv = snap.interval.unwrap();
        let r_s = snap.ext("loop1").unwrap().r_s;
        assert!((r_s * itv - 500.0).abs() < 1e-6, "{r_s} over {itv}");
    }

    #[test]
    fn without_an_event_a_heard_sampler_waits_but_a_polling_one_sees_the_size() {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        detached_loops(&t, 1);
        let mut heard = manual(&t);
        heard.set_refresh_every(Duration::from_secs(3600));
        let opts = SamplerOptions {
            hotplug: HotPlug::Poll,
            ..SamplerOptions::default()
        };
        let mut polled = Sampler::with_options(t.root(), opts).unwrap();
        assert!(polled.hotplug_note().is_some());
        attach(&t, "loop0", 42);
        assert_eq!(heard.tick().unwrap().device("loop0").unwrap().size_bytes, 0);
        let snap = polled.tick().unwrap();
        assert_eq!(snap.device("loop0").unwrap().size_bytes, 2048 * 512);
        assert_eq!(snap.device("loop0").unwrap().diskseq, Some(42));
    }

    #[test]
    fn a_storm_of_attaches_is_read_in_one_tick() {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        detached_loops(&t, 1000);
        let mut s = manual(&t);
        for i in 0..1000 {
            attach(&t, &format!("loop{i}"), 5000 + i);
            s.push_uevent(change(&format!("loop{i}"), 5000 + i));
        }
        let snap = s.tick().unwrap();
        assert!(snap.devices.iter().all(|d| d.size_bytes > 0));
        assert!(snap.devices.iter().all(|d| d.queue.has_scheduler()));
    }

    #[test]
    fn events_for_vanished_or_unknown_devices_are_harmless() {
        let (_d, t) = tree();
        let mut s = manual(&t);
        t.add(&FakeDisk::new("sdb").dev(8, 16)).unwrap();
        t.remove("sdb").unwrap();
        s.push_uevent(change("sdb", 1)); // gone between the event and the read
        s.push_uevent(change("sdz", 2)); // never there
        let path = "/devices/virtual/net/lo";
        let net = format!("add@{path}\0ACTION=add\0DEVPATH={path}\0SUBSYSTEM=net\0");
        s.push_uevent(crate::uevent::parse(net.as_bytes()).unwrap());
        std::fs::write(t.dev_dir("sda").join("size"), "garbage\n").unwrap();
        s.push_uevent(change("sda", 1)); // an unreadable size is 0, not a panic
        let snap = s.tick().unwrap();
        assert!(snap.device("sdb").is_none() && snap.device("sdz").is_none());
        assert_eq!(snap.device("sda").unwrap().size_bytes, 0);
    }

    #[test]
    fn identity_is_read_once_per_diskseq() {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        detached_loops(&t, 1);
        attach(&t, "loop0", 7);
        let mut s = manual(&t);
        let model = t.dev_dir("loop0").join("device/model");
        std::fs::create_dir_all(model.parent().unwrap()).unwrap();
        std::fs::write(&model, "second\n").unwrap();
        s.push_uevent(change("loop0", 7));
        let snap = s.tick().unwrap();
        assert_eq!(snap.device("loop0").unwrap().model, None, "same diskseq");
        attach(&t, "loop0", 8);
        s.push_uevent(change("loop0", 8));
        let snap = s.tick().unwrap();
        assert_eq!(
            snap.device("loop0").unwrap().model.as_deref(),
            Some("second")
        );
    }

    #[test]
    fn rows_past_the_first_screen_are_filled_over_the_first_ticks() {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        for i in 0..300 {
            t.add(
                &FakeDisk::new(&format!("loop{i}"))
                    .dev(7, i)
                    .hw_queue_depth(128),
            )
            .unwrap();
        }
        t.set_diskstats(&[]).unwrap();
        let mut s = manual(&t);
        let first = s.take_baseline().unwrap();
        assert!(s.take_baseline().is_none());
        let read = |snap: &Snapshot| {
            snap.devices
                .iter()
                .filter(|d| d.hw_queue_depth.is_some())
                .count()
        };
        assert_eq!(read(&first), FIRST_ROWS);
        // The rows a table shows first: loop0..loop63 in natural order.
        assert!(first.device("loop63").unwrap().hw_queue_depth.is_some());
        assert!(first.device("loop64").unwrap().hw_queue_depth.is_none());
        // A device named to be selected is read before the first frame too,
        // wherever its row is: a change key may act on it at once.
        let mut named = Sampler::with_options(
            t.root(),
            SamplerOptions {
                hotplug: HotPlug::Manual,
                first: Some("loop250".into()),
                ..SamplerOptions::screen()
            },
        )
        .unwrap();
        let named = named.take_baseline().unwrap();
        assert_eq!(read(&named), FIRST_ROWS + 1);
        assert!(!named.device("loop250").unwrap().queue.is_unread());
        assert!(named.device("loop249").unwrap().queue.is_unread());
        let mut snap = s.tick().unwrap();
        for _ in 0..3 {
            snap = s.tick().unwrap();
        }
        assert_eq!(read(&snap), 300);
        // Without a screen (a recording) every row is read at once.
        let mut whole = Sampler::with_options(
            t.root(),
            SamplerOptions {
                hotplug: HotPlug::Manual,
                ..SamplerOptions::default()
            },
        )
        .unwrap();
        assert_eq!(read(&whole.take_baseline().unwrap()), 300);
        let mut lazy = manual(&t);
        lazy.complete();
        assert_eq!(
            lazy.devices()
                .iter()
                .filter(|d| d.hw_queue_depth.is_some())
                .count(),
            300
        );
    }

    #[test]
    fn a_scheduler_changed_behind_its_back_shows_within_the_period() {
        let (_d, t) = tree();
        let mut s = manual(&t);
        s.set_refresh_every(Duration::from_millis(50));
        std::fs::write(t.dev_dir("sda").join("queue/scheduler"), "kyber\n").unwrap();
        t.settle("sda", &["none", "mq-deadline", "kyber", "bfq"], 256)
            .unwrap();
        std::thread::sleep(Duration::from_millis(60));
        let snap = s.tick().unwrap();
        let q = &snap.device("sda").unwrap().queue;
        assert_eq!(q.active_label(), "kyber");
        assert!(q.tunables.contains_key("read_lat_nsec"), "{:?}", q.tunables);
    }

    /// Each scheduler line is read through a file kept open from the first
    /// read, as many as the descriptor budget allows (the rest by path); a
    /// change made since shows through it; a device gone gives its back.
    #[test]
    fn scheduler_files_are_kept_open_within_the_budget() {
        let (_d, t) = two_disks();
        let mut s = manual(&t);
        assert_eq!(s.open_files.open, 2, "kept open from the first read");
        assert!(s.entries.values().all(|e| e.sched_file.is_some()));
        s.set_refresh_every(Duration::from_millis(50));
        // sysfs shows a write through an open file, as a fake tree's
        // in-place write does.
        let switch = |d: &str, to: &str| {
            std::fs::write(t.dev_dir(d).join("queue/scheduler"), format!("{to}\n")).unwrap();
            t.settle(d, &["none", "mq-deadline", "kyber", "bfq"], 256)
                .unwrap();
        };
        switch("sdb", "kyber");
        std::thread::sleep(Duration::from_millis(60));
        let snap = s.tick().unwrap();
        assert_eq!(snap.device("sdb").unwrap().queue.active_label(), "kyber");
        assert_eq!(s.open_files.open, 2, "no file opened twice");

        // A budget of one: the other device is read by path, and still seen.
        s.open_files.cap = 1;
        for e in s.entries.values_mut() {
            e.sched_file = None;
        }
        s.open_files.open = 0;
        s.invalidate();
        s.tick().unwrap();
        assert_eq!(s.open_files.open, 1);
        switch("sda", "bfq");
        switch("sdb", "bfq");
        std::thread::sleep(Duration::from_millis(60));
        let snap = s.tick().unwrap();
        for d in ["sda", "sdb"] {
            assert_eq!(snap.device(d).unwrap().queue.active_label(), "bfq", "{d}");
        }
        assert_eq!(s.open_files.open, 1);

        // Gone: its kept file, if any, is counted out.
        let held = s
            .entries
            .values()
            .filter(|e| e.sched_file.is_some())
            .count();
        t.remove("sda").unwrap();
        t.remove("sdb").unwrap();
        s.push_uevent(change("sda", 7));
        s.push_uevent(change("sdb", 8));
        s.tick().unwrap();
        assert_eq!((held, s.open_files.open), (1, 0));
    }

    #[test]
    fn a_named_device_is_all_that_is_read() {
        let (_d, t) = two_disks();
        let opts = SamplerOptions {
            only: Some(vec!["sdb".into()]),
            identity: false,
            hotplug: HotPlug::Manual,
            first_rows: None,
            first: None,
        };
        let mut s = Sampler::with_options(t.root(), opts).unwrap();
        let snap = s.tick().unwrap();
        assert_eq!(snap.devices.len(), 1);
        let d = snap.device("sdb").unwrap();
        assert_eq!(d.queue.nr_requests, Some(256));
        assert_eq!(d.hw_queue_depth, None, "no identity for watch");
        assert!(d.queue.tunables.is_empty(), "no tunables for watch");
        // Its numbers come from diskstats: what finds its kernel histograms.
        assert_eq!((d.major, d.minor), (8, 16));
        let base = s.take_baseline().unwrap();
        let d = base.device("sdb").unwrap();
        assert_eq!((d.major, d.minor), (8, 16), "already in the first snapshot");
    }

    /// A device that comes while `watch` runs gets its numbers too (from
    /// its diskstats line, at the tick that finds it).
    #[test]
    fn a_device_that_comes_later_has_its_numbers_without_identity() {
        let (_d, t) = tree();
        let opts = SamplerOptions {
            identity: false,
            hotplug: HotPlug::Manual,
            ..SamplerOptions::default()
        };
        let mut s = Sampler::with_options(t.root(), opts).unwrap();
        assert!(s.tick().unwrap().device("sdb").is_none());
        t.add(&FakeDisk::new("sdb").dev(8, 16)).unwrap();
        t.set_diskstats(&[
            ("sda", 8, 0, Counters::default()),
            ("sdb", 8, 16, Counters::default()),
        ])
        .unwrap();
        let snap = s.tick().unwrap();
        let d = snap.device("sdb").unwrap();
        assert_eq!((d.major, d.minor), (8, 16));
        // and sda's stay as they were, ticks later
        let snap = s.tick().unwrap();
        let d = snap.device("sda").unwrap();
        assert_eq!((d.major, d.minor), (8, 0));
    }

    #[test]
    fn natural_order() {
        let mut v = ["loop10", "loop2", "sda", "loop1", "nvme10n1", "nvme2n1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            ["loop1", "loop2", "loop10", "nvme2n1", "nvme10n1", "sda"]
        );
    }

    #[test]
    fn the_first_tick_after_new_is_a_real_interval() {
        let (_d, t) = tree();
        let mut s = Sampler::new(t.root()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let snap = s.tick().unwrap();
        let itv = snap.interval.unwrap();
        assert!((0.1..1.0).contains(&itv), "{itv}");
        assert!(snap.stats["sda"].stats.is_ok());
    }

    /// In flight by direction comes from `inflight`, read only for a device
    /// diskstats counts some in flight for: an idle one is 0/0 unread.
    #[test]
    fn in_flight_is_split_from_inflight_only_where_some_are() {
        let (_d, t) = tree();
        let mut s = manual(&t);
        // A stale file an idle device's read would show.
        std::fs::write(t.dev_dir("sda").join("inflight"), "       9        9\n").unwrap();
        let snap = s.tick().unwrap();
        assert_eq!(snap.stats["sda"].in_flight, Some(InFlight::default()));
        std::fs::write(t.dev_dir("sda").join("inflight"), "       3        1\n").unwrap();
        let busy = Counters {
            in_flight: 4,
            ..Counters::default()
        };
        t.set_diskstats(&[("sda", 8, 0, busy)]).unwrap();
        let snap = s.tick().unwrap();
        assert_eq!(
            snap.stats["sda"].in_flight,
            Some(InFlight {
                reads: 3,
                writes: 1
            })
        );
        // Unreadable: the split is unknown, the total stays in the counters.
        std::fs::write(t.dev_dir("sda").join("inflight"), "junk\n").unwrap();
        let snap = s.tick().unwrap();
        assert_eq!(snap.stats["sda"].in_flight, None);
        assert_eq!(snap.stats["sda"].counters.in_flight, 4);
    }
}

/// The statistics behave as the map they replaced: in name order, a name
/// given twice keeps its last numbers, and a removal keeps the order (a
/// lookup is a binary search over it).
#[test]
fn device_stats_keep_name_order_as_a_map_would() {
    let st = |r: u64| {
        DeviceStat::new(
            Counters {
                rd_ios: r,
                ..Counters::default()
            },
            Err(NoData::FirstSample),
        )
    };
    let mut s: DeviceStats = [
        ("sdb", 1),
        ("loop10", 2),
        ("sda", 3),
        ("loop2", 4),
        ("sdb", 5),
    ]
    .into_iter()
    .map(|(n, r)| (n.to_string(), st(r)))
    .collect();
    let all = |s: &DeviceStats| -> Vec<(String, u64)> {
        s.iter()
            .map(|(n, st)| (n.clone(), st.counters.rd_ios))
            .collect()
    };
    let want = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
        v.iter().map(|(n, r)| (n.to_string(), *r)).collect()
    };
    assert_eq!(
        all(&s),
        want(&[("loop10", 2), ("loop2", 4), ("sda", 3), ("sdb", 5)])
    );
    assert_eq!(s["sdb"].counters.rd_ios, 5);
    assert_eq!(s.len(), 4);
    assert!(s.get("sdc").is_none() && !s.contains_key("sdc"));
    assert_eq!(s.remove("sda").map(|o| o.counters.rd_ios), Some(3));
    assert!(s.remove("sda").is_none());
    s.get_mut("loop2").unwrap().counters.rd_ios = 8;
    assert_eq!(all(&s), want(&[("loop10", 2), ("loop2", 8), ("sdb", 5)]));
    s.clear();
    assert!(s.is_empty());
}
