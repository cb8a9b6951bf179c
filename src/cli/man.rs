//! `blktune man`: the manual page, generated from the same clap definition as
//! `--help` (clap_mangen), so the two never disagree, with the sections a
//! packager expects that clap has no place for: EXIT STATUS, ENVIRONMENT,
//! FILES, EXAMPLES (from each command's `Examples:` help, as indented
//! command lines, not clap's "EXTRA") and SEE ALSO.

use super::{Args, Out, UsageError};
use anyhow::Context;
use clap::CommandFactory;
use clap_mangen::roff::{Roff, bold, roman};
use std::path::PathBuf;

/// The exit codes (README "Bad input and exit codes"): (code, meaning), and
/// whether only `export --check` gives it.
const EXIT_CODES: [(&str, &str, bool); 4] = [
    (
        "0",
        "Success (also when the reader of the output went away, as with blktune list --json | head -1).",
        false,
    ),
    (
        "1",
        "A failure: not root where root is needed, a write the kernel refused (rolled back), a device that vanished mid-change, unreadable or malformed sysfs or procfs files, a journal that cannot be read or written, nothing to revert, an output file that exists (without --force).",
        false,
    ),
    (
        "2",
        "Bad input: an unknown device, a partition where a disk is needed, a device without a scheduler, an unknown scheduler or tunable, a value out of range, an output path in a missing directory, bad arguments. Nothing was changed.",
        false,
    ),
    (
        "3",
        "blktune export --check found problems in the rules file (a line udev ignores, nr_requests or a tunable written before a scheduler switch, a rule that also writes to partitions, a later file undoing blktune's rule); the report says which.",
        true,
    ),
];

/// The environment variables blktune reads: (name, meaning).
const ENVIRONMENT: [(&str, &str); 3] = [
    (
        "BLKTUNE_JOURNAL_DIR",
        "The journal directory (default /run/blktune for the real /sys, a directory inside the tree for another --sysfs-root): where the original settings are kept before the first change, for blktune revert.",
    ),
    (
        "NO_COLOR",
        "When set (to anything), the full-screen tuner draws without colour (https://no-color.org).",
    ),
    (
        "SOURCE_DATE_EPOCH",
        "Seconds since the epoch to stamp into exported files instead of now (reproducible builds).",
    ),
];

/// The files blktune reads or writes: (path, meaning).
const FILES: [(&str, &str); 5] = [
    (
        "/sys/block/*/queue/",
        "The queue settings blktune shows and changes: scheduler, nr_requests, read_ahead_kb, iosched/*.",
    ),
    (
        "/proc/diskstats",
        "The I/O counters of every disk (what iostat reads).",
    ),
    (
        "/run/blktune/",
        "The journal: one file per changed device with its original settings (tmpfs: it ends with the boot, as the settings do).",
    ),
    (
        "/etc/udev/rules.d/61-blktune.rules",
        "Where blktune export suggests the rules go (written only with -o; replaced only with --force).",
    ),
    (
        "/etc/tuned/active_profile",
        "Read by export --format tuned (the profile to include) and export --check (is tuned overriding the rules).",
    ),
];

/// The pages SEE ALSO names besides blktune's own.
const SEE_ALSO: [(&str, &str); 6] = [
    ("iostat", "1"),
    ("lsblk", "8"),
    ("udevadm", "8"),
    ("udev", "7"),
    ("tuned-adm", "8"),
    ("fio", "1"),
];

/// Arguments of `blktune man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Print the page of this subcommand (blktune-SUBCOMMAND(1)) instead of blktune(1).
    #[arg(value_name = "SUBCOMMAND")]
    pub subcommand: Option<String>,

    /// Write blktune.1 and one blktune-SUBCOMMAND.1 per subcommand into DIR
    /// (an existing directory) instead of printing one page.
    #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
    pub dir: Option<PathBuf>,
}

/// The clap command with every subcommand's name and version filled in.
fn command() -> clap::Command {
    let mut cmd = Args::command();
    cmd.build();
    cmd
}

/// A command's `after_help` split into its example lines (command,
/// description) and the paragraphs after them: `Examples:` then lines
/// indented by two spaces, the description after a run of 2+ spaces.
pub fn examples_and_notes(after_help: &str) -> (Vec<(String, String)>, Vec<String>) {
    let mut examples = Vec::new();
    let mut notes = Vec::new();
    let mut in_examples = false;
    for para in after_help.split("\n\n") {
        for line in para.lines() {
            if line.trim_end() == "Examples:" {
                in_examples = true;
            } else if in_examples && line.starts_with("  ") {
                let line = line.trim();
                match line.find("   ").or_else(|| line.find("  ")) {
                    Some(at) => {
                        examples.push((line[..at].trim().to_owned(), line[at..].trim().to_owned()))
                    }
                    None => examples.push((line.to_owned(), String::new())),
                }
            } else {
                in_examples = false;
                match notes.last_mut() {
                    Some(last) if !para.starts_with(line) => {
                        let last: &mut String = last;
                        last.push(' ');
                        last.push_str(line.trim());
                    }
                    _ => notes.push(line.trim().to_owned()),
                }
            }
        }
        in_examples = false;
    }
    (examples, notes)
}

