//! Range checks on every record read from a file. Replay runs as any user
//! on any file, so nothing read is trusted: a number out of range, a name
//! too long or a list too long makes the record invalid (the reader skips it
//! with a note), which also bounds what a record can cost in memory.

use super::format::{ChangeRecord, DeviceFacts, Header, Record, Sample};
use crate::device::QueueSettings;
use crate::tuner::Wanted;

/// Longest line read; a longer one is skipped without being stored. A
/// sample of 4096 devices with 17 counters each is about 1.5 MiB.
pub const MAX_LINE: usize = 4 << 20;
/// Most devices in a header or `devices` record, and disks in a sample.
pub const MAX_DEVICES: usize = 4096;
/// Longest device, scheduler or tunable name, model or value (bytes).
pub const MAX_NAME: usize = 256;
/// Longest change label (bytes).
pub const MAX_LABEL: usize = 4096;
/// Most tunables, schedulers, partitions, holders or slaves in one list.
pub const MAX_LIST: usize = 256;
/// Latest `t` (seconds since the start): over 30 years.
pub const MAX_T: f64 = 1e9;
/// Latest wall time (Unix seconds): the year 5138.
pub const MAX_WALL: f64 = 1e11;
/// Longest sample interval in a header (seconds): one day.
pub const MAX_INTERVAL: f64 = 86_400.0;

type Check = Result<(), String>;

fn in_range(what: &str, v: f64, lo: f64, hi: f64) -> Check {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!("{what} {v:?} is out of range ({lo:?} to {hi:?})"))
    }
}

fn time(t: f64) -> Check {
    in_range("t", t, 0.0, MAX_T)
}

fn name(what: &str, s: &str) -> Check {
    if s.is_empty() || s.len() > MAX_NAME {
        return Err(format!("{what} of {} bytes (1 to {MAX_NAME})", s.len()));
    }
    Ok(())
}

fn text(what: &str, s: &str, max: usize) -> Check {
    if s.len() > max {
        return Err(format!("{what} of {} bytes (at most {max})", s.len()));
    }
    Ok(())
}

fn list<T>(what: &str, v: &[T], max: usize) -> Check {
    if v.len() > max {
        return Err(format!("{} {what} (at most {max})", v.len()));
    }
    Ok(())
}

fn device(d: &DeviceFacts) -> Check {
    name("a device name", &d.name)?;
    for s in [&d.model, &d.vendor].into_iter().flatten() {
        text("a model or vendor", s, MAX_NAME)?;
    }
    if let Some(st) = &d.stack {
        name("a stack's type", &st.type_name)?;
        for s in [&st.name, &st.uuid].into_iter().flatten() {
            text("a stack's name or uuid", s, MAX_NAME)?;
        }
        list("paths", &st.paths, MAX_LIST)?;
        st.paths.iter().try_for_each(|n| name("paths", n))?;
    }
    for (what, l) in [
        ("partitions", &d.partitions),
        ("holders", &d.holders),
        ("slaves", &d.slaves),
    ] {
        list(what, l, MAX_LIST)?;
        l.iter().try_for_each(|n| name(what, n))?;
    }
    Ok(())
}

fn devices(v: &[DeviceFacts]) -> Check {
    list("devices", v, MAX_DEVICES)?;
    v.iter().try_for_each(device)
}

fn queue(q: &QueueSettings) -> Check {
    if let Some(s) = &q.scheduler {
        name("a scheduler name", &s.active)?;
        list("schedulers", &s.available, MAX_LIST)?;
        s.available
            .iter()
            .try_for_each(|n| name("a scheduler name", n))?;
    }
    if q.tunables.len() > MAX_LIST {
        return Err(format!(
            "{} tunables (at most {MAX_LIST})",
            q.tunables.len()
        ));
    }
    q.tunables.iter().try_for_each(|(k, v)| {
        name("a tunable name", k)?;
        text("a tunable value", v, MAX_NAME)
    })?;
    list(
        "queue settings",
        &q.knobs.keys().collect::<Vec<_>>(),
        MAX_LIST,
    )?;
    q.knobs.iter().try_for_each(|(k, v)| {
        name("a queue setting's name", k)?;
        text("a queue setting's value", v, MAX_NAME)
    })
}

