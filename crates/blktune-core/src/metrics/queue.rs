//! The queue settings of each device: `blktune_queue_info` (identity and the
//! active scheduler), `blktune_nr_requests`, `blktune_read_ahead_bytes`,
//! `blktune_hw_queue_depth` and `blktune_iosched_tunable`.
//!
//! `blktune_queue_info` adds `wwn`, `serial` and `model` with the udev
//! properties node_exporter reads (ID_WWN, ID_SERIAL_SHORT, ID_MODEL), sysfs
//! values where the udev database has none, and the active `scheduler`
//! (node_exporter has no scheduler metric).

use super::{DeviceLabels, Exposition, Kind};
use crate::device::BlockDevice;
use crate::export::StableIds;
use std::collections::BTreeMap;

/// What the settings families describe.
#[derive(Debug)]
pub struct QueueSnapshot<'a> {
    pub devices: &'a [&'a BlockDevice],
    pub ids: &'a BTreeMap<String, StableIds>,
    /// udev properties by device name (empty without a database).
    pub udev_env: &'a BTreeMap<String, BTreeMap<String, String>>,
}

/// How a settings family reads its value from a device.
type Setting = fn(&BlockDevice) -> Option<u64>;

/// The settings families of every device in `snapshot`.
pub fn render(out: &mut Exposition, snapshot: &QueueSnapshot<'_>) {
    let labels: Vec<DeviceLabels> = snapshot
        .devices
        .iter()
        .map(|d| DeviceLabels::of(d))
        .collect();
    out.family(
        "blktune_queue_info",
        Kind::Gauge,
        "Block device identity and active I/O scheduler (value always 1).",
    );
    for (d, l) in snapshot.devices.iter().zip(&labels) {
        let ids = snapshot.ids.get(&d.name).cloned().unwrap_or_default();
        let env = snapshot.udev_env.get(&d.name);
        let prop = |k: &str| env.and_then(|e| e.get(k)).filter(|v| !v.is_empty());
        let wwn = prop("ID_WWN").cloned().or(ids.wwn).unwrap_or_default();
        let serial = prop("ID_SERIAL_SHORT")
            .cloned()
            .or_else(|| d.serial.clone())
            .unwrap_or_default();
        let model = prop("ID_MODEL")
            .cloned()
            .or_else(|| d.model.clone())
            .unwrap_or_default();
        out.sample(
            "blktune_queue_info",
            &l.with(&[
                ("wwn", &wwn),
                ("serial", &serial),
                ("model", &model),
                ("scheduler", d.queue.active_label()),
            ]),
            1,
        );
    }
    let plain: [(&str, &str, Setting); 3] = [
        (
            "blktune_nr_requests",
            "queue/nr_requests: requests the scheduler may hold per hardware queue.",
            |d| d.queue.nr_requests,
        ),
        // Base units (promtool refuses `_kb`: "abbreviated units").
        (
            "blktune_read_ahead_bytes",
            "queue/read_ahead_kb x 1024: read-ahead in bytes.",
            |d| d.queue.read_ahead_kb.map(|k| k * 1024),
        ),
        (
            "blktune_hw_queue_depth",
            "Hardware queue depth (smallest mq/*/nr_tags): the most nr_requests under none.",
            |d| d.hw_queue_depth,
        ),
    ];
    for (name, help, value) in plain {
        out.family(name, Kind::Gauge, help);
        for (d, l) in snapshot.devices.iter().zip(&labels) {
            if let Some(v) = value(d) {
                out.sample(name, &l.with(&[]), v);
            }
        }
    }
    let name = "blktune_iosched_tunable";
    out.family(
        name,
        Kind::Gauge,
        "queue/iosched/<tunable> of the active scheduler, as the kernel reads it back (time tunables in ms or jiffies as the kernel keeps them; see the kernel's Documentation/block).",
    );
    for (d, l) in snapshot.devices.iter().zip(&labels) {
        for (tunable, value) in &d.queue.tunables {
            // Numbers only: a tunable that reads as text has no gauge.
            let Ok(v) = value.trim().parse::<i64>() else {
                continue;
            };
            out.sample(
                name,
                &l.with(&[("scheduler", d.queue.active_label()), ("tunable", tunable)]),
                v,
            );
        }
    }
}
