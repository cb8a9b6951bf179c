//! `blktune status`: what blktune has changed on this machine (or in the
//! tree given with `--sysfs-root`), from which originals, since when, by
//! which process and in which journal directory, with the command that
//! reverts each device. It reads the journal this process uses and, for the
//! real devices, every other journal directory the register of live devices
//! names (`/run/blktune/live`): a change made from a shell where
//! `BLKTUNE_JOURNAL_DIR` was set (or dropped by sudo) is shown as well.
//! It writes nothing.
//!
//! A command of its own rather than `revert --list`: a read-only question
//! should not be asked through the verb that writes to devices (one flag
//! forgotten, and the answer is a revert), and a monitoring script runs
//! `status --json` without any chance of changing anything.

use super::common::journal_error;
use super::{Global, Out};
use blktune_core::device::BlockDevice;
use blktune_core::journal::{Journal, JournalEntry, Tree};
use blktune_core::os::SysRoot;
use blktune_core::tuner::{self, Wanted};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// Arguments of `blktune status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print JSON (one object) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `blktune status --json`.
#[derive(Debug, Serialize)]
struct StatusJson {
    /// `"live"` (this machine's devices) or `{"files": "/abs/sys"}`.
    tree: Tree,
    /// The journal directory this process uses.
    journal: PathBuf,
    /// The register of live devices read (`null` for a tree of files).
    registry: Option<PathBuf>,
    /// Every device with an original journalled, by journal directory then name.
    devices: Vec<DeviceJson>,
    /// Entries (or directories) that could not be read: nothing of them is shown.
    refused: Vec<RefusedJson>,
}

/// One device blktune changed.
#[derive(Debug, Serialize)]
struct DeviceJson {
    device: String,
    /// The journal directory holding its originals.
    journal: PathBuf,
    /// When the original was journalled (the first change), RFC 3339.
    since: String,
    /// The same, in seconds since the Unix epoch.
    saved_at: f64,
    /// The process that made the first change (`null`: not recorded).
    pid: Option<u32>,
    /// The original settings a revert puts back.
    original: Wanted,
    /// Values that differ now, `name original→now` (empty: back at the
    /// originals; the next revert drops the entry).
    differs: Vec<String>,
    /// Why the entry no longer describes the device of that name (`null`:
    /// it does); a revert drops such an entry without applying it.
    stale: Option<&'static str>,
    /// The command that reverts it.
    revert: String,
}

/// An entry or a directory that could not be read.
#[derive(Debug, Serialize)]
struct RefusedJson {
    journal: PathBuf,
    /// `null`: the whole directory.
    device: Option<String>,
    error: String,
}

/// Run `blktune status`: exit 0 when everything could be read, 1 when a
/// journal directory or an entry could not (it is named).
pub fn run(g: &Global, a: &StatusArgs, out: &mut Out) -> anyhow::Result<i32> {
    let root = g.root();
    let journal = Journal::for_root(&root);
    let status = gather(&root, &journal)?;
    if a.json {
        out.line(&serde_json::to_string_pretty(&status)?)?;
    } else {
        out.text(&render_text(&status))?;
    }
    Ok(if status.refused.is_empty() { 0 } else { 1 })
}

