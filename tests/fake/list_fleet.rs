//! `blktune list` for fleets: the stable ids in `--json`, and
//! `--format openmetrics [-o FILE]` for node_exporter's textfile collector
//! (checked with promtool when installed; CI installs it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::fake::FakeDisk;
use serde_json::Value;
use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};

use common::fake_host::FakeHost;

/// sda (udev db: WWN with extension, serial, by-id links), sdb (only sysfs
/// wwid), nvme0n1 (model with a quote), loop0 attached, loop1 unattached.
fn host() -> FakeHost {
    let h = FakeHost::new(&[
        FakeDisk::new("sda")
            .dev(8, 0)
            .model("Samsung SSD 860", Some("ATA")),
        FakeDisk::new("sdb")
            .dev(8, 16)
            .ids(Some("WD-1"), Some("naa.50014ee2b5e12345"))
            .rotational(true),
        FakeDisk::new("nvme0n1")
            .dev(259, 0)
            .model("Odd \"Model\\", None)
            .active("none")
            .hw_queue_depth(1023),
        FakeDisk::new("loop0").dev(7, 0).active("none"),
        FakeDisk::new("loop1").dev(7, 1).size_bytes(0),
    ]);
    h.udev(
        "b8:0",
        "S:disk/by-path/pci-0000:00:1f.2-ata-1\nS:disk/by-id/ata-Samsung_SSD_860_S3Z1\n\
         S:disk/by-id/wwn-0x5002538e40a1b2c3-ext7\nE:ID_WWN=0x5002538e40a1b2c3\n\
         E:ID_WWN_WITH_EXTENSION=0x5002538e40a1b2c3-ext7\nE:ID_SERIAL=Samsung_SSD_860_S3Z1\n\
         E:ID_SERIAL_SHORT=S3Z1\nE:ID_MODEL=Samsung_SSD_860\n",
    );
    h
}

#[test]
fn json_carries_wwn_id_serial_and_by_id() {
    let h = host();
    let v: Value = serde_json::from_str(&h.stdout(&["list", "--json"])).unwrap();
    let dev = |n: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == n)
            .unwrap()
            .clone()
    };
    let sda = dev("sda");
    assert_eq!(sda["wwn"], "0x5002538e40a1b2c3-ext7");
    assert_eq!(sda["id_serial"], "Samsung_SSD_860_S3Z1");
    assert_eq!(sda["by_id"], "/dev/disk/by-id/wwn-0x5002538e40a1b2c3-ext7");
    let sdb = dev("sdb");
    assert_eq!(
        sdb["wwn"], "naa.50014ee2b5e12345",
        "sysfs wwid without udev"
    );
    assert_eq!(sdb["id_serial"], Value::Null);
    assert_eq!(sdb["by_id"], Value::Null);
    // --format json is --json; the unattached loop1 is left out.
    let same: Value = serde_json::from_str(&h.stdout(&["list", "--format", "json"])).unwrap();
    assert_eq!(same, v);
    assert!(v.as_array().unwrap().iter().all(|d| d["name"] != "loop1"));
}

#[test]
fn openmetrics_has_the_families_and_labels_that_join_node_disk_info() {
    let h = host();
    let text = h.stdout(&["list", "--format", "openmetrics"]);
    assert!(text.ends_with("# EOF\n"), "{text}");
    for fam in [
        "blktune_queue_info",
        "blktune_nr_requests",
        "blktune_read_ahead_bytes",
        "blktune_hw_queue_depth",
    ] {
        assert!(text.contains(&format!("# TYPE {fam} gauge\n")), "{fam}");
        assert!(text.contains(&format!("# HELP {fam} ")), "{fam}");
    }
    // node_disk_info's values where udev has them (ID_WWN, ID_SERIAL_SHORT, ID_MODEL).
    assert!(
        text.contains(
            "blktune_queue_info{device=\"sda\",major=\"8\",minor=\"0\",wwn=\"0x5002538e40a1b2c3\",serial=\"S3Z1\",model=\"Samsung_SSD_860\",scheduler=\"mq-deadline\"} 1\n"
        ),
        "{text}"
    );
    // Escaped label values; sysfs values without udev.
    assert!(
        text.contains("model=\"Odd \\\"Model\\\\\",scheduler=\"none\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("wwn=\"naa.50014ee2b5e12345\",serial=\"WD-1\""),
        "{text}"
    );
    assert!(
        text.contains(
            "blktune_hw_queue_depth{device=\"nvme0n1\",major=\"259\",minor=\"0\"} 1023\n"
        ),
        "{text}"
    );
    assert!(
        !text.contains("loop1"),
        "unattached loop devices are left out"
    );
}

#[test]
fn openmetrics_passes_promtool_check_metrics() {
    if !common::require_tool("openmetrics_passes_promtool_check_metrics", "promtool") {
        return;
    }
    let h = host();
    for args in [
        &["list", "--format", "openmetrics"][..],
        &["list", "--format", "openmetrics", "--all"],
    ] {
        let text = h.stdout(args);
        let mut p = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        p.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let o = p.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: promtool: {}{}\n{text}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn output_file_is_written_atomically_and_only_over_a_regular_file() {
    let h = host();
    let out = tempfile::tempdir().unwrap();
    let prom = out.path().join("blktune.prom");
    let p = prom.to_str().unwrap();
    assert_eq!(h.stdout(&["list", "--format", "openmetrics", "-o", p]), "");
    let first = fs::read_to_string(&prom).unwrap();
    assert!(first.ends_with("# EOF\n"));
    // A second run replaces it; no temp file is left behind.
    fs::write(&prom, "old").unwrap();
    h.stdout(&["list", "--format", "openmetrics", "-o", p]);
    assert_eq!(fs::read_to_string(&prom).unwrap(), first);
    let names: Vec<_> = fs::read_dir(out.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "{names:?}");

    // Not a regular file: a FIFO, a directory, a symlink (even to a regular file).
    let fifo = out.path().join("fifo.prom");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let dir = out.path().join("dir.prom");
    fs::create_dir(&dir).unwrap();
    let link = out.path().join("link.prom");
    std::os::unix::fs::symlink(&prom, &link).unwrap();
    for bad in [&fifo, &dir, &link] {
        let o = h.run(&[
            "list",
            "--format",
            "openmetrics",
            "-o",
            bad.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("not a regular file"), "{err}");
    }
    assert_eq!(
        fs::read_to_string(&prom).unwrap(),
        first,
        "link target untouched"
    );
    // -o belongs to openmetrics.
    let o = h.run(&["list", "--json", "-o", p]);
    assert_eq!(o.status.code(), Some(2));
}
