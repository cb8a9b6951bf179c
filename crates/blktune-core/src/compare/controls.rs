//! Controls: what else changed in the same rounds, said before the number.
//! A verdict whose control failed is unreliable, never a win.
//!
//! Each round carries, beside its figures, the offered load on the device,
//! the devices its I/O goes to (a loop device's backing disk, a dm/md's
//! members) and the system (CPU busy and iowait from `/proc/stat`, PSI
//! `/proc/pressure/io`). Between two configurations they are compared pair by
//! pair, like the figures, at a plain 95 % (a control is a guard: it errs on
//! the side of calling a verdict unreliable). The rules:
//!
//! - **Idle spells** (any load): rounds with almost no I/O (under 5 % of the
//!   median round, or under one a second) measured nothing. Failed. Said
//!   once for the whole run ([`overall`]), with the saturation notes.
//! - **Offered load.** A closed-loop load (the built-in one: a fixed number of
//!   I/Os in flight) lowers its rate when latency rises: the rate's change
//!   is part of the effect (a note). For a load of unknown kind (a passive
//!   comparison), a rate change with as many I/Os in flight (aqu-sz, by
//!   Little's law the rate times the latency) is what a closed loop does
//!   (a note); a rate change with a change of the I/Os in flight is a load
//!   that changed on its own (failed). A change of the mix (read share,
//!   request size) is a note: merging in the scheduler changes it too.
//! - **The devices underneath.** If one's await moved beyond its noise in the
//!   same direction as the verdict's own latency and at least half as much
//!   (in ratio), the verdict may be about it, not the switch (failed):
//!   `vda (under loop0) slowed too: await 0.40 -> 540 ms; the switch is not
//!   the only change`. Saturation (%util ≥ 95) in a quarter of the rounds is
//!   a note.
//! - **The system.** The CPU saturated (≥ 90 % busy) under one configuration
//!   and 20 points less busy under the other: the latency includes waiting
//!   for a CPU (failed). CPU saturation in some rounds, PSI io and iowait
//!   changes are notes.
//!
//! With one pair (one before, one after) there is no between-round noise:
//! the rules use each round's own spread across its intervals instead,
//! and a move must be at least twofold ([`ONE_PAIR_FACTOR`]). The devices
//! underneath carry their spread in their samples ([`UnderSample::await_sd`]);
//! the load's and the system's come beside the rounds ([`check_one_pair`],
//! [`Spread`]): a load whose rate and I/Os in flight both moved twofold and
//! beyond their spread changed on its own (failed, for a load of unknown
//! kind), a CPU saturated on one side only, beyond its spread, failed too.

use super::Round;
use super::design::{diffs_of, pairs_of};
use super::stats::{Interval, median};
use serde::{Deserialize, Serialize};

/// The offered load on the compared device in one round (from diskstats).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadSample {
    /// r/s + w/s.
    pub iops: f64,
    pub mb_s: f64,
    /// Reads as a share of the I/Os (0 to 1).
    pub read_share: f64,
    /// Mean request size, kB.
    pub req_kb: f64,
    /// I/Os in flight (iostat's aqu-sz).
    pub aqu_sz: f64,
}

/// A device the compared one's I/O goes to, in one round.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UnderSample {
    pub name: String,
    /// How it relates to the compared device: `under loop0`, `member of md0`.
    pub relation: String,
    /// The mean await of all its I/Os (reads and writes), ms.
    pub await_ms: f64,
    /// The spread of the await across the round's intervals (one pair only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub await_sd: Option<f64>,
    pub util: f64,
    pub iops: f64,
}

/// The system in one round.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SystemSample {
    /// user + nice + system + irq + softirq, percent of all CPUs' time.
    pub cpu_busy_pct: f64,
    pub iowait_pct: f64,
    /// PSI io `some`: share of the time some task waited on I/O (percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_some_pct: Option<f64>,
    /// PSI io `full`: share of the time all non-idle tasks waited on I/O.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_full_pct: Option<f64>,
}

