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
