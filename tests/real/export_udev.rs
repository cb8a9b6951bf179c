//! Exported rules, proven on a real loop device this test creates (root only):
//! tune it, export the live settings, reset it, let `udevadm test` run the
//! rule (systemd 252 really performs the ATTR writes), and read sysfs back.
//!
//! Every rule file is installed under a unique name in /run/udev/rules.d and
//! removed by a drop guard, together with what `udevadm test` leaves behind
//! for our device (its udev database entry and /dev symlinks). The tests run
//! one at a time: a class rule would also hit a neighbour test's loop device.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;

use blktune_core::device::BlockDevice;
use blktune_core::export::{ExportItem, MatchStrategy, RenderOptions, render};
use blktune_core::fake::{FakeDisk, FakeTree};
use blktune_core::tuner::Wanted;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

const RULES_DIR: &str = "/run/udev/rules.d";

/// Removes the rule file (and the rules dir if we created it) and the traces
/// `udevadm test` leaves for our device, only those that were not there before.
struct UdevGuard {
    rule: PathBuf,
    created_dir: bool,
    traces: Vec<PathBuf>,
    /// Directories `udevadm test` creates when they are missing (no udevd
    /// here); removed again if they are empty, deepest first.
    new_dirs: Vec<PathBuf>,
}

const UDEV_DIRS: &[&str] = &[
    "/run/udev/data",
    "/run/udev/tags/systemd",
    "/run/udev/tags",
    "/run/udev",
    "/dev/disk/by-diskseq",
    "/dev/disk",
    "/dev/block",
];

impl UdevGuard {
    fn new(lo: &TestLoop, tag: &str) -> Self {
        let new_dirs = UDEV_DIRS
            .iter()
            .map(PathBuf::from)
            .filter(|d| !d.exists())
            .collect();
        let created_dir = !Path::new(RULES_DIR).exists();
        fs::create_dir_all(RULES_DIR).unwrap();
        let dev = fs::read_to_string(format!("/sys/block/{}/dev", lo.name())).unwrap();
        let dev = dev.trim();
        let seq = fs::read_to_string(format!("/sys/block/{}/diskseq", lo.name()))
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let candidates = [
            format!("/run/udev/data/b{dev}"),
            format!("/run/udev/tags/systemd/b{dev}"),
            format!("/dev/block/{dev}"),
            format!("/dev/disk/by-diskseq/{seq}"),
        ];
        let traces = candidates
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.symlink_metadata().is_err())
            .collect();
        Self {
            rule: PathBuf::from(format!(
                "{RULES_DIR}/61-blktune-test-{}-{}-{tag}.rules",
                std::process::id(),
                lo.name()
            )),
            created_dir,
            traces,
            new_dirs,
        }
    }
}

impl Drop for UdevGuard {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.rule);
        for t in &self.traces {
            let _ = fs::remove_file(t);
        }
        if self.created_dir {
            let _ = fs::remove_dir(RULES_DIR);
        }
        for d in &self.new_dirs {
            let _ = fs::remove_dir(d);
        }
    }
}

