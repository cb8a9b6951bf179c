//! `blktune set` and `blktune revert`.

use super::{Global, Out, UsageError};
use crate::journal::Journal;
use crate::tuner::{self, Outcome, Settings, Tuner};
use crate::units::format_duration;
use anyhow::Context;

/// Arguments of `blktune set`.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// The whole device (sda, nvme0n1, loop0), not a partition.
    pub device: String,

    /// Scheduler to switch to (one of the device's available ones).
    #[arg(long, short = 's', value_name = "NAME")]
    pub scheduler: Option<String>,

    /// queue/nr_requests (4 to 2048); written after the scheduler switch, which resets it.
    #[arg(long, value_name = "N")]
    pub nr_requests: Option<u64>,

    /// queue/read_ahead_kb (a multiple of the page size).
    #[arg(long, value_name = "N")]
    pub read_ahead_kb: Option<u64>,

    /// A tunable of the target scheduler, e.g. read_expire=100 (repeatable).
    #[arg(long = "tunable", short = 't', value_name = "NAME=VALUE", value_parser = parse_tunable)]
    pub tunables: Vec<(String, String)>,

    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `blktune revert`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["devices", "all"])))]
pub struct RevertArgs {
    /// Devices to revert.
    pub devices: Vec<String>,

    /// Revert every device in the journal.
    #[arg(long, conflicts_with = "devices")]
    pub all: bool,
}

/// `NAME=VALUE`.
pub fn parse_tunable(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not NAME=VALUE (example: read_expire=100)"))?;
    Ok((k.trim().to_owned(), v.trim().to_owned()))
}

/// Print `dev: attr  before -> after` for each change.
pub fn print_outcome(out: &mut Out, o: &Outcome) -> anyhow::Result<()> {
    if o.changes.is_empty() {
        out.line(&format!("{}: already set, nothing changed", o.device))?;
        return Ok(());
    }
    let w = o.changes.iter().map(|c| c.attr.len()).max().unwrap_or(0);
    for c in &o.changes {
        out.line(&format!(
            "{}: {:<w$}  {} -> {}",
            o.device, c.attr, c.before, c.after
        ))?;
    }
    Ok(())
}

/// Run `blktune set`.
pub fn run_set(g: &Global, a: &SetArgs, out: &mut Out) -> anyhow::Result<i32> {
    let want = Settings {
        scheduler: a.scheduler.clone(),
        tunables: a.tunables.clone(),
        nr_requests: a.nr_requests,
        read_ahead_kb: a.read_ahead_kb,
    };
    if want.is_empty() {
        return Err(UsageError(format!(
            "'blktune set {}' needs at least one of --scheduler, --tunable, --nr-requests, --read-ahead-kb",
            a.device
        ))
        .into());
    }
    let tuner = Tuner::new(g.root(), Some(Journal::from_env()));
    let o = tuner.apply(&a.device, &want)?;
    if a.json {
        out.line(&serde_json::to_string_pretty(&o)?)?;
    } else {
        print_outcome(out, &o)?;
        if !o.changes.is_empty() {
            out.line(&format!(
                "took {} in the kernel; undo with: blktune revert {}",
                format_duration(o.kernel_time),
                o.device
            ))?;
        }
    }
    Ok(0)
}

/// Run `blktune revert`.
pub fn run_revert(g: &Global, a: &RevertArgs, out: &mut Out) -> anyhow::Result<i32> {
    let root = g.root();
    let journal = Journal::from_env();
    let tuner = Tuner::new(root.clone(), None);
    let names: Vec<String> = if a.all {
        let mut v = Vec::new();
        for e in journal
            .list()
            .with_context(|| format!("cannot read the journal in {}", journal.dir().display()))?
        {
            match e {
                Ok(e) => v.push(e.device),
                Err((name, err)) => {
                    eprintln!(
                        "blktune: journal entry of '{name}' is unreadable ({err}); left in place"
                    );
                }
            }
        }
        if v.is_empty() {
            out.line("nothing to revert: the journal is empty")?;
        }
        v
    } else {
        a.devices.clone()
    };
    let mut failed = 0;
    let boot = tuner::boot_id(&root);
    // Check every name before reverting anything (no path tricks into the journal dir).
    if let Some(bad) = names
        .iter()
        .find(|n| !crate::os::is_plausible_device_name(n))
    {
        return Err(UsageError(format!(
            "'{}' is not a device name (see 'blktune list')",
            bad.escape_debug()
        ))
        .into());
    }
    for name in &names {
        let entry = journal
            .load(name)
            .with_context(|| format!("cannot read the journal entry of '{name}'"))?;
        let Some(entry) = entry else {
            eprintln!(
                "blktune: '{name}': nothing to revert: no original in the journal ({})",
                journal.dir().display()
            );
            failed += 1;
            continue;
        };
        let current = root
            .device(name)
            .map(|d| crate::device::BlockDevice::read(&root, &d));
        let stale = entry.stale_reason(current.as_ref(), boot.as_deref());
        if let Some(why) = stale {
            out.line(&format!(
                "{name}: journal entry dropped, not applied: {why}"
            ))?;
            journal.remove(name)?;
            continue;
        }
        match tuner.restore(name, &entry.original) {
            Ok(o) => {
                print_outcome(out, &o)?;
                journal.remove(name).with_context(|| {
                    format!("reverted '{name}' but cannot clear its journal entry")
                })?;
            }
            Err(e) => {
                eprintln!("blktune: {e}");
                failed += 1;
            }
        }
    }
    Ok(if failed > 0 { 1 } else { 0 })
}
