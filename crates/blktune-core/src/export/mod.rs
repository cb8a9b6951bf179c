//! Export: turn chosen queue settings into a udev rules file (or a shell
//! script that applies them now), write it safely, and check a rules file
//! against the devices of this machine.
//!
//! Library API (used by `blktune export` and by the TUI's export dialog):
//! - [`ExportItem::live`] / [`ExportItem::new`]: one device, its settings and its
//!   udev properties (read with [`UdevDb`]).
//! - [`render`]`(&items, &RenderOptions) -> Result<`[`Rendered`]`, `[`ExportError`]`>`:
//!   the file text, warnings for the user (kernel names are not stable, a class
//!   rule hits other disks, ...) and the suggested install path. Pure: no I/O.
//! - [`write_rules`]`(path, text, force)`: atomic no-clobber write; an existing
//!   file without `force` gives [`ExportError::AlreadyExists`], so a dialog can
//!   ask before overwriting.
//! - [`check`]: parse a rules file and tell, per device, which lines match and
//!   what they would set.
//!
//! Why the rules look the way they do (udev(7), kernel `Documentation/ABI/stable/sysfs-block`):
//! - Guards `ACTION=="add|change"` (so `udevadm trigger --action=change` re-applies),
//!   `SUBSYSTEM=="block"`, `ENV{DEVTYPE}=="disk"` (never a partition) and
//!   `TEST=="queue/scheduler"` (only devices that have a scheduler). A device
//!   without one can only get `read_ahead_kb`; its guard is
//!   `TEST=="queue/read_ahead_kb"`, because `TEST=="queue/scheduler"` would never
//!   be true for it and the rule would silently do nothing.
//! - Assignments run left to right when the line matches. Switching the scheduler
//!   resets `nr_requests` and every `queue/iosched/*` tunable (`block/elevator.c`),
//!   so the only safe order is scheduler, tunables, nr_requests, read_ahead_kb.

pub mod check;
mod keys;
mod matching;
pub mod measured;
mod rules;
mod safe;
mod script;
pub mod tuned;
mod udevdb;
mod winner;
mod write;

pub use matching::{MatchKey, MatchSpec, MatchStrategy, match_spec};
pub use safe::{check_assign_value, check_match_value};
pub use udevdb::{StableIds, UdevDb, parse_db, parse_links, scan_by_id};
pub use winner::{WinnerExport, export_winner};
pub use write::write_rules;

use crate::device::BlockDevice;
use crate::error::TuneError;
use crate::tuner::Wanted;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Default install path. `61-` sorts after `60-persistent-storage.rules`, which
/// sets `ENV{ID_WWN}` and `ENV{ID_SERIAL}`: udev reads all rules files in the
/// lexical order of their names, so a rule matching on those must come later.
pub const DEFAULT_RULES_PATH: &str = "/etc/udev/rules.d/61-blktune.rules";

/// The rules file that sets the `ENV{ID_*}` properties the `id` match uses.
pub const PERSISTENT_STORAGE_RULES: &str = "60-persistent-storage.rules";

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// A udev rules file.
    #[default]
    Udev,
    /// A POSIX sh script that applies the settings now.
    Script,
    /// A tuned profile (tuned runs after udev and wins on RHEL-family hosts).
    Tuned,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 3] = [Format::Udev, Format::Script, Format::Tuned];

    /// The `--format` spelling.
    pub fn label(self) -> &'static str {
        match self {
            Format::Udev => "udev",
            Format::Script => "script",
            Format::Tuned => "tuned",
        }
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            Format::Udev => "A udev rules file",
            Format::Script => "A POSIX sh script that applies the settings now",
            Format::Tuned => {
                "A tuned profile including the active one (tuned overrides udev where it runs)"
            }
        }
    }
}

/// One device to export.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportItem {
    /// The device as discovered.
    pub device: BlockDevice,
    /// What the rule sets; `None` fields are left out.
    pub settings: Wanted,
    /// The device's udev properties (`E:` lines of the udev database), maybe empty.
    pub udev_env: BTreeMap<String, String>,
    /// What was measured before and after the change, for the header (free text).
    pub measured: Option<String>,
}

impl ExportItem {
    /// An item with explicit settings.
    pub fn new(device: BlockDevice, settings: Wanted, udev_env: BTreeMap<String, String>) -> Self {
        Self {
            device,
            settings,
            udev_env,
            measured: None,
        }
    }

