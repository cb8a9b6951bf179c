//! What a change did: the values that differ ([`diff`], [`ValueChange`]),
//! what the kernel stored otherwise ([`Stored`]), and the one-line labels
//! ([`Outcome::label`]) of status lines and chart markers.

use super::Wanted;
use crate::device::QueueSettings;
use crate::sched;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One value that changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueChange {
    /// `scheduler`, `nr_requests`, `read_ahead_kb`, `iosched/<name>` or a
    /// queue setting's name (`wbt_lat_usec`).
    pub attr: String,
    pub before: String,
    pub after: String,
}

/// A value the kernel stored as something else than what was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// `nr_requests`, `read_ahead_kb` or a tunable's name.
    pub attr: String,
    pub wrote: String,
    pub stored: String,
}

impl Stored {
    /// `kernel rounded read_expire 250 -> 252 ms`
    pub fn line(&self) -> String {
        sched::stored_note(&self.attr, &self.wrote, &self.stored)
    }
}

/// The result of a successful change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub device: String,
    /// Every value that differs between before and after, in write order.
    pub changes: Vec<ValueChange>,
    pub before: QueueSettings,
    pub after: QueueSettings,
    /// Time spent in the kernel's writes (a scheduler switch drains the queue).
    pub kernel_time: Duration,
    /// Values the kernel read back as something else than was written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stored: Vec<Stored>,
}

impl Outcome {
    /// `mq-deadline→kyber, nr_requests 256→64`, for status lines and chart
    /// markers. A tunable the old scheduler did not have (written after a
    /// switch, e.g. when a revert restores the original scheduler's values)
    /// reads `read_expire=500`, not `iosched/read_expire -→500`.
    pub fn label(&self) -> String {
        if self.changes.is_empty() {
            return "no change".into();
        }
        let label = self.label_changes();
        if self.stored.is_empty() {
            return label;
        }
        let notes: Vec<String> = self.stored.iter().map(Stored::line).collect();
        format!("{label} ({})", notes.join("; "))
    }

