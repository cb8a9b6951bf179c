//! The blocks of rounds, as the comparison engine's sequence asks for them:
//! every configuration still in play once per block, until the sequence is
//! done or the budget has no room for another block.

use super::round::{Bench, Slot};
use super::{Candidate, DwellHists, Length, Measurement, Phase, Progress, Stop, kernel, round_of};
use crate::compare::{self, Plan, Sequence};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Every round's measurement, its kernel histograms when traced, and the
/// engine's last look (`None`: no round).
pub(super) type Measured = (
    Vec<Measurement>,
    Vec<Option<DwellHists>>,
    Option<compare::Analysis>,
);

/// A look in a few words, for the progress line.
fn look_line(a: &compare::Analysis, labels: &[String]) -> String {
    let name = |c: usize| labels.get(c).map_or("?", String::as_str);
    let lead = a
        .leader
        .map_or("no leader".to_string(), |l| format!("{} leads", name(l)));
    match &a.outcome {
        compare::Outcome::Undecided { open } => format!(
            "look {}: {lead}; open: {}",
            a.look,
            open.iter().map(|&c| name(c)).collect::<Vec<_>>().join(", ")
        ),
        compare::Outcome::Unreliable { .. } => format!("look {}: {lead}; a control failed", a.look),
        _ => format!("look {}: {lead}", a.look),
    }
}

/// Measure blocks as the sequence asks, until it is done, the budget has
/// no room for another block, or something stops it.
pub(super) fn measure_all(
    bench: &Bench<'_>,
    candidates: &[Candidate],
    mut seq: Sequence,
    plan: Plan,
    mut tracer: Option<&mut kernel::DwellTracer>,
    progress: &mut impl FnMut(&Progress),
) -> Result<Measured, Stop> {
    let cfg = bench.cfg;
    let labels: Vec<String> = candidates.iter().map(Candidate::label).collect();
    let budget = match cfg.length {
        Length::Budget(b) => Some(b),
        Length::Rounds(_) => None,
    };
    let mut measurements = Vec::new();
    let mut hists = Vec::new();
    let mut rounds = Vec::new();
    let mut look = None;
    let mut block = 0;
    // A round's time as seen so far (the switch included).
    let mut per_round = cfg.round_time();
    while let Some(order) = seq.next_block() {
        let elapsed = bench.started.elapsed();
        if let Some(b) = budget
            && elapsed + per_round * order.len() as u32 > b
        {
            break;
        }
        block += 1;
        let seq_most = seq.max_rounds();
        for &c in &order {
            if bench.cancel.load(Ordering::Relaxed) {
                return Err(Stop::Cancelled);
            }
            let step = measurements.len() + 1;
            let slot = Slot {
                candidate: &candidates[c],
                config: c,
                step,
                block,
            };
            let after_this = match budget {
                Some(b) => b.saturating_sub(bench.started.elapsed() + cfg.round_time()),
                None => per_round * plan.max_rounds.saturating_sub(step) as u32,
            };
            let whole = budget.unwrap_or(per_round * plan.max_rounds as u32);
            let report = |phase: Phase, left_in_round: Duration| {
                let left = after_this + left_in_round;
                progress(&Progress {
                    device: cfg.device.clone(),
                    scheduler: candidates[c].scheduler.clone(),
                    configuration: labels[c].clone(),
                    step,
                    steps: seq_most,
                    block,
                    phase,
                    time_left: left,
                    done: (1.0 - left.as_secs_f64() / whole.as_secs_f64().max(1e-9))
                        .clamp(0.0, 1.0),
                    look: look.clone(),
                })
            };
            let (m, h) = bench.measure(&slot, tracer.as_deref_mut(), report)?;
            rounds.push(round_of(&m));
            measurements.push(m);
            hists.push(h);
        }
        per_round = bench.started.elapsed() / measurements.len().max(1) as u32;
        if let Some(b) = budget {
            // The looks still to come, placed by the rounds' real time (a
            // switch and the load's start take their share too).
            let left = b.saturating_sub(bench.started.elapsed());
            let more = (left.as_secs_f64() / per_round.as_secs_f64().max(1e-3)) as usize;
            seq.set_max_rounds(rounds.len() + more);
        }
        if let Some(a) = seq.block_done(&rounds) {
            look = Some(look_line(a, &labels));
        }
    }
    let analysis = (!rounds.is_empty()).then(|| seq.finish(&rounds));
    Ok((measurements, hists, analysis))
}
