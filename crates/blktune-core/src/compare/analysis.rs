//! Several configurations at once: which one leads, whether it is decided,
//! and the sequential procedure that keeps measuring the contenders until
//! it is (or the looks run out).
//!
//! - **The leader** is the configuration that beats the most others on the
//!   goal's figure, pair by pair (Copeland's rule; ties by the sum of its
//!   paired log ratios, then by the order given).
//! - **Comparisons with the best.** The leader is compared with each other
//!   configuration; the family is those K − 1 comparisons (Hsu's multiple
//!   comparisons with the best, "Multiple Comparisons: Theory and Methods",
//!   1996, ch. 4: comparing with the sample best needs only the K − 1
//!   comparisons with it), corrected by Bonferroni: each interval is at
//!   `1 − alpha_look / (K − 1)`, where `alpha_look` is what the look spends
//!   ([`Spending`]). Every call in a result is then read off intervals that
//!   hold together with the stated probability.
//! - **The outcome.** A winner when every other configuration is decided
//!   worse than the leader or no different (the latter named "as good"); no
//!   difference when all are no different; undecided otherwise (naming the
//!   open ones); unreliable when a control failed ([`super::controls`]),
//!   whatever the figures say.
//! - **The sequence** ([`Sequence`]): blocks of every configuration until the
//!   first look, then blocks of the leader and the still open ones only,
//!   looking at planned points, stopping at a decided look or the last.

use super::controls::{self, ControlCheck, LoadKind, Status};
use super::design::{Spending, block_order, pairs_of};
use super::drift::{Drift, drift_of};
use super::effect::{Answer, Effect, Level};
use super::metric::Metric;
use super::stats::mean_sd;
use super::{Round, Sample};
use serde::{Deserialize, Serialize};

/// What to compare and how strictly.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The figure the verdict is about.
    pub metric: Metric,
    /// The stated minimum effect worth acting on, as a fraction (0.05).
    pub min_effect: f64,
    /// The chance of any false call over the whole comparison.
    pub alpha: f64,
    /// The configurations' names, by index.
    pub names: Vec<String>,
    /// The compared device (for the controls' lines).
    pub device: String,
    pub load: LoadKind,
}

impl Options {
    /// The defaults: 5 % minimum effect, 5 % error rate.
    pub fn new(metric: Metric, names: Vec<String>, device: &str, load: LoadKind) -> Self {
        Self {
            metric,
            min_effect: DEFAULT_MIN_EFFECT,
            alpha: DEFAULT_ALPHA,
            names,
            device: device.into(),
            load,
        }
    }

    fn name(&self, c: usize) -> &str {
        self.names.get(c).map_or("?", String::as_str)
    }
}

/// The minimum effect worth acting on, unless stated otherwise.
pub const DEFAULT_MIN_EFFECT: f64 = 0.05;
/// The chance of any false call, unless stated otherwise.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// The leader against one other configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The other configuration (A); the leader is B: a change of −30 % is
    /// the leader's figure 30 % below the other's.
    pub other: usize,
    /// On the goal's figure (`None`: no pair has it).
    pub goal: Option<Effect>,
    /// Every figure both have, the goal's too, in [`Metric::COMPARED`] order.
    pub figures: Vec<Effect>,
    pub controls: Vec<ControlCheck>,
}

impl Comparison {
    /// Did a control fail?
    pub fn unreliable(&self) -> bool {
        self.controls.iter().any(|c| c.status == Status::Failed)
    }
}

/// What the comparison concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Outcome {
    /// The leader is better than every other configuration, or no different
    /// from some (`as_good`).
    Winner { leader: usize, as_good: Vec<usize> },
    /// No configuration differs from the leader by the minimum effect.
    NoDifference,
    /// Some comparisons with the leader are undecided.
    Undecided { open: Vec<usize> },
    /// A control failed: the switch was not the only change.
    Unreliable { why: Vec<String> },
    /// Fewer than two configurations have the figure.
    NothingToCompare,
}

impl Outcome {
    /// A winner or no difference: a decision to act on.
    pub fn decided(&self) -> bool {
        matches!(self, Outcome::Winner { .. } | Outcome::NoDifference)
    }
}

