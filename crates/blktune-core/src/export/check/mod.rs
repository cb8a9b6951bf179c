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
pub mod search;

pub use glob::udev_match;
pub use parse::{Op, Rule, Token, parse_rules};
pub use report::render_text;

use super::UdevDb;
use crate::device::BlockDevice;
use crate::kernel_hz::KernelHz;
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
    /// Lines that write queue attributes but match no device of this
    /// machine (a disk that is not here, an id whose form changed), and why:
    /// their settings will not happen here.
    pub idle: Vec<Ignored>,
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
    /// Matching lines, problems and reset writes past the first [`MAX_SHOWN`]
    /// of each: counted, not kept (a hostile file of a million matching
    /// lines would otherwise cost memory per line, device and action).
    pub lines_more: usize,
    pub problems_more: usize,
    pub reset_more: usize,
}

/// Entries of each list of an [`ActionCheck`] kept and shown; the rest are
/// counted.
pub const MAX_SHOWN: usize = 100;

/// A rules file is a few KiB; anything past this is not one (and the
/// check's memory grows with the number of its lines): refused unread.
pub const MAX_RULES_FILE: u64 = 4 << 20;

/// A tuned file (`active_profile`, a profile's `tuned.conf`) larger than
/// this is not one.
pub const MAX_TUNED_FILE: u64 = 1 << 20;

/// Push `v` unless `list` holds [`MAX_SHOWN`] already; then count it in `more`.
fn push_capped<T>(list: &mut Vec<T>, more: &mut usize, v: T) {
    if list.len() < MAX_SHOWN {
        list.push(v);
    } else {
        *more += 1;
    }
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
    /// a later scheduler switch, lines that also hit partitions. Each problem
    /// counts once, however many devices and actions it hits (one bad line of a
    /// `loop*` rule is one problem, not one per loop device).
    ///
    /// Past [`MAX_SHOWN`] problems of one device and action the rest are only
    /// counted, so this is a lower bound then ([`CheckReport::problems_capped`]).
    pub fn problem_count(&self) -> usize {
        let actions = || self.devices.iter().flat_map(|d| &d.actions);
        let mut all: Vec<&String> = actions().flat_map(|a| &a.problems).collect();
        all.sort();
        all.dedup();
        let more = actions().map(|a| a.problems_more).max().unwrap_or(0);
        self.ignored.len() + self.idle.len() + all.len() + more
    }

    /// Were problems left uncounted ([`MAX_SHOWN`])?
    pub fn problems_capped(&self) -> bool {
        self.devices
            .iter()
            .flat_map(|d| &d.actions)
            .any(|a| a.problems_more > 0)
    }
}

/// An unattached loop device (size 0): present in sysfs, nothing to tune.
pub fn is_unattached_loop(dev: &BlockDevice) -> bool {
    matches!(dev.kind, crate::device::DeviceKind::Loop) && dev.size_bytes == 0
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
) -> (Vec<String>, usize) {
    let dir = root.device_lineage(dev).first().map(|d| d.join(part));
    let props = dir
        .and_then(|d| root.read_lineage_attr(&d, "dev").ok())
        .and_then(|mm| {
            let (ma, mi) = mm.trim().split_once(':')?;
            Some((ma.parse::<u32>().ok()?, mi.parse::<u32>().ok()?))
        })
        .filter(|(ma, mi)| db.has_entry(*ma, *mi))
        .map(|(ma, mi)| db.properties(ma, mi));
    let c = eval::evaluate_partition(rules, root, dev, part, props.as_ref(), action);
    let found = c
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
        .collect();
    // Lines past the kept ones: not looked at, so counted as problems only
    // when every kept one was one.
    let more = if c
        .lines
        .iter()
        .all(|l| l.status == Status::Match && !l.sets.is_empty())
    {
        c.lines_more
    } else {
        0
    };
    (found, more)
}

/// The match keys that name one device (an id), as udev rules spell them.
const ID_KEYS: &[&str] = &[
    "ENV{ID_WWN_WITH_EXTENSION}",
    "ENV{ID_WWN}",
    "ENV{ID_SERIAL}",
    "ENV{ID_SERIAL_SHORT}",
    "ENV{DM_UUID}",
    "ENV{DM_NAME}",
    "ENV{MD_UUID}",
    "ATTRS{wwid}",
    "ATTR{wwid}",
    "ATTRS{serial}",
    "ATTR{serial}",
    "ATTR{nguid}",
    "ATTR{eui}",
    "ATTR{dm/uuid}",
    "ATTR{dm/name}",
    "ATTR{md/uuid}",
];

