//! Every example in README.md, docs/ and benches/RESULTS.md is produced or
//! checked by a test, so none goes stale (docs/TESTING.md, "Examples in the
//! docs"; the machinery is `tests/common/docs.rs`):
//!
//! - console blocks run on the docs' example machine below, a fake tree of
//!   their own per block (those marked `<!-- run: loop -->` run as root on a
//!   loop device: `tests/real/docs_examples.rs`);
//! - a `text` block right after `<!-- snapshot: PATH -->` is the insta
//!   snapshot at PATH (a TestBackend screen), without its quotes;
//! - any other `text` block is a capture of a live machine: the paragraph
//!   before it must say so ("captured") and name the machine and command.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::fake::{FakeDisk, FakeTree};
use common::docs::{Shell, blessed, blocks, documents, line_matches, output_matches, place, repo};
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// The example machine of the docs, `db1`: an NVMe SSD, a SATA SSD, a SATA
/// disk, a loop device and zram, with the udev database a Debian host has for
/// them, in a temp dir of its own. It changes no setting in any example: a
/// fake tree does not do the kernel's part of a scheduler switch (bracket the
/// new one, reset nr_requests, swap the tunables), so examples that change
/// settings run on a real loop device (`tests/real/docs_examples.rs`).
fn example_machine() -> (Shell, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let tree = FakeTree::new(base).unwrap();
    let disks = [
        FakeDisk::new("nvme0n1")
            .dev(259, 0)
            .model("Samsung SSD 980 PRO 1TB", None)
            .ids(Some("S5GXNX0R123456"), Some("eui.002538b911b12345"))
            .active("none")
            .hw_queue_depth(1023)
            .partitions(&["nvme0n1p1", "nvme0n1p2"])
            .size_bytes(1_000_204_886_016),
        FakeDisk::new("sda")
            .dev(8, 0)
            .model("Samsung SSD 860", Some("ATA"))
            .hw_queue_depth(32)
            .size_bytes(500_107_862_016),
        FakeDisk::new("sdb")
            .dev(8, 16)
            .model("WDC WD40EFRX-68N", Some("ATA"))
            .rotational(true)
            .active("bfq")
            .hw_queue_depth(32)
            .size_bytes(4_000_787_030_016),
        FakeDisk::new("loop0")
            .dev(7, 0)
            .active("none")
            .hw_queue_depth(128)
            .size_bytes(256 << 20),
        FakeDisk::new("zram0")
            .dev(253, 0)
            .no_queue()
            .size_bytes(8 << 30),
    ];
    let mut stats = Vec::new();
    for disk in &disks {
        let mut disk = disk.clone();
        // nr_requests as the kernel sets it: the hardware queue depth under
        // none, else twice it, at most 2 x BLKDEV_DEFAULT_RQ (128):
        // `blk_mq_init_sched()`, block/blk-mq-sched.c.
        let depth = disk.hw_queue_depth.unwrap_or(128);
        disk.nr_requests = if disk.active == "none" {
            depth
        } else {
            2 * depth.min(128)
        };
        tree.add(&disk).unwrap();
        stats.push((disk.name.clone(), disk.major, disk.minor));
    }
    // Counters that stay put: every interval of the examples is idle.
    let counters = blktune_core::diskstats::Counters {
        rd_ios: 81_234,
        wr_ios: 40_321,
        io_ticks: 90_000,
        ..Default::default()
    };
    let lines: Vec<(&str, u32, u32, blktune_core::diskstats::Counters)> = stats
        .iter()
        .map(|(name, major, minor)| (name.as_str(), *major, *minor, counters))
        .collect();
    tree.set_diskstats(&lines).unwrap();
    fs::write(base.join("proc/sys/kernel/hostname"), "db1\n").unwrap();
    fs::write(base.join("proc/sys/kernel/osrelease"), "6.12.48-amd64\n").unwrap();
    for sub in [
        "udev-data",
        "config/etc/udev/rules.d",
        "prometheus",
        "bin",
        "work",
    ] {
        fs::create_dir_all(base.join(sub)).unwrap();
    }
    for (key, entry) in [
        (
            "b259:0",
            "S:disk/by-id/nvme-eui.002538b911b12345\nE:ID_WWN=eui.002538b911b12345\n\
             E:ID_SERIAL=Samsung_SSD_980_PRO_1TB_S5GXNX0R123456\n",
        ),
        (
            "b8:0",
            "S:disk/by-id/ata-Samsung_SSD_860_S3Z1NB0K123456\n\
             E:ID_SERIAL=Samsung_SSD_860_S3Z1NB0K123456\nE:ID_BUS=ata\n",
        ),
        (
            "b8:16",
            "S:disk/by-id/wwn-0x50014ee2b5e12345\nE:ID_WWN=0x50014ee2b5e12345\n\
             E:ID_WWN_WITH_EXTENSION=0x50014ee2b5e12345\n\
             E:ID_SERIAL=WDC_WD40EFRX-68N_WD-WCC7K1234567\n",
        ),
        ("b7:0", "E:ID_FS_TYPE=\n"),
        ("b253:0", "E:ID_FS_TYPE=\n"),
    ] {
        fs::write(base.join("udev-data").join(key), entry).unwrap();
    }
    for shared in ["assets", "tests"] {
        std::os::unix::fs::symlink(repo().join(shared), base.join("work").join(shared)).unwrap();
    }
    let here = base.display().to_string();
    let paths = [
        ("/run/blktune", format!("{here}/sys/.blktune-journal")),
        (
            "/etc/udev/rules.d",
            format!("{here}/config/etc/udev/rules.d"),
        ),
        (
            "/var/lib/prometheus/node-exporter",
            format!("{here}/prometheus"),
        ),
    ];
    let mut to_docs: Vec<(String, String, bool)> = vec![
        (
            format!(" --sysfs-root {here}/sys --proc-root {here}/proc"),
            String::new(),
            false,
        ),
        (format!(" --udev-db {here}/udev-data"), String::new(), false),
        (
            format!(" --config-root {here}/config"),
            String::new(),
            false,
        ),
    ];
    to_docs.extend(
        paths
            .iter()
            .map(|(shown, h)| (h.clone(), shown.to_string(), false)),
    );
    to_docs.extend([
        (format!("{here}/work/"), String::new(), false),
        (format!("{here}/sys"), "/sys".to_string(), false),
        (format!("{here}/config"), String::new(), false),
    ]);
    let shell = Shell {
        bin: base.join("bin"),
        work: base.join("work"),
        env: vec![("SOURCE_DATE_EPOCH".into(), "1767323045".into())],
        to_here: paths
            .iter()
            .map(|(shown, h)| (shown.to_string(), h.clone()))
            .collect(),
        to_docs,
        only_device: None,
    };
    // The subcommands that read the udev database and configuration get
    // this machine's; an example that names its own tree keeps it.
    let bin = env!("CARGO_BIN_EXE_blktune");
    shell.write_wrapper(&format!(
        "roots=\"--sysfs-root {here}/sys --proc-root {here}/proc\"\n\
         case \" $* \" in *\" --sysfs-root \"*) roots= ;; esac\n\
         case \"$1\" in\n\
         list) exec '{bin}' $roots \"$@\" --udev-db {here}/udev-data ;;\n\
         export) exec '{bin}' $roots \"$@\" --udev-db {here}/udev-data --config-root {here}/config ;;\n\
         *) exec '{bin}' $roots \"$@\" ;;\n\
         esac\n"
    ));
    (shell, dir)
}

