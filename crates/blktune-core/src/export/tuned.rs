//! `--format tuned`: a tuned profile, for hosts (the RHEL family) where tuned
//! runs after udev and overrides a rule's scheduler and read-ahead.
//!
//! tuned's `disk` plugin sets `elevator` and `readahead` (KiB) on the devices
//! it selects, by kernel name (`devices=`) or by a regular expression over the
//! device's udev properties, one `KEY=value` per line (`devices_udev_regex=`);
//! it has no nr_requests or scheduler tunables, so those go through the
//! `sysfs` plugin, which takes sysfs paths. The profile includes the active
//! profile so everything else it sets stays as it was. The disk instances come
//! before the sysfs ones: a scheduler switch resets nr_requests and the
//! tunables, so they must be written after it (tuned applies instances of
//! equal priority in file order).

use super::matching::MatchSpec;
use super::rules::{Block, common_header, device_line, measured_lines};
use super::safe::comment_text;
use super::{MatchStrategy, RenderOptions};
use std::fmt::Write as _;

/// The profile tuned ships for servers; included when none is active.
pub const DEFAULT_INCLUDE: &str = "throughput-performance";

/// The name the profile is installed under (`/etc/tuned/blktune/tuned.conf`).
pub const PROFILE_NAME: &str = "blktune";

/// A value as a literal inside a Python regular expression.
fn regex_literal(v: &str) -> String {
    let mut out = String::new();
    for c in v.chars() {
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

/// The whole profile. `include` is the active profile (or [`DEFAULT_INCLUDE`]).
pub(super) fn render_profile(
    blocks: &[Block],
    opts: &RenderOptions,
    warnings: &[String],
) -> String {
    let include = opts
        .tuned_include
        .as_deref()
        .filter(|p| !p.is_empty() && *p != PROFILE_NAME)
        .unwrap_or(DEFAULT_INCLUDE);
    let mut out = String::new();
    common_header(&mut out, "tuned profile", opts);
    let _ = writeln!(
        out,
        "#\n\
         # Install:  sudo mkdir -p /etc/tuned/{PROFILE_NAME}\n\
         #           save this text as /etc/tuned/{PROFILE_NAME}/tuned.conf (mode 0644)\n\
         # Apply:    sudo tuned-adm profile {PROFILE_NAME}\n\
         # Undo:     sudo tuned-adm profile {}\n\
         #\n\
         # [disk_*] sets the scheduler and read-ahead (tuned's disk plugin); nr_requests\n\
         # and the scheduler's tunables go through [sysfs_*], after it, because a\n\
         # scheduler switch resets them. The sysfs plugin takes kernel names, which are\n\
         # not stable across boots: check them after hardware changes.",
        comment_text(include)
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
    let _ = writeln!(out, "include={}", comment_text(include));
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
            let _ = writeln!(out, "[disk_{id}]\ntype=disk\n{select}");
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
    fn regex_metacharacters_are_escaped() {
        assert_eq!(regex_literal("0x5000c500"), "0x5000c500");
        assert_eq!(regex_literal("a.b+c(1)"), "a\\.b\\+c\\(1\\)");
    }
}
