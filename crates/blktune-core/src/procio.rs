//! Who does the I/O: the processes that moved the most bytes to or from the
//! block layer in the last interval, with the device where it can be told.
//!
//! The counts are the kernel's per-process I/O accounting (`read_bytes` and
//! `write_bytes` of `/proc/<pid>/io`, see proc(5)), read through sysinfo's
//! per-process disk usage. Only the same user or root may read another
//! process's `io`, so without root the list holds the caller's own processes
//! and [`ProcessSample::limited`] says so. Reading every process costs a
//! directory scan and one small read each: do it only while a view shows it.
//!
//! The device of a process is told from its open files (`/proc/<pid>/fd`): an
//! open block device names itself; a regular file names the device of the
//! filesystem it is on ([`crate::topology::mount_containing`]).

use crate::os::SysRoot;
use crate::topology::{Mount, mount_containing, parse_mountinfo};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind};

/// Most open files looked at per process when telling its device.
const MAX_FDS_SCANNED: usize = 4096;

/// One process's I/O over the last interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessIo {
    pub pid: u32,
    /// User name, or the numeric uid when it has none.
    pub user: String,
    /// The command line (or the name when the command line is empty).
    pub command: String,
    /// Bytes per second read from the block layer.
    pub read_bps: f64,
    /// Bytes per second written to the block layer (page cache write-back
    /// counts for the process that dirtied the pages).
    pub write_bps: f64,
    /// Devices its open files are on, where that can be told.
    pub devices: Vec<String>,
}

/// The top processes of one interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessSample {
    /// Busiest first; idle processes are left out.
    pub rows: Vec<ProcessIo>,
    /// Seconds the rates cover (0 on the first sample: no rates yet).
    pub interval: f64,
    /// Not root: only the caller's own processes can be seen.
    pub limited: bool,
}

/// Busiest first (read + write), then by pid; idle ones dropped; at most `top`.
pub fn rank(mut rows: Vec<ProcessIo>, top: usize) -> Vec<ProcessIo> {
    rows.retain(|r| r.read_bps + r.write_bps > 0.0);
    rows.sort_by(|a, b| {
        (b.read_bps + b.write_bps)
            .total_cmp(&(a.read_bps + a.write_bps))
            .then(a.pid.cmp(&b.pid))
    });
    rows.truncate(top);
    rows
}

/// The device named by one open file's link target, if any: `/dev/X` for a
/// block device of this machine, else the device under the file's filesystem.
pub fn device_of_link(
    target: &str,
    block_names: &BTreeSet<String>,
    mounts: &[Mount],
    by_number: &BTreeMap<(u32, u32), String>,
) -> Option<String> {
    if let Some(name) = target.strip_prefix("/dev/") {
        // A device node: a block device of ours, or nothing (tty, null, ...).
        return block_names.contains(name).then(|| name.to_string());
    }
    // Sockets, pipes, anon inodes: "socket:[123]" and the like.
    if !target.starts_with('/') {
        return None;
    }
    let path = target.strip_suffix(" (deleted)").unwrap_or(target);
    let m = mount_containing(mounts, path)?;
    by_number.get(&(m.major, m.minor)).cloned()
}

/// Samples per-process I/O; keep one across ticks (the rates are differences).
#[derive(Debug)]
pub struct ProcessWatch {
    sys: System,
    last: Option<Instant>,
    users: HashMap<u32, String>,
}

impl Default for ProcessWatch {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcessWatch {
    /// A watch with no sample yet (the first [`ProcessWatch::sample`] has no rates).
    pub fn new() -> Self {
        Self {
            sys: System::new(),
            last: None,
            users: HashMap::new(),
        }
    }

