//! Leftovers of scratch runs that were killed outright (SIGKILL, the OOM
//! killer): no guard ran, so the loop device stays bound and its backing file
//! stays in the scratch directory. The next scratch run removes them.
//!
//! Safe by construction: a scratch file's name carries its creator's pid, the
//! creator's start time and its pid namespace ([`Creator`]). Only a file whose
//! name parses, from our own pid namespace, whose pid is gone or now belongs
//! to a process that started at another time (pid reuse), is a leftover. A
//! loop device over any other file, or over the file of a live process, is
//! never touched.

use super::{FILE_PREFIX, SETTINGS_SUFFIX, read_settings_file, settings_file};
use crate::os::SysRoot;
use crate::tuner::Tuner;
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Who created a scratch file, as its name says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Creator {
    /// Process id.
    pub pid: u32,
    /// Its start time in clock ticks after boot (`/proc/<pid>/stat` field 22, proc(5)).
    pub start: u64,
    /// Inode of its pid namespace (`/proc/self/ns/pid`): a pid means nothing
    /// in another namespace.
    pub pidns: u64,
}

impl Creator {
    /// This process, if procfs says who it is.
    pub fn current(root: &SysRoot) -> Option<Self> {
        let start = stat_start_time(&root.read_proc("self/stat").ok()?)?;
        let pidns = parse_ns_link(&root.read_proc_link("self/ns/pid").ok()?.to_string_lossy())?;
        Some(Self {
            pid: std::process::id(),
            start,
            pidns,
        })
    }

    /// `blktune-scratch-<pid>-<start>-<pidns>-<unique>.img`.
    pub fn file_name(&self, unique: u64) -> String {
        format!(
            "{FILE_PREFIX}{}-{}-{}-{unique}.img",
            self.pid, self.start, self.pidns
        )
    }

    /// The creator a file name (no directory) names, if it is such a name.
    pub fn parse(name: &str) -> Option<Self> {
        let rest = name.strip_prefix(FILE_PREFIX)?.strip_suffix(".img")?;
        let f: Vec<u64> = rest
            .split('-')
            .map(|p| {
                (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| p.parse().ok())
                    .flatten()
            })
            .collect::<Option<_>>()?;
        match f[..] {
            [pid, start, pidns, _unique] => Some(Self {
                pid: u32::try_from(pid).ok()?,
                start,
                pidns,
            }),
            _ => None,
        }
    }
}

/// `starttime` (field 22) of a `/proc/<pid>/stat` line (proc(5)). The
/// command name (field 2) may hold spaces and parentheses, so the fields are
/// counted after the last `)`.
pub fn stat_start_time(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first word after the name.
    after.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// The inode of a namespace link's target, `pid:[4026531836]` (namespaces(7)).
pub fn parse_ns_link(link: &str) -> Option<u64> {
    link.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// A scratch device or file whose creator is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// The loop device still bound to the file (`loop7`), if any.
    pub device: Option<String>,
    /// The backing file.
    pub file: PathBuf,
    /// The pid its name carries.
    pub pid: u32,
}

impl Leftover {
    /// The line printed once it is removed.
    pub fn message(&self) -> String {
        match &self.device {
            Some(d) => format!(
                "blktune: removed leftover scratch device {d} ({}, process {} is gone)",
                self.file.display(),
                self.pid
            ),
            None => format!(
                "blktune: removed leftover scratch file {} (process {} is gone)",
                self.file.display(),
                self.pid
            ),
        }
    }
}

/// What a sweep looks at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// Bound loop devices and the text of their `loop/backing_file`.
    pub loops: Vec<(String, String)>,
    /// Scratch-named files in the scratch directory (absolute paths).
    pub files: Vec<PathBuf>,
    /// Start time of every process that exists now, by pid (at least those
    /// named by the candidates).
    pub processes: BTreeMap<u32, u64>,
    /// Our own pid namespace; `None`: nothing can be judged, nothing is a leftover.
    pub pidns: Option<u64>,
}

/// A `loop/backing_file` text as a path: the kernel appends ` (deleted)`
/// once the file is unlinked (`d_path()`).
pub(crate) fn backing_path(text: &str) -> PathBuf {
    PathBuf::from(text.strip_suffix(" (deleted)").unwrap_or(text))
}

