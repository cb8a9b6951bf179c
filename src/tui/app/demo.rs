//! The demo's guided hint, drawn on the banner row of the TUI. In
//! `blktune demo`: what to press first, and where to look once the switch
//! is made. In `blktune replay --demo`: when the recording switches and
//! what the room will see then, from the recording's own change events.

use super::App;
use blktune_core::record::Recording;

/// What the demo's hint is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Demo {
    /// The device the demo switches.
    pub device: String,
    /// In a replay, the recording's scheduler switches of `device`, oldest
    /// first; empty in the live demo (the trainer makes them).
    pub script: Vec<Step>,
}

/// One scheduler switch of a recorded demo.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Seconds from the start of the recording (the header's clock).
    pub at: f64,
    /// The scheduler switched to.
    pub to: String,
}

impl Demo {
    /// `blktune demo` on its scratch device.
    pub fn live(device: String) -> Self {
        Self {
            device,
            script: Vec::new(),
        }
    }

    /// `blktune replay --demo`: the first changed device of `rec` and its
    /// scheduler switches; `None` when the recording switches none.
    pub fn recorded(rec: &Recording) -> Option<Self> {
        let device = rec.changes().next()?.device.clone();
        let script: Vec<Step> = rec
            .changes()
            .filter(|c| c.device == device && c.after.scheduler != c.before.scheduler)
            .filter_map(|c| {
                Some(Step {
                    at: c.t,
                    to: c.after.scheduler.clone()?,
                })
            })
            .collect();
        (!script.is_empty()).then_some(Self { device, script })
    }
}

/// What the room sees after a switch to `sched` under the demo's load.
/// Measured on a loop device under this load (16 random 4 KiB readers
/// beside 4 unthrottled 1 MiB writers, direct I/O; three recordings by
/// assets/make-demo.sh): mq-deadline -> kyber cut read await by 25% to 84%
/// (the machine's state decides how much); kyber -> bfq starved the reads
/// every time (read await 60-80x, p99 over 100 ms). So a direction for
/// kyber and the starvation for bfq; nothing for the others.
fn effect(sched: &str) -> Option<&'static str> {
    match sched {
        "kyber" => Some("reads get faster (r_await, r_p99)"),
        "bfq" => Some("reads starve behind the writes (r_await, r_p99)"),
        _ => None,
    }
}

/// `kyber: reads get faster (r_await, r_p99)`, or `none` alone.
fn with_effect(sched: &str) -> String {
    match effect(sched) {
        Some(e) => format!("{sched}: {e}"),
        None => sched.to_string(),
    }
}

/// The hint line for the demo device, or `None` outside a demo.
pub fn hint(app: &App) -> Option<String> {
    let demo = app.demo.as_ref()?;
    let dev = &demo.device;
    if let Some(at) = app.replay.as_ref().map(|p| p.at)
        && !demo.script.is_empty()
    {
        return Some(format!("DEMO {dev}: {}", script_hint(&demo.script, at)));
    }
    let switched = app.marks.get(dev).is_some_and(|m| !m.is_empty());
    if switched {
        return Some(format!(
            "DEMO {dev}: see the before/after panel (r_await, r_p99); u undoes, q ends the demo"
        ));
    }
    let active = app
        .devices
        .iter()
        .find(|d| &d.name == dev)
        .map(|d| d.queue.active_label().to_string());
    Some(if active.as_deref() == Some("kyber") {
        format!("DEMO {dev}: press s, pick {}", with_effect("bfq"))
    } else {
        format!(
            "DEMO {dev}: press s, pick {}; then bfq",
            with_effect("kyber")
        )
    })
}

/// At `at` seconds into the recording: the next switch and what it does,
/// and the one after it; past the last, the last and since when. Times
/// in the header's clock, so the room can match them.
fn script_hint(script: &[Step], at: f64) -> String {
    let clock = |s: &Step| super::replay::clock(s.at);
    let next = script.iter().position(|s| s.at > at);
    match next {
        Some(i) => {
            let s = &script[i];
            let mut text = format!("at {} {}", clock(s), with_effect(&s.to));
            if let Some(then) = script.get(i + 1) {
                text.push_str(&format!("; at {} {}", clock(then), then.to));
            }
            text
        }
        None => {
            let s = &script[script.len() - 1];
            format!("since {} {}", clock(s), with_effect(&s.to))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script() -> Vec<Step> {
        vec![
            Step {
                at: 29.88,
                to: "kyber".into(),
            },
            Step {
                at: 60.38,
                to: "bfq".into(),
            },
        ]
    }

    #[test]
    fn the_recorded_hint_says_what_comes_next_and_when() {
        let s = script();
        assert_eq!(
            script_hint(&s, 0.0),
            "at 00:30 kyber: reads get faster (r_await, r_p99); at 01:00 bfq"
        );
        assert_eq!(
            script_hint(&s, 31.0),
            "at 01:00 bfq: reads starve behind the writes (r_await, r_p99)"
        );
        assert_eq!(
            script_hint(&s, 90.0),
            "since 01:00 bfq: reads starve behind the writes (r_await, r_p99)"
        );
        let other = [Step {
            at: 5.0,
            to: "none".into(),
        }];
        assert_eq!(script_hint(&other, 1.0), "at 00:05 none");
    }

    #[test]
    fn every_hint_of_the_shipped_demo_fits_80_columns() {
        // The banner is one row: " DEMO loop0: " and the longest hint.
        for at in [0.0, 31.0, 90.0] {
            let line = format!(" DEMO loop0: {}", script_hint(&script(), at));
            assert!(line.chars().count() <= 80, "{}: {line}", line.len());
        }
    }
}
