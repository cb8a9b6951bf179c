//! Stacked devices on a fake RAID + LVM + multipath + NVMe server
//! ([`common::fake_host::stack_disks`]; this kernel has no dm or md module):
//! `list` names them and draws what they sit on, the JSON says which disks
//! schedule their I/O, exports match them by uuid (never `KERNEL==`), a
//! scheduler is refused on a stack with the disks named, and a device is
//! taken by any of its names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::fake_host::{FakeHost, stack_disks};
use serde_json::Value;

fn host() -> FakeHost {
    FakeHost::new(&stack_disks())
}

/// The default `list`: lsblk's tree of the disks and what is stacked on
/// them, stacks by their names; the NVMe head without its hidden paths.
#[test]
fn list_draws_the_stacks_under_what_they_sit_on() {
    let h = host();
    let out = h.stdout(&["list"]);
    let width = out.find("TYPE").unwrap();
    let names: Vec<String> = out
        .lines()
        .skip(1)
        .map(|l| {
            l.chars()
                .take(width)
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "nvme0n1",
            "sda",
            "├─sda1",
            "│ └─md0",
            "└─sda2",
            "  └─dm-0 luks-root",
            "    ├─dm-1 vg0-root",
            "    └─dm-2 vg0-home",
            "sdb",
            "└─sdb1",
            "  └─md0",
            "sdc",
            "└─dm-3 mpatha",
            "sdd",
            "└─dm-3 mpatha",
        ],
        "{out}"
    );
    let row = |name: &str| out.lines().find(|l| l.contains(name)).unwrap().to_string();
    assert!(row("dm-1 vg0-root").contains(" lvm "), "{out}");
    assert!(row("dm-0 luks-root").contains(" crypt "), "{out}");
    assert!(row("└─md0").contains(" raid1 "), "{out}");
    assert!(row("dm-3 mpatha").contains("[mq-deadline]"), "{out}");
    assert!(row("sda ").contains("ATA     SAMSUNG MZ7LH960"), "{out}");
    assert!(row("└─sda2").contains(" part    10G "), "{out}");
    assert!(
        !out.contains("nvme0c0n1"),
        "the hidden path is not listed: {out}"
    );
    // --all: the paths under their head, every partition.
    let all = h.stdout(&["list", "--all"]);
    assert!(all.contains("├─nvme0c0n1"), "{all}");
    assert!(all.contains("└─nvme0c1n1"), "{all}");
}

/// `list --json`: each stack's kind, name, uuid, what it sits on and which
/// disks schedule its I/O.
#[test]
fn list_json_names_the_stacks_and_the_disks_under_them() {
    let h = host();
    let v: Vec<Value> = serde_json::from_str(&h.stdout(&["list", "--json"])).unwrap();
    let get = |n: &str| v.iter().find(|d| d["name"] == n).unwrap().clone();
    let names: Vec<&str> = v.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert!(!names.contains(&"nvme0c0n1"), "{names:?}");
    for (name, kind, stack_name, scheduled_on) in [
        ("dm-0", "crypt", Some("luks-root"), &["sda"][..]),
        ("dm-1", "lvm", Some("vg0-root"), &["sda"]),
        ("dm-3", "mpath", Some("mpatha"), &["dm-3"]),
        ("md0", "raid1", None, &["sda", "sdb"]),
        ("nvme0n1", "disk", None, &["nvme0c0n1", "nvme0c1n1"]),
        ("sda", "disk", None, &["sda"]),
    ] {
        let d = get(name);
        assert_eq!(d["kind"], kind, "{name}");
        assert_eq!(d["stack_name"].as_str(), stack_name, "{name}");
        assert_eq!(d["scheduled_on"], serde_json::json!(scheduled_on), "{name}");
    }
    assert_eq!(get("dm-1")["uuid"].as_str().unwrap()[..4], *"LVM-");
    assert_eq!(get("md0")["uuid"], "3f2e1d0c-4b5a-6978-8796-a5b4c3d2e1f0");
    assert_eq!(get("md0")["slaves"], serde_json::json!(["sda1", "sdb1"]));
    assert_eq!(get("dm-0")["holders"], serde_json::json!(["dm-1", "dm-2"]));
    assert_eq!(
        get("nvme0n1")["paths"],
        serde_json::json!(["nvme0c0n1", "nvme0c1n1"])
    );
    assert_eq!(get("sda")["vendor"], "ATA");
    assert_eq!(get("sda")["model"], "SAMSUNG MZ7LH960");
}