/// The creator of `path` if the path is an absolute scratch file name of our
/// pid namespace whose creator is gone.
fn gone_creator(path: &Path, observed: &Observed) -> Option<Creator> {
    if !path.is_absolute() {
        return None;
    }
    let c = Creator::parse(path.file_name()?.to_str()?)?;
    if Some(c.pidns) != observed.pidns {
        return None;
    }
    // Alive only if that pid exists and started when the creator did.
    (observed.processes.get(&c.pid) != Some(&c.start)).then_some(c)
}

/// The leftovers among what was observed: loop devices over a gone
/// creator's scratch file, and such files that no loop device is bound to.
pub fn leftovers(observed: &Observed) -> Vec<Leftover> {
    let mut out: Vec<Leftover> = observed
        .loops
        .iter()
        .filter_map(|(dev, text)| {
            let file = backing_path(text);
            let c = gone_creator(&file, observed)?;
            Some(Leftover {
                device: Some(dev.clone()),
                file,
                pid: c.pid,
            })
        })
        .collect();
    for f in &observed.files {
        // A settings file goes with its scratch file, or alone if that is gone.
        let img = f
            .to_str()
            .and_then(|s| s.strip_suffix(SETTINGS_SUFFIX))
            .map(PathBuf::from);
        if img.as_ref().is_some_and(|i| observed.files.contains(i)) {
            continue;
        }
        let main = img.as_ref().unwrap_or(f);
        if observed.loops.iter().any(|(_, t)| &backing_path(t) == main) {
            continue;
        }
        if let Some(c) = gone_creator(main, observed) {
            out.push(Leftover {
                device: None,
                file: f.clone(),
                pid: c.pid,
            });
        }
    }
    out
}

/// Look at the bound loop devices, the scratch files in `dir` and the
/// processes their names point to, through `root`.
pub fn observe(root: &SysRoot, dir: &Path) -> Observed {
    let loops: Vec<(String, String)> = root
        .block_names()
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.as_str().starts_with("loop"))
        .filter_map(|d| {
            // Documentation/ABI/testing/sysfs-block-loop: only while bound.
            let b = root.read_dev_attr(&d, "loop/backing_file").ok()?;
            Some((d.to_string(), b))
        })
        .collect();
    let files: Vec<PathBuf> = fs::canonicalize(dir)
        .and_then(fs::read_dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter(|e| e.file_name().to_string_lossy().starts_with(FILE_PREFIX))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    let pids = loops
        .iter()
        .map(|(_, t)| backing_path(t))
        .chain(files.iter().cloned())
        .filter_map(|p| Creator::parse(p.file_name()?.to_str()?))
        .map(|c| c.pid);
    let processes = pids
        .filter_map(|pid| {
            let stat = root.read_proc(&format!("{pid}/stat")).ok()?;
            Some((pid, stat_start_time(&stat)?))
        })
        .collect();
    let pidns = root
        .read_proc_link("self/ns/pid")
        .ok()
        .and_then(|l| parse_ns_link(&l.to_string_lossy()));
    Observed {
        loops,
        files,
        processes,
        pidns,
    }
}

/// Remove the leftovers of killed scratch runs: detach each leftover loop
/// device (if it is still bound to the same file) and delete its file.
/// Returns one line per item for stderr. Only on the live system: losetup
/// acts on the real kernel, whatever a fake tree says.
pub fn sweep(root: &SysRoot, dir: &Path) -> Vec<String> {
    if !root.is_live() {
        return Vec::new();
    }
    let mut lines = Vec::new();
    for l in leftovers(&observe(root, dir)) {
        if let Some(dev) = &l.device {
            // Re-check right before acting: bound to the same file still?
            let same = root
                .device(dev)
                .and_then(|d| root.read_dev_attr(&d, "loop/backing_file").ok())
                .is_some_and(|t| backing_path(&t) == l.file);
            if !same {
                continue;
            }
            // The killed run could not put the loop device's queue settings
            // back; its settings file says what they were at attach.
            if let Some(original) = read_settings_file(&l.file)
                && let Err(e) = Tuner::new(root.clone(), None).restore(dev, &original)
            {
                lines.push(format!(
                    "blktune: note: cannot put back the queue settings of leftover {dev}: {e}"
                ));
            }
            if let Err(e) = detach(dev) {
                lines.push(format!(
                    "blktune: note: cannot remove leftover scratch device {dev} ({}): {e}",
                    l.file.display()
                ));
                continue;
            }
        }
        let _ = fs::remove_file(settings_file(&l.file));
        match fs::remove_file(&l.file) {
            Ok(()) => lines.push(l.message()),
            // Already gone (a parallel sweep, or unlinked before the kill).
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if l.device.is_some() {
                    lines.push(l.message());
                }
            }
            Err(e) => lines.push(format!(
                "blktune: note: cannot delete leftover scratch file {}: {e}",
                l.file.display()
            )),
        }
    }
    lines
}

