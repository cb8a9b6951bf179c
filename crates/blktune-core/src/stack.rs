//! Stacked devices: device-mapper (LVM, crypt, multipath), md RAID and NVMe
//! native multipath, what names them, what they sit on and what carries
//! their I/O.
//!
//! Sources: kernel `Documentation/ABI/testing/sysfs-block-dm` (`dm/name`,
//! `dm/uuid`), `Documentation/admin-guide/md.rst` (`md/level`, `md/uuid`,
//! `md/dev-*`), `drivers/nvme/host/multipath.c` (a head `nvmeXnY` over hidden
//! paths `nvmeXcZnY`, `hidden` = 1, and since 6.14 `multipath/` links on the
//! head). The type names are lsblk's (util-linux `misc-utils/lsblk.c`,
//! `get_type()`): a dm device is named by its uuid's prefix (`LVM-` lvm,
//! `CRYPT-` crypt, `mpath-` mpath, kpartx's `partN-` part), an md array by
//! its level, a SCSI device by its peripheral type (`device/type`, 5 = rom).
//!
//! Bio-based stacks (LVM linear, crypt, md, NVMe heads) have no scheduler:
//! their I/O is scheduled on the disks underneath ([`scheduled_on`]). A
//! request-based multipath map has a queue of its own, and its paths' ones
//! are bypassed, so it carries its own I/O.

use crate::device::BlockDevice;
use crate::os::{DeviceName, SysRoot, is_plausible_device_name};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What kind of stack a device is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StackKind {
    /// A device-mapper device (`dm-N`).
    Dm,
    /// An md array (`mdN`).
    Md,
    /// An NVMe native multipath head (`nvmeXnY` over hidden `nvmeXcZnY`).
    NvmeHead,
}

/// What names a stacked device and what it sits on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stack {
    pub kind: StackKind,
    /// lsblk's TYPE: `lvm`, `crypt`, `mpath`, `part`, `dm`; `raid1`,
    /// `linear`, `container`, `md`; `disk` for an NVMe head.
    pub type_name: String,
    /// `dm/name` (`vg0-root`, `mpathA`), or udev's `MD_DEVNAME` of an md
    /// array ([`Stack::name_from_udev`]); sysfs names no md array.
    pub name: Option<String>,
    /// `dm/uuid` (`LVM-...`, `CRYPT-LUKS2-...`, `mpath-3600...`) or
    /// `md/uuid`: stable across boots, unlike `dm-N` and `mdN`.
    pub uuid: Option<String>,
    /// An NVMe head's paths (`nvme0c0n1`, ...), hidden devices whose queues
    /// carry its I/O; empty for dm and md (their `slaves/` say it).
    pub paths: Vec<String>,
}

impl Stack {
    /// Read what names `dev` when it is a stack; `None` for anything else.
    /// `names` are the entries of `<sysfs>/block` (an NVMe head's paths
    /// are found among them on kernels without `multipath/`).
    pub fn read(root: &SysRoot, dev: &DeviceName, names: &[DeviceName]) -> Option<Self> {
        let attr = |rel: &str| root.read_dev_attr(dev, rel).ok().filter(|v| !v.is_empty());
        let name = dev.as_str();
        if name.starts_with("dm-") {
            let uuid = attr("dm/uuid");
            return Some(Self {
                kind: StackKind::Dm,
                type_name: dm_type(uuid.as_deref()),
                name: attr("dm/name"),
                uuid,
                paths: Vec::new(),
            });
        }
        if name.starts_with("md") && root.dev_attr_exists(dev, "md") {
            return Some(Self {
                kind: StackKind::Md,
                type_name: md_type(attr("md/level").as_deref()),
                name: None,
                uuid: attr("md/uuid"),
                paths: Vec::new(),
            });
        }
        if nvme_namespace(name).is_some() {
            let mut paths: Vec<String> = root
                .list_dev_dir(dev, "multipath")
                .unwrap_or_default()
                .into_iter()
                .filter(|p| is_plausible_device_name(p))
                .collect();
            if paths.is_empty() {
                paths = names
                    .iter()
                    .filter(|p| nvme_head_of(p.as_str()).as_deref() == Some(name))
                    .map(|p| p.as_str().to_owned())
                    .collect();
            }
            if !paths.is_empty() {
                paths.sort_by(|a, b| crate::natural::natural_cmp(a, b));
                return Some(Self {
                    kind: StackKind::NvmeHead,
                    type_name: "disk".into(),
                    name: None,
                    uuid: None,
                    paths,
                });
            }
        }
        None
    }

