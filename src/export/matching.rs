//! Match strategies: which udev keys select the device.
//!
//! udev(7) and `60-persistent-storage.rules`: `ENV{ID_WWN}`/`ENV{ID_SERIAL}`
//! are set by that file from the device's VPD/identify data and are stable
//! across boots; `ATTRS{wwid}`/`ATTRS{serial}` come straight from sysfs (the
//! device or a parent) and need no rule ordering; `KERNEL` names are handed out
//! in probe order and may point at another disk after a reboot.

use super::safe::{check_match_value, shown};
use super::{ExportError, ExportItem};
use crate::device::{BlockDevice, DeviceKind};
use std::fmt;

/// How the rule selects devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
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
                warnings.push(format!(
                    "'{}' has no stable id (no ID_WWN/ID_SERIAL in the udev database, no wwid/serial in sysfs): matching its kernel name instead, which is not stable across boots",
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
            let s = class_spec(d);
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
    Ok((spec, warnings))
}

/// The first usable stable id: udev database first (ENV{ID_WWN}, ENV{ID_SERIAL}),
/// then sysfs (ATTRS{wwid}, ATTRS{serial}). Unusable values are skipped with a warning.
fn id_spec(
    item: &ExportItem,
    warnings: &mut Vec<String>,
) -> Result<Option<MatchSpec>, ExportError> {
    let d = &item.device;
    let env = |k: &str| item.udev_env.get(k).cloned().filter(|v| !v.is_empty());
    let candidates = [
        ("ENV{ID_WWN}", env("ID_WWN"), "WWN from the udev database"),
        (
            "ENV{ID_SERIAL}",
            env("ID_SERIAL"),
            "serial from the udev database",
        ),
        ("ATTRS{wwid}", d.wwid.clone(), "wwid from sysfs"),
        ("ATTRS{serial}", d.serial.clone(), "serial from sysfs"),
    ];
    for (key, value, meaning) in candidates {
        let Some(value) = value else { continue };
        if let Some(why) = check_match_value(&value) {
            warnings.push(format!(
                "'{}': {key} {} not used: {why}",
                d.name,
                shown(&value)
            ));
            continue;
        }
        return Ok(Some(MatchSpec {
            strategy: MatchStrategy::Id,
            keys: vec![MatchKey::eq(key, &value)],
            meaning: format!("stable id: {meaning}"),
        }));
    }
    Ok(None)
}

fn checked(d: &BlockDevice, what: &str, v: &str) -> Result<(), ExportError> {
    match check_match_value(v) {
        None => Ok(()),
        Some(why) => Err(ExportError::UnsafeValue {
            dev: d.name.clone(),
            what: what.into(),
            value: shown(v),
            why: why.into(),
        }),
    }
}

/// `ATTRS{vendor}` (when sysfs has a name there) and `ATTRS{model}`: both sit
/// on the same parent (the SCSI device, the NVMe controller), as udev requires
/// for several `ATTRS` keys in one rule.
fn model_spec(d: &BlockDevice) -> Result<MatchSpec, ExportError> {
    let model = d.model.as_deref().ok_or_else(|| ExportError::NoModel {
        dev: d.name.clone(),
    })?;
    checked(d, "model", model)?;
    let mut keys = Vec::new();
    if let Some(v) = &d.vendor {
        checked(d, "vendor", v)?;
        keys.push(MatchKey::eq("ATTRS{vendor}", v));
    }
    keys.push(MatchKey::eq("ATTRS{model}", model));
    Ok(MatchSpec {
        strategy: MatchStrategy::Model,
        keys,
        meaning: format!("disk of model {}", d.model_label()),
    })
}

/// Three disjoint classes: NVMe by name, then the others by `queue/rotational`.
fn class_spec(d: &BlockDevice) -> MatchSpec {
    let (keys, meaning) = if matches!(d.kind, DeviceKind::Nvme) {
        (vec![MatchKey::eq("KERNEL", "nvme*")], "NVMe disk")
    } else if d.rotational {
        (
            vec![MatchKey::eq("ATTR{queue/rotational}", "1")],
            "rotational disk",
        )
    } else {
        (
            vec![
                MatchKey {
                    key: "KERNEL".into(),
                    negate: true,
                    value: "nvme*".into(),
                },
                MatchKey::eq("ATTR{queue/rotational}", "0"),
            ],
            "non-rotational disk (not NVMe)",
        )
    };
    MatchSpec {
        strategy: MatchStrategy::Class,
        keys,
        meaning: meaning.into(),
    }
}

fn kernel_spec(d: &BlockDevice, warnings: &mut Vec<String>) -> Result<MatchSpec, ExportError> {
    checked(d, "kernel name", &d.name)?;
    warnings.push(format!(
        "'{}': matching the kernel name, which is not stable: after a reboot or re-attach another disk may be called '{}'",
        d.name, d.name
    ));
    Ok(MatchSpec {
        strategy: MatchStrategy::Kernel,
        keys: vec![MatchKey::eq("KERNEL", &d.name)],
        meaning: "kernel name (not stable across boots)".into(),
    })
}

/// For model and class rules: the other devices of this host the same rule
/// would also set (those with a scheduler, as the guard requires).
pub(super) fn others_warning(
    item: &ExportItem,
    spec: &MatchSpec,
    host: &[BlockDevice],
) -> Option<String> {
    if !matches!(spec.strategy, MatchStrategy::Model | MatchStrategy::Class) {
        return None;
    }
    let others: Vec<&str> = host
        .iter()
        .filter(|d| d.name != item.device.name && d.queue.has_scheduler())
        .filter(|d| {
            let same = match spec.strategy {
                MatchStrategy::Model => model_spec(d).ok(),
                _ => Some(class_spec(d)),
            };
            same.is_some_and(|s| s.keys == spec.keys)
        })
        .map(|d| d.name.as_str())
        .collect();
    (!others.is_empty()).then(|| {
        format!(
            "'{}': the {} rule also matches {} on this host",
            item.device.name,
            spec.strategy,
            others.join(", ")
        )
    })
}