/// Everything a round holds beside its figures.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RoundControls {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadSample>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub under: Vec<UnderSample>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemSample>,
}

/// What kind of load drove the rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadKind {
    /// A fixed number of I/Os in flight (the built-in load, fio at a fixed
    /// queue depth): its rate follows the latency.
    ClosedLoop,
    /// Whatever runs on the device (a passive comparison).
    Unknown,
}

/// How a control came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Checked, nothing moved.
    Ok,
    /// Worth knowing, not a reason to doubt the verdict.
    Note,
    /// The switch is not the only change: the verdict is unreliable.
    Failed,
}

/// What a control is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ControlKind {
    Load,
    Under,
    System,
}

/// One control's outcome, in one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlCheck {
    pub kind: ControlKind,
    pub status: Status,
    pub text: String,
}

impl ControlCheck {
    fn new(kind: ControlKind, status: Status, text: String) -> Self {
        Self { kind, status, text }
    }
}

/// The confidence of the controls' own intervals.
const CONTROL_ALPHA: f64 = 0.05;
/// A round under this share of the median round's IOPS is an idle spell.
const IDLE_SHARE: f64 = 0.05;
/// Rate changes below this are not worth a line.
const RATE_CHANGE: f64 = 0.10;
/// Read share moves below this many points are not worth a line.
const MIX_POINTS: f64 = 10.0;
/// Request size moves below this are not worth a line.
const SIZE_CHANGE: f64 = 0.25;
/// The least move of a device underneath's await that can fail a verdict.
const UNDER_CHANGE: f64 = 0.20;
/// %util from which a device is saturated.
const SATURATED_UTIL: f64 = 95.0;
/// CPU busy share from which the CPU is saturated (the VM's steal and the
/// idle task's wakeups keep a busy machine a little under 100).
const CPU_SATURATED: f64 = 90.0;
/// CPU busy points between the two sides that fail the system control.
const CPU_POINTS: f64 = 20.0;
/// PSI io some points between the two sides worth a note.
const PSI_POINTS: f64 = 10.0;
/// With one pair (no noise between rounds known), a move must be at least this factor.
pub const ONE_PAIR_FACTOR: f64 = 2.0;

/// How much a round's controls varied across its intervals (one standard
/// deviation each): what the one-pair rules ([`check_one_pair`]) compare a
/// move with, where there is no noise between rounds to go by.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spread {
    /// Of the IOPS on the compared device.
    pub iops: f64,
    /// Of its I/Os in flight (aqu-sz).
    pub aqu_sz: f64,
    /// Of the CPU's busy share, in points.
    pub cpu_busy: f64,
}

/// [`check`] for one round of `a` and one of `b` (one before and one
/// after a switch), with each round's own [`Spread`] standing in for the
/// noise between rounds that one pair cannot show: the idle spells and the
/// devices underneath as in [`check`], the load and the system by the
/// one-pair rules of the module documentation.
pub fn check_one_pair(
    rounds: &[Round],
    (a, sa): ((usize, &str), Spread),
    (b, sb): ((usize, &str), Spread),
    device: &str,
    kind: LoadKind,
    ours: Option<f64>,
) -> Vec<ControlCheck> {
    let mut out = Vec::new();
    out.extend(idle(rounds, &[a, b], device));
    let one = |c: usize| rounds.iter().find(|r| r.config == c);
    let (Some(ra), Some(rb)) = (one(a.0), one(b.0)) else {
        return out;
    };
    out.extend(load_one_pair((ra, a.1, sa), (rb, b.1, sb), kind));
    out.extend(under(rounds, a, b, ours));
    out.extend(system_one_pair((ra, a.1, sa), (rb, b.1, sb)));
    out
}

/// Did a value move from `x` to `y` beyond both sides' spread and by at
/// least `factor` (in ratio)?
fn beyond(x: f64, y: f64, spread: f64, factor: f64) -> bool {
    x > 0.0 && y > 0.0 && (y - x).abs() > spread && (y / x).ln().abs() >= factor.ln()
}

