//! One round of a shoot-out on the device: switch to a configuration, start
//! the load, settle, then dwell between two diskstats samples (exactly what
//! `iostat -x` prints for one interval of that length) while the kernel
//! times the device's I/O; and beside the figures, the controls of the same
//! window: the offered load, the devices underneath, the system.

use super::kernel::{DwellHists, DwellTracer};
use super::{Candidate, Config, Measurement, Phase, Stop, figures};
use crate::compare::{LoadSample, RoundControls, SystemSample, UnderSample};
use crate::device::BlockDevice;
use crate::diskstats;
use crate::host::CpuTimes;
use crate::iostat::ExtStats;
use crate::load::Load;
use crate::os::SysRoot;
use crate::pressure::Pressure;
use crate::sampler::RateTracker;
use crate::topology::{DeviceNode, Topology};
use crate::tuner::{self, Wanted};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The devices `dev`'s I/O goes to, each with its relation (`under loop0`).
pub fn underneath(root: &SysRoot, dev: &str) -> Vec<(String, String)> {
    let devices: Vec<BlockDevice> = crate::device::discover(root).unwrap_or_default();
    let nodes: Vec<DeviceNode> = devices.iter().map(DeviceNode::from).collect();
    Topology::read(root, &devices)
        .underneath(dev, &nodes)
        .into_iter()
        .map(|n| (n, format!("under {dev}")))
        .collect()
}

/// Where one round is measured.
pub(super) struct Bench<'a> {
    pub root: &'a SysRoot,
    pub locked: &'a tuner::Locked<'a>,
    pub cfg: &'a Config,
    pub under: &'a [(String, String)],
    pub started: Instant,
    pub cancel: &'a AtomicBool,
}

/// Which round this is, for the measurement and the progress reports.
pub(super) struct Slot<'a> {
    pub candidate: &'a Candidate,
    pub config: usize,
    /// 1-based.
    pub step: usize,
    /// 1-based.
    pub block: usize,
}

impl Bench<'_> {
    /// Measure one round; `report(phase, time left in this round)` says
    /// how it goes.
    pub fn measure(
        &self,
        slot: &Slot<'_>,
        tracer: Option<&mut DwellTracer>,
        mut report: impl FnMut(Phase, Duration),
    ) -> Result<(Measurement, Option<DwellHists>), Stop> {
        let cfg = self.cfg;
        let per_round = cfg.settle + cfg.dwell;
        report(Phase::Switching, per_round);
        let outcome = self.locked.apply(&slot.candidate.wanted())?;
        let now = Wanted::snapshot_of(&outcome.after);
        let settings = format!(
            "{}{}",
            now.scheduler.clone().unwrap_or_default(),
            now.nr_requests
                .map(|n| format!(" nr_requests={n}"))
                .unwrap_or_default()
        );
        let load = match &cfg.load {
            Some(l) => Some(Load::start(&l.target, &l.options, None)?),
            None => None,
        };
        report(Phase::Settling, per_round);
        wait(Instant::now() + cfg.settle, self.cancel, |left| {
            report(Phase::Settling, left + cfg.dwell)
        })?;
        if let Some(l) = &load {
            l.reset();
        }
        let mut rates = RateTracker::default();
        let t0 = Instant::now();
        let at_s = t0.duration_since(self.started).as_secs_f64();
        sample(self.root, &mut rates, 0.0)?;
        let sys0 = (CpuTimes::read(self.root), pressure(self.root));
        let mut tracer = tracer;
        if let Some(t) = tracer.as_deref_mut() {
            t.begin();
        }
        report(Phase::Measuring, cfg.dwell);
        wait(t0 + cfg.dwell, self.cancel, |left| {
            report(Phase::Measuring, left)
        })?;
        let lstats = load.as_ref().map(Load::stats);
        let itv = t0.elapsed().as_secs_f64();
        let stats = sample(self.root, &mut rates, itv)?;
        let sys1 = (CpuTimes::read(self.root), pressure(self.root));
        let hists = tracer.and_then(DwellTracer::end);
        drop(load);
        // A dwell that ended on another device measured nothing of this one.
        let seen = self.locked.seen_diskseq();
        if let Some(s) = seen
            && self
                .root
                .device(&cfg.device)
                .and_then(|d| self.root.read_diskseq(&d))
                != Some(s)
        {
            return Err(Stop::Replaced(format!(
                "'{}' was re-created during the measurement of {} (diskseq {s} changed: detached and re-attached); its figures are another device's",
                cfg.device,
                slot.candidate.label()
            )));
        }
        let find = |name: &str| stats.iter().find(|(n, _)| n == name).and_then(|(_, s)| *s);
        let ext = find(&cfg.device).ok_or_else(|| {
            Stop::Failed(format!(
                "'{}' has no usable diskstats for the dwell (vanished or counters reset)",
                cfg.device
            ))
        })?;
        if let Some(err) = lstats.as_ref().and_then(|l| l.first_error.clone()) {
            return Err(Stop::Failed(format!(
                "the load on '{}' failed: {err}",
                cfg.device
            )));
        }
        let controls = RoundControls {
            load: Some(load_sample(&ext)),
            under: self
                .under
                .iter()
                .filter_map(|(n, rel)| Some(under_sample(n, rel, &find(n)?)))
                .collect(),
            system: system_sample(sys0, sys1, itv),
        };
        let m = Measurement {
            round: slot.step,
            block: slot.block,
            config: slot.config,
            configuration: slot.candidate.label(),
            at_s,
            dwell_s: itv,
            figures: figures::Figures::of(&ext, lstats.as_ref()),
            kernel: hists.as_ref().map(DwellHists::figures),
            settings,
            controls,
        };
        Ok((m, hists))
    }
}

