//! What one traced window saw (`list --format openmetrics --latency DUR`),
//! as gauges of that window: I/O count, mean and percentiles per device, op
//! and span.
//!
//! Not a histogram: each run of a metrics timer writes a fresh window, so a
//! histogram's `_count`, `_sum` and buckets would go down between scrapes,
//! and Prometheus's `rate()` and `histogram_quantile(rate(...))` read that as
//! counter resets. A gauge of a window means what it says at every scrape.
//! (`blktune exporter` keeps the kernel's histograms cumulative instead.)
//!
//! A percentile is only written when it rests on enough I/Os (the p99 on
//! [`MIN_IOS_FOR_P99`], the p99.9 on [`MIN_IOS_FOR_P999`]): no series then,
//! rather than one of the slowest few passed off as a p99.

use super::{DeviceLabels, Exposition, Kind, op_label, span_label};
use crate::device::BlockDevice;
use crate::latency::{DevId, Dir, Interval, Span};
use crate::latency::{MIN_IOS_FOR_P99, MIN_IOS_FOR_P999};
use std::time::Duration;

/// How a window family reads its figure (ns) from a histogram.
type Figure = fn(&crate::latency::hist::Hist) -> Option<f64>;

/// The window's figures of every device in `devices`.
pub fn render(
    out: &mut Exposition,
    devices: &[&BlockDevice],
    interval: &Interval,
    length: Duration,
) {
    out.family(
        "blktune_io_window_seconds",
        Kind::Gauge,
        "Length of the traced window the blktune_io_window_* gauges describe.",
    );
    out.sample("blktune_io_window_seconds", &[], length.as_secs_f64());
    out.family(
        "blktune_io_window_lost_ios",
        Kind::Gauge,
        "Completions in the window that the kernel could not count (no room for a new histogram), of any device.",
    );
    out.sample("blktune_io_window_lost_ios", &[], interval.lost);

    // (device labels, op, span, the window's histogram) of every device and op.
    let empty = crate::latency::hist::Hist::empty();
    let labels: Vec<DeviceLabels> = devices.iter().map(|d| DeviceLabels::of(d)).collect();
    let mut rows = Vec::new();
    for (d, l) in devices.iter().zip(&labels) {
        let id = DevId {
            major: d.major,
            minor: d.minor,
        };
        let dev = interval.device(id, d.diskseq);
        for span in [Span::Total, Span::Device] {
            for dir in Dir::ALL {
                let h = dev
                    .and_then(|x| x.hists.get(&(span, dir)))
                    .unwrap_or(&empty);
                rows.push((l, op_label(dir), span_label(span), h));
            }
        }
    }
    out.family(
        "blktune_io_window_ios",
        Kind::Gauge,
        "I/Os completed in the window (span total: from start; device: from issue).",
    );
    for (l, op, span, h) in &rows {
        out.sample(
            "blktune_io_window_ios",
            &l.with(&[("op", op), ("span", span)]),
            h.count(),
        );
    }
    let figures: [(&str, &str, u64, Figure); 5] = [
        (
            "blktune_io_window_latency_mean_seconds",
            "Mean I/O latency in the window, as the kernel measured it.",
            1,
            |h| h.mean_ns(),
        ),
        (
            "blktune_io_window_latency_p50_seconds",
            "Median I/O latency in the window (kernel histogram, slots 1.6% wide).",
            1,
            |h| h.quantile_ns(0.5),
        ),
        (
            "blktune_io_window_latency_p90_seconds",
            "90th percentile of I/O latency in the window.",
            1,
            |h| h.quantile_ns(0.9),
        ),
        (
            "blktune_io_window_latency_p99_seconds",
            "99th percentile of I/O latency in the window (only with 100 I/Os or more).",
            MIN_IOS_FOR_P99,
            |h| h.quantile_ns(0.99),
        ),
        (
            "blktune_io_window_latency_p999_seconds",
            "99.9th percentile of I/O latency in the window (only with 1000 I/Os or more).",
            MIN_IOS_FOR_P999,
            |h| h.quantile_ns(0.999),
        ),
    ];
    for (name, help, min_ios, figure) in figures {
        out.family(name, Kind::Gauge, help);
        for (l, op, span, h) in &rows {
            if h.count() < min_ios {
                continue;
            }
            if let Some(ns) = figure(h) {
                out.sample(name, &l.with(&[("op", op), ("span", span)]), ns / 1e9);
            }
        }
    }
}
