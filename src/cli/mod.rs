//! The command line: argument types and dispatch. Each subcommand lives in
//! its own file; this one only wires them together.

mod bench;
mod common;
mod completions;
mod demo;
mod export;
#[doc(hidden)]
pub mod exporter; // its `bench` seam, for benches/exporter.rs
mod list;
mod man;
mod metrics;
mod names;
mod out;
mod record;
mod replay;
mod set;
mod status;
mod watch;

pub use out::{Out, is_broken_pipe};

use blktune_core::os::SysRoot;
use blktune_core::units::parse_duration;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  blktune                          open the full-screen tuner
  blktune list                     disks, their schedulers and queue settings
  blktune watch -i 1s sda          iostat -x style rates every second
  sudo blktune set sda --scheduler kyber --nr-requests 64
  sudo blktune revert --all        put back every original blktune changed";

/// See and tune the block-layer I/O scheduler of every disk, live.
#[derive(Debug, Parser)]
#[command(name = "blktune", version, about, after_help = EXAMPLES)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub global: Global,

    #[command(flatten)]
    pub tui: TuiArgs,
}

/// Flags every command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct Global {
    /// Root of sysfs (tests and captured trees use another).
    #[arg(long, global = true, value_name = "DIR", default_value = "/sys")]
    pub sysfs_root: PathBuf,

    /// Root of procfs.
    #[arg(long, global = true, value_name = "DIR", default_value = "/proc")]
    pub proc_root: PathBuf,

    /// Never load the BPF program that times every I/O (no kernel percentiles).
    #[arg(long, global = true)]
    pub no_bpf: bool,
}

impl Global {
    /// The OS seam these flags describe.
    pub fn root(&self) -> SysRoot {
        SysRoot::new(&self.sysfs_root, &self.proc_root)
    }
}

/// Flags of the full-screen tuner (no subcommand).
#[derive(Debug, Clone, clap::Args)]
pub struct TuiArgs {
    /// Select this device at start.
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,

    /// Sample interval: 250ms, 1s, 2 (seconds); 100ms to 10s.
    #[arg(long, short = 'i', value_name = "DUR", value_parser = parse_tui_interval, default_value = "1s")]
    pub interval: Duration,

    /// Show everything, change nothing.
    #[arg(long)]
    pub read_only: bool,

    /// On quit, put back every setting changed in this session.
    #[arg(long)]
    pub revert_on_exit: bool,

    /// Also time a few 4 KiB O_DIRECT reads per second at random offsets of the
    /// selected device (read-only) and show their latency percentiles: what an
    /// application sees, next to the diskstats averages. The probe's reads count in r/s.
    #[arg(long)]
    pub probe: bool,

    /// Probe reads per second (0.1 to 100).
    #[arg(long, value_name = "N", value_parser = parse_probe_rate, default_value_t = blktune_core::probe::DEFAULT_RATE, requires = "probe")]
    pub probe_rate: f64,
}

impl TuiArgs {
    /// The TUI's own options from these flags (the TUI knows no CLI type).
    pub fn options(&self, g: &Global) -> crate::tui::Options {
        crate::tui::Options {
            root: g.root(),
            device: self.device.clone(),
            interval: self.interval,
            read_only: self.read_only,
            revert_on_exit: self.revert_on_exit,
            probe: self.probe,
            probe_rate: self.probe_rate,
            no_bpf: g.no_bpf,
        }
    }
}

/// A TUI error in the CLI's words: a bad `--device` keeps the tuner's
/// exit code (2 for a typo); every other one has its causes as context.
pub fn tui_error(e: crate::tui::TuiError) -> anyhow::Error {
    match e {
        crate::tui::TuiError::Device(t) => t.into(),
        e => e.into(),
    }
}

/// Probe reads per second: 0.1 to 100 (`--probe-rate` of the TUI and `watch`).
pub fn parse_probe_rate(s: &str) -> Result<f64, String> {
    let r: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("probe rate '{s}' is not a number"))?;
    if !(0.1..=100.0).contains(&r) {
        return Err(format!("probe rate '{s}' is out of range: 0.1 to 100"));
    }
    Ok(r)
}

/// An interval of watch and record: 100 ms to 1 h.
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(3600) {
        return Err(format!("interval '{s}' is out of range: 100ms to 1h"));
    }
    Ok(d)
}