    fn label_changes(&self) -> String {
        self.changes
            .iter()
            .map(|c| {
                let short = c.attr.strip_prefix("iosched/");
                match short {
                    _ if c.attr == "scheduler" => format!("{}→{}", c.before, c.after),
                    Some(name) if c.before == "-" => format!("{name}={}", c.after),
                    _ => format!("{} {}→{}", c.attr, c.before, c.after),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The values of `want` the kernel stored as something else (jiffies
/// rounding, a page-rounded read-ahead, a raised nr_requests), as read back.
pub(super) fn stored_otherwise(want: &Wanted, after: &QueueSettings) -> Vec<Stored> {
    let mut out = Vec::new();
    let mut check = |attr: &str, wrote: String, got: Option<String>| {
        if let Some(got) = got.map(|g| g.trim().to_owned())
            && got != wrote.trim()
        {
            out.push(Stored {
                attr: attr.into(),
                wrote: wrote.trim().into(),
                stored: got,
            });
        }
    };
    for (name, value) in &want.tunables {
        check(name, value.clone(), after.tunables.get(name).cloned());
    }
    if let Some(n) = want.nr_requests {
        check(
            "nr_requests",
            n.to_string(),
            after.nr_requests.map(|n| n.to_string()),
        );
    }
    if let Some(n) = want.read_ahead_kb {
        check(
            "read_ahead_kb",
            n.to_string(),
            after.read_ahead_kb.map(|n| n.to_string()),
        );
    }
    for (name, value) in &want.knobs {
        check(name, value.clone(), after.knobs.get(name).cloned());
    }
    out
}

/// List tunables the caller asked for even when [`diff`] hides them (after a
/// switch, tunables of the new scheduler have no "before"): the user should
/// see every value they set.
pub(super) fn add_requested_tunables(
    changes: &mut Vec<ValueChange>,
    before: &QueueSettings,
    after: &QueueSettings,
    want: &Wanted,
) {
    for (name, _) in &want.tunables {
        let attr = format!("iosched/{name}");
        if changes.iter().any(|c| c.attr == attr) {
            continue;
        }
        let b = before.tunables.get(name);
        let a = after.tunables.get(name);
        if b == a {
            continue;
        }
        let entry = ValueChange {
            attr,
            before: b.cloned().unwrap_or_else(|| "-".into()),
            after: a.cloned().unwrap_or_else(|| "-".into()),
        };
        // Keep the write order: scheduler, tunables, nr_requests,
        // read_ahead_kb, the queue settings.
        let at = changes
            .iter()
            .position(|c| {
                c.attr == "nr_requests"
                    || c.attr == "read_ahead_kb"
                    || crate::sched::queue_knob(&c.attr).is_some()
            })
            .unwrap_or(changes.len());
        changes.insert(at, entry);
    }
}

/// Would applying `want` to a device in state `q` write nothing? (Every
/// requested value is already in force; a scheduler switch never is a no-op,
/// as it resets the others.)
pub fn is_no_op(q: &QueueSettings, want: &Wanted) -> bool {
    let active = q.scheduler.as_ref().map(|s| s.active.as_str());
    want.scheduler.as_deref().is_none_or(|s| Some(s) == active)
        && want
            .tunables
            .iter()
            .all(|(k, v)| q.tunables.get(k).map(|c| c.trim()) == Some(v.trim()))
        && want.nr_requests.is_none_or(|n| q.nr_requests == Some(n))
        && want
            .read_ahead_kb
            .is_none_or(|n| q.read_ahead_kb == Some(n))
        && want
            .knobs
            .iter()
            .all(|(k, v)| q.knobs.get(k).map(|c| c.trim()) == Some(v.trim()))
}

/// Every value that differs, in the safe write order.
pub fn diff(before: &QueueSettings, after: &QueueSettings) -> Vec<ValueChange> {
    let mut out = Vec::new();
    let mut push = |attr: &str, b: Option<String>, a: Option<String>| {
        if b != a {
            out.push(ValueChange {
                attr: attr.into(),
                before: b.unwrap_or_else(|| "-".into()),
                after: a.unwrap_or_else(|| "-".into()),
            });
        }
    };
    let b_s = before.scheduler.as_ref().map(|s| s.active.clone());
    let a_s = after.scheduler.as_ref().map(|s| s.active.clone());
    let switched = b_s != a_s;
    push("scheduler", b_s, a_s);
    // After a switch the old tunables are gone and the new ones are defaults:
    // only list tunables that both schedulers have or that were set.
    for (k, v) in &after.tunables {
        match before.tunables.get(k) {
            Some(old) if old != v => {
                push(&format!("iosched/{k}"), Some(old.clone()), Some(v.clone()))
            }
            None if !switched => push(&format!("iosched/{k}"), None, Some(v.clone())),
            _ => {}
        }
    }
    push(
        "nr_requests",
        before.nr_requests.map(|n| n.to_string()),
        after.nr_requests.map(|n| n.to_string()),
    );
    push(
        "read_ahead_kb",
        before.read_ahead_kb.map(|n| n.to_string()),
        after.read_ahead_kb.map(|n| n.to_string()),
    );
    // The queue settings next to the scheduler, in write order (a switch
    // to bfq shows as `wbt_lat_usec 2000→0`: it turned throttling off).
    for k in crate::sched::settable_knobs() {
        let (b, a) = (before.knobs.get(k.name), after.knobs.get(k.name));
        if a.is_some() {
            push(k.name, b.cloned(), a.cloned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_names_new_tunables_by_value_and_changed_ones_by_before_and_after() {
        let change = |attr: &str, before: &str, after: &str| ValueChange {
            attr: attr.into(),
            before: before.into(),
            after: after.into(),
        };
        let o = Outcome {
            device: "sda".into(),
            changes: vec![
                change("scheduler", "bfq", "mq-deadline"),
                change("iosched/read_expire", "-", "250"),
                change("iosched/fifo_batch", "16", "8"),
                change("nr_requests", "64", "256"),
            ],
            before: QueueSettings::default(),
            after: QueueSettings::default(),
            kernel_time: Duration::ZERO,
            stored: Vec::new(),
        };
        assert_eq!(
            o.label(),
            "bfq→mq-deadline, read_expire=250, iosched/fifo_batch 16→8, nr_requests 64→256"
        );
    }

    #[test]
    fn what_the_kernel_stored_otherwise_is_one_line_each() {
        let mut after = QueueSettings::default();
        after.tunables.insert("read_expire".into(), "252".into());
        after.tunables.insert("fifo_batch".into(), "8".into());
        after.read_ahead_kb = Some(4);
        let want = Wanted {
            tunables: vec![
                ("read_expire".into(), "250".into()),
                ("fifo_batch".into(), "8".into()),
            ],
            read_ahead_kb: Some(6),
            ..Wanted::default()
        };
        let lines: Vec<String> = stored_otherwise(&want, &after)
            .iter()
            .map(Stored::line)
            .collect();
        assert_eq!(
            lines,
            [
                "kernel rounded read_expire 250 -> 252 ms",
                "kernel rounded read_ahead_kb 6 -> 4 KiB"
            ]
        );
        let o = Outcome {
            device: "sda".into(),
            changes: vec![ValueChange {
                attr: "iosched/read_expire".into(),
                before: "500".into(),
                after: "252".into(),
            }],
            before: QueueSettings::default(),
            stored: stored_otherwise(&want, &after),
            after,
            kernel_time: Duration::ZERO,
        };
        assert_eq!(
            o.label(),
            "iosched/read_expire 500→252 (kernel rounded read_expire 250 -> 252 ms; \
             kernel rounded read_ahead_kb 6 -> 4 KiB)"
        );
    }
}
