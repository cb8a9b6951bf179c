//! Validation of a request, without writing: thin, as every value check is
//! the scheduler catalogue's ([`crate::sched`]).

use super::Wanted;
use crate::device::QueueSettings;
use crate::error::TuneError;
use crate::os::{DeviceName, QueueAttr, is_plausible_tunable_name};
use crate::sched;

/// Check a request against the device's current settings and its hardware
/// queue depth (`hw_depth`, [`crate::device::hw_queue_depth`]), without writing: every
/// value through the scheduler catalogue ([`crate::sched`]), the one check
/// the CLI, the TUI, export and the shoot-out share. `Ok` is the request to
/// write, tunable values in plain decimal.
pub fn validate(
    dev: &DeviceName,
    q: &QueueSettings,
    hw_depth: Option<u64>,
    want: &Wanted,
) -> Result<Wanted, TuneError> {
    let needs_queue =
        want.scheduler.is_some() || !want.tunables.is_empty() || want.nr_requests.is_some();
    let sched = match (&q.scheduler, needs_queue) {
        (None, true) => {
            return Err(TuneError::NoScheduler {
                dev: dev.to_string(),
            });
        }
        (s, _) => s,
    };
    let target = want
        .scheduler
        .clone()
        .or_else(|| sched.as_ref().map(|s| s.active.clone()))
        .unwrap_or_default();
    if let (Some(name), Some(s)) = (&want.scheduler, sched)
        && !s.available.contains(name)
    {
        return Err(TuneError::UnknownScheduler {
            dev: dev.to_string(),
            name: name.chars().take(32).collect(),
            available: s.available.clone(),
        });
    }
    let bad = |e: sched::ValueError| TuneError::BadValue {
        dev: dev.to_string(),
        what: e.what,
        value: e.value,
        why: e.why,
    };
    if let Some(n) = want.nr_requests {
        sched::check_nr_requests(n, &target, hw_depth).map_err(bad)?;
    }
    if let Some(n) = want.read_ahead_kb {
        sched::check_read_ahead_kb(n, sched::page_kb()).map_err(bad)?;
    }
    let mut out = want.clone();
    out.knobs.clear();
    for (name, value) in &want.knobs {
        // Only the catalogue's settable ones, and only where the device has
        // the file (wbt_lat_usec needs a blk-mq queue, CONFIG_BLK_WBT).
        if QueueAttr::knob(name).is_none() || !q.knobs.contains_key(name) {
            let why = match sched::queue_knob(name) {
                Some(k) if !k.settable => format!("shown only, never set: {}", k.why),
                Some(_) => "not on this device".to_string(),
                None => "not a queue setting blktune changes".to_string(),
            };
            return Err(TuneError::BadValue {
                dev: dev.to_string(),
                what: name.chars().take(64).collect(),
                value: value.chars().take(32).collect(),
                why,
            });
        }
        let max_hw = q
            .knobs
            .get("max_hw_sectors_kb")
            .and_then(|v| v.parse().ok());
        let v = sched::check_knob(name, value, max_hw, sched::page_kb()).map_err(bad)?;
        out.knobs.push((name.clone(), v));
    }
    if !want.tunables.is_empty() {
        // The active scheduler's tunables are what sysfs lists; another one's are the kernel's.
        let known: Vec<String> = if sched.as_ref().is_some_and(|s| s.active == target) {
            q.tunables.keys().cloned().collect()
        } else {
            sched::known_tunables(&target)
                .iter()
                .map(|s| s.to_string())
                .collect()
        };
        out.tunables.clear();
        for (name, value) in &want.tunables {
            if !is_plausible_tunable_name(name) || !known.contains(name) {
                return Err(TuneError::UnknownTunable {
                    dev: dev.to_string(),
                    scheduler: target.clone(),
                    name: name.chars().take(64).collect(),
                    known,
                });
            }
            let v = sched::check_tunable(name, value).map_err(bad)?;
            out.tunables.push((name.clone(), v));
        }
    }
    Ok(out)
}

