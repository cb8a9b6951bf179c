//! `blktune record`: sample every interval and write a recording until
//! `--duration` passes or SIGINT/SIGTERM arrives.

use super::{Global, Out, UsageError, parse_interval};
use anyhow::Context;
use blktune_core::latency::{Intervals, Tracer, Unavailable};
use blktune_core::record::latency::LatencyFacts;
use blktune_core::record::{RecordError, RecordOptions, Recorder, is_stdio};
use blktune_core::sampler::Sampler;
use blktune_core::units::{format_duration, parse_duration};
use blktune_core::who::WhoWatch;
use signal_hook::consts::{SIGINT, SIGTERM};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest sleep between checks for a stop signal.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Arguments of `blktune record`.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// File to write: NDJSON, gzip-compressed when the name ends in .gz;
    /// `-` writes NDJSON to standard output (messages then go to stderr).
    pub file: PathBuf,

    /// Sample interval: 250ms, 1s, 2 (seconds); 100ms to 1h.
    #[arg(long, short = 'i', value_name = "DUR", value_parser = parse_interval, default_value = "1s")]
    pub interval: Duration,

    /// Stop after this long (default: until Ctrl-C or SIGTERM).
    #[arg(long, short = 'd', value_name = "DUR", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Overwrite FILE if it exists.
    #[arg(long)]
    pub force: bool,

    /// Also record who did each device's I/O, from the kernel (as `watch
    /// --who`: the busiest processes and cgroups per interval; replay shows
    /// them in its `i` panel). Costs each I/O a little more while recording;
    /// needs root and Linux 6.5.
    #[arg(long)]
    pub who: bool,

    /// Whole devices to record, with their partitions (default: all).
    pub devices: Vec<String>,
}

/// Map recorder errors to exit codes: an existing file or an unknown device is usage.
fn classify(e: RecordError) -> anyhow::Error {
    match e {
        RecordError::Exists(_) | RecordError::UnknownDevice(_) | RecordError::Refused(_) => {
            UsageError(e.to_string()).into()
        }
        e => e.into(),
    }
}

/// One line on stderr, escaped; a closed stderr is ignored (never a panic).
fn eprintln_quiet(line: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr().lock(),
        "{}",
        blktune_core::text::printable_lines(line)
    );
}

/// Run `blktune record`.
pub fn run(g: &Global, a: &RecordArgs, out: &mut Out) -> anyhow::Result<i32> {
    if let Some(d) = a.duration
        && d < a.interval
    {
        return Err(UsageError(format!(
            "--duration '{}' is shorter than the interval '{}': nothing would be recorded",
            format_duration(d),
            format_duration(a.interval)
        ))
        .into());
    }
    let root = g.root();
    let mut only = Vec::new();
    for name in &a.devices {
        only.push(blktune_core::tuner::resolve(&root, name)?.to_string());
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        // The first signal asks for a clean end; a second one (the clean end
        // hangs on a stuck disk) exits at once with code 1.
        signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&stop)))
            .context("cannot install the signal handler")?;
    }
    // The kernel's latency histograms, recorded per interval when it can;
    // loaded before the sampler's first reading so both count the same intervals.
    let mut tracer = Tracer::start(g.no_bpf, root.is_live());
    if let Err(why) = &tracer
        && !matches!(why, Unavailable::Disabled | Unavailable::NotLive)
    {
        eprintln_quiet(&format!(
            "blktune: no kernel latency histograms recorded: {why}"
        ));
    }
    let latency = LatencyFacts {
        traced: tracer.is_ok(),
        unavailable: tracer.as_ref().err().map(ToString::to_string),
    };
    let mut intervals = Intervals::new();
    let mut who = match (&mut tracer, a.who) {
        (_, false) => None,
        (Ok(t), true) => match t.set_who(true) {
            Ok(()) => Some(WhoWatch::new(&root)),
            Err(e) => {
                eprintln_quiet(&format!("blktune: who does the I/O not recorded: {e}"));
                None
            }
        },
        (Err(why), true) => {
            eprintln_quiet(&format!("blktune: who does the I/O not recorded: {why}"));
            None
        }
    };
    let mut sampler = Sampler::new(root.clone())
        .with_context(|| format!("cannot read {}/diskstats", root.procfs().display()))?;
    // Re-read settings every tick (half the interval, so that a tick that
    // comes a little early is still due), so a change made by another
    // process (`blktune set`) is placed within one interval.
    sampler.set_refresh_every(a.interval / 2);
    let opts = RecordOptions {
        force: a.force,
        only,
        interval: a.interval,
        checked_within: sampler.refresh_every(),
    };
    let mut rec =
        Recorder::create_traced(&a.file, &root, sampler.devices(), 0.0, &opts, Some(latency))
            .map_err(classify)?;
    // The baseline: the first interval's histograms start here.
    if let Ok(t) = tracer.as_mut()
        && let Ok(r) = t.read()
    {
        intervals.next(r);
        if let (Some(w), Ok(r)) = (&mut who, t.read_who()) {
            w.baseline(r);
        }
    }
    let to_stdout = is_stdio(&a.file);
    // Progress lines are informational: a closed stdout must not stop the
    // recording. When the recording itself is standard output, they go to stderr.
    let mut say = |line: &str| {
        if to_stdout {
            eprintln_quiet(line);
        } else {
            let _ = out.line(line);
        }
    };
    let shown = if to_stdout {
        "standard output".to_string()
    } else {
        a.file.display().to_string()
    };
    say(&format!(
        "recording to {shown} every {}{}; stop with Ctrl-C",
        format_duration(a.interval),
        a.duration
            .map_or(String::new(), |d| format!(" for {}", format_duration(d)))
    ));
    let start = Instant::now();
    let mut next = start + a.interval;
    let reason = loop {
        if a.duration
            .is_some_and(|d| next > start + d + Duration::from_millis(1))
        {
            break "duration";
        }
        // Sleep to absolute deadlines (no drift), waking often enough to see a signal.
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now >= next {
                break;
            }
            std::thread::sleep((next - now).min(SIGNAL_POLL));
        }
        if stop.load(Ordering::Relaxed) {
            break "signal";
        }
        next += a.interval;
        let snap = sampler
            .tick()
            .with_context(|| format!("cannot read {}/diskstats", root.procfs().display()))?;
        let mut failed = None;
        let traced = tracer.as_mut().ok().and_then(|t| {
            let r = t.read().ok();
            failed = t.take_issue_failure();
            r
        });
        if let Some(why) = failed {
            eprintln_quiet(&format!(
                "blktune: {}",
                blktune_core::latency::no_device_span_note(&why)
            ));
            // A replay says it too, from this sample on.
            rec.no_device_span(&why);
        }
        let traced = traced.and_then(|r| intervals.next(r));
        if let (Some(w), Ok(t)) = (&mut who, &tracer)
            && let Ok(r) = t.read_who()
            && let Some(by_device) = w.sample(r, &snap)
        {
            rec.who(by_device);
        }
        rec.snapshot_traced(&snap, traced.as_ref())?;
    };
    let stats = rec.finish(reason)?;
    say(&format!(
        "wrote {} samples and {} change(s) to {}",
        stats.samples, stats.changes, shown
    ));
    Ok(0)
}
