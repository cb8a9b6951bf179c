//! The figures a comparison can be about: one name for each, shared by the
//! shoot-out's tables, its goals and the comparison engine.

use crate::latency::{Dir, KernelFigures, Span};
use serde::{Deserialize, Serialize};

/// A figure a table column or a goal refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Metric {
    #[serde(rename = "r/s")]
    RS,
    #[serde(rename = "w/s")]
    WS,
    #[serde(rename = "MB/s")]
    MbS,
    #[serde(rename = "r_await")]
    RAwait,
    #[serde(rename = "w_await")]
    WAwait,
    #[serde(rename = "aqu-sz")]
    AquSz,
    #[serde(rename = "util")]
    Util,
    /// Percentiles of the built-in load's reads (ms).
    #[serde(rename = "p50")]
    P50,
    #[serde(rename = "p99")]
    P99,
    #[serde(rename = "p99.9")]
    P999,
    /// 99th percentile of the built-in load's writes (ms).
    #[serde(rename = "w_p99")]
    WP99,
    /// The kernel's percentiles of all the device's reads, from their start
    /// to completion (ms; pooled over a scheduler's dwells).
    #[serde(rename = "kernel_r_p50")]
    KRP50,
    #[serde(rename = "kernel_r_p99")]
    KRP99,
    #[serde(rename = "kernel_r_p99.9")]
    KRP999,
    /// The same of its writes.
    #[serde(rename = "kernel_w_p50")]
    KWP50,
    #[serde(rename = "kernel_w_p99")]
    KWP99,
    #[serde(rename = "kernel_w_p99.9")]
    KWP999,
    /// The kernel's p99 of reads and writes on the device alone (issue to completion).
    #[serde(rename = "kernel_r_dev_p99")]
    KRDevP99,
    #[serde(rename = "kernel_w_dev_p99")]
    KWDevP99,
    /// I/Os per second of both directions (r/s + w/s): a load's rate.
    #[serde(rename = "iops")]
    Iops,
}

impl Metric {
    /// Columns of the table, in order.
    pub const ALL: [Metric; 11] = [
        Metric::RS,
        Metric::WS,
        Metric::MbS,
        Metric::RAwait,
        Metric::WAwait,
        Metric::AquSz,
        Metric::Util,
        Metric::P50,
        Metric::P99,
        Metric::P999,
        Metric::WP99,
    ];

    /// The kernel's figures, in the order of their table.
    pub const KERNEL: [Metric; 8] = [
        Metric::KRP50,
        Metric::KRP99,
        Metric::KRP999,
        Metric::KRDevP99,
        Metric::KWP50,
        Metric::KWP99,
        Metric::KWP999,
        Metric::KWDevP99,
    ];

    /// The figures a comparison reports, in its order: latencies (the
    /// kernel's percentiles, or the built-in load's own), then rates.
    pub const COMPARED: [Metric; 15] = [
        Metric::RAwait,
        Metric::WAwait,
        Metric::KRP50,
        Metric::KRP99,
        Metric::KRP999,
        Metric::KWP50,
        Metric::KWP99,
        Metric::KWP999,
        Metric::P50,
        Metric::P99,
        Metric::P999,
        Metric::WP99,
        Metric::RS,
        Metric::WS,
        Metric::MbS,
    ];

    /// Column header (the kernel's figures: `kernel r_p99`).
    pub fn label(self) -> &'static str {
        match self {
            Metric::RS => "r/s",
            Metric::WS => "w/s",
            Metric::MbS => "MB/s",
            Metric::RAwait => "r_await",
            Metric::WAwait => "w_await",
            Metric::AquSz => "aqu-sz",
            Metric::Util => "%util",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::WP99 => "w_p99",
            Metric::KRP50 => "kernel r_p50",
            Metric::KRP99 => "kernel r_p99",
            Metric::KRP999 => "kernel r_p99.9",
            Metric::KWP50 => "kernel w_p50",
            Metric::KWP99 => "kernel w_p99",
            Metric::KWP999 => "kernel w_p99.9",
            Metric::KRDevP99 => "kernel r_dev_p99",
            Metric::KWDevP99 => "kernel w_dev_p99",
            Metric::Iops => "IOPS",
        }
    }

    /// The span and direction of one of the kernel's figures.
    pub fn kernel_io(self) -> Option<(Span, Dir)> {
        Some(match self {
            Metric::KRP50 | Metric::KRP99 | Metric::KRP999 => (Span::Total, Dir::Read),
            Metric::KWP50 | Metric::KWP99 | Metric::KWP999 => (Span::Total, Dir::Write),
            Metric::KRDevP99 => (Span::Device, Dir::Read),
            Metric::KWDevP99 => (Span::Device, Dir::Write),
            _ => return None,
        })
    }

    /// The value among the kernel's figures (`None`: not one of them, no
    /// such I/O, or too few I/Os for the percentile).
    pub fn of_kernel(self, kernel_figures: &KernelFigures) -> Option<f64> {
        let (span, dir) = self.kernel_io()?;
        let l = kernel_figures.get(span, dir)?;
        match self {
            Metric::KRP50 | Metric::KWP50 => Some(l.p50),
            Metric::KRP999 | Metric::KWP999 => l.p999,
            _ => l.p99,
        }
    }

    /// Unit for sentences (`ms`, `MB/s`).
    pub fn unit(self) -> &'static str {
        match self {
            Metric::RS | Metric::WS | Metric::Iops => "/s",
            Metric::MbS => " MB/s",
            Metric::AquSz => "",
            Metric::Util => "%",
            _ => " ms",
        }
    }

    /// Is a smaller value better?
    pub fn lower_is_better(self) -> bool {
        !matches!(self, Metric::RS | Metric::WS | Metric::MbS | Metric::Iops)
    }
}
