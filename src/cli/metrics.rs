//! `blktune list --format openmetrics`: queue settings as OpenMetrics text for
//! node_exporter's textfile collector (which reads `*.prom` files from its
//! `--collector.textfile.directory`; write them atomically, as `-o` does).
//!
//! Every series carries `device`, `major` and `minor`, the labels of
//! node_exporter's `node_disk_info`, so a query joins them:
//! `blktune_nr_requests * on(device) group_left(model) node_disk_info`.
//! `blktune_queue_info` adds `wwn`, `serial` and `model` with the udev
//! properties node_exporter reads (ID_WWN, ID_SERIAL_SHORT, ID_MODEL), sysfs
//! values where the udev database has none, and the active `scheduler`
//! (node_exporter has no scheduler metric).
//!
//! The text is both OpenMetrics 1.0 (`# EOF` at the end) and valid Prometheus
//! text format, which is what the textfile collector and `promtool check
//! metrics` parse: so `blktune_queue_info` is a gauge named `_info`, not the
//! OpenMetrics `info` type the text format does not know.

use anyhow::Context;
use blktune_core::device::BlockDevice;
use blktune_core::export::StableIds;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// One latency histogram of one device and direction. Filled by the kernel
/// latency module (eBPF, a later issue); until then `list` passes none.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyHistogram {
    pub device: String,
    /// `read` or `write`.
    pub op: &'static str,
    /// Cumulative counts by upper bound in seconds, ascending, without `+Inf`.
    pub buckets: Vec<(f64, u64)>,
    pub count: u64,
    pub sum_seconds: f64,
}

/// What one metrics file describes.
#[derive(Debug)]
pub struct Snapshot<'a> {
    pub devices: &'a [&'a BlockDevice],
    pub ids: &'a BTreeMap<String, StableIds>,
    /// udev properties by device name (empty without a database).
    pub udev_env: &'a BTreeMap<String, BTreeMap<String, String>>,
    /// Per-device latency histograms; empty until the kernel latency module exists.
    pub latency: &'a [LatencyHistogram],
}

