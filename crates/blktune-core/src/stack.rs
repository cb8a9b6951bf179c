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
//! This module reads what names a stack; what sits on what, and which
//! disks schedule a stack's I/O, is [`crate::topology::stacks`].

use crate::os::{DeviceName, SysRoot, is_plausible_device_name};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    fn udev_names_an_md_array_and_fills_a_dm_device_only_where_sysfs_is_silent() {
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let stack = |kind, name: Option<&str>, uuid: Option<&str>| Stack {
            kind,
            type_name: if kind == StackKind::Md { "raid1" } else { "dm" }.into(),
            name: name.map(Into::into),
            uuid: uuid.map(Into::into),
            paths: Vec::new(),
        };
        // sysfs names no md array: its name is udev's MD_DEVNAME (/dev/md/root).
        let mut md = stack(
            StackKind::Md,
            None,
            Some("3f2e1d0c-4b5a-6978-8796-a5b4c3d2e1f0"),
        );
        md.name_from_udev(&env(&[
            ("MD_DEVNAME", "root"),
            ("MD_UUID", "3f2e1d0c:4b5a6978:8796a5b4:c3d2e1f0"),
        ]));
        assert_eq!(md.name.as_deref(), Some("root"));
        assert_eq!(
            md.uuid.as_deref(),
            Some("3f2e1d0c-4b5a-6978-8796-a5b4c3d2e1f0")
        );
        let mut unnamed = stack(StackKind::Md, None, None);
        unnamed.name_from_udev(&env(&[("MD_DEVNAME", "")]));
        assert_eq!(unnamed.name, None);
        // dm: sysfs wins; udev fills a device whose dm/ files gave nothing,
        // and its type follows the uuid it got.
        let mut dm = stack(StackKind::Dm, Some("vg0-root"), Some("LVM-abc"));
        dm.name_from_udev(&env(&[("DM_NAME", "other"), ("DM_UUID", "CRYPT-x")]));
        assert_eq!(
            (dm.name.as_deref(), dm.uuid.as_deref()),
            (Some("vg0-root"), Some("LVM-abc"))
        );
        let mut bare = stack(StackKind::Dm, None, None);
        bare.name_from_udev(&env(&[
            ("DM_NAME", "luks-root"),
            ("DM_UUID", "CRYPT-LUKS2-x"),
        ]));
        assert_eq!(bare.name.as_deref(), Some("luks-root"));
        assert_eq!(bare.type_name, "crypt");
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
