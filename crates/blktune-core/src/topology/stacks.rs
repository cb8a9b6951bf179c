//! What sits on what among stacked devices, and which disks schedule a
//! stack's I/O. Bio-based stacks (LVM linear, crypt, md, NVMe heads) have
//! no scheduler: their I/O is scheduled on the disks underneath
//! ([`scheduled_on`]). A request-based multipath map has a queue of its own,
//! and its paths' ones are bypassed (dm-mpath inserts its clones past the
//! paths' schedulers), so it schedules its own I/O. The tree `list` draws
//! is lsblk's ([`tree`]). What names a stack is [`crate::stack`].

use crate::device::BlockDevice;
use std::collections::{BTreeMap, BTreeSet};

/// The whole device a name belongs to: itself when it is one of `devs`,
/// else the disk that has it as a partition.
fn whole<'a>(devs: &'a [BlockDevice], name: &str) -> Option<&'a BlockDevice> {
    devs.iter()
        .find(|d| d.name == name)
        .or_else(|| devs.iter().find(|d| d.partitions.iter().any(|p| p == name)))
}

/// What `device` sits on: its `slaves/` (partitions as their disks) and an NVMe
/// head's paths, as whole devices of `devs`.
fn below<'a>(devs: &'a [BlockDevice], device: &BlockDevice) -> Vec<&'a BlockDevice> {
    let paths = device
        .stack
        .as_ref()
        .map(|s| s.paths.as_slice())
        .unwrap_or_default();
    let mut out: Vec<&BlockDevice> = Vec::new();
    for name in device.slaves.iter().chain(paths) {
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
    device: &BlockDevice,
    out: &mut BTreeSet<String>,
    seen: &mut BTreeSet<String>,
) {
    // A cycle in a hostile tree ends here; a real stack is a few deep.
    if !seen.insert(device.name.clone()) || seen.len() > 256 {
        return;
    }
    if device.queue.has_scheduler() {
        out.insert(device.name.clone());
        return;
    }
    for b in below(devs, device) {
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
pub fn label(device: &BlockDevice) -> String {
    match &device.stack {
        Some(s) => match &s.name {
            Some(n) => format!("{} ({} {n})", device.name, s.type_name),
            None => format!("{} ({})", device.name, s.type_name),
        },
        None => device.name.clone(),
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
    use crate::fake::{FakeDisk, FakeTree};

    /// LVM on crypt on sda2, md0 on sda1 and sdb1, and a cycle a hostile
    /// tree could hold (dm-9 on dm-8 on dm-9).
    fn devices() -> Vec<BlockDevice> {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        for d in [
            FakeDisk::new("sda").dev(8, 0).partitions(&["sda1", "sda2"]),
            FakeDisk::new("sdb").dev(8, 16).partitions(&["sdb1"]),
            FakeDisk::new("md0")
                .dev(9, 0)
                .no_queue()
                .attr("md/level", "raid1")
                .stacked(&[], &["sda1", "sdb1"]),
            FakeDisk::new("dm-0")
                .dev(253, 0)
                .dm("luks", "CRYPT-LUKS2-x-luks", &["sda2"]),
            FakeDisk::new("dm-1")
                .dev(253, 1)
                .dm("vg-a", "LVM-a", &["dm-0"]),
            FakeDisk::new("dm-2")
                .dev(253, 2)
                .dm("vg-b", "LVM-b", &["dm-0"]),
            FakeDisk::new("dm-8")
                .dev(253, 8)
                .dm("x", "LVM-x", &["dm-9"]),
            FakeDisk::new("dm-9")
                .dev(253, 9)
                .dm("y", "LVM-y", &["dm-8"]),
        ] {
            t.add(&d).unwrap();
        }
        crate::device::discover(&t.root()).unwrap()
    }

    #[test]
    fn a_stack_is_scheduled_on_the_disks_at_its_bottom() {
        let devs = devices();
        assert_eq!(scheduled_on(&devs, "dm-1"), ["sda"]);
        assert_eq!(scheduled_on(&devs, "md0"), ["sda", "sdb"]);
        assert_eq!(scheduled_on(&devs, "sdb"), ["sdb"]);
        assert!(scheduled_on(&devs, "dm-9").is_empty(), "a cycle ends");
        assert_eq!(beneath(&devs, "dm-1"), ["dm-0", "sda"]);
        assert_eq!(above(&devs, "sda"), ["dm-0", "dm-1", "dm-2", "md0"]);
        let shared = shared_members(&devs, "dm-1");
        assert_eq!(shared["sda"], ["dm-2", "md0"]);
        assert!(shared_members(&devs, "dm-0")["sda"] == ["md0"]);
        assert_eq!(
            carried_text(&devs, "md0").unwrap(),
            "its I/O is scheduled on sda, sdb (sda also carries dm-0, dm-1, dm-2)"
        );
        assert_eq!(carried_text(&devs, "sda"), None, "no stack");
    }

    #[test]
    fn the_tree_is_lsblks_with_partitions_carrying_stacks() {
        let devs = devices();
        let rows: Vec<String> = tree(&devs, &|d| d.name != "dm-8", false)
            .iter()
            .map(|r| format!("{}{}", r.prefix, r.name))
            .collect();
        assert_eq!(
            rows,
            [
                "dm-9",
                "sda",
                "├─sda1",
                "│ └─md0",
                "└─sda2",
                "  └─dm-0",
                "    ├─dm-1",
                "    └─dm-2",
                "sdb",
                "└─sdb1",
                "  └─md0",
            ]
        );
        // A cycle of shown devices is drawn once a branch, never for ever.
        let all = tree(&devs, &|_| true, true);
        assert!(all.iter().filter(|r| r.name == "dm-8").count() <= 2);
    }
}
