//! `blktune set` and `blktune revert`.
//!
//! Both tell what they did to the device even when their report cannot be
//! printed (a full disk, a closed stdout): the writes are made either way,
//! so the exit code says what happened to the device, and stderr says that
//! the report is missing (with `set`, what changed and the undo command).

use super::common::{QueueJson, SettingsArgs, journal_error, stdout_was_closed, warn};
use super::{Global, Out, UsageError};
use anyhow::Context;
use blktune_core::device::QueueSettings;
use blktune_core::journal::Journal;
use blktune_core::kernel_hz::KernelHz;
use blktune_core::tuner::{self, Outcome, Stored, Tuner, ValueChange, Wanted};
use blktune_core::units::format_duration;

/// Arguments of `blktune set`.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// The whole device (sda, nvme0n1, loop0), not a partition.
    pub device: String,

    #[command(flatten)]
    pub settings: SettingsArgs,

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

    /// Revert every device in the journal (of this journal directory:
    /// `blktune status` also shows real devices journalled in another one,
    /// which `blktune revert DEVICE` reverts from there).
    #[arg(long, conflicts_with = "devices")]
    pub all: bool,

    /// Exit 1 when there is nothing to revert (a device with no original
    /// journalled, an empty journal), as blktune did before 0.2. Without it
    /// that is exit 0 and `nothing to revert`, so a repeated revert (an
    /// ExecStop, an Ansible task) succeeds on a clean machine.
    #[arg(long)]
    pub strict: bool,
}

/// `dev: attr  before -> after` for each change.
fn outcome_lines(outcome: &Outcome) -> Vec<String> {
    if outcome.changes.is_empty() {
        return vec![format!("{}: already set, nothing changed", outcome.device)];
    }
    let w = outcome
        .changes
        .iter()
        .map(|c| c.attr.len())
        .max()
        .unwrap_or(0);
    outcome
        .changes
        .iter()
        .map(|c| {
            format!(
                "{}: {:<w$}  {} -> {}",
                outcome.device, c.attr, c.before, c.after
            )
        })
        .collect()
}

/// Print `dev: attr  before -> after` for each change.
pub fn print_outcome(out: &mut Out, outcome: &Outcome) -> anyhow::Result<()> {
    for l in outcome_lines(outcome) {
        out.line(&l)?;
    }
    // What the kernel kept differently from what was written, one line each.
    for s in &outcome.stored {
        out.line(&format!("{}: {}", outcome.device, s.line()))?;
    }
    Ok(())
}

/// Output of a revert: a line that cannot be written (a closed stdout or
/// stderr) is remembered, never raised, so every device is still put back;
/// the first such error is reported at the end.
struct Report<'a> {
    out: &'a mut Out,
    failed: Option<std::io::Error>,
}

impl<'a> Report<'a> {
    /// A report on `out`; `stdout_closed`: it was closed when blktune
    /// started (`>&-`), so nothing written there is seen.
    fn new(out: &'a mut Out, stdout_closed: bool) -> Self {
        Self {
            out,
            failed: stdout_closed.then(stdout_closed_error),
        }
    }

    /// A line on stdout.
    fn line(&mut self, text: &str) {
        if self.failed.is_none()
            && let Err(e) = self.out.line(text)
        {
            self.failed = Some(
                e.downcast::<std::io::Error>()
                    .unwrap_or_else(|e| std::io::Error::other(e.to_string())),
            );
        }
    }

    /// `blktune: s` on stderr, on one line (its values come from the
    /// journal, which is not trusted).
    fn warn(&mut self, text: &str) {
        warn(text);
    }

    /// After the last write: say that the output was cut short (a closed
    /// pipe is the reader's choice and stays quiet).
    fn finish(mut self) {
        if let Some(e) = self.failed.take()
            && e.kind() != std::io::ErrorKind::BrokenPipe
        {
            self.warn(&format!(
                "could not print the revert report ({e}); every write was still made"
            ));
        }
    }
}

/// The error of a report whose stdout was closed when blktune started.
fn stdout_closed_error() -> std::io::Error {
    std::io::Error::other("standard output was closed")
}

/// `blktune set --json`: the outcome with the queue settings in the shape
/// of `list --json` and the kernel time in milliseconds.
#[derive(Debug, serde::Serialize)]
struct SetJson<'a> {
    device: &'a str,
    changes: &'a [ValueChange],
    before: QueueJson<'a>,
    after: QueueJson<'a>,
    kernel_time_ms: f64,
    /// Values the kernel kept as something else than was written.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    stored: &'a [Stored],
}

