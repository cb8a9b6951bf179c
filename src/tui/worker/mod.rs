//! What runs off the UI thread, and what it says to the app.
//!
//! - [`protocol`]: the one-way messages: [`protocol::Feed`] from a worker,
//!   [`protocol::Control`] from the app
//! - [`live`]: the live worker (sampler, tuner, probe, export writer), which
//!   starts the parts below
//! - [`replay`]: the replay worker, playing a recording into the same feed
//! - [`shootout`]: the shoot-out runner (its own request and feed types)
//! - [`ab`]: the live A/B of a change (`A`), alternating its two configurations
//! - [`recorder`]: `R`, recording the live session to a file
//! - [`latency`]: the kernel tracer's hook and the histograms it sends
//! - [`procio`]: who does the I/O (the `i` panel, sampled only while shown)
//!   and where it goes (placement, on hot-plug)

pub mod ab;
pub mod latency;
pub mod live;
pub mod procio;
pub mod protocol;
pub mod recorder;
pub mod replay;
pub mod shootout;