/// The offered load of one before and one after.
fn load_one_pair(
    (ra, an, sa): (&Round, &str, Spread),
    (rb, bn, sb): (&Round, &str, Spread),
    kind: LoadKind,
) -> Vec<ControlCheck> {
    let (Some(la), Some(lb)) = (ra.controls.load, rb.controls.load) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let change = |x: f64, y: f64| if x > 0.0 { y / x - 1.0 } else { 0.0 };
    let rate = change(la.iops, lb.iops);
    let shown = format!("{:+.0}%", rate * 100.0);
    let noted = beyond(la.iops, lb.iops, sa.iops.max(sb.iops), 1.0 + RATE_CHANGE);
    if !noted {
        out.push(ControlCheck::new(
            ControlKind::Load,
            Status::Ok,
            format!(
                "load: IOPS steady ({shown} under {bn} against {an}, within the windows' spread)"
            ),
        ));
    } else {
        let twofold = beyond(la.iops, lb.iops, sa.iops.max(sb.iops), ONE_PAIR_FACTOR);
        let inflight = beyond(
            la.aqu_sz,
            lb.aqu_sz,
            sa.aqu_sz.max(sb.aqu_sz),
            ONE_PAIR_FACTOR,
        );
        let (status, why) = match kind {
            LoadKind::ClosedLoop => (
                Status::Note,
                "the load is closed-loop (a fixed number of I/Os in flight): part of the effect"
                    .to_string(),
            ),
            LoadKind::Unknown if twofold && inflight => (
                Status::Failed,
                format!(
                    "with I/Os in flight (aqu-sz) {:.1} -> {:.1}: the offered load changed; the switch is not the only change",
                    la.aqu_sz, lb.aqu_sz
                ),
            ),
            LoadKind::Unknown => (
                Status::Note,
                format!(
                    "with I/Os in flight (aqu-sz) {:.1} -> {:.1}: what a closed-loop load does when latency changes, or the load itself",
                    la.aqu_sz, lb.aqu_sz
                ),
            ),
        };
        out.push(ControlCheck::new(
            ControlKind::Load,
            status,
            format!("load: IOPS {shown} under {bn} against {an}, {why}"),
        ));
    }
    let points = (lb.read_share - la.read_share) * 100.0;
    if points.abs() >= MIX_POINTS {
        out.push(ControlCheck::new(
            ControlKind::Load,
            Status::Note,
            format!(
                "load: the mix changed: reads {:.0}% -> {:.0}% of the I/Os ({an} -> {bn}; the scheduler's merging or the load itself)",
                la.read_share * 100.0,
                lb.read_share * 100.0
            ),
        ));
    }
    if la.req_kb > 0.0 && change(la.req_kb, lb.req_kb).abs() >= SIZE_CHANGE {
        out.push(ControlCheck::new(
            ControlKind::Load,
            Status::Note,
            format!(
                "load: request size {:.1} -> {:.1} kB ({an} -> {bn}; the scheduler's merging or the load itself)",
                la.req_kb, lb.req_kb
            ),
        ));
    }
    out
}