/// Puts the loop device's queue settings back as they were when the test
/// attached it: the kernel keeps them when the loop is detached, and the next
/// test (or helper) that attaches the same loopN would start from ours.
struct Restore {
    dev: String,
    scheduler: String,
    nr_requests: String,
    read_ahead_kb: String,
    /// The queue settings next to the scheduler a test may change.
    knobs: Vec<(&'static str, String)>,
}

impl Restore {
    fn new(lo: &TestLoop) -> Self {
        Self {
            dev: lo.name().to_string(),
            scheduler: lo.active_scheduler(),
            nr_requests: lo.queue("nr_requests"),
            read_ahead_kb: lo.queue("read_ahead_kb"),
            knobs: ["wbt_lat_usec", "nomerges", "rq_affinity"]
                .into_iter()
                .map(|k| (k, lo.queue(k)))
                .collect(),
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        // Safe order: the scheduler switch resets nr_requests.
        for (attr, v) in [
            ("scheduler", &self.scheduler),
            ("nr_requests", &self.nr_requests),
            ("read_ahead_kb", &self.read_ahead_kb),
        ] {
            let _ = fs::write(format!("/sys/block/{}/queue/{attr}", self.dev), v);
        }
        for (attr, v) in &self.knobs {
            let _ = fs::write(format!("/sys/block/{}/queue/{attr}", self.dev), v);
        }
    }
}

/// Start from a known state: scheduler none, whatever another test left on a
/// reused loopN (a throwaway journal, so the test's own journal records this).
fn baseline(lo: &TestLoop) {
    let j = tempfile::tempdir().unwrap();
    run_ok(&["set", lo.name(), "--scheduler", "none"], j.path());
    assert_eq!(lo.active_scheduler(), "none");
}

fn ready(test: &str) -> bool {
    require_root(test) && require_tool(test, "udevadm") && require_tool(test, "losetup")
}

/// `udevadm test --action=change /sys/block/<dev>`: (status ok, output).
fn udevadm_test(dev: &str) -> (bool, String) {
    let o = Command::new("udevadm")
        .args(["test", "--action=change"])
        .arg(format!("/sys/block/{dev}"))
        .output()
        .expect("run udevadm");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

/// Lines where udev complains about our file (parse errors), as opposed to
/// reading it or executing it for the device.
fn diagnostics(out: &str, rule: &Path, dev: &str) -> Vec<String> {
    let path = rule.display().to_string();
    out.lines()
        .filter(|l| l.contains(&path))
        .filter(|l| !l.starts_with("Reading rules file"))
        .filter(|l| !l.starts_with(&format!("{dev}: ")))
        .map(String::from)
        .collect()
}

/// The attribute writes udev performed from our file, in order: (attr, value).
fn writes(out: &str, rule: &Path, dev: &str) -> Vec<(String, String)> {
    let prefix = format!("{dev}: {}:", rule.display());
    out.lines()
        .filter(|l| l.starts_with(&prefix) && l.contains(" ATTR '"))
        .filter_map(|l| {
            let path = l.split(" ATTR '").nth(1)?.split('\'').next()?;
            let attr = path.split(&format!("/{dev}/")).nth(1)?.to_string();
            let value = l
                .rsplit(" writing '")
                .next()?
                .trim_end_matches('\'')
                .to_string();
            Some((attr, value))
        })
        .collect()
}

fn run_ok(args: &[&str], journal: &Path) -> String {
    let o = blktune(args, journal);
    assert!(o.status.success(), "blktune {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// Tune with `set`, export the live settings, revert, let udev apply the rule.
fn round_trip(tag: &str, set_args: &[&str], expect: &[(&str, &str)]) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lo = TestLoop::new(64);
    let _restore = Restore::new(&lo);
    let guard = UdevGuard::new(&lo, tag);
    baseline(&lo);
    let j = tempfile::tempdir().unwrap();
    let dev = lo.name().to_string();
    let defaults = (
        lo.active_scheduler(),
        lo.queue("nr_requests"),
        lo.queue("read_ahead_kb"),
    );

    let mut args = vec!["set", dev.as_str()];
    args.extend_from_slice(set_args);
    run_ok(&args, j.path());
    let rule = guard.rule.to_str().unwrap();
    let msg = run_ok(
        &["export", &dev, "--match", "kernel", "--output", rule],
        j.path(),
    );
    assert!(msg.contains("udevadm trigger"), "{msg}");
    let text = fs::read_to_string(&guard.rule).unwrap();

    // Back to the defaults, through blktune's own journal (the queue
    // settings next to the scheduler too).
    run_ok(&["revert", &dev], j.path());
    for (a, v) in expect
        .iter()
        .filter(|(a, _)| blktune_core::sched::queue_knob(a).is_some())
    {
        assert_ne!(&lo.queue(a), v, "{a} reverted");
    }
    assert_eq!(
        (
            lo.active_scheduler(),
            lo.queue("nr_requests"),
            lo.queue("read_ahead_kb")
        ),
        defaults
    );

    let (ok, out) = udevadm_test(&dev);
    assert!(ok, "udevadm test failed:\n{out}");
    assert!(
        out.contains(&format!("Reading rules file: {rule}")),
        "udev did not read {rule}:\n{out}"
    );
    assert_eq!(diagnostics(&out, &guard.rule, &dev), Vec::<String>::new());
    let done = writes(&out, &guard.rule, &dev);
    let want: Vec<(String, String)> = expect
        .iter()
        .map(|(a, v)| (format!("queue/{a}"), v.to_string()))
        .collect();
    assert_eq!(
        done, want,
        "writes in this order\nrule:\n{text}\nudev:\n{out}"
    );
    for (attr, value) in expect {
        if *attr == "scheduler" {
            assert_eq!(&lo.active_scheduler(), value);
        } else {
            assert_eq!(&lo.queue(attr), value, "{attr}");
        }
    }

    // `--check` agrees with what udev did.
    let o = blktune(&["export", "--check", rule], j.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let report = stdout(&o);
    let summary: Vec<String> = expect.iter().map(|(a, v)| format!("{a}={v}")).collect();
    assert!(
        report.contains(&format!("result: {}", summary.join(" "))),
        "{report}"
    );
}

#[test]
fn kyber_rule_survives_a_reset() {
    if !ready("kyber_rule_survives_a_reset") {
        return;
    }
    round_trip(
        "kyber",
        &[
            "--scheduler",
            "kyber",
            "--nr-requests",
            "64",
            "--read-ahead-kb",
            "256",
        ],
        &[
            ("scheduler", "kyber"),
            ("nr_requests", "64"),
            ("read_ahead_kb", "256"),
        ],
    );
}

/// wbt_lat_usec and nomerges go into the rule after the scheduler switch
/// and read-ahead, and udev writes them in that order.
#[test]
fn wbt_lat_usec_rule_survives_a_reset() {
    if !ready("wbt_lat_usec_rule_survives_a_reset") {
        return;
    }
    // TestLoop starts the settings at the kernel's defaults, so only those
    // the test changes are in the live export.
    round_trip(
        "wbt",
        &[
            "--scheduler",
            "kyber",
            "--nr-requests",
            "64",
            "--read-ahead-kb",
            "256",
            "--wbt-lat-usec",
            "3000",
            "--nomerges",
            "1",
        ],
        &[
            ("scheduler", "kyber"),
            ("nr_requests", "64"),
            ("read_ahead_kb", "256"),
            ("wbt_lat_usec", "3000"),
            ("nomerges", "1"),
        ],
    );
}

#[test]
fn mq_deadline_rule_with_read_expire_survives_a_reset() {
    if !ready("mq_deadline_rule_with_read_expire_survives_a_reset") {
        return;
    }
    round_trip(
        "deadline",
        &[
            "--scheduler",
            "mq-deadline",
            "--tunable",
            "read_expire=100",
            "--nr-requests",
            "32",
            "--read-ahead-kb",
            "512",
        ],
        &[
            ("scheduler", "mq-deadline"),
            ("iosched/read_expire", "100"),
            ("nr_requests", "32"),
            ("read_ahead_kb", "512"),
        ],
    );
}

#[test]
fn class_rule_is_accepted_and_applied_by_udev() {
    if !ready("class_rule_is_accepted_and_applied_by_udev") {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lo = TestLoop::new(64);
    let _restore = Restore::new(&lo);
    let guard = UdevGuard::new(&lo, "class");
    let j = tempfile::tempdir().unwrap();
    let dev = lo.name().to_string();
    let rule = guard.rule.to_str().unwrap();
    let o = blktune(
        &[
            "export", &dev, "--match", "class", "-s", "bfq", "--output", rule,
        ],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--match class applies"),
        "{}",
        stderr(&o)
    );
    // The class is this loop device's family: never the VM's own disk.
    let text = fs::read_to_string(&guard.rule).unwrap();
    assert!(text.contains("KERNEL==\"loop*\""), "{text}");
    assert!(!stderr(&o).contains("vda"), "{}", stderr(&o));
    let c = blktune(&["export", "--check", rule, "--json"], j.path());
    let report: serde_json::Value = serde_json::from_str(&stdout(&c)).unwrap();
    for d in report["devices"].as_array().unwrap() {
        let hit = d["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| !a["lines"].as_array().unwrap().is_empty());
        let name = d["device"].as_str().unwrap();
        if name == dev {
            assert!(hit, "{d}");
        } else if !name.starts_with("loop") {
            assert!(!hit, "the class rule reaches {name}: {d}");
        }
    }
    let (ok, out) = udevadm_test(&dev);
    assert!(ok, "{out}");
    assert_eq!(diagnostics(&out, &guard.rule, &dev), Vec::<String>::new());
    let done = writes(&out, &guard.rule, &dev);
    assert_eq!(done.first().map(|w| w.0.as_str()), Some("queue/scheduler"));
    assert_eq!(lo.active_scheduler(), "bfq");
}

/// Rules for devices this machine does not have: udev must parse them
/// without complaint and must not apply them to our loop device.
#[test]
fn model_and_id_rules_parse_and_do_not_hit_another_disk() {
    if !ready("model_and_id_rules_parse_and_do_not_hit_another_disk") {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lo = TestLoop::new(64);
    let _restore = Restore::new(&lo);
    let guard = UdevGuard::new(&lo, "model-id");
    let dev = lo.name().to_string();
    let before = (lo.active_scheduler(), lo.queue("read_ahead_kb"));

    let dir = tempfile::tempdir().unwrap();
    let t = FakeTree::new(dir.path()).unwrap();
    let disks = [
        FakeDisk::new("sdx")
            .model("Fake Disk 3000", Some("ATA"))
            .ids(Some("FAKE-SERIAL-1"), Some("naa.5000000000000001")),
        FakeDisk::new("sdy")
            .dev(8, 16)
            .ids(Some("FAKE-SERIAL-2"), None),
        FakeDisk::new("sdz").dev(8, 32),
    ];
    for d in &disks {
        t.add(d).unwrap();
    }
    let read = |n: &str| BlockDevice::read(&t.root(), &t.root().device(n).unwrap());
    let s = Wanted {
        scheduler: Some("bfq".into()),
        read_ahead_kb: Some(4096),
        ..Wanted::default()
    };
    let mut env = BTreeMap::new();
    env.insert("ID_WWN".to_string(), "0x5000000000000003".to_string());
    let mut text = String::new();
    for (name, strategy, env) in [
        ("sdx", MatchStrategy::Model, BTreeMap::new()),
        ("sdx", MatchStrategy::Id, BTreeMap::new()),
        ("sdy", MatchStrategy::Id, BTreeMap::new()),
        ("sdz", MatchStrategy::Id, env),
    ] {
        let r = render(
            &[ExportItem::new(read(name), s.clone(), env)],
            &RenderOptions {
                strategy: Some(strategy),
                ..RenderOptions::new("test")
            },
        )
        .unwrap();
        text.push_str(&r.text);
    }
    for key in [
        "ATTRS{model}==",
        "ATTRS{wwid}==",
        "ATTRS{serial}==",
        "ENV{ID_WWN}==",
    ] {
        assert!(text.contains(key), "{key} missing:\n{text}");
    }
    fs::write(&guard.rule, &text).unwrap();
    let (ok, out) = udevadm_test(&dev);
    assert!(ok, "{out}");
    assert!(out.contains(&format!("Reading rules file: {}", guard.rule.display())));
    assert_eq!(diagnostics(&out, &guard.rule, &dev), Vec::<String>::new());
    assert_eq!(
        writes(&out, &guard.rule, &dev),
        Vec::<(String, String)>::new()
    );
    assert_eq!((lo.active_scheduler(), lo.queue("read_ahead_kb")), before);
}

/// The same check that the test helpers notice a broken rule: a line udev
/// refuses shows up as a diagnostic.
#[test]
fn a_broken_rule_is_noticed() {
    if !ready("a_broken_rule_is_noticed") {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lo = TestLoop::new(64);
    let _restore = Restore::new(&lo);
    let guard = UdevGuard::new(&lo, "broken");
    let dev = lo.name().to_string();
    // A fresh loop device's read-ahead is computed at attach from what is
    // under its file (seen here: 4096, the value the rule would set), so the
    // test starts it elsewhere.
    lo.set_queue("read_ahead_kb", "128");
    fs::write(
        &guard.rule,
        format!("KERNEL==\"{dev}\", BOGUS{{x}}==\"1\", ATTR{{queue/read_ahead_kb}}=\"4096\"\n"),
    )
    .unwrap();
    let (_, out) = udevadm_test(&dev);
    assert_eq!(diagnostics(&out, &guard.rule, &dev).len(), 1, "{out}");
    assert_ne!(lo.queue("read_ahead_kb"), "4096");
}

#[test]
fn script_applies_now_and_is_idempotent() {
    if !ready("script_applies_now_and_is_idempotent") {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lo = TestLoop::new(64);
    let _restore = Restore::new(&lo);
    baseline(&lo);
    let j = tempfile::tempdir().unwrap();
    let dev = lo.name().to_string();
    run_ok(
        &[
            "set",
            &dev,
            "-s",
            "mq-deadline",
            "-t",
            "read_expire=200",
            "--nr-requests",
            "48",
        ],
        j.path(),
    );
    let script = j.path().join("apply.sh");
    run_ok(
        &[
            "export",
            &dev,
            "--match",
            "kernel",
            "--format",
            "script",
            "--output",
            script.to_str().unwrap(),
        ],
        j.path(),
    );
    run_ok(&["revert", &dev], j.path());
    let sh = |p: &Path| Command::new("sh").arg(p).output().unwrap();
    let o = sh(&script);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lo.active_scheduler(), "mq-deadline");
    assert_eq!(lo.queue("iosched/read_expire"), "200");
    assert_eq!(lo.queue("nr_requests"), "48");
    assert!(
        stdout(&o).contains("queue/scheduler -> mq-deadline"),
        "{}",
        stdout(&o)
    );
    // Second run: everything is in place, nothing is written.
    let o = sh(&script);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    // A device that is no longer the one it was written for is not touched.
    let other = j.path().join("other.sh");
    let text = fs::read_to_string(&script).unwrap().replace(
        &format!(
            "= '{}'",
            fs::read_to_string(format!("/sys/block/{dev}/dev"))
                .unwrap()
                .trim()
        ),
        "= '1:99'",
    );
    fs::write(&other, text).unwrap();
    run_ok(&["set", &dev, "-s", "none"], j.path());
    let o = sh(&other);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("not the device this script was written for"));
    assert_eq!(lo.active_scheduler(), "none");
    run_ok(&["revert", &dev], j.path());
}

/// A script that asks for the kernel's default write-back latency (`-1`)
/// applies it and exits 0: the value reads back as the default, never as
/// `-1`, and is no failure; a second run says nothing.
#[test]
fn a_script_restoring_the_default_wbt_latency_exits_0_and_twice_says_nothing() {
    if !ready("a_script_restoring_the_default_wbt_latency_exits_0_and_twice_says_nothing") {
        return;
    }
    let lo = TestLoop::new(64);
    let _restore = Restore::new(&lo);
    let default = lo.queue("wbt_lat_usec");
    lo.set_queue("wbt_lat_usec", "3000");
    let j = tempfile::tempdir().unwrap();
    let dev = lo.name().to_string();
    let script = j.path().join("apply.sh");
    run_ok(
        &[
            "export",
            &dev,
            "--match",
            "kernel",
            "--wbt-lat-usec",
            "-1",
            "--format",
            "script",
            "--output",
            script.to_str().unwrap(),
        ],
        j.path(),
    );
    let sh = |p: &Path| Command::new("sh").arg(p).output().unwrap();
    let o = sh(&script);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(lo.queue("wbt_lat_usec"), default);
    assert!(
        stdout(&o).contains(&format!(
            "queue/wbt_lat_usec 3000 -> {default} (the kernel's default)"
        )),
        "{}",
        stdout(&o)
    );
    let o = sh(&script);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "", "second run: nothing changed, nothing said");
}

/// `--check` and udev agree on a distribution-style file: every line the
/// check says matches for our loop device is one udev applies, in order.
#[test]
fn check_agrees_with_udev_on_a_distribution_style_file() {
    if !ready("check_agrees_with_udev_on_a_distribution_style_file") {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lo = TestLoop::new(64);
    let _restore = Restore::new(&lo);
    let guard = UdevGuard::new(&lo, "fixture");
    let j = tempfile::tempdir().unwrap();
    let dev = lo.name().to_string();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/60-io-scheduler.rules");
    fs::copy(&fixture, &guard.rule).unwrap();
    let o = blktune(
        &["export", "--check", guard.rule.to_str().unwrap(), "--json"],
        j.path(),
    );
    // The fixture has problems on purpose (a refused line, a lost nr_requests).
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let change = report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == dev.as_str())
        .unwrap()["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == "change")
        .unwrap()
        .clone();
    let predicted: Vec<(String, String)> = change["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["status"] == "match")
        .flat_map(|l| l["sets"].as_array().unwrap().clone())
        .map(|w| {
            (
                w["attr"].as_str().unwrap().to_string(),
                w["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(!predicted.is_empty(), "{change}");

    let (ok, out) = udevadm_test(&dev);
    assert!(ok, "{out}");
    // udev refuses the KERNAL line, as the check said.
    assert_eq!(diagnostics(&out, &guard.rule, &dev).len(), 1, "{out}");
    let done = writes(&out, &guard.rule, &dev);
    if change["uncertain"] == false {
        assert_eq!(done, predicted, "{change}\n{out}");
    } else {
        // Lines the check could not evaluate may add writes, but the sure ones
        // appear in the same order.
        let mut it = done.iter();
        for p in &predicted {
            assert!(it.any(|d| d == p), "{p:?} not applied in order: {done:?}");
        }
    }
}

/// `export -s bfq` of a device tuned under mq-deadline: udev switches to bfq,
/// then writes the live nr_requests, which survives (the old scheduler's
/// read_expire is not written: bfq has no such tunable).
#[test]
fn scheduler_override_keeps_nr_requests_through_udev() {
    if !ready("scheduler_override_keeps_nr_requests_through_udev") {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lo = TestLoop::new(64);
    let _restore = Restore::new(&lo);
    let guard = UdevGuard::new(&lo, "override");
    baseline(&lo);
    let j = tempfile::tempdir().unwrap();
    let dev = lo.name().to_string();
    run_ok(
        &[
            "set",
            &dev,
            "-s",
            "mq-deadline",
            "-t",
            "read_expire=100",
            "--nr-requests",
            "64",
            "--read-ahead-kb",
            "256",
        ],
        j.path(),
    );
    let rule = guard.rule.to_str().unwrap();
    run_ok(
        &[
            "export", &dev, "-s", "bfq", "--match", "kernel", "--output", rule,
        ],
        j.path(),
    );
    run_ok(&["revert", &dev], j.path());
    assert_eq!(lo.active_scheduler(), "none");
    let (ok, out) = udevadm_test(&dev);
    assert!(ok, "{out}");
    assert_eq!(diagnostics(&out, &guard.rule, &dev), Vec::<String>::new());
    let want: Vec<(String, String)> = [
        ("queue/scheduler", "bfq"),
        ("queue/nr_requests", "64"),
        ("queue/read_ahead_kb", "256"),
    ]
    .iter()
    .map(|(a, v)| (a.to_string(), v.to_string()))
    .collect();
    assert_eq!(writes(&out, &guard.rule, &dev), want, "{out}");
    assert_eq!(lo.active_scheduler(), "bfq");
    assert_eq!(lo.queue("nr_requests"), "64");
    assert_eq!(lo.queue("read_ahead_kb"), "256");
}
