//! `blktune bench`: the scheduler shoot-out on one device, or on a scratch
//! loop device blktune creates (and removes, also on Ctrl-C and SIGTERM).

use super::{Global, Out, UsageError};
use anyhow::Context;
use blktune_core::journal::Journal;
use blktune_core::load::{LoadOptions, Mix, Scratch, Target};
use blktune_core::shootout::{self, Config, Goal, Length, LoadSpec, ShootoutError, StartingPoint};
use blktune_core::text::printable;
use blktune_core::units::{format_duration, parse_duration, parse_size};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Arguments of `blktune bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The whole device to bench (omit with --scratch).
    #[arg(required_unless_present = "scratch", conflicts_with = "scratch")]
    pub device: Option<String>,

    /// Bench a scratch loop device of this size (256M, 1G) that blktune creates
    /// over a temp file and removes afterwards; the only place write loads may run.
    #[arg(long, value_name = "SIZE", value_parser = parse_scratch_size)]
    pub scratch: Option<u64>,

    /// Directory for the scratch file (not tmpfs: O_DIRECT needs a real filesystem).
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    pub scratch_dir: PathBuf,

    /// Schedulers to compare, comma-separated (default: every available one).
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub schedulers: Vec<String>,

    /// nr_requests values to try with every scheduler, comma-separated
    /// (64,256,1024); default: each scheduler's own. A value a scheduler
    /// refuses (above the queue depth under none) is left out, said.
    #[arg(long, value_name = "N,M", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(4..=2048))]
    pub nr_requests: Vec<u64>,

    /// Measuring time per round.
    #[arg(long, value_name = "DUR", value_parser = parse_dwell, default_value = "3s")]
    pub dwell: Duration,

    /// Time after each switch before measuring.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "1s")]
    pub settle: Duration,

    /// Keep measuring, in interleaved rounds, until the verdict is decided
    /// or this time runs out (then "no winner").
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "3m", conflicts_with = "rounds")]
    pub budget: Duration,

    /// Instead of a budget: exactly N rounds of every configuration
    /// (forward, then backward, ...), judged once at the end.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=100))]
    pub rounds: Option<u16>,

    /// The smallest effect worth acting on, in percent: a difference is
    /// called only when its whole interval is beyond it; "no difference"
    /// when its whole interval is within it.
    #[arg(long, value_name = "PCT", default_value = "5", value_parser = parse_min_effect)]
    pub min_effect: f64,

    /// none (passive: the device's own workload), randread, mixed or randrw
    /// (default: mixed on --scratch, none on a DEVICE).
    #[arg(long, value_name = "LOAD", value_parser = parse_load)]
    pub load: Option<LoadChoice>,

    /// Random-I/O workers of the built-in load (in-flight I/Os).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub queue_depth: u16,

    /// Confirm a read-only built-in load (randread) on a DEVICE: it adds real reads.
    #[arg(long)]
    pub allow_read_load: bool,

    /// read-latency (r_await), write-latency (w_await), throughput (MB/s), p99 or
    /// write-p99 (the kernel's p99 of the device's reads or writes; without BPF,
    /// the built-in load's own, which needs a --load).
    #[arg(long, value_name = "GOAL", default_value = "read-latency", value_parser = parse_goal)]
    pub goal: Goal,

    /// Leave the winner applied (journalled: 'blktune revert DEVICE' undoes it).
    #[arg(long, conflicts_with = "scratch")]
    pub apply: bool,

    /// Write the winner as a udev rule (default file /etc/udev/rules.d/61-blktune.rules,
    /// never replaced without --force).
    #[arg(long, conflicts_with = "scratch")]
    pub export: bool,

    /// With --export: write the rule to FILE instead of the default path (`-`: standard output).
    #[arg(long, value_name = "FILE", requires = "export")]
    pub export_output: Option<PathBuf>,

    /// With --export: replace the rules file if it exists.
    #[arg(long, requires = "export")]
    pub force: bool,

    /// Print the whole result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--load`: passive or a built-in mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadChoice {
    None,
    Mix(Mix),
}

fn parse_load(text: &str) -> Result<LoadChoice, String> {
    if text == "none" {
        return Ok(LoadChoice::None);
    }
    text.parse::<Mix>()
        .map(LoadChoice::Mix)
        .map_err(|_| format!("unknown load '{text}'; choose none, randread, mixed or randrw"))
}

fn parse_goal(text: &str) -> Result<Goal, String> {
    text.parse()
}

/// `5` or `5%`: a percent above 0 and below 100, as a fraction.
fn parse_min_effect(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("minimum effect '{text}' is not a percent (5, 2.5%)"))?;
    if !(v > 0.0 && v < 100.0) {
        return Err(format!(
            "minimum effect '{text}' is out of range: above 0 and below 100"
        ));
    }
    Ok(v / 100.0)
}