    /// An item exporting the device's current live settings (see [`live_settings`]).
    pub fn live(
        device: BlockDevice,
        udev_env: BTreeMap<String, String>,
        hz: &crate::kernel_hz::KernelHz,
    ) -> Self {
        let settings = live_settings(&device, hz);
        Self::new(device, settings, udev_env)
    }
}

/// The current settings worth keeping: scheduler, nr_requests and
/// read_ahead_kb, plus the tunables that differ from the kernel's defaults
/// (a scheduler switch resets them to those defaults anyway, and writing every
/// default would only make the rule long and kernel-version specific). The
/// defaults of jiffies-valued tunables are this kernel's (`hz`): bfq's
/// untouched `timeout_sync` reads 125 at HZ=1000, 124 at HZ=250. The queue
/// settings next to the scheduler likewise, where the kernel's default is
/// known from the device ([`crate::sched::knob_default`]); one whose default
/// is the driver's (`add_random`, `max_sectors_kb`) only when asked for.
pub fn live_settings(device: &BlockDevice, hz: &crate::kernel_hz::KernelHz) -> Wanted {
    let q = &device.queue;
    let Some(s) = &q.scheduler else {
        return Wanted {
            read_ahead_kb: q.read_ahead_kb,
            ..Wanted::default()
        };
    };
    // Tunables the kernel derives from the queue (mq-deadline's `async_depth`
    // follows nr_requests) are never exported unless asked for.
    let tunables = q
        .tunables
        .iter()
        .filter(|(k, _)| !crate::sched::is_derived(k))
        .filter(|(k, _)| crate::sched::tunable(k).is_some_and(|t| t.default.is_some()))
        .filter(|(k, v)| !hz.is_default(k, v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let knobs = crate::sched::settable_knobs()
        .filter_map(|k| {
            let v = q.knobs.get(k.name)?;
            let default = crate::sched::knob_default(k.name, device.rotational, Some(&s.active))?;
            (v != default).then(|| (k.name.to_string(), v.clone()))
        })
        .collect();
    Wanted {
        scheduler: Some(s.active.clone()),
        tunables,
        nr_requests: q.nr_requests,
        read_ahead_kb: q.read_ahead_kb,
        knobs,
    }
}

/// Apply overrides to live settings. A new scheduler replaces only the
/// scheduler: the live nr_requests and read_ahead_kb stay (the rule writes
/// nr_requests after the scheduler, so the value survives the switch), and the
/// old scheduler's tunables go, because they do not exist under the new one.
pub fn with_overrides(live: &Wanted, over: &Wanted) -> Wanted {
    let mut out = live.clone();
    if switches(live, over) {
        out.scheduler = over.scheduler.clone();
        out.tunables.clear();
    }
    merge(out, over)
}

/// Like [`with_overrides`], but a new scheduler also drops the live
/// nr_requests: for a shoot-out winner, which was measured with the value the
/// switch left (kernel `elevator_switch()` resets it), not the original one.
pub fn with_switch_defaults(live: &Wanted, over: &Wanted) -> Wanted {
    let mut out = with_overrides(live, over);
    if switches(live, over) && over.nr_requests.is_none() {
        out.nr_requests = None;
    }
    out
}

/// Does `over` choose another scheduler than `live` has?
fn switches(live: &Wanted, over: &Wanted) -> bool {
    over.scheduler
        .as_ref()
        .is_some_and(|s| live.scheduler.as_ref() != Some(s))
}

/// `over`'s explicit tunables and numbers on top of `out`.
fn merge(mut out: Wanted, over: &Wanted) -> Wanted {
    for (k, v) in &over.tunables {
        if let Some(slot) = out.tunables.iter_mut().find(|(n, _)| n == k) {
            slot.1 = v.clone();
        } else {
            out.tunables.push((k.clone(), v.clone()));
        }
    }
    if over.nr_requests.is_some() {
        out.nr_requests = over.nr_requests;
    }
    if over.read_ahead_kb.is_some() {
        out.read_ahead_kb = over.read_ahead_kb;
    }
    for (k, v) in &over.knobs {
        out.knobs.retain(|(n, _)| n != k);
        out.knobs.push((k.clone(), v.clone()));
    }
    // The write order is the catalogue's.
    out.knobs.sort_by_key(|(k, _)| {
        crate::sched::QUEUE_KNOBS
            .iter()
            .position(|q| q.name == k)
            .unwrap_or(usize::MAX)
    });
    out
}

/// How to render.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// Match strategy for every item; `None`: `id` where the device has one, else `kernel`.
    pub strategy: Option<MatchStrategy>,
    /// udev rules or shell script.
    pub format: Format,
    /// Host name for the header.
    pub host: String,
    /// blktune version for the header (`env!("CARGO_PKG_VERSION")`).
    pub version: String,
    /// When it was written (RFC 3339), for the header; `None` leaves it out.
    pub generated: Option<String>,
    /// Where the text will be written, for the install commands in the header.
    pub output: Option<PathBuf>,
    /// Every block device of this host, to warn when a rule also matches
    /// other disks here.
    pub host_devices: Vec<BlockDevice>,
    /// Their udev properties by device name (for `ENV{ID_*}` matches); a
    /// device missing here has none.
    pub host_udev_env: BTreeMap<String, BTreeMap<String, String>>,
    /// `--format tuned`: the profile to include (the active one, from
    /// `/etc/tuned/active_profile`); `None`: the profile includes nothing.
    pub tuned_include: Option<String>,
}

impl RenderOptions {
    /// Options with this binary's version and no host devices.
    pub fn new(host: &str) -> Self {
        Self {
            host: host.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            ..Self::default()
        }
    }
}

/// A rendered file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The file content.
    pub text: String,
    /// One line each, for stderr or a status line (also written into the file as comments).
    pub warnings: Vec<String>,
    /// Where to install it (`DEFAULT_RULES_PATH`, or a script name).
    pub suggested_path: PathBuf,
    /// Do the rules match on `ENV{ID_*}`? Then the file name must sort after
    /// [`PERSISTENT_STORAGE_RULES`] (see [`sorts_after_persistent_storage`]).
    pub uses_udev_env: bool,
    /// The devices of this host the rules set (exported and also matched):
    /// the ones `udevadm trigger --action=change /sys/class/block/DEV` must name.
    pub trigger: Vec<String>,
}

