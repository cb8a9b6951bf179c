//! Golden files of generated udev rules and scripts, on a fake tree with one
//! device of each kind and a fake udev database. Host, version and time are
//! injected, so the snapshots are the same on every machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::export::{ExportItem, Format, MatchStrategy, RenderOptions, render};
use blktune_core::fake::FakeDisk;
use blktune_core::tuner::Wanted;

use crate::common;

use common::fake_host::{FakeHost, kyber};

/// nvme0n1 (wwid in sysfs), sda SATA SSD (ID_SERIAL in the udev db), sdb HDD
/// (ID_WWN in the udev db), vda virtio (serial in sysfs), loop0 (nothing),
/// zram0 (no scheduler).
fn host() -> FakeHost {
    let h = FakeHost::new(&[
        FakeDisk::new("nvme0n1")
            .dev(259, 0)
            .model("Samsung SSD 980 PRO 1TB", None)
            .ids(Some("S5GXNX0R123456"), Some("eui.002538b911b12345"))
            .active("none")
            .size_bytes(1_000_204_886_016),
        FakeDisk::new("sda")
            .dev(8, 0)
            .model("Samsung SSD 860", Some("ATA"))
            .size_bytes(500_107_862_016),
        FakeDisk::new("sdb")
            .dev(8, 16)
            .model("WDC WD40EFRX-68N", Some("ATA"))
            .rotational(true)
            .size_bytes(4_000_787_030_016),
        FakeDisk::new("vda")
            .dev(254, 0)
            .ids(Some("vd-serial-01"), None)
            .rotational(true),
        FakeDisk::new("loop0").dev(7, 0).active("none"),
        FakeDisk::new("zram0").dev(253, 0).no_queue(),
    ]);
    h.udev(
        "b8:0",
        "S:disk/by-id/ata-Samsung_SSD_860_S3Z1NB0K123456\nE:ID_SERIAL=Samsung_SSD_860_S3Z1NB0K123456\nE:ID_BUS=ata\n",
    );
    h.udev(
        "b8:16",
        "E:ID_WWN=0x50014ee2b5e12345\nE:ID_SERIAL=WDC_WD40EFRX-68N_WD-WCC7K1234567\n",
    );
    h
}

fn opts(fake_host: &FakeHost, strategy: Option<MatchStrategy>, format: Format) -> RenderOptions {
    RenderOptions {
        strategy,
        ..fake_host.golden_opts(format)
    }
}

fn deadline() -> Wanted {
    Wanted {
        scheduler: Some("mq-deadline".into()),
        tunables: vec![("read_expire".into(), "100".into())],
        nr_requests: Some(128),
        read_ahead_kb: Some(1024),
        knobs: Vec::new(),
    }
}

fn golden(
    name: &str,
    fake_host: &FakeHost,
    items: Vec<ExportItem>,
    strategy: Option<MatchStrategy>,
) {
    let r = render(&items, &opts(fake_host, strategy, Format::Udev)).unwrap();
    let shown = format!(
        "{}\n--- warnings ---\n{}\n--- suggested: {}",
        r.text,
        r.warnings.join("\n"),
        r.suggested_path.display()
    );
    insta::assert_snapshot!(name, shown);
}

#[test]
fn nvme_default_uses_sysfs_wwid() {
    let h = host();
    golden("nvme_default", &h, vec![h.item("nvme0n1", kyber())], None);
}

#[test]
fn sata_ssd_default_uses_udev_serial() {
    let h = host();
    golden("ssd_default", &h, vec![h.item("sda", kyber())], None);
}

#[test]
fn hdd_default_uses_udev_wwn() {
    let h = host();
    golden("hdd_default", &h, vec![h.item("sdb", deadline())], None);
}

#[test]
fn virtio_default_uses_sysfs_serial() {
    let h = host();
    golden("virtio_default", &h, vec![h.item("vda", deadline())], None);
}

#[test]
fn loop_default_falls_back_to_kernel_with_warning() {
    let h = host();
    golden("loop_default", &h, vec![h.item("loop0", kyber())], None);
}

#[test]
fn device_without_scheduler_exports_read_ahead_only() {
    let h = host();
    let s = Wanted {
        read_ahead_kb: Some(512),
        ..Wanted::default()
    };
    golden("zram_default", &h, vec![h.item("zram0", s)], None);
}

#[test]
fn ssd_with_each_strategy() {
    let h = host();
    for (name, st) in [
        ("ssd_match_id", MatchStrategy::Id),
        ("ssd_match_model", MatchStrategy::Model),
        ("ssd_match_class", MatchStrategy::Class),
        ("ssd_match_kernel", MatchStrategy::Kernel),
    ] {
        golden(name, &h, vec![h.item("sda", kyber())], Some(st));
    }
}

#[test]
fn nvme_and_hdd_classes() {
    let h = host();
    golden(
        "nvme_match_class",
        &h,
        vec![h.item("nvme0n1", kyber())],
        Some(MatchStrategy::Class),
    );
    golden(
        "hdd_match_class",
        &h,
        vec![h.item("sdb", deadline())],
        Some(MatchStrategy::Class),
    );
}

