//! The value editor (`n`, `r`, Enter on a tunable or a queue setting in the
//! `t` list): what can be edited, the
//! check run on every key press, and its keys. The check is the scheduler
//! catalogue's ([`blktune_core::sched`]), the same the tuner runs again
//! before writing, so the screen says "why not" in the CLI's words while
//! the value is typed.

use super::{Ctx, Overlay, Reply};
use crate::tui::command::Action;
use crate::tui::status::StatusKind;
use blktune_core::device::BlockDevice;
use blktune_core::sched::{self, nr_requests_max};
use blktune_core::tuner::Wanted;

/// What bounds nr_requests on a device now: its active scheduler and its
/// hardware queue depth, both from the device snapshot (the screen never
/// reads sysfs). The same limit the tuner enforces before writing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NrLimit {
    pub scheduler: String,
    pub hw_depth: Option<u64>,
    /// What bounds max_sectors_kb: the device's `max_hw_sectors_kb`.
    pub max_hw_sectors_kb: Option<u64>,
}

impl NrLimit {
    /// The limit of a device as the last snapshot shows it.
    pub fn of(d: &BlockDevice) -> Self {
        Self {
            scheduler: d.queue.active_label().to_string(),
            hw_depth: d.hw_queue_depth,
            max_hw_sectors_kb: d
                .queue
                .knobs
                .get("max_hw_sectors_kb")
                .and_then(|v| v.parse().ok()),
        }
    }

    /// The largest value the kernel takes ([`nr_requests_max`]).
    pub fn max(&self) -> u64 {
        nr_requests_max(&self.scheduler, self.hw_depth)
    }

    fn under_none(&self) -> bool {
        self.scheduler == "none"
    }

    /// `4 to 128 under none`, or `4 to 2048`.
    fn range(&self) -> String {
        sched::nr_requests_range(&self.scheduler, self.hw_depth)
    }

    /// The editor's line on what may be typed.
    pub fn hint(&self) -> String {
        match self.hw_depth {
            Some(_) if self.under_none() => {
                format!("{} (hardware queue depth)", self.range())
            }
            None if self.under_none() => format!(
                "{}; under none at most the hardware queue depth",
                self.range()
            ),
            _ => self.range(),
        }
    }
}

/// A value that can be edited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    NrRequests,
    ReadAheadKb,
    /// `queue/iosched/<name>` of the active scheduler.
    Tunable(String),
    /// `queue/<name>`: a queue setting next to the scheduler
    /// (`wbt_lat_usec`, ...: [`sched::settable_knobs`]).
    Knob(String),
}

impl Field {
    /// The attribute name as sysfs spells it.
    pub fn label(&self) -> &str {
        match self {
            Field::NrRequests => "nr_requests",
            Field::ReadAheadKb => "read_ahead_kb",
            Field::Tunable(n) | Field::Knob(n) => n,
        }
    }
}

/// An open value editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Editor {
    pub device: String,
    /// The device's `diskseq` when the editor opened (Enter checks it).
    pub diskseq: Option<u64>,
    pub field: Field,
    /// The value now in sysfs.
    pub current: String,
    /// What has been typed.
    pub input: String,
    /// The input is still the prefilled value: the first typed character
    /// replaces it instead of being appended (`2000000` then `1000000` must
    /// not become `20000001000000`).
    pub prefilled: bool,
}

/// Longest input accepted (a 64-bit number and a sign).
pub const MAX_INPUT: usize = 20;

impl Editor {
    /// An editor of `field` on `device`, prefilled with the value now in sysfs.
    pub fn new(device: &str, diskseq: Option<u64>, field: Field, current: String) -> Self {
        Self {
            device: device.to_string(),
            diskseq,
            field,
            input: current.clone(),
            current,
            prefilled: true,
        }
    }

    /// Check the typed value against `nr` (for nr_requests) and the page
    /// size (for read_ahead_kb); `Ok` holds the settings to apply.
    pub fn check(&self, page_kb: u64, nr: &NrLimit) -> Result<Wanted, String> {
        check(&self.field, &self.input, page_kb, nr)
    }
}

