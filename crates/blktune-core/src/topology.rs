//! Where a device's I/O goes: the filesystems mounted on it and its
//! partitions (`/proc/self/mountinfo`), the file a loop device is backed by
//! and the device that file lives on (`loop/backing_file`), and stacking
//! (`holders/`, `slaves/`: dm, md, LVM).
//!
//! So a loop device on a file on ext4 on another disk reads as one chain
//! (`loop0 → file /srv/img on vda1 (/, ext4)`), not two unrelated devices.
//! Parsing is pure; [`Topology::read`] does the few reads through [`SysRoot`].

pub mod stacks;

use crate::device::BlockDevice;
use crate::os::SysRoot;
use std::collections::BTreeMap;

/// Longest mountinfo we read (a host with tens of thousands of mounts is
/// still far below; a hostile or broken file is cut here).
const MOUNTINFO_MAX_LINES: usize = 100_000;

/// One line of `/proc/self/mountinfo` (see proc(5), "/proc/pid/mountinfo").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub major: u32,
    pub minor: u32,
    /// Where it is mounted, unescaped (`\040` is a space).
    pub mount_point: String,
    /// `ext4`, `xfs`, `tmpfs`, ...
    pub fs_type: String,
    /// The mount source (`/dev/vda1`), unescaped.
    pub source: String,
}

/// Parse mountinfo. Lines that do not have the documented shape are skipped:
/// `id parent major:minor root mount-point options [optional...] - type source super-options`.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .take(MOUNTINFO_MAX_LINES)
        .filter_map(parse_mountinfo_line)
        .collect()
}

fn parse_mountinfo_line(line: &str) -> Option<Mount> {
    let mut fields = line.split(' ');
    let _id = fields.next()?;
    let _parent = fields.next()?;
    let (major, minor) = fields.next()?.split_once(':')?;
    let _root = fields.next()?;
    let mount_point = unescape_octal(fields.next()?);
    let _options = fields.next()?;
    // Optional fields (shared:N, master:N, ...) end at a lone "-".
    fields.by_ref().find(|f| *f == "-")?;
    let fs_type = fields.next()?.to_string();
    let source = unescape_octal(fields.next()?);
    Some(Mount {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        mount_point,
        fs_type,
        source,
    })
}

/// The kernel writes space, tab, newline and backslash in paths as `\ooo`
/// (`fs/proc_namespace.c`, `mangle`); undo that, leaving anything else as it is.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount whose mount point is the longest whole-component prefix of
/// `path` (the filesystem a file lives on), if any.
pub fn mount_containing<'a>(mounts: &'a [Mount], path: &str) -> Option<&'a Mount> {
    mounts
        .iter()
        .filter(|m| is_under(path, &m.mount_point))
        // The last of equally long mount points is the one on top.
        .max_by_key(|m| m.mount_point.len())
}

fn is_under(path: &str, dir: &str) -> bool {
    if dir == "/" {
        return path.starts_with('/');
    }
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A filesystem on a device (or one of its partitions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mounted {
    /// The device or partition it is on (`vda1`).
    pub on: String,
    pub mount_point: String,
    pub fs_type: String,
}

/// What a loop device reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backing {
    /// `loop/backing_file` (may end in ` (deleted)`).
    pub file: String,
    /// The device (or partition) of the filesystem the file is on, when it is
    /// a block device of this machine (not tmpfs).
    pub on: Option<String>,
    /// That filesystem's mount point and type.
    pub mount_point: Option<String>,
    pub fs_type: Option<String>,
}

/// Where one device's I/O goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// Filesystems mounted on the device or its partitions, by mount point.
    pub mounts: Vec<Mounted>,
    /// For a loop device: its backing file.
    pub backing: Option<Backing>,
    /// Devices stacked on this one (dm, md holding it).
    pub holders: Vec<String>,
    /// Devices this one is stacked on.
    pub slaves: Vec<String>,
}

