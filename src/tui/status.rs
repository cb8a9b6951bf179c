//! The status line's message: what the app and the dialogs say.

/// How a status message reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusKind {
    Info,
    Done,
    Error,
}

/// Seconds (of the samples' clock) an info or done message stays on the
/// status line; an error stays until another message replaces it or the
/// selection moves to another device.
pub const STATUS_SECS: f64 = 15.0;

/// The status line.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub text: String,
    pub kind: StatusKind,
    /// When it was said, on the samples' clock (`App::now`).
    pub at: f64,
}

impl Status {
    /// Has it been up long enough to go, at `now`? A replay's seek moves the
    /// clock back as well as forward.
    pub fn expired(&self, now: f64) -> bool {
        self.kind != StatusKind::Error && (now - self.at).abs() > STATUS_SECS
    }
}