/// A sample interval of the full-screen tuner: 100 ms to 10 s
/// ([`crate::tui::INTERVAL_RANGE`]; a chart of 10 s steps is already slow to read).
pub fn parse_tui_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    let (lo, hi) = crate::tui::INTERVAL_RANGE;
    if d < lo || d > hi {
        return Err(format!(
            "interval '{s}' is out of range for the tuner: 100ms to 10s (watch and record take up to 1h)"
        ));
    }
    Ok(d)
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List block devices with their schedulers and queue settings.
    #[command(
        after_help = "Examples:\n  blktune list\n  blktune list --all\n  blktune list --json | jq '.[].scheduler'"
    )]
    List(list::ListArgs),

    /// Print iostat -x style statistics every interval.
    #[command(
        after_help = "Examples:\n  blktune watch                     every disk, every second\n  blktune watch -i 250ms -c 8 sda   eight quarter-second intervals of sda\n  blktune watch --json nvme0n1      NDJSON with iostat -o JSON keys"
    )]
    Watch(watch::WatchArgs),

    /// Change a device's scheduler, its tunables, nr_requests and read-ahead.
    #[command(
        after_help = "Examples:\n  sudo blktune set sda --scheduler kyber\n  sudo blktune set sda --scheduler mq-deadline --tunable read_expire=100 --nr-requests 64\n  sudo blktune set sda --read-ahead-kb 256\n\nOrder of writes: scheduler, its tunables, nr_requests, read_ahead_kb (a switch resets\nthe others). The original settings are journalled in /run/blktune (or\n$BLKTUNE_JOURNAL_DIR) before the first change, for 'blktune revert'; a real device\nalready changed with another journal directory is refused (one lock and one set of\noriginals per device). Exit codes: 0 changed (or already set), 1 failed (nothing\nchanged, or rolled back), 2 bad input. Once the change is made the exit code is 0 even\nif the report cannot be printed (a full disk, a closed stdout): stderr then says what\nchanged and the undo command."
    )]
    Set(set::SetArgs),

    /// Put back the original settings journalled before blktune's first change.
    #[command(
        after_help = "Examples:\n  sudo blktune revert sda\n  sudo blktune revert --all\n  sudo blktune revert --strict sda   exit 1 when sda has nothing to revert\n\nA real device whose originals were journalled in another directory (another\nBLKTUNE_JOURNAL_DIR) is reverted from there. Exit codes: 0 every device put back, or\nnothing to revert ('nothing to revert'; 1 with --strict); 1 something was not put back\n(said on stderr); 2 an unknown device. A report that cannot be printed (a full disk, a\nclosed stdout) changes no exit code: stderr says so, every write is still made."
    )]
    Revert(set::RevertArgs),

    /// What blktune has changed: each device's originals, since when, by which process, in which journal.
    #[command(
        after_help = "Examples:\n  sudo blktune status\n  sudo blktune status --json | jq '.devices[].device'\n\nReads the journal (/run/blktune, or $BLKTUNE_JOURNAL_DIR) and, for real devices, every\nother journal directory the register of live devices (/run/blktune/live) names; writes\nnothing. Exit codes: 0 (also when nothing was changed), 1 a journal or an entry could\nnot be read (named)."
    )]
    Status(status::StatusArgs),

    /// Record samples, settings and changes to a file, for replay anywhere.
    #[command(
        after_help = "Examples:\n  sudo blktune record incident.ndjson.gz\n  blktune record -i 500ms --duration 2m sda.ndjson sda\n\nStops after --duration or on Ctrl-C/SIGTERM, writing an end record. Settings changes\nmade meanwhile (also by 'blktune set' from another shell) are recorded as changes."
    )]
    Record(record::RecordArgs),

    /// Play a recording back (no root needed), or summarise it.
    #[command(
        after_help = "Examples:\n  blktune replay --demo\n  blktune replay --demo --summary\n  blktune replay incident.ndjson.gz --summary --json\n  blktune replay incident.ndjson.gz --speed 4 --start 30s"
    )]
    Replay(replay::ReplayArgs),

    /// Write udev rules (or a script) that keep the chosen settings; --check a rules file.
    #[command(
        after_help = "Examples:\n  blktune export sda                          sda's live settings as a udev rule\n  blktune export sda -s kyber --nr-requests 64 -o /etc/udev/rules.d/61-blktune.rules\n  blktune export nvme0n1 --match class        every NVMe disk\n  blktune export sda --format script > apply.sh\n  blktune export --check /etc/udev/rules.d/61-blktune.rules\n\nWithout DEVICE: the devices blktune changed (its journal). Rules match the stable id\n(WWN/serial) where there is one; files using ENV{ID_*} must sort after\n60-persistent-storage.rules. Existing files are replaced only with --force."
    )]
    Export(export::ExportArgs),

    /// Shoot-out: measure every scheduler on a device under the same load; a winner only when decided.
    ///
    /// `bench` runs the shoot-out, the same one the full-screen tuner's `b` key runs.
    #[command(
        after_help = "Examples:\n  sudo blktune bench --scratch 256M                 mixed load on a scratch loop device\n  sudo blktune bench sda --dwell 30s                passive: sda's own workload\n  sudo blktune bench nvme0n1 --load randread --allow-read-load --goal p99\n  sudo blktune bench sda --schedulers none,mq-deadline --rounds 4 --json\n\nConfigurations take turns in interleaved rounds (A B B A ...; --settle, then --dwell),\nuntil the comparison engine decides or --budget runs out (\"no winner\"); --rounds N\ninstead runs exactly N of each. --apply and --export act only on a decided winner; the\noriginal settings come back at the end (also on Ctrl-C), unless --apply.\nWrite loads run only on --scratch devices blktune creates; reads on a DEVICE need\n--allow-read-load."
    )]
    Bench(bench::BenchArgs),

    /// Demo for trainers: a scratch loop device under load, in the TUI, removed on exit (root).
    #[command(
        after_help = "Examples:\n  sudo blktune demo\n  sudo blktune demo --size 512M --interval 250ms\n\nCreates a sparse file in /var/tmp and a loop device over it, runs a mixed load on it (16 random readers, 4\nunthrottled writers) and opens the tuner on it: press s and pick bfq; the second line says what the before/after panel measured,\nand A alternates the two schedulers until the engine decides (docs/demo.md). q removes everything."
    )]
    Demo(demo::DemoArgs),

    /// Serve Prometheus metrics over HTTP: queue settings and the kernel's per-I/O latency histograms.
    #[command(
        after_help = "Examples:\n  sudo blktune exporter                              http://127.0.0.1:10215/metrics\n  sudo blktune exporter --listen 0.0.0.0:10215       every address (firewall it)\n  sudo blktune exporter --buckets-per-octave 16      finer histogram_quantile, more series\n\nThe histograms count from the exporter's start (cumulative: use rate()). Without root\n(or with --no-bpf) only the settings are served, and blktune_latency_tracing is 0."
    )]
    Exporter(exporter::ExporterArgs),

    /// Print the manual page (roff), or write every page into a directory.
    #[command(
        after_help = "Examples:\n  blktune man | man -l -\n  blktune man export | man -l -\n  blktune man --dir /tmp/man1"
    )]
    Man(man::ManArgs),

    /// Print a shell completion script.
    #[command(
        after_help = "Examples:\n  blktune completions bash > /etc/bash_completion.d/blktune\n  source <(blktune completions bash)\n  blktune completions zsh > \"${fpath[1]}/_blktune\"\n  blktune completions fish > ~/.config/fish/completions/blktune.fish"
    )]
    Completions(completions::CompletionsArgs),
}

