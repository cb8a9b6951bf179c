//! Prometheus exposition of blktune's figures, one text for every consumer:
//! `list --format openmetrics` (node_exporter's textfile collector) and the
//! long-running `blktune exporter` (scraped over HTTP).
//!
//! The text is both OpenMetrics 1.0 (`# EOF` at the end) and the Prometheus
//! text format 0.0.4 that the textfile collector, the Prometheus server and
//! `promtool check metrics` parse (there `# EOF` is a comment). So an info
//! metric is a gauge named `_info`, not the OpenMetrics `info` type.
//!
//! Every per-device series carries `device`, `major` and `minor`, the labels
//! of node_exporter's `node_disk_info`, so a query joins them:
//! `blktune_nr_requests * on(device) group_left(model) node_disk_info`.
//!
//! - [`queue`]: the settings (scheduler, nr_requests, read-ahead, tunables);
//! - [`window`]: what one traced window saw, as gauges of that window;
//! - [`histogram`]: the kernel's latency histograms, cumulative since the
//!   tracer started, with bucket bounds on the BPF histogram's slot edges.

pub mod histogram;
pub mod queue;
pub mod window;

use crate::device::BlockDevice;
use std::fmt::Write as _;

/// A label value with `\`, `"` and newlines escaped (OpenMetrics ABNF, `escaped-string`).
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    escape_into(&mut out, value);
    out
}

/// [`escape`] onto the end of `out`: a scrape writes hundreds of thousands
/// of label values, nearly all with nothing to escape, so no allocation.
fn escape_into(out: &mut String, value: &str) {
    if !value.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        out.push_str(value);
        return;
    }
    for c in value.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str(r"\n"),
            c => out.push(c),
        }
    }
}

/// `{device="sda",major="8",minor="0",...}` (`{}` for none).
pub fn labels(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    labels_into(&mut out, pairs);
    out
}

/// [`labels`] onto the end of `out`.
fn labels_into(out: &mut String, pairs: &[(&str, &str)]) {
    out.push('{');
    label_pairs_into(out, pairs);
    out.push('}');
}

/// `device="sda",major="8"`: the pairs without the braces.
fn label_pairs_into(out: &mut String, pairs: &[(&str, &str)]) {
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        escape_into(out, v);
        out.push('"');
    }
}

/// The last label of a histogram's bucket lines (`le`) and its values, in
/// order, each escaped once: `0.001"} ` (see [`Exposition::samples_by_last_label`]).
#[derive(Debug, Clone)]
pub struct LastLabel {
    name: String,
    tails: Vec<String>,
}

impl LastLabel {
    /// Label `name` with `values`.
    pub fn new<'a>(name: &str, values: impl IntoIterator<Item = &'a str>) -> Self {
        let tails = values
            .into_iter()
            .map(|v| {
                let mut t = escape(v);
                t.push_str("\"} ");
                t
            })
            .collect();
        Self {
            name: name.to_owned(),
            tails,
        }
    }
}

/// A number as the text format writes it: integers without a fraction,
/// `+Inf`, `-Inf` and `NaN` by name.
pub fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        value.to_string()
    }
}

/// The metric type of a family, as `# TYPE` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
    Histogram,
}

impl Kind {
    /// The word after the family's name in `# TYPE`.
    fn word(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
            Kind::Histogram => "histogram",
        }
    }
}