/// The system of one before and one after.
fn system_one_pair(
    (ra, an, sa): (&Round, &str, Spread),
    (rb, bn, sb): (&Round, &str, Spread),
) -> Vec<ControlCheck> {
    let (Some(ya), Some(yb)) = (ra.controls.system, rb.controls.system) else {
        return Vec::new();
    };
    let (ba, bb) = (ya.cpu_busy_pct, yb.cpu_busy_pct);
    let moved = (bb - ba).abs() >= CPU_POINTS && (bb - ba).abs() > sa.cpu_busy.max(sb.cpu_busy);
    let mut out = Vec::new();
    if moved && ba.max(bb) >= CPU_SATURATED {
        let (hot, cool) = if bb > ba { (bn, an) } else { (an, bn) };
        out.push(cpu_saturated_on_one_side(hot, cool, (ba, bb), (an, bn)));
    } else if ba.max(bb) >= CPU_SATURATED {
        out.push(ControlCheck::new(
            ControlKind::System,
            Status::Note,
            format!(
                "system: CPU busy {ba:.0}% -> {bb:.0}% ({an} -> {bn}), saturated (>= {CPU_SATURATED:.0}%): figures include waiting for a CPU"
            ),
        ));
    } else {
        out.push(ControlCheck::new(
            ControlKind::System,
            Status::Ok,
            cpu_busy((ba, bb), (an, bn)),
        ));
    }
    if let (Some(pa), Some(pb)) = (ya.psi_some_pct, yb.psi_some_pct)
        && (pb - pa).abs() >= PSI_POINTS
    {
        out.push(ControlCheck::new(
            ControlKind::System,
            Status::Note,
            format!("system: PSI io some {pa:.0}% -> {pb:.0}% ({an} -> {bn}): tasks waited on I/O more or less"),
        ));
    }
    if (yb.iowait_pct - ya.iowait_pct).abs() >= PSI_POINTS {
        out.push(ControlCheck::new(
            ControlKind::System,
            Status::Note,
            format!(
                "system: iowait {:.0}% -> {:.0}% ({an} -> {bn})",
                ya.iowait_pct, yb.iowait_pct
            ),
        ));
    }
    out
}

/// What changed between configurations `a` and `b` in `rounds` besides the
/// switch (the whole run's controls: [`overall`]). `ours` is the verdict's
/// own latency change (as a fraction, B against A) when its figure is a latency.
pub fn check(
    rounds: &[Round],
    a: (usize, &str),
    b: (usize, &str),
    kind: LoadKind,
    ours: Option<f64>,
) -> Vec<ControlCheck> {
    let mut out = Vec::new();
    out.extend(load(rounds, a, b, kind));
    out.extend(under(rounds, a, b, ours));
    out.extend(system(rounds, a, b));
    out
}

/// What held over all `rounds`, whatever the configuration: idle spells,
/// a saturated CPU, a saturated device underneath. Said once, not per
/// comparison. `names` are the configurations' names by index.
pub fn overall(rounds: &[Round], names: &[String], device: &str) -> Vec<ControlCheck> {
    let all: Vec<(usize, &str)> = names
        .iter()
        .enumerate()
        .map(|(c, n)| (c, n.as_str()))
        .collect();
    let mut out: Vec<ControlCheck> = idle(rounds, &all, device).into_iter().collect();
    let busy: Vec<f64> = rounds
        .iter()
        .filter_map(|r| r.controls.system.map(|s| s.cpu_busy_pct))
        .collect();
    let hot = busy.iter().filter(|&&v| v >= CPU_SATURATED).count();
    if hot > 0 {
        out.push(ControlCheck::new(
            ControlKind::System,
            Status::Note,
            format!(
                "system: the CPU was saturated (>= {CPU_SATURATED:.0}% busy) in {hot} of {} rounds: the figures include waiting for a CPU",
                busy.len()
            ),
        ));
    }
    let mut seen: Vec<String> = Vec::new();
    for u in rounds.iter().flat_map(|r| &r.controls.under) {
        if seen.contains(&u.name) {
            continue;
        }
        seen.push(u.name.clone());
        let mine: Vec<&UnderSample> = rounds
            .iter()
            .flat_map(|r| &r.controls.under)
            .filter(|x| x.name == u.name)
            .collect();
        let saturated = mine.iter().filter(|x| x.util >= SATURATED_UTIL).count();
        if saturated * 4 >= mine.len() && saturated > 0 {
            out.push(ControlCheck::new(
                ControlKind::Under,
                Status::Note,
                format!(
                    "{} ({}) was saturated (%util >= {SATURATED_UTIL:.0}) in {saturated} of {} rounds",
                    u.name,
                    u.relation,
                    mine.len()
                ),
            ));
        }
    }
    out
}

