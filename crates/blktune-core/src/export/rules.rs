//! The udev rules text: header, guards, match, assignments in the safe order.

use super::matching::MatchSpec;
use super::safe::{check_assign_value, comment_text, shown};
use super::{
    DEFAULT_RULES_PATH, ExportError, ExportItem, RenderOptions, sorts_after_persistent_storage,
};
use crate::device::BlockDevice;
use crate::error::TuneError;
use crate::os::is_plausible_tunable_name;
use crate::tuner::Wanted;
use std::fmt::Write as _;
use std::path::Path;

/// One attribute write: `ATTR{queue/nr_requests}="64"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Assign {
    /// Relative to the device directory: `queue/scheduler`, `queue/iosched/read_expire`.
    pub attr: String,
    pub value: String,
}

/// One rule: a match and what it sets, for one or more devices of this host.
#[derive(Debug, Clone)]
pub(super) struct Block {
    pub spec: MatchSpec,
    pub assigns: Vec<Assign>,
    pub items: Vec<ExportItem>,
}

impl Block {
    /// Does this rule write anything that needs a scheduler (read-ahead
    /// and the queue settings next to the scheduler do not)?
    pub fn needs_scheduler(&self) -> bool {
        self.assigns.iter().any(|a| {
            a.attr != "queue/read_ahead_kb"
                && crate::os::QueueAttr::knob(a.attr.strip_prefix("queue/").unwrap_or("")).is_none()
        })
    }

