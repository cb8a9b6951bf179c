//! `blktune export --check` without a FILE: the whole udev search path, as
//! udevd reads it (udev(7), "RULES FILES"): every `*.rules` file of
//! `/etc/udev/rules.d`, `/run/udev/rules.d`, `/usr/lib/udev/rules.d` and
//! `/lib/udev/rules.d`, one file per name (a file in /etc overrides the same
//! name in /run and /usr/lib; one linked to /dev/null masks it), all of them
//! in the lexical order of their names whatever their directory. For each
//! device this tells which later file undoes blktune's settings: one that
//! writes the same attribute, or one that writes the scheduler (a switch
//! resets nr_requests and every tunable, kernel `block/elevator.c`). It also
//! warns when tuned is active with a disk plugin, which runs after udev and
//! sets the scheduler and read-ahead again.

use super::{ACTIONS, Status, check};
use crate::device::BlockDevice;
use crate::export::UdevDb;
use crate::os::SysRoot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The rules directories in udev's order of precedence.
pub const RULES_DIRS: [&str; 4] = [
    "/etc/udev/rules.d",
    "/run/udev/rules.d",
    "/usr/lib/udev/rules.d",
    "/lib/udev/rules.d",
];

/// How a generated file says it is blktune's (first line of its header).
const BLKTUNE_MARK: &str = "written by blktune";

/// One rules file in evaluation order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RulesFile {
    pub path: String,
    /// Written by blktune (its header says so)?
    pub blktune: bool,
}

/// A write that took effect or was undone, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    pub attr: String,
    pub value: String,
    pub file: String,
    pub line: usize,
}

/// The search-path outcome for one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceOutcome {
    pub device: String,
    /// The values after every file ran, with the file that set each (action change).
    pub result: Vec<Origin>,
    /// blktune's writes that a later file overrides or resets, and why.
    pub undone: Vec<String>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchReport {
    /// The directories read (after the root), in precedence order.
    pub dirs: Vec<String>,
    /// Every rules file in the order udev runs them.
    pub files: Vec<RulesFile>,
    /// Files that could not be read.
    pub unreadable: Vec<String>,
    pub devices: Vec<DeviceOutcome>,
    /// Problems inside single files (lines udev ignores, order problems).
    pub file_problems: Vec<String>,
    /// tuned: active with a disk plugin (or not readable), else `None`.
    pub tuned: Option<String>,
}

impl SearchReport {
    /// Problems: blktune writes undone, problems inside files, tuned's disk plugin.
    pub fn problem_count(&self) -> usize {
        self.devices.iter().map(|d| d.undone.len()).sum::<usize>()
            + self.file_problems.len()
            + usize::from(self.tuned.is_some())
    }
}

/// The rules files under `root` (normally `/`), one per name, sorted by
/// name; a directory reached twice (`/lib` is a link to `/usr/lib` on
/// merged-/usr systems) is read once.
pub fn rules_files(root: &Path) -> (Vec<String>, Vec<PathBuf>) {
    let mut seen_dirs: Vec<PathBuf> = Vec::new();
    let mut dirs = Vec::new();
    let mut by_name: BTreeMap<String, PathBuf> = BTreeMap::new();
    for d in RULES_DIRS {
        let dir = root.join(d.trim_start_matches('/'));
        let Ok(canon) = dir.canonicalize() else {
            continue;
        };
        if seen_dirs.contains(&canon) {
            continue;
        }
        seen_dirs.push(canon);
        dirs.push(dir.display().to_string());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            if name.ends_with(".rules") && !by_name.contains_key(&name) {
                by_name.insert(name, e.path());
            }
        }
    }
    // A file linked to /dev/null (or empty) masks the name: nothing runs.
    let files = by_name
        .into_values()
        .filter(|p| std::fs::read_link(p).map_or(true, |t| t != Path::new("/dev/null")))
        .collect();
    (dirs, files)
}

