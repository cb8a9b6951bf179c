//! `-` is standard output for every writer (`list -o -`, `export -o -` in
//! each format) and standard input for `export --check -`: one rule for every
//! subcommand, and no file named `-` is ever created (`./-` names one).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::fake::FakeDisk;
use common::fake_host::FakeHost;
use std::fs;
use std::io::Write;
use std::process::{Output, Stdio};

/// sda and loop0, matched by the kernel name (no udev properties).
fn host() -> FakeHost {
    FakeHost::new(&[
        FakeDisk::new("sda").dev(8, 0),
        FakeDisk::new("loop0").dev(7, 0).active("none"),
    ])
}

/// Run in the host's `out/` directory (where a file named `-` would land).
fn run_in_out(fake_host: &FakeHost, args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = fake_host.command(args);
    c.current_dir(fake_host.path("out"))
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// Succeeded; its standard output.
fn ok(output: &Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn a_dash_output_is_standard_output_for_list_and_every_export_format() {
    let h = host();
    let cases: [&[&str]; 4] = [
        &["list", "--format", "openmetrics"],
        &["export", "sda", "--match", "kernel"],
        &["export", "sda", "--match", "kernel", "--format", "script"],
        &["export", "sda", "--match", "kernel", "--format", "tuned"],
    ];
    for args in cases {
        let plain = ok(&run_in_out(&h, args, None), &format!("{args:?}"));
        assert!(!plain.is_empty(), "{args:?}");
        let with_dash = [args, &["-o", "-"]].concat();
        let dashed = ok(&run_in_out(&h, &with_dash, None), &format!("{with_dash:?}"));
        // The same text, and nothing else ("wrote -; ..." is for files).
        assert_eq!(dashed, plain, "{with_dash:?}");
        assert!(
            h.out_entries().is_empty(),
            "{with_dash:?} created {:?}",
            h.out_entries()
        );
        // export's --force with `-` is accepted and changes nothing.
        if args[0] == "export" {
            let forced = [args, &["-o", "-", "--force"]].concat();
            assert_eq!(ok(&run_in_out(&h, &forced, None), "force"), plain);
        }
        // `./-` is a file of that name.
        let named = [args, &["-o", "./-"]].concat();
        ok(&run_in_out(&h, &named, None), &format!("{named:?}"));
        assert_eq!(h.out_entries(), ["-"], "{named:?}");
        // (An exported file's header names where it goes, so only list's is the same text.)
        let written = fs::read_to_string(h.out("-")).unwrap();
        assert!(!written.is_empty());
        if args[0] == "list" {
            assert_eq!(written, plain);
        }
        fs::remove_file(h.out("-")).unwrap();
    }
}

#[test]
fn check_dash_reads_standard_input() {
    let h = host();
    let rules = ok(
        &run_in_out(&h, &["export", "sda", "--match", "kernel"], None),
        "export",
    );
    fs::write(h.out("61-blktune.rules"), &rules).unwrap();
    let from_file = ok(
        &run_in_out(&h, &["export", "--check", "61-blktune.rules"], None),
        "check FILE",
    );
    let from_stdin = ok(
        &run_in_out(&h, &["export", "--check", "-"], Some(&rules)),
        "check -",
    );
    assert!(from_file.contains("sda"), "{from_file}");
    // The same findings, the input named as standard input.
    assert_eq!(
        from_stdin,
        from_file.replace("61-blktune.rules", "standard input")
    );
    // With a `-` file in the directory, `-` is still standard input.
    fs::write(h.out("-"), "garbage that is not a rule\n").unwrap();
    let again = ok(
        &run_in_out(&h, &["export", "--check", "-"], Some(&rules)),
        "check - beside ./-",
    );
    assert_eq!(again, from_stdin);
    // An empty standard input is an empty file: no rule, no problem.
    let o = run_in_out(&h, &["export", "--check", "-", "--json"], Some(""));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["file"], "standard input", "{v}");
}

/// `bench --export --export-output -`: the winner's rule goes to standard
/// output after the table (the same rule `export --check -` then accepts),
/// stderr says "standard output", and no file named `-` appears. A fake
/// disk whose simulated reads are fast only under kyber (as in
/// tests/fake/bench_verdicts.rs) gives a winner within the budget.
#[test]
fn bench_export_output_dash_writes_the_winners_rule_to_standard_output() {
    use blktune_core::fake::{Behaviour, FakeTree, SimLine};
    let dir = tempfile::tempdir().unwrap();
    let tree = FakeTree::new(&dir.path().join("root")).unwrap();
    let dev = format!("fkd{}", std::process::id());
    tree.add(&FakeDisk::new(&dev).dev(7, 0)).unwrap();
    let line = SimLine {
        name: dev.clone(),
        major: 7,
        minor: 0,
    };
    let _sim = tree.simulate(
        &dev,
        &["none", "mq-deadline", "kyber", "bfq"],
        64,
        vec![line],
        |scheduler, _| {
            vec![Behaviour {
                reads_per_s: 4000.0,
                read_ms: if scheduler == "kyber" { 0.8 } else { 2.0 },
                sectors: 8.0,
                ..Behaviour::default()
            }]
        },
    );
    let cwd = dir.path().join("cwd");
    fs::create_dir_all(&cwd).unwrap();
    let root = dir.path().join("root");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_blktune"))
        .arg("--sysfs-root")
        .arg(root.join("sys"))
        .arg("--proc-root")
        .arg(root.join("proc"))
        .args(["bench", &dev, "--settle", "0s", "--dwell", "500ms"])
        .args(["--schedulers", "mq-deadline,kyber", "--budget", "20s"])
        .args(["--export", "--export-output", "-"])
        .env("BLKTUNE_JOURNAL_DIR", dir.path().join("journal"))
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "{err}\n{out}");
    let table_at = out
        .find("winner for read-latency (r_await): kyber")
        .unwrap_or_else(|| panic!("no winner in the table: {out}"));
    let rule_at = out
        .find("ATTR{queue/scheduler}=\"kyber\"")
        .unwrap_or_else(|| panic!("no rule on standard output: {out}"));
    assert!(table_at < rule_at, "the rule before the table: {out}");
    assert!(
        err.contains("wrote the winner (scheduler=kyber) to standard output;"),
        "{err}"
    );
    let entries: Vec<_> = fs::read_dir(&cwd).unwrap().collect();
    assert!(entries.is_empty(), "created {entries:?}");
    // The rule part of standard output is a rule export --check accepts.
    let rule: String = out[out[..rule_at].rfind("\n#").map_or(0, |i| i + 1)..].to_owned();
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_blktune"))
        .arg("--sysfs-root")
        .arg(root.join("sys"))
        .arg("--proc-root")
        .arg(root.join("proc"))
        .args(["export", "--check", "-"])
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut check = check;
    check
        .stdin
        .take()
        .unwrap()
        .write_all(rule.as_bytes())
        .unwrap();
    let checked = check.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "{rule}\n{}",
        String::from_utf8_lossy(&checked.stdout)
    );
}