    /// The `top` busiest processes since the last call. `by_number` maps a
    /// major:minor (whole disks and partitions) to its name, for telling the
    /// device of a process's open files.
    pub fn sample(
        &mut self,
        root: &SysRoot,
        by_number: &BTreeMap<(u32, u32), String>,
        top: usize,
    ) -> ProcessSample {
        let kind = ProcessRefreshKind::nothing()
            .with_disk_usage()
            .with_user(UpdateKind::OnlyIfNotSet)
            .with_cmd(UpdateKind::OnlyIfNotSet);
        self.sys
            .refresh_processes_specifics(ProcessesToUpdate::All, true, kind);
        let now = Instant::now();
        let interval = self
            .last
            .replace(now)
            .map_or(0.0, |t| now.duration_since(t).as_secs_f64());
        let limited = !crate::os::is_root();
        if interval <= 0.0 {
            return ProcessSample {
                rows: Vec::new(),
                interval,
                limited,
            };
        }
        let rows = self
            .sys
            .processes()
            .iter()
            .map(|(pid, p)| {
                let du = p.disk_usage();
                let uid = p.user_id().map(|u| **u);
                let command = {
                    let cmd: Vec<String> = p
                        .cmd()
                        .iter()
                        .map(|a| a.to_string_lossy().into_owned())
                        .collect();
                    if cmd.is_empty() {
                        p.name().to_string_lossy().into_owned()
                    } else {
                        cmd.join(" ")
                    }
                };
                ProcessIo {
                    pid: pid.as_u32(),
                    user: uid.map_or_else(|| "?".into(), |u| u.to_string()),
                    command,
                    read_bps: du.read_bytes as f64 / interval,
                    write_bps: du.written_bytes as f64 / interval,
                    devices: Vec::new(),
                }
            })
            .collect();
        let mut rows = rank(rows, top);
        if !rows.is_empty() {
            let mounts = root
                .read_proc("self/mountinfo")
                .map(|t| parse_mountinfo(&t))
                .unwrap_or_default();
            let names: BTreeSet<String> = by_number.values().cloned().collect();
            for r in &mut rows {
                r.devices = devices_of(root, r.pid, &names, &mounts, by_number);
                r.user = self.user_name(&r.user);
            }
        }
        ProcessSample {
            rows,
            interval,
            limited,
        }
    }

    /// The name of a numeric uid (cached; the passwd file is read once per uid).
    fn user_name(&mut self, uid: &str) -> String {
        let Ok(n) = uid.parse::<u32>() else {
            return uid.to_string();
        };
        self.users
            .entry(n)
            .or_insert_with(|| {
                nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(n))
                    .ok()
                    .flatten()
                    .map_or_else(|| n.to_string(), |u| u.name)
            })
            .clone()
    }

    /// Is `pid` still known (for tests)?
    pub fn knows(&self, pid: u32) -> bool {
        self.sys.process(Pid::from_u32(pid)).is_some()
    }
}

/// The devices of `pid`'s open files, most used first (ties by name).
fn devices_of(
    root: &SysRoot,
    pid: u32,
    names: &BTreeSet<String>,
    mounts: &[Mount],
    by_number: &BTreeMap<(u32, u32), String>,
) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(root.procfs().join(format!("{pid}/fd"))) else {
        return Vec::new();
    };
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for e in fds.flatten().take(MAX_FDS_SCANNED) {
        let rel = format!("{pid}/fd/{}", e.file_name().to_string_lossy());
        if let Ok(target) = root.read_proc_link(&rel)
            && let Some(d) = device_of_link(&target.to_string_lossy(), names, mounts, by_number)
        {
            *count.entry(d).or_default() += 1;
        }
    }
    let mut v: Vec<(String, usize)> = count.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter().map(|(d, _)| d).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pid: u32, ratio: f64, w: f64) -> ProcessIo {
        ProcessIo {
            pid,
            user: "root".into(),
            command: format!("p{pid}"),
            read_bps: ratio,
            write_bps: w,
            devices: Vec::new(),
        }
    }

    #[test]
    fn ranking_drops_idle_sorts_by_total_and_breaks_ties_by_pid() {
        let rows = vec![
            row(5, 0.0, 0.0),
            row(9, 10.0, 0.0),
            row(3, 0.0, 100.0),
            row(7, 5.0, 5.0),
            row(2, 60.0, 40.0),
        ];
        let top: Vec<u32> = rank(rows, 3).iter().map(|r| r.pid).collect();
        assert_eq!(top, [2, 3, 7]);
    }

    #[test]
    fn a_link_names_a_block_device_or_the_device_of_its_filesystem() {
        let mounts = parse_mountinfo(
            "22 1 254:1 / / rw - ext4 /dev/vda1 rw\n30 22 0:40 / /dev/shm rw - tmpfs tmpfs rw\n",
        );
        let names: BTreeSet<String> = ["vda".to_string(), "loop3".to_string()].into();
        let by_number = BTreeMap::from([((254, 1), "vda1".to_string())]);
        let dev = |t: &str| device_of_link(t, &names, &mounts, &by_number);
        assert_eq!(dev("/dev/loop3").as_deref(), Some("loop3"));
        assert_eq!(dev("/var/lib/db/data (deleted)").as_deref(), Some("vda1"));
        assert_eq!(dev("/dev/shm/x"), None, "tmpfs is no block device");
        assert_eq!(dev("/dev/null"), None);
        assert_eq!(dev("socket:[1234]"), None);
        assert_eq!(dev("pipe:[9]"), None);
    }
}