/// Parse the command line. Help and version print and exit 0 as usual; a
/// usage error becomes one line on stderr and exit code 2 (clap's own
/// rendering spans several lines, with a usage block).
pub fn parse_args() -> Args {
    match Args::try_parse() {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.render().to_string();
            // The message is the first paragraph; the usage line names the subcommand.
            let msg = text
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ");
            let msg = msg.trim_start_matches("error: ");
            let cmd = help_command(std::env::args_os());
            eprintln!("blktune: {msg} (see '{cmd} --help')");
            std::process::exit(2);
        }
    }
}

/// The command whose `--help` a usage error points to: `blktune set` when the
/// command line names a subcommand, else `blktune`. clap's error text names
/// the subcommand only for some errors (an unknown argument, not an invalid
/// value), so the command line is parsed again with errors ignored.
pub fn help_command<I, T>(argv: I) -> String
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::CommandFactory;
    Args::command()
        .ignore_errors(true)
        .try_get_matches_from(argv)
        .ok()
        .and_then(|m| m.subcommand_name().map(|s| format!("blktune {s}")))
        .unwrap_or_else(|| "blktune".into())
}

/// Run the parsed command line; returns the process exit code.
pub fn run(mut args: Args) -> i32 {
    names::canonicalize(&mut args);
    let mut out = Out::stdout();
    let result = match args.command {
        Some(Command::List(a)) => list::run(&args.global, &a, &mut out),
        Some(Command::Watch(a)) => watch::run(&args.global, &a, &mut out),
        Some(Command::Set(a)) => set::run_set(&args.global, &a, &mut out),
        Some(Command::Revert(a)) => set::run_revert(&args.global, &a, &mut out),
        Some(Command::Status(a)) => status::run(&args.global, &a, &mut out),
        Some(Command::Record(a)) => record::run(&args.global, &a, &mut out),
        Some(Command::Replay(a)) => replay::run(&args.global, &a, &mut out),
        Some(Command::Export(a)) => export::run(&args.global, &a, &mut out),
        Some(Command::Bench(a)) => bench::run(&args.global, &a, &mut out),
        Some(Command::Demo(a)) => demo::run(&args.global, &a),
        Some(Command::Exporter(a)) => exporter::run(&args.global, &a, &mut out),
        Some(Command::Man(a)) => man::run(&a, &mut out),
        Some(Command::Completions(a)) => completions::run(&a, &mut out),
        None => crate::tui::run(&args.tui.options(&args.global)).map_err(tui_error),
    };
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            // Errors name devices, paths and file contents: escape them.
            eprintln!("blktune: {}", blktune_core::text::printable(&one_line(&e)));
            exit_code(&e)
        }
    }
}

