//! `--format tuned`: a tuned profile, for hosts (the RHEL family) where tuned
//! runs after udev and overrides a rule's scheduler and read-ahead.
//!
//! tuned's `disk` plugin sets `elevator` and `readahead` (KiB) on the devices
//! it selects, by kernel name (`devices=`) or by a regular expression over the
//! device's udev properties, one `KEY=value` per line (`devices_udev_regex=`);
//! it has no nr_requests or scheduler tunables, so those go through the
//! `sysfs` plugin, which takes sysfs paths.
//!
//! How tuned (2.20: `units/manager.py` `Manager.create`, `plugins/base.py`
//! `assign_free_devices`, `plugins/hotplug.py` `_add_device`) gives a device
//! to an instance: the instances of the merged profile are sorted by
//! `priority` (default 0, a stable sort, so file order within one priority,
//! an included profile's units first), and each instance in turn claims the
//! devices it matches that are still free; a hot-plugged device goes to the
//! first instance in that order that matches it. An included profile's
//! `[disk]` (no `devices=`: every disk) would therefore claim our disk before
//! our `[disk_X]`, which then gets none. So each `[disk_X]` has
//! `priority=-1`: it claims its devices (and is applied) first, and the
//! included profile's `[disk]` keeps every other disk.
//!
//! The profile includes the active profile, so everything else it sets stays
//! as it was; with no active profile it includes nothing (a profile such as
//! `throughput-performance` also changes the CPU governor and sysctls). The
//! sysfs instances keep the default priority: after the disk instances,
//! because a scheduler switch resets nr_requests and the tunables.

use super::matching::MatchSpec;
use super::rules::{Block, common_header, device_line, measured_lines};
use super::safe::comment_text;
use super::{MatchStrategy, RenderOptions};
use std::fmt::Write as _;

/// The priority of the disk instances: before tuned's default instance
/// priority (0) and the positive ones its shipped profiles use.
pub const DISK_PRIORITY: i32 = -1;

/// The name the profile is installed under (`/etc/tuned/blktune/tuned.conf`).
pub const PROFILE_NAME: &str = "blktune";

