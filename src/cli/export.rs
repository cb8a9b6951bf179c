//! `blktune export`: write udev rules (or a script) that keep the chosen
//! settings, and `blktune export --check FILE` to see what a rules file does.

use super::common::{SettingsArgs, cli_error};
use super::{Global, Out, UsageError};
use anyhow::Context;
use blktune_core::atomic_file::is_stdio;
use blktune_core::device::{self, BlockDevice};
use blktune_core::export::{self, ExportItem, Format, MatchStrategy, RenderOptions, UdevDb};
use blktune_core::host::HostInfo;
use blktune_core::journal::Journal;
use blktune_core::kernel_hz::KernelHz;
use blktune_core::text::printable;
use blktune_core::tuner::{self};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `--match`: the engine's strategies with their help lines (the engine has no clap).
fn match_parser() -> impl clap::builder::TypedValueParser<Value = MatchStrategy> {
    engine_choice(
        &MatchStrategy::ALL,
        MatchStrategy::label,
        MatchStrategy::help,
    )
}

/// `--format`: the engine's formats with their help lines.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    engine_choice(&Format::ALL, Format::label, Format::help)
}

/// A clap parser for one of an engine enum's values, named by `label`.
fn engine_choice<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    label: fn(T) -> &'static str,
    help: fn(T) -> &'static str,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = all
        .iter()
        .map(move |&v| PossibleValue::new(label(v)).help(help(v)));
    PossibleValuesParser::new(values).try_map(move |s: String| {
        all.iter()
            .copied()
            .find(|&v| label(v) == s)
            .ok_or_else(|| format!("unknown value '{s}'"))
    })
}

/// Arguments of `blktune export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Whole devices to export (default: the devices blktune changed, from its journal).
    pub devices: Vec<String>,

    /// How the rule finds the device again: id (WWN/serial; default where there is
    /// one), model, class (NVMe/rotational/non-rotational) or kernel (not stable).
    #[arg(long = "match", value_parser = match_parser(), value_name = "HOW")]
    pub strategy: Option<MatchStrategy>,

    #[command(flatten)]
    pub settings: SettingsArgs,

    /// Write to FILE (atomically) instead of standard output (`-`: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Replace FILE if it exists.
    #[arg(long, requires = "output")]
    pub force: bool,

    /// udev rules, or a POSIX sh script that applies the settings now.
    #[arg(long, value_parser = format_parser(), default_value = "udev")]
    pub format: Format,

    /// Instead of exporting: show which lines of a rules FILE match each device
    /// of this machine (for ACTION add and change) and what they would set.
    /// Without FILE: every rules file of udev's search path (/etc, /run,
    /// /usr/lib, /lib udev/rules.d, in udev's order), naming the later files
    /// that undo blktune's settings, and tuned if it overrides them.
    /// `-` reads standard input. Exit code 3 when it finds problems (a line udev ignores, nr_requests or
    /// a tunable written before a scheduler switch, a rule that also hits
    /// partitions, a later file undoing blktune's rule), 1 when the file cannot be read.
    #[arg(long, value_name = "FILE", num_args = 0..=1, conflicts_with_all = ["devices", "strategy", "scheduler", "nr_requests", "read_ahead_kb", "tunables", "output", "format"])]
    pub check: Option<Option<PathBuf>>,

    /// With --check: print JSON.
    #[arg(long, requires = "check")]
    pub json: bool,

    /// The udev database (properties such as ID_WWN); default /run/udev/data,
    /// none with another --sysfs-root (the real one describes other devices).
    #[arg(long, value_name = "DIR")]
    pub udev_db: Option<PathBuf>,

    /// Root of the udev and tuned configuration: <DIR>/etc/udev/rules.d,
    /// <DIR>/etc/tuned/active_profile, ... (tests use a fake tree).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub config_root: PathBuf,
}

impl ExportArgs {
    /// tuned's configuration directory under --config-root.
    fn tuned_dir(&self) -> PathBuf {
        self.config_root.join("etc/tuned")
    }
}

/// `SOURCE_DATE_EPOCH` (reproducible builds convention) or now.
fn generated_at() -> String {
    let t = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or_else(SystemTime::now, |s| UNIX_EPOCH + Duration::from_secs(s));
    blktune_core::units::rfc3339(t)
}