/// The lines of `rules` that write a queue attribute but neither match nor
/// may match any device of `devices`' checks: they will set nothing here.
/// Unknown when a device's matching lines were cut ([`MAX_SHOWN`]): none.
fn idle_lines(rules: &[Rule], checked: &[DeviceCheck], devices: &[BlockDevice]) -> Vec<Ignored> {
    let actions = || checked.iter().flat_map(|d| &d.actions);
    if actions().any(|a| a.lines_more > 0) {
        return Vec::new();
    }
    let reached: std::collections::BTreeSet<usize> = actions()
        .flat_map(|a| a.lines.iter().map(|l| l.line))
        .collect();
    rules
        .iter()
        .filter(|r| r.invalid.is_none() && !reached.contains(&r.line))
        .filter_map(|r| {
            let writes: Vec<String> = (r.tokens.iter())
                .filter(|t| !t.op.is_match() && t.key == "ATTR")
                .filter_map(|t| {
                    let a = t.attr.as_deref()?;
                    a.starts_with("queue/")
                        .then(|| format!("{}={}", a.trim_start_matches("queue/"), t.value))
                })
                .collect();
            if writes.is_empty() {
                return None;
            }
            let id = (r.tokens.iter())
                .filter(|t| t.op == Op::Match)
                .find(|t| ID_KEYS.contains(&key_text(t).as_str()));
            let holder = id.and_then(|t| id_holder(t, devices));
            let why = match (id, holder) {
                (Some(t), Some(d)) => format!(
                    "{} has {}, but {}: {} will not be set",
                    d.name,
                    t.display(),
                    other_keys_fail(r, d),
                    writes.join(" ")
                ),
                (Some(t), None) => format!(
                    "no device here has {}: {} will not be set{}",
                    t.display(),
                    writes.join(" "),
                    id_hint(t, devices)
                ),
                (None, _) => format!(
                    "matches no device of this machine: {} will not be set",
                    writes.join(" ")
                ),
            };
            Some(Ignored { line: r.line, why })
        })
        .collect()
}

/// The device that has the id a line matches on (one of its sysfs ids: udev
/// properties are not known here), if any: the line then misses it for
/// another of its keys.
fn id_holder<'a>(token: &Token, devices: &'a [BlockDevice]) -> Option<&'a BlockDevice> {
    let key = key_text(token);
    devices.iter().find(|d| {
        super::keys::sysfs_value(&key, d)
            .flatten()
            .is_some_and(|v| udev_match(&token.value, v.trim_end()))
    })
}

/// Why a line whose id `device` has still misses it: a `TEST` guard of
/// the exporter's on a file the device lacks (a captured tree without
/// `queue/`, a bio-based device without a scheduler), else another key.
fn other_keys_fail(rule: &Rule, device: &BlockDevice) -> String {
    let q = &device.queue;
    let missing: Vec<String> = (rule.tokens.iter())
        .filter(|t| t.key == "TEST" && t.op == Op::Match)
        .filter(|t| match t.value.as_str() {
            "queue/read_ahead_kb" => q.read_ahead_kb.is_none(),
            "queue/scheduler" => !q.has_scheduler(),
            _ => false,
        })
        .map(|t| format!("it has no {} ({})", t.value, t.display()))
        .collect();
    if missing.is_empty() {
        "another key of the line does not match it".into()
    } else {
        missing.join(", ")
    }
}

/// `ATTRS{wwid}`: a token's key as written.
fn key_text(token: &Token) -> String {
    match &token.attr {
        Some(a) => format!("{}{{{a}}}", token.key),
        None => token.key.clone(),
    }
}

/// For a sysfs `wwid` match no device has: the device whose wwid names the
/// same disk in another form (`t10.ATA     KINGSTON SH103S3240G  50026B72...`
/// on Linux 4.16 is `naa.50026b72...` on 6.17), if one does.
fn id_hint(token: &Token, devices: &[BlockDevice]) -> String {
    if token.attr.as_deref() != Some("wwid") {
        return String::new();
    }
    let squash = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let wanted = squash(&token.value);
    let same = devices.iter().find(|d| {
        d.wwid.as_deref().is_some_and(|w| {
            let id = squash(w.split_once('.').map_or(w, |(_, id)| id));
            id.len() >= 8 && (wanted.contains(&id) || id.contains(&wanted))
        })
    });
    match same {
        Some(d) => format!(
            " ({} has wwid '{}': the sysfs wwid's form changes across kernels; ENV{{ID_WWN}} or ENV{{ID_SERIAL}} do not)",
            d.name,
            d.wwid.as_deref().unwrap_or_default()
        ),
        None => String::new(),
    }
}

