//! Unit tests of rule generation on fake devices.

use super::*;
use crate::device::BlockDevice;
use crate::fake::{FakeDisk, FakeTree};
use crate::kernel_hz::KernelHz;

fn device(fake_disk: FakeDisk) -> BlockDevice {
    let dir = tempfile::tempdir().unwrap();
    let t = FakeTree::new(dir.path()).unwrap();
    t.add(&fake_disk).unwrap();
    let root = t.root();
    let name = root.device(&fake_disk.name).unwrap();
    BlockDevice::read(&root, &name)
}

fn opts() -> RenderOptions {
    RenderOptions {
        host: "testhost".into(),
        version: "0.0.0-test".into(),
        ..RenderOptions::default()
    }
}

fn kyber64() -> Wanted {
    Wanted {
        scheduler: Some("kyber".into()),
        tunables: vec![("read_lat_nsec".into(), "1000000".into())],
        nr_requests: Some(64),
        read_ahead_kb: Some(256),
        knobs: Vec::new(),
    }
}

fn ssd() -> FakeDisk {
    FakeDisk::new("sda")
        .model("Samsung SSD 860 EVO", Some("ATA"))
        .ids(Some("S3Z1NB0K123456"), Some("naa.5002538e4063dd7b"))
}

/// The rule's lines without comments, continuations joined.
fn rule_body(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\\\n  ", "")
}

#[test]
fn assignments_come_in_the_safe_order() {
    // Even when the caller lists them the other way round in its head:
    // `Wanted` has no order between fields, so the generator must impose it.
    let item = ExportItem::new(device(ssd()), kyber64(), BTreeMap::new());
    let text = render(&[item], &opts()).unwrap().text;
    let body = rule_body(&text);
    let pos = |needle: &str| {
        body.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing in {body}"))
    };
    let sched = pos("ATTR{queue/scheduler}=\"kyber\"");
    let tun = pos("ATTR{queue/iosched/read_lat_nsec}=\"1000000\"");
    let nr = pos("ATTR{queue/nr_requests}=\"64\"");
    let ra = pos("ATTR{queue/read_ahead_kb}=\"256\"");
    assert!(sched < tun && tun < nr && nr < ra, "{body}");
    // Guards and the match come before any write.
    assert!(pos("ENV{DEVTYPE}==\"disk\"") < pos("ATTRS{wwid}"));
    assert!(pos("ATTRS{wwid}") < sched);
}

#[test]
fn default_match_prefers_udev_ids_then_sysfs_then_kernel() {
    let d = device(ssd());
    let mut env = BTreeMap::new();
    let spec = |env: &BTreeMap<String, String>, d: &BlockDevice| {
        let item = ExportItem::new(d.clone(), kyber64(), env.clone());
        matching::choose(&item, None).unwrap()
    };
    assert_eq!(spec(&env, &d).0.keys[0].key, "ATTRS{wwid}");
    env.insert("ID_SERIAL".into(), "Samsung_SSD_860_S3Z1".into());
    assert_eq!(spec(&env, &d).0.keys[0].key, "ENV{ID_SERIAL}");
    env.insert("ID_WWN".into(), "0x5002538e4063dd7b".into());
    assert_eq!(
        spec(&env, &d).0.to_owned().render_keys(),
        "ENV{ID_WWN}==\"0x5002538e4063dd7b\""
    );
    let bare = device(FakeDisk::new("loop0").dev(7, 0));
    let (s, w) = spec(&BTreeMap::new(), &bare);
    assert_eq!(s.render_keys(), "KERNEL==\"loop0\"");
    assert!(w.iter().any(|w| w.contains("no stable id")), "{w:?}");
    assert!(w.iter().any(|w| w.contains("not stable")), "{w:?}");
}

