//! What a sampler reads besides diskstats, and how it hears of hot-plug.

use super::FIRST_ROWS;

/// What a [`Sampler`] reads besides diskstats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplerOptions {
    /// Only these whole devices (`blktune watch sda`); `None`: every one.
    pub only: Option<Vec<String>>,
    /// Read identity (model, ids, holders, queue depth) and tunables, as the
    /// TUI and recordings need; `false` reads only `size` and the settings a
    /// row shows (scheduler, nr_requests, read_ahead_kb), as `watch` needs.
    pub identity: bool,
    /// How hot-plug is heard.
    pub hotplug: HotPlug,
    /// With `identity`: read only this many rows in full before the first
    /// snapshot (in the order a table shows them) and the rest over the next
    /// ticks, [`FILL_PER_TICK`] at a time; `None` reads every one at once
    /// (recordings, whose first facts must be whole).
    pub first_rows: Option<usize>,
    /// With `first_rows`: this device is read in full before the first
    /// snapshot too, wherever its row is (the TUI's `--device`, the one a
    /// change key acts on at once).
    pub first: Option<String>,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        Self {
            only: None,
            identity: true,
            hotplug: HotPlug::Auto,
            first_rows: None,
            first: None,
        }
    }
}

impl SamplerOptions {
    /// For a screen: everything, but first the rows it can show.
    pub fn screen() -> Self {
        Self {
            first_rows: Some(FIRST_ROWS),
            ..Self::default()
        }
    }
}

/// How the sampler learns that a device came, went or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotPlug {
    /// The uevent socket on the real machine, [`HotPlug::Poll`] on a fake
    /// tree or where the socket cannot be opened.
    Auto,
    /// Compare diskstats names and every device's `size` each tick.
    Poll,
    /// Only events given to [`Sampler::push_uevent`] (tests, benchmarks).
    Manual,
}
