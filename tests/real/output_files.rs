//! `export -o PATH --force` and `record PATH --force` replace only a regular
//! file of this user or root: a device node, FIFO, socket or symlink (even
//! one to `/proc/self/fd/1`, or one planted by another user in a sticky
//! world-writable directory) is refused with one line, exit 2, and nothing
//! changes. Every special file here is made by the test in its own temp dir;
//! nothing in /dev is touched.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune_core::diskstats::Counters;
use blktune_core::fake::{FakeDisk, FakeTree};
use common::{require_root, stderr};
use nix::sys::stat::{Mode, SFlag, makedev, mknod};
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Host {
    dir: tempfile::TempDir,
}

fn host() -> Host {
    let dir = tempfile::tempdir().unwrap();
    let t = FakeTree::new(&dir.path().join("tree")).unwrap();
    t.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
    t.set_diskstats(&[("sda", 8, 0, Counters::default())])
        .unwrap();
    fs::create_dir_all(dir.path().join("out")).unwrap();
    Host { dir }
}

impl Host {
    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    /// Run blktune on the fake tree; killed after 20 s (an old build blocks
    /// opening a FIFO for writing).
    fn run(&self, args: &[&str]) -> Output {
        let root = self.dir.path().join("tree");
        let mut child = Command::new(env!("CARGO_BIN_EXE_blktune"))
            .arg("--sysfs-root")
            .arg(root.join("sys"))
            .arg("--proc-root")
            .arg(root.join("proc"))
            .args(args)
            .env("BLKTUNE_JOURNAL_DIR", self.dir.path().join("journal"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    }

    fn export(&self, path: &Path) -> Output {
        self.run(&[
            "export",
            "sda",
            "--match",
            "kernel",
            "-s",
            "bfq",
            "-o",
            path.to_str().unwrap(),
            "--force",
        ])
    }

    fn record(&self, path: &Path) -> Output {
        self.run(&[
            "record",
            path.to_str().unwrap(),
            "--force",
            "-i",
            "100ms",
            "-d",
            "200ms",
        ])
    }
}

/// Exit 2, one error line on stderr containing `needle` (export may add a
/// warning about the file name first).
fn refused(output: &Output, needle: &str) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    let errors = err.lines().filter(|l| !l.starts_with("blktune: warning:"));
    assert_eq!(errors.count(), 1, "{err}");
    assert!(err.contains(needle), "{err}");
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// What each special target is, to check it is still that afterwards.
fn kind(path: &Path) -> &'static str {
    let t = fs::symlink_metadata(path).unwrap().file_type();
    if t.is_symlink() {
        "symlink"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_char_device() {
        "char"
    } else if t.is_file() {
        "file"
    } else {
        "other"
    }
}

/// A FIFO, a symlink to `/proc/self/fd/1`, a symlink to a file, a dangling
/// symlink, and (as root) a char device node like /dev/null, all in `dir`.
fn specials(dir: &Path, victim: &Path) -> Vec<(PathBuf, &'static str)> {
    let fifo = dir.join("fifo");
    nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o600)).unwrap();
    let fd1 = dir.join("stdout-link");
    symlink("/proc/self/fd/1", &fd1).unwrap();
    let link = dir.join("victim-link");
    symlink(victim, &link).unwrap();
    let dangling = dir.join("dangling");
    symlink(dir.join("created-through-link"), &dangling).unwrap();
    let mut v = vec![
        (fifo, "is a FIFO"),
        (fd1, "is a symbolic link"),
        (link, "is a symbolic link"),
        (dangling, "is a symbolic link"),
    ];
    if nix::unistd::geteuid().is_root() {
        // The same device numbers as /dev/null, in our own directory.
        let null = dir.join("null");
        mknod(
            &null,
            SFlag::S_IFCHR,
            Mode::from_bits_truncate(0o666),
            makedev(1, 3),
        )
        .unwrap();
        v.push((null, "is a character device"));
    }
    v
}