/// The device's own offered load in a dwell.
fn load_sample(s: &ExtStats) -> LoadSample {
    let iops = s.r_s + s.w_s;
    let kb = s.rkb_s + s.wkb_s;
    LoadSample {
        iops,
        mb_s: kb * 1024.0 / 1e6,
        read_share: if iops > 0.0 { s.r_s / iops } else { 0.0 },
        req_kb: if iops > 0.0 { kb / iops } else { 0.0 },
        aqu_sz: s.aqu_sz,
    }
}

/// A device underneath in a dwell: the await of all its reads and writes.
fn under_sample(name: &str, relation: &str, s: &ExtStats) -> UnderSample {
    let iops = s.r_s + s.w_s;
    UnderSample {
        name: name.into(),
        relation: relation.into(),
        await_ms: if iops > 0.0 {
            (s.r_await * s.r_s + s.w_await * s.w_s) / iops
        } else {
            0.0
        },
        await_sd: None,
        util: s.util,
        iops,
    }
}

/// `<proc>/pressure/io` now (`None`: no PSI here).
fn pressure(root: &SysRoot) -> Option<Pressure> {
    Pressure::parse(&root.read_proc("pressure/io").ok()?)
}

/// The system over a dwell, from `/proc/stat` and `/proc/pressure/io` at both ends.
fn system_sample(
    (cpu0, psi0): (Option<CpuTimes>, Option<Pressure>),
    (cpu1, psi1): (Option<CpuTimes>, Option<Pressure>),
    secs: f64,
) -> Option<SystemSample> {
    let (c0, c1) = (cpu0?, cpu1?);
    let total = c1.total.checked_sub(c0.total)?;
    if total == 0 {
        return None;
    }
    let busy = c1.busy.checked_sub(c0.busy)? as f64 * 100.0 / total as f64;
    let psi = psi0.zip(psi1);
    Some(SystemSample {
        cpu_busy_pct: busy,
        iowait_pct: c1.iowait_pct_since(&c0).unwrap_or(0.0),
        psi_some_pct: psi.and_then(|(a, b)| b.some_pct_since(&a, secs)),
        psi_full_pct: psi.and_then(|(a, b)| b.full_pct_since(&a, secs)),
    })
}

/// Sleep until `until`, in slices, reporting progress; `Err` on cancel.
pub(super) fn wait(
    until: Instant,
    cancel: &AtomicBool,
    mut tick: impl FnMut(Duration),
) -> Result<(), Stop> {
    let mut last = Instant::now();
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Err(Stop::Cancelled);
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        if now.duration_since(last) >= Duration::from_millis(250) {
            tick(until - now);
            last = now;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(100)));
    }
}

/// Read diskstats into the tracker at time `t`; each device's stats (`None`: no data).
fn sample(
    root: &SysRoot,
    rates: &mut RateTracker,
    t: f64,
) -> Result<Vec<(String, Option<ExtStats>)>, Stop> {
    let text = root.read_diskstats().map_err(|e| {
        Stop::Failed(format!(
            "cannot read {}/diskstats: {e}",
            root.procfs().display()
        ))
    })?;
    let (lines, _) = diskstats::parse(&text);
    Ok(rates
        .update(t, &lines)
        .into_iter()
        .map(|(n, s)| (n, s.stats.ok()))
        .collect())
}
