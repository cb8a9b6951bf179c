//! The captured trees (`tests/fixtures/vm-6.18`, `tests/fixtures/captured/*`,
//! NOTICE.md there): `list --json` agrees with `lsblk --sysroot TREE -J -b`
//! on every device (size, scheduler, nr_requests, read-ahead, rotational,
//! model, vendor, type and the tree), and every command a user runs first
//! works on each, naming the stacks and their ids.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Every captured tree: (label, directory).
fn trees() -> Vec<(&'static str, PathBuf)> {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    vec![
        ("vm-6.18", f.join("vm-6.18")),
        ("node-exporter", f.join("captured/node-exporter")),
        ("procfs", f.join("captured/procfs")),
    ]
}

/// `blktune ARGS --sysfs-root TREE/sys --proc-root TREE/proc [--udev-db TREE/udev/data]`.
fn blktune(tree: &Path, args: &[&str], udev: bool) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_blktune"));
    c.args(args)
        .arg("--sysfs-root")
        .arg(tree.join("sys"))
        .arg("--proc-root")
        .arg(tree.join("proc"));
    if udev && tree.join("udev/data").is_dir() {
        c.arg("--udev-db").arg(tree.join("udev/data"));
    }
    c.env("BLKTUNE_JOURNAL_DIR", tree.join("no-journal-here"));
    c.output().unwrap()
}

/// One device as lsblk printed it, and its parent in lsblk's tree.
#[derive(Debug)]
struct LsblkRow {
    fields: serde_json::Map<String, Value>,
    parent: Option<String>,
}

/// lsblk's devices by kernel name, each with every parent it is drawn under.
fn lsblk(tree: &Path) -> BTreeMap<String, Vec<LsblkRow>> {
    let o = Command::new("lsblk")
        .arg("--sysroot")
        .arg(tree)
        .args([
            "-J",
            "-b",
            "-o",
            "NAME,KNAME,MAJ:MIN,SIZE,TYPE,SCHED,RQ-SIZE,RA,ROTA,MODEL,VENDOR",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut out: BTreeMap<String, Vec<LsblkRow>> = BTreeMap::new();
    fn walk(v: &Value, parent: Option<&str>, out: &mut BTreeMap<String, Vec<LsblkRow>>) {
        for d in v.as_array().unwrap() {
            let kname = d["kname"].as_str().unwrap().to_string();
            let mut fields = d.as_object().unwrap().clone();
            fields.remove("children");
            out.entry(kname.clone()).or_default().push(LsblkRow {
                fields,
                parent: parent.map(str::to_owned),
            });
            if let Some(c) = d.get("children") {
                walk(c, Some(&kname), out);
            }
        }
    }
    walk(&v["blockdevices"], None, &mut out);
    out
}

/// lsblk's value of `key`, normalized: `null` and `""` for nothing, a
/// number as a number (2.38 prints `rq-size` and `ra` as numbers).
fn ls(row: &LsblkRow, key: &str) -> Value {
    match row.fields.get(key) {
        Some(Value::String(s)) if s.trim().is_empty() => Value::Null,
        Some(Value::String(s)) => Value::String(s.trim().to_string()),
        Some(v) => v.clone(),
        None => Value::Null,
    }
}

/// `list --json` agrees with lsblk on every device of every captured tree.
#[test]
fn list_json_agrees_with_lsblk_on_every_captured_tree() {
    if !common::require_tool("list_json_agrees_with_lsblk", "lsblk") {
        return;
    }
    for (label, tree) in trees() {
        let o = blktune(&tree, &["list", "--json", "--all"], true);
        assert!(o.status.success(), "{label}: {o:?}");
        let ours: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
        let theirs = lsblk(&tree);
        let by_name: BTreeMap<&str, &Value> = ours
            .iter()
            .map(|d| (d["name"].as_str().unwrap(), d))
            .collect();
        let partitions: BTreeSet<String> = ours
            .iter()
            .flat_map(|d| d["partitions"].as_array().unwrap())
            .map(|p| p.as_str().unwrap().to_string())
            .collect();
        let wholes: BTreeSet<&str> = theirs
            .keys()
            .map(String::as_str)
            .filter(|k| !partitions.contains(*k))
            .collect();
        let named: BTreeSet<&str> = by_name.keys().copied().collect();
        assert_eq!(wholes, named, "{label}: the same devices");
        for (kname, rows) in &theirs {
            if partitions.contains(kname) {
                continue;
            }
            let d = by_name[kname.as_str()];
            let row = &rows[0];
            let what = |k: &str| format!("{label}: {kname} {k}");
            // A size unknown to blktune (no `size` file) is 0 to lsblk.
            assert_eq!(
                d["size_bytes"].as_u64().unwrap_or(0),
                ls(row, "size").as_u64().unwrap(),
                "{}",
                what("size")
            );
            assert_eq!(d["scheduler"], ls(row, "sched"), "{}", what("scheduler"));
            assert_eq!(
                d["nr_requests"],
                ls(row, "rq-size"),
                "{}",
                what("nr_requests")
            );
            assert_eq!(
                d["read_ahead_kb"],
                ls(row, "ra"),
                "{}",
                what("read_ahead_kb")
            );
            // lsblk says false where the file is missing; blktune null.
            assert_eq!(
                d["rotational"].as_bool().unwrap_or(false),
                ls(row, "rota").as_bool().unwrap(),
                "{}",
                what("rotational")
            );
            assert_eq!(d["model"], ls(row, "model"), "{}", what("model"));
            assert_eq!(d["vendor"], ls(row, "vendor"), "{}", what("vendor"));
            assert_eq!(d["kind"], ls(row, "type"), "{}", what("type"));
            assert_eq!(d["maj_min"], ls(row, "maj:min"), "{}", what("maj:min"));
            // A dm device's lsblk NAME is its dm name.
            if let Some(n) = d["stack_name"]
                .as_str()
                .filter(|_| kname.starts_with("dm-"))
            {
                assert_eq!(ls(row, "name"), n, "{}", what("name"));
            }
            // The tree: lsblk draws a stack under each device it sits on.
            let lsblk_parents: BTreeSet<String> =
                rows.iter().filter_map(|r| r.parent.clone()).collect();
            let our_parents: BTreeSet<String> = d["slaves"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            assert_eq!(our_parents, lsblk_parents, "{}", what("slaves"));
        }
        // Partitions: under their disk in both.
        for p in &partitions {
            let disk = ours
                .iter()
                .find(|d| d["partitions"].as_array().unwrap().iter().any(|x| x == p))
                .unwrap();
            let rows = theirs
                .get(p)
                .unwrap_or_else(|| panic!("{label}: lsblk lacks {p}"));
            assert!(
                rows.iter()
                    .any(|r| r.parent.as_deref() == disk["name"].as_str()),
                "{label}: {p}"
            );
        }
    }
}