/// dm, md and multipath exports match the stack's uuid from sysfs: no
/// `KERNEL==`, no "not stable" warning; each named by any of its names.
#[test]
fn stack_exports_match_their_uuids_never_their_kernel_names() {
    let h = host();
    let o = h.run(&["export", "/dev/mapper/vg0-root", "md0", "253:3", "dm-0"]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("blktune: /dev/mapper/vg0-root is dm-1"),
        "{err}"
    );
    assert!(err.contains("blktune: 253:3 is dm-3"), "{err}");
    assert!(!err.contains("not stable"), "{err}");
    let rules: Vec<&str> = out.lines().filter(|l| l.starts_with("ACTION")).collect();
    assert_eq!(rules.len(), 4, "{out}");
    assert!(rules.iter().all(|r| !r.contains("KERNEL==")), "{out}");
    for key in [
        "ATTR{dm/uuid}==\"LVM-Qm3vYk0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3aB4cD5eF6gH7iJ8\"",
        "ATTR{md/uuid}==\"3f2e1d0c-4b5a-6978-8796-a5b4c3d2e1f0\"",
        "ATTR{dm/uuid}==\"mpath-3600a098038303053453f463045756f4b\"",
        "ATTR{dm/uuid}==\"CRYPT-LUKS2-6a5b4c3d2e1f-luks-root\"",
    ] {
        assert!(out.contains(key), "{key}: {out}");
    }
    // The request-based map keeps its scheduler; the bio-based ones their read-ahead.
    assert!(
        out.contains("ATTR{queue/scheduler}=\"mq-deadline\""),
        "{out}"
    );
    assert!(
        out.contains("# dm-1: lvm vg0-root, 253:1, 20G, uuid LVM-"),
        "{out}"
    );
    // And the check of what was exported finds nothing wrong.
    let file = h.out("61-blktune.rules");
    std::fs::write(&file, out.as_bytes()).unwrap();
    let c = h.run(&["export", "--check", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&c.stdout);
    assert_eq!(c.status.code(), Some(0), "{text}");
    assert!(
        text.contains("dm-1 (lvm)") || text.contains("dm-1 ("),
        "{text}"
    );
}

/// An NVMe path's export says that its id is the head's and every path's.
#[test]
fn exporting_an_nvme_path_warns_that_its_id_names_the_head_too() {
    let h = host();
    let o = h.run(&["export", "nvme0c0n1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("'nvme0c0n1' is a path of the NVMe multipath device nvme0n1"),
        "{err}"
    );
    assert!(err.contains("also matches nvme0c1n1"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("ATTRS{wwid}==\"eui.0025388b91b1a2b3\""),
        "{out}"
    );
}

/// A scheduler on a stack without one is refused, naming the disks that
/// schedule its I/O and the other stacks they carry.
#[test]
fn a_scheduler_on_a_stack_names_the_disks_under_it() {
    let h = host();
    let set = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_blktune"))
            .arg("--sysfs-root")
            .arg(h.path("sys"))
            .arg("--proc-root")
            .arg(h.path("proc"))
            .arg("set")
            .args(args)
            .env("BLKTUNE_JOURNAL_DIR", h.path("journal"))
            .output()
            .unwrap()
    };
    let o = set(&["/dev/mapper/vg0-root", "-s", "kyber"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("dm-1 (lvm vg0-root) has no I/O scheduler: its I/O is scheduled on sda (sda also carries dm-2, md0)"),
        "{err}"
    );
    // Nothing was written or journalled.
    assert!(
        std::fs::read_dir(h.path("journal"))
            .unwrap()
            .next()
            .is_none()
    );
    // Read-ahead is the stack's own.
    let o = set(&["dm-1", "--read-ahead-kb", "4096"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A device is taken by any name a user has for it, wherever a device is
/// taken; a partition by any of its names is the partition error.
#[test]
fn devices_are_taken_by_any_of_their_names() {
    let h = host();
    let watch = std::process::Command::new(env!("CARGO_BIN_EXE_blktune"))
        .arg("--sysfs-root")
        .arg(h.path("sys"))
        .arg("--proc-root")
        .arg(h.path("proc"))
        .args([
            "watch",
            "-c",
            "1",
            "-i",
            "100ms",
            "/dev/sda",
            "8:16",
            "/dev/mapper/mpatha",
        ])
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&watch.stdout),
        String::from_utf8_lossy(&watch.stderr),
    );
    assert!(watch.status.success(), "{err}");
    assert_eq!(
        err,
        "blktune: 8:16 is sdb\nblktune: /dev/mapper/mpatha is dm-3\n"
    );
    for name in ["sda", "sdb", "dm-3"] {
        assert!(out.contains(&format!("\n{name} ")), "{name}: {out}");
    }
    for part in ["/dev/sda2", "8:2"] {
        let o = h.run(&["export", part]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{part}: {err}");
        assert!(err.contains("is a partition of 'sda'"), "{part}: {err}");
    }
    let o = h.run(&["export", "/dev/mapper/nothing"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown device '/dev/mapper/nothing'"));
}

/// sysfs names no md array: `list`, its JSON and an export's comment take
/// the name from udev's MD_DEVNAME (`/dev/md/root`); the rule still matches
/// the sysfs uuid, not udev's other spelling of it.
#[test]
fn an_md_array_is_named_by_udevs_md_devname() {
    let h = host();
    h.udev(
        "b9:0",
        "S:md/root\nE:MD_DEVNAME=root\nE:MD_LEVEL=raid1\nE:MD_UUID=3f2e1d0c:4b5a6978:8796a5b4:c3d2e1f0\n",
    );
    let out = h.stdout(&["list"]);
    assert!(out.lines().any(|l| l.starts_with("│ └─md0 root ")), "{out}");
    let v: Vec<Value> = serde_json::from_str(&h.stdout(&["list", "--json"])).unwrap();
    let md0 = v.iter().find(|d| d["name"] == "md0").unwrap();
    assert_eq!(md0["stack_name"], "root");
    assert_eq!(md0["uuid"], "3f2e1d0c-4b5a-6978-8796-a5b4c3d2e1f0");
    let rules = h.stdout(&["export", "md0"]);
    assert!(rules.contains("# md0: raid1 root, 9:0"), "{rules}");
    assert!(
        rules.contains("ATTR{md/uuid}==\"3f2e1d0c-4b5a-6978-8796-a5b4c3d2e1f0\""),
        "{rules}"
    );
}