/// Evaluate the search path under `config_root` for `devices`.
pub fn check_search_path(
    config_root: &Path,
    root: &SysRoot,
    db: &UdevDb,
    devices: &[BlockDevice],
) -> SearchReport {
    let (dirs, paths) = rules_files(config_root);
    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    let mut file_problems = Vec::new();
    // Per device: the sure writes in order, (file index, line, attr, value).
    let mut writes: BTreeMap<String, Vec<(usize, usize, String, String)>> = BTreeMap::new();
    for path in &paths {
        let shown = path.display().to_string();
        // Not blocking, and no more than a rules file can be: a FIFO or a
        // huge file under --config-root is unreadable, not a hang.
        let Ok(text) = crate::text::read_capped(path, super::MAX_RULES_FILE) else {
            unreadable.push(shown);
            continue;
        };
        let blktune = text.lines().take(3).any(|l| l.contains(BLKTUNE_MARK));
        let idx = files.len();
        files.push(RulesFile {
            path: shown.clone(),
            blktune,
        });
        let r = check(&text, &shown, root, db, devices);
        for i in &r.ignored {
            file_problems.push(format!(
                "{shown} line {}: udev ignores it: {}",
                i.line, i.why
            ));
        }
        // A line of blktune's own file that sets nothing here is a problem;
        // a distribution's rule for hardware this host lacks is not.
        if blktune {
            for i in &r.idle {
                file_problems.push(format!("{shown} line {}: {}", i.line, i.why));
            }
        }
        for d in &r.devices {
            let Some(change) = d.actions.iter().find(|a| a.action == ACTIONS[1]) else {
                continue;
            };
            if blktune {
                for p in &change.problems {
                    file_problems.push(format!("{shown}: {}: {p}", d.device));
                }
            }
            let w = writes.entry(d.device.clone()).or_default();
            for l in change.lines.iter().filter(|l| l.status == Status::Match) {
                for s in &l.sets {
                    w.push((idx, l.line, s.attr.clone(), s.value.clone()));
                }
            }
        }
    }
    file_problems.sort();
    file_problems.dedup();
    let devices = writes
        .into_iter()
        .map(|(device, w)| outcome(device, &w, &files))
        .collect();
    SearchReport {
        dirs,
        files,
        unreadable,
        devices,
        file_problems,
        tuned: None,
    }
}

/// Replay one device's writes across files: last write wins, a scheduler
/// write resets nr_requests and the tunables; blktune's values that a later
/// file changes are reported.
fn outcome(
    device: String,
    writes: &[(usize, usize, String, String)],
    files: &[RulesFile],
) -> DeviceOutcome {
    let resets = |a: &str| a == "queue/nr_requests" || a.starts_with("queue/iosched/");
    let name = |i: usize| files[i].path.as_str();
    let mut state: Vec<(usize, Origin)> = Vec::new();
    let mut undone = Vec::new();
    for (fi, line, attr, value) in writes {
        let later = |o: &(usize, Origin)| files[o.0].blktune && o.0 != *fi;
        if attr == "queue/scheduler" {
            let lost: Vec<String> = state
                .iter()
                .filter(|o| resets(&o.1.attr) && later(o))
                .map(|o| format!("{}={}", o.1.attr.trim_start_matches("queue/"), o.1.value))
                .collect();
            if !lost.is_empty() {
                undone.push(format!(
                    "{} line {line} writes the scheduler ({value}) after blktune's rule, which resets {}",
                    name(*fi),
                    lost.join(" ")
                ));
            }
            state.retain(|o| !resets(&o.1.attr));
        }
        if let Some(prev) = state.iter().find(|o| o.1.attr == *attr)
            && later(prev)
            && prev.1.value != *value
        {
            undone.push(format!(
                "{} line {line} sets {attr}={value} after blktune's {} set {}",
                name(*fi),
                prev.1.file,
                prev.1.value
            ));
        }
        state.retain(|o| o.1.attr != *attr);
        state.push((
            *fi,
            Origin {
                attr: attr.clone(),
                value: value.clone(),
                file: name(*fi).to_owned(),
                line: *line,
            },
        ));
    }
    DeviceOutcome {
        device,
        result: state.into_iter().map(|o| o.1).collect(),
        undone,
    }
}