/// `sudo udevadm trigger --action=change /sys/class/block/sda ...`: re-run the
/// rules for these devices only (not every block device of the host).
pub fn trigger_command(devices: &[String]) -> String {
    let paths: Vec<String> = devices
        .iter()
        .map(|d| format!("/sys/class/block/{d}"))
        .collect();
    format!("sudo udevadm trigger --action=change {}", paths.join(" "))
}

/// Why an export was refused.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("'{dev}': {what} {value} cannot be written into a udev rule safely: {why}")]
    UnsafeValue {
        dev: String,
        what: String,
        /// Already quoted and escaped for display.
        value: String,
        why: String,
    },

    #[error("'{dev}' has no model in sysfs (device/model); use --match id, class or kernel")]
    NoModel { dev: String },

    #[error(
        "'{dev}' has no queue/rotational, so no class to match (rotational or not is unknown); use --match id, model or kernel"
    )]
    NoClass { dev: String },

    #[error(
        "'{dev}' has no stable id (no ID_WWN/ID_SERIAL in the udev database, no wwid/serial in sysfs); use --match kernel, model or class"
    )]
    NoId { dev: String },

    #[error(
        "'{first}' and '{second}' are both matched by {matcher} but are to get different settings; export them separately or use --match id"
    )]
    Conflict {
        first: String,
        second: String,
        matcher: String,
    },

    #[error(
        "'{dev}': nr_requests {n} is above the hardware queue depth ({depth}), the most the kernel takes under none; give --nr-requests {depth} or less"
    )]
    AboveQueueDepth { dev: String, n: u64, depth: u64 },

    #[error("'{dev}': nothing to export (no scheduler and no read_ahead_kb)")]
    Nothing { dev: String },

    #[error("nothing to export: no devices given and none with a scheduler found")]
    NoDevices,

    #[error("{path}: {why}")]
    BadPath { path: String, why: String },

    #[error("{path} already exists; not overwritten (use --force to replace it)")]
    AlreadyExists { path: String },

    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },

    #[error(transparent)]
    Tune(#[from] TuneError),
}

impl ExportError {
    /// 2 for bad input, 1 for failures (an existing file is a failure to write).
    pub fn exit_code(&self) -> i32 {
        match self {
            ExportError::AlreadyExists { .. } | ExportError::Io { .. } => 1,
            ExportError::Tune(t) => t.exit_code(),
            _ => 2,
        }
    }
}

