//! A device as the user names it: `sda`, `/dev/sda`, `/dev/mapper/vg0-root`,
//! `/dev/disk/by-id/wwn-0x5000...`, `/dev/md/root` or `8:0`, resolved to the
//! kernel name every blktune command works on.
//!
//! Resolution stays on the safe side of user input: a name is only ever the
//! result when it is an entry of `<sysfs>/block` ([`SysRoot::device`]); a
//! link under `/dev` is followed by the kernel (`stat`), never opened, and
//! what it leads to must be a block device whose numbers are that entry's
//! `dev`. Links are looked up, in order, in sysfs (`dm/name` for
//! `/dev/mapper/NAME`, `dev` for `MAJ:MIN`), the udev database's `S:` lines
//! (which also work for a captured tree), and on the live machine `/dev`.

use crate::error::TuneError;
use crate::os::{DeviceName, SysRoot, is_plausible_device_name};

/// A device's links relative to /dev (`disk/by-id/wwn-0x5000...`) by its
/// numbers: the udev database's `S:` lines (`UdevDb::links`), or nothing.
pub type Links<'a> = &'a dyn Fn(u32, u32) -> Vec<String>;

/// No links known (a tree without a udev database).
pub fn no_links(_major: u32, _minor: u32) -> Vec<String> {
    Vec::new()
}

/// A resolved name, and how it was found when not by its kernel name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub dev: DeviceName,
    /// `/dev/mapper/vg0-root is dm-0`: one line for the user when the name
    /// was found through a link, a dm name or numbers.
    pub via: Option<String>,
}

/// The longest name taken (a path under /dev is short).
const MAX_INPUT: usize = 1024;

/// Resolve `input` to a whole device of `root`, reading links from `links`
/// (and from `/dev` on the live machine). A partition, by any of its names,
/// is the [`TuneError::Partition`] error naming its disk.
pub fn resolve(root: &SysRoot, links: Links, input: &str) -> Result<Resolved, TuneError> {
    let unknown = || TuneError::UnknownDevice {
        name: input.chars().take(64).collect(),
        sysfs: root.sysfs().display().to_string(),
    };
    if input.is_empty() || input.len() > MAX_INPUT || input.contains('\0') {
        return Err(unknown());
    }
    if let Some(dev) = root.device(input) {
        return Ok(Resolved { dev, via: None });
    }
    if is_plausible_device_name(input) && !input.contains(':') {
        return Err(partition_or(root, input, input).unwrap_or_else(unknown));
    }
    if let Some((major, minor)) = parse_numbers(input) {
        return by_numbers(root, major, minor)
            .map(|name| found(root, input, &name))
            .unwrap_or_else(|| Err(unknown()));
    }
    let Some(rel) = input.strip_prefix("/dev/") else {
        return Err(unknown());
    };
    // `/dev/sda`: the kernel name itself, no link to say.
    if is_plausible_device_name(rel) {
        if let Some(dev) = root.device(rel) {
            return Ok(Resolved { dev, via: None });
        }
        if let Some(e) = partition_or(root, rel, input) {
            return Err(e);
        }
    }
    if let Some(name) = rel.strip_prefix("mapper/").and_then(|m| dm_named(root, m)) {
        return found(root, input, &name);
    }
    if let Some(name) = linked(root, links, rel) {
        return found(root, input, &name);
    }
    if root.is_live()
        && let Some(name) = linked_in_dev(root, input)
    {
        return found(root, input, &name);
    }
    Err(unknown())
}

/// `name` found for `input`: a whole device, or the partition error.
fn found(root: &SysRoot, input: &str, name: &str) -> Result<Resolved, TuneError> {
    match root.device(name) {
        Some(dev) => Ok(Resolved {
            via: Some(format!("{input} is {name}")),
            dev,
        }),
        None => Err(
            partition_or(root, name, input).unwrap_or_else(|| TuneError::UnknownDevice {
                name: input.chars().take(64).collect(),
                sysfs: root.sysfs().display().to_string(),
            }),
        ),
    }
}

/// The partition error when `name` is a partition (named `input` by the user).
fn partition_or(root: &SysRoot, name: &str, input: &str) -> Option<TuneError> {
    let parent = root.parent_of_partition(name)?;
    Some(TuneError::Partition {
        name: input.chars().take(64).collect(),
        parent: parent.to_string(),
    })
}

/// `8:0` -> `(8, 0)`.
fn parse_numbers(input: &str) -> Option<(u32, u32)> {
    let (a, b) = input.split_once(':')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 10 && s.bytes().all(|c| c.is_ascii_digit());
    (digits(a) && digits(b)).then(|| Some((a.parse().ok()?, b.parse().ok()?)))?
}

