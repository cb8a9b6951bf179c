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

    /// The device's symlinks under /dev (`S:` lines: `disk/by-id/wwn-0x5000...`),
    /// in the order of the file; empty when it has no entry.
    pub fn links(&self, major: u32, minor: u32) -> Vec<String> {
        self.file_of(major, minor)
            .and_then(|f| crate::text::read_capped(&f, 1 << 20).ok())
            .map(|t| parse_links(&t))
            .unwrap_or_default()
    }

    /// Complete the stacks' names and uuids from the database where sysfs
    /// has none (an md array's name is udev's `MD_DEVNAME` only).
    pub fn fill_stacks(&self, devices: &mut [crate::device::BlockDevice]) {
        for d in devices.iter_mut() {
            if d.stack.is_none() || !self.has_entry(d.major, d.minor) {
                continue;
            }
            let env = self.properties(d.major, d.minor);
            if let Some(s) = &mut d.stack {
                s.name_from_udev(&env);
            }
        }
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

/// The `S:` lines of a database file: symlinks relative to /dev.
pub fn parse_links(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("S:"))
        .map(str::to_owned)
        .collect()
}

/// The ids a udev rule can match a device on, as `list --json` and the
/// metrics show them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StableIds {
    /// `ID_WWN_WITH_EXTENSION` (what the by-id `wwn-` link uses; some
    /// multi-LUN arrays share a bare `ID_WWN`), else `ID_WWN`, else sysfs `wwid`.
    pub wwn: Option<String>,
    /// `ID_SERIAL` from the udev database.
    pub id_serial: Option<String>,
    /// The preferred `/dev/disk/by-id/` link: `wwn-` first, then the ones
    /// of a stack's uuid (`dm-uuid-`, `md-uuid-`), then the others by name.
    pub by_id: Option<String>,
}

impl StableIds {
    /// The ids of `d` from its udev properties `env`, its `/dev` links (`S:`
    /// lines or a scan of /dev/disk/by-id) and sysfs.
    pub fn of(
        d: &crate::device::BlockDevice,
        env: &BTreeMap<String, String>,
        links: &[String],
    ) -> Self {
        let prop = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
        let mut by_id: Vec<&str> = links
            .iter()
            .filter_map(|l| l.strip_prefix("disk/by-id/"))
            .filter(|l| !l.is_empty() && !l.contains('/'))
            .collect();
        let rank = |l: &str| {
            if l.starts_with("wwn-") {
                0
            } else if l.starts_with("dm-uuid-") || l.starts_with("md-uuid-") {
                1
            } else {
                2
            }
        };
        by_id.sort_by_key(|l| (rank(l), *l));
        Self {
            wwn: prop("ID_WWN_WITH_EXTENSION")
                .or_else(|| prop("ID_WWN"))
                .or_else(|| d.wwid.clone()),
            id_serial: prop("ID_SERIAL"),
            by_id: by_id.first().map(|l| format!("/dev/disk/by-id/{l}")),
        }
    }
}

/// The links in `dir` (normally /dev/disk/by-id) that point at the device
/// `name`, as `disk/by-id/<link>`: for hosts where udevd keeps no database
/// but the links exist. Only reads.
pub fn scan_by_id(dir: &Path, name: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            std::fs::read_link(e.path())
                .ok()
                .is_some_and(|t| t.file_name().is_some_and(|f| f == name))
        })
        .filter_map(|e| e.file_name().to_str().map(|n| format!("disk/by-id/{n}")))
        .collect();
    out.sort();
    out
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
    fn stable_ids_prefer_the_wwn_with_extension_and_the_wwn_link() {
        let text = "S:disk/by-id/scsi-3600a098038303053\nS:disk/by-id/wwn-0x600a098038303053-ext1\n\
                    S:disk/by-path/pci-0000:00:1f.2\nE:ID_WWN=0x600a098038303053\n\
                    E:ID_WWN_WITH_EXTENSION=0x600a098038303053-ext1\nE:ID_SERIAL=3600a0980\n";
        let dir = tempfile::tempdir().unwrap();
        let t = crate::fake::FakeTree::new(dir.path()).unwrap();
        t.add(&crate::fake::FakeDisk::new("sdc").ids(None, Some("naa.600a")))
            .unwrap();
        let root = t.root();
        let d = crate::device::BlockDevice::read(&root, &root.device("sdc").unwrap());
        let ids = StableIds::of(&d, &parse_db(text), &parse_links(text));
        assert_eq!(ids.wwn.as_deref(), Some("0x600a098038303053-ext1"));
        assert_eq!(ids.id_serial.as_deref(), Some("3600a0980"));
        assert_eq!(
            ids.by_id.as_deref(),
            Some("/dev/disk/by-id/wwn-0x600a098038303053-ext1")
        );
        // Without the extension: ID_WWN; without the database: sysfs wwid.
        let ids = StableIds::of(&d, &parse_db("E:ID_WWN=0x5000\n"), &[]);
        assert_eq!(ids.wwn.as_deref(), Some("0x5000"));
        assert_eq!(ids.by_id, None);
        let ids = StableIds::of(&d, &BTreeMap::new(), &[]);
        assert_eq!(ids.wwn.as_deref(), Some("naa.600a"));
        assert_eq!(ids.id_serial, None);
    }

    #[test]
    fn by_id_links_are_found_by_their_target() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("../../sdb", dir.path().join("ata-X_123")).unwrap();
        std::os::unix::fs::symlink("../../sdb", dir.path().join("wwn-0x5")).unwrap();
        std::os::unix::fs::symlink("../../sdb1", dir.path().join("wwn-0x5-part1")).unwrap();
        assert_eq!(
            scan_by_id(dir.path(), "sdb"),
            ["disk/by-id/ata-X_123", "disk/by-id/wwn-0x5"]
        );
        assert!(scan_by_id(&dir.path().join("nope"), "sdb").is_empty());
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