/// `losetup -d /dev/<dev>`.
fn detach(dev: &str) -> io::Result<()> {
    let o = Command::new("losetup")
        .arg("-d")
        .arg(Path::new("/dev").join(dev))
        .output()?;
    if o.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(
            String::from_utf8_lossy(&o.stderr).trim().to_owned(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeDisk, FakeTree};

    const NS: u64 = 4026531836;

    fn name(pid: u32, start: u64) -> String {
        Creator {
            pid,
            start,
            pidns: NS,
        }
        .file_name(7)
    }

    fn observed(loops: &[(&str, &str)], files: &[&str], alive: &[(u32, u64)]) -> Observed {
        Observed {
            loops: loops
                .iter()
                .map(|(d, b)| (d.to_string(), b.to_string()))
                .collect(),
            files: files.iter().map(PathBuf::from).collect(),
            processes: alive.iter().copied().collect(),
            pidns: Some(NS),
        }
    }

    #[test]
    fn names_carry_pid_start_and_namespace() {
        let c = Creator {
            pid: 1234,
            start: 98765,
            pidns: NS,
        };
        let n = c.file_name(42);
        assert_eq!(n, "blktune-scratch-1234-98765-4026531836-42.img");
        assert_eq!(Creator::parse(&n), Some(c));
        // The old two-number names, other files, and tricks are not ours to judge.
        for bad in [
            "blktune-scratch-1234-42.img",
            "blktune-scratch-1234-1-2-3-4.img",
            "blktune-scratch-1234-98765-4026531836-42.img.bak",
            "blktune-scratch-+1-2-3-4.img",
            "blktune-scratch-1--3-4.img",
            "blktune-scratch-99999999999-1-2-3.img",
            "disk.img",
        ] {
            assert_eq!(Creator::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn start_time_is_field_22_even_with_odd_command_names() {
        let tail = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 20 21";
        assert_eq!(
            stat_start_time(&format!("77 (blktune) {tail}")),
            Some(424242)
        );
        assert_eq!(
            stat_start_time(&format!("77 (a) b) (c d) {tail}")),
            Some(424242)
        );
        assert_eq!(stat_start_time("77 (short) S 1"), None);
        assert_eq!(parse_ns_link("pid:[4026531836]"), Some(NS));
        assert_eq!(parse_ns_link("net:[4026531836]"), None);
    }

    #[test]
    fn a_dead_or_reused_pid_makes_a_leftover_a_live_one_does_not() {
        let dead = format!("/var/tmp/{}", name(100, 5000));
        let live = format!("/var/tmp/{}", name(200, 6000));
        let reused = format!("/var/tmp/{}", name(300, 7000));
        let o = observed(
            &[
                ("loop1", &dead),
                ("loop2", &live),
                ("loop3", &reused),
                ("loop4", "/srv/images/disk.img"),
                ("loop5", "/var/tmp/blktune-scratch-400-9.img"),
            ],
            &[],
            // 300 exists, but started later: another process got the pid.
            &[(200, 6000), (300, 7100), (400, 1)],
        );
        let l = leftovers(&o);
        assert_eq!(
            l,
            vec![
                Leftover {
                    device: Some("loop1".into()),
                    file: dead.clone().into(),
                    pid: 100
                },
                Leftover {
                    device: Some("loop3".into()),
                    file: reused.into(),
                    pid: 300
                },
            ]
        );
        assert_eq!(
            l[0].message(),
            format!("blktune: removed leftover scratch device loop1 ({dead}, process 100 is gone)")
        );
    }

    #[test]
    fn another_namespace_or_an_unknown_one_is_never_judged() {
        let other_ns = format!(
            "/var/tmp/{}",
            Creator {
                pid: 100,
                start: 5000,
                pidns: NS + 1
            }
            .file_name(1)
        );
        let ours = format!("/var/tmp/{}", name(100, 5000));
        let mut o = observed(&[("loop1", &other_ns), ("loop2", &ours)], &[], &[]);
        assert_eq!(leftovers(&o).len(), 1);
        assert_eq!(leftovers(&o)[0].device.as_deref(), Some("loop2"));
        o.pidns = None;
        assert!(leftovers(&o).is_empty());
    }

    #[test]
    fn unlinked_backing_files_and_orphan_files_are_found_once() {
        let a = format!("/var/tmp/{}", name(100, 1));
        let b = format!("/var/tmp/{}", name(101, 1));
        let c = format!("/var/tmp/{}", name(102, 1));
        let o = observed(
            &[("loop1", &format!("{a} (deleted)")), ("loop2", &b)],
            // b is bound (reported with its device), c is bound to nothing.
            &[&b, &c, "relative/blktune-scratch-1-1-4026531836-1.img"],
            &[],
        );
        let l = leftovers(&o);
        let got: Vec<(Option<&str>, String)> = l
            .iter()
            .map(|l| (l.device.as_deref(), l.file.display().to_string()))
            .collect();
        assert_eq!(
            got,
            vec![(Some("loop1"), a), (Some("loop2"), b), (None, c.clone())]
        );
        assert_eq!(
            l[2].message(),
            format!("blktune: removed leftover scratch file {c} (process 102 is gone)")
        );
    }

    #[test]
    fn settings_files_go_with_their_scratch_files_or_alone_when_those_are_gone() {
        let p = |pid, u| {
            format!(
                "/var/tmp/{}",
                Creator {
                    pid,
                    start: 1,
                    pidns: NS
                }
                .file_name(u)
            )
        };
        let side = |f: &str| format!("{f}{SETTINGS_SUFFIX}");
        let (bound, orphan, alone, live, live_bound) =
            (p(1, 1), p(2, 2), p(3, 3), p(4, 4), p(5, 5));
        let o = observed(
            &[("loop1", &bound), ("loop5", &live_bound)],
            &[
                &bound,
                &side(&bound),
                &orphan,
                &side(&orphan),
                &side(&alone),
                &side(&live),
                &side(&live_bound),
            ],
            &[(4, 1), (5, 1)],
        );
        let got: Vec<(Option<String>, String)> = leftovers(&o)
            .into_iter()
            .map(|l| (l.device, l.file.display().to_string()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some("loop1".into()), bound),
                (None, orphan),
                (None, side(&alone))
            ]
        );
    }

    #[test]
    fn observe_reads_loops_files_and_processes_through_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(&dir.path().join("root")).unwrap();
        let scratch = dir.path().join("scratch");
        fs::create_dir_all(&scratch).unwrap();
        let scratch = fs::canonicalize(&scratch).unwrap();
        let gone = scratch.join(name(100, 50));
        let live = scratch.join(name(200, 60));
        let orphan = scratch.join(name(300, 70));
        for f in [&gone, &live, &orphan] {
            fs::write(f, "").unwrap();
        }
        fs::write(scratch.join("unrelated.img"), "").unwrap();
        let root = t.root();
        for (n, minor, file) in [("loop1", 1, &gone), ("loop2", 2, &live)] {
            t.add(&FakeDisk::new(n).dev(7, minor)).unwrap();
            let d = root.sysfs().join("block").join(n).join("loop");
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("backing_file"), format!("{}\n", file.display())).unwrap();
        }
        // An unbound loop device has no loop/backing_file.
        t.add(&FakeDisk::new("loop3").dev(7, 3)).unwrap();
        let proc_ = root.procfs();
        let stat = |start: u64| {
            format!("200 (blktune) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 {start} 20\n")
        };
        fs::create_dir_all(proc_.join("200")).unwrap();
        fs::write(proc_.join("200/stat"), stat(60)).unwrap();
        fs::create_dir_all(proc_.join("self/ns")).unwrap();
        std::os::unix::fs::symlink(format!("pid:[{NS}]"), proc_.join("self/ns/pid")).unwrap();

        let o = observe(&root, &scratch);
        assert_eq!(o.pidns, Some(NS));
        assert_eq!(o.processes, BTreeMap::from([(200, 60)]));
        assert_eq!(o.loops.len(), 2);
        let l = leftovers(&o);
        assert_eq!(l.len(), 2, "{l:?}");
        assert_eq!(l[0].device.as_deref(), Some("loop1"));
        assert_eq!(l[0].file, gone);
        assert_eq!((l[1].device.as_deref(), &l[1].file), (None, &orphan));
        // A fake tree is never acted on: losetup would hit the real kernel.
        assert!(sweep(&root, &scratch).is_empty());
        assert!(gone.exists() && orphan.exists());
    }
}