/// A labelled paragraph (`.TP`): the label in bold, then the text.
fn tagged(roff: &mut Roff, label: &str, text: &str) {
    roff.control("TP", []);
    roff.text([bold(label)]);
    roff.text([roman(text)]);
}

/// The sections after clap's OPTIONS and SUBCOMMANDS, for the page of `cmd`
/// (`sub`: the subcommand's name, `None` for blktune(1)).
fn packager_sections(cmd: &clap::Command, sub: Option<&str>) -> Roff {
    let mut roff = Roff::new();
    let after = cmd
        .get_after_long_help()
        .or(cmd.get_after_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let (examples, notes) = examples_and_notes(&after);
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning, check_only) in EXIT_CODES {
        if !check_only || matches!(sub, None | Some("export")) {
            tagged(&mut roff, code, meaning);
        }
    }
    roff.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in ENVIRONMENT {
        tagged(&mut roff, name, meaning);
    }
    roff.control("SH", ["FILES"]);
    for (path, meaning) in FILES {
        tagged(&mut roff, path, meaning);
    }
    if !notes.is_empty() {
        roff.control("SH", ["NOTES"]);
        for n in &notes {
            roff.control("PP", []);
            roff.text([roman(n.as_str())]);
        }
    }
    if !examples.is_empty() {
        roff.control("SH", ["EXAMPLES"]);
        for (command, what) in &examples {
            if what.is_empty() {
                roff.control("PP", []);
            } else {
                roff.control("PP", []);
                roff.text([roman(format!("{}:", capitalized(what)))]);
            }
            roff.control("RS", ["4"]);
            roff.control("nf", []);
            roff.text([bold(command.as_str())]);
            roff.control("fi", []);
            roff.control("RE", []);
        }
    }
    roff.control("SH", ["SEE ALSO"]);
    let mut refs: Vec<(String, String)> = Vec::new();
    if sub.is_some() {
        refs.push(("blktune".into(), "1".into()));
    }
    refs.extend(SEE_ALSO.iter().map(|(p, s)| (p.to_string(), s.to_string())));
    let mut inlines = Vec::new();
    for (i, (page, section)) in refs.iter().enumerate() {
        if i > 0 {
            inlines.push(roman(", "));
        }
        inlines.push(bold(page.as_str()));
        inlines.push(roman(format!("({section})")));
    }
    roff.text(inlines);
    roff
}

/// The first letter in upper case (an example's description as a sentence).
fn capitalized(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The roff text of one page: clap's sections without its "EXTRA" (the
/// examples and notes get sections of their own), then the packager's.
fn render(cmd: clap::Command, sub: Option<&str>) -> anyhow::Result<String> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut buf)?;
    }
    let mut text = String::from_utf8(buf)?;
    text.push_str(&packager_sections(&cmd, sub).to_roff());
    let mut buf = Vec::new();
    man.render_version_section(&mut buf)?;
    text.push_str(&String::from_utf8(buf)?);
    Ok(text)
}

/// Every page: (file name, roff text), blktune.1 first.
pub fn pages() -> anyhow::Result<Vec<(String, String)>> {
    let cmd = command();
    let mut out = vec![("blktune.1".to_string(), render(cmd.clone(), None)?)];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("blktune-{}", sub.get_name());
        let page = sub
            .clone()
            .name(name.clone())
            .version(env!("CARGO_PKG_VERSION"));
        out.push((format!("{name}.1"), render(page, Some(sub.get_name()))?));
    }
    Ok(out)
}

/// Run `blktune man`.
pub fn run(args: &ManArgs, out: &mut Out) -> anyhow::Result<i32> {
    let pages = pages()?;
    if let Some(dir) = &args.dir {
        if !dir.is_dir() {
            return Err(UsageError(format!("{}: not a directory", dir.display())).into());
        }
        for (name, text) in &pages {
            let path = dir.join(name);
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        out.line(&format!("wrote {} pages to {}", pages.len(), dir.display()))?;
        return Ok(0);
    }
    let want = match &args.subcommand {
        None => "blktune.1".to_string(),
        Some(s) => format!("blktune-{s}.1"),
    };
    match pages.iter().find(|(n, _)| *n == want) {
        Some((_, text)) => out.text(text)?,
        None => {
            let subs: Vec<&str> = pages
                .iter()
                .skip(1)
                .map(|(n, _)| n.trim_start_matches("blktune-").trim_end_matches(".1"))
                .collect();
            return Err(UsageError(format!(
                "no subcommand '{}'; one of: {}",
                args.subcommand.as_deref().unwrap_or_default(),
                subs.join(", ")
            ))
            .into());
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_are_split_from_the_notes() {
        let (ex, notes) = examples_and_notes(
            "Examples:\n  blktune watch                     every disk, every second\n  sudo blktune revert sda\n\nOrder of writes: scheduler, its\ntunables.",
        );
        assert_eq!(
            ex,
            [
                (
                    "blktune watch".to_string(),
                    "every disk, every second".to_string()
                ),
                ("sudo blktune revert sda".to_string(), String::new()),
            ]
        );
        assert_eq!(notes, ["Order of writes: scheduler, its tunables."]);
    }
}