#[test]
fn export_force_refuses_anything_but_a_regular_file() {
    let h = host();
    let victim = h.dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    let targets = specials(&h.out(), &victim);
    let before = names(&h.out());
    for (p, why) in &targets {
        let k = kind(p);
        let o = h.export(p);
        refused(&o, why);
        assert!(
            o.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert_eq!(kind(p), k, "{} was replaced", p.display());
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        names(&h.out()),
        before,
        "no temp file left, nothing created"
    );
    // A regular file of ours is still replaced with --force.
    let mine = h.out().join("61-blktune.rules");
    fs::write(&mine, "old\n").unwrap();
    let o = h.export(&mine);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(fs::read_to_string(&mine).unwrap().contains("bfq"));
}

#[test]
fn record_force_refuses_anything_but_a_regular_file() {
    let h = host();
    let victim = h.dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    let targets = specials(&h.out(), &victim);
    let before = names(&h.out());
    for (p, why) in &targets {
        let k = kind(p);
        refused(&h.record(p), why);
        assert_eq!(kind(p), k, "{} was replaced", p.display());
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(names(&h.out()), before);
    // A hard link to a file elsewhere: the new recording replaces the name,
    // the other file keeps its content (nothing is truncated in place).
    let mine = h.out().join("mine.ndjson");
    fs::hard_link(&victim, &mine).unwrap();
    let o = h.record(&mine);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(fs::read_to_string(&mine).unwrap().contains("\"header\""));
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
}

#[test]
fn record_force_in_a_sticky_dir_never_writes_through_another_users_link() {
    if !require_root("record_force_in_a_sticky_dir_never_writes_through_another_users_link") {
        return;
    }
    let h = host();
    let sticky = h.dir.path().join("shared-tmp");
    fs::create_dir(&sticky).unwrap();
    fs::set_permissions(h.dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
    // A root-owned file elsewhere, and a link to it planted by user nobody.
    let victim = h.dir.path().join("root-owned");
    fs::write(&victim, "root's data\n").unwrap();
    let planted = sticky.join("session.ndjson");
    symlink(&victim, &planted).unwrap();
    nix::unistd::fchownat(
        nix::fcntl::AT_FDCWD,
        &planted,
        Some(nix::unistd::Uid::from_raw(65534)),
        Some(nix::unistd::Gid::from_raw(65534)),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .unwrap();
    refused(&h.record(&planted), "is a symbolic link");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "root's data\n");
    assert_eq!(kind(&planted), "symlink");
    // A regular file of another user is not ours to replace either.
    let theirs = sticky.join("theirs.ndjson");
    fs::write(&theirs, "nobody's\n").unwrap();
    nix::unistd::chown(
        &theirs,
        Some(nix::unistd::Uid::from_raw(65534)),
        Some(nix::unistd::Gid::from_raw(65534)),
    )
    .unwrap();
    refused(&h.record(&theirs), "belongs to another user (uid 65534)");
    refused(&h.export(&theirs), "belongs to another user (uid 65534)");
    assert_eq!(fs::read_to_string(&theirs).unwrap(), "nobody's\n");
    assert_eq!(fs::symlink_metadata(&theirs).unwrap().uid(), 65534);
    assert_eq!(names(&sticky), ["session.ndjson", "theirs.ndjson"]);
}

/// A file in a directory that is not there: one line naming it and exit 2,
/// the same for `export -o` and `list --format openmetrics -o` (the metrics
/// exited 1), with no warning about the file's name before it (both printed
/// one first).
#[test]
fn a_missing_directory_is_one_line_and_exit_2_for_export_and_metrics() {
    let h = host();
    let missing = h.out().join("missing");
    for args in [
        vec![
            "export",
            "sda",
            "--match",
            "kernel",
            "-o",
            missing.join("x").to_str().unwrap(),
        ],
        vec![
            "list",
            "--format",
            "openmetrics",
            "-o",
            missing.join("x").to_str().unwrap(),
        ],
    ] {
        let o = h.run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("missing/x"), "{err}");
        assert!(!missing.exists());
    }
    // Once written, the name's warning comes.
    let o = h.run(&[
        "list",
        "--format",
        "openmetrics",
        "-o",
        h.out().join("m.txt").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("reads only files ending in .prom"));
}