impl<'a> From<&'a Outcome> for SetJson<'a> {
    fn from(outcome: &'a Outcome) -> Self {
        Self {
            device: &outcome.device,
            changes: &outcome.changes,
            before: QueueJson::from(&outcome.before),
            after: QueueJson::from(&outcome.after),
            kernel_time_ms: outcome.kernel_time.as_secs_f64() * 1000.0,
            stored: &outcome.stored,
        }
    }
}

/// Run `blktune set`. Once the change is made the exit code is 0, even
/// when the report cannot be printed: then stderr says what changed and
/// how to undo it (a failed print must not read as "nothing changed").
pub fn run_set(global: &Global, args: &SetArgs, out: &mut Out) -> anyhow::Result<i32> {
    let want = args.settings.wanted();
    if want.is_empty() {
        return Err(UsageError(format!(
            "'blktune set {}' needs at least one of --scheduler, --tunable, --nr-requests, --read-ahead-kb, \
             --wbt-lat-usec, --nomerges, --rq-affinity, --max-sectors-kb, --add-random",
            args.device
        ))
        .into());
    }
    let stdout_closed = stdout_was_closed();
    let root = global.root();
    if want.scheduler.is_some() || !want.tunables.is_empty() || want.nr_requests.is_some() {
        stack_without_scheduler(&root, &args.device)?;
    }
    let tuner = Tuner::new(root.clone(), Some(Journal::for_root(&root)));
    let o = tuner.apply(&args.device, &want)?;
    let undo = tuner
        .journal()
        .map(|j| j.revert_command(&root, &[o.device.as_str()]))
        .unwrap_or_default();
    let printed = if stdout_closed {
        Err(stdout_closed_error().into())
    } else {
        print_set_report(out, args.json, &o, &want, &undo)
    };
    if let Err(e) = printed {
        let quiet = o.changes.is_empty() && super::is_broken_pipe(&e);
        if !quiet {
            warn(&unprinted_set_report(&o, &super::one_line(&e), &undo));
        }
    }
    Ok(0)
}

/// The report of a `set`: JSON, or one line per change and the undo command.
fn print_set_report(
    out: &mut Out,
    json: bool,
    outcome: &Outcome,
    want: &Wanted,
    undo: &str,
) -> anyhow::Result<()> {
    if json {
        out.line(&serde_json::to_string_pretty(&SetJson::from(outcome))?)?;
    } else if outcome.changes.is_empty() {
        out.line(&format!(
            "{}: already {}; nothing changed",
            outcome.device,
            want.summary()
        ))?;
    } else {
        print_outcome(out, outcome)?;
        out.line(&format!(
            "took {} in the kernel; undo with: {undo}",
            format_duration(outcome.kernel_time)
        ))?;
    }
    Ok(())
}

/// A stack without a scheduler (LVM, crypt, md, an NVMe head) is refused
/// with the disks that schedule its I/O named, and the command that sets
/// them: each is changed, journalled and reverted on its own.
fn stack_without_scheduler(root: &blktune_core::os::SysRoot, name: &str) -> anyhow::Result<()> {
    // The tuner reads the device once: nothing more here for a device that
    // cannot be a stack, or has a scheduler (a `stat`, no read).
    if !blktune_core::stack::may_be_stack(name) {
        return Ok(());
    }
    let Ok(dev) = blktune_core::tuner::resolve(root, name) else {
        return Ok(()); // the tuner says why
    };
    if root.dev_attr_exists(&dev, "queue/scheduler") {
        return Ok(());
    }
    let d = blktune_core::device::BlockDevice::read(root, &dev);
    if d.queue.has_scheduler() || d.stack.is_none() {
        return Ok(());
    }
    let devs = blktune_core::device::discover(root).unwrap_or_default();
    let Some(carried) = blktune_core::topology::stacks::carried_text(&devs, dev.as_str()) else {
        return Ok(());
    };
    let disks = blktune_core::topology::stacks::scheduled_on(&devs, dev.as_str());
    Err(UsageError(format!(
        "{} has no I/O scheduler: {carried}; set those: blktune set {} ... (one disk at a time, each journalled)",
        blktune_core::topology::stacks::label(&d),
        disks.first().map_or("", String::as_str)
    ))
    .into())
}

