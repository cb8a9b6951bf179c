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
    /// Ordering problems: nr_requests or a tunable written before a scheduler switch.
    pub problems: Vec<String>,
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

/// The actions a scheduler rule is meant for.
pub const ACTIONS: [&str; 2] = ["add", "change"];

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
            let actions = ACTIONS
                .iter()
                .map(|a| eval::evaluate(&rules, root, &dev, d, props.as_ref(), a))
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