/// The active tuned profile(s), from `<tuned_dir>/active_profile` (several
/// names separated by blanks are merged by tuned), one blank between them;
/// `None` when tuned has none.
pub fn active_tuned_profile(tuned_dir: &Path) -> Option<String> {
    crate::text::read_capped(&tuned_dir.join("active_profile"), super::MAX_TUNED_FILE)
        .ok()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
}

/// tuned's warning: active (`<tuned_dir>/active_profile`) with a profile
/// that has a disk plugin, found among `profile_dirs` (following `include=`).
pub fn tuned_warning(tuned_dir: &Path, profile_dirs: &[PathBuf]) -> Option<String> {
    let active = active_tuned_profile(tuned_dir)?;
    let mut todo: Vec<String> = active.split(' ').map(str::to_owned).collect();
    let mut seen = Vec::new();
    let mut missing = Vec::new();
    while let Some(p) = todo.pop() {
        if seen.contains(&p) || seen.len() > 32 {
            continue;
        }
        seen.push(p.clone());
        let conf = profile_dirs
            .iter()
            .flat_map(|d| {
                [
                    d.join(&p).join("tuned.conf"),
                    d.join("profiles").join(&p).join("tuned.conf"),
                ]
            })
            .find_map(|f| crate::text::read_capped(&f, super::MAX_TUNED_FILE).ok());
        let Some(conf) = conf else {
            missing.push(p);
            continue;
        };
        let mut section = String::new();
        for l in conf.lines().map(str::trim) {
            if let Some(s) = l.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = s.to_owned();
                if section == "disk" {
                    return Some(disk_warning(&active, &p));
                }
            } else if l.replace(' ', "") == "type=disk" {
                return Some(disk_warning(&active, &p));
            } else if section == "main"
                && let Some(inc) = l.strip_prefix("include").map(|r| r.trim_start())
                && let Some(inc) = inc.strip_prefix('=')
            {
                todo.extend(
                    inc.split([',', ';', ' '])
                        .filter(|s| !s.is_empty())
                        .map(|s| s.trim().to_owned()),
                );
            }
        }
    }
    (!missing.is_empty()).then(|| {
        format!(
            "tuned is active (profile '{}') and its profile {} could not be read: if it has a [disk] plugin, tuned sets the scheduler and read-ahead after udev",
            active.trim(),
            missing.join(", ")
        )
    })
}

fn disk_warning(active: &str, profile: &str) -> String {
    format!(
        "tuned is active (profile '{}'; '{profile}' has a disk plugin): tuned runs after udev and sets the scheduler and read-ahead again; use 'blktune export --format tuned' instead of (or next to) the rule",
        active.trim()
    )
}

/// The report as text.
pub fn render_search_text(search_report: &SearchReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "udev search path: {}", search_report.dirs.join(", "));
    let ours: Vec<&str> = search_report
        .files
        .iter()
        .filter(|f| f.blktune)
        .map(|f| f.path.as_str())
        .collect();
    let _ = writeln!(
        out,
        "{} rules files; written by blktune: {}",
        search_report.files.len(),
        if ours.is_empty() {
            "none".to_string()
        } else {
            ours.join(", ")
        }
    );
    for f in &search_report.unreadable {
        let _ = writeln!(out, "cannot read {f}");
    }
    for d in search_report
        .devices
        .iter()
        .filter(|d| !d.result.is_empty() || !d.undone.is_empty())
    {
        let _ = writeln!(out, "\n{}", d.device);
        for o in &d.result {
            let _ = writeln!(
                out,
                "  {}={}  ({} line {})",
                o.attr.trim_start_matches("queue/"),
                o.value,
                o.file,
                o.line
            );
        }
        for u in &d.undone {
            let _ = writeln!(out, "  problem: {u}");
        }
    }
    for p in &search_report.file_problems {
        let _ = writeln!(out, "\nproblem: {p}");
    }
    if let Some(t) = &search_report.tuned {
        let _ = writeln!(out, "\nwarning: {t}");
    }
    match search_report.problem_count() {
        0 => out.push_str("\nno problems found\n"),
        n => {
            let _ = writeln!(
                out,
                "\n{n} problem{} found (exit code {})",
                if n == 1 { "" } else { "s" },
                super::EXIT_PROBLEMS
            );
        }
    }
    out
}