/// What stderr says when the report of a `set` could not be printed: what
/// changed (or that nothing did) and the undo command, on one line.
fn unprinted_set_report(outcome: &Outcome, why: &str, undo: &str) -> String {
    if outcome.changes.is_empty() {
        return format!(
            "could not print the report ({why}); '{}' was already as asked, nothing changed",
            outcome.device
        );
    }
    let changes: Vec<String> = outcome
        .changes
        .iter()
        .map(|c| format!("{} {} -> {}", c.attr, c.before, c.after))
        .collect();
    format!(
        "could not print the report ({why}); '{}' WAS changed: {}; undo with: {undo}",
        outcome.device,
        changes.join(", ")
    )
}

/// What must be written to bring a device from `now` back to `original`
/// (the switch resets nr_requests and the tunables, so after one they are
/// needed unless they equal the new scheduler's defaults).
pub fn needed_to_restore(original: &Wanted, now: &QueueSettings, hz: &KernelHz) -> Wanted {
    let active = now.scheduler.as_ref().map(|s| s.active.as_str());
    let switch = original
        .scheduler
        .as_deref()
        .is_some_and(|s| Some(s) != active);
    let tunables = original
        .tunables
        .iter()
        .filter(|(k, v)| {
            if switch {
                // The switch sets this kernel's defaults (HZ-dependent for
                // the ones kept in jiffies: timeout_sync 125 at HZ=1000).
                !hz.is_default(k, v)
            } else {
                now.tunables.get(k.as_str()).map(|n| n.trim()) != Some(v.trim())
            }
        })
        .cloned()
        .collect();
    Wanted {
        scheduler: original.scheduler.clone().filter(|_| switch),
        tunables,
        nr_requests: original
            .nr_requests
            .filter(|n| switch || now.nr_requests != Some(*n)),
        read_ahead_kb: original
            .read_ahead_kb
            .filter(|n| now.read_ahead_kb != Some(*n)),
        // Written after the switch (which may turn write-back throttling
        // off or on): every one that differs from now.
        knobs: original
            .knobs
            .iter()
            .filter(|(k, v)| now.knobs.get(k.as_str()).map(|n| n.trim()) != Some(v.trim()))
            .cloned()
            .collect(),
    }
}

/// `blktune set DEV --scheduler S --tunable K=V --nr-requests N --read-ahead-kb N`.
pub fn set_command(device: &str, wanted: &Wanted) -> String {
    let mut cmd = format!("blktune set {device}");
    if let Some(v) = &wanted.scheduler {
        cmd.push_str(&format!(" --scheduler {v}"));
    }
    for (k, v) in &wanted.tunables {
        cmd.push_str(&format!(" --tunable {k}={}", v.trim()));
    }
    if let Some(n) = wanted.nr_requests {
        cmd.push_str(&format!(" --nr-requests {n}"));
    }
    if let Some(n) = wanted.read_ahead_kb {
        cmd.push_str(&format!(" --read-ahead-kb {n}"));
    }
    for (k, v) in &wanted.knobs {
        cmd.push_str(&format!(" --{} {}", k.replace('_', "-"), v.trim()));
    }
    cmd
}

/// What a revert did with one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Done {
    /// Put back as journalled (or its stale entry dropped with nothing of
    /// blktune's left in force).
    Reverted,
    /// No original journalled anywhere: nothing to revert.
    Nothing,
    /// Not put back (said on stderr).
    Failed,
}