/// The error and its causes on one line.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut s = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
    }
    s.replace('\n', " ")
}

/// 2 for bad input, 1 for failures.
pub fn exit_code(e: &anyhow::Error) -> i32 {
    if e.chain().any(|c| c.is::<UsageError>()) {
        return 2;
    }
    e.chain()
        .find_map(|c| c.downcast_ref::<blktune_core::error::TuneError>())
        .map_or(1, |t| t.exit_code())
}

/// Usage error (exit code 2) raised after parsing.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn usage_errors_point_to_the_help_of_their_subcommand() {
        for (argv, want) in [
            (
                &["blktune", "set", "sda", "--nr-requests", "abc"][..],
                "blktune set",
            ),
            (
                &["blktune", "--sysfs-root", "/x", "watch", "-i", "x"],
                "blktune watch",
            ),
            (&["blktune", "bench", "--bogus"], "blktune bench"),
            (&["blktune", "-i", "x"], "blktune"),
            (&["blktune", "nosuchcommand"], "blktune"),
        ] {
            assert_eq!(help_command(argv), want, "{argv:?}");
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn each_interval_parser_takes_what_its_help_says() {
        let ok = |f: fn(&str) -> Result<Duration, String>, s| f(s).is_ok();
        assert!(ok(parse_tui_interval, "100ms") && ok(parse_tui_interval, "10s"));
        assert!(!ok(parse_tui_interval, "99ms") && !ok(parse_tui_interval, "10001ms"));
        assert!(ok(parse_interval, "100ms") && ok(parse_interval, "1h"));
        assert!(!ok(parse_interval, "99ms") && !ok(parse_interval, "3601s"));
        let help = |cmd: &mut clap::Command, arg: &str| {
            cmd.get_arguments()
                .find(|a| a.get_id() == arg)
                .and_then(|a| a.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default()
        };
        let mut top = Args::command();
        let h = help(&mut top, "interval");
        assert!(h.contains("100ms to 10s") && !h.contains("1h"), "{h}");
        for (sub, range) in [
            ("watch", "100ms to 1h"),
            ("record", "100ms to 1h"),
            ("demo", "100ms to 10s"),
        ] {
            let c = top.find_subcommand_mut(sub).unwrap();
            let h = help(c, "interval");
            assert!(h.contains(range), "{sub}: {h}");
        }
    }

    #[test]
    fn probe_rate_is_checked_and_tui_flags_parse() {
        assert_eq!(parse_probe_rate("0.1"), Ok(0.1));
        assert_eq!(parse_probe_rate("100"), Ok(100.0));
        assert!(parse_probe_rate("0").unwrap_err().contains("out of range"));
        assert!(parse_probe_rate("101").unwrap_err().contains("'101'"));
        assert!(parse_probe_rate("NaN").is_err());
        assert!(
            parse_probe_rate("fast")
                .unwrap_err()
                .contains("not a number")
        );
        let a = Args::try_parse_from(["blktune", "--probe", "--probe-rate", "20"]).unwrap();
        assert!(a.tui.probe);
        assert_eq!(a.tui.probe_rate, 20.0);
        let a = Args::try_parse_from(["blktune"]).unwrap();
        assert!(!a.tui.probe, "off by default");
        // A rate without the probe is a usage error, not silently ignored.
        assert!(Args::try_parse_from(["blktune", "--probe-rate", "20"]).is_err());
        let a = Args::try_parse_from(["blktune", "demo", "--probe", "--probe-rate", "2"]).unwrap();
        match a.command {
            Some(Command::Demo(d)) => assert!(d.probe && d.probe_rate == 2.0),
            c => panic!("{c:?}"),
        }
    }
}
