//! `blktune export` on fake trees: bad input, no-clobber writes, refused
//! values, overrides, the script format. `export --check`:
//! `export_check.rs`, which shares this module's machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use blktune_core::fake::FakeDisk;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::common;

use common::fake_host::FakeHost;

/// The same machine as the golden tests: nvme0n1, sda (ID_SERIAL in the udev
/// db), sdb (ID_WWN), vda, loop0, zram0; sda has a partition sda1.
pub(crate) fn host() -> FakeHost {
    let h = FakeHost::new(&[
        FakeDisk::new("nvme0n1")
            .dev(259, 0)
            .model("Samsung SSD 980 PRO 1TB", None)
            .ids(Some("S5GXNX0R123456"), Some("eui.002538b911b12345"))
            .active("none"),
        FakeDisk::new("sda")
            .dev(8, 0)
            .model("Samsung SSD 860", Some("ATA"))
            .partitions(&["sda1"]),
        FakeDisk::new("sdb")
            .dev(8, 16)
            .model("WDC WD40EFRX-68N", Some("ATA"))
            .rotational(true),
        FakeDisk::new("sdc")
            .dev(8, 32)
            .model("Bad\"Model", Some("ATA"))
            .rotational(true),
        FakeDisk::new("vda")
            .dev(254, 0)
            .ids(Some("vd-serial-01"), None)
            .rotational(true),
        FakeDisk::new("loop0").dev(7, 0).active("none"),
        FakeDisk::new("zram0").dev(253, 0).no_queue(),
    ]);
    h.udev("b8:0", "E:ID_SERIAL=Samsung_SSD_860_S3Z1NB0K123456\n");
    h.udev("b8:16", "E:ID_WWN=0x50014ee2b5e12345\n");
    h.udev("b259:0", "E:ID_WWN=eui.002538b911b12345\n");
    h.udev("b254:0", "E:ID_SERIAL=vd-serial-01\n");
    h.udev("b7:0", "E:DISKSEQ=3\n");
    h
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Exit code 2 and exactly one line on stderr containing `needle`.
pub(crate) fn bad_input(output: &Output, needle: &str) {
    assert_eq!(output.status.code(), Some(2), "{}", stderr(output));
    let err = stderr(output);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{err}");
    assert!(output.stdout.is_empty(), "{}", stdout(output));
}

#[test]
fn unknown_device() {
    bad_input(&host().run(&["export", "sdq"]), "unknown device 'sdq'");
}

#[test]
fn partition() {
    bad_input(
        &host().run(&["export", "sda1"]),
        "'sda1' is a partition of 'sda'",
    );
}

#[test]
fn unknown_scheduler_lists_the_available_ones() {
    bad_input(
        &host().run(&["export", "sda", "--scheduler", "cfq"]),
        "unknown scheduler 'cfq'; available: none, mq-deadline, kyber, bfq",
    );
}

#[test]
fn unknown_tunable_and_bad_numbers() {
    let h = host();
    bad_input(
        &h.run(&["export", "sda", "-s", "kyber", "-t", "read_expire=5"]),
        "has no tunable 'read_expire'",
    );
    bad_input(
        &h.run(&["export", "sda", "--nr-requests", "9999"]),
        "nr_requests '9999'",
    );
    bad_input(
        &h.run(&["export", "zram0", "--scheduler", "kyber"]),
        "'zram0' has no I/O scheduler",
    );
}

#[test]
fn bad_match() {
    bad_input(
        &host().run(&["export", "sda", "--match", "serial"]),
        "invalid value 'serial'",
    );
}

#[test]
fn no_devices_and_nothing_changed() {
    bad_input(&host().run(&["export"]), "name the devices to export");
}

#[test]
fn existing_output_is_not_replaced_without_force() {
    let h = host();
    let target = h.out("61-blktune.rules");
    fs::write(&target, "# mine\n").unwrap();
    fs::write(h.out("60-other.rules"), "# other\n").unwrap();
    let o = h.run(&["export", "sda", "--output", target.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&target).unwrap(), "# mine\n");
    assert_eq!(h.out_entries(), ["60-other.rules", "61-blktune.rules"]);

    let o = h.run(&[
        "export",
        "sda",
        "--output",
        target.to_str().unwrap(),
        "--force",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with(&format!("wrote {}", target.display())));
    let text = fs::read_to_string(&target).unwrap();
    assert!(text.contains("ENV{ID_SERIAL}==\"Samsung_SSD_860_S3Z1NB0K123456\""));
    assert_eq!(
        fs::read_to_string(h.out("60-other.rules")).unwrap(),
        "# other\n"
    );
    assert_eq!(h.out_entries(), ["60-other.rules", "61-blktune.rules"]);
}

#[test]
fn refused_value_writes_nothing() {
    let h = host();
    let target = h.out("61-blktune.rules");
    let o = h.run(&[
        "export",
        "sdc",
        "--match",
        "model",
        "--output",
        target.to_str().unwrap(),
    ]);
    bad_input(&o, "'sdc': model \"Bad\\\"Model\" cannot be written");
    assert!(h.out_entries().is_empty());
}

#[test]
fn env_rules_need_a_file_name_after_persistent_storage() {
    let h = host();
    let early = h.out("10-blktune.rules");
    bad_input(
        &h.run(&["export", "sda", "--output", early.to_str().unwrap()]),
        "must sort after",
    );
    assert!(h.out_entries().is_empty());
    // A kernel-name rule does not depend on it.
    let o = h.run(&[
        "export",
        "sda",
        "--match",
        "kernel",
        "--output",
        early.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn stdout_export_of_live_settings() {
    let h = host();
    let o = h.run(&["export", "sda", "sdb", "loop0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Warnings go to stderr, one line each.
    assert!(stderr(&o).contains("warning: 'loop0' has no stable id"));
    // The version changes with every release; the rest must not.
    let text = stdout(&o).replace(env!("CARGO_PKG_VERSION"), "VERSION");
    insta::assert_snapshot!("cli_live_sda_sdb_loop0", text);
}

/// `export` reads each of a device's settings once: the rule, and the
/// refusal of a file that does not parse, come from the same read (a second
/// read could find something else, and give the rule and its message
/// different grounds).
#[test]
fn export_reads_each_setting_once() {
    let t = "export_reads_each_setting_once";
    if !common::require_tool(t, "strace") {
        return;
    }
    let h = host();
    let log = h.path("strace.log");
    let (o, opens) = common::strace(&h.command(&["export", "sda"]), "open,openat", &log);
    assert!(o.status.success(), "{}", stderr(&o));
    for file in ["scheduler", "nr_requests", "read_ahead_kb"] {
        // sda's: `-y` names the directory of a relative open.
        let n = (opens.lines())
            .filter(|l| {
                l.contains(&format!("/sda/queue>, \"{file}\""))
                    || l.contains(&format!("/sda/queue/{file}\""))
            })
            .count();
        assert_eq!(n, 1, "{file} opened {n} times:\n{opens}");
    }
}

#[test]
fn overrides_replace_live_values() {
    let h = host();
    let o = h.run(&[
        "export",
        "sda",
        "-s",
        "kyber",
        "--nr-requests",
        "64",
        "-t",
        "read_lat_nsec=1000000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(
            "#   sets:  scheduler=kyber read_lat_nsec=1000000 nr_requests=64 read_ahead_kb=128"
        ),
        "{text}"
    );
}

#[test]
fn a_scheduler_override_keeps_the_live_numbers() {
    let h = host();
    // sda runs mq-deadline with nr_requests and read_expire changed.
    let q = h.dir.path().join("sys/block/sda/queue");
    fs::write(q.join("nr_requests"), "64\n").unwrap();
    fs::write(q.join("read_ahead_kb"), "256\n").unwrap();
    fs::write(q.join("iosched/read_expire"), "100\n").unwrap();
    let o = h.run(&["export", "sda", "-s", "bfq", "--match", "kernel"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("#   sets:  scheduler=bfq nr_requests=64 read_ahead_kb=256"),
        "{text}"
    );
    assert!(
        !text.contains("iosched"),
        "mq-deadline's tunables do not apply: {text}"
    );
    let sched = text.find("ATTR{queue/scheduler}=\"bfq\"").unwrap();
    let nr = text.find("ATTR{queue/nr_requests}=\"64\"").unwrap();
    assert!(sched < nr, "nr_requests after the scheduler: {text}");
}

#[test]
fn output_into_a_missing_directory_names_the_given_path() {
    let h = host();
    let file = h.out("missing/dir/61-x.rules");
    let o = h.run(&["export", "loop0", "-o", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(file.to_str().unwrap()), "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert!(!err.contains(".blktune-"), "no temp file name: {err}");
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    assert_eq!(h.out_entries(), Vec::<String>::new());
}

/// Run an exported script against the fake tree (`BLKTUNE_SYSFS`, `BLKTUNE_UDEV_DB`).
fn run_script(fake_host: &FakeHost, script: &Path) -> Output {
    let p = fake_host.dir.path();
    Command::new("sh")
        .arg(script)
        .env("BLKTUNE_SYSFS", p.join("sys"))
        .env("BLKTUNE_UDEV_DB", p.join("udev-data"))
        .output()
        .unwrap()
}

fn queue(fake_host: &FakeHost, dev: &str, attr: &str) -> String {
    fs::read_to_string(
        fake_host
            .dir
            .path()
            .join(format!("sys/block/{dev}/queue/{attr}")),
    )
    .unwrap()
    .trim()
    .to_string()
}

#[test]
fn script_selects_like_the_rule_and_is_idempotent() {
    let h = host();
    // sda is found by ENV{ID_SERIAL} in the udev db.
    let s1 = h.out("a.sh");
    let o = h.run(&[
        "export",
        "sda",
        "-s",
        "mq-deadline",
        "-t",
        "read_expire=100",
        "--nr-requests",
        "64",
        "--read-ahead-kb",
        "256",
        "--format",
        "script",
        "-o",
        s1.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_script(&h, &s1);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(queue(&h, "sda", "iosched/read_expire"), "100");
    assert_eq!(queue(&h, "sda", "nr_requests"), "64");
    assert_eq!(queue(&h, "sda", "read_ahead_kb"), "256");
    // Nothing else touched.
    assert_eq!(queue(&h, "sdb", "nr_requests"), "256");
    assert_eq!(queue(&h, "loop0", "read_ahead_kb"), "128");
    let o = run_script(&h, &s1);
    assert!(o.status.success());
    assert_eq!(stdout(&o), "", "second run writes nothing");

    // A model rule finds sdb through its device/ attributes, not sdc.
    let s4 = h.out("d.sh");
    let o = h.run(&[
        "export",
        "sdb",
        "--match",
        "model",
        "--read-ahead-kb",
        "512",
        "--format",
        "script",
        "-o",
        s4.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(run_script(&h, &s4).status.success());
    assert_eq!(queue(&h, "sdb", "read_ahead_kb"), "512");
    assert_eq!(queue(&h, "sdc", "read_ahead_kb"), "128");

    // A class rule for the rotational sdb also matches sdc (sd*), never vda.
    let s2 = h.out("b.sh");
    let o = h.run(&[
        "export",
        "sdb",
        "--match",
        "class",
        "--read-ahead-kb",
        "1024",
        "--format",
        "script",
        "-o",
        s2.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("also matches sdc on this host"),
        "{}",
        stderr(&o)
    );
    let o = run_script(&h, &s2);
    assert!(o.status.success(), "{}", stderr(&o));
    for d in ["sdb", "sdc"] {
        assert_eq!(queue(&h, d, "read_ahead_kb"), "1024", "{d}");
    }
    assert_eq!(queue(&h, "vda", "read_ahead_kb"), "128");
    for d in ["sda", "nvme0n1", "loop0"] {
        assert_ne!(queue(&h, d, "read_ahead_kb"), "1024", "{d}");
    }

    // A scheduler switch the (fake) kernel does not confirm: exit 1, and the
    // later steps are not written onto the wrong scheduler.
    let s3 = h.out("c.sh");
    let o = h.run(&[
        "export",
        "nvme0n1",
        "-s",
        "kyber",
        "--nr-requests",
        "32",
        "--format",
        "script",
        "-o",
        s3.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_script(&h, &s3);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nvme0n1: wrote 'kyber' to queue/scheduler but it reads back"));
    assert_eq!(queue(&h, "nvme0n1", "nr_requests"), "256");

    // The device it was written for is gone: exit 1.
    fs::remove_dir_all(h.dir.path().join("sys/block/sda")).unwrap();
    let o = run_script(&h, &s1);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no device matches ENV{ID_SERIAL}"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn fake_tree_without_udev_db_flag_ignores_the_real_database() {
    // The real /run/udev/data may hold a b8:0 for another disk: with a
    // --sysfs-root that is not /sys, no database is read unless given.
    let h = host();
    let p = h.dir.path();
    let o = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .arg("--sysfs-root")
        .arg(p.join("sys"))
        .arg("--proc-root")
        .arg(p.join("proc"))
        .args(["export", "sda"])
        .env("BLKTUNE_JOURNAL_DIR", p.join("journal"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("ENV{ID_"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("'sda' has no stable id"),
        "{}",
        stderr(&o)
    );
}

/// A queue file that is there but does not parse would have been left out
/// of the rule without a word (a rule setting only read_ahead_kb): refused,
/// naming the file, exit 1, nothing printed.
#[test]
fn a_malformed_queue_file_is_named_and_nothing_exported() {
    for (file, content) in [
        ("read_ahead_kb", "abc\n"),
        ("nr_requests", "-5\n"),
        ("scheduler", "none mq-deadline kyber\n"),
    ] {
        let h = host();
        fs::write(h.path("sys/block/sda/queue").join(file), content).unwrap();
        let o = h.run(&["export", "sda", "--match", "kernel"]);
        assert_eq!(o.status.code(), Some(1), "{file}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!(
                "'sda': cannot read queue/{file}: unexpected content"
            )) && err.contains("nothing exported"),
            "{err}"
        );
        assert!(o.stdout.is_empty(), "{}", stdout(&o));
    }
    // A file that cannot be read at all: the read's own error.
    let h = host();
    let ra = h.path("sys/block/sda/queue/read_ahead_kb");
    fs::remove_file(&ra).unwrap();
    fs::create_dir(&ra).unwrap();
    let o = h.run(&["export", "sda", "--match", "kernel"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "blktune: 'sda': cannot read queue/read_ahead_kb: Is a directory (os error 21); \
         nothing exported\n"
    );
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
}