/// The device or partition whose `dev` is `major:minor`.
fn by_numbers(root: &SysRoot, major: u32, minor: u32) -> Option<String> {
    let want = format!("{major}:{minor}");
    for dev in root.block_names().ok()? {
        if root.read_dev_attr(&dev, "dev").is_ok_and(|d| d == want) {
            return Some(dev.as_str().to_owned());
        }
        for p in root.partitions_of(&dev) {
            if root
                .read_dev_attr(&dev, &format!("{p}/dev"))
                .is_ok_and(|d| d == want)
            {
                return Some(p);
            }
        }
    }
    None
}

/// The dm device whose `dm/name` is `name`.
fn dm_named(root: &SysRoot, name: &str) -> Option<String> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    root.block_names()
        .ok()?
        .into_iter()
        .filter(|d| d.as_str().starts_with("dm-"))
        .find(|d| root.read_dev_attr(d, "dm/name").is_ok_and(|n| n == name))
        .map(|d| d.as_str().to_owned())
}

/// The device (or partition) whose links list `rel` (relative to /dev:
/// `disk/by-id/wwn-0x5000...`, `md/root`, `vg0/root`).
fn linked(root: &SysRoot, links: Links, rel: &str) -> Option<String> {
    for dev in root.block_names().ok()? {
        let mut names = vec![dev.as_str().to_owned()];
        names.extend(root.partitions_of(&dev));
        for name in names {
            let rel_dev = if name == dev.as_str() {
                "dev".to_owned()
            } else {
                format!("{name}/dev")
            };
            let Some((major, minor)) = root
                .read_dev_attr(&dev, &rel_dev)
                .ok()
                .and_then(|d| parse_numbers(&d))
            else {
                continue;
            };
            if links(major, minor).iter().any(|l| l == rel) {
                return Some(name);
            }
        }
    }
    None
}

/// On the live machine: the block device a path under /dev leads to (the
/// kernel follows the links; nothing is opened), as the entry of
/// `/sys/block` (or a partition) whose `dev` has its numbers.
fn linked_in_dev(root: &SysRoot, input: &str) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = std::fs::metadata(input).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    let rdev = meta.rdev();
    by_numbers(root, libc::major(rdev), libc::minor(rdev))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeDisk, FakeTree};

    fn tree(dir: &std::path::Path) -> FakeTree {
        let t = FakeTree::new(dir).unwrap();
        t.add(&FakeDisk::new("sda").dev(8, 0).partitions(&["sda1", "sda2"]))
            .unwrap();
        t.add(
            &FakeDisk::new("dm-0")
                .dev(253, 0)
                .no_queue()
                .attr("dm/name", "vg0-root")
                .attr("dm/uuid", "LVM-abc"),
        )
        .unwrap();
        t
    }

    #[test]
    fn every_spelling_of_a_device_is_its_kernel_name() {
        let dir = tempfile::tempdir().unwrap();
        let t = tree(dir.path());
        let root = t.root();
        let db_dir = dir.path().join("udev");
        std::fs::create_dir_all(&db_dir).unwrap();
        std::fs::write(
            db_dir.join("b8:0"),
            "S:disk/by-id/wwn-0x5000c500a1b2c3d4\nE:ID_WWN=0x5000c500a1b2c3d4\n",
        )
        .unwrap();
        std::fs::write(
            db_dir.join("b8:2"),
            "S:disk/by-id/wwn-0x5000c500a1b2c3d4-part2\n",
        )
        .unwrap();
        let db = crate::export::UdevDb::new(&db_dir);
        let links = |ma, mi| db.links(ma, mi);
        let name = |s: &str| resolve(&root, &links, s).map(|r| (r.dev.to_string(), r.via));
        assert_eq!(name("sda").unwrap(), ("sda".into(), None));
        assert_eq!(name("/dev/sda").unwrap(), ("sda".into(), None));
        assert_eq!(
            name("/dev/mapper/vg0-root").unwrap(),
            ("dm-0".into(), Some("/dev/mapper/vg0-root is dm-0".into()))
        );
        assert_eq!(
            name("253:0").unwrap(),
            ("dm-0".into(), Some("253:0 is dm-0".into()))
        );
        assert_eq!(
            name("/dev/disk/by-id/wwn-0x5000c500a1b2c3d4").unwrap().0,
            "sda"
        );
        for part in [
            "sda2",
            "/dev/sda2",
            "8:2",
            "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part2",
        ] {
            let e = resolve(&root, &links, part).unwrap_err();
            assert!(
                matches!(e, TuneError::Partition { ref parent, .. } if parent == "sda"),
                "{part}: {e}"
            );
        }
        for bad in [
            "",
            "/dev/../sys/block/sda",
            "/dev/mapper/../sda",
            "/dev/mapper/nope",
            "/dev/disk/by-id/nope",
            "../sda",
            "sda/../sda",
            "8:",
            "99:99",
            "/etc/passwd",
            "/dev/",
            "a\0b",
        ] {
            let e = resolve(&root, &links, bad).unwrap_err();
            assert!(matches!(e, TuneError::UnknownDevice { .. }), "{bad:?}: {e}");
        }
        // Without a database, by-id links of a captured tree are unknown.
        assert!(resolve(&root, &no_links, "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4").is_err());
    }
}