/// Read the journal `journal` and the others the register names.
fn gather(root: &SysRoot, journal: &Journal) -> anyhow::Result<StatusJson> {
    let boot = tuner::boot_id(root);
    let mut devices = Vec::new();
    let mut refused = Vec::new();
    // The process's own journal: unreadable is an error of its own (as for revert).
    for e in journal
        .list()
        .map_err(|e| journal_error(journal.dir(), e))?
    {
        match e {
            Ok(e) => devices.push(device_json(root, journal, &e, boot.as_deref())),
            Err((device, error)) => refused.push(RefusedJson {
                journal: journal.dir().to_path_buf(),
                device: Some(device),
                error: error.to_string(),
            }),
        }
    }
    if let Some(registry) = journal.registry() {
        let registered = match registry.list() {
            Ok(r) => r,
            Err(e) => {
                refused.push(RefusedJson {
                    journal: registry.dir().to_path_buf(),
                    device: None,
                    error: super::one_line(&journal_error(registry.dir(), e)),
                });
                Vec::new()
            }
        };
        for r in registered {
            let r = match r {
                Ok(r) => r,
                Err((device, e)) => {
                    refused.push(RefusedJson {
                        journal: registry.dir().to_path_buf(),
                        device: Some(device),
                        error: e.to_string(),
                    });
                    continue;
                }
            };
            if r.journal == journal.dir() {
                continue;
            }
            let there = journal.sibling(r.journal.clone());
            match there.load(&r.device) {
                Ok(Some(e)) => devices.push(device_json(root, &there, &e, boot.as_deref())),
                // A registration whose journal has no entry counts for nothing.
                Ok(None) => {}
                Err(e) => refused.push(RefusedJson {
                    journal: r.journal.clone(),
                    device: Some(r.device.clone()),
                    error: e.to_string(),
                }),
            }
        }
    }
    Ok(StatusJson {
        tree: Tree::of(root),
        journal: journal.dir().to_path_buf(),
        registry: journal.registry().map(|r| r.dir().to_path_buf()),
        devices,
        refused,
    })
}

/// One entry as status shows it, with the device as it is now.
fn device_json(
    root: &SysRoot,
    journal: &Journal,
    e: &JournalEntry,
    boot: Option<&str>,
) -> DeviceJson {
    let current = root.device(&e.device).map(|d| BlockDevice::read(root, &d));
    let stale = e.stale_reason(current.as_ref(), boot);
    let differs = match (&current, stale) {
        (Some(d), None) => e.differences(&d.queue),
        _ => Vec::new(),
    };
    let saved = UNIX_EPOCH + Duration::try_from_secs_f64(e.saved_at).unwrap_or_default();
    DeviceJson {
        device: e.device.clone(),
        journal: journal.dir().to_path_buf(),
        since: blktune_core::units::rfc3339(saved),
        saved_at: e.saved_at,
        pid: e.pid,
        original: e.original.clone(),
        differs,
        stale,
        revert: journal.revert_command(root, &[e.device.as_str()]),
    }
}

/// The text report: one block per journal directory, one per device in it.
fn render_text(s: &StatusJson) -> String {
    let mut out = String::new();
    let dirs: Vec<&Path> = {
        let mut v: Vec<&Path> = vec![s.journal.as_path()];
        for d in &s.devices {
            if !v.contains(&d.journal.as_path()) {
                v.push(&d.journal);
            }
        }
        v
    };
    if s.devices.is_empty() {
        out.push_str(&format!(
            "nothing changed by blktune: no original in the journal {} ({})\n",
            s.journal.display(),
            s.tree
        ));
    }
    for dir in dirs {
        let here: Vec<&DeviceJson> = s.devices.iter().filter(|d| d.journal == dir).collect();
        if here.is_empty() {
            continue;
        }
        let whose = if dir == s.journal {
            "this process's journal"
        } else {
            "named by the register of live devices"
        };
        out.push_str(&format!(
            "journal {} ({whose}; {}):\n",
            dir.display(),
            s.tree
        ));
        for d in here {
            let pid = d
                .pid
                .map_or_else(|| "an unknown process".into(), |p| format!("pid {p}"));
            out.push_str(&format!(
                "  {}: changed since {} by {pid}\n",
                d.device, d.since
            ));
            out.push_str(&format!("    original  {}\n", d.original.summary()));
            let now = match (d.stale, d.differs.is_empty()) {
                (Some(why), _) => format!("stale: {why}; a revert drops the entry"),
                (None, true) => "back at the originals; a revert drops the entry".into(),
                (None, false) => d.differs.join(", "),
            };
            out.push_str(&format!("    now       {now}\n"));
            out.push_str(&format!("    revert    {}\n", d.revert));
        }
    }
    for r in &s.refused {
        let what = r
            .device
            .as_ref()
            .map_or_else(String::new, |d| format!("'{d}' in "));
        out.push_str(&format!(
            "refused: {what}{}: {}\n",
            r.journal.display(),
            r.error
        ));
    }
    out
}