/// A label value with `\`, `"` and newlines escaped (OpenMetrics ABNF, `escaped-string`).
fn escape(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// `{device="sda",major="8",minor="0",...}`.
fn labels(pairs: &[(&str, &str)]) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// The metric families, in this order.
const FAMILIES: [(&str, &str); 4] = [
    (
        "blktune_queue_info",
        "Block device identity and active I/O scheduler (value always 1).",
    ),
    (
        "blktune_nr_requests",
        "queue/nr_requests: requests the scheduler may hold per hardware queue.",
    ),
    (
        "blktune_read_ahead_bytes",
        "queue/read_ahead_kb x 1024: read-ahead in bytes.",
    ),
    (
        "blktune_hw_queue_depth",
        "Hardware queue depth (smallest mq/*/nr_tags): the most nr_requests under none.",
    ),
];

/// The OpenMetrics text for `s`.
pub fn render(s: &Snapshot<'_>) -> String {
    let mut out = String::new();
    for (name, help) in FAMILIES {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for d in s.devices {
            let (major, minor) = (d.major.to_string(), d.minor.to_string());
            let base = [
                ("device", d.name.as_str()),
                ("major", major.as_str()),
                ("minor", minor.as_str()),
            ];
            let value = match name {
                "blktune_queue_info" => {
                    let ids = s.ids.get(&d.name).cloned().unwrap_or_default();
                    let env = s.udev_env.get(&d.name);
                    let prop = |k: &str| env.and_then(|e| e.get(k)).filter(|v| !v.is_empty());
                    let wwn = prop("ID_WWN").cloned().or(ids.wwn).unwrap_or_default();
                    let serial = prop("ID_SERIAL_SHORT")
                        .cloned()
                        .or_else(|| d.serial.clone())
                        .unwrap_or_default();
                    let model = prop("ID_MODEL")
                        .cloned()
                        .or_else(|| d.model.clone())
                        .unwrap_or_default();
                    let mut l = base.to_vec();
                    l.extend([
                        ("wwn", wwn.as_str()),
                        ("serial", serial.as_str()),
                        ("model", model.as_str()),
                        ("scheduler", d.queue.active_label()),
                    ]);
                    let _ = writeln!(out, "{name}{} 1", labels(&l));
                    continue;
                }
                "blktune_nr_requests" => d.queue.nr_requests,
                // Base units (promtool refuses `_kb`: "abbreviated units").
                "blktune_read_ahead_bytes" => d.queue.read_ahead_kb.map(|k| k * 1024),
                _ => d.hw_queue_depth,
            };
            if let Some(v) = value {
                let _ = writeln!(out, "{name}{} {v}", labels(&base));
            }
        }
    }
    render_latency(&mut out, s);
    out.push_str("# EOF\n");
    out
}

/// `blktune_io_latency_seconds`: a histogram per device and direction, from
/// the kernel latency module once it exists. Nothing when there is none.
fn render_latency(out: &mut String, s: &Snapshot<'_>) {
    if s.latency.is_empty() {
        return;
    }
    let name = "blktune_io_latency_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} I/O latency from request start to completion, as the kernel measured it."
    );
    let _ = writeln!(out, "# TYPE {name} histogram");
    for h in s.latency {
        let Some(d) = s.devices.iter().find(|d| d.name == h.device) else {
            continue;
        };
        let (major, minor) = (d.major.to_string(), d.minor.to_string());
        let base = [
            ("device", d.name.as_str()),
            ("major", major.as_str()),
            ("minor", minor.as_str()),
            ("op", h.op),
        ];
        for (le, n) in h
            .buckets
            .iter()
            .map(|(le, n)| (le.to_string(), *n))
            .chain([("+Inf".to_string(), h.count)])
        {
            let mut l = base.to_vec();
            l.push(("le", le.as_str()));
            let _ = writeln!(out, "{name}_bucket{} {n}", labels(&l));
        }
        let _ = writeln!(out, "{name}_count{} {}", labels(&base), h.count);
        let _ = writeln!(out, "{name}_sum{} {}", labels(&base), h.sum_seconds);
    }
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

    #[test]
    fn latency_histograms_render_cumulative_buckets_count_and_sum() {
        let dir = tempfile::tempdir().unwrap();
        let t = blktune_core::fake::FakeTree::new(dir.path()).unwrap();
        t.add(&blktune_core::fake::FakeDisk::new("sda")).unwrap();
        let devs = blktune_core::device::discover(&t.root()).unwrap();
        let shown: Vec<&BlockDevice> = devs.iter().collect();
        let h = LatencyHistogram {
            device: "sda".into(),
            op: "read",
            buckets: vec![(0.001, 5), (0.004, 9)],
            count: 10,
            sum_seconds: 0.025,
        };
        let text = render(&Snapshot {
            devices: &shown,
            ids: &BTreeMap::new(),
            udev_env: &BTreeMap::new(),
            latency: std::slice::from_ref(&h),
        });
        let l = "device=\"sda\",major=\"8\",minor=\"0\",op=\"read\"";
        for want in [
            "# TYPE blktune_io_latency_seconds histogram\n".to_string(),
            format!("blktune_io_latency_seconds_bucket{{{l},le=\"0.001\"}} 5\n"),
            format!("blktune_io_latency_seconds_bucket{{{l},le=\"+Inf\"}} 10\n"),
            format!("blktune_io_latency_seconds_count{{{l}}} 10\n"),
            format!("blktune_io_latency_seconds_sum{{{l}}} 0.025\n# EOF\n"),
        ] {
            assert!(text.contains(&want), "{want}\n{text}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(
            labels(&[("device", "sda"), ("model", "X \"Y\"")]),
            "{device=\"sda\",model=\"X \\\"Y\\\"\"}"
        );
    }
}