/// Rounds of these configurations with almost no I/O on the device.
pub fn idle(rounds: &[Round], configs: &[(usize, &str)], device: &str) -> Option<ControlCheck> {
    let iops = |r: &Round| r.controls.load.map(|l| l.iops);
    let all: Vec<f64> = rounds.iter().filter_map(iops).collect();
    let typical = median(&all)?;
    let floor = (typical * IDLE_SHARE).max(1.0);
    let mine: Vec<&Round> = rounds
        .iter()
        .filter(|r| configs.iter().any(|(c, _)| *c == r.config))
        .filter(|r| iops(r).is_some())
        .collect();
    let idle: Vec<&&Round> = mine
        .iter()
        .filter(|r| iops(r).is_some_and(|v| v < floor))
        .collect();
    if idle.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = configs
        .iter()
        .filter(|(c, _)| idle.iter().any(|r| r.config == *c))
        .map(|(_, n)| *n)
        .collect();
    names.dedup();
    Some(ControlCheck::new(
        ControlKind::Load,
        Status::Failed,
        format!(
            "idle spells: {} of {} rounds ({}) had almost no I/O on {device} (under {:.0}/s, 5% of the median round): the load came and went",
            idle.len(),
            mine.len(),
            names.join(", "),
            floor
        ),
    ))
}

/// The interval of B against A of a positive value, as fractions (change, lo, hi).
fn ratio(
    rounds: &[Round],
    a: usize,
    b: usize,
    value: impl Fn(&Round) -> Option<f64>,
) -> Option<(f64, f64, f64, usize)> {
    let (logs, _) = pairs_of(rounds, a, b, |r| value(r).map(|v| (v, None)));
    let iv = Interval::of(&logs, CONTROL_ALPHA)?;
    Some((iv.mean.exp_m1(), iv.lo.exp_m1(), iv.hi.exp_m1(), logs.len()))
}

/// A change whose interval leaves out 0 and whose size is at least `least`.
fn moved((change, lo, hi, _): (f64, f64, f64, usize), least: f64) -> bool {
    (lo > 0.0 || hi < 0.0) && change.abs() >= least
}

/// `+40% (+30..+50)`.
fn text((change, lo, hi, _): (f64, f64, f64, usize)) -> String {
    super::effect::change_text(change, lo, hi)
}