    /// Fill what sysfs does not say from the device's udev properties:
    /// an md array's `MD_DEVNAME` (`/dev/md/NAME`), and a dm device's
    /// `DM_NAME`/`DM_UUID` when its `dm/` files gave nothing.
    pub fn name_from_udev(&mut self, env: &BTreeMap<String, String>) {
        let prop = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
        match self.kind {
            StackKind::Md => {
                self.name = self.name.take().or_else(|| prop("MD_DEVNAME"));
                self.uuid = self.uuid.take().or_else(|| prop("MD_UUID"));
            }
            StackKind::Dm => {
                self.name = self.name.take().or_else(|| prop("DM_NAME"));
                if self.uuid.is_none() {
                    self.uuid = prop("DM_UUID");
                    self.type_name = dm_type(self.uuid.as_deref());
                }
            }
            StackKind::NvmeHead => {}
        }
    }

    /// Is this a request-based multipath map (its own scheduler matters,
    /// not its paths')?
    pub fn is_mpath(&self) -> bool {
        self.type_name == "mpath"
    }
}

/// Could a device of this name be a stack (dm, md, an NVMe namespace that
/// may be a multipath head)? Only these are read further when they have no
/// scheduler.
pub fn may_be_stack(name: &str) -> bool {
    name.starts_with("dm-") || name.starts_with("md") || nvme_namespace(name).is_some()
}

/// lsblk's TYPE of a dm device from its uuid: the prefix before the first
/// `-`, lower case (`LVM-...` lvm, `CRYPT-...` crypt, `mpath-...` mpath),
/// kpartx's `partN-...` as `part`; `dm` without a uuid.
pub fn dm_type(uuid: Option<&str>) -> String {
    let Some(uuid) = uuid.filter(|u| !u.is_empty()) else {
        return "dm".into();
    };
    let prefix = uuid
        .split('-')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if prefix.starts_with("part") {
        return "part".into();
    }
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return "dm".into();
    }
    prefix
}

/// lsblk's TYPE of an md array: its level (`raid1`, `linear`), `md` when
/// unknown.
pub fn md_type(level: Option<&str>) -> String {
    match level {
        Some(l) if !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            l.to_ascii_lowercase()
        }
        _ => "md".into(),
    }
}

/// lsblk's TYPE of a SCSI peripheral type (`device/type`, SPC-4 table 49;
/// util-linux `blkdev_scsi_type_to_name`).
pub fn scsi_type_name(t: u32) -> &'static str {
    match t {
        0x00 => "disk",
        0x01 => "tape",
        0x02 => "printer",
        0x03 => "processor",
        0x04 => "worm",
        0x05 => "rom",
        0x06 => "scanner",
        0x07 => "mo-disk",
        0x08 => "changer",
        0x09 => "comm",
        0x0c => "raid",
        0x0d => "enclosure",
        0x0e => "rbc",
        0x11 => "osd",
        0x7f => "no-lun",
        _ => "disk",
    }
}

/// `(controller-less) nvmeXnY` -> `Some((X, Y))`; anything else `None`.
fn nvme_namespace(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix("nvme")?;
    let (subsys, ns) = rest.split_once('n')?;
    Some((subsys.parse().ok()?, ns.parse().ok()?))
}