/// One look at the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub metric: Metric,
    /// 1-based, of `looks` planned.
    pub look: usize,
    pub looks: usize,
    /// The error rate this look spent (over its whole family).
    pub alpha: f64,
    /// The error rate of the whole comparison, over all its looks.
    pub alpha_total: f64,
    /// The confidence of each interval (after the corrections).
    pub confidence: f64,
    /// How many comparisons the family held.
    pub comparisons_in_family: usize,
    pub min_effect: f64,
    pub leader: Option<usize>,
    /// The leader against each other ranked configuration.
    pub comparisons: Vec<Comparison>,
    /// Configurations without the goal's figure (not ranked).
    pub unranked: Vec<usize>,
    /// Configurations whose own rounds drift on the goal's figure.
    pub drift: Vec<Drift>,
    /// The controls of the whole run (idle spells, saturation), said once.
    #[serde(default)]
    pub controls: Vec<ControlCheck>,
    pub outcome: Outcome,
    /// Rounds it rests on.
    pub rounds: usize,
}

impl Analysis {
    /// The comparison of the leader with `other`.
    pub fn against(&self, other: usize) -> Option<&Comparison> {
        self.comparisons.iter().find(|c| c.other == other)
    }

    /// Every control's line, each once, failed ones first: the whole run's,
    /// then each comparison's.
    pub fn all_controls(&self) -> Vec<ControlCheck> {
        let mut out: Vec<ControlCheck> = Vec::new();
        for c in self
            .controls
            .iter()
            .chain(self.comparisons.iter().flat_map(|c| &c.controls))
        {
            if !out.iter().any(|o| o.text == c.text) {
                out.push(c.clone());
            }
        }
        out.sort_by_key(|c| std::cmp::Reverse(c.status));
        out
    }
}

/// A figure's value in a round, with its I/O count.
fn value_of(r: &Round, m: Metric) -> Option<(f64, Option<u64>)> {
    r.values.get(&m).map(|s: &Sample| (s.value, s.ios))
}

/// The pairs' mean log ratio of `b` against `a` on `m`, when they have any.
fn mean_log(rounds: &[Round], a: usize, b: usize, m: Metric) -> Option<f64> {
    mean_sd(&pairs_of(rounds, a, b, |r| value_of(r, m)).0).map(|(mean, _)| mean)
}

/// The leader among `ranked` (see the module documentation).
fn leader(rounds: &[Round], ranked: &[usize], m: Metric) -> Option<usize> {
    // Positive: `c` is better than the other.
    let good = |c: usize, o: usize| {
        mean_log(rounds, o, c, m).map(|d| if m.lower_is_better() { -d } else { d })
    };
    let score = |c: usize| {
        let mut wins = 0usize;
        let mut sum = 0.0;
        for &o in ranked.iter().filter(|&&o| o != c) {
            if let Some(g) = good(c, o) {
                wins += usize::from(g > 0.0);
                sum += g;
            }
        }
        (wins, sum)
    };
    ranked.iter().copied().max_by(|&x, &y| {
        let ((wx, sx), (wy, sy)) = (score(x), score(y));
        // Earlier indices win ties: compare them reversed.
        wx.cmp(&wy).then(sx.total_cmp(&sy)).then(y.cmp(&x))
    })
}

/// B (`b`) against A (`a`) on every figure both have, at confidence
/// `1 − alpha` per interval, with the controls; `rounds_per_pair` is what
/// one more pair would cost.
pub fn compare_two(
    rounds: &[Round],
    a: usize,
    b: usize,
    opts: &Options,
    alpha: f64,
    rounds_per_pair: usize,
) -> Comparison {
    let level = Level {
        alpha,
        min_effect: opts.min_effect,
        rounds_per_pair,
    };
    let figures: Vec<Effect> = Metric::COMPARED
        .iter()
        .filter_map(|&m| {
            let (logs, ios) = pairs_of(rounds, a, b, |r| value_of(r, m));
            Effect::of(m, &logs, &ios, level)
        })
        .collect();
    let goal = figures
        .iter()
        .find(|e| e.metric == opts.metric)
        .cloned()
        .or_else(|| {
            let (logs, ios) = pairs_of(rounds, a, b, |r| value_of(r, opts.metric));
            Effect::of(opts.metric, &logs, &ios, level)
        });
    let ours = goal
        .as_ref()
        .filter(|_| opts.metric.lower_is_better())
        .map(|e| e.change);
    // The whole run's controls too (the same lines for every comparison
    // of one analysis; said once).
    let mut controls = controls::overall(rounds, &opts.names, &opts.device);
    controls.extend(controls::check(
        rounds,
        (a, opts.name(a)),
        (b, opts.name(b)),
        opts.load,
        ours,
    ));
    Comparison {
        other: a,
        goal,
        figures,
        controls,
    }
}

