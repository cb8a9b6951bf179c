//! The request: what a device's queue should be set to ([`Wanted`]). A leaf
//! module: the tuner applies it, the journal keeps originals as one, the
//! shoot-out and recordings name settings with it.

use crate::device::QueueSettings;
use serde::{Deserialize, Serialize};

/// A request: the settings wanted for a device (beside
/// [`QueueSettings`], the settings it has). `None` (or an absent tunable)
/// means "leave as it is". Also what the journal, recordings and the
/// shoot-out keep as a device's settings to put back; the type's name is
/// in no file format (serde writes only the fields).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Wanted {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// Tunables of the target scheduler, applied in this order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tunables: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead_kb: Option<u64>,
    /// Queue settings next to the scheduler (`wbt_lat_usec`, `nomerges`,
    /// ...: [`crate::sched::settable_knobs`]), written last, in this order.
    /// Absent in journals and recordings written before they existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knobs: Vec<(String, String)>,
}

impl Wanted {
    /// Every current setting of a device, to restore it later.
    pub fn snapshot_of(q: &QueueSettings) -> Self {
        Self {
            scheduler: q.scheduler.as_ref().map(|s| s.active.clone()),
            tunables: q
                .tunables
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            nr_requests: q.scheduler.as_ref().and(q.nr_requests),
            read_ahead_kb: q.read_ahead_kb,
            // The settable ones, in the catalogue's (the write) order.
            knobs: crate::sched::settable_knobs()
                .filter_map(|k| Some((k.name.to_string(), q.knobs.get(k.name)?.clone())))
                .collect(),
        }
    }

    /// Does this ask for nothing?
    pub fn is_empty(&self) -> bool {
        self.scheduler.is_none()
            && self.tunables.is_empty()
            && self.nr_requests.is_none()
            && self.read_ahead_kb.is_none()
            && self.knobs.is_empty()
    }

    /// One-line summary: `scheduler=kyber nr_requests=64`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = &self.scheduler {
            parts.push(format!("scheduler={s}"));
        }
        for (k, v) in &self.tunables {
            parts.push(format!("{k}={v}"));
        }
        if let Some(n) = self.nr_requests {
            parts.push(format!("nr_requests={n}"));
        }
        if let Some(n) = self.read_ahead_kb {
            parts.push(format!("read_ahead_kb={n}"));
        }
        for (k, v) in &self.knobs {
            parts.push(format!("{k}={v}"));
        }
        parts.join(" ")
    }
}
