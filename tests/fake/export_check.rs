//! `blktune export --check` on fake trees: the report against generated
//! files and a distribution-style rules file, values the device would refuse,
//! bounded memory, pipes. The machine is `export_cli`'s.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::fake::FakeDisk;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common;
use crate::export_cli::{host, stderr, stdout};

use common::fake_host::FakeHost;

/// The devices whose `change` action has a matching line in a `--check` report.
fn matched(report: &Value) -> Vec<String> {
    report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["actions"].as_array().unwrap().iter().any(|a| {
                a["action"] == "change"
                    && a["lines"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|l| l["status"] == "match")
            })
        })
        .map(|d| d["device"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn class_rule_warnings_name_exactly_what_the_check_matches() {
    let h = host();
    // A second rotational loop device; vda and sdb rotate too, but are not loops.
    let t = &h.tree;
    t.add(&FakeDisk::new("loop1").dev(7, 1).rotational(true))
        .unwrap();
    t.add(
        &FakeDisk::new("loop2")
            .dev(7, 2)
            .rotational(true)
            .active("none"),
    )
    .unwrap();
    let q = h.dir.path().join("sys/block/loop0/queue/rotational");
    fs::write(&q, "1\n").unwrap();
    for (dev, also) in [("loop0", vec!["loop1", "loop2"]), ("sda", vec![])] {
        let file = h.out(&format!("61-{dev}.rules"));
        let o = h.run(&[
            "export",
            dev,
            "--match",
            "class",
            "-o",
            file.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        let warned: Vec<String> = err
            .lines()
            .find_map(|l| l.split("rule also matches ").nth(1))
            .map(|l| {
                l.trim_end_matches(" on this host")
                    .split(", ")
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(warned, also, "{err}");
        let mut want: Vec<String> = also.iter().map(|s| s.to_string()).collect();
        want.push(dev.to_string());
        want.sort();
        let mut got = matched(&check_json(&h, &file));
        got.sort();
        assert_eq!(got, want, "the warning and --check agree");
        assert!(!got.contains(&"vda".to_string()));
    }
}

/// `--check --json` of a file without problems (exit 0).
fn check_json(fake_host: &FakeHost, file: &Path) -> Value {
    check_json_exit(fake_host, file, 0)
}

/// `--check --json`, expecting exit code `code` (3: problems found).
fn check_json_exit(fake_host: &FakeHost, file: &Path, code: i32) -> Value {
    let o = fake_host.run(&["export", "--check", file.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(code), "{}{}", stdout(&o), stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn device<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == name)
        .unwrap()
}

fn result(report: &Value, name: &str, action: &str) -> Vec<(String, String)> {
    device(report, name)["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == action)
        .unwrap()["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["attr"].as_str().unwrap().to_string(),
                w["value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn check_a_generated_file_hits_exactly_its_devices() {
    let h = host();
    let file = h.out("61-blktune.rules");
    let o = h.run(&[
        "export",
        "sda",
        "nvme0n1",
        "loop0",
        "-s",
        "kyber",
        "--nr-requests",
        "64",
        "--read-ahead-kb",
        "256",
        "--output",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = check_json(&h, &file);
    assert_eq!(r["rules"], 3);
    let want = pairs(&[
        ("queue/scheduler", "kyber"),
        ("queue/nr_requests", "64"),
        ("queue/read_ahead_kb", "256"),
    ]);
    for name in ["sda", "nvme0n1", "loop0"] {
        for action in ["add", "change"] {
            assert_eq!(result(&r, name, action), want, "{name} {action}");
        }
    }
    for name in ["sdb", "sdc", "vda", "zram0"] {
        assert!(result(&r, name, "change").is_empty(), "{name}");
    }
    // A rule for a device without a scheduler is checked the same way.
    let z = h.out("62-zram.rules");
    let o = h.run(&["export", "zram0", "--output", z.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = check_json(&h, &z);
    assert_eq!(
        result(&r, "zram0", "add"),
        pairs(&[("queue/read_ahead_kb", "128")])
    );
    assert!(result(&r, "sda", "add").is_empty());
}

#[test]
fn check_a_distribution_style_file() {
    let h = host();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/60-io-scheduler.rules");
    let r = check_json_exit(&h, &fixture, 3);
    assert_eq!(r["ignored"][0]["why"], "invalid key 'KERNAL'");
    assert_eq!(
        result(&r, "nvme0n1", "add"),
        pairs(&[("queue/scheduler", "none")])
    );
    assert_eq!(
        result(&r, "sdb", "change"),
        pairs(&[("queue/scheduler", "bfq")])
    );
    assert_eq!(
        result(&r, "vda", "change"),
        pairs(&[("queue/scheduler", "bfq")])
    );
    // sda: deadline, then the local override, whose nr_requests is lost:
    // the scheduler write after it resets it, so the result leaves it out.
    assert_eq!(
        result(&r, "sda", "add"),
        pairs(&[("queue/scheduler", "kyber")])
    );
    assert_eq!(
        device(&r, "sda")["actions"][0]["reset"],
        serde_json::json!([{"attr": "queue/nr_requests", "value": "32"}])
    );
    let sda = &device(&r, "sda")["actions"][0];
    assert_eq!(
        sda["uncertain"], true,
        "the PROGRAM line may set read-ahead"
    );
    assert!(
        sda["problems"][0]
            .as_str()
            .unwrap()
            .contains("sets queue/nr_requests before it writes the scheduler"),
        "{sda}"
    );
    let program = sda["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["status"] == "cannot-evaluate")
        .unwrap();
    assert!(program["why"][0].as_str().unwrap().contains("PROGRAM"));
    // zram0 has no scheduler: the TEST guard sends it to the end.
    assert!(result(&r, "zram0", "add").is_empty());
    // Text form: the same facts for people, and exit code 3.
    let o = h.run(&["export", "--check", fixture.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(
            "result: scheduler=kyber (nr_requests=32 is reset by a later scheduler write)"
        ),
        "{text}"
    );
    assert!(text.contains("problems found (exit code 3)"), "{text}");
    assert!(
        text.contains("udev ignores this line: invalid key 'KERNAL'"),
        "{text}"
    );
    assert!(text.contains("problem: line"), "{text}");
    assert!(text.contains("cannot evaluate"), "{text}");
}

#[test]
fn check_reports_a_rule_that_also_hits_partitions() {
    let h = host();
    let file = h.out("61-parts.rules");
    // No DEVTYPE guard: sda's partition sda1 matches KERNEL=="sd*" too.
    fs::write(
        &file,
        "ACTION==\"add|change\", KERNEL==\"sd*\", ATTR{queue/scheduler}=\"bfq\"\n",
    )
    .unwrap();
    let r = check_json_exit(&h, &file, 3);
    let p = device(&r, "sda")["actions"][0]["problems"][0]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        p.contains("line 1 also matches partition sda1") && p.contains("queue/scheduler"),
        "{r}"
    );
    assert_eq!(
        device(&r, "sdb")["actions"][0]["problems"],
        serde_json::json!([])
    );
    let o = h.run(&["export", "--check", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stdout(&o).contains("problem: line 1 also matches partition sda1"),
        "{}",
        stdout(&o)
    );
    // The guard, or one with the same effect (a partition has no queue/), is enough.
    for guard in ["ENV{DEVTYPE}==\"disk\"", "TEST==\"queue/scheduler\""] {
        fs::write(
            &file,
            format!("ACTION==\"add|change\", {guard}, KERNEL==\"sd*\", ATTR{{queue/scheduler}}=\"bfq\"\n"),
        )
        .unwrap();
        let r = check_json(&h, &file);
        assert_eq!(
            result(&r, "sda", "add"),
            pairs(&[("queue/scheduler", "bfq")]),
            "{guard}"
        );
    }
}

#[test]
fn check_of_a_generated_file_finds_no_problems() {
    let h = host();
    let file = h.out("61-blktune.rules");
    let o = h.run(&["export", "sda", "sdb", "-o", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = h.run(&["export", "--check", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).ends_with("\nno problems found\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn check_without_udev_database_says_so() {
    let h = host();
    let file = h.out("61-x.rules");
    fs::write(
        &file,
        "ACTION==\"add|change\", ENV{ID_WWN}==\"0x1\", ATTR{queue/scheduler}=\"bfq\"\n",
    )
    .unwrap();
    fs::remove_dir_all(h.dir.path().join("udev-data")).unwrap();
    let r = check_json(&h, &file);
    let sda = &device(&r, "sda")["actions"][1];
    assert_eq!(sda["lines"][0]["status"], "cannot-evaluate");
    assert!(
        sda["lines"][0]["why"][0]
            .as_str()
            .unwrap()
            .contains("no udev database entry"),
        "{sda}"
    );
}

#[test]
fn check_of_a_missing_file_fails_in_one_line() {
    let o = host().run(&["export", "--check", "/nonexistent/x.rules"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o).lines().count(), 1);
}

/// A hostile rules file: 4 MiB of lines that match every device, half of
/// them a problem. The report keeps the first 100 of each kind per device
/// and action and counts the rest, so its memory and length do not grow
/// with lines x devices (1.3 GB for 16 MiB and three devices before).
#[test]
fn a_rules_file_of_a_hundred_thousand_matching_lines_is_checked_in_bounded_memory() {
    if !common::require_tool("check_in_bounded_memory", "prlimit") {
        return;
    }
    let disks: Vec<FakeDisk> = (0..30)
        .map(|i| FakeDisk::new(&format!("loop{i}")).dev(7, i))
        .collect();
    let h = FakeHost::new(&disks);
    let pair = "KERNEL==\"*\", ATTR{queue/nr_requests}=\"64\"\nKERNEL==\"*\", ATTR{queue/scheduler}=\"none\"\n";
    let rules = h.path("many.rules");
    fs::write(&rules, pair.repeat((4 << 20) / pair.len())).unwrap();
    let lines = 2 * ((4 << 20) / pair.len());
    let run = |json: bool| {
        let mut c = Command::new("prlimit");
        c.arg(format!("--as={}", 1u64 << 30))
            .arg(env!("CARGO_BIN_EXE_blktune"))
            .arg("--sysfs-root")
            .arg(h.path("sys"))
            .arg("--proc-root")
            .arg(h.path("proc"))
            .args(["export", "--udev-db"])
            .arg(h.path("udev-data"))
            .arg("--check")
            .arg(&rules);
        if json {
            c.arg("--json");
        }
        c.output().unwrap()
    };
    let o = run(false);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.len() < 2 << 20, "{} bytes of report", text.len());
    assert!(
        text.contains(&format!(
            "… and {} more matching lines (only the first 100 are listed)",
            lines - 100
        )),
        "{:.3000}",
        text
    );
    assert!(
        text.contains("more problems (only the first 100"),
        "{:.3000}",
        text
    );
    assert!(text.contains("at least "), "{}", &text[text.len() - 300..]);
    let o = run(true);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let a = &v["devices"][0]["actions"][0];
    assert_eq!(a["lines"].as_array().unwrap().len(), 100);
    assert_eq!(a["lines_more"], lines - 100);
    // Past 4 MiB a file is not a rules file: one line, nothing checked.
    fs::write(&rules, pair.repeat((4 << 20) / pair.len() + 1)).unwrap();
    let o = run(false);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("larger than 4096 KiB"),
        "{}",
        stderr(&o)
    );
}

/// Values the kernel would refuse on the device: a scheduler it does not
/// offer, an empty one, nr_requests that is not a number or out of range,
/// read-ahead too large, a tunable that is not a number. udev only logs a
/// failed write, so `--check` is where a user learns of it (exit 3).
#[test]
fn check_flags_values_the_device_would_refuse() {
    let h = host();
    let rules = h.path("values.rules");
    fs::write(
        &rules,
        concat!(
            "KERNEL==\"loop0\", ATTR{queue/scheduler}=\"cfq\"\n",
            "KERNEL==\"loop0\", ATTR{queue/scheduler}=\"\"\n",
            "KERNEL==\"loop0\", ATTR{queue/scheduler}=\"mq-deadline\", ATTR{queue/iosched/read_expire}=\"abc\"\n",
            "KERNEL==\"loop0\", ATTR{queue/nr_requests}=\"-1\"\n",
            "KERNEL==\"loop0\", ATTR{queue/nr_requests}=\"5000\"\n",
            "KERNEL==\"loop0\", ATTR{queue/read_ahead_kb}=\"99999999999999999999\"\n",
            "KERNEL==\"loop0\", ATTR{queue/read_ahead_kb}=\"%k\"\n",
        ),
    )
    .unwrap();
    let o = h.run(&["export", "--check", rules.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    for needle in [
        "line 1: scheduler 'cfq' is not one the device offers (none, mq-deadline, kyber, bfq)",
        "line 2: scheduler '' is not one the device offers",
        "line 3: read_expire 'abc' is not an integer",
        "line 4: nr_requests '-1' is not a whole number",
        "line 5: nr_requests '5000' is out of range",
        "line 6: read_ahead_kb '99999999999999999999' is not a whole number",
    ] {
        assert!(out.contains(needle), "{needle}:\n{out}");
    }
    // A substitution is not judged.
    assert!(!out.contains("problem: line 7"), "{out}");
    assert!(out.contains("6 problems found"), "{out}");
}

/// The file to check may be a pipe whose writer is slower than blktune
/// (`--check /dev/stdin`, `--check <(...)`): read as it comes, to its end.
#[test]
fn check_reads_a_slow_pipe_to_its_end() {
    use std::io::Write;
    let h = host();
    let mut child = h
        .command(&["export", "--check", "/dev/stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // More than a pipe holds, so that the reader must wait for the writer.
    let rules = "ACTION==\"add|change\", KERNEL==\"sdb\", ATTR{queue/scheduler}=\"bfq\"\n";
    for _ in 0..2000 {
        stdin.write_all(rules.as_bytes()).unwrap();
    }
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout(&o).contains("sdb"), "{}", stdout(&o));
}