/// The text being built: families with their HELP and TYPE lines, then samples.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// Nothing written yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Nothing written yet, into `buffer` (emptied first): a scrape of a
    /// thousand busy devices is tens of MiB, and a buffer kept from the last
    /// one is written without a page fault.
    pub fn reusing(mut buffer: String) -> Self {
        buffer.clear();
        Self { text: buffer }
    }

    /// Start a family: its `# HELP` and `# TYPE` lines.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {}", kind.word());
    }

    /// One sample line: `name{labels} value`.
    pub fn sample(&mut self, name: &str, pairs: &[(&str, &str)], value: impl std::fmt::Display) {
        self.text.push_str(name);
        if !pairs.is_empty() {
            labels_into(&mut self.text, pairs);
        }
        let _ = writeln!(self.text, " {value}");
    }

    /// Sample lines of one series that differ only in a last label
    /// (`le` of a histogram's buckets): `name{pairs,last="v"} count` for
    /// each value `v` of `values` and its count, the common labels escaped
    /// once per series and the values once for every series.
    pub fn samples_by_last_label(
        &mut self,
        name: &str,
        pairs: &[(&str, &str)],
        values: &LastLabel,
        counts: impl IntoIterator<Item = u64>,
    ) {
        let mut prefix = String::with_capacity(128);
        prefix.push_str(name);
        prefix.push('{');
        label_pairs_into(&mut prefix, pairs);
        if !pairs.is_empty() {
            prefix.push(',');
        }
        prefix.push_str(&values.name);
        prefix.push_str("=\"");
        // Each line: the prefix, a value's tail and a number.
        self.text.reserve(values.tails.len() * (prefix.len() + 32));
        let mut digits = itoa::Buffer::new();
        for (tail, count) in values.tails.iter().zip(counts) {
            self.text.push_str(&prefix);
            self.text.push_str(tail);
            self.text.push_str(digits.format(count));
            self.text.push('\n');
        }
    }

    /// The finished text, with OpenMetrics' `# EOF`.
    pub fn finish(mut self) -> String {
        self.text.push_str("# EOF\n");
        self.text
    }
}

/// The labels every per-device series starts with: device, major, minor.
#[derive(Debug, Clone)]
pub struct DeviceLabels {
    pub device: String,
    pub major: String,
    pub minor: String,
}

impl DeviceLabels {
    /// Those of `dev`.
    pub fn of(dev: &BlockDevice) -> Self {
        Self {
            device: dev.name.clone(),
            major: dev.major.to_string(),
            minor: dev.minor.to_string(),
        }
    }

    /// As label pairs, with `more` after them.
    pub fn with<'a>(&'a self, more: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut v = vec![
            ("device", self.device.as_str()),
            ("major", self.major.as_str()),
            ("minor", self.minor.as_str()),
        ];
        v.extend_from_slice(more);
        v
    }
}

/// The `op` label of a direction, as diskstats names them.
pub fn op_label(dir: crate::latency::Dir) -> &'static str {
    use crate::latency::Dir;
    match dir {
        Dir::Read => "read",
        Dir::Write => "write",
        Dir::Discard => "discard",
        Dir::Flush => "flush",
    }
}

/// The `span` label: `total` (start to completion, what r_await averages)
/// or `device` (issue to completion).
pub fn span_label(span: crate::latency::Span) -> &'static str {
    match span {
        crate::latency::Span::Total => "total",
        crate::latency::Span::Device => "device",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(
            labels(&[("device", "sda"), ("model", "X \"Y\"")]),
            "{device=\"sda\",model=\"X \\\"Y\\\"\"}"
        );
    }

    #[test]
    fn lines_by_last_label_carry_every_label_and_count() {
        let mut out = Exposition::new();
        let le = LastLabel::new("le", ["0.5", "+Inf", "a\"b"]);
        out.samples_by_last_label("h_bucket", &[("device", "sda")], &le, [0, 12_345, u64::MAX]);
        assert_eq!(
            out.finish(),
            format!(
                "h_bucket{{device=\"sda\",le=\"0.5\"}} 0\nh_bucket{{device=\"sda\",le=\"+Inf\"}} 12345\nh_bucket{{device=\"sda\",le=\"a\\\"b\"}} {}\n# EOF\n",
                u64::MAX
            )
        );
    }

    #[test]
    fn numbers_are_written_as_the_text_format_reads_them() {
        assert_eq!(number(0.001), "0.001");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NAN), "NaN");
    }
}
