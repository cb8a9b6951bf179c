//! Which names may reach a path: a device name must be an entry of
//! `<sysfs>/block`, tunable and scheduler names have the kernel's shape.

use std::fmt;

/// A block device name that was found under `<sysfs>/block` (a whole device).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceName(pub(super) String);

impl DeviceName {
    /// The name as the kernel spells it (`sda`, `nvme0n1`, `loop3`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DeviceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Is `name` shaped like a kernel block device name? (No path tricks.)
///
/// Kernel names use letters, digits and `-_.:!+` (sysfs spells `/` as `!`,
/// e.g. `cciss!c0d0`). `.` and `..` alone are refused.
pub fn is_plausible_device_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:!+".contains(&b))
}

/// Is `name` shaped like an iosched tunable file name?
pub fn is_plausible_tunable_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Is `name` shaped like an I/O scheduler's name (`mq-deadline`, `bfq`):
/// a short identifier, as the kernel's elevators are named?
pub fn is_plausible_scheduler_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_".contains(&b))
}