#[test]
fn explicit_id_without_one_is_an_error() {
    let item = ExportItem::new(device(FakeDisk::new("loop0")), kyber64(), BTreeMap::new());
    let o = RenderOptions {
        strategy: Some(MatchStrategy::Id),
        ..opts()
    };
    let e = render(&[item], &o).unwrap_err();
    assert!(matches!(e, ExportError::NoId { .. }), "{e}");
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn unsafe_ids_are_skipped_and_unsafe_models_refused() {
    let d = device(
        FakeDisk::new("sdc")
            .model("Evil\"Model", None)
            .ids(Some("SER*IAL"), Some("naa.1234")),
    );
    let mut env = BTreeMap::new();
    env.insert("ID_SERIAL".into(), "has\\backslash".into());
    let item = ExportItem::new(d, kyber64(), env);
    // id: the unsafe ENV{ID_SERIAL} is skipped, the clean wwid used.
    let r = render(std::slice::from_ref(&item), &opts()).unwrap();
    assert!(r.text.contains("ATTRS{wwid}==\"naa.1234\""), "{}", r.text);
    assert!(!rule_body(&r.text).contains("ID_SERIAL"), "{}", r.text);
    assert!(r.warnings.iter().any(|w| w.contains("ENV{ID_SERIAL}")));
    // model: refused, nothing rendered.
    let o = RenderOptions {
        strategy: Some(MatchStrategy::Model),
        ..opts()
    };
    let e = render(&[item], &o).unwrap_err();
    assert!(
        e.to_string().contains("double quote") && e.to_string().contains("'sdc'"),
        "{e}"
    );
}

#[test]
fn unsafe_assigned_values_are_refused() {
    let d = device(ssd());
    for s in [
        Wanted {
            scheduler: Some("kyber\", RUN+=\"/bin/sh".into()),
            ..Wanted::default()
        },
        Wanted {
            scheduler: Some("kyber".into()),
            tunables: vec![("read_lat_nsec".into(), "1 2".into())],
            ..Wanted::default()
        },
        Wanted {
            scheduler: Some("kyber".into()),
            tunables: vec![("../../x".into(), "1".into())],
            ..Wanted::default()
        },
    ] {
        let e = render(&[ExportItem::new(d.clone(), s, BTreeMap::new())], &opts()).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
    }
}

#[test]
fn unknown_scheduler_lists_the_available_ones() {
    let s = Wanted {
        scheduler: Some("cfq".into()),
        ..Wanted::default()
    };
    let e = render(
        &[ExportItem::new(device(ssd()), s, BTreeMap::new())],
        &opts(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("none, mq-deadline, kyber, bfq"),
        "{e}"
    );
}

#[test]
fn device_without_scheduler_gets_read_ahead_only_and_its_own_guard() {
    let d = device(FakeDisk::new("zram0").dev(253, 0).no_queue());
    let item = ExportItem::live(d.clone(), BTreeMap::new(), &KernelHz::unknown());
    assert_eq!(item.settings.summary(), "read_ahead_kb=128");
    let r = render(&[item], &opts()).unwrap();
    assert!(
        r.text.contains("TEST==\"queue/read_ahead_kb\""),
        "{}",
        r.text
    );
    assert!(!r.text.contains("TEST==\"queue/scheduler\""), "{}", r.text);
    let bad = ExportItem::new(d, kyber64(), BTreeMap::new());
    let e = render(&[bad], &opts()).unwrap_err();
    assert!(e.to_string().contains("no I/O scheduler"), "{e}");
}

#[test]
fn live_settings_skip_default_tunables() {
    let mut d = device(ssd());
    assert_eq!(
        live_settings(&d, &KernelHz::unknown()).summary(),
        "scheduler=mq-deadline nr_requests=256 read_ahead_kb=128"
    );
    d.queue.tunables.insert("read_expire".into(), "100".into());
    d.queue.tunables.insert("async_depth".into(), "48".into());
    assert_eq!(
        live_settings(&d, &KernelHz::unknown()).summary(),
        "scheduler=mq-deadline read_expire=100 nr_requests=256 read_ahead_kb=128"
    );
}

/// An untouched bfq disk of an HZ=1000 kernel (`timeout_sync` 125, as the
/// procfs capture shows) exports no tunable; at HZ=250, 125 is a change.
#[test]
fn live_settings_take_jiffies_defaults_from_the_kernels_hz() {
    let mut d = device(FakeDisk::new("sda").dev(8, 0).active("bfq"));
    d.queue.tunables.insert("timeout_sync".into(), "125".into());
    let thousand = live_settings(&d, &KernelHz::known(1000));
    assert!(thousand.tunables.is_empty(), "{}", thousand.summary());
    let stored = KernelHz::of_devices(std::slice::from_ref(&d));
    assert_eq!(stored.candidates(), [1000]);
    assert!(live_settings(&d, &stored).tunables.is_empty());
    let two_fifty = live_settings(&d, &KernelHz::known(250));
    assert_eq!(
        two_fifty.tunables,
        [("timeout_sync".to_string(), "125".to_string())]
    );
}

#[test]
fn a_new_scheduler_keeps_the_live_numbers_and_drops_the_old_tunables() {
    let live = Wanted {
        scheduler: Some("mq-deadline".into()),
        tunables: vec![("read_expire".into(), "100".into())],
        nr_requests: Some(64),
        read_ahead_kb: Some(512),
        knobs: Vec::new(),
    };
    let over = Wanted {
        scheduler: Some("bfq".into()),
        ..Wanted::default()
    };
    assert_eq!(
        with_overrides(&live, &over).summary(),
        "scheduler=bfq nr_requests=64 read_ahead_kb=512"
    );
    // A shoot-out winner was measured with what the switch left: no nr_requests.
    assert_eq!(
        with_switch_defaults(&live, &over).summary(),
        "scheduler=bfq read_ahead_kb=512"
    );
    let explicit = Wanted {
        nr_requests: Some(32),
        ..over.clone()
    };
    assert_eq!(
        with_switch_defaults(&live, &explicit).summary(),
        "scheduler=bfq nr_requests=32 read_ahead_kb=512"
    );
    let same = Wanted {
        scheduler: Some("mq-deadline".into()),
        nr_requests: Some(128),
        tunables: vec![("read_expire".into(), "50".into())],
        ..Wanted::default()
    };
    assert_eq!(
        with_overrides(&live, &same).summary(),
        "scheduler=mq-deadline read_expire=50 nr_requests=128 read_ahead_kb=512"
    );
}

#[test]
fn same_match_different_settings_conflict_same_settings_share_a_rule() {
    let a = device(ssd());
    let b = device(
        FakeDisk::new("sdb")
            .dev(8, 16)
            .model("Samsung SSD 860 EVO", Some("ATA")),
    );
    let o = RenderOptions {
        strategy: Some(MatchStrategy::Model),
        ..opts()
    };
    let ia = ExportItem::new(a, kyber64(), BTreeMap::new());
    let ib = ExportItem::new(b.clone(), kyber64(), BTreeMap::new());
    let r = render(&[ia.clone(), ib], &o).unwrap();
    assert_eq!(r.text.matches("ACTION==").count(), 1, "{}", r.text);
    let other = Wanted {
        scheduler: Some("bfq".into()),
        ..Wanted::default()
    };
    let e = render(&[ia, ExportItem::new(b, other, BTreeMap::new())], &o).unwrap_err();
    assert!(matches!(e, ExportError::Conflict { .. }), "{e}");
}

#[test]
fn class_rule_names_the_other_disks_it_hits_here() {
    let a = device(ssd());
    let b = device(FakeDisk::new("sdb").dev(8, 16));
    let n = device(FakeDisk::new("nvme0n1").dev(259, 0));
    let o = RenderOptions {
        strategy: Some(MatchStrategy::Class),
        host_devices: vec![a.clone(), b, n],
        ..opts()
    };
    let r = render(&[ExportItem::new(a, kyber64(), BTreeMap::new())], &o).unwrap();
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("also matches sdb on this host")),
        "{:?}",
        r.warnings
    );
    assert!(
        r.text
            .contains("KERNEL==\"sd*\", ATTR{queue/rotational}==\"0\""),
        "{}",
        r.text
    );
}