/// The pooled mean of a value over one configuration's rounds.
fn mean_of(rounds: &[Round], c: usize, value: impl Fn(&Round) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = rounds
        .iter()
        .filter(|r| r.config == c)
        .filter_map(value)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The offered load's rate and mix.
fn load(
    rounds: &[Round],
    (a, an): (usize, &str),
    (b, bn): (usize, &str),
    kind: LoadKind,
) -> Vec<ControlCheck> {
    let mut out = Vec::new();
    let get = |f: fn(&LoadSample) -> f64| move |r: &Round| r.controls.load.as_ref().map(f);
    let Some(rate) = ratio(rounds, a, b, get(|l| l.iops)) else {
        return out;
    };
    if moved(rate, RATE_CHANGE) {
        let inflight = ratio(rounds, a, b, get(|l| l.aqu_sz));
        let (status, why) = match kind {
            LoadKind::ClosedLoop => (
                Status::Note,
                "the load is closed-loop (a fixed number of I/Os in flight): part of the effect".to_string(),
            ),
            LoadKind::Unknown => match inflight {
                Some(q) if moved(q, RATE_CHANGE) => (
                    Status::Failed,
                    format!(
                        "with {} I/Os in flight (aqu-sz): the offered load changed; the switch is not the only change",
                        text(q)
                    ),
                ),
                _ => (
                    Status::Note,
                    "with as many I/Os in flight (aqu-sz): what a closed-loop load does when latency changes, part of the effect".to_string(),
                ),
            },
        };
        out.push(ControlCheck::new(
            ControlKind::Load,
            status,
            format!("load: IOPS {} under {bn} against {an}, {why}", text(rate)),
        ));
    } else {
        out.push(ControlCheck::new(
            ControlKind::Load,
            Status::Ok,
            format!(
                "load: IOPS {} under {bn} against {an}: no change beyond its noise",
                text(rate)
            ),
        ));
    }
    let shares = diffs_of(rounds, a, b, |r| {
        r.controls.load.map(|l| l.read_share * 100.0)
    });
    if let Some(iv) = Interval::of(&shares, CONTROL_ALPHA)
        && (iv.lo > 0.0 || iv.hi < 0.0)
        && iv.mean.abs() >= MIX_POINTS
    {
        let pooled = |c| mean_of(rounds, c, |r| r.controls.load.map(|l| l.read_share * 100.0));
        out.push(ControlCheck::new(
            ControlKind::Load,
            Status::Note,
            format!(
                "load: the mix changed: reads {:.0}% -> {:.0}% of the I/Os ({an} -> {bn}; the scheduler's merging or the load itself)",
                pooled(a).unwrap_or(0.0),
                pooled(b).unwrap_or(0.0)
            ),
        ));
    }
    if let Some(size) = ratio(rounds, a, b, get(|l| l.req_kb))
        && moved(size, SIZE_CHANGE)
    {
        let pooled = |c| mean_of(rounds, c, |r| r.controls.load.map(|l| l.req_kb));
        out.push(ControlCheck::new(
            ControlKind::Load,
            Status::Note,
            format!(
                "load: request size {:.1} -> {:.1} kB ({an} -> {bn}, {}; the scheduler's merging or the load itself)",
                pooled(a).unwrap_or(0.0),
                pooled(b).unwrap_or(0.0),
                text(size)
            ),
        ));
    }
    out
}

/// The devices the compared one's I/O goes to.
fn under(
    rounds: &[Round],
    (a, an): (usize, &str),
    (b, bn): (usize, &str),
    ours: Option<f64>,
) -> Vec<ControlCheck> {
    let mut names: Vec<(String, String)> = Vec::new();
    for r in rounds {
        for u in &r.controls.under {
            if !names.iter().any(|(n, _)| n == &u.name) {
                names.push((u.name.clone(), u.relation.clone()));
            }
        }
    }
    let mut out = Vec::new();
    for (name, relation) in names {
        let find = |r: &Round| r.controls.under.iter().find(|u| u.name == name).cloned();
        let awaits = |r: &Round| find(r).filter(|u| u.iops > 0.0).map(|u| u.await_ms);
        let (pa, pb) = (mean_of(rounds, a, awaits), mean_of(rounds, b, awaits));
        let who = format!("{name} ({relation})");
        let pairs = pairs_of(rounds, a, b, |r| awaits(r).map(|v| (v, None))).0;
        let (change, decided, shown) = if pairs.len() >= 2 {
            match ratio(rounds, a, b, awaits) {
                Some(r) => (r.0, moved(r, UNDER_CHANGE), text(r)),
                None => continue,
            }
        } else {
            // One before and one after: each round's own spread instead.
            let one = |c: usize| rounds.iter().find(|r| r.config == c).and_then(find);
            let (Some(ua), Some(ub)) = (one(a), one(b)) else {
                continue;
            };
            if ua.await_ms <= 0.0 || ub.await_ms <= 0.0 {
                continue;
            }
            let change = ub.await_ms / ua.await_ms - 1.0;
            let spread = ua.await_sd.unwrap_or(0.0).max(ub.await_sd.unwrap_or(0.0));
            let beyond = (ub.await_ms - ua.await_ms).abs() > spread
                && (change.ln_1p()).abs() >= ONE_PAIR_FACTOR.ln();
            (change, beyond, format!("{:+.0}%", change * 100.0))
        };
        let (Some(pa), Some(pb)) = (pa, pb) else {
            continue;
        };
        let as_much = match ours {
            // Same direction, and at least half as far in ratio.
            Some(o) if o != 0.0 => {
                change.signum() == o.signum() && change.ln_1p().abs() >= 0.5 * o.ln_1p().abs()
            }
            _ => true,
        };
        let values = format!("await {} -> {} ms", ms(pa), ms(pb));
        let check = if decided && as_much {
            let verb = if change > 0.0 {
                "slowed too"
            } else {
                "sped up too"
            };
            ControlCheck::new(
                ControlKind::Under,
                Status::Failed,
                format!(
                    "{who} {verb}: {values} ({an} -> {bn}, {shown}); the switch is not the only change"
                ),
            )
        } else if decided {
            ControlCheck::new(
                ControlKind::Under,
                Status::Note,
                format!(
                    "{who} moved with it: {values} ({an} -> {bn}, {shown}), less than the verdict's own change"
                ),
            )
        } else {
            ControlCheck::new(
                ControlKind::Under,
                Status::Ok,
                format!("{who}: {values} ({an} -> {bn}), no change beyond its noise"),
            )
        };
        out.push(check);
    }
    out
}

/// CPU saturation, PSI io and iowait.
fn system(rounds: &[Round], (a, an): (usize, &str), (b, bn): (usize, &str)) -> Vec<ControlCheck> {
    let mut out = Vec::new();
    let sys = |f: fn(&SystemSample) -> Option<f64>| {
        move |r: &Round| r.controls.system.as_ref().and_then(f)
    };
    let busy = sys(|s| Some(s.cpu_busy_pct));
    let (Some(ba), Some(bb)) = (mean_of(rounds, a, busy), mean_of(rounds, b, busy)) else {
        return out;
    };
    let diffs = diffs_of(rounds, a, b, busy);
    let decided = |d: &[f64], least: f64| {
        Interval::of(d, CONTROL_ALPHA)
            .is_some_and(|iv| (iv.lo > 0.0 || iv.hi < 0.0) && iv.mean.abs() >= least)
    };
    if decided(&diffs, CPU_POINTS) && ba.max(bb) >= CPU_SATURATED {
        let (hot, cool) = if bb > ba { (bn, an) } else { (an, bn) };
        out.push(cpu_saturated_on_one_side(hot, cool, (ba, bb), (an, bn)));
    } else {
        out.push(ControlCheck::new(
            ControlKind::System,
            Status::Ok,
            cpu_busy((ba, bb), (an, bn)),
        ));
    }
    let psi = sys(|s| s.psi_some_pct);
    if let (Some(pa), Some(pb)) = (mean_of(rounds, a, psi), mean_of(rounds, b, psi))
        && decided(&diffs_of(rounds, a, b, psi), PSI_POINTS)
    {
        out.push(ControlCheck::new(
            ControlKind::System,
            Status::Note,
            format!("system: PSI io some {pa:.0}% -> {pb:.0}% ({an} -> {bn}): tasks waited on I/O more or less"),
        ));
    }
    let iowait = sys(|s| Some(s.iowait_pct));
    if let (Some(wa), Some(wb)) = (mean_of(rounds, a, iowait), mean_of(rounds, b, iowait))
        && decided(&diffs_of(rounds, a, b, iowait), PSI_POINTS)
    {
        out.push(ControlCheck::new(
            ControlKind::System,
            Status::Note,
            format!("system: iowait {wa:.0}% -> {wb:.0}% ({an} -> {bn})"),
        ));
    }
    out
}

/// A latency in ms with two significant figures below 1 (`0.40`, `0.032`), else one decimal or none.
fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else if v >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The failed system control: the CPU saturated under one configuration only.
fn cpu_saturated_on_one_side(
    hot: &str,
    cool: &str,
    (ba, bb): (f64, f64),
    (an, bn): (&str, &str),
) -> ControlCheck {
    ControlCheck::new(
        ControlKind::System,
        Status::Failed,
        format!(
            "system: the CPU was saturated under {hot} and not under {cool} (busy {ba:.0}% -> {bb:.0}%, {an} -> {bn}): the latency includes waiting for a CPU"
        ),
    )
}

/// `system: CPU busy 40% -> 45% (none -> kyber)`.
fn cpu_busy((ba, bb): (f64, f64), (an, bn): (&str, &str)) -> String {
    format!("system: CPU busy {ba:.0}% -> {bb:.0}% ({an} -> {bn})")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round of configuration `config` in `block` whose system shows
    /// `psi` (PSI io some, percent) at an even 40% CPU busy.
    fn round(config: usize, block: usize, psi: Option<f64>) -> Round {
        let mut r = Round::new(config, block, (block * 2 + config) as f64 * 10.0);
        r.controls.system = Some(SystemSample {
            cpu_busy_pct: 40.0,
            iowait_pct: 0.0,
            psi_some_pct: psi,
            psi_full_pct: None,
        });
        r
    }

    /// The system control's lines about PSI.
    fn psi_lines(checks: &[ControlCheck]) -> Vec<&ControlCheck> {
        checks
            .iter()
            .filter(|k| k.kind == ControlKind::System && k.text.contains("PSI"))
            .collect()
    }

    /// Exactly one PSI line, a note (never a failure), starting with `text`.
    fn assert_one_psi_note(c: &[ControlCheck], text: &str) {
        let psi = psi_lines(c);
        assert_eq!(psi.len(), 1, "{c:?}");
        assert_eq!(psi[0].status, Status::Note, "{c:?}");
        assert!(psi[0].text.starts_with(text), "{c:?}");
    }

    /// Six blocks of `before` and `after` PSI, each round a little off
    /// (so the pairs' differences have a spread to test).
    fn blocks(before: f64, after: f64) -> Vec<Round> {
        (0..6)
            .flat_map(|b| {
                let wobble = [0.3, -0.2, 0.5, -0.4, 0.1, -0.3][b];
                [
                    round(0, b, Some(before + wobble)),
                    round(1, b, Some(after - wobble)),
                ]
            })
            .collect()
    }

    #[test]
    fn a_psi_difference_between_the_sides_is_a_system_note() {
        let c = check(
            &blocks(5.0, 40.0),
            (0, "c0"),
            (1, "c1"),
            LoadKind::ClosedLoop,
            None,
        );
        assert_one_psi_note(&c, "system: PSI io some 5% -> 40% (c0 -> c1)");
        // And down: the same line the other way.
        let c = check(
            &blocks(40.0, 5.0),
            (0, "c0"),
            (1, "c1"),
            LoadKind::ClosedLoop,
            None,
        );
        assert!(
            psi_lines(&c)
                .iter()
                .any(|k| k.text.starts_with("system: PSI io some 40% -> 5%")),
            "{c:?}"
        );
    }

    #[test]
    fn equal_or_close_psi_on_both_sides_says_nothing() {
        for (before, after) in [(20.0, 20.0), (20.0, 25.0)] {
            let c = check(
                &blocks(before, after),
                (0, "c0"),
                (1, "c1"),
                LoadKind::ClosedLoop,
                None,
            );
            assert!(psi_lines(&c).is_empty(), "{before} -> {after}: {c:?}");
            assert!(
                c.iter().all(|k| k.status == Status::Ok),
                "{before} -> {after}: {c:?}"
            );
        }
        // Without PSI on one side (a kernel without it): nothing either.
        let rounds = vec![round(0, 0, None), round(1, 0, Some(40.0))];
        let c = check(&rounds, (0, "c0"), (1, "c1"), LoadKind::ClosedLoop, None);
        assert!(psi_lines(&c).is_empty(), "{c:?}");
    }

    #[test]
    fn one_before_and_one_after_note_a_psi_difference_only() {
        let spread = Spread {
            iops: 0.0,
            aqu_sz: 0.0,
            cpu_busy: 2.0,
        };
        let pair = |before: f64, after: f64| {
            check_one_pair(
                &[round(0, 0, Some(before)), round(1, 0, Some(after))],
                ((0, "before"), spread),
                ((1, "after"), spread),
                "loop0",
                LoadKind::ClosedLoop,
                None,
            )
        };
        let c = pair(13.0, 61.0);
        assert_one_psi_note(&c, "system: PSI io some 13% -> 61% (before -> after)");
        for (before, after) in [(13.0, 13.0), (13.0, 22.0)] {
            let c = pair(before, after);
            assert!(psi_lines(&c).is_empty(), "{before} -> {after}: {c:?}");
            assert!(c.iter().all(|k| k.status == Status::Ok), "{c:?}");
        }
    }
}