/// Look at `rounds` of `configs` configurations, spending `alpha_look`
/// over the comparisons with the leader.
pub fn analyse(
    rounds: &[Round],
    configs: usize,
    opts: &Options,
    alpha_look: f64,
    look: (usize, usize),
) -> Analysis {
    let m = opts.metric;
    let has = |c: usize| {
        rounds
            .iter()
            .any(|r| r.config == c && value_of(r, m).is_some_and(|(v, _)| v > 0.0))
    };
    let ranked: Vec<usize> = (0..configs).filter(|&c| has(c)).collect();
    let unranked: Vec<usize> = (0..configs).filter(|&c| !has(c)).collect();
    let family = ranked.len().saturating_sub(1).max(1);
    let alpha = alpha_look / family as f64;
    let lead = leader(rounds, &ranked, m);
    let comparisons: Vec<Comparison> = match lead {
        Some(l) => ranked
            .iter()
            .filter(|&&o| o != l)
            .map(|&o| compare_two(rounds, o, l, opts, alpha, 2))
            .collect(),
        None => Vec::new(),
    };
    let drift = (0..configs)
        .filter_map(|c| drift_of(rounds, c, m, opts.min_effect))
        .collect();
    let controls = controls::overall(rounds, &opts.names, &opts.device);
    let outcome = outcome_of(lead, &comparisons, &controls, ranked.len());
    Analysis {
        metric: m,
        look: look.0,
        looks: look.1,
        alpha: alpha_look,
        alpha_total: opts.alpha,
        confidence: 1.0 - alpha,
        comparisons_in_family: family,
        min_effect: opts.min_effect,
        leader: lead,
        comparisons,
        unranked,
        drift,
        controls,
        outcome,
        rounds: rounds.len(),
    }
}

/// The outcome of the comparisons with the leader.
fn outcome_of(
    lead: Option<usize>,
    comparisons: &[Comparison],
    overall: &[ControlCheck],
    ranked: usize,
) -> Outcome {
    let Some(leader) = lead.filter(|_| ranked >= 2) else {
        return Outcome::NothingToCompare;
    };
    let failed: Vec<String> = overall
        .iter()
        .chain(comparisons.iter().flat_map(|c| &c.controls))
        .filter(|c| c.status == Status::Failed)
        .map(|c| c.text.clone())
        .fold(Vec::new(), |mut v, t| {
            if !v.contains(&t) {
                v.push(t);
            }
            v
        });
    if !failed.is_empty() {
        return Outcome::Unreliable { why: failed };
    }
    let answer = |c: &Comparison| c.goal.as_ref().map_or(Answer::Undecided, |e| e.answer);
    let open: Vec<usize> = comparisons
        .iter()
        .filter(|c| !matches!(answer(c), Answer::Better | Answer::NoDifference))
        .map(|c| c.other)
        .collect();
    if !open.is_empty() {
        return Outcome::Undecided { open };
    }
    let as_good: Vec<usize> = comparisons
        .iter()
        .filter(|c| answer(c) == Answer::NoDifference)
        .map(|c| c.other)
        .collect();
    if as_good.len() == comparisons.len() {
        Outcome::NoDifference
    } else {
        Outcome::Winner { leader, as_good }
    }
}

/// How long a sequence may run and how often it looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The most rounds (the time budget over one round's time).
    pub max_rounds: usize,
    /// The most looks (the last spends what is left).
    pub looks: usize,
    /// Blocks of every configuration before the first look.
    pub min_blocks: usize,
    /// Stop at a decided look, and measure only the open configurations
    /// after the first; `false`: every configuration in every block, one
    /// look at the end (a fixed number of rounds).
    pub adaptive: bool,
}

impl Plan {
    /// A fixed design: `blocks` blocks of all `configs`, one look at the end.
    pub fn fixed(configs: usize, blocks: usize) -> Self {
        Self {
            max_rounds: configs * blocks,
            looks: 1,
            min_blocks: blocks,
            adaptive: false,
        }
    }
}