/// A value as a literal inside a Python regular expression.
fn regex_literal(value: &str) -> String {
    let mut out = String::new();
    for c in value.chars() {
        if "\\.^$|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// How the disk instance selects devices: `devices_udev_regex=` for an id
/// from the udev database, else `devices=` with kernel names or a family
/// glob. Returns the option line and, when the match is weaker than the
/// udev rule's, a note.
fn selector(spec: &MatchSpec, names: &[&str]) -> (String, Option<String>) {
    let key = spec
        .keys
        .first()
        .map(|k| k.key.as_str())
        .unwrap_or_default();
    let value = spec
        .keys
        .first()
        .map(|k| k.value.as_str())
        .unwrap_or_default();
    if let Some(prop) = key.strip_prefix("ENV{").and_then(|k| k.strip_suffix('}')) {
        return (
            format!("devices_udev_regex=^{prop}={}$", regex_literal(value)),
            None,
        );
    }
    match spec.strategy {
        MatchStrategy::Class => (
            format!("devices={}", kernel_glob(spec)),
            Some(
                "tuned matches a class by kernel name only (no rotational or zoned check): every disk of this family"
                    .into(),
            ),
        ),
        _ => (
            format!("devices={}", names.join(",")),
            Some(format!(
                "matched by kernel name: tuned cannot match {key} (it reads udev properties, not sysfs attributes)"
            ))
            .filter(|_| spec.strategy != MatchStrategy::Kernel),
        ),
    }
}

/// The `KERNEL` pattern of a class match (`nvme*`, `sd*`).
fn kernel_glob(spec: &MatchSpec) -> String {
    spec.keys
        .iter()
        .find(|k| k.key == "KERNEL")
        .map_or_else(|| "*".into(), |k| k.value.clone())
}

/// The sysfs paths of the instance's devices: `/sys/block/sda` per device,
/// `/sys/block/nvme*` for a class.
fn sysfs_dirs(b: &Block, names: &[&str]) -> Vec<String> {
    if b.spec.strategy == MatchStrategy::Class {
        vec![format!("/sys/block/{}", kernel_glob(&b.spec))]
    } else {
        names.iter().map(|n| format!("/sys/block/{n}")).collect()
    }
}

/// The profiles to include: the active one(s) (`active_profile` may name
/// several, space-separated; `include=` takes them comma-separated), never
/// this profile itself, and only names tuned's loader accepts
/// (`Loader.safe_name`: `[a-zA-Z0-9_.-]+`). `None` when no profile is active.
fn include_of(active: Option<&str>) -> Option<String> {
    let safe = |p: &str| {
        p.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    };
    let names: Vec<&str> = active
        .unwrap_or_default()
        .split([' ', ',', ';'])
        .filter(|p| !p.is_empty() && *p != PROFILE_NAME && safe(p))
        .collect();
    (!names.is_empty()).then(|| names.join(","))
}

/// The whole profile, including the active profile (`opts.tuned_include`) if any.
pub(super) fn render_profile(
    blocks: &[Block],
    opts: &RenderOptions,
    warnings: &[String],
) -> String {
    let include = include_of(opts.tuned_include.as_deref());
    let mut out = String::new();
    common_header(&mut out, "tuned profile", opts);
    let undo = match &include {
        Some(p) => format!(
            "sudo tuned-adm profile {}",
            comment_text(&p.replace(',', " "))
        ),
        None => "sudo tuned-adm off".into(),
    };
    let _ = writeln!(
        out,
        "#\n\
         # Install:  sudo mkdir -p /etc/tuned/{PROFILE_NAME}\n\
         #           save this text as /etc/tuned/{PROFILE_NAME}/tuned.conf (mode 0644)\n\
         # Apply:    sudo tuned-adm profile {PROFILE_NAME}\n\
         # Undo:     {undo}\n\
         #\n\
         # [disk_*] sets the scheduler and read-ahead (tuned's disk plugin); priority={DISK_PRIORITY}\n\
         # makes tuned give it its disks before an included profile's [disk], which\n\
         # would otherwise claim every disk first. nr_requests and the scheduler's\n\
         # tunables go through [sysfs_*], after it, because a scheduler switch resets\n\
         # them. tuned writes [sysfs_*] when the profile is applied, not when a disk is\n\
         # added later (its sysfs plugin has no hot-plug), and it takes kernel names,\n\
         # which are not stable across boots: keep a udev rule too (blktune export)."
    );
    if !warnings.is_empty() {
        out.push_str("#\n# Warnings:\n");
        for w in warnings {
            let _ = writeln!(out, "#   {}", comment_text(w));
        }
    }
    let names_of =
        |b: &Block| -> Vec<String> { b.items.iter().map(|i| i.device.name.clone()).collect() };
    let _ = writeln!(out, "\n[main]");
    let all: Vec<String> = blocks.iter().flat_map(names_of).collect();
    let _ = writeln!(
        out,
        "summary=blktune: I/O scheduler settings for {}",
        comment_text(&all.join(", "))
    );
    match &include {
        Some(p) => {
            let _ = writeln!(out, "include={}", comment_text(p));
        }
        None => out.push_str("# No profile was active: nothing included.\n"),
    }
    for (i, b) in blocks.iter().enumerate() {
        let names = names_of(b);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let id = names.first().copied().unwrap_or("disk");
        let id = if blocks.len() > 1 && names.len() > 1 {
            format!("{id}_{i}")
        } else {
            id.to_owned()
        };
        let elevator = b.assigns.iter().find(|a| a.attr == "queue/scheduler");
        let readahead = b.assigns.iter().find(|a| a.attr == "queue/read_ahead_kb");
        let (select, note) = selector(&b.spec, &names);
        out.push('\n');
        for item in &b.items {
            let _ = writeln!(out, "# {}", device_line(&item.device));
            measured_lines(&mut out, item, "#   ");
        }
        let _ = writeln!(out, "#   match: {}", comment_text(&b.spec.meaning));
        if let Some(n) = note {
            let _ = writeln!(out, "#   note:  {}", comment_text(&n));
        }
        if elevator.is_some() || readahead.is_some() {
            let _ = writeln!(
                out,
                "[disk_{id}]\ntype=disk\npriority={DISK_PRIORITY}\n{select}"
            );
            if let Some(e) = elevator {
                let _ = writeln!(out, "elevator={}", e.value);
            }
            if let Some(r) = readahead {
                let _ = writeln!(out, "readahead={}", r.value);
            }
        }
        let rest: Vec<_> = b
            .assigns
            .iter()
            .filter(|a| a.attr != "queue/scheduler" && a.attr != "queue/read_ahead_kb")
            .collect();
        if !rest.is_empty() {
            let _ = writeln!(out, "\n[sysfs_{id}]\ntype=sysfs");
            for dir in sysfs_dirs(b, &names) {
                for a in &rest {
                    let _ = writeln!(out, "{dir}/{}={}", a.attr, a.value);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_the_active_profiles_but_never_itself_or_a_default() {
        assert_eq!(include_of(None), None);
        assert_eq!(include_of(Some("")), None);
        assert_eq!(include_of(Some(PROFILE_NAME)), None);
        assert_eq!(
            include_of(Some("virtual-guest")),
            Some("virtual-guest".into())
        );
        // tuned's loader splits include= on , and ; only.
        assert_eq!(
            include_of(Some("virtual-guest blktune  balanced")),
            Some("virtual-guest,balanced".into())
        );
        assert_eq!(include_of(Some("a [disk] x/y")), Some("a".into()));
    }

    #[test]
    fn regex_metacharacters_are_escaped() {
        assert_eq!(regex_literal("0x5000c500"), "0x5000c500");
        assert_eq!(regex_literal("a.b+c(1)"), "a\\.b\\+c\\(1\\)");
    }
}