/// Run `blktune export`.
pub fn run(g: &Global, a: &ExportArgs, out: &mut Out) -> anyhow::Result<i32> {
    let root = g.root();
    let db = match &a.udev_db {
        Some(dir) => UdevDb::new(dir),
        None if root.is_live() => UdevDb::default(),
        None => UdevDb::none(),
    };
    match &a.check {
        Some(Some(file)) => return run_check(&root, &db, file, a.json, out),
        Some(None) => return run_check_search_path(&root, &db, a, out),
        None => {}
    }
    let names = if a.devices.is_empty() {
        journal_devices(&root)?
    } else {
        a.devices.clone()
    };
    let over = a.settings.wanted();
    // Every device read once: the named ones' rules and the host's devices
    // (what the rules' matches are checked against) come from one read.
    let mut host_devices = device::discover(&root).unwrap_or_default();
    // An md array's name is udev's alone (MD_DEVNAME), for the rules' comments.
    db.fill_stacks(&mut host_devices);
    let hz = KernelHz::read(&root, &host_devices);
    let mut items = Vec::new();
    let mut notes = Vec::new();
    for name in &names {
        let dev = tuner::resolve(&root, name)?;
        if let Some(zoned) = zoned_model(&root, &dev) {
            return Err(UsageError(format!(
                "'{name}' is a zoned device (queue/zoned {zoned}): blktune leaves its scheduler alone (zoned writes need the kernel's default ordering)"
            ))
            .into());
        }
        notes.extend(multipath_note(&root, &dev));
        let d = match host_devices.iter().find(|d| d.name == dev.as_str()) {
            Some(d) => d.clone(),
            None => BlockDevice::read(&root, &dev),
        };
        // A rule made from a file that did not parse would leave its
        // setting out without a word.
        if let Some(why) = d.queue.unreadable_text() {
            anyhow::bail!("'{name}': {why}; nothing exported");
        }
        let over = tuner::validate(&dev, &d.queue, d.hw_queue_depth, &over)?;
        let settings = export::with_overrides(&export::live_settings(&d, &hz), &over);
        let env = db.properties(d.major, d.minor);
        items.push(ExportItem::new(d, settings, env));
    }
    // `-` is standard output, the same as no -o.
    let output = a.output.clone().filter(|p| !is_stdio(p));
    let opts = RenderOptions {
        strategy: a.strategy,
        format: a.format,
        host: HostInfo::read(&root).hostname,
        version: env!("CARGO_PKG_VERSION").into(),
        generated: Some(generated_at()),
        output: output.clone(),
        host_udev_env: db.properties_of(&host_devices),
        host_devices,
        tuned_include: export::check::search::active_tuned_profile(&a.tuned_dir()),
    };
    let r = export::render(&items, &opts).map_err(cli_error)?;
    if let (Some(path), Format::Udev) = (&output, a.format)
        && r.uses_udev_env
        && !export::sorts_after_persistent_storage(path)
    {
        return Err(UsageError(format!(
            "{}: the rules match on ENV{{ID_*}}, set by {}; the file name must sort after it (e.g. 61-blktune.rules)",
            path.display(),
            export::PERSISTENT_STORAGE_RULES
        ))
        .into());
    }
    print_warnings(&notes);
    let Some(path) = &output else {
        print_warnings(&r.warnings);
        out.text(&r.text)?;
        return Ok(0);
    };
    // Write first: when it fails, its one line is all the user needs to read.
    export::write_rules(path, &r.text, a.force).map_err(cli_error)?;
    if a.format == Format::Udev && path.extension().is_none_or(|e| e != "rules") {
        eprintln!(
            "blktune: warning: {}: udev only reads files whose names end in .rules",
            printable(&path.display().to_string())
        );
    }
    print_warnings(&r.warnings);
    match a.format {
        Format::Udev => out.line(&format!(
            "wrote {}; apply with: sudo udevadm control --reload && {}",
            path.display(),
            export::trigger_command(&r.trigger)
        ))?,
        Format::Script => out.line(&format!(
            "wrote {}; run it with: sudo sh {}",
            path.display(),
            path.display()
        ))?,
        Format::Tuned => out.line(&format!(
            "wrote {}; install with: sudo install -D -m 0644 {} /etc/tuned/{p}/tuned.conf && sudo tuned-adm profile {p}",
            path.display(),
            path.display(),
            p = export::tuned::PROFILE_NAME
        ))?,
    }
    Ok(0)
}

/// `host-managed` or `host-aware` for a zoned device (`queue/zoned`, kernel
/// `Documentation/ABI/stable/sysfs-block`); `None` for `none` or no such file.
fn zoned_model(
    root: &blktune_core::os::SysRoot,
    dev: &blktune_core::os::DeviceName,
) -> Option<String> {
    root.read_dev_attr(dev, "queue/zoned")
        .ok()
        .filter(|z| !z.is_empty() && z != "none")
}