/// Run `blktune revert`. Every device is reverted under its lock; output
/// errors never stop it (see [`Report`]). Exit 1 when anything was not put
/// back; nothing to revert is exit 0 (`--strict`: 1).
pub fn run_revert(global: &Global, args: &RevertArgs, out: &mut Out) -> anyhow::Result<i32> {
    let stdout_closed = stdout_was_closed();
    let root = global.root();
    let journal = Journal::for_root(&root);
    let mut report = Report::new(out, stdout_closed);
    let mut failed = 0;
    let names: Vec<String> = if args.all {
        let mut v = Vec::new();
        for e in journal
            .list()
            .map_err(|e| journal_error(journal.dir(), e))?
        {
            match e {
                Ok(e) => v.push(e.device),
                Err((_, err)) if err.kind() == std::io::ErrorKind::PermissionDenied => {
                    return Err(journal_error(journal.dir(), err));
                }
                Err((name, err)) => {
                    report.warn(&format!(
                        "journal entry of '{name}' is refused ({err}); left in place"
                    ));
                    failed += 1;
                }
            }
        }
        v
    } else {
        args.devices.clone()
    };
    let boot = tuner::boot_id(&root);
    // Check every name before reverting anything (no path tricks into the journal dir).
    if let Some(bad) = names
        .iter()
        .find(|n| !blktune_core::os::is_plausible_device_name(n))
    {
        return Err(UsageError(format!(
            "'{}' is not a device name (see 'blktune list')",
            bad.escape_debug()
        ))
        .into());
    }
    // A name that is neither a device nor in a journal is a typo: say so
    // (exit 2) before reverting anything.
    for name in &names {
        let here = journal
            .load(name)
            .map_err(|e| journal_error(journal.dir(), e))
            .with_context(|| format!("cannot read the journal entry of '{name}'"))?
            .is_some();
        let known = here
            || journal
                .home_of(name)
                .map_err(|e| journal_error(journal.lock_dir(), e))?
                .is_some();
        if !known && root.device(name).is_none() {
            return Err(UsageError(format!(
                "unknown device '{name}': no such entry under {}/block and nothing of it in the journal (see 'blktune list')",
                root.sysfs().display()
            ))
            .into());
        }
    }
    let mut nothing = 0;
    if args.all && names.is_empty() && failed == 0 {
        // A real device may be journalled in another directory (another
        // BLKTUNE_JOURNAL_DIR): status lists them all. Not listed here: what
        // other journal directories hold changes while this runs, so the
        // same command would print different lines.
        let elsewhere = if journal.registry().is_some() {
            "; 'blktune status' also shows changes journalled in other directories"
        } else {
            ""
        };
        nothing_to_revert(
            &mut report,
            args.strict,
            &format!(
                "nothing to revert: the journal ({}) is empty{elsewhere}",
                journal.dir().display()
            ),
        );
        nothing += 1;
    }
    for name in &names {
        match revert_one(
            &journal,
            &root,
            boot.as_deref(),
            name,
            args.strict,
            &mut report,
        ) {
            Done::Reverted => {}
            Done::Nothing => nothing += 1,
            Done::Failed => failed += 1,
        }
    }
    report.finish();
    Ok(if failed > 0 || (args.strict && nothing > 0) {
        1
    } else {
        0
    })
}

/// [`nothing_to_revert`] for one device without an entry in `journal`.
fn nothing_to_revert_here(report: &mut Report<'_>, strict: bool, name: &str, journal: &Journal) {
    nothing_to_revert(
        report,
        strict,
        &format!(
            "{name}: nothing to revert (no original in the journal {})",
            journal.dir().display()
        ),
    );
}

/// Say there is nothing to revert: a line of the report, or with
/// `--strict` an error on stderr (the exit code is 1 then).
fn nothing_to_revert(report: &mut Report<'_>, strict: bool, what: &str) {
    if strict {
        report.warn(what);
    } else {
        report.line(what);
    }
}