fn parse_dwell(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d < Duration::from_millis(500) {
        return Err(format!("dwell '{text}' is too short: at least 500ms"));
    }
    Ok(d)
}

fn parse_scratch_size(text: &str) -> Result<u64, String> {
    let n = parse_size(text)?;
    if !(16 << 20..=64 << 30).contains(&n) {
        return Err(format!("scratch size '{text}' is out of range: 16M to 64G"));
    }
    Ok(n)
}

/// Ctrl-C and SIGTERM set this flag instead of killing the process, so the
/// shoot-out restores the settings and the scratch guard removes the device.
fn signal_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))
            .context("cannot install the Ctrl-C handler")?;
    }
    Ok(flag)
}

/// Run `blktune bench`.
pub fn run(global: &Global, args: &BenchArgs, out: &mut Out) -> anyhow::Result<i32> {
    let cancel = signal_flag()?;
    let root = global.root();
    let load = args.load.unwrap_or(if args.scratch.is_some() {
        LoadChoice::Mix(Mix::Mixed)
    } else {
        LoadChoice::None
    });
    // The guard lives until this function returns: normal end, error, or a
    // signal (the flag stops the shoot-out, then the guard drops).
    let scratch = match args.scratch {
        Some(size) => {
            if !blktune_core::os::is_root() {
                // Not root is a failure (exit 1), as for every other command.
                anyhow::bail!(
                    "bench --scratch needs root: it creates a loop device (losetup); try 'sudo blktune bench --scratch SIZE'"
                );
            }
            for line in blktune_core::scratch::sweep(&root, &args.scratch_dir) {
                eprintln!("{}", printable(&line));
            }
            // Names that can be checked are checked before anything is
            // created (after the sweep, which only removes a dead run's leftovers).
            if let Some(available) = loop_schedulers(&root) {
                check_schedulers(&args.schedulers, &available)?;
            }
            Some(Scratch::create(&args.scratch_dir, size).with_context(|| {
                format!(
                    "cannot create a scratch loop device in {}",
                    args.scratch_dir.display()
                )
            })?)
        }
        None => None,
    };
    let device = match (&scratch, &args.device) {
        (Some(s), _) => s.name().to_owned(),
        (None, Some(d)) => d.clone(),
        (None, None) => return Err(UsageError("give a DEVICE or --scratch SIZE".into()).into()),
    };
    // A partition or an unknown name gets the tuner's own message, before any load check.
    let resolved = blktune_core::tuner::resolve(&root, &device)?;
    // A fake tree (--sysfs-root) is not the machine: nothing real is written.
    if scratch.is_none() && root.is_live() && !blktune_core::os::is_root() {
        // Without root the first switch fails and the restore fails with it:
        // say so before anything starts, like --scratch and demo.
        anyhow::bail!(
            "bench needs root: it switches '{device}' through its schedulers; try 'sudo blktune bench {device}'"
        );
    }
    let load_spec = match load {
        LoadChoice::None => None,
        LoadChoice::Mix(mix) => {
            let target = if mix.writes() {
                // Refused for anything but our own, clean scratch device.
                Target::writable(&root, &device).map_err(|e| UsageError(e.to_string()))?
            } else if scratch.is_some() || args.allow_read_load {
                Target::read_only(&root, &device).map_err(|e| UsageError(e.to_string()))?
            } else {
                return Err(UsageError(format!(
                    "the '{mix}' load issues real reads to '{device}'; add --allow-read-load to confirm, or use --scratch SIZE"
                ))
                .into());
            };
            let mut options = LoadOptions::new(mix);
            options.queue_depth = args.queue_depth.into();
            Some(LoadSpec { target, options })
        }
    };
    let cfg = Config {
        device: device.clone(),
        schedulers: args.schedulers.clone(),
        nr_requests: args.nr_requests.clone(),
        configurations: Vec::new(),
        length: match args.rounds {
            Some(n) => Length::Rounds(n.into()),
            None => Length::Budget(args.budget),
        },
        settle: args.settle,
        dwell: args.dwell,
        load: load_spec,
        goal: args.goal,
        min_effect: args.min_effect,
        apply: args.apply,
        scratch: scratch.is_some(),
        no_bpf: global.no_bpf,
        start: StartingPoint::Original,
    };
    // What the device offers before the first switch: the winner's rule is
    // checked against it (see `WinnerExport::offered`).
    let offered = blktune_core::device::QueueSettings::read_scheduler(&root, &resolved)
        .ok()
        .flatten()
        .map(|s| s.available);
    let live = !args.json && std::io::stderr().is_terminal();
    // Said once the request passed validation (the first progress report),
    // so a refused request prints only its one error line.
    let mut said = args.json;
    let res = shootout::run(
        &root,
        Some(Journal::for_root(&root)),
        &cfg,
        |p| {
            // Not eprint!: it panics on a closed stderr, and the progress
            // must never stand between the shoot-out and its restore.
            use std::io::Write;
            let mut err = std::io::stderr();
            if !said {
                said = true;
                let _ = writeln!(err, "{}", printable(&intro(&cfg, args, scratch.is_some())));
            }
            if live {
                let _ = write!(err, "\r\x1b[K{}", printable(&p.line()));
            }
        },
        &cancel,
    );
    if live {
        eprint!("\r\x1b[K");
    }
    let result = match res {
        Ok(r) => r,
        Err(e @ ShootoutError::Cancelled { .. }) => {
            drop(scratch);
            eprintln!("blktune: {}", printable(&e.to_string()));
            return Ok(e.exit_code());
        }
        Err(ShootoutError::Tune(t)) => return Err(t.into()),
        Err(e @ ShootoutError::Usage(_)) => return Err(UsageError(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    if args.json {
        out.line(&serde_json::to_string_pretty(&result)?)?;
    } else {
        out.text(&shootout::table(&result))?;
    }
    if args.export {
        // Only a winner the comparison decided; never a leader inside the noise.
        let Some((_, winner)) = result.winner() else {
            anyhow::bail!(
                "no rule written: the shoot-out decided no winner ({})",
                result.verdict.headline
            );
        };
        let winner = winner.clone();
        let to = blktune_core::export::WinnerExport {
            output: args.export_output.clone(),
            force: args.force,
            measured: blktune_core::export::measured::shootout(&result),
            udev_db: None,
            offered,
        };
        // A refused device keeps its own exit code (2 for bad input).
        let written = blktune_core::export::export_winner(&root, &device, &winner, &to).map_err(
            |e| match e {
                blktune_core::export::ExportError::Tune(t) => anyhow::Error::from(t),
                e => e.into(),
            },
        )?;
        for line in written.lines() {
            eprintln!("blktune: {}", printable(line));
        }
    }
    if let Some(s) = scratch {
        s.remove()
            .with_context(|| format!("cannot remove the scratch device '{device}'"))?;
    }
    Ok(0)
}

/// The schedulers a loop device offers, from any loop device's
/// `queue/scheduler` (they all share one queue type, so one list); `None`
/// when there is no loop device to ask yet.
fn loop_schedulers(root: &blktune_core::os::SysRoot) -> Option<Vec<String>> {
    let names = root.block_names().ok()?;
    names
        .iter()
        .filter(|d| d.as_str().starts_with("loop"))
        .find_map(|d| blktune_core::device::QueueSettings::read(root, d).scheduler)
        .map(|s| s.available)
}

/// Refuse a `--schedulers` name the scratch device will not have.
fn check_schedulers(wanted: &[String], available: &[String]) -> Result<(), UsageError> {
    match wanted.iter().find(|w| !available.contains(w)) {
        Some(w) => Err(UsageError(format!(
            "unknown scheduler '{}' for a scratch loop device; available: {}",
            w.chars().take(32).collect::<String>(),
            available.join(", ")
        ))),
        None => Ok(()),
    }
}

/// `benching loop3 (scratch, 256 MiB): load mixed: ...; settle 1s, dwell 10s, 2 rounds; ...`
fn intro(cfg: &Config, args: &BenchArgs, scratch: bool) -> String {
    let what = cfg
        .load
        .as_ref()
        .map_or("passive (the device's own workload)".to_string(), |l| {
            shootout::LoadInfo::of(&l.options).describe()
        });
    let size = if scratch {
        format!(
            " (scratch, {})",
            blktune_core::device::human_size(args.scratch.unwrap_or(0))
        )
    } else {
        String::new()
    };
    let length = match cfg.length {
        Length::Rounds(n) => format!("{n} round{} of each", if n == 1 { "" } else { "s" }),
        Length::Budget(b) => format!(
            "interleaved rounds until decided or {} have passed",
            format_duration(b)
        ),
    };
    let dims = if cfg.nr_requests.is_empty() {
        String::new()
    } else {
        format!(
            " x nr_requests {}",
            cfg.nr_requests
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    format!(
        "benching {}{size}: load {what}; schedulers {}{dims}; settle {} + dwell {} a round, {length}; Ctrl-C stops and restores",
        cfg.device,
        if cfg.schedulers.is_empty() {
            "all".to_string()
        } else {
            cfg.schedulers.join(",")
        },
        format_duration(args.settle),
        format_duration(args.dwell),
    )
}
