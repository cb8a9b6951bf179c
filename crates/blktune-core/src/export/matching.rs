//! Match strategies: which udev keys select the device.
//!
//! udev(7) and `60-persistent-storage.rules`: `ENV{ID_WWN}`/`ENV{ID_SERIAL}`
//! are set by that file from the device's VPD/identify data and are stable
//! across boots; `ATTRS{wwid}`/`ATTRS{serial}` come straight from sysfs (the
//! device or a parent) and need no rule ordering; `KERNEL` names are handed out
//! in probe order and may point at another disk after a reboot.

use super::check::udev_match;
use super::safe::{check_match_value, shown};
use super::{ExportError, ExportItem};
use crate::device::{BlockDevice, DeviceKind};
use crate::stack::StackKind;
use std::collections::BTreeMap;
use std::fmt;

/// How the rule selects devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchStrategy {
    /// The device's stable identity (WWN or serial).
    Id,
    /// Every disk of this model.
    Model,
    /// Every disk of this class: NVMe, rotational or non-rotational.
    Class,
    /// This kernel name (not stable across boots).
    Kernel,
}

impl MatchStrategy {
    /// Every strategy, in the order `--help` lists them.
    pub const ALL: [MatchStrategy; 4] = [
        MatchStrategy::Id,
        MatchStrategy::Model,
        MatchStrategy::Class,
        MatchStrategy::Kernel,
    ];

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            MatchStrategy::Id => "The device's stable identity (WWN or serial)",
            MatchStrategy::Model => "Every disk of this model",
            MatchStrategy::Class => "Every disk of this class: NVMe, rotational or non-rotational",
            MatchStrategy::Kernel => "This kernel name (not stable across boots)",
        }
    }

    /// The `--match` spelling.
    pub fn label(self) -> &'static str {
        match self {
            MatchStrategy::Id => "id",
            MatchStrategy::Model => "model",
            MatchStrategy::Class => "class",
            MatchStrategy::Kernel => "kernel",
        }
    }
}

impl fmt::Display for MatchStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One match key: `ENV{ID_WWN}=="0x5000..."`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchKey {
    /// `KERNEL`, `ENV{ID_WWN}`, `ATTRS{model}`, ...
    pub key: String,
    /// `==` or `!=`.
    pub negate: bool,
    /// The value; a device's value was checked by [`check_match_value`],
    /// a pattern of ours (`nvme*`) is a constant.
    pub value: String,
}

impl MatchKey {
    fn eq(key: &str, value: &str) -> Self {
        Self {
            key: key.into(),
            negate: false,
            value: value.into(),
        }
    }
}

impl fmt::Display for MatchKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.negate { "!=" } else { "==" };
        write!(f, "{}{}\"{}\"", self.key, op, self.value)
    }
}

/// The chosen match of one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchSpec {
    /// The strategy that produced it.
    pub strategy: MatchStrategy,
    /// The keys, all of which must match.
    pub keys: Vec<MatchKey>,
    /// What it means, for the header: `stable id from the udev database`.
    pub meaning: String,
}