#[test]
fn class_rule_for_a_loop_disk_stays_among_loop_disks() {
    let lo = device(FakeDisk::new("loop0").dev(7, 0).rotational(true));
    let host = vec![
        lo.clone(),
        device(FakeDisk::new("loop1").dev(7, 1).rotational(true)),
        device(FakeDisk::new("loop2").dev(7, 2)),
        device(FakeDisk::new("vda").dev(254, 0).rotational(true)),
        device(FakeDisk::new("sda").dev(8, 0).rotational(true)),
        device(FakeDisk::new("dm-0").dev(252, 0).rotational(true)),
    ];
    let o = RenderOptions {
        strategy: Some(MatchStrategy::Class),
        host_devices: host,
        ..opts()
    };
    let r = render(&[ExportItem::new(lo, kyber64(), BTreeMap::new())], &o).unwrap();
    assert!(
        rule_body(&r.text).contains("KERNEL==\"loop*\", ATTR{queue/rotational}==\"1\""),
        "{}",
        r.text
    );
    let also: Vec<&String> = r
        .warnings
        .iter()
        .filter(|w| w.contains("also matches"))
        .collect();
    assert_eq!(
        also,
        ["'loop0': the class rule also matches loop1 on this host"],
        "{:?}",
        r.warnings
    );
}

