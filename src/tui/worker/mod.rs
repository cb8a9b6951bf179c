//! What runs off the UI thread: the parts of the live worker that stand on
//! their own. The live source itself (sampler, tuner, probe, export writer)
//! is [`super::source`]; the replay source is [`super::replay_source`].
//!
//! - [`shootout`]: the shoot-out runner (its own request and feed types)
//! - [`recorder`]: `R`, recording the live session to a file
//! - [`latency`]: the kernel tracer's hook and the histograms it sends
//! - [`procio`]: who does the I/O (the `i` panel, sampled only while shown)
//!   and where it goes (placement, on hot-plug)

pub mod latency;
pub mod procio;
pub mod recorder;
pub mod shootout;