/// The head of an NVMe multipath path: `nvme0c1n2` -> `nvme0n2`; `None`
/// for any other name (the kernel names paths `nvme<subsys>c<ctrl>n<ns>`).
pub fn nvme_head_of(name: &str) -> Option<String> {
    let rest = name.strip_prefix("nvme")?;
    let (subsys, rest) = rest.split_once('c')?;
    let (ctrl, ns) = rest.split_once('n')?;
    let num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (num(subsys) && num(ctrl) && num(ns)).then(|| format!("nvme{subsys}n{ns}"))
}

/// The whole device a name belongs to: itself when it is one of `devs`,
/// else the disk that has it as a partition.
fn whole<'a>(devs: &'a [BlockDevice], name: &str) -> Option<&'a BlockDevice> {
    devs.iter()
        .find(|d| d.name == name)
        .or_else(|| devs.iter().find(|d| d.partitions.iter().any(|p| p == name)))
}

/// What `d` sits on: its `slaves/` (partitions as their disks) and an NVMe
/// head's paths, as whole devices of `devs`.
fn below<'a>(devs: &'a [BlockDevice], d: &BlockDevice) -> Vec<&'a BlockDevice> {
    let paths = d
        .stack
        .as_ref()
        .map(|s| s.paths.as_slice())
        .unwrap_or_default();
    let mut out: Vec<&BlockDevice> = Vec::new();
    for name in d.slaves.iter().chain(paths) {
        if let Some(w) = whole(devs, name)
            && !out.iter().any(|o| o.name == w.name)
        {
            out.push(w);
        }
    }
    out
}

/// The devices whose queues schedule `name`'s I/O: itself when it has a
/// scheduler (a disk, a request-based multipath map), else, through its
/// slaves and paths, the first devices down that have one, in natural
/// order. Empty when none does (zram, a stack on nothing known here).
pub fn scheduled_on(devs: &[BlockDevice], name: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    let mut seen = BTreeSet::new();
    if let Some(d) = devs.iter().find(|d| d.name == name) {
        collect_scheduled(devs, d, &mut out, &mut seen);
    }
    let mut v: Vec<String> = out.into_iter().collect();
    v.sort_by(|a, b| crate::natural::natural_cmp(a, b));
    v
}

fn collect_scheduled(
    devs: &[BlockDevice],
    d: &BlockDevice,
    out: &mut BTreeSet<String>,
    seen: &mut BTreeSet<String>,
) {
    // A cycle in a hostile tree ends here; a real stack is a few deep.
    if !seen.insert(d.name.clone()) || seen.len() > 256 {
        return;
    }
    if d.queue.has_scheduler() {
        out.insert(d.name.clone());
        return;
    }
    for b in below(devs, d) {
        collect_scheduled(devs, b, out, seen);
    }
}

/// Every device stacked on `name`, directly or through others (its
/// holders, their holders..., and the NVMe head over a path), in natural order.
pub fn above(devs: &[BlockDevice], name: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![name.to_owned()];
    while let Some(n) = todo.pop() {
        if out.len() > 256 {
            break;
        }
        for d in devs {
            let on_it = below(devs, d).iter().any(|b| b.name == n);
            if on_it && d.name != name && out.insert(d.name.clone()) {
                todo.push(d.name.clone());
            }
        }
    }
    let mut v: Vec<String> = out.into_iter().collect();
    v.sort_by(|a, b| crate::natural::natural_cmp(a, b));
    v
}

/// Every device `name` is stacked on, directly or not, in natural order.
pub fn beneath(devs: &[BlockDevice], name: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    let mut todo: Vec<&BlockDevice> = devs.iter().filter(|d| d.name == name).collect();
    while let Some(d) = todo.pop() {
        if out.len() > 256 {
            break;
        }
        for b in below(devs, d) {
            if out.insert(b.name.clone()) {
                todo.push(b);
            }
        }
    }
    let mut v: Vec<String> = out.into_iter().collect();
    v.sort_by(|a, b| crate::natural::natural_cmp(a, b));
    v
}

