//! What a device shows udev for a rule's sysfs match keys, as discovery read
//! it: shared by the exporter (which other devices a rule also sets) and
//! `--check` (which device has the id a line names).

use crate::device::BlockDevice;

/// The value `key` (`KERNEL`, `ATTRS{wwid}`, `ATTR{dm/uuid}`, ...) reads on
/// `device`: `Some(None)` when the device lacks the attribute (udev then
/// fails the match, whatever the operator), `None` for a key this does not
/// know (`ENV{...}` and the rest).
pub(super) fn sysfs_value(key: &str, device: &BlockDevice) -> Option<Option<String>> {
    let bool_attr = |b: bool| Some(if b { "1" } else { "0" }.to_string());
    let stack = device.stack.as_ref();
    Some(match key {
        "KERNEL" => Some(device.name.clone()),
        "ATTR{queue/rotational}" => device.rotational.and_then(bool_attr),
        // Not in BlockDevice: assume not zoned (errs on the side of naming a device).
        "ATTR{queue/zoned}" => Some("none".into()),
        "ATTRS{model}" => device.model.clone(),
        "ATTRS{vendor}" => device.vendor.clone(),
        "ATTRS{wwid}" => device.wwid.clone(),
        "ATTRS{serial}" => device.serial.clone(),
        "ATTR{nguid}" => device.nguid.clone(),
        "ATTR{eui}" => device.eui.clone(),
        "ATTR{dm/uuid}" | "ATTR{md/uuid}" => stack.and_then(|s| s.uuid.clone()),
        "ATTR{dm/name}" => stack.and_then(|s| s.name.clone()),
        _ => return None,
    })
}