impl MatchSpec {
    /// The keys as they appear in the rule.
    pub fn render_keys(&self) -> String {
        self.keys
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Does the rule rely on properties set by 60-persistent-storage.rules?
    pub fn uses_udev_env(&self) -> bool {
        self.keys.iter().any(|k| k.key.starts_with("ENV{ID_"))
    }
}

/// The match for `strategy` (an explicit choice: errors are errors).
pub fn match_spec(item: &ExportItem, strategy: MatchStrategy) -> Result<MatchSpec, ExportError> {
    choose(item, Some(strategy)).map(|(s, _)| s)
}

/// The match for an item and the warnings that go with it. `None`: `id`
/// where the device has one, else `kernel`.
pub(super) fn choose(
    item: &ExportItem,
    strategy: Option<MatchStrategy>,
) -> Result<(MatchSpec, Vec<String>), ExportError> {
    let d = &item.device;
    let mut warnings = Vec::new();
    let spec = match strategy {
        Some(MatchStrategy::Id) | None => match id_spec(item, &mut warnings)? {
            Some(s) => s,
            None if strategy.is_none() => {
                let spec = kernel_spec(d, &mut Vec::new())?;
                let looked = match d.stack.as_ref().map(|s| s.kind) {
                    Some(StackKind::Dm) => {
                        "no dm/uuid or dm/name in sysfs, no DM_UUID/DM_NAME in the udev database"
                    }
                    Some(StackKind::Md) => "no md/uuid in sysfs",
                    _ => "no ID_WWN/ID_SERIAL in the udev database, no wwid/serial in sysfs",
                };
                warnings.push(format!(
                    "'{}' has no stable id ({looked}): matching its kernel name instead, which is not stable across boots",
                    d.name
                ));
                spec
            }
            None => {
                return Err(ExportError::NoId {
                    dev: d.name.clone(),
                });
            }
        },
        Some(MatchStrategy::Model) => {
            let s = model_spec(d)?;
            warnings.push(format!(
                "'{}': --match model applies the settings to every {} on any host the file is installed on",
                d.name, s.meaning
            ));
            s
        }
        Some(MatchStrategy::Class) => {
            let s = class_spec(d)?;
            warnings.push(format!(
                "'{}': --match class applies the settings to every {} on any host the file is installed on",
                d.name, s.meaning
            ));
            if !matches!(d.kind, DeviceKind::Nvme) {
                warnings.push(format!(
                    "'{}': queue/rotational is only a hint; virtual disks and USB bridges often report it wrongly",
                    d.name
                ));
            }
            s
        }
        Some(MatchStrategy::Kernel) => kernel_spec(d, &mut warnings)?,
    };
    if let Some(head) = crate::stack::nvme_head_of(&d.name) {
        warnings.push(format!(
            "'{}' is a path of the NVMe multipath device {head} (hidden: users and lsblk know {head}); its ids are {head}'s and every path's, so the rule matches them all",
            d.name
        ));
    }
    Ok((spec, warnings))
}

/// The id keys of a device, best first: `(key, value, meaning)`.
///
/// - dm (LVM, crypt, multipath): `dm/uuid` from sysfs, on the device itself
///   (set when the device is made; no rule order needed), then udev's
///   `DM_UUID` (10-dm.rules), then the dm name (`dm/name`, `DM_NAME`),
///   which the admin chose and which also survives a reboot.
/// - md: `md/uuid` from sysfs. Not udev's `MD_UUID`: 63-md-raid-arrays.rules
///   sets it, after a 61- file has run, and spells it otherwise.
/// - the rest: udev database first (ID_WWN_WITH_EXTENSION, ID_WWN,
///   ID_SERIAL: what 60-persistent-storage.rules derives from VPD/identify
///   data, stable across kernels), then sysfs (`wwid`, whose form changes
///   across kernels, then `serial`). NVMe's ID_SERIAL is the controller's,
///   shared by its namespaces: left out, after the namespace's `wwid`,
///   `nguid` and `eui`.
fn id_candidates(item: &ExportItem) -> Vec<(&'static str, Option<String>, &'static str)> {
    let d = &item.device;
    let env = |k: &str| item.udev_env.get(k).cloned().filter(|v| !v.is_empty());
    let stack = d.stack.as_ref();
    match stack.map(|s| s.kind) {
        Some(StackKind::Dm) => {
            return vec![
                (
                    "ATTR{dm/uuid}",
                    stack.and_then(|s| s.uuid.clone()),
                    "dm uuid from sysfs",
                ),
                (
                    "ENV{DM_UUID}",
                    env("DM_UUID"),
                    "dm uuid from the udev database",
                ),
                (
                    "ATTR{dm/name}",
                    stack.and_then(|s| s.name.clone()),
                    "dm name from sysfs",
                ),
                (
                    "ENV{DM_NAME}",
                    env("DM_NAME"),
                    "dm name from the udev database",
                ),
            ];
        }
        Some(StackKind::Md) => {
            // A uuid equal to udev's MD_UUID was filled from it
            // ([`crate::stack::Stack::name_from_udev`]) where sysfs had none:
            // sysfs spells a uuid 8-4-4-4-12 (as in tests/fixtures/captured),
            // mdadm's MD_UUID four words with colons, so `ATTR{md/uuid}`
            // would never match that value.
            let sysfs_uuid = stack
                .and_then(|s| s.uuid.clone())
                .filter(|u| env("MD_UUID").as_ref() != Some(u));
            return vec![("ATTR{md/uuid}", sysfs_uuid, "md array uuid from sysfs")];
        }
        _ => {}
    }
    if matches!(d.kind, DeviceKind::Nvme) {
        return vec![
            ("ENV{ID_WWN}", env("ID_WWN"), "WWN from the udev database"),
            ("ATTRS{wwid}", d.wwid.clone(), "namespace wwid from sysfs"),
            ("ATTR{nguid}", d.nguid.clone(), "namespace NGUID from sysfs"),
            ("ATTR{eui}", d.eui.clone(), "namespace EUI-64 from sysfs"),
        ];
    }
    // ID_WWN_WITH_EXTENSION first: LUNs of some multi-LUN arrays share a bare
    // ID_WWN (60-persistent-storage.rules names the by-id `wwn-` link after it).
    vec![
        (
            "ENV{ID_WWN_WITH_EXTENSION}",
            env("ID_WWN_WITH_EXTENSION"),
            "WWN with extension from the udev database",
        ),
        ("ENV{ID_WWN}", env("ID_WWN"), "WWN from the udev database"),
        (
            "ENV{ID_SERIAL}",
            env("ID_SERIAL"),
            "serial from the udev database",
        ),
        ("ATTRS{wwid}", d.wwid.clone(), "wwid from sysfs"),
        ("ATTRS{serial}", d.serial.clone(), "serial from sysfs"),
    ]
}

/// The first usable stable id ([`id_candidates`]). Unusable values are
/// skipped with a warning; a SCSI disk's sysfs `wwid` is used with one (its
/// form changed across kernels: `t10.ATA ...` on 4.x, `naa.5002...` on 6.x).
fn id_spec(
    item: &ExportItem,
    warnings: &mut Vec<String>,
) -> Result<Option<MatchSpec>, ExportError> {
    let d = &item.device;
    for (key, value, meaning) in id_candidates(item) {
        let Some(value) = value else { continue };
        if let Some(why) = check_match_value(&value) {
            warnings.push(format!(
                "'{}': {key} {} not used: {why}",
                d.name,
                shown(&value)
            ));
            continue;
        }
        if key == "ATTRS{wwid}" && !matches!(d.kind, DeviceKind::Nvme) {
            warnings.push(format!(
                "'{}': matching the sysfs wwid {}, whose form changes across kernels (t10.ATA... on older ones, naa.... on newer): a kernel upgrade may end the match; the udev database's ID_WWN or ID_SERIAL do not change (give --udev-db, or export where udevd runs)",
                d.name,
                shown(&value)
            ));
        }
        return Ok(Some(MatchSpec {
            strategy: MatchStrategy::Id,
            keys: vec![MatchKey::eq(key, &value)],
            meaning: format!("stable id: {meaning}"),
        }));
    }
    Ok(None)
}

fn checked(device: &BlockDevice, what: &str, val: &str) -> Result<(), ExportError> {
    match check_match_value(val) {
        None => Ok(()),
        Some(why) => Err(ExportError::UnsafeValue {
            dev: device.name.clone(),
            what: what.into(),
            value: shown(val),
            why: why.into(),
        }),
    }
}

/// `ATTRS{vendor}` (when sysfs has a name there) and `ATTRS{model}`: both sit
/// on the same parent (the SCSI device, the NVMe controller), as udev requires
/// for several `ATTRS` keys in one rule.
fn model_spec(device: &BlockDevice) -> Result<MatchSpec, ExportError> {
    let model = device
        .model
        .as_deref()
        .ok_or_else(|| ExportError::NoModel {
            dev: device.name.clone(),
        })?;
    checked(device, "model", model)?;
    let mut keys = Vec::new();
    if let Some(v) = &device.vendor {
        checked(device, "vendor", v)?;
        keys.push(MatchKey::eq("ATTRS{vendor}", v));
    }
    keys.push(MatchKey::eq("ATTRS{model}", model));
    keys.push(not_zoned());
    Ok(MatchSpec {
        strategy: MatchStrategy::Model,
        keys,
        meaning: match &device.vendor {
            Some(v) => format!("disk of vendor {v}, model {model}"),
            None => format!("disk of model {model}"),
        },
    })
}

/// The kernel-name pattern of a device's family: `loop*`, `sd*`, `vd*`,
/// `nvme*`, `mmcblk*`, `dm-*`, ... as its kind implies; for other kinds the
/// name's leading letters (`nbd0` gives `nbd*`). A class rule is narrowed to
/// it, so a rule made on a loop test disk never reaches the host's own disks.
pub(super) fn family_pattern(device: &BlockDevice) -> String {
    let starts = |p: &str| device.name.starts_with(p);
    let fixed = match device.kind {
        DeviceKind::Nvme => Some("nvme*"),
        DeviceKind::Loop => Some("loop*"),
        DeviceKind::Zram => Some("zram*"),
        DeviceKind::Md => Some("md*"),
        DeviceKind::Dm => Some("dm-*"),
        DeviceKind::Mmc => Some("mmcblk*"),
        DeviceKind::Virtio if starts("xvd") => Some("xvd*"),
        DeviceKind::Virtio => Some("vd*"),
        DeviceKind::Ssd | DeviceKind::Hdd | DeviceKind::Disk if starts("hd") => Some("hd*"),
        DeviceKind::Ssd | DeviceKind::Hdd | DeviceKind::Disk => Some("sd*"),
        DeviceKind::Rom => Some("sr*"),
        DeviceKind::Other => None,
    };
    if let Some(p) = fixed {
        return p.into();
    }
    let letters: String = device
        .name
        .chars()
        .take_while(char::is_ascii_lowercase)
        .collect();
    if letters.is_empty() || letters == device.name {
        // No family to speak of: the name itself (checked like any value).
        device.name.clone()
    } else {
        format!("{letters}*")
    }
}

/// The device's family by kernel name, then (except NVMe, which does not
/// rotate) its `queue/rotational` class; a device without that file has no
/// class to match.
fn class_spec(device: &BlockDevice) -> Result<MatchSpec, ExportError> {
    let family = family_pattern(device);
    let (mut keys, meaning) = if matches!(device.kind, DeviceKind::Nvme) {
        (
            vec![MatchKey::eq("KERNEL", &family)],
            "NVMe disk".to_string(),
        )
    } else {
        let (rot, label) = match device.rotational {
            Some(true) => ("1", "rotational"),
            Some(false) => ("0", "non-rotational"),
            None => {
                return Err(ExportError::NoClass {
                    dev: device.name.clone(),
                });
            }
        };
        (
            vec![
                MatchKey::eq("KERNEL", &family),
                MatchKey::eq("ATTR{queue/rotational}", rot),
            ],
            format!("{label} disk named {family}"),
        )
    };
    keys.push(not_zoned());
    Ok(MatchSpec {
        strategy: MatchStrategy::Class,
        keys,
        meaning,
    })
}

/// `ATTR{queue/zoned}=="none"`: a rule that may reach other disks (a model
/// or a class) leaves zoned ones (SMR, ZNS) alone, whose writes need the
/// kernel's choice of scheduler. Every queue has the file since Linux 4.10
/// (kernel `Documentation/ABI/stable/sysfs-block`).
fn not_zoned() -> MatchKey {
    MatchKey::eq("ATTR{queue/zoned}", "none")
}

fn kernel_spec(device: &BlockDevice, warnings: &mut Vec<String>) -> Result<MatchSpec, ExportError> {
    checked(device, "kernel name", &device.name)?;
    let why = match device.stack.as_ref().map(|s| s.kind) {
        Some(StackKind::Dm) => {
            "dm devices are numbered in activation order, so after a reboot another volume or path may be called"
        }
        Some(StackKind::Md) => {
            "md arrays are often assembled under another number (md127), so after a reboot another array may be called"
        }
        _ => "after a reboot or re-attach another disk may be called",
    };
    warnings.push(format!(
        "'{}': matching the kernel name, which is not stable: {why} '{}'",
        device.name, device.name
    ));
    Ok(MatchSpec {
        strategy: MatchStrategy::Kernel,
        keys: vec![MatchKey::eq("KERNEL", &device.name)],
        meaning: "kernel name (not stable across boots)".into(),
    })
}

/// Would `key` match `dev` (whose udev properties are `env`, if known)? The
/// same glob and alternative rules as udev (via [`udev_match`]); sysfs values
/// are those discovery read. An unknown key counts as a match, so a warning
/// errs on the side of naming a device.
fn key_matches(key: &MatchKey, dev: &BlockDevice, env: Option<&BTreeMap<String, String>>) -> bool {
    let actual = match super::keys::sysfs_value(&key.key, dev) {
        Some(value) => value,
        None => match key
            .key
            .strip_prefix("ENV{")
            .and_then(|k| k.strip_suffix('}'))
        {
            Some(name) => Some(env.and_then(|e| e.get(name)).cloned().unwrap_or_default()),
            None => return true,
        },
    };
    // udev: an attribute that cannot be read fails the match, whatever the operator.
    let Some(actual) = actual else { return false };
    udev_match(&key.value, actual.trim_end()) != key.negate
}

/// The devices of this host, other than `exported`, that a rule with these
/// match keys and this `TEST` guard would also set (every entry of `host` is a
/// whole disk, so the `ENV{DEVTYPE}=="disk"` guard passes).
pub(super) fn also_matched<'a>(
    spec: &MatchSpec,
    guard_attr: &str,
    exported: &[&str],
    host: &'a [BlockDevice],
    host_env: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<&'a str> {
    let mut names: Vec<&str> = host
        .iter()
        .filter(|d| !exported.contains(&d.name.as_str()))
        .filter(|d| !super::check::is_unattached_loop(d))
        .filter(|d| match guard_attr {
            "queue/scheduler" => d.queue.has_scheduler(),
            "queue/read_ahead_kb" => d.queue.read_ahead_kb.is_some(),
            _ => true,
        })
        .filter(|d| {
            let env = host_env.get(&d.name);
            spec.keys.iter().all(|k| key_matches(k, d, env))
        })
        .map(|d| d.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}