impl Editor {
    /// Take an action (Esc was handled by the caller); `None` closes.
    pub fn on_action(mut self, a: Action, ctx: &Ctx, reply: &mut Reply) -> Option<Overlay> {
        match a {
            Action::Input(c) => {
                if std::mem::take(&mut self.prefilled) {
                    self.input.clear();
                }
                if self.input.len() < MAX_INPUT {
                    self.input.push(c);
                }
            }
            Action::Backspace => {
                // Backspace edits the prefilled value (1024 → 102 → 1025).
                self.prefilled = false;
                self.input.pop();
            }
            Action::ClearInput => {
                self.prefilled = false;
                self.input.clear();
            }
            Action::Confirm => match self.check(ctx.page_kb, &ctx.nr) {
                Err(why) => reply.say(
                    StatusKind::Error,
                    format!("'{}': {why}; nothing was changed", self.device),
                ),
                Ok(_) if self.input.trim() == self.current => {
                    reply.say(
                        StatusKind::Info,
                        format!("'{}': {} unchanged", self.device, self.field.label()),
                    );
                    return None;
                }
                Ok(s) => {
                    reply.say(
                        StatusKind::Info,
                        format!(
                            "applying: {} {} → {}…",
                            self.device,
                            self.field.label(),
                            self.input.trim()
                        ),
                    );
                    reply.change(&self.device, self.diskseq, s);
                    return None;
                }
            },
            _ => {}
        }
        Some(Overlay::Edit(self))
    }
}

/// Check `input` for `field`: the reason it would be refused, or the settings.
pub fn check(field: &Field, input: &str, page_kb: u64, nr: &NrLimit) -> Result<Wanted, String> {
    let v = input.trim();
    if v.is_empty() {
        return Err("type a number".into());
    }
    let what = field.label();
    let whole = |v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("{what} '{v}' is not a whole number"))
    };
    match field {
        Field::NrRequests => {
            let n = whole(v)?;
            sched::check_nr_requests(n, &nr.scheduler, nr.hw_depth).map_err(|e| e.to_string())?;
            Ok(Wanted {
                nr_requests: Some(n),
                ..Wanted::default()
            })
        }
        Field::ReadAheadKb => {
            let n = whole(v)?;
            sched::check_read_ahead_kb(n, page_kb).map_err(|e| e.to_string())?;
            Ok(Wanted {
                read_ahead_kb: Some(n),
                ..Wanted::default()
            })
        }
        Field::Tunable(name) => {
            let n = sched::check_tunable(name, v).map_err(|e| e.to_string())?;
            Ok(Wanted {
                tunables: vec![(name.clone(), n)],
                ..Wanted::default()
            })
        }
        Field::Knob(name) => {
            let n = sched::check_knob(name, v, nr.max_hw_sectors_kb, page_kb)
                .map_err(|e| e.to_string())?;
            Ok(Wanted {
                knobs: vec![(name.clone(), n)],
                ..Wanted::default()
            })
        }
    }
}

/// The editor's line on what may be typed for a queue setting: its help,
/// for max_sectors_kb its range on this device (`page_kb` to the
/// hardware's top).
pub fn knob_hint(name: &str, nr: &NrLimit, page_kb: u64) -> String {
    match (name, nr.max_hw_sectors_kb) {
        ("max_sectors_kb", Some(hw)) => {
            format!("KiB: 0 (the kernel's default) or {page_kb} to {hw}")
        }
        _ => sched::knob_help(name).to_string(),
    }
}