fn settings(s: &Wanted) -> Check {
    if let Some(n) = &s.scheduler {
        name("a scheduler name", n)?;
    }
    list("tunables", &s.tunables, MAX_LIST)?;
    s.tunables.iter().try_for_each(|(k, v)| {
        name("a tunable name", k)?;
        text("a tunable value", v, MAX_NAME)
    })?;
    list("queue settings", &s.knobs, MAX_LIST)?;
    s.knobs.iter().try_for_each(|(k, v)| {
        name("a queue setting's name", k)?;
        text("a queue setting's value", v, MAX_NAME)
    })
}

fn sample(s: &Sample) -> Check {
    time(s.t)?;
    in_range("wall", s.wall, 0.0, MAX_WALL)?;
    if let Some(p) = s.iowait_pct {
        in_range("iowait_pct", p, 0.0, 100.0)?;
    }
    if let Some(p) = s.cpu_busy_pct {
        in_range("cpu_busy_pct", p, 0.0, 100.0)?;
    }
    if let Some(p) = s.psi_some_pct {
        in_range("psi_some_pct", p, 0.0, 100.0)?;
    }
    if s.disks.len() > MAX_DEVICES {
        return Err(format!("{} disks (at most {MAX_DEVICES})", s.disks.len()));
    }
    // The counters themselves are checked per device on replay (a wrong
    // count or a 64-bit ms field drops that device from the frame only).
    s.disks.keys().try_for_each(|n| name("a disk name", n))?;
    if s.lat.len() > MAX_DEVICES {
        return Err(format!(
            "{} latency devices (at most {MAX_DEVICES})",
            s.lat.len()
        ));
    }
    s.lat.iter().try_for_each(|(n, l)| {
        name("a disk name", n)?;
        super::latency::check(l)
    })?;
    s.no_dev_span
        .as_deref()
        .map_or(Ok(()), |w| text("no_dev_span", w, MAX_NAME))?;
    if let Some(p) = &s.psi {
        for st in [Some(&p.some), p.full.as_ref()].into_iter().flatten() {
            for v in [st.avg10, st.avg60, st.avg300] {
                in_range("a pressure average", v, 0.0, 100.0)?;
            }
        }
    }
    list(
        "who devices",
        &s.who.keys().collect::<Vec<_>>(),
        MAX_DEVICES,
    )?;
    s.who.iter().try_for_each(|(n, w)| {
        name("a disk name", n)?;
        who(w)
    })
}

/// Most rows of each kind in a device's `who`.
pub const MAX_WHO_ROWS: usize = 64;

fn who(w: &crate::who::DeviceWho) -> Check {
    list("process rows", &w.processes, MAX_WHO_ROWS)?;
    list("cgroup rows", &w.cgroups, MAX_WHO_ROWS)?;
    in_range("rest_s", w.rest_s, 0.0, 1e12)?;
    for r in w.processes.iter().chain(&w.cgroups) {
        text("a process or cgroup name", &r.name, MAX_NAME)?;
        if let Some(c) = &r.cgroup {
            text("a cgroup path", c, MAX_LABEL)?;
        }
        for v in [r.r_s, r.w_s, r.o_s, r.rkb_s, r.wkb_s] {
            in_range("a rate", v, 0.0, 1e12)?;
        }
        for v in [r.share, r.io_some, r.io_full].into_iter().flatten() {
            in_range("a percentage", v, 0.0, 100.0)?;
        }
        if let Some(p) = r.r_p99 {
            in_range("r_p99", p, 0.0, 1e9)?;
        }
    }
    Ok(())
}

fn change(c: &ChangeRecord) -> Check {
    time(c.t)?;
    name("a device name", &c.device)?;
    text("a label", &c.label, MAX_LABEL)?;
    settings(&c.before)?;
    settings(&c.after)
}