#[test]
fn class_patterns_follow_the_device_family() {
    for (name, rot, want) in [
        (
            "sdb",
            false,
            "KERNEL==\"sd*\", ATTR{queue/rotational}==\"0\"",
        ),
        (
            "vdb",
            true,
            "KERNEL==\"vd*\", ATTR{queue/rotational}==\"1\"",
        ),
        ("xvda", true, "KERNEL==\"xvd*\""),
        ("nvme1n1", false, "KERNEL==\"nvme*\""),
        ("mmcblk0", false, "KERNEL==\"mmcblk*\""),
        ("dm-3", false, "KERNEL==\"dm-*\""),
        ("nbd0", false, "KERNEL==\"nbd*\""),
    ] {
        let d = device(FakeDisk::new(name).rotational(rot));
        let spec = match_spec(
            &ExportItem::new(d, kyber64(), BTreeMap::new()),
            MatchStrategy::Class,
        )
        .unwrap();
        assert!(
            spec.render_keys().starts_with(want),
            "{name}: {}",
            spec.render_keys()
        );
    }
}

#[test]
fn id_rule_names_another_disk_with_the_same_serial() {
    // Two paths to one LUN share ID_SERIAL: the id rule sets both.
    let a = device(FakeDisk::new("sda").dev(8, 0));
    let b = device(FakeDisk::new("sdb").dev(8, 16));
    let env: BTreeMap<String, String> = [("ID_SERIAL".to_string(), "LUN-1".to_string())].into();
    let o = RenderOptions {
        strategy: Some(MatchStrategy::Id),
        host_devices: vec![a.clone(), b],
        host_udev_env: [
            ("sda".to_string(), env.clone()),
            ("sdb".to_string(), env.clone()),
        ]
        .into(),
        ..opts()
    };
    let r = render(&[ExportItem::new(a, kyber64(), env)], &o).unwrap();
    assert!(
        r.warnings
            .iter()
            .any(|w| w == "'sda': the id rule also matches sdb on this host"),
        "{:?}",
        r.warnings
    );
}

