//! Reader for the udev database (`/run/udev/data/b<major>:<minor>`), where
//! udevd keeps each device's properties as `E:KEY=value` lines (systemd
//! `src/libsystemd/sd-device/device-private.c`, `device_update_db`). Hosts
//! without a running udevd have no database; every lookup is then empty.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The udev database directory; point it at a fake in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdevDb {
    /// `None`: no database (a fake or captured sysfs tree, where the real
    /// database would describe other devices with the same numbers).
    dir: Option<PathBuf>,
}

impl Default for UdevDb {
    fn default() -> Self {
        Self::new(Self::DEFAULT_DIR)
    }
}

impl UdevDb {
    /// Where udevd keeps the database.
    pub const DEFAULT_DIR: &'static str = "/run/udev/data";

    /// A database in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Some(dir.into()),
        }
    }

    /// No database: every lookup is empty.
    pub fn none() -> Self {
        Self { dir: None }
    }

    /// The directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file of a block device.
    fn file_of(&self, major: u32, minor: u32) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("b{major}:{minor}")))
    }

    /// Does the database have an entry for this device?
    pub fn has_entry(&self, major: u32, minor: u32) -> bool {
        self.file_of(major, minor).is_some_and(|f| f.exists())
    }

    /// The properties of a block device; empty when it has no entry.
    pub fn properties(&self, major: u32, minor: u32) -> BTreeMap<String, String> {
        self.file_of(major, minor)
            // An entry is a few hundred bytes; a bigger one is not trusted.
            .and_then(|f| crate::text::read_capped(&f, 1 << 20).ok())
            .map(|t| parse_db(&t))
            .unwrap_or_default()
    }

    /// The properties of every device that has an entry, by device name.
    pub fn properties_of(
        &self,
        devices: &[crate::device::BlockDevice],
    ) -> BTreeMap<String, BTreeMap<String, String>> {
        devices
            .iter()
            .filter(|d| self.has_entry(d.major, d.minor))
            .map(|d| (d.name.clone(), self.properties(d.major, d.minor)))
            .collect()
    }
}

/// The `E:KEY=value` lines of a database file. Other lines (`S:` links,
/// `I:` init time, `G:` tags) are not properties.
pub fn parse_db(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("E:")?.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_come_from_e_lines_only() {
        let p = parse_db(
            "S:disk/by-id/wwn-0x5000\nI:123\nE:ID_WWN=0x5000c500a1b2c3d4\nE:ID_SERIAL=ST4000_Z1Z2\nE:EMPTY=\nG:systemd\n",
        );
        assert_eq!(
            p.get("ID_WWN").map(String::as_str),
            Some("0x5000c500a1b2c3d4")
        );
        assert_eq!(p.get("ID_SERIAL").map(String::as_str), Some("ST4000_Z1Z2"));
        assert_eq!(p.get("EMPTY").map(String::as_str), Some(""));
        assert_eq!(p.len(), 3);
    }

    #[test]
    fn missing_database_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let db = UdevDb::new(dir.path().join("nope"));
        assert!(db.properties(8, 0).is_empty());
        std::fs::create_dir_all(dir.path().join("nope")).unwrap();
        std::fs::write(dir.path().join("nope/b8:0"), "E:ID_SERIAL=x\n").unwrap();
        assert_eq!(db.properties(8, 0).len(), 1);
        assert!(db.properties(8, 16).is_empty());
        assert!(db.has_entry(8, 0) && !db.has_entry(8, 16));
        assert!(UdevDb::none().properties(8, 0).is_empty());
        assert!(!UdevDb::none().has_entry(8, 0));
    }
}
