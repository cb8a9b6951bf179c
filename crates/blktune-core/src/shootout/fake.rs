//! Shoot-out results made from figures, for tests and demos: no device is touched.

use super::{
    DwellHists, Figures, Goal, KernelStatus, Measurement, ShootoutResult, round_of, summarise,
    verdict,
};
use crate::compare::{self, LoadKind, RoundControls};
use crate::tuner::Wanted;

/// One configuration's rounds: each round's figures and kernel histograms.
pub type FakeRounds = Vec<(Figures, Option<DwellHists>)>;

/// A shoot-out result from rounds already measured (a fixed design, one
/// look at all of them; the original settings "restored"): each
/// configuration by label with its rounds' figures and kernel histograms,
/// round `i` of each in block `i`. For tests and demos: no device is touched.
pub fn fake_result(
    device: &str,
    goal: Goal,
    configurations: &[(&str, FakeRounds)],
) -> ShootoutResult {
    let labels: Vec<String> = configurations.iter().map(|(l, _)| l.to_string()).collect();
    let settings: Vec<Wanted> = labels
        .iter()
        .map(|l| {
            let mut words = l.split(" nr_requests=");
            Wanted {
                scheduler: words.next().map(str::to_string),
                nr_requests: words.next().and_then(|n| n.parse().ok()),
                ..Wanted::default()
            }
        })
        .collect();
    let blocks = configurations
        .iter()
        .map(|(_, r)| r.len())
        .max()
        .unwrap_or(0);
    let mut measurements = Vec::new();
    let mut hists = Vec::new();
    for b in 0..blocks {
        for c in compare::design::block_order(&(0..labels.len()).collect::<Vec<_>>(), b) {
            let Some((fig, h)) = configurations[c].1.get(b) else {
                continue;
            };
            measurements.push(Measurement {
                round: measurements.len() + 1,
                block: b + 1,
                config: c,
                configuration: labels[c].clone(),
                at_s: measurements.len() as f64 * 4.0,
                dwell_s: 3.0,
                figures: *fig,
                kernel: h.as_ref().map(DwellHists::figures),
                settings: labels[c].clone(),
                controls: RoundControls::default(),
            });
            hists.push(h.clone());
        }
    }
    let traced = hists.iter().any(Option::is_some);
    let metric = match (goal.fallback(), traced) {
        (Some(f), false) => f,
        _ => goal.metric(),
    };
    let rounds: Vec<compare::Round> = measurements.iter().map(round_of).collect();
    let opts = compare::Options::new(metric, labels.clone(), device, LoadKind::Unknown);
    let analysis = (!rounds.is_empty())
        .then(|| compare::analyse(&rounds, labels.len(), &opts, opts.alpha, (1, 1)));
    let summaries = summarise(&labels, &measurements, &hists);
    let verdict = verdict(goal, analysis.as_ref(), &labels, &settings, &summaries);
    ShootoutResult {
        device: device.into(),
        scratch: false,
        load: None,
        goal,
        kernel: KernelStatus {
            traced,
            unavailable: (!traced).then(|| "needs root".to_string()),
        },
        budget_s: None,
        rounds: measurements.len(),
        blocks,
        settle_s: 1.0,
        dwell_s: 3.0,
        original: Wanted {
            scheduler: labels.first().cloned(),
            ..Wanted::default()
        },
        configurations: summaries,
        settings,
        measurements,
        analysis,
        verdict,
        applied: None,
        final_settings: "original settings restored".into(),
        elapsed_s: blocks as f64 * labels.len() as f64 * 4.0,
    }
}
