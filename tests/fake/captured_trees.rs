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
        (
            "node-exporter",
            common::fixture_tree(&f.join("captured/node-exporter")),
        ),
        ("procfs", common::fixture_tree(&f.join("captured/procfs"))),
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
    fn walk(value: &Value, parent: Option<&str>, out: &mut BTreeMap<String, Vec<LsblkRow>>) {
        for d in value.as_array().unwrap() {
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

/// What a user runs first works on every captured tree, exit 0, and names
/// the devices and their ids: `list`, `list --json`, `watch -c 2`, `export`
/// of a device with settings and `export --check` of what it wrote. The
/// untouched bfq disks of the HZ=1000 captures export no tunable (their
/// `timeout_sync` 125 is that kernel's default).
#[test]
fn every_command_runs_on_every_captured_tree() {
    // (tree, devices `list` shows with a name, a device to export, an id
    // its rule matches on, ids in the JSON: device, key, value)
    type Ids<'a> = &'a [(&'a str, &'a str, &'a str)];
    let expect: [(&str, &[&str], &str, &str, Ids); 3] = [
        (
            "vm-6.18",
            &["loop1", "vda"],
            "vda",
            "ATTRS{serial}==\"overlayblk\"",
            &[("vda", "serial", "overlayblk")],
        ),
        (
            "node-exporter",
            &["dm-5 mpathA", "dm-6 mpathB", "dm-7 vg0-root", "md10", "sda"],
            "sda",
            "ENV{ID_WWN_WITH_EXTENSION}==\"0x7c72382b8de36a64\"",
            &[
                ("dm-5", "uuid", "mpath-3600508b1001c1234567890abcdef1234"),
                ("dm-7", "uuid", "LVM-abcdef1234567890abcdef1234567890"),
                ("md1", "kind", "raid1"),
                ("sda", "wwn", "0x7c72382b8de36a64"),
            ],
        ),
        (
            "procfs",
            &["dm-0 vg0--lv_root", "dm-1 mpathA", "md7", "sda"],
            "sda",
            "KERNEL==\"sda\"",
            &[
                (
                    "dm-0",
                    "uuid",
                    "LVM-3zSHSR5Nbf4j7g6auAAefWY2CMaX01theZYEvQyecVsm2WtX3iY5q51qq5dWWOq7",
                ),
                ("md10", "uuid", "0c15f7e7-b159-4b1f-a5cd-a79b5c04b6f5"),
                ("md7", "kind", "container"),
                ("sdx", "wwn", "naa.5000c500b3928e24"),
            ],
        ),
    ];
    let out_dir = tempfile::tempdir().unwrap();
    for ((label, tree), (want_label, shown, export, id, ids)) in trees().into_iter().zip(expect) {
        assert_eq!(label, want_label);
        let ok = |o: &Output, what: &str| {
            assert!(
                o.status.success(),
                "{label} {what}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            String::from_utf8_lossy(&o.stdout).into_owned()
        };
        let list = ok(&blktune(&tree, &["list"], true), "list");
        for name in shown {
            assert!(
                list.lines().any(|l| l.contains(&format!("{name} "))),
                "{label}: {name} in\n{list}"
            );
        }
        let v: Vec<Value> = serde_json::from_str(&ok(
            &blktune(&tree, &["list", "--json", "--all"], true),
            "json",
        ))
        .unwrap();
        for (name, key, value) in ids {
            let d = v.iter().find(|d| d["name"] == *name).unwrap();
            assert_eq!(d[*key], *value, "{label}: {name} {key}");
        }
        let watch = ok(
            &blktune(&tree, &["watch", "-c", "2", "-i", "100ms"], false),
            "watch",
        );
        assert_eq!(watch.matches("Device ").count(), 2, "{label}: {watch}");
        for name in shown.iter().map(|s| s.split(' ').next().unwrap()) {
            assert!(
                watch.contains(&format!("\n{name} ")),
                "{label}: {name} in\n{watch}"
            );
        }
        let file = out_dir.path().join(format!("61-{label}.rules"));
        let o = blktune(
            &tree,
            &["export", export, "-o", file.to_str().unwrap()],
            true,
        );
        ok(&o, "export");
        let rules = std::fs::read_to_string(&file).unwrap();
        assert!(rules.contains(id), "{label}: {id} in\n{rules}");
        assert!(
            !rules.contains("timeout_sync"),
            "{label}: untouched\n{rules}"
        );
        let check = ok(
            &blktune(&tree, &["export", "--check", file.to_str().unwrap()], true),
            "export --check",
        );
        assert!(check.contains(&format!("\n{export} (")), "{label}: {check}");
        assert!(check.contains("no problems found"), "{label}: {check}");
    }
}

/// A tree without `/proc/diskstats` (a capture of sysfs alone): `watch`
/// reads each device's `stat` file and says so; without those either, it
/// shows the devices without rates and says that.
#[test]
fn watch_says_what_is_missing_on_a_tree_without_diskstats() {
    let trees = trees();
    let procfs = &trees[2].1;
    let no_proc = tempfile::tempdir().unwrap();
    let run = |sys: &Path| {
        Command::new(env!("CARGO_BIN_EXE_blktune"))
            .args(["watch", "-c", "2", "-i", "100ms", "--sysfs-root"])
            .arg(sys)
            .arg("--proc-root")
            .arg(no_proc.path())
            .output()
            .unwrap()
    };
    let o = run(&procfs.join("sys"));
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("diskstats: counters from each device's stat file under"),
        "{err}"
    );
    assert!(out.contains("\nsda "), "{out}");
    let ne = &trees[1].1;
    let o = run(&ne.join("sys"));
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{err}");
    assert!(err.contains("no rates, settings only"), "{err}");
    assert!(out.contains("\ndm-5 "), "{out}");
}

/// `export --check` of a rules file made elsewhere, against the procfs
/// capture: the lines that will not happen here are problems (exit 3): an
/// id no device has (a sysfs wwid in the t10 form an older kernel gave the
/// disk that is sdx here: named), a rule no device matches, and a write of
/// the default a switch sets anyway (timeout_sync 125 at this tree's
/// HZ=1000, inferred from what it stored).
#[test]
fn check_reports_what_will_not_happen_here() {
    let tree = &trees()[2].1;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("61-old.rules");
    let rule = |m: &str, sets: &str| {
        format!(
            "ACTION==\"add|change\", SUBSYSTEM==\"block\", ENV{{DEVTYPE}}==\"disk\", {m}, {sets}\n"
        )
    };
    std::fs::write(
        &file,
        [
            rule(
                "ATTRS{wwid}==\"t10.ATA     ST8000DM004-2CX1  5000C500B3928E24\"",
                "ATTR{queue/read_ahead_kb}=\"1024\"",
            ),
            rule("KERNEL==\"nvme*\"", "ATTR{queue/scheduler}=\"none\""),
            rule(
                "KERNEL==\"sda\", TEST==\"queue/scheduler\"",
                "ATTR{queue/scheduler}=\"bfq\", ATTR{queue/iosched/timeout_sync}=\"125\", ATTR{queue/iosched/slice_idle}=\"0\"",
            ),
            rule(
                "ATTR{dm/uuid}==\"mpath-360000000000001\"",
                "ATTR{queue/read_ahead_kb}=\"4096\"",
            ),
        ]
        .concat(),
    )
    .unwrap();
    let o = blktune(tree, &["export", "--check", file.to_str().unwrap()], false);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(
        out.contains("line 1: no device here has ATTRS{wwid}==\"t10.ATA     ST8000DM004-2CX1  5000C500B3928E24\": read_ahead_kb=1024 will not be set (sdx has wwid 'naa.5000c500b3928e24'"),
        "{out}"
    );
    assert!(
        out.contains("line 2: matches no device of this machine: scheduler=none will not be set"),
        "{out}"
    );
    assert!(
        out.contains("line 3 writes iosched/timeout_sync=125, the kernel's default under bfq, which the switch on line 3 sets anyway"),
        "{out}"
    );
    assert!(!out.contains("slice_idle=0, the kernel's default"), "{out}");
    assert!(out.contains("\ndm-1 ("), "the uuid rule matches: {out}");
    assert!(out.contains("3 problems found (exit code 3)"), "{out}");
}

/// The dm and md devices of the captured trees are exported by their
/// uuids from sysfs (multipath maps, LVM, md arrays), never by `KERNEL==`
/// and without the "no stable id" warning. `export --check` on the same
/// tree names each device that has the id and the one thing that stops the
/// line: the captures have no `queue/` under their stacks, so the exporter's
/// `TEST=="queue/read_ahead_kb"` guard fails (exit 3). With that file added
/// (a copy of the tree), the check finds nothing wrong (exit 0).
#[test]
fn stack_exports_match_the_uuid_and_check_clean_on_the_captured_trees() {
    // (tree, devices: name and the key its rule matches on)
    let expect: [(&str, &[(&str, &str)]); 2] = [
        (
            "node-exporter",
            &[
                (
                    "dm-5",
                    "ATTR{dm/uuid}==\"mpath-3600508b1001c1234567890abcdef1234\"",
                ),
                (
                    "dm-7",
                    "ATTR{dm/uuid}==\"LVM-abcdef1234567890abcdef1234567890\"",
                ),
                (
                    "md1",
                    "ATTR{md/uuid}==\"0fbf5f2c-add2-43c2-bd78-a4be3ab709ef\"",
                ),
                (
                    "md10",
                    "ATTR{md/uuid}==\"0c15f7e7-b159-4b1f-a5cd-a79b5c04b6f5\"",
                ),
            ],
        ),
        (
            "procfs",
            &[
                (
                    "dm-0",
                    "ATTR{dm/uuid}==\"LVM-3zSHSR5Nbf4j7g6auAAefWY2CMaX01theZYEvQyecVsm2WtX3iY5q51qq5dWWOq7\"",
                ),
                ("dm-1", "ATTR{dm/uuid}==\"mpath-360000000000001\""),
                (
                    "md10",
                    "ATTR{md/uuid}==\"0c15f7e7-b159-4b1f-a5cd-a79b5c04b6f5\"",
                ),
                (
                    "md7",
                    "ATTR{md/uuid}==\"0e51f6d1-b357-2712-8eaa-31f6f597be6b\"",
                ),
            ],
        ),
    ];
    let trees = trees();
    let out_dir = tempfile::tempdir().unwrap();
    for (label, devices) in expect {
        let tree = &trees.iter().find(|(l, _)| *l == label).unwrap().1;
        let names: Vec<&str> = devices.iter().map(|(n, _)| *n).collect();
        let file = out_dir.path().join(format!("61-{label}-stacks.rules"));
        let mut args = vec!["export"];
        args.extend(&names);
        args.extend(["--read-ahead-kb", "4096", "-o", file.to_str().unwrap()]);
        let o = blktune(tree, &args, true);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{label}: {err}");
        assert!(!err.contains("stable"), "{label}: {err}");
        let rules = std::fs::read_to_string(&file).unwrap();
        let body: Vec<&str> = rules.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(
            !body.iter().any(|l| l.contains("KERNEL")),
            "{label}: {rules}"
        );
        assert_eq!(body.iter().filter(|l| l.starts_with("ACTION")).count(), 4);
        for (name, key) in devices {
            assert!(
                body.iter().any(|l| l.contains(key)),
                "{label} {name}: {rules}"
            );
        }
        let check = |tree: &Path| {
            let o = blktune(tree, &["export", "--check", file.to_str().unwrap()], true);
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stdout).into_owned(),
            )
        };
        let (code, out) = check(tree);
        assert_eq!(code, Some(3), "{label}: {out}");
        for (name, key) in devices {
            assert!(
                out.contains(&format!(
                    ": {name} has {key}, but it has no queue/read_ahead_kb (TEST==\"queue/read_ahead_kb\"): read_ahead_kb=4096 will not be set"
                )),
                "{label} {name}: {out}"
            );
        }
        assert!(
            out.contains("4 problems found (exit code 3)"),
            "{label}: {out}"
        );
        // The same tree with the file every real dm and md device has.
        let copy = out_dir.path().join(label);
        let cp = Command::new("cp")
            .arg("-a")
            .arg(tree)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(cp.success());
        for name in &names {
            let queue = copy.join(format!("sys/block/{name}/queue"));
            std::fs::create_dir_all(&queue).unwrap();
            std::fs::write(queue.join("read_ahead_kb"), "128\n").unwrap();
        }
        let (code, out) = check(&copy);
        assert_eq!(code, Some(0), "{label}: {out}");
        for name in &names {
            assert!(
                out.contains(&format!("\n{name} (")),
                "{label} {name}: {out}"
            );
        }
        assert!(out.contains("no problems found"), "{label}: {out}");
    }
}