    /// The attribute the `TEST` guard checks: `queue/scheduler`, or for a
    /// device without one (zram, md, bio-based dm) `queue/read_ahead_kb`;
    /// `TEST=="queue/scheduler"` would be false there and the rule would do nothing.
    pub fn guard_attr(&self) -> &'static str {
        if self.needs_scheduler() {
            "queue/scheduler"
        } else {
            "queue/read_ahead_kb"
        }
    }

    /// `scheduler=kyber read_lat_nsec=1000000 nr_requests=64`.
    pub fn summary(&self) -> String {
        self.assigns
            .iter()
            .map(|a| {
                let short = a.attr.rsplit('/').next().unwrap_or(a.attr.as_str());
                format!("{short}={}", a.value)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn unsafe_value(d: &BlockDevice, what: &str, v: &str, why: &str) -> ExportError {
    ExportError::UnsafeValue {
        dev: d.name.clone(),
        what: what.into(),
        value: shown(v),
        why: why.into(),
    }
}

/// The writes of `s`, in the only safe order: scheduler, its tunables,
/// nr_requests, read_ahead_kb (a scheduler switch resets the middle two),
/// then the queue settings next to the scheduler (after the switch, which
/// may turn write-back throttling off or on).
pub(super) fn assignments(d: &BlockDevice, s: &Wanted) -> Result<Vec<Assign>, ExportError> {
    if s.is_empty() {
        return Err(ExportError::Nothing {
            dev: d.name.clone(),
        });
    }
    let needs_queue = s.scheduler.is_some() || !s.tunables.is_empty() || s.nr_requests.is_some();
    if needs_queue && !d.queue.has_scheduler() {
        return Err(TuneError::NoScheduler {
            dev: d.name.clone(),
        }
        .into());
    }
    let mut out = Vec::new();
    if let Some(name) = &s.scheduler {
        if let Some(why) = check_assign_value(name) {
            return Err(unsafe_value(d, "scheduler", name, why));
        }
        if let Some(st) = &d.queue.scheduler
            && !st.available.contains(name)
        {
            return Err(TuneError::UnknownScheduler {
                dev: d.name.clone(),
                name: name.chars().take(32).collect(),
                available: st.available.clone(),
            }
            .into());
        }
        out.push(Assign {
            attr: "queue/scheduler".into(),
            value: name.clone(),
        });
    }
    for (name, value) in &s.tunables {
        if !is_plausible_tunable_name(name) {
            return Err(unsafe_value(d, "tunable name", name, "not a tunable name"));
        }
        if let Some(why) = check_assign_value(value) {
            return Err(unsafe_value(d, name, value, why));
        }
        // The one value check of the catalogue: a rule must not write what
        // the kernel would clamp or wrap.
        let value = crate::sched::check_tunable(name, value).map_err(|e| TuneError::BadValue {
            dev: d.name.clone(),
            what: e.what,
            value: e.value,
            why: e.why,
        })?;
        out.push(Assign {
            attr: format!("queue/iosched/{name}"),
            value,
        });
    }
    if let Some(n) = s.nr_requests {
        out.push(Assign {
            attr: "queue/nr_requests".into(),
            value: n.to_string(),
        });
    }
    if let Some(n) = s.read_ahead_kb {
        out.push(Assign {
            attr: "queue/read_ahead_kb".into(),
            value: n.to_string(),
        });
    }
    let max_hw = d
        .queue
        .knobs
        .get("max_hw_sectors_kb")
        .and_then(|v| v.parse().ok());
    for (name, value) in &s.knobs {
        let v = crate::sched::check_knob(name, value, max_hw, crate::sched::page_kb()).map_err(
            |e| TuneError::BadValue {
                dev: d.name.clone(),
                what: e.what,
                value: e.value,
                why: e.why,
            },
        )?;
        out.push(Assign {
            attr: format!("queue/{name}"),
            value: v,
        });
    }
    Ok(out)
}

/// `'it''s'`-style quoting for a path shown in a shell command.
pub(super) fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Where the file ends up, and the install line of the header.
fn install_lines(opts: &RenderOptions, uses_env: bool) -> (String, String) {
    match &opts.output {
        Some(p) if in_rules_dir(p) => (p.display().to_string(), "in place".into()),
        Some(p) => {
            let name = p
                .file_name()
                .and_then(|n| n.to_str())
                .filter(|n| n.ends_with(".rules"))
                .filter(|_| !uses_env || sorts_after_persistent_storage(p))
                .unwrap_or("61-blktune.rules");
            let target = format!("/etc/udev/rules.d/{name}");
            let line = format!(
                "sudo install -m 0644 {} {}",
                sh_quote(&p.display().to_string()),
                sh_quote(&target)
            );
            (target, line)
        }
        None => (
            DEFAULT_RULES_PATH.into(),
            format!("save this text as {DEFAULT_RULES_PATH} (mode 0644)"),
        ),
    }
}

/// Is this a udev rules directory (`/etc/udev/rules.d`, `/run/udev/rules.d`, ...)?
fn in_rules_dir(p: &Path) -> bool {
    p.parent()
        .and_then(|d| d.file_name())
        .is_some_and(|n| n == "rules.d")
}

/// A device line for comments, vendor and model apart as lsblk shows
/// them: `sda: ssd, 8:0, 465.8G, vendor ATA, model Samsung SSD 860`, and
/// for a stack its type, name and uuid: `dm-0: lvm vg0-root, 253:0, 20G,
/// uuid LVM-...`.
pub(super) fn device_line(d: &BlockDevice) -> String {
    let mut line = match &d.stack {
        Some(s) => format!("{}: {}", d.name, s.type_name),
        None => format!("{}: {}", d.name, d.kind),
    };
    if let Some(n) = d.stack_name() {
        line.push_str(&format!(" {n}"));
    }
    line.push_str(&format!(", {}:{}, {}", d.major, d.minor, d.size_label()));
    for (what, v) in [
        ("vendor", &d.vendor),
        ("model", &d.model),
        ("uuid", &d.stack.as_ref().and_then(|s| s.uuid.clone())),
    ] {
        if let Some(v) = v {
            line.push_str(&format!(", {what} {v}"));
        }
    }
    comment_text(&line)
}

/// `measured` text as comment lines with a prefix.
pub(super) fn measured_lines(out: &mut String, item: &ExportItem, prefix: &str) {
    if let Some(m) = &item.measured {
        for l in m.lines().filter(|l| !l.trim().is_empty()) {
            let _ = writeln!(out, "{prefix}measured: {}", comment_text(l.trim_end()));
        }
    }
}

/// The header lines shared by the rules file and the script, each starting with `#`.
pub(super) fn common_header(out: &mut String, what: &str, opts: &RenderOptions) {
    let when = opts
        .generated
        .as_deref()
        .map(|g| format!(" at {}", comment_text(g)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "# {what} written by blktune {} for host \"{}\"{when}.",
        comment_text(&opts.version),
        comment_text(&opts.host)
    );
}

/// The whole rules file.
pub(super) fn render_file(
    blocks: &[Block],
    opts: &RenderOptions,
    warnings: &[String],
    trigger: &[String],
) -> String {
    let uses_env = blocks.iter().any(|b| b.spec.uses_udev_env());
    let (target, install) = install_lines(opts, uses_env);
    let mut out = String::new();
    common_header(&mut out, "udev rules", opts);
    out.push_str("#\n");
    let _ = writeln!(out, "# Install:  {}", comment_text(&install));
    out.push_str("# Apply:    sudo udevadm control --reload\n");
    // Only the devices concerned: a trigger of every block device re-runs
    // every rule on every disk of the host.
    let _ = writeln!(
        out,
        "#           {}  (on this host)",
        comment_text(&super::trigger_command(trigger))
    );
    let _ = writeln!(
        out,
        "# Check:    blktune export --check {}",
        comment_text(&sh_quote(&target))
    );
    out.push_str(
        "#\n\
         # Each rule touches only whole disks (ENV{DEVTYPE}==\"disk\", never a partition)\n\
         # that have the attribute it needs (TEST), on add (boot, hot-plug) and on change\n\
         # (udevadm trigger). Writes run left to right: scheduler, its tunables,\n\
         # nr_requests, read_ahead_kb; a scheduler switch resets nr_requests and the\n\
         # tunables, so they must come after it.\n",
    );
    if uses_env {
        out.push_str(
            "# ENV{ID_*} is set by 60-persistent-storage.rules; udev reads rules files in\n\
             # the order of their names, so this file's name must sort after that one.\n",
        );
    }
    if !warnings.is_empty() {
        out.push_str("#\n# Warnings:\n");
        for w in warnings {
            let _ = writeln!(out, "#   {}", comment_text(w));
        }
    }
    for b in blocks {
        out.push('\n');
        for item in &b.items {
            let _ = writeln!(out, "# {}", device_line(&item.device));
            measured_lines(&mut out, item, "#   ");
        }
        let _ = writeln!(out, "#   match: {}", comment_text(&b.spec.meaning));
        let _ = writeln!(out, "#   sets:  {}", b.summary());
        for note in rounding_notes(&b.assigns) {
            let _ = writeln!(out, "#   note:  {note}");
        }
        let _ = writeln!(
            out,
            "ACTION==\"add|change\", SUBSYSTEM==\"block\", ENV{{DEVTYPE}}==\"disk\", TEST==\"{}\", \\",
            b.guard_attr()
        );
        let _ = write!(out, "  {}", b.spec.render_keys());
        for a in &b.assigns {
            let _ = write!(out, ", \\\n  ATTR{{{}}}=\"{}\"", a.attr, a.value);
        }
        out.push('\n');
    }
    out
}

/// The rule keeps what the user asked for; a tunable the kernel keeps in
/// jiffies may read back rounded up to a whole tick, which depends on the
/// kernel's HZ: say so (`read_expire is kept in jiffies: 250 reads back as
/// 252 at HZ=250, 260 at HZ=100`).
fn rounding_notes(assigns: &[Assign]) -> Vec<String> {
    assigns
        .iter()
        .filter_map(|a| {
            let name = a.attr.strip_prefix("queue/iosched/")?;
            let ms: u64 = a.value.parse().ok()?;
            if !crate::sched::is_jiffies(name) {
                return None;
            }
            let at: Vec<String> = [250, 100]
                .into_iter()
                .map(|hz| (hz, crate::sched::jiffies_rounded(ms, hz)))
                .filter(|(_, r)| *r != ms)
                .map(|(hz, r)| format!("{r} at HZ={hz}"))
                .collect();
            (!at.is_empty()).then(|| {
                format!(
                    "{name} is kept in jiffies: {ms} reads back as {}",
                    at.join(", ")
                )
            })
        })
        .collect()
}