/// Writes of a tunable's kernel default after a scheduler switch in the same
/// event: the switch sets every tunable to its default (kernel
/// `block/elevator.c`), so the write changes nothing. `hz` gives the
/// defaults of the jiffies-valued ones.
fn default_writes(action_check: &ActionCheck, hz: &KernelHz) -> Vec<String> {
    let mut out = Vec::new();
    let mut switch: Option<(usize, String)> = None;
    for l in action_check
        .lines
        .iter()
        .filter(|l| l.status == Status::Match)
    {
        for w in &l.sets {
            if w.attr == "queue/scheduler" {
                switch = Some((l.line, w.value.trim().to_owned()));
                continue;
            }
            let Some(name) = w.attr.strip_prefix("queue/iosched/") else {
                continue;
            };
            let Some((at, sched)) = &switch else { continue };
            let of_it = crate::sched::tunable(name).is_some_and(|t| t.scheduler == sched);
            if of_it && hz.is_default(name, &w.value) {
                out.push(format!(
                    "line {} writes {}={}, the kernel's default under {sched}, which the switch on line {at} sets anyway: the write changes nothing",
                    l.line,
                    w.attr.trim_start_matches("queue/"),
                    w.value.trim()
                ));
            }
        }
    }
    out
}

/// Check `text` (the content of `file`) against `devices`.
pub fn check(
    text: &str,
    file: &str,
    root: &SysRoot,
    db: &UdevDb,
    devices: &[BlockDevice],
) -> CheckReport {
    let hz = KernelHz::read(root, devices);
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
    let all_devices = devices;
    let devices: Vec<DeviceCheck> = devices
        .iter()
        .filter(|d| !is_unattached_loop(d))
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
                    for p in default_writes(&c, &hz) {
                        push_capped(&mut c.problems, &mut c.problems_more, p);
                    }
                    for p in &parts {
                        let (found, more) = partition_problems(&rules, root, db, &dev, p, a);
                        c.problems_more += more;
                        for f in found {
                            push_capped(&mut c.problems, &mut c.problems_more, f);
                        }
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
    let idle = idle_lines(&rules, &devices, all_devices);
    CheckReport {
        file: file.into(),
        rules: rules.len(),
        ignored,
        idle,
        devices,
    }
}

#[cfg(test)]
mod fleet_tests {
    use super::*;
    use crate::export::{ExportItem, MatchStrategy, RenderOptions, render};
    use crate::fake::{FakeDisk, FakeTree};

    /// loop0 and loop9 attached, loop1..loop5 unattached (size 0).
    fn loops(dir: &std::path::Path) -> (SysRoot, Vec<BlockDevice>) {
        let t = FakeTree::new(dir).unwrap();
        t.add(&FakeDisk::new("loop0").dev(7, 0).active("none"))
            .unwrap();
        t.add(&FakeDisk::new("loop9").dev(7, 9).active("none"))
            .unwrap();
        for i in 1..=5 {
            t.add(&FakeDisk::new(&format!("loop{i}")).dev(7, i).size_bytes(0))
                .unwrap();
        }
        let root = t.root();
        let devs = crate::device::discover(&root).unwrap();
        (root, devs)
    }

    #[test]
    fn check_leaves_out_unattached_loops_and_counts_a_bad_line_once() {
        let dir = tempfile::tempdir().unwrap();
        let (root, devs) = loops(dir.path());
        let text =
            "KERNEL==\"loop*\", ATTR{queue/nr_requests}=\"64\", ATTR{queue/scheduler}=\"kyber\"\n";
        let r = check(text, "x.rules", &root, &UdevDb::none(), &devs);
        let names: Vec<&str> = r.devices.iter().map(|d| d.device.as_str()).collect();
        assert_eq!(names, ["loop0", "loop9"]);
        assert_eq!(r.problem_count(), 1, "{r:?}");
    }

    #[test]
    fn class_warning_names_each_attached_device_once() {
        let dir = tempfile::tempdir().unwrap();
        let (_root, devs) = loops(dir.path());
        let loop0 = devs.iter().find(|d| d.name == "loop0").unwrap().clone();
        let mut host = devs.clone();
        host.extend(devs.iter().filter(|d| d.name == "loop9").cloned());
        let opts = RenderOptions {
            strategy: Some(MatchStrategy::Class),
            host_devices: host,
            ..RenderOptions::new("h")
        };
        let r = render(
            &[ExportItem::live(
                loop0,
                Default::default(),
                &crate::kernel_hz::KernelHz::unknown(),
            )],
            &opts,
        )
        .unwrap();
        let w: Vec<&String> = r
            .warnings
            .iter()
            .filter(|w| w.contains("also matches"))
            .collect();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].ends_with("also matches loop9 on this host"), "{w:?}");
    }
}