/// For each disk that carries `stack`'s I/O ([`scheduled_on`]), the other
/// stacks it also carries: ones neither above nor below `stack` (a second
/// LV of the same volume group, another md array on a partition of the same
/// disk). A scheduler changed on such a disk changes theirs too.
pub fn shared_members(devs: &[BlockDevice], stack: &str) -> BTreeMap<String, Vec<String>> {
    let mut related: BTreeSet<String> = above(devs, stack).into_iter().collect();
    related.extend(beneath(devs, stack));
    related.insert(stack.to_owned());
    let mut out = BTreeMap::new();
    for disk in scheduled_on(devs, stack) {
        if disk == stack {
            continue;
        }
        let others: Vec<String> = above(devs, &disk)
            .into_iter()
            .filter(|o| !related.contains(o))
            .collect();
        if !others.is_empty() {
            out.insert(disk, others);
        }
    }
    out
}

/// `dm-0 (lvm vg0-root)`: a stack's kernel name with its type and name.
pub fn label(d: &BlockDevice) -> String {
    match &d.stack {
        Some(s) => match &s.name {
            Some(n) => format!("{} ({} {n})", d.name, s.type_name),
            None => format!("{} ({})", d.name, s.type_name),
        },
        None => d.name.clone(),
    }
}

/// Where a stack's I/O is scheduled, in one line for a device without a
/// scheduler: `its I/O is scheduled on sda, sdb (sda also carries md0)`;
/// `None` for a device that is no stack or sits on nothing with one.
pub fn carried_text(devs: &[BlockDevice], name: &str) -> Option<String> {
    let d = devs.iter().find(|d| d.name == name)?;
    d.stack.as_ref()?;
    let disks = scheduled_on(devs, name);
    if disks.is_empty() || disks.iter().any(|x| x == name) {
        return None;
    }
    let shared: Vec<String> = shared_members(devs, name)
        .into_iter()
        .map(|(disk, others)| format!("{disk} also carries {}", others.join(", ")))
        .collect();
    let shared = if shared.is_empty() {
        String::new()
    } else {
        format!(" ({})", shared.join("; "))
    };
    Some(format!(
        "its I/O is scheduled on {}{shared}",
        disks.join(", ")
    ))
}

/// One row of a device tree as lsblk draws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeRow {
    /// `├─`, `└─`, `│ └─`...: the branches before the name.
    pub prefix: String,
    /// The kernel name (`sda`, `sda2`, `dm-0`).
    pub name: String,
    /// A partition (not one of the devices).
    pub partition: bool,
}

/// The devices as a tree, lsblk's way: each device on nothing (a disk, a
/// stack whose slaves are not here) at the top; under it its partitions,
/// and under a disk or partition the stacks on it (a stack on two disks
/// appears under both). `shown` decides which devices appear (a hidden
/// NVMe path shows under its head only when it is shown); partitions appear
/// when `partitions`, else only those a shown stack sits on.
pub fn tree(
    devs: &[BlockDevice],
    shown: &dyn Fn(&BlockDevice) -> bool,
    partitions: bool,
) -> Vec<TreeRow> {
    // parent (device or partition) -> the stacks on it.
    let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut has_parent: BTreeSet<String> = BTreeSet::new();
    for d in devs.iter().filter(|d| shown(d)) {
        for s in &d.slaves {
            if whole(devs, s).is_some_and(shown) {
                children.entry(s.clone()).or_default().push(d.name.clone());
                has_parent.insert(d.name.clone());
            }
        }
    }
    // An NVMe head's paths hang under it (they carry its I/O).
    for d in devs.iter().filter(|d| shown(d)) {
        if let Some(s) = &d.stack {
            for p in &s.paths {
                if devs.iter().any(|x| x.name == *p && shown(x)) {
                    children.entry(d.name.clone()).or_default().push(p.clone());
                    has_parent.insert(p.clone());
                }
            }
        }
    }
    for v in children.values_mut() {
        v.sort_by(|a, b| crate::natural::natural_cmp(a, b));
        v.dedup();
    }
    let mut rows = Vec::new();
    for d in devs
        .iter()
        .filter(|d| shown(d) && !has_parent.contains(&d.name))
    {
        rows.push(TreeRow {
            prefix: String::new(),
            name: d.name.clone(),
            partition: false,
        });
        let ctx = Walk {
            devs,
            children: &children,
            partitions,
        };
        ctx.walk((&d.name, false), "", &mut rows, &mut Vec::new());
    }
    rows
}

