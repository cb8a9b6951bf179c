//! `blktune export --check FILE`: which lines of a rules file would match each
//! block device of this machine, for `ACTION` add and change, and what they
//! would set, in order.
//!
//! Values come from the same places udev reads them: the event (`ACTION`,
//! `SUBSYSTEM=block`, the device's `uevent` file), sysfs through [`SysRoot`]
//! (`ATTR`, `ATTRS` on the device and its parents, `TEST`), and the udev
//! database for `ENV` (what 60-persistent-storage.rules and friends set last
//! time). Anything else (`PROGRAM`, `IMPORT`, `DRIVERS`, substitutions, ...)
//! makes the line "cannot evaluate" rather than a guess; an `ENV` key such a
//! line may have set becomes unknown for the lines after it.

mod eval;
mod glob;
mod parse;
mod report;

pub use glob::udev_match;
pub use parse::{Op, Rule, Token, parse_rules};
pub use report::render_text;

use super::UdevDb;
use crate::device::BlockDevice;
use crate::os::SysRoot;
use serde::Serialize;

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// The file checked.
    pub file: String,
    /// Rules (logical lines) in the file.
    pub rules: usize,
    /// Lines udev would ignore, and why.
    pub ignored: Vec<Ignored>,
    /// One entry per block device of this machine.
    pub devices: Vec<DeviceCheck>,
}

/// A line udev would ignore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ignored {
    pub line: usize,
    pub why: String,
}

/// The outcome for one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceCheck {
    pub device: String,
    pub kind: String,
    /// Did the udev database have an entry (else `ENV{ID_*}` is unknown)?
    pub udev_db: bool,
    /// One per action: `add`, `change`.
    pub actions: Vec<ActionCheck>,
}

/// The outcome for one device and one action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionCheck {
    pub action: String,
    /// Lines that match or cannot be evaluated, in file order.
    pub lines: Vec<LineCheck>,
    /// Attribute values after the matching lines, last write wins, in first-write order.
    pub result: Vec<Write>,
    /// Does a line that cannot be evaluated write attributes, so the result may differ?
    pub uncertain: bool,
    /// Why evaluation stopped early (GOTO or OPTIONS under an unknown condition).
    pub stopped: Option<String>,
    /// Problems: nr_requests or a tunable written before a scheduler switch; a
    /// line that also writes to a partition of the device (no DEVTYPE guard).
    pub problems: Vec<String>,
    /// Writes a later scheduler write resets (they are not in `result`).
    pub reset: Vec<Write>,
}

/// One line's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineCheck {
    pub line: usize,
    pub status: Status,
    /// For `cannot-evaluate`: the keys that could not be evaluated.
    pub why: Vec<String>,
    /// `ATTR{...}` writes, in order.
    pub sets: Vec<Write>,
    /// `ENV{...}` assignments.
    pub env: Vec<Write>,
    /// Other assignments (RUN, SYMLINK, OPTIONS, GOTO, ...), as written.
    pub other: Vec<String>,
}

/// Whether a line matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Match,
    CannotEvaluate,
}

/// An attribute or property and its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Write {
    pub attr: String,
    pub value: String,
}

/// The exit code of `blktune export --check` when it found problems
/// ([`CheckReport::problem_count`]); 1 stays "could not check", 2 bad input.
pub const EXIT_PROBLEMS: i32 = 3;

/// The actions a scheduler rule is meant for.
pub const ACTIONS: [&str; 2] = ["add", "change"];

impl CheckReport {
    /// How many problems the check found: lines udev ignores, writes lost to
    /// a later scheduler switch, lines that also hit partitions (each counted
    /// once per device, whatever the action).
    pub fn problem_count(&self) -> usize {
        let per_device = |d: &DeviceCheck| {
            let mut all: Vec<&String> = d.actions.iter().flat_map(|a| &a.problems).collect();
            all.sort();
            all.dedup();
            all.len()
        };
        self.ignored.len() + self.devices.iter().map(per_device).sum::<usize>()
    }
}

/// Lines that match partition `part` of `dev` for sure and write attributes:
/// the rule lacks `ENV{DEVTYPE}=="disk"` (or a guard with the same effect,
/// such as `TEST=="queue/scheduler"`, which a partition fails).
fn partition_problems(
    rules: &[Rule],
    root: &SysRoot,
    db: &UdevDb,
    dev: &crate::os::DeviceName,
    part: &str,
    action: &str,
) -> Vec<String> {
    let dir = root.device_lineage(dev).first().map(|d| d.join(part));
    let props = dir
        .and_then(|d| root.read_lineage_attr(&d, "dev").ok())
        .and_then(|mm| {
            let (ma, mi) = mm.trim().split_once(':')?;
            Some((ma.parse::<u32>().ok()?, mi.parse::<u32>().ok()?))
        })
        .filter(|(ma, mi)| db.has_entry(*ma, *mi))
        .map(|(ma, mi)| db.properties(ma, mi));
    eval::evaluate_partition(rules, root, dev, part, props.as_ref(), action)
        .lines
        .iter()
        .filter(|l| l.status == Status::Match && !l.sets.is_empty())
        .map(|l| {
            let attrs: Vec<&str> = l.sets.iter().map(|w| w.attr.as_str()).collect();
            format!(
                "line {} also matches partition {part} (no ENV{{DEVTYPE}}==\"disk\" guard): udev would write {} there too",
                l.line,
                attrs.join(", ")
            )
        })
        .collect()
}

/// Check `text` (the content of `file`) against `devices`.
pub fn check(
    text: &str,
    file: &str,
    root: &SysRoot,
    db: &UdevDb,
    devices: &[BlockDevice],
) -> CheckReport {
    let rules = parse_rules(text);
    let ignored = rules
        .iter()
        .filter_map(|r| {
            r.invalid.as_ref().map(|why| Ignored {
                line: r.line,
                why: why.clone(),
            })
        })
        .collect();
    let devices = devices
        .iter()
        .filter_map(|d| {
            let dev = root.device(&d.name)?;
            let props = db
                .has_entry(d.major, d.minor)
                .then(|| db.properties(d.major, d.minor));
            let udev_db = props.is_some();
            let parts = root.partitions_of(&dev);
            let actions = ACTIONS
                .iter()
                .map(|a| {
                    let mut c = eval::evaluate(&rules, root, &dev, d, props.as_ref(), a);
                    for p in &parts {
                        c.problems
                            .extend(partition_problems(&rules, root, db, &dev, p, a));
                    }
                    c
                })
                .collect();
            Some(DeviceCheck {
                device: d.name.clone(),
                kind: d.kind.label().into(),
                udev_db,
                actions,
            })
        })
        .collect();
    CheckReport {
        file: file.into(),
        rules: rules.len(),
        ignored,
        devices,
    }
}