/// What a switch of `d` to `choice` does to nr_requests, for the picker:
/// the kernel resets it on every switch (`elevator_switch()`), under `none`
/// to the hardware queue depth, which also lowers a value above it (seen on
/// a loop device: kyber with 512, switched to none, reads back 128).
pub fn switch_note(d: &BlockDevice, choice: &str) -> String {
    match (choice, d.hw_queue_depth) {
        ("none", Some(depth)) => {
            let now = d
                .queue
                .nr_requests
                .map_or_else(|| "-".into(), |n| n.to_string());
            format!("the switch sets nr_requests {now}→{depth} (the hardware queue depth)")
        }
        _ => "the switch resets nr_requests and the tunables to the kernel's defaults".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(field: &Field, input: &str, page_kb: u64) -> Result<Wanted, String> {
        super::check(field, input, page_kb, &NrLimit::default())
    }

    fn limit(scheduler: &str, hw_depth: Option<u64>) -> NrLimit {
        NrLimit {
            scheduler: scheduler.into(),
            hw_depth,
            max_hw_sectors_kb: None,
        }
    }

    #[test]
    fn nr_requests_under_none_is_bounded_by_the_hardware_queue_depth() {
        let nr = Field::NrRequests;
        let none = limit("none", Some(128));
        let ok = |v: &str, l: &NrLimit| super::check(&nr, v, 4, l);
        assert_eq!(ok("128", &none).unwrap().nr_requests, Some(128));
        assert_eq!(ok("4", &none).unwrap().nr_requests, Some(4));
        let e = ok("129", &none).unwrap_err();
        assert_eq!(e, "nr_requests '129' is out of range: 4 to 128 under none");
        assert_eq!(none.hint(), "4 to 128 under none (hardware queue depth)");
        // With a scheduler the depth is no limit; nor is an unknown depth.
        let kyber = limit("kyber", Some(128));
        assert_eq!(ok("2048", &kyber).unwrap().nr_requests, Some(2048));
        assert!(ok("2049", &kyber).unwrap_err().ends_with("4 to 2048"));
        assert_eq!(kyber.hint(), "4 to 2048");
        let unknown = limit("none", None);
        assert_eq!(ok("2048", &unknown).unwrap().nr_requests, Some(2048));
        assert!(unknown.hint().contains("hardware queue depth"));
        // A tiny tag set still allows the kernel's minimum.
        assert!(ok("4", &limit("none", Some(1))).is_ok());
        assert!(ok("5", &limit("none", Some(1))).is_err());
        // Other fields do not care.
        assert!(super::check(&Field::ReadAheadKb, "4096", 4, &none).is_ok());
    }

    #[test]
    fn values_are_checked_with_reasons() {
        let nr = Field::NrRequests;
        assert_eq!(check(&nr, "64", 4).unwrap().nr_requests, Some(64));
        assert!(check(&nr, "5000", 4).unwrap_err().contains("4 to 2048"));
        assert!(
            check(&nr, "abc", 4)
                .unwrap_err()
                .contains("not a whole number")
        );
        assert!(check(&nr, "", 4).is_err());
        let ra = Field::ReadAheadKb;
        assert_eq!(check(&ra, "256", 4).unwrap().read_ahead_kb, Some(256));
        assert!(check(&ra, "6", 4).unwrap_err().contains("page size"));
        // The CLI's words (the one check of the scheduler catalogue).
        let fm = Field::Tunable("front_merges".into());
        assert_eq!(
            check(&fm, "7", 4).unwrap_err(),
            "front_merges '7' is out of range: 0 to 1"
        );
        let re = Field::Tunable("read_expire".into());
        assert_eq!(
            check(&re, "100", 4).unwrap().tunables,
            vec![("read_expire".to_string(), "100".to_string())]
        );
        assert!(check(&re, "-5", 4).is_err());
        // Queue settings: wbt_lat_usec takes -1 (the default) and 0 (off).
        let wbt = Field::Knob("wbt_lat_usec".into());
        for v in ["-1", "0", "75000"] {
            assert_eq!(
                check(&wbt, v, 4).unwrap().knobs,
                vec![("wbt_lat_usec".to_string(), v.to_string())]
            );
        }
        assert!(check(&wbt, "-2", 4).unwrap_err().contains("out of range"));
        let msk = Field::Knob("max_sectors_kb".into());
        let l = NrLimit {
            max_hw_sectors_kb: Some(1280),
            ..NrLimit::default()
        };
        assert!(
            super::check(&msk, "1281", 4, &l)
                .unwrap_err()
                .contains("0 to 1280")
        );
        assert_eq!(
            knob_hint("max_sectors_kb", &l, 4),
            "KiB: 0 (the kernel's default) or 4 to 1280"
        );
    }
}