/// What a walk of the tree reads.
struct Walk<'a> {
    devs: &'a [BlockDevice],
    children: &'a BTreeMap<String, Vec<String>>,
    partitions: bool,
}

impl Walk<'_> {
    /// The rows under `name` (a partition when `.1`), each branch drawn
    /// after `indent`; `path` holds the names above, so a hostile tree that
    /// stacks a device on itself is drawn once a branch.
    fn walk(
        &self,
        (name, partition): (&str, bool),
        indent: &str,
        rows: &mut Vec<TreeRow>,
        path: &mut Vec<String>,
    ) {
        if path.iter().any(|p| p == name) || path.len() > 32 || rows.len() > 100_000 {
            return;
        }
        path.push(name.to_owned());
        let mut kids: Vec<(String, bool)> = Vec::new();
        if !partition && let Some(d) = self.devs.iter().find(|d| d.name == name) {
            kids.extend(
                (d.partitions.iter())
                    .filter(|p| self.partitions || self.children.contains_key(p.as_str()))
                    .map(|p| (p.clone(), true)),
            );
        }
        kids.extend((self.children.get(name).into_iter().flatten()).map(|c| (c.clone(), false)));
        for (i, (kid, is_part)) in kids.iter().enumerate() {
            let last = i + 1 == kids.len();
            rows.push(TreeRow {
                prefix: format!("{indent}{}", if last { "└─" } else { "├─" }),
                name: kid.clone(),
                partition: *is_part,
            });
            let next = format!("{indent}{}", if last { "  " } else { "│ " });
            self.walk((kid, *is_part), &next, rows, path);
        }
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dm_types_follow_the_uuid_prefix_as_lsblk_does() {
        assert_eq!(dm_type(Some("LVM-3zSHSR5Nbf4j7g6au")), "lvm");
        assert_eq!(dm_type(Some("CRYPT-LUKS2-jolau-nvme0n1_crypt")), "crypt");
        assert_eq!(dm_type(Some("mpath-3600508b1001c1234")), "mpath");
        assert_eq!(dm_type(Some("part1-mpath-3600508b1001c")), "part");
        assert_eq!(dm_type(Some("")), "dm");
        assert_eq!(dm_type(None), "dm");
        assert_eq!(dm_type(Some("../x-y")), "dm");
        assert_eq!(md_type(Some("raid1")), "raid1");
        assert_eq!(md_type(Some("RAID10")), "raid10");
        assert_eq!(md_type(None), "md");
        assert_eq!(md_type(Some("a b")), "md");
        assert_eq!(scsi_type_name(5), "rom");
        assert_eq!(scsi_type_name(0), "disk");
    }

    #[test]
    fn nvme_paths_name_their_head() {
        assert_eq!(nvme_head_of("nvme0c1n2").as_deref(), Some("nvme0n2"));
        assert_eq!(nvme_head_of("nvme10c0n1").as_deref(), Some("nvme10n1"));
        assert_eq!(nvme_head_of("nvme0n1"), None);
        assert_eq!(nvme_head_of("nvme0n1p1"), None);
        assert_eq!(nvme_head_of("nvmec0n1"), None);
        assert_eq!(nvme_namespace("nvme0n1"), Some((0, 1)));
        assert_eq!(nvme_namespace("nvme0c0n1"), None);
        assert_eq!(nvme_namespace("nvme0n1p1"), None);
    }
}
