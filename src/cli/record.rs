//! `blktune record`: sample every interval and write a recording until
//! `--duration` passes or SIGINT/SIGTERM arrives.

use super::{Global, Out, UsageError, parse_interval};
use anyhow::Context;
use blktune_core::latency::{Unavailable, no_device_span_note};
use blktune_core::record::latency::LatencyFacts;
use blktune_core::record::{RecordError, RecordOptions, Recorder, is_stdio};
use blktune_core::sampler::SamplerOptions;
use blktune_core::traced::{TraceNote, TracedSampler};
use blktune_core::units::{format_duration, parse_duration};
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
    // The kernel's latency histograms, recorded per interval when it can.
    let mut sampler = TracedSampler::start(root.clone(), SamplerOptions::default(), true, g.no_bpf)
        .with_context(|| format!("cannot read {}/diskstats", root.procfs().display()))?;
    let why_not = sampler.latency().unavailable();
    if let Some(why) = why_not
        && !matches!(why, Unavailable::Disabled | Unavailable::NotLive)
    {
        eprintln_quiet(&format!(
            "blktune: no kernel latency histograms recorded: {why}"
        ));
    }
    let latency = LatencyFacts {
        traced: why_not.is_none(),
        unavailable: why_not.map(ToString::to_string),
    };
    if a.who
        && let Err(why) = sampler.set_who(true)
    {
        eprintln_quiet(&format!("blktune: who does the I/O not recorded: {why}"));
    }
    // Re-read settings every tick (half the interval, so that a tick that
    // comes a little early is still due), so a change made by another
    // process (`blktune set`) is placed within one interval.
    sampler.sampler_mut().set_refresh_every(a.interval / 2);
    let opts = RecordOptions {
        force: a.force,
        only,
        interval: a.interval,
        checked_within: sampler.sampler().refresh_every(),
    };
    let mut rec = Recorder::create_traced(
        &a.file,
        &root,
        sampler.sampler().devices(),
        0.0,
        &opts,
        Some(latency),
    )
    .map_err(classify)?;
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
        let tick = sampler
            .tick()
            .with_context(|| format!("cannot read {}/diskstats", root.procfs().display()))?;
        for note in &tick.notes {
            match note {
                TraceNote::NoDeviceSpan(why) => {
                    eprintln_quiet(&format!("blktune: {}", no_device_span_note(why)));
                    // A replay says it too, from this sample on.
                    rec.no_device_span(why);
                }
                TraceNote::Stopped(why) => eprintln_quiet(&format!(
                    "blktune: no more kernel latency histograms recorded: {why}"
                )),
            }
        }
        if let Some(who) = tick.who {
            rec.who(who);
        }
        rec.snapshot_traced(&tick.snapshot, tick.interval.as_ref())?;
    };
    let stats = rec.finish(reason)?;
    say(&format!(
        "wrote {} samples and {} change(s) to {}",
        stats.samples, stats.changes, shown
    ));
    Ok(0)
}