/// Run every console block of the docs on the example machine and compare.
#[test]
fn every_console_example_prints_what_the_docs_show() {
    let checked = common::docs::check_console_blocks("fake", example_machine);
    assert!(checked > 0, "no console example found");
}

/// The lines of an insta snapshot of a TestBackend screen, unquoted.
fn snapshot_screen(path: &Path) -> Vec<String> {
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| panic!("snapshot {}: {e}", path.display()));
    let body = text
        .splitn(3, "---\n")
        .nth(2)
        .unwrap_or_else(|| panic!("{}: no insta header", path.display()));
    body.lines()
        .map(|l| {
            let l = l.strip_prefix('"').unwrap_or(l);
            let l = l.strip_suffix('"').unwrap_or(l);
            l.replace("\\\"", "\"")
                .replace("\\\\", "\\")
                .trim_end()
                .to_string()
        })
        .collect()
}

/// Screens shown from a snapshot are that snapshot, and every other output
/// block says it is a capture of a live machine.
#[test]
fn every_screen_is_a_snapshot_or_a_described_capture() {
    let mut failures = String::new();
    let mut snapshots = 0;
    for doc in documents() {
        let text = fs::read_to_string(&doc).unwrap();
        for block in blocks(&text) {
            if block.info != "text" {
                continue;
            }
            let at = place(&doc, block.open);
            match block
                .marker
                .as_deref()
                .and_then(|m| m.strip_prefix("snapshot:"))
            {
                Some(path) => {
                    snapshots += 1;
                    let want = snapshot_screen(&repo().join(path.trim()));
                    let shown: Vec<String> = block
                        .body
                        .iter()
                        .map(|l| l.trim_end().to_string())
                        .collect();
                    if shown != want {
                        let _ = writeln!(
                            failures,
                            "\n{at}: not the snapshot {}; it is now:\n{}",
                            path.trim(),
                            want.join("\n")
                        );
                    }
                }
                None if !block.before.to_lowercase().contains("captured") => {
                    let _ = writeln!(
                        failures,
                        "\n{at}: an output that no test checks: say above it that it was \
                         captured, on which machine and with which command (or make it a \
                         console example or a snapshot)"
                    );
                }
                None => {}
            }
        }
    }
    assert!(snapshots > 0, "no snapshot shown in the docs");
    assert!(failures.is_empty(), "{failures}");
}

