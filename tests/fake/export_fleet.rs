//! Export for fleets: tuned profiles (golden), the WWN with extension, zoned
//! devices left alone, multipath paths warned about, the apply hint naming the
//! devices, and `--check` over the whole udev search path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::export::{Format, MatchStrategy, RenderOptions, render};
use blktune_core::fake::FakeDisk;
use blktune_core::tuner::Wanted;
use std::fs;
use std::process::Command;

use crate::common;

use common::fake_host::{FakeHost, kyber};

/// sda (udev: ID_WWN and ID_WWN_WITH_EXTENSION), sdb (ID_SERIAL), nvme0n1
/// (sysfs wwid only), sdz (zoned), sdm (a path of the multipath dm-0).
fn host() -> FakeHost {
    let h = FakeHost::new(&[
        FakeDisk::new("sda").dev(8, 0).model("LUN", Some("NETAPP")),
        FakeDisk::new("sdb")
            .dev(8, 16)
            .model("WDC WD40EFRX-68N", Some("ATA"))
            .rotational(true),
        FakeDisk::new("nvme0n1")
            .dev(259, 0)
            .ids(None, Some("eui.002538b911b12345"))
            .active("none"),
        FakeDisk::new("sdz").dev(8, 240).rotational(true),
        FakeDisk::new("sdm").dev(8, 48).stacked(&["dm-0"], &[]),
        FakeDisk::new("dm-0").dev(252, 0).stacked(&[], &["sdm"]),
    ]);
    let t = &h.tree;
    fs::write(t.dev_dir("sdz").join("queue/zoned"), "host-managed\n").unwrap();
    fs::write(t.dev_dir("sda").join("queue/zoned"), "none\n").unwrap();
    // holders/dm-0 is a link to the dm device, which has dm/uuid.
    fs::create_dir_all(t.dev_dir("dm-0").join("dm")).unwrap();
    fs::write(
        t.dev_dir("dm-0").join("dm/uuid"),
        "mpath-3600a098038303053\n",
    )
    .unwrap();
    let l = t.dev_dir("sdm").join("holders/dm-0");
    fs::remove_file(&l).ok();
    fs::remove_dir_all(&l).ok();
    std::os::unix::fs::symlink(t.dev_dir("dm-0"), &l).unwrap();
    h.udev(
        "b8:0",
        "E:ID_WWN=0x600a098038303053\nE:ID_WWN_WITH_EXTENSION=0x600a0980383030536f2b\nE:ID_SERIAL=3600a0980\n",
    );
    h.udev("b8:16", "E:ID_SERIAL=WDC_WD40EFRX-68N_WD-WCC7K1234567\n");
    fs::create_dir_all(h.path("tuned")).unwrap();
    h
}

fn opts(
    fake_host: &FakeHost,
    strategy: Option<MatchStrategy>,
    include: Option<&str>,
) -> RenderOptions {
    RenderOptions {
        strategy,
        tuned_include: include.map(str::to_owned),
        ..fake_host.golden_opts(Format::Tuned)
    }
}

#[test]
fn tuned_profile_by_wwn_with_extension() {
    let h = host();
    let r = render(
        &[h.item("sda", kyber())],
        &opts(&h, None, Some("virtual-guest")),
    )
    .unwrap();
    insta::assert_snapshot!("tuned_sda_wwn_ext", r.text);
    assert!(r.text.contains("include=virtual-guest\n"));
    assert!(
        r.text
            .contains("devices_udev_regex=^ID_WWN_WITH_EXTENSION=0x600a0980383030536f2b$\n")
    );
}

#[test]
fn tuned_profile_of_several_devices_and_matches() {
    let h = host();
    let only_ra = Wanted {
        read_ahead_kb: Some(4096),
        ..Wanted::default()
    };
    let r = render(
        &[h.item("sdb", kyber()), h.item("nvme0n1", only_ra.clone())],
        &opts(&h, None, None),
    )
    .unwrap();
    insta::assert_snapshot!("tuned_sdb_nvme_no_active_profile", r.text);
    // No active profile: nothing included (throughput-performance would
    // also change the CPU governor and sysctls).
    assert!(!r.text.contains("\ninclude="), "{}", r.text);
    let class = render(
        &[h.item("nvme0n1", only_ra)],
        &opts(&h, Some(MatchStrategy::Class), Some("blktune")),
    )
    .unwrap();
    insta::assert_snapshot!("tuned_nvme_class", class.text);
    assert!(!class.text.contains("\ninclude="), "never includes itself");
}