/// Check the originals of a journal entry before a revert writes them:
/// every value with the catalogue's one check, as for `set`, since the
/// entry is a file and only the kernel's own values may go back. Unlike
/// [`validate`], a tunable the catalogue does not know needs only to be an
/// integer (a newer kernel's), and nr_requests may be the hardware queue
/// depth under `none` (the kernel's own value there, which may pass
/// [`sched::NR_REQUESTS_MAX`]). The scheduler's name was checked when the
/// entry was read; one the kernel no longer offers fails at the first
/// write, before anything else is written. `Ok` is the request to write.
pub fn validate_original(
    q: &QueueSettings,
    hw_depth: Option<u64>,
    original: &Wanted,
) -> Result<Wanted, sched::ValueError> {
    let refuse = |what: &str, value: &str, why: String| sched::ValueError {
        what: what.into(),
        value: value.chars().take(32).collect(),
        why,
    };
    let target = original
        .scheduler
        .clone()
        .or_else(|| q.scheduler.as_ref().map(|s| s.active.clone()))
        .unwrap_or_default();
    if let Some(n) = original.nr_requests {
        let kernels_own = target == "none" && hw_depth == Some(n);
        if !kernels_own {
            sched::check_nr_requests(n, &target, hw_depth)?;
        }
    }
    if let Some(n) = original.read_ahead_kb {
        sched::check_read_ahead_kb(n, sched::page_kb())?;
    }
    let mut out = original.clone();
    out.tunables.clear();
    for (name, value) in &original.tunables {
        if !is_plausible_tunable_name(name) {
            return Err(refuse("tunable", name, "not a tunable's name".into()));
        }
        out.tunables
            .push((name.clone(), sched::check_tunable(name, value)?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::setup;
    use super::*;
    use crate::tuner::hw_queue_depth;

    #[test]
    fn nr_requests_above_the_tag_depth_under_none_is_refused_before_writing() {
        let (_d, t, tuner) = setup();
        let root = t.root();
        let dev = root.device("sda").unwrap();
        for (q, tags) in [("0", "64"), ("1", "32")] {
            let dir = root.device_dir(&dev).join("mq").join(q);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("nr_tags"), format!("{tags}\n")).unwrap();
        }
        assert_eq!(hw_queue_depth(&root, &dev), Some(32));
        let want = |s: &str, n| Wanted {
            scheduler: Some(s.into()),
            nr_requests: Some(n),
            ..Wanted::default()
        };
        let e = tuner.apply("sda", &want("none", 33)).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        let msg = e.to_string();
        assert!(msg.contains("'33'") && msg.contains("4 to 32"), "{msg}");
        assert_eq!(
            QueueSettings::read(&root, &dev).active_label(),
            "mq-deadline"
        );
        assert!(tuner.journal().unwrap().load("sda").unwrap().is_none());
        // With a scheduler the tags are the scheduler's: the depth is no limit.
        tuner.apply("sda", &want("kyber", 1024)).unwrap();
    }

    #[test]
    fn validation_rejects_before_anything_is_read_back() {
        let (_d, t, _tuner) = setup();
        let root = t.root();
        let dev = root.device("sda").unwrap();
        let q = QueueSettings::read(&root, &dev);
        let ok = Wanted {
            scheduler: Some("kyber".into()),
            tunables: vec![("read_lat_nsec".into(), "1000".into())],
            nr_requests: Some(2048),
            read_ahead_kb: Some(0),
            knobs: Vec::new(),
        };
        assert!(validate(&dev, &q, None, &ok).is_ok());
        for bad in [
            Wanted {
                nr_requests: Some(3),
                ..ok.clone()
            },
            Wanted {
                nr_requests: Some(2049),
                ..ok.clone()
            },
            Wanted {
                read_ahead_kb: Some(sched::READ_AHEAD_KB_MAX + sched::page_kb()),
                ..ok.clone()
            },
            Wanted {
                scheduler: Some("cfq".into()),
                ..ok.clone()
            },
            Wanted {
                tunables: vec![("read_expire".into(), "1".into())],
                ..ok.clone()
            },
            Wanted {
                tunables: vec![("read_lat_nsec".into(), "1e6".into())],
                ..ok.clone()
            },
            Wanted {
                tunables: vec![("read_lat_nsec".into(), "".into())],
                ..ok.clone()
            },
        ] {
            let e = validate(&dev, &q, None, &bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(e.to_string().starts_with("'sda'"), "{e}");
        }
    }

    #[test]
    fn a_value_the_kernel_would_clamp_or_wrap_is_refused_before_any_write() {
        let (_d, t, tuner) = setup();
        let root = t.root();
        let dev = root.device("sda").unwrap();
        let before = QueueSettings::read(&root, &dev);
        let tunable = |s: Option<&str>, k: &str, v: &str| Wanted {
            scheduler: s.map(Into::into),
            tunables: vec![(k.into(), v.into())],
            ..Wanted::default()
        };
        let e = tuner
            .apply("sda", &tunable(None, "front_merges", "7"))
            .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "'sda': front_merges '7' is out of range: 0 to 1"
        );
        // Another scheduler's tunable is checked before the switch.
        let e = tuner
            .apply(
                "sda",
                &tunable(Some("bfq"), "slice_idle", "9999999999999999999"),
            )
            .unwrap_err();
        assert!(e.to_string().contains("0 to 4294 ms"), "{e}");
        assert_eq!(QueueSettings::read(&root, &dev), before);
        assert!(tuner.journal().unwrap().load("sda").unwrap().is_none());
        // What is written is plain decimal (mq-deadline would read 010 as octal 8).
        let o = tuner
            .apply("sda", &tunable(None, "read_expire", "0250"))
            .unwrap();
        assert_eq!(
            QueueSettings::read(&root, &dev).tunables["read_expire"],
            "250"
        );
        assert!(o.stored.is_empty(), "{:?}", o.stored);
    }
}