/// Is the header within range?
pub fn header(h: &Header) -> Check {
    in_range("started_wall", h.started_wall, 0.0, MAX_WALL)?;
    in_range("interval_s", h.interval_s, 0.0, MAX_INTERVAL)?;
    in_range("uptime_s", h.host.uptime_s, 0.0, MAX_WALL)?;
    text("tool", &h.tool, MAX_NAME)?;
    text("started", &h.started, MAX_NAME)?;
    text("hostname", &h.host.hostname, MAX_NAME)?;
    text("kernel", &h.host.kernel, MAX_NAME)?;
    if let Some(b) = &h.host.boot_id {
        text("boot_id", b, MAX_NAME)?;
    }
    devices(&h.devices)?;
    if let Some(only) = &h.only {
        list("devices named", only, MAX_DEVICES)?;
    }
    Ok(())
}

/// Is every number, name and list of this record within range?
pub fn record(r: &Record) -> Check {
    match r {
        Record::Header(h) => header(h),
        Record::Sample(s) => sample(s),
        Record::Settings(s) => {
            time(s.t)?;
            name("a device name", &s.device)?;
            queue(&s.queue)
        }
        Record::Devices(d) => {
            time(d.t)?;
            devices(&d.devices)
        }
        Record::Change(c) => change(c),
        Record::End(e) => {
            time(e.t)?;
            in_range("wall", e.wall, 0.0, MAX_WALL)?;
            text("reason", &e.reason, MAX_NAME)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn s(t: f64, wall: f64) -> Record {
        Record::Sample(Sample {
            t,
            wall,
            iowait_pct: None,
            cpu_busy_pct: None,
            psi_some_pct: None,
            disks: BTreeMap::new(),
            lat: BTreeMap::new(),
            lost: 0,
            untraced: false,
            no_dev_span: None,
            psi: None,
            who: Default::default(),
        })
    }

    #[test]
    fn times_and_walls_outside_their_range_are_refused() {
        assert!(record(&s(1.0, 1.7e9)).is_ok());
        for (t, wall) in [
            (-1.0, 1.0),
            (f64::NAN, 1.0),
            (f64::INFINITY, 1.0),
            (1e300, 1.0),
            (1.0, 1e300),
            (1.0, -5.0),
        ] {
            let e = record(&s(t, wall)).unwrap_err();
            assert!(e.contains("out of range"), "{e}");
        }
    }

    #[test]
    fn too_many_disks_or_a_long_name_are_refused() {
        let mut disks = BTreeMap::new();
        disks.insert("x".repeat(MAX_NAME + 1), vec![0; 11]);
        let r = Record::Sample(Sample {
            t: 1.0,
            wall: 1.0,
            iowait_pct: Some(5.0),
            cpu_busy_pct: None,
            psi_some_pct: None,
            disks,
            lat: BTreeMap::new(),
            lost: 0,
            untraced: false,
            no_dev_span: None,
            psi: None,
            who: Default::default(),
        });
        assert!(record(&r).unwrap_err().contains("disk name"));
        let disks = (0..=MAX_DEVICES).map(|i| (i.to_string(), vec![])).collect();
        let r = Record::Sample(Sample {
            t: 1.0,
            wall: 1.0,
            iowait_pct: None,
            cpu_busy_pct: None,
            psi_some_pct: None,
            disks,
            lat: BTreeMap::new(),
            lost: 0,
            untraced: false,
            no_dev_span: None,
            psi: None,
            who: Default::default(),
        });
        assert!(record(&r).unwrap_err().contains("disks"));
    }

    #[test]
    fn a_reason_for_no_device_span_is_bounded() {
        let with = |why: String| match s(1.0, 1.7e9) {
            Record::Sample(x) => Record::Sample(Sample {
                no_dev_span: Some(why),
                ..x
            }),
            r => r,
        };
        assert!(record(&with("block_rq_issue: EPERM".into())).is_ok());
        let e = record(&with("x".repeat(MAX_NAME + 1))).unwrap_err();
        assert!(e.contains("no_dev_span"), "{e}");
    }
}