/// Render items into a rules file or a script. Pure.
pub fn render(items: &[ExportItem], opts: &RenderOptions) -> Result<Rendered, ExportError> {
    if items.is_empty() {
        return Err(ExportError::NoDevices);
    }
    let mut warnings = Vec::new();
    let mut blocks: Vec<rules::Block> = Vec::new();
    let mut trigger: Vec<String> = items.iter().map(|i| i.device.name.clone()).collect();
    for item in items {
        let (spec, mut w) = matching::choose(item, opts.strategy)?;
        warnings.append(&mut w);
        let assigns = rules::assignments(&item.device, &item.settings)?;
        check_queue_depth(item)?;
        if let Some(w) = carried_nr_requests_warning(item) {
            warnings.push(w);
        }
        // Two devices caught by the same match: fine if they get the same, refused otherwise.
        if let Some(b) = blocks.iter_mut().find(|b| b.spec.keys == spec.keys) {
            if b.assigns != assigns {
                return Err(ExportError::Conflict {
                    first: b.items[0].device.name.clone(),
                    second: item.device.name.clone(),
                    matcher: spec.render_keys(),
                });
            }
            b.items.push(item.clone());
            continue;
        }
        blocks.push(rules::Block {
            spec,
            assigns,
            items: vec![item.clone()],
        });
    }
    for b in &blocks {
        let names: Vec<&str> = b.items.iter().map(|i| i.device.name.as_str()).collect();
        let others = matching::also_matched(
            &b.spec,
            b.guard_attr(),
            &names,
            &opts.host_devices,
            &opts.host_udev_env,
        );
        trigger.extend(others.iter().map(|o| o.to_string()));
        if !others.is_empty() {
            warnings.push(format!(
                "'{}': the {} rule also matches {} on this host",
                names.join("', '"),
                b.spec.strategy,
                others.join(", ")
            ));
        }
    }
    trigger.sort();
    trigger.dedup();
    let text = match opts.format {
        Format::Udev => rules::render_file(&blocks, opts, &warnings, &trigger),
        Format::Script => script::render_script(&blocks, opts, &warnings),
        Format::Tuned => tuned::render_profile(&blocks, opts, &warnings),
    };
    let suggested_path = match opts.format {
        Format::Udev => PathBuf::from(DEFAULT_RULES_PATH),
        Format::Script => PathBuf::from("blktune-apply.sh"),
        Format::Tuned => PathBuf::from("/etc/tuned/blktune/tuned.conf"),
    };
    Ok(Rendered {
        text,
        warnings,
        suggested_path,
        uses_udev_env: blocks.iter().any(|b| b.spec.uses_udev_env()),
        trigger,
    })
}

/// Under `none` the kernel refuses nr_requests above the hardware queue
/// depth: a rule writing more would fail at boot, so it is not written. A
/// device whose depth is unknown is left to the warning below.
fn check_queue_depth(item: &ExportItem) -> Result<(), ExportError> {
    let s = &item.settings;
    let target = s.scheduler.as_deref().or(item
        .device
        .queue
        .scheduler
        .as_ref()
        .map(|q| q.active.as_str()));
    match (target, s.nr_requests, item.device.hw_queue_depth) {
        (Some("none"), Some(n), Some(depth)) if n > depth => Err(ExportError::AboveQueueDepth {
            dev: item.device.name.clone(),
            n,
            depth,
        }),
        _ => Ok(()),
    }
}

/// Switching to `none` makes the queue depth the limit of nr_requests
/// (kernel `Documentation/ABI/stable/sysfs-block`), so a value carried over
/// from another scheduler may be refused when the rule runs.
fn carried_nr_requests_warning(item: &ExportItem) -> Option<String> {
    if item.device.hw_queue_depth.is_some() {
        return None; // known: checked by check_queue_depth
    }
    let s = &item.settings;
    let live = item.device.queue.scheduler.as_ref()?;
    let n = s.nr_requests?;
    (s.scheduler.as_deref() == Some("none") && live.active != "none").then(|| {
        format!(
            "'{}': nr_requests {n} was set under {}; under none the kernel refuses values above the queue depth",
            item.device.name, live.active
        )
    })
}

/// Does a rules file of this name run after `60-persistent-storage.rules`?
/// udev orders all rules files by file name alone, whatever their directory.
pub fn sorts_after_persistent_storage(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n > PERSISTENT_STORAGE_RULES)
}

#[cfg(test)]
mod tests;