/// The default number of looks of an adaptive sequence.
pub const DEFAULT_LOOKS: usize = 4;
/// The default blocks of every configuration before the first look.
pub const DEFAULT_MIN_BLOCKS: usize = 3;

/// The sequential procedure: which configurations to measure next, when to
/// look, when to stop. The caller measures; see [`Sequence::next_block`].
#[derive(Debug, Clone)]
pub struct Sequence {
    opts: Options,
    plan: Plan,
    configs: usize,
    spending: Spending,
    blocks: usize,
    looks: usize,
    participants: Vec<usize>,
    last: Option<Analysis>,
    done: bool,
}

impl Sequence {
    /// A sequence over `configs` configurations.
    pub fn new(configs: usize, opts: Options, plan: Plan) -> Self {
        let spending = Spending {
            alpha: opts.alpha,
            looks: plan.looks.max(1),
        };
        Self {
            opts,
            plan,
            configs,
            spending,
            blocks: 0,
            looks: 0,
            participants: (0..configs).collect(),
            last: None,
            done: configs == 0,
        }
    }

    /// The configurations of the next block, in order (`None`: done).
    pub fn next_block(&self) -> Option<Vec<usize>> {
        (!self.done).then(|| block_order(&self.participants, self.blocks))
    }

    /// The round count at which look `k` (1-based) is due.
    fn look_point(&self, k: usize) -> usize {
        let planned = (self.plan.max_rounds * k).div_ceil(self.plan.looks.max(1));
        planned.max(self.plan.min_blocks * self.configs)
    }

    /// A block ended (its rounds are in `rounds`): look if one is due.
    /// Returns the look's analysis; after it, [`Sequence::next_block`] says
    /// what to measure next, or that it is done.
    pub fn block_done(&mut self, rounds: &[Round]) -> Option<&Analysis> {
        self.blocks += 1;
        if self.done || rounds.len() < self.look_point(self.looks + 1) {
            return None;
        }
        let k = self.looks + 1;
        let last = k >= self.plan.looks || rounds.len() >= self.plan.max_rounds;
        self.look(rounds, last);
        self.last.as_ref()
    }

    /// No time for another block: the last look, spending what is left
    /// (the previous one again when it was the last already).
    pub fn finish(&mut self, rounds: &[Round]) -> Analysis {
        if !self.done || self.last.is_none() {
            self.look(rounds, true);
        }
        self.done = true;
        self.last
            .clone()
            .unwrap_or_else(|| analyse(rounds, self.configs, &self.opts, self.opts.alpha, (1, 1)))
    }

    /// The most rounds, seen again (a time budget over the rounds' time as
    /// measured, not as planned): moves the looks still to come. Depends
    /// on the clock only, never on the figures, so the error rate holds.
    pub fn set_max_rounds(&mut self, max_rounds: usize) {
        self.plan.max_rounds = max_rounds.max(1);
    }

    /// The most rounds as planned now.
    pub fn max_rounds(&self) -> usize {
        self.plan.max_rounds
    }

    /// Has it stopped?
    pub fn done(&self) -> bool {
        self.done
    }

    /// The latest look.
    pub fn last(&self) -> Option<&Analysis> {
        self.last.as_ref()
    }

    /// The looks done so far.
    pub fn looks(&self) -> usize {
        self.looks
    }

    fn look(&mut self, rounds: &[Round], last: bool) {
        let k = self.looks + 1;
        let alpha = self.spending.at(k, last);
        let a = analyse(
            rounds,
            self.configs,
            &self.opts,
            alpha,
            (k, self.spending.looks),
        );
        self.looks = k;
        let decided = a.outcome.decided() || a.outcome == Outcome::NothingToCompare;
        if last || (self.plan.adaptive && decided) {
            self.done = true;
        } else if self.plan.adaptive
            && let Some(l) = a.leader
        {
            // The leader and whatever is not yet cleanly decided against it.
            let mut next = vec![l];
            for c in &a.comparisons {
                let clean = c
                    .goal
                    .as_ref()
                    .is_some_and(|e| matches!(e.answer, Answer::Better | Answer::NoDifference))
                    && !c.unreliable();
                if !clean {
                    next.push(c.other);
                }
            }
            next.sort_unstable();
            self.participants = next;
        }
        self.last = Some(a);
    }
}