impl Placement {
    /// One short line for a table column or a title: the first mount, else
    /// the backing file, else the stacking; empty when there is nothing.
    pub fn short(&self) -> String {
        if let Some(m) = self.mounts.first() {
            let more = if self.mounts.len() > 1 {
                format!(" +{}", self.mounts.len() - 1)
            } else {
                String::new()
            };
            return format!("{} {}{more}", m.mount_point, m.fs_type);
        }
        if let Some(b) = &self.backing {
            return match &b.on {
                Some(on) => format!("→{on}:{}", b.file),
                None => format!("→{}", b.file),
            };
        }
        if !self.holders.is_empty() {
            return format!("under {}", self.holders.join(","));
        }
        if !self.slaves.is_empty() {
            return format!("over {}", self.slaves.join(","));
        }
        String::new()
    }

    /// The lines of the detail pane: every mount, the backing chain, the stacking.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .mounts
            .iter()
            .map(|m| format!("{} on {} ({})", m.on, m.mount_point, m.fs_type))
            .collect();
        if let Some(b) = &self.backing {
            let on = match (&b.on, &b.mount_point, &b.fs_type) {
                (Some(on), Some(mp), Some(fs)) => format!(" on {on} ({mp}, {fs})"),
                (None, Some(mp), Some(fs)) => format!(" on {fs} ({mp})"),
                _ => String::new(),
            };
            out.push(format!("file {}{on}", b.file));
        }
        if !self.slaves.is_empty() {
            out.push(format!("stacked on {}", self.slaves.join(", ")));
        }
        if !self.holders.is_empty() {
            out.push(format!("used by {}", self.holders.join(", ")));
        }
        out
    }
}

/// What [`Topology`] needs of a device (taken from a [`BlockDevice`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceNode {
    pub name: String,
    pub major: u32,
    pub minor: u32,
    pub partitions: Vec<String>,
    pub holders: Vec<String>,
    pub slaves: Vec<String>,
}

impl From<&BlockDevice> for DeviceNode {
    fn from(d: &BlockDevice) -> Self {
        Self {
            name: d.name.clone(),
            major: d.major,
            minor: d.minor,
            partitions: d.partitions.clone(),
            holders: d.holders.clone(),
            slaves: d.slaves.clone(),
        }
    }
}

/// The placement of every device, read once; re-read on hot-plug or when a
/// view asks (mounts change rarely; this is not a per-tick read).
#[derive(Debug, Clone, Default)]
pub struct Topology {
    by_device: BTreeMap<String, Placement>,
}

impl Topology {
    /// Read mountinfo and each device's loop backing file; `devices` gives
    /// names, numbers, partitions, holders and slaves (already read).
    pub fn read(root: &SysRoot, devices: &[BlockDevice]) -> Self {
        let devices: Vec<DeviceNode> = devices.iter().map(DeviceNode::from).collect();
        let mounts = root
            .read_proc("self/mountinfo")
            .map(|t| parse_mountinfo(&t))
            .unwrap_or_default();
        let backing: BTreeMap<String, String> = devices
            .iter()
            .filter_map(|d| {
                let dev = root.device(&d.name)?;
                let file = root.read_dev_attr(&dev, "loop/backing_file").ok()?;
                Some((d.name.clone(), file.trim_end().to_string()))
            })
            .collect();
        Self::build(
            &devices,
            &mounts,
            &backing,
            &partition_numbers(root, &devices),
        )
    }

    /// The pure part of [`Topology::read`]: `backing` maps a loop device to
    /// its file; `parts` maps a major:minor to a partition's name.
    pub fn build(
        devices: &[DeviceNode],
        mounts: &[Mount],
        backing: &BTreeMap<String, String>,
        parts: &BTreeMap<(u32, u32), (String, String)>,
    ) -> Self {
        // major:minor -> (name, whole disk)
        let mut names: BTreeMap<(u32, u32), (String, String)> = parts.clone();
        for d in devices {
            names.insert((d.major, d.minor), (d.name.clone(), d.name.clone()));
        }
        let mut by_device: BTreeMap<String, Placement> = BTreeMap::new();
        for m in mounts {
            if let Some((name, disk)) = names.get(&(m.major, m.minor)) {
                by_device
                    .entry(disk.clone())
                    .or_default()
                    .mounts
                    .push(Mounted {
                        on: name.clone(),
                        mount_point: m.mount_point.clone(),
                        fs_type: m.fs_type.clone(),
                    });
            }
        }
        for (dev, file) in backing {
            let path = file.strip_suffix(" (deleted)").unwrap_or(file);
            let fs = mount_containing(mounts, path);
            let on = fs.and_then(|m| names.get(&(m.major, m.minor)).map(|(n, _)| n.clone()));
            by_device.entry(dev.clone()).or_default().backing = Some(Backing {
                file: file.clone(),
                on,
                mount_point: fs.map(|m| m.mount_point.clone()),
                fs_type: fs.map(|m| m.fs_type.clone()),
            });
        }
        for d in devices {
            if d.holders.is_empty() && d.slaves.is_empty() {
                continue;
            }
            let p = by_device.entry(d.name.clone()).or_default();
            p.holders = d.holders.clone();
            p.slaves = d.slaves.clone();
        }
        for p in by_device.values_mut() {
            p.mounts.sort_by(|a, b| a.mount_point.cmp(&b.mount_point));
        }
        Self { by_device }
    }