/// A warning when `dev` is a path of a dm-multipath device (a holder whose
/// `dm/uuid` starts with `mpath-`): I/O is queued and scheduled on the dm
/// device, so a rule for the path changes little.
fn multipath_note(
    root: &blktune_core::os::SysRoot,
    dev: &blktune_core::os::DeviceName,
) -> Option<String> {
    let holders = root.list_dev_dir(dev, "holders").unwrap_or_default();
    let mpath = holders.iter().find(|h| {
        blktune_core::os::is_plausible_device_name(h)
            && root
                .read_dev_attr(dev, &format!("holders/{h}/dm/uuid"))
                .is_ok_and(|u| u.starts_with("mpath-"))
    })?;
    Some(format!(
        "'{dev}' is a path of the multipath device {mpath}: only {mpath}'s scheduler matters; export {mpath} instead",
        dev = dev.as_str()
    ))
}

/// The render warnings, one `blktune: warning:` line each on stderr.
fn print_warnings(warnings: &[String]) {
    for w in warnings {
        eprintln!("blktune: warning: {}", printable(w));
    }
}

/// The devices blktune changed (journalled originals in the journal of this tree).
fn journal_devices(root: &blktune_core::os::SysRoot) -> anyhow::Result<Vec<String>> {
    let journal = Journal::for_root(root);
    let mut names = Vec::new();
    for e in journal
        .list()
        .with_context(|| format!("cannot read the journal in {}", journal.dir().display()))?
    {
        // A refused entry (not trusted, another version) is not skipped
        // silently: the rules would miss a device blktune changed.
        let e = e.map_err(|(name, err)| {
            anyhow::Error::new(err).context(format!("journal entry of '{name}' is refused"))
        })?;
        names.push(e.device);
    }
    if names.is_empty() {
        return Err(UsageError(
            "no devices given, and blktune has changed none (its journal is empty): name the devices to export".into(),
        )
        .into());
    }
    Ok(names)
}

/// Run `blktune export --check` without a FILE: the whole udev search path.
fn run_check_search_path(
    root: &blktune_core::os::SysRoot,
    db: &UdevDb,
    a: &ExportArgs,
    out: &mut Out,
) -> anyhow::Result<i32> {
    use blktune_core::export::check::search;
    let devices = device::discover(root)
        .with_context(|| format!("cannot list {}/block", root.sysfs().display()))?;
    let mut report = search::check_search_path(&a.config_root, root, db, &devices);
    let profile_dirs = [a.tuned_dir(), a.config_root.join("usr/lib/tuned")];
    report.tuned = search::tuned_warning(&a.tuned_dir(), &profile_dirs);
    if a.json {
        out.line(&serde_json::to_string_pretty(&report)?)?;
    } else {
        out.text(&search::render_search_text(&report))?;
    }
    Ok(if report.problem_count() == 0 {
        0
    } else {
        export::check::EXIT_PROBLEMS
    })
}

/// How a path given for reading is named in messages (`-` is standard input).
fn shown_name(file: &std::path::Path) -> String {
    if is_stdio(file) {
        "standard input".into()
    } else {
        file.display().to_string()
    }
}

/// Run `blktune export --check FILE`.
fn run_check(
    root: &blktune_core::os::SysRoot,
    db: &UdevDb,
    file: &std::path::Path,
    json: bool,
    out: &mut Out,
) -> anyhow::Result<i32> {
    // The user's file, maybe a pipe (`-`, `/dev/stdin`): read as it comes;
    // a named pipe is refused, not waited on.
    let read = if is_stdio(file) {
        blktune_core::text::read_capped_from(std::io::stdin().lock(), export::check::MAX_RULES_FILE)
    } else {
        blktune_core::os::open_named_file(file)
            .and_then(|f| blktune_core::text::read_capped_from(f, export::check::MAX_RULES_FILE))
    };
    let name = shown_name(file);
    let text = read.with_context(|| format!("cannot read {name}"))?;
    let devices = device::discover(root)
        .with_context(|| format!("cannot list {}/block", root.sysfs().display()))?;
    let report = export::check::check(&text, &name, root, db, &devices);
    if json {
        out.line(&serde_json::to_string_pretty(&report)?)?;
    } else {
        out.text(&export::check::render_text(&report))?;
    }
    Ok(if report.problem_count() == 0 {
        0
    } else {
        export::check::EXIT_PROBLEMS
    })
}
