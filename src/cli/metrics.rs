//! `blktune list --format openmetrics`: queue settings as OpenMetrics text for
//! node_exporter's textfile collector (which reads `*.prom` files from its
//! `--collector.textfile.directory`; write them atomically, as `-o` does).
//! The families are the engine's ([`blktune_core::metrics`]), shared with
//! `blktune exporter`; `--latency DUR` adds the gauges of one traced window.

use anyhow::Context;
use blktune_core::latency::Interval;
use blktune_core::metrics::{Exposition, queue, window};
use std::path::Path;
use std::time::Duration;

/// One traced window: what the kernel saw, and how long it was.
#[derive(Debug)]
pub struct Window {
    pub interval: Interval,
    pub length: Duration,
}

/// The OpenMetrics text: the settings of `snapshot`, and the window's gauges if any.
pub fn render(snapshot: &queue::QueueSnapshot<'_>, window: Option<&Window>) -> String {
    let mut out = Exposition::new();
    queue::render(&mut out, snapshot);
    if let Some(w) = window {
        window::render(&mut out, snapshot.devices, &w.interval, w.length);
    }
    out.finish()
}

/// Write `text` to `path` atomically (temp file in the same directory, then
/// rename: the collector never reads half a file). Only a regular file is
/// replaced: a device node, FIFO, symlink or directory is refused, and so is
/// anything under /dev, /sys or /proc.
pub fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let refuse = |why: &str| super::UsageError(format!("{}: {why}", path.display()));
    let abs = std::path::absolute(path).with_context(|| path.display().to_string())?;
    if ["/dev", "/sys", "/proc"].iter().any(|p| abs.starts_with(p)) {
        return Err(refuse("not writing metrics under /dev, /sys or /proc").into());
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => {
            return Err(refuse("exists and is not a regular file; not replaced").into());
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(anyhow::Error::new(e).context(path.display().to_string())),
    }
    // The same exit codes as export's (2: a missing directory, ...); the
    // name's warning only once the file is there.
    blktune_core::export::write_rules(path, text, true).map_err(super::common::cli_error)?;
    if path.extension().is_none_or(|e| e != "prom") {
        eprintln!(
            "blktune: warning: {}: node_exporter's textfile collector reads only files ending in .prom",
            blktune_core::text::printable(&path.display().to_string())
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use blktune_core::latency::{DevId, DeviceInterval, Dir, Hist, Span};
    use std::collections::BTreeMap;

    #[test]
    fn a_window_is_gauges_of_that_window_never_a_histogram() {
        let dir = tempfile::tempdir().unwrap();
        let t = blktune_core::fake::FakeTree::new(dir.path()).unwrap();
        t.add(&blktune_core::fake::FakeDisk::new("sda")).unwrap();
        let devs = blktune_core::device::discover(&t.root()).unwrap();
        let shown: Vec<&blktune_core::device::BlockDevice> = devs.iter().collect();
        let mut reads = Hist::empty();
        for i in 0..200u64 {
            reads.record(1_000_000 + i * 1000);
        }
        let mut hists = BTreeMap::new();
        hists.insert((Span::Total, Dir::Read), reads);
        let mut interval = Interval::default();
        interval.devices.insert(
            DevId { major: 8, minor: 0 },
            DeviceInterval {
                diskseq: devs[0].diskseq.unwrap_or_default(),
                hists,
                reset: false,
            },
        );
        let w = Window {
            interval,
            length: Duration::from_secs(10),
        };
        let text = render(
            &queue::QueueSnapshot {
                devices: &shown,
                ids: &BTreeMap::new(),
                udev_env: &BTreeMap::new(),
            },
            Some(&w),
        );
        assert!(!text.contains(" histogram\n"), "{text}");
        assert!(!text.contains(" counter\n"), "{text}");
        let l = "device=\"sda\",major=\"8\",minor=\"0\",op=\"read\",span=\"total\"";
        for want in [
            "# TYPE blktune_io_window_ios gauge\n".to_string(),
            format!("blktune_io_window_ios{{{l}}} 200\n"),
            "blktune_io_window_seconds 10\n".to_string(),
            format!("blktune_io_window_latency_p99_seconds{{{l}}} 0.0012"),
        ] {
            assert!(text.contains(&want), "{want}\n{text}");
        }
        // 200 I/Os: a p99, no p99.9; writes: a count of 0 and no percentile.
        assert!(
            !text.contains("blktune_io_window_latency_p999_seconds{"),
            "{text}"
        );
        assert!(text.contains("op=\"write\",span=\"total\"} 0\n"), "{text}");
        assert!(!text.contains("p50_seconds{device=\"sda\",major=\"8\",minor=\"0\",op=\"write\""));
        assert!(text.ends_with("# EOF\n"));
    }
}