/// Revert one device under its lock: the journal is read, the original
/// applied and the entry settled by the one revert policy, with no other
/// change in between. A real device with no entry in `own` is reverted
/// from the journal directory its registration names.
fn revert_one(
    own: &Journal,
    root: &blktune_core::os::SysRoot,
    boot: Option<&str>,
    name: &str,
    strict: bool,
    report: &mut Report<'_>,
) -> Done {
    let journal = match own.load(name) {
        // An entry that cannot be read is told under the lock, below.
        Ok(Some(_)) | Err(_) => own.clone(),
        Ok(None) => match own.home_of(name) {
            Ok(Some(home)) => {
                report.line(&format!(
                    "{name}: its originals are journalled in {}",
                    home.dir().display()
                ));
                home
            }
            Ok(None) => {
                nothing_to_revert_here(report, strict, name, own);
                return Done::Nothing;
            }
            Err(e) => {
                report.warn(&format!(
                    "'{name}': {}",
                    super::one_line(&journal_error(own.lock_dir(), e))
                ));
                return Done::Failed;
            }
        },
    };
    let tuner = Tuner::new(root.clone(), Some(journal.clone()));
    let held = match tuner.lock(name) {
        Ok(h) => h,
        Err(e) => {
            report.warn(&e.to_string());
            return Done::Failed;
        }
    };
    let entry = match held.entry() {
        Ok(Some(e)) => e,
        Ok(None) => {
            // Reverted by another blktune since it was looked up.
            nothing_to_revert_here(report, strict, name, &journal);
            return Done::Nothing;
        }
        Err(e) => {
            report.warn(&format!("'{name}': {e}"));
            return Done::Failed;
        }
    };
    let current = root
        .device(name)
        .map(|d| blktune_core::device::BlockDevice::read(root, &d));
    let Some(why) = entry.stale_reason(current.as_ref(), boot) else {
        return match held.revert(&entry.original) {
            Ok(o) => {
                for l in outcome_lines(&o) {
                    report.line(&l);
                }
                // The policy dropped the entry unless the device still differs.
                match held.entry() {
                    Ok(None) => Done::Reverted,
                    Ok(Some(e)) => {
                        report.warn(&format!(
                            "'{name}': the kernel did not take back every original ({}); its journal entry is kept",
                            e.differences(&o.after).join(", ")
                        ));
                        Done::Failed
                    }
                    Err(e) => {
                        report.warn(&format!("'{name}' reverted, but {e}"));
                        Done::Failed
                    }
                }
            }
            Err(e) => {
                report.warn(&e.to_string());
                Done::Failed
            }
        };
    };
    // The entry cannot be applied safely, so it is dropped either way;
    // when what blktune set may still be in force, its values and the
    // command that restores them are printed first and the exit code says so.
    let lingering = match &current {
        Some(d) if entry.may_linger(current.as_ref(), boot) => {
            let hz = KernelHz::read(root, std::slice::from_ref(d));
            Some(needed_to_restore(&entry.original, &d.queue, &hz)).filter(|s| !s.is_empty())
        }
        _ => None,
    };
    if let Err(e) = held.drop_entry() {
        report.warn(&format!(
            "cannot drop the stale journal entry of '{name}': {e}"
        ));
        return Done::Failed;
    }
    match lingering {
        None => {
            report.line(&format!(
                "{name}: journal entry dropped, not applied: {why}"
            ));
            Done::Reverted
        }
        Some(restore) => {
            report.warn(&format!(
                "'{name}' is not the device blktune changed: {why}; nothing was \
                 written, its journal entry is dropped, and what blktune set may still be in force"
            ));
            report.warn(&format!(
                "'{name}' original values: {}",
                entry.original.summary()
            ));
            report.warn(&format!(
                "to restore them: sudo {}",
                set_command(name, &restore)
            ));
            Done::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blktune_core::device::SchedulerState;

    fn queue(active: &str, nr: u64, ra: u64, tunables: &[(&str, &str)]) -> QueueSettings {
        QueueSettings {
            scheduler: Some(SchedulerState {
                active: active.into(),
                available: ["none", "mq-deadline", "kyber", "bfq"]
                    .map(String::from)
                    .to_vec(),
            }),
            nr_requests: Some(nr),
            read_ahead_kb: Some(ra),
            tunables: tunables
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..QueueSettings::default()
        }
    }

    #[test]
    fn the_restore_command_names_exactly_what_differs() {
        let orig = Wanted::snapshot_of(&queue(
            "mq-deadline",
            100,
            512,
            &[("read_expire", "1000"), ("fifo_batch", "16")],
        ));
        // Same scheduler: only the values that differ.
        let now = queue(
            "mq-deadline",
            64,
            512,
            &[("read_expire", "500"), ("fifo_batch", "16")],
        );
        assert_eq!(
            set_command(
                "loop0",
                &needed_to_restore(&orig, &now, &KernelHz::known(250))
            ),
            "blktune set loop0 --tunable read_expire=1000 --nr-requests 100"
        );
        // Another scheduler: the switch, then what its defaults do not give.
        let now = queue("kyber", 100, 512, &[("read_lat_nsec", "2000000")]);
        assert_eq!(
            set_command(
                "loop0",
                &needed_to_restore(&orig, &now, &KernelHz::known(250))
            ),
            "blktune set loop0 --scheduler mq-deadline --tunable read_expire=1000 --nr-requests 100"
        );
        // Already as it was: nothing.
        let now = queue(
            "mq-deadline",
            100,
            512,
            &[("read_expire", "1000"), ("fifo_batch", "16")],
        );
        assert!(needed_to_restore(&orig, &now, &KernelHz::known(250)).is_empty());
    }
}