    /// Nothing known of any device (not read yet, or nothing mounted or stacked).
    pub fn is_empty(&self) -> bool {
        self.by_device.is_empty()
    }

    /// Where `device`'s I/O goes (empty when nothing is known).
    pub fn of(&self, device: &str) -> Option<&Placement> {
        self.by_device.get(device)
    }

    /// The whole devices `device`'s I/O goes to: a loop device's backing
    /// disk (the disk of the partition or device its file lives on), a
    /// stacked device's members. What the comparison engine watches as
    /// the device underneath (`vda (under loop0)`).
    pub fn underneath(&self, device: &str, devices: &[DeviceNode]) -> Vec<String> {
        let Some(p) = self.of(device) else {
            return Vec::new();
        };
        let whole = |name: &str| {
            devices
                .iter()
                .find(|d| d.name == name || d.partitions.iter().any(|x| x == name))
                .map(|d| d.name.clone())
        };
        let mut out: Vec<String> = Vec::new();
        let from_backing = p.backing.as_ref().and_then(|b| whole(b.on.as_deref()?));
        for name in from_backing
            .into_iter()
            .chain(p.slaves.iter().filter_map(|s| whole(s)))
        {
            if name != device && !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }
}

/// major:minor of every partition of `devices`, read from each partition's
/// `dev`: the partition's name and its whole disk's.
pub fn partition_numbers(
    root: &SysRoot,
    devices: &[DeviceNode],
) -> BTreeMap<(u32, u32), (String, String)> {
    let mut out = BTreeMap::new();
    for d in devices.iter().filter(|d| !d.partitions.is_empty()) {
        let Some(dev) = root.device(&d.name) else {
            continue;
        };
        for part in &d.partitions {
            let Ok(text) = root.read_dev_attr(&dev, &format!("{part}/dev")) else {
                continue;
            };
            if let Some((ma, mi)) = text.trim().split_once(':')
                && let (Ok(ma), Ok(mi)) = (ma.parse(), mi.parse())
            {
                out.insert((ma, mi), (part.clone(), d.name.clone()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
25 22 0:21 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw
40 22 7:1 / /mnt/inner\\040disk rw,relatime - ext4 /dev/loop1 rw
41 22 7:3 / /srv rw - xfs /dev/loop3 rw
garbage line
42 22 7:3 / /srv/sub rw shared:9 master:2 - xfs /dev/loop3 rw
";

    #[test]
    fn mountinfo_lines_parse_with_optional_fields_and_escapes() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m.len(), 5, "{m:?}");
        assert_eq!(m[0].mount_point, "/");
        assert_eq!((m[0].major, m[0].minor), (254, 1));
        assert_eq!(m[0].fs_type, "ext4");
        assert_eq!(m[2].mount_point, "/mnt/inner disk");
        assert_eq!(m[4].mount_point, "/srv/sub");
        assert_eq!(m[4].source, "/dev/loop3");
    }

    #[test]
    fn the_longest_whole_component_prefix_wins() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(mount_containing(&m, "/dev/shm/x").unwrap().fs_type, "tmpfs");
        assert_eq!(
            mount_containing(&m, "/dev/shmx/y").unwrap().mount_point,
            "/"
        );
        assert_eq!(
            mount_containing(&m, "/srv/sub/f").unwrap().mount_point,
            "/srv/sub"
        );
        assert_eq!(mount_containing(&m, "/srv").unwrap().mount_point, "/srv");
        assert!(mount_containing(&m, "relative").is_none());
    }

    #[test]
    fn unescape_leaves_what_is_not_an_escape() {
        assert_eq!(unescape_octal("a\\040b"), "a b");
        assert_eq!(unescape_octal("a\\134b"), "a\\b");
        assert_eq!(unescape_octal("a\\9b\\"), "a\\9b\\");
        assert_eq!(unescape_octal("\\04"), "\\04");
        assert_eq!(unescape_octal("\\777"), "\\777");
    }

    fn disk(name: &str, major: u32, minor: u32) -> DeviceNode {
        DeviceNode {
            name: name.into(),
            major,
            minor,
            ..DeviceNode::default()
        }
    }

    #[test]
    fn a_loop_file_on_another_loop_is_one_chain() {
        let mounts = parse_mountinfo(MOUNTINFO);
        let mut vda = disk("vda", 254, 0);
        vda.partitions = vec!["vda1".into()];
        let devices = [vda, disk("loop1", 7, 1), disk("loop2", 7, 2)];
        let backing = BTreeMap::from([
            ("loop1".to_string(), "/var/tmp/outer.img".to_string()),
            (
                "loop2".to_string(),
                "/mnt/inner disk/img (deleted)".to_string(),
            ),
        ]);
        let parts = BTreeMap::from([((254, 1), ("vda1".to_string(), "vda".to_string()))]);
        let t = Topology::build(&devices, &mounts, &backing, &parts);
        let vda = t.of("vda").unwrap();
        assert_eq!(vda.mounts[0].on, "vda1");
        assert_eq!(vda.short(), "/ ext4");
        let l1 = t.of("loop1").unwrap();
        assert_eq!(l1.mounts[0].mount_point, "/mnt/inner disk");
        assert_eq!(l1.backing.as_ref().unwrap().on.as_deref(), Some("vda1"));
        assert_eq!(
            l1.lines(),
            [
                "loop1 on /mnt/inner disk (ext4)",
                "file /var/tmp/outer.img on vda1 (/, ext4)"
            ]
        );
        let l2 = t.of("loop2").unwrap();
        assert_eq!(l2.backing.as_ref().unwrap().on.as_deref(), Some("loop1"));
        assert_eq!(l2.short(), "→loop1:/mnt/inner disk/img (deleted)");
        // The disks underneath: vda (whole) for loop1's file on vda1, loop1 for loop2.
        let nodes = [
            DeviceNode {
                partitions: vec!["vda1".into()],
                ..disk("vda", 254, 0)
            },
            disk("loop1", 7, 1),
            disk("loop2", 7, 2),
        ];
        assert_eq!(t.underneath("loop1", &nodes), ["vda"]);
        assert_eq!(t.underneath("loop2", &nodes), ["loop1"]);
        assert!(t.underneath("vda", &nodes).is_empty());
    }

    #[test]
    fn a_file_on_tmpfs_names_the_filesystem_not_a_device() {
        let mounts = parse_mountinfo(MOUNTINFO);
        let devices = [disk("loop5", 7, 5)];
        let backing = BTreeMap::from([("loop5".to_string(), "/dev/shm/fast".to_string())]);
        let t = Topology::build(&devices, &mounts, &backing, &BTreeMap::new());
        let p = t.of("loop5").unwrap();
        assert_eq!(p.lines(), ["file /dev/shm/fast on tmpfs (/dev/shm)"]);
        assert_eq!(p.short(), "→/dev/shm/fast");
    }

    #[test]
    fn stacking_is_named_both_ways() {
        let mut a = disk("sda", 8, 0);
        a.holders = vec!["dm-0".into()];
        let mut dm = disk("dm-0", 253, 0);
        dm.slaves = vec!["sda".into(), "sdb".into()];
        let t = Topology::build(&[a, dm], &[], &BTreeMap::new(), &BTreeMap::new());
        assert_eq!(t.of("sda").unwrap().short(), "under dm-0");
        assert_eq!(t.of("dm-0").unwrap().lines(), ["stacked on sda, sdb"]);
        let nodes = [disk("sda", 8, 0), disk("sdb", 8, 16), disk("dm-0", 253, 0)];
        assert_eq!(t.underneath("dm-0", &nodes), ["sda", "sdb"]);
        assert!(t.of("sdc").is_none());
    }
}
