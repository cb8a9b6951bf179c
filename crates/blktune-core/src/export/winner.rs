//! The winner of a shoot-out (or any chosen settings) as a udev rule.

use crate::device::BlockDevice;
use crate::export::{self, ExportError, ExportItem, RenderOptions, UdevDb};
use crate::os::SysRoot;
use crate::tuner::{self, Wanted};
use std::path::PathBuf;

/// Where and how [`export_winner`] writes the rule.
#[derive(Debug, Clone, Default)]
pub struct WinnerExport {
    /// The rules file; `None`: [`crate::export::DEFAULT_RULES_PATH`].
    pub output: Option<PathBuf>,
    /// Replace an existing file (otherwise it is refused, never clobbered).
    pub force: bool,
    /// What the shoot-out measured, for the rule's header.
    pub measured: Option<String>,
    /// The udev database; `None`: [`UdevDb::DEFAULT_DIR`] on the real /sys, none on a fake tree.
    pub udev_db: Option<PathBuf>,
    /// The schedulers the device offered when the comparison began (the
    /// winner ran on one of them); the rule is checked against these, not
    /// against the line read after the restore. `None`: the line read now.
    pub offered: Option<Vec<String>>,
}

/// Write the winner of a shoot-out on `device` as a udev rule (default match
/// strategy: `id` where the device has one, else `kernel`), atomically and
/// without clobbering unless `to.force`; returns what was written and how to
/// apply it, one line each (warnings first).
pub fn export_winner(
    root: &SysRoot,
    device: &str,
    winner: &Wanted,
    to: &WinnerExport,
) -> Result<String, ExportError> {
    let dev = tuner::resolve(root, device)?;
    let mut d = BlockDevice::read(root, &dev);
    if let (Some(offered), Some(st)) = (&to.offered, d.queue.scheduler.as_mut()) {
        st.available = offered.clone();
    }
    let host_devices = crate::device::discover(root).unwrap_or_default();
    let hz = crate::kernel_hz::KernelHz::read(root, &host_devices);
    // The live settings are the originals again: the winner replaces the
    // scheduler and drops what the switch resets (see `with_switch_defaults`).
    let settings = export::with_switch_defaults(&export::live_settings(&d, &hz), winner);
    // The real database describes the real devices: none for a fake tree.
    let db = match &to.udev_db {
        Some(dir) => UdevDb::new(dir),
        None if root.sysfs() == std::path::Path::new("/sys") => UdevDb::default(),
        None => UdevDb::none(),
    };
    let env = db.properties(d.major, d.minor);
    let mut item = ExportItem::new(d, settings, env);
    item.measured = to.measured.clone();
    let path = to
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(export::DEFAULT_RULES_PATH));
    // `-` is standard output: no file name for the header's install line.
    let to_stdout = crate::atomic_file::is_stdio(&path);
    let opts = RenderOptions {
        output: (!to_stdout).then(|| path.clone()),
        host_udev_env: db.properties_of(&host_devices),
        host_devices,
        ..RenderOptions::new(&crate::host::HostInfo::read(root).hostname)
    };
    let r = export::render(&[item], &opts)?;
    if r.uses_udev_env && !to_stdout && !export::sorts_after_persistent_storage(&path) {
        return Err(ExportError::BadPath {
            path: path.display().to_string(),
            why: format!(
                "the rule matches on ENV{{ID_*}}, set by {}; the file name must sort after it (e.g. 61-blktune.rules)",
                export::PERSISTENT_STORAGE_RULES
            ),
        });
    }
    export::write_rules(&path, &r.text, to.force)?;
    let mut out: Vec<String> = r.warnings.iter().map(|w| format!("warning: {w}")).collect();
    let shown = if to_stdout {
        "standard output".to_string()
    } else {
        path.display().to_string()
    };
    out.push(format!(
        "wrote the winner ({}) to {shown}; apply with: sudo udevadm control --reload && {}",
        winner.summary(),
        export::trigger_command(&[device.to_string()])
    ));
    Ok(out.join("\n"))
}
