//! `blktune replay`: play a recording back. `--summary` prints devices,
//! changes and their before/after figures; the full-screen replay opens the
//! TUI on the recording.

use super::{Global, Out, UsageError};
use blktune_core::host::HostInfo;
use blktune_core::record::{RecordError, Recording, is_stdio, summarize_file};
use blktune_core::text::printable;
use blktune_core::units::{format_duration, parse_duration};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `blktune replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// A recording made by `blktune record` (plain or .gz); `-` reads standard
    /// input (with --summary: the full-screen replay reads a file twice).
    #[arg(required_unless_present = "demo", conflicts_with = "demo")]
    pub file: Option<PathBuf>,

    /// Play the demo recording built into blktune (a scheduler switch under
    /// load); works anywhere, without root.
    #[arg(long)]
    pub demo: bool,

    /// Print a summary (devices, changes, before/after figures) instead of playing.
    #[arg(long)]
    pub summary: bool,

    /// With --summary: print JSON.
    #[arg(long, requires = "summary")]
    pub json: bool,

    /// Playback speed: 0.25 to 64 times real time (2 or 2x).
    #[arg(long, value_name = "N", value_parser = parse_speed, default_value = "1")]
    pub speed: f64,

    /// Start this far into the recording: 30s, 1.5m.
    #[arg(long, value_name = "OFFSET", value_parser = parse_duration)]
    pub start: Option<Duration>,
}

/// A speed factor between 0.25 and 64; `2x` works too.
pub fn parse_speed(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .trim_end_matches(['x', 'X'])
        .parse()
        .map_err(|_| format!("speed '{text}' is not a number (examples: 0.5, 2, 8x)"))?;
    if !(0.25..=64.0).contains(&v) {
        return Err(format!("speed '{text}' is out of range: 0.25 to 64"));
    }
    Ok(v)
}

/// The demo recording (`assets/make-demo.sh` makes it), built into the
/// binary so `blktune replay --demo` works from any directory.
pub const DEMO_RECORDING: &[u8] = include_bytes!("../../assets/demo-bfq-switch.ndjson.gz");

/// What a summary of `--demo` calls its recording.
const DEMO_NAME: &str = "assets/demo-bfq-switch.ndjson.gz, built in";

/// The embedded demo written to a private file of its own (the replay
/// seeks in its file), removed when dropped.
struct DemoFile(PathBuf);

impl DemoFile {
    /// Write [`DEMO_RECORDING`] to a new file in the temporary directory;
    /// `create_new` never follows or reuses a file someone else put there.
    fn write() -> anyhow::Result<Self> {
        use std::io::Write;
        let path = std::env::temp_dir().join(format!(
            "blktune-demo-{}-{}.ndjson.gz",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        ));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("cannot write the demo to '{}': {e}", path.display()))?;
        let me = Self(path);
        f.write_all(DEMO_RECORDING)?;
        Ok(me)
    }
}

impl Drop for DemoFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Run `blktune replay`.
pub fn run(global: &Global, args: &ReplayArgs, out: &mut Out) -> anyhow::Result<i32> {
    let demo = if args.demo {
        Some(DemoFile::write()?)
    } else {
        None
    };
    let file = match (&demo, &args.file) {
        (Some(d), _) => d.0.clone(),
        (None, Some(f)) => f.clone(),
        (None, None) => return Err(UsageError("name a recording, or use --demo".into()).into()),
    };
    run_file(global, args, &file, out)
}

/// Replay `file` (the demo's private copy or the user's recording).
fn run_file(
    global: &Global,
    args: &ReplayArgs,
    file: &std::path::Path,
    out: &mut Out,
) -> anyhow::Result<i32> {
    if args.summary {
        // One pass over the file (a pipe works), in bounded memory.
        let local = HostInfo::read(&global.root()).hostname;
        let (rec, mut s) = summarize_file(file, (!local.is_empty()).then_some(local.as_str()))?;
        if args.demo {
            // Not the private copy's temp path, which changes every run
            // and is gone when this returns.
            s.file = DEMO_NAME.to_owned();
        }
        print_notes(&rec);
        check_start(args, file, &rec)?;
        if args.json {
            out.line(&serde_json::to_string_pretty(&s)?)?;
        } else {
            out.text(&s.to_text())?;
        }
        return Ok(0);
    }
    // The full-screen replay reads the file again as it plays and seeks:
    // a pipe would be used up by the first read.
    if is_stdio(file) {
        return Err(UsageError(
            "'-' (standard input) can be read only once, but the full-screen replay reads its file more than once: save it to a file first, or use --summary".into(),
        )
        .into());
    }
    let meta = std::fs::metadata(file).map_err(|e| RecordError::io(file, e))?;
    if !meta.is_file() {
        return Err(UsageError(format!(
            "'{}' is not a regular file: the full-screen replay reads it more than once; save it to a file first (--summary reads it once)",
            file.display()
        ))
        .into());
    }
    // Before the file is opened: indexing a long recording takes a while,
    // and without a terminal there is nothing to play it on.
    if !std::io::stdout().is_terminal() {
        let again = if args.demo {
            "--demo".to_string()
        } else {
            file.display().to_string()
        };
        return Err(anyhow::anyhow!(
            "the full-screen replay of '{}' needs a terminal; for text use 'blktune replay {again} --summary'",
            file.display(),
        ));
    }
    let rec = Arc::new(Recording::open(file)?);
    print_notes(&rec);
    check_start(args, file, &rec)?;
    if rec.samples() == 0 {
        return Err(anyhow::anyhow!(
            "'{}' has no samples to play; 'blktune replay {} --summary' shows what it holds",
            file.display(),
            file.display()
        ));
    }
    let start = args.start.map_or(0.0, |s| s.as_secs_f64());
    crate::tui::replay::run(rec, start, args.speed, args.demo).map_err(super::tui_error)
}

/// Notes (cut-off end, skipped lines) go to stderr, one line each.
fn print_notes(rec: &Recording) {
    for n in &rec.notes {
        eprintln!("blktune: note: {}", printable(n));
    }
}

/// `--start` must be within the recording.
fn check_start(
    args: &ReplayArgs,
    file: &std::path::Path,
    rec: &Recording,
) -> Result<(), UsageError> {
    if let Some(start) = args.start
        && start.as_secs_f64() > rec.duration()
    {
        return Err(UsageError(format!(
            "--start '{}' is past the end of '{}' ({} long)",
            format_duration(start),
            file.display(),
            format_duration(Duration::try_from_secs_f64(rec.duration()).unwrap_or_default())
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_parse_with_or_without_x_and_stay_in_range() {
        assert_eq!(parse_speed("2"), Ok(2.0));
        assert_eq!(parse_speed("0.5x"), Ok(0.5));
        assert!(parse_speed("0").unwrap_err().contains("out of range"));
        assert!(parse_speed("100").unwrap_err().contains("out of range"));
        assert!(parse_speed("fast").unwrap_err().contains("'fast'"));
    }
}
