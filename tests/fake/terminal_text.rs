//! Text from recordings, rules files, device names and paths never reaches
//! the terminal raw: control characters (escape sequences, bells, carriage
//! returns) and bidi controls come out as `\uXXXX`, on stdout and stderr.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use blktune_core::fake::{FakeDisk, FakeTree};
use std::process::{Command, Output};

/// An OSC title change, a screen clear and a right-to-left override.
const EVIL: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}\u{9b}31m";

fn raw_free(output: &Output) {
    for (what, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text
                .chars()
                .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
            "{what} has a raw control character: {text:?}"
        );
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_recordings_names_and_notes_are_escaped() {
    let d = tempfile::tempdir().unwrap();
    let header = serde_json::json!({
        "type": "header", "version": 1, "tool": format!("blktune {EVIL}"),
        "started_wall": 1767323045.0, "started": "2026-01-02T03:04:05Z", "interval_s": 1.0,
        "host": {"hostname": format!("host{EVIL}"), "kernel": "6.18", "uptime_s": 1.0},
        "devices": [{"name": format!("sd{EVIL}"), "major": 8, "minor": 0, "kind": "ssd",
                     "size_bytes": 1000, "model": format!("m{EVIL}")}]
    });
    let sample = |t: f64| {
        serde_json::json!({"type": "sample", "t": t, "wall": 1767323046.0,
            "disks": {format!("sd{EVIL}"): [t as u64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}})
    };
    let text = format!(
        "{header}\n{}\n{{\"type\":\"{EVIL}\"}}\n{}\n",
        sample(1.0),
        sample(2.0)
    );
    let f = d.path().join(format!("rec{EVIL}.ndjson"));
    std::fs::write(&f, text).unwrap();
    let o = run(&["replay", f.to_str().unwrap(), "--summary"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    raw_free(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("host\\u001b]0;pwned\\u0007"), "{out}");
    // JSON keeps its meaning: the escapes are JSON's own.
    let o = run(&["replay", f.to_str().unwrap(), "--summary", "--json"]);
    raw_free(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["host"]["hostname"], format!("host{EVIL}"));
    // An error naming the file.
    let missing = d.path().join(format!("gone{EVIL}"));
    let o = run(&["replay", missing.to_str().unwrap()]);
    assert!(!o.status.success());
    raw_free(&o);
}

#[test]
fn a_rules_file_and_a_device_name_are_escaped() {
    let d = tempfile::tempdir().unwrap();
    let t = FakeTree::new(d.path()).unwrap();
    t.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
    let rules = d.path().join("60-evil.rules");
    std::fs::write(
        &rules,
        format!(
            "ACTION==\"add\", KERNEL==\"sd*\", ATTR{{queue/scheduler}}=\"bfq{EVIL}\"\nKERNEL==\"x{EVIL}\" GARBAGE{EVIL}\n"
        ),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .arg("--sysfs-root")
        .arg(d.path().join("sys"))
        .arg("--proc-root")
        .arg(d.path().join("proc"))
        .args(["export", "--check", rules.to_str().unwrap()])
        .env("BLKTUNE_JOURNAL_DIR", d.path().join("journal"))
        .output()
        .unwrap();
    raw_free(&o);
    let all = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(all.contains("\\u001b"), "{all}");
}