#[test]
fn several_devices_make_one_file_with_one_block_each() {
    let h = host();
    let items = vec![
        h.item("nvme0n1", kyber()),
        h.item("sda", kyber()),
        h.item("sdb", deadline()),
        h.item("loop0", kyber()),
    ];
    let r = render(&items, &opts(&h, None, Format::Udev)).unwrap();
    assert_eq!(r.text.matches("ACTION==").count(), 4);
    insta::assert_snapshot!("all_default", r.text);
}

#[test]
fn script_format() {
    let h = host();
    let mut sdb = h.item("sdb", deadline());
    sdb.measured = Some("r_await 12.0 ms -> 4.1 ms over 60 s of fio randread".into());
    let items = vec![h.item("sda", kyber()), sdb, h.item("loop0", kyber())];
    let r = render(&items, &opts(&h, None, Format::Script)).unwrap();
    assert_eq!(r.suggested_path.to_str(), Some("blktune-apply.sh"));
    insta::assert_snapshot!("script_default", r.text);
}

#[test]
fn measured_text_goes_into_the_header() {
    let h = host();
    let mut item = h.item("sda", kyber());
    item.measured = Some("before: r_await 3.2 ms\nafter:  r_await 1.1 ms\n".into());
    let r = render(&[item], &opts(&h, None, Format::Udev)).unwrap();
    assert!(r.text.contains("#   measured: before: r_await 3.2 ms\n"));
    assert!(r.text.contains("#   measured: after:  r_await 1.1 ms\n"));
}

/// mq-deadline with the queue settings an admin reaches for in a latency
/// incident: write-back throttling `wbt` (0 turns it off, -1 restores the
/// kernel's default) and `nomerges`.
fn deadline_with(wbt: &str, nomerges: &str) -> Wanted {
    Wanted {
        knobs: vec![
            ("wbt_lat_usec".into(), wbt.into()),
            ("nomerges".into(), nomerges.into()),
        ],
        ..deadline()
    }
}

/// The lines of `text` from the one that is `heading` to the next blank one.
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| *l != heading)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn tuned_writes_the_queue_settings_in_its_sysfs_section_after_the_scheduler() {
    let h = host();
    let r = render(
        &[h.item("sdb", deadline_with("0", "2"))],
        &opts(&h, None, Format::Tuned),
    )
    .unwrap();
    insta::assert_snapshot!("tuned_queue_settings", r.text);
    // The scheduler is the disk plugin's (applied first: priority); the
    // knobs go with nr_requests through the sysfs plugin, after it, in the
    // catalogue's order: a switch to or from bfq resets wbt_lat_usec.
    assert!(
        section(&r.text, "[disk_sdb]").contains(&"elevator=mq-deadline"),
        "{}",
        r.text
    );
    let sysfs = section(&r.text, "[sysfs_sdb]");
    let at = |line: &str| sysfs.iter().position(|l| *l == line);
    let nr = at("/sys/block/sdb/queue/nr_requests=128");
    let wbt = at("/sys/block/sdb/queue/wbt_lat_usec=0");
    let merges = at("/sys/block/sdb/queue/nomerges=2");
    assert!(
        nr.is_some() && nr < wbt && wbt < merges,
        "nr_requests, then wbt_lat_usec off, then nomerges: {sysfs:?}"
    );
}

#[test]
fn the_script_writes_the_queue_settings_after_the_scheduler() {
    let h = host();
    let r = render(
        &[h.item("sdb", deadline_with("-1", "1"))],
        &opts(&h, None, Format::Script),
    )
    .unwrap();
    insta::assert_snapshot!("script_queue_settings", r.text);
    let steps: Vec<&str> = r
        .text
        .lines()
        .skip_while(|l| !l.starts_with("apply_1()"))
        .take_while(|l| *l != "}")
        .map(str::trim)
        .collect();
    assert_eq!(
        steps[1..],
        [
            "sched \"$1\" 'mq-deadline' &&",
            "put \"$1\" queue/iosched/read_expire '100' &&",
            "put \"$1\" queue/nr_requests '128' &&",
            "put \"$1\" queue/read_ahead_kb '1024' &&",
            "put_default \"$1\" queue/wbt_lat_usec '-1' &&",
            "put \"$1\" queue/nomerges '1'",
        ],
        "{}",
        r.text
    );
}

/// Values the kernel would refuse (wbt_lat_usec below -1, nomerges above 2)
/// or not take as written (a fraction) make no tuned profile and no script.
#[test]
fn queue_settings_the_kernel_would_refuse_are_not_exported() {
    let h = host();
    for format in [Format::Tuned, Format::Script, Format::Udev] {
        for (wbt, nomerges) in [("-2", "0"), ("0", "3"), ("1.5", "0"), ("2000", "-1")] {
            let r = render(
                &[h.item("sdb", deadline_with(wbt, nomerges))],
                &opts(&h, None, format),
            );
            assert!(
                r.is_err(),
                "{format:?} wbt_lat_usec={wbt} nomerges={nomerges}: {:?}",
                r.map(|r| r.text)
            );
        }
    }
}