/// Every fenced block says what it is (console, text, sh, ...), so no output
/// slips past the two tests above as an unmarked block.
#[test]
fn every_block_names_its_kind() {
    let mut unnamed = Vec::new();
    for doc in documents() {
        for block in blocks(&fs::read_to_string(&doc).unwrap()) {
            if block.info.is_empty() {
                unnamed.push(place(&doc, block.open));
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "blocks without a kind (```console, ```text, ```sh, ...): {unnamed:?}"
    );
}

/// Every source file and test the docs name in backquotes
/// (`tests/real/set.rs::two_sets_at_once_never_lose_the_original`,
/// `crates/blktune-core/src/sched.rs`) exists, so a renamed test cannot
/// leave a guarantee pointing at nothing.
#[test]
fn every_file_and_test_the_docs_name_exists() {
    let mut missing = Vec::new();
    let mut named = 0;
    for doc in documents() {
        let text = fs::read_to_string(&doc).unwrap();
        let mut line = 0;
        for (i, span) in text.split('`').enumerate() {
            let at = line;
            line += span.matches('\n').count();
            // Odd pieces are inside backquotes; placeholders and globs are no names.
            let is_path = ["tests/", "crates/", "src/"]
                .iter()
                .any(|p| span.starts_with(p));
            if i % 2 == 0 || !is_path || span.contains([' ', '<', '*']) {
                continue;
            }
            named += 1;
            let (file, function) = match span.split_once("::") {
                Some((file, function)) => (file, Some(function)),
                None => (span, None),
            };
            let found = match function {
                None => repo().join(file).exists(),
                Some(function) => fs::read_to_string(repo().join(file))
                    .is_ok_and(|source| source.contains(&format!("fn {function}("))),
            };
            if !found {
                missing.push(format!("{}: {span}", place(&doc, at)));
            }
        }
    }
    assert!(named > 20, "the docs name only {named} files");
    assert!(
        missing.is_empty(),
        "the docs name files or tests that do not exist:\n{}",
        missing.join("\n")
    );
}

/// The matcher can fail: wildcards match within a line, `...` across lines,
/// and nothing else is forgiven.
#[test]
fn the_matcher_takes_wildcards_and_nothing_more() {
    let lines = |s: &str| s.lines().map(str::to_string).collect::<Vec<_>>();
    assert!(line_matches(
        "took [..]ms in the kernel",
        "took 12ms in the kernel"
    ));
    assert!(line_matches("a [..] c [..]", "a b c d"));
    assert!(line_matches("[..]", ""));
    assert!(!line_matches("took [..]ms", "took 12 s"));
    assert!(!line_matches("abc", "abd"));
    assert!(!line_matches("abc", "abcd"));
    assert!(line_matches("abc  ", "abc"));
    assert!(output_matches(&lines("a\n...\nz"), &lines("a\nb\nc\nz")));
    assert!(output_matches(&lines("a\n...\nz"), &lines("a\nz")));
    assert!(!output_matches(&lines("a\n...\nz"), &lines("a\nb")));
    assert!(!output_matches(&lines("a\nb"), &lines("a\nb\nc")));
    assert_eq!(
        blessed(&lines("took [..]ms\nold"), &lines("took 3ms\nnew")),
        lines("took [..]ms\nnew")
    );
    let doc = "x\n<!-- snapshot: a.snap -->\n```text\n  y\n```\n\nsaid\n\n  ```console\n  $ blktune list\n  z\n  ```\n";
    let found = blocks(doc);
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].marker.as_deref(), Some("snapshot: a.snap"));
    assert_eq!(found[0].before, "x");
    assert_eq!(found[1].indent, 2);
    assert_eq!(found[1].before, "said");
    assert_eq!(found[1].body, lines("$ blktune list\nz"));
}