#[test]
fn cli_tuned_includes_the_active_profile() {
    let h = host();
    let tuned = h.path("etc/tuned");
    fs::create_dir_all(&tuned).unwrap();
    fs::write(tuned.join("active_profile"), "balanced\n").unwrap();
    let o = h.run(&[
        "export",
        "sdb",
        "--format",
        "tuned",
        "--config-root",
        h.dir.path().to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("[main]\n") && out.contains("include=balanced\n"),
        "{out}"
    );
    assert!(out.contains("[disk_sdb]\ntype=disk\npriority=-1\ndevices_udev_regex=^ID_SERIAL=WDC_WD40EFRX-68N_WD-WCC7K1234567$\nelevator=mq-deadline\nreadahead=128\n"), "{out}");
    assert!(
        out.contains("[sysfs_sdb]\ntype=sysfs\n/sys/block/sdb/queue/nr_requests=256\n"),
        "{out}"
    );
}

#[test]
fn udev_rule_matches_the_wwn_with_extension() {
    let h = host();
    let o = h.run(&["export", "sda"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("ENV{ID_WWN_WITH_EXTENSION}==\"0x600a0980383030536f2b\""),
        "{out}"
    );
    assert!(!out.contains("ENV{ID_WWN}=="), "{out}");
}

#[test]
fn zoned_devices_are_left_alone() {
    let h = host();
    let o = h.run(&["export", "sdz"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'sdz' is a zoned device (queue/zoned host-managed)"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn multipath_paths_are_warned_about() {
    let h = host();
    let o = h.run(&["export", "sdm", "--match", "kernel"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("'sdm' is a path of the multipath device dm-0: only dm-0's scheduler matters"),
        "{err}"
    );
    let o = h.run(&["export", "sdb"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("multipath"));
}

#[test]
fn apply_hint_triggers_only_the_devices_concerned() {
    let h = host();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("61-blktune.rules");
    let o = h.run(&["export", "sda", "sdb", "-o", file.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout.contains(
            "sudo udevadm trigger --action=change /sys/class/block/sda /sys/class/block/sdb\n"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("--subsystem-match"), "{stdout}");
    let text = fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("#           sudo udevadm trigger --action=change /sys/class/block/sda /sys/class/block/sdb  (on this host)\n"),
        "{text}"
    );
}

/// A fake configuration tree: blktune's rule in /etc, a distribution rule
/// before it, a vendor rule after it that switches the scheduler, a masked
/// file, /lib a link to /usr/lib, and tuned active with a disk plugin.
fn config_tree(fake_host: &FakeHost) -> std::path::PathBuf {
    let root = fake_host.path("conf");
    let etc = root.join("etc/udev/rules.d");
    let usr = root.join("usr/lib/udev/rules.d");
    fs::create_dir_all(&etc).unwrap();
    fs::create_dir_all(&usr).unwrap();
    std::os::unix::fs::symlink("usr/lib", root.join("lib")).unwrap();
    let ours = etc.join("61-blktune.rules");
    let o = fake_host.run(&[
        "export",
        "sdb",
        "-s",
        "kyber",
        "--nr-requests",
        "64",
        "-o",
        ours.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    fs::write(
        usr.join("60-ioschedulers.rules"),
        "ACTION==\"add|change\", KERNEL==\"sd*\", ATTR{queue/scheduler}=\"bfq\"\n",
    )
    .unwrap();
    fs::write(
        usr.join("99-vendor.rules"),
        "ACTION==\"add|change\", SUBSYSTEM==\"block\", ENV{DEVTYPE}==\"disk\", KERNEL==\"sdb\", ATTR{queue/scheduler}=\"mq-deadline\"\n",
    )
    .unwrap();
    // Masked: the /etc link to /dev/null hides the /usr/lib file of that name.
    fs::write(
        usr.join("70-masked.rules"),
        "KERNEL==\"sdb\", ATTR{queue/read_ahead_kb}=\"4\"\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/null", etc.join("70-masked.rules")).unwrap();
    let tuned = root.join("etc/tuned");
    fs::create_dir_all(root.join("usr/lib/tuned/throughput-performance")).unwrap();
    fs::create_dir_all(&tuned).unwrap();
    fs::write(tuned.join("active_profile"), "throughput-performance\n").unwrap();
    fs::write(
        root.join("usr/lib/tuned/throughput-performance/tuned.conf"),
        "[main]\nsummary=x\n\n[cpu]\ngovernor=performance\n\n[disk]\nreadahead=>4096\n",
    )
    .unwrap();
    root
}

#[test]
fn check_without_file_walks_the_search_path_and_names_what_undoes_blktune() {
    let h = host();
    let root = config_tree(&h);
    let o = h.run(&["export", "--check", "--config-root", root.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let etc = root.join("etc/udev/rules.d");
    let usr = root.join("usr/lib/udev/rules.d");
    assert!(
        out.starts_with(&format!(
            "udev search path: {}, {}\n",
            etc.display(),
            usr.display()
        )),
        "/run is absent and /lib is /usr/lib: {out}"
    );
    assert!(
        out.contains(&format!(
            "3 rules files; written by blktune: {}\n",
            etc.join("61-blktune.rules").display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "  problem: {} line 1 writes the scheduler (mq-deadline) after blktune's rule, which resets nr_requests=64\n",
            usr.join("99-vendor.rules").display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "  problem: {} line 1 sets queue/scheduler=mq-deadline after blktune's {} set kyber\n",
            usr.join("99-vendor.rules").display(),
            etc.join("61-blktune.rules").display()
        )),
        "{out}"
    );
    assert!(
        !out.contains("read_ahead_kb=4 "),
        "the masked file does not run: {out}"
    );
    assert!(
        out.contains("warning: tuned is active (profile 'throughput-performance'; 'throughput-performance' has a disk plugin)"),
        "{out}"
    );
    assert!(out.ends_with("3 problems found (exit code 3)\n"), "{out}");
    // JSON carries the same.
    let o = h.run(&[
        "export",
        "--check",
        "--json",
        "--config-root",
        root.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let sdb = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == "sdb")
        .unwrap();
    assert_eq!(sdb["undone"].as_array().unwrap().len(), 2, "{sdb}");
    assert!(v["tuned"].is_string());
}

#[test]
fn check_without_file_is_quiet_when_blktune_runs_last() {
    let h = host();
    let root = config_tree(&h);
    fs::remove_file(root.join("usr/lib/udev/rules.d/99-vendor.rules")).unwrap();
    fs::write(root.join("etc/tuned/active_profile"), "").unwrap();
    let o = h.run(&["export", "--check", "--config-root", root.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("  scheduler=kyber  ("), "{out}");
    assert!(out.contains("  nr_requests=64  ("), "{out}");
    assert!(out.ends_with("no problems found\n"), "{out}");
}

/// The real search path and sysfs of this machine: only reads.
#[test]
fn check_without_file_on_the_real_search_path() {
    let o = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(["export", "--check"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.starts_with("udev search path: /etc/udev/rules.d"),
        "{out}"
    );
    assert!(
        out.lines()
            .nth(1)
            .is_some_and(|l| l.contains(" rules files; written by blktune: ")),
        "{out}"
    );
}

/// A class rule made on sdb (rotational, sd*) carries a zoned guard, so the
/// check finds it leaves the zoned sdz (also rotational, also sd*) alone.
#[test]
fn class_rules_leave_zoned_disks_alone() {
    let h = host();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("61-blktune.rules");
    let o = h.run(&[
        "export",
        "sdb",
        "--match",
        "class",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = fs::read_to_string(&file).unwrap();
    assert!(
        text.contains(
            "KERNEL==\"sd*\", ATTR{queue/rotational}==\"1\", ATTR{queue/zoned}==\"none\""
        ),
        "{text}"
    );
    let o = h.run(&["export", "--check", file.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let sets = |name: &str| {
        v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["device"] == name)
            .map(|d| !d["actions"][1]["result"].as_array().unwrap().is_empty())
            .unwrap()
    };
    assert!(sets("sdb"), "{v}");
    assert!(!sets("sdz"), "the zoned disk is left alone: {v}");
}