#[test]
fn switching_to_none_warns_about_a_carried_nr_requests() {
    let d = device(FakeDisk::new("loop0").dev(7, 0).active("kyber"));
    let over = Wanted {
        scheduler: Some("none".into()),
        ..Wanted::default()
    };
    let s = with_overrides(&live_settings(&d, &KernelHz::unknown()), &over);
    let r = render(
        &[ExportItem::new(d, s, BTreeMap::new())],
        &RenderOptions {
            strategy: Some(MatchStrategy::Kernel),
            ..opts()
        },
    )
    .unwrap();
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("was set under kyber; under none the kernel refuses")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn nr_requests_above_the_queue_depth_under_none_is_not_exported() {
    let kernel = RenderOptions {
        strategy: Some(MatchStrategy::Kernel),
        ..opts()
    };
    let to_none = |nr: Option<u64>| Wanted {
        scheduler: Some("none".into()),
        nr_requests: nr,
        ..Wanted::default()
    };
    // Carried over from kyber (256 on this disk), above the depth: refused.
    let mut disk = FakeDisk::new("loop0")
        .dev(7, 0)
        .active("kyber")
        .hw_queue_depth(128);
    disk.nr_requests = 256;
    let d = device(disk);
    let s = with_overrides(&live_settings(&d, &KernelHz::unknown()), &to_none(None));
    assert_eq!(s.nr_requests, Some(256));
    let e = render(&[ExportItem::new(d.clone(), s, BTreeMap::new())], &kernel).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "'loop0': nr_requests 256 is above the hardware queue depth (128), the most the kernel takes under none; give --nr-requests 128 or less"
    );
    // Within the depth: written, and no warning about it.
    let s = with_overrides(
        &live_settings(&d, &KernelHz::unknown()),
        &to_none(Some(128)),
    );
    let r = render(&[ExportItem::new(d, s, BTreeMap::new())], &kernel).unwrap();
    assert!(
        r.text.contains("ATTR{queue/nr_requests}=\"128\""),
        "{}",
        r.text
    );
    assert!(
        !r.warnings.iter().any(|w| w.contains("queue depth")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn id_from_udev_env_needs_a_late_file_name() {
    assert!(sorts_after_persistent_storage(Path::new(
        DEFAULT_RULES_PATH
    )));
    assert!(sorts_after_persistent_storage(Path::new(
        "/x/99-local.rules"
    )));
    assert!(!sorts_after_persistent_storage(Path::new(
        "/x/10-early.rules"
    )));
    assert!(!sorts_after_persistent_storage(Path::new(
        "/x/60-persistent-storage.rules"
    )));
}

#[test]
fn header_install_line_follows_the_output_path() {
    let mut env = BTreeMap::new();
    env.insert("ID_WWN".to_string(), "0x5000".to_string());
    let item = ExportItem::new(device(ssd()), kyber64(), env);
    let header = |out: Option<&str>| {
        let o = RenderOptions {
            output: out.map(PathBuf::from),
            ..opts()
        };
        let text = render(std::slice::from_ref(&item), &o).unwrap().text;
        text.lines()
            .find(|l| l.starts_with("# Install:"))
            .unwrap()
            .to_string()
    };
    assert_eq!(
        header(None),
        "# Install:  save this text as /etc/udev/rules.d/61-blktune.rules (mode 0644)"
    );
    assert_eq!(
        header(Some("/etc/udev/rules.d/70-disks.rules")),
        "# Install:  in place"
    );
    assert_eq!(
        header(Some("/tmp/99-disks.rules")),
        "# Install:  sudo install -m 0644 /tmp/99-disks.rules /etc/udev/rules.d/99-disks.rules"
    );
    // A name that would run before 60-persistent-storage.rules is not suggested.
    assert_eq!(
        header(Some("/tmp/10-disks.rules")),
        "# Install:  sudo install -m 0644 /tmp/10-disks.rules /etc/udev/rules.d/61-blktune.rules"
    );
}

mod properties {
    use super::*;
    use crate::export::check::{parse_rules, udev_match};
    use proptest::prelude::*;

    proptest! {
        /// A value the safety check lets through means exactly itself to udev:
        /// it parses back unchanged and matches only itself.
        #[test]
        fn safe_values_are_literal(v in "[ !#&'()+,./0-9:;<=>@A-Z^_`a-z{}~-]{1,24}") {
            prop_assume!(check_match_value(&v).is_none());
            let line = format!("ENV{{ID_SERIAL}}==\"{v}\", ATTR{{queue/nr_requests}}=\"8\"\n");
            let rules = parse_rules(&line);
            prop_assert_eq!(rules.len(), 1);
            prop_assert_eq!(rules[0].invalid.as_deref(), None);
            prop_assert_eq!(&rules[0].tokens[0].value, &v);
            prop_assert!(udev_match(&v, &v));
            let longer = format!("{v}x");
            prop_assert!(!udev_match(&v, &longer));
            prop_assert!(!udev_match(&v, ""));
        }

        /// Whatever is asked for, the writes come in the safe order.
        #[test]
        fn writes_always_in_safe_order(
            sched in proptest::option::of(prop_oneof!["none", "mq-deadline", "kyber", "bfq"]),
            nr in proptest::option::of(4u64..2048),
            ra in proptest::option::of(0u64..4096),
            tun in proptest::bool::ANY,
        ) {
            let tunables = match (&sched, tun) {
                (Some(s), true) if s == "kyber" => vec![("read_lat_nsec".to_string(), "1000".to_string())],
                (Some(s), true) if s == "mq-deadline" => vec![("read_expire".to_string(), "100".to_string())],
                _ => Vec::new(),
            };
            let s = Wanted { scheduler: sched, tunables, nr_requests: nr, read_ahead_kb: ra, knobs: Vec::new() };
            prop_assume!(!s.is_empty());
            static SSD: std::sync::OnceLock<BlockDevice> = std::sync::OnceLock::new();
            let d = SSD.get_or_init(|| device(ssd())).clone();
            let text = render(&[ExportItem::new(d, s, BTreeMap::new())], &opts()).unwrap().text;
            let rules = parse_rules(&text);
            let attrs: Vec<String> = rules[0]
                .tokens
                .iter()
                .filter(|t| t.key == "ATTR" && t.op == crate::export::check::Op::Assign)
                .map(|t| t.attr.clone().unwrap_or_default())
                .collect();
            let rank = |a: &str| match a {
                "queue/scheduler" => 0,
                "queue/nr_requests" => 2,
                "queue/read_ahead_kb" => 3,
                _ => 1,
            };
            let ranks: Vec<i32> = attrs.iter().map(|a| rank(a)).collect();
            let mut sorted = ranks.clone();
            sorted.sort();
            prop_assert_eq!(ranks, sorted, "{}", text);
        }
    }
}

#[test]
fn a_value_the_kernel_would_clamp_is_refused_and_jiffies_rounding_is_noted() {
    let d = device(ssd());
    let deadline = |name: &str, v: &str| Wanted {
        scheduler: Some("mq-deadline".into()),
        tunables: vec![(name.into(), v.into())],
        ..Wanted::default()
    };
    let item = |s| ExportItem::new(d.clone(), s, BTreeMap::new());
    let e = render(&[item(deadline("front_merges", "7"))], &opts()).unwrap_err();
    assert_eq!(e.exit_code(), 2, "{e}");
    assert!(e.to_string().contains("out of range: 0 to 1"), "{e}");
    // The rule keeps what was asked (in plain decimal) and says what the kernel will keep.
    let text = render(&[item(deadline("read_expire", "0250"))], &opts())
        .unwrap()
        .text;
    assert!(
        text.contains("ATTR{queue/iosched/read_expire}=\"250\""),
        "{text}"
    );
    assert!(
        text.contains(
            "#   note:  read_expire is kept in jiffies: 250 reads back as 252 at HZ=250\n"
        ),
        "{text}"
    );
    let text = render(&[item(deadline("read_expire", "500"))], &opts())
        .unwrap()
        .text;
    assert!(!text.contains("note:"), "{text}");
}

/// The default match of `disk` with these udev properties, and its warnings.
fn default_match(disk: FakeDisk, env: &[(&str, &str)]) -> (String, Vec<String>) {
    let env: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let item = ExportItem::new(device(disk), kyber64(), env);
    let (spec, warnings) = matching::choose(&item, None).unwrap();
    (spec.render_keys(), warnings)
}

#[test]
fn dm_ids_fall_back_from_the_sysfs_uuid_to_udevs_then_to_the_names() {
    let uuid = "LVM-Qm3vYk0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3aB4cD5eF6gH7iJ8";
    let udev = [("DM_UUID", uuid), ("DM_NAME", "vg0-root")];
    let dm = || FakeDisk::new("dm-1").dev(253, 1).no_queue();
    let stable = |(keys, warnings): (String, Vec<String>), want: &str| {
        assert_eq!(keys, want);
        assert!(warnings.is_empty(), "{want}: {warnings:?}");
    };
    // sysfs first: the file is on the device itself, no rule order needed.
    stable(
        default_match(dm().dm("vg0-root", uuid, &[]), &udev),
        &format!("ATTR{{dm/uuid}}==\"{uuid}\""),
    );
    // No dm/ files (a capture without them): udev's DM_UUID, then DM_NAME.
    stable(
        default_match(dm(), &udev),
        &format!("ENV{{DM_UUID}}==\"{uuid}\""),
    );
    stable(
        default_match(dm(), &udev[1..]),
        "ENV{DM_NAME}==\"vg0-root\"",
    );
    // A dm device made without a uuid (`dmsetup create` without `-u`): its name.
    stable(
        default_match(dm().attr("dm/name", "scratch").attr("dm/uuid", ""), &[]),
        "ATTR{dm/name}==\"scratch\"",
    );
    // Nothing at all: the kernel name, with one warning that says what was looked for.
    let (keys, warnings) = default_match(dm(), &[]);
    assert_eq!(keys, "KERNEL==\"dm-1\"");
    assert_eq!(
        warnings,
        [
            "'dm-1' has no stable id (no dm/uuid or dm/name in sysfs, no DM_UUID/DM_NAME in the udev database): matching its kernel name instead, which is not stable across boots"
        ]
    );
}

#[test]
fn md_ids_are_the_sysfs_uuid_never_udevs_other_spelling() {
    let md = || {
        FakeDisk::new("md0")
            .dev(9, 0)
            .no_queue()
            .attr("md/level", "raid1")
    };
    let sysfs_uuid = "3f2e1d0c-4b5a-6978-8796-a5b4c3d2e1f0";
    // mdadm spells the same uuid in four words (63-md-raid-arrays.rules).
    let udev = [("MD_UUID", "3f2e1d0c:4b5a6978:8796a5b4:c3d2e1f0")];
    let (keys, warnings) = default_match(md().attr("md/uuid", sysfs_uuid), &udev);
    assert_eq!(keys, format!("ATTR{{md/uuid}}==\"{sysfs_uuid}\""));
    assert!(warnings.is_empty(), "{warnings:?}");
    // Without md/uuid (older kernels) the stack's uuid is filled from
    // udev's MD_UUID for `list`; a rule on ATTR{md/uuid} with that spelling
    // would never match, so the kernel name it is, with the warning.
    let mut d = device(md());
    d.stack
        .as_mut()
        .unwrap()
        .name_from_udev(&BTreeMap::from([(udev[0].0.into(), udev[0].1.into())]));
    assert_eq!(
        d.stack.as_ref().unwrap().uuid.as_deref(),
        Some("3f2e1d0c:4b5a6978:8796a5b4:c3d2e1f0")
    );
    let env = BTreeMap::from([(udev[0].0.to_string(), udev[0].1.to_string())]);
    let (spec, warnings) = matching::choose(&ExportItem::new(d, kyber64(), env), None).unwrap();
    assert_eq!(spec.render_keys(), "KERNEL==\"md0\"");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("'md0' has no stable id (no md/uuid in sysfs)")),
        "{warnings:?}"
    );
}

#[test]
fn nvme_ids_fall_back_from_wwid_to_nguid_then_eui_without_the_scsi_warning() {
    let nguid = "002538b9-11b1-2345-0025-38b911b12345";
    let eui = "002538b911b12345";
    let ns = || FakeDisk::new("nvme0n1").dev(259, 0);
    let (keys, warnings) = default_match(
        ns().ids(None, Some("eui.002538b911b12345"))
            .attr("nguid", nguid)
            .attr("eui", eui),
        &[],
    );
    assert_eq!(keys, "ATTRS{wwid}==\"eui.002538b911b12345\"");
    assert!(warnings.is_empty(), "{warnings:?}");
    let (keys, warnings) = default_match(ns().attr("nguid", nguid).attr("eui", eui), &[]);
    assert_eq!(keys, format!("ATTR{{nguid}}==\"{nguid}\""));
    assert!(warnings.is_empty(), "{warnings:?}");
    let (keys, warnings) = default_match(ns().attr("eui", eui), &[]);
    assert_eq!(keys, format!("ATTR{{eui}}==\"{eui}\""));
    assert!(warnings.is_empty(), "{warnings:?}");
    // udev's ID_WWN comes first; the controller's ID_SERIAL, shared by
    // every namespace, is never used.
    let (keys, _) = default_match(
        ns().attr("eui", eui),
        &[
            ("ID_WWN", "eui.002538b911b12345"),
            ("ID_SERIAL", "Samsung_980_S5GX"),
        ],
    );
    assert_eq!(keys, "ENV{ID_WWN}==\"eui.002538b911b12345\"");
    let (keys, _) = default_match(ns(), &[("ID_SERIAL", "Samsung_980_S5GX")]);
    assert_eq!(keys, "KERNEL==\"nvme0n1\"");
}

#[test]
fn a_scsi_disks_sysfs_wwid_is_used_with_a_warning_udevs_ids_without() {
    let (keys, warnings) = default_match(ssd(), &[]);
    assert_eq!(keys, "ATTRS{wwid}==\"naa.5002538e4063dd7b\"");
    assert!(
        warnings.iter().any(|w| w.contains(
            "'sda': matching the sysfs wwid \"naa.5002538e4063dd7b\", whose form changes across kernels"
        ) && w.contains("give --udev-db")),
        "{warnings:?}"
    );
    let (keys, warnings) = default_match(ssd(), &[("ID_WWN_WITH_EXTENSION", "0x5002538e4063dd7b")]);
    assert_eq!(keys, "ENV{ID_WWN_WITH_EXTENSION}==\"0x5002538e4063dd7b\"");
    assert!(warnings.is_empty(), "{warnings:?}");
}
