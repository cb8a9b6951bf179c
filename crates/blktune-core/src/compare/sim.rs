//! Simulated rounds with known truth, for the engine's tests: lognormal
//! rounds whose noise is mostly between rounds (as measured on the shared
//! VM: the log ratio of two schedulers' r_await varied by 0.15 to 0.33 from
//! round to round, their r/s by 0.3 to 0.45), with a drift of the machine,
//! from a seeded generator so that every run of the tests sees the same data.

use super::{Metric, Round, Sample};

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): tiny, seeded, good enough for simulations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// How simulated rounds vary.
#[derive(Debug, Clone, Copy)]
pub struct Noise {
    /// Standard deviation of ln(value) from round to round.
    pub between: f64,
    /// A steady drift of the machine, in ln(value) per round.
    pub drift: f64,
}

/// The noise seen here: 0.15 between rounds, a drift of +1 % a round.
pub const HERE: Noise = Noise {
    between: 0.15,
    drift: 0.01,
};

/// A simulated machine: configurations with true log means of `metric`.
#[derive(Debug, Clone)]
pub struct Machine {
    pub truth: Vec<f64>,
    pub noise: Noise,
    /// Extra drift of one configuration's own rounds, per round.
    pub own_drift: Option<(usize, f64)>,
    pub rng: Rng,
    pub metric: Metric,
}

impl Machine {
    /// Configurations whose values are `ratios` of one (1.0, 0.9: the second 10 % lower).
    pub fn new(ratios: &[f64], noise: Noise, seed: u64) -> Self {
        Self {
            truth: ratios.iter().map(|r| r.ln()).collect(),
            noise,
            own_drift: None,
            rng: Rng::new(seed),
            metric: Metric::RAwait,
        }
    }

    /// Measure configuration `config` as round `rounds.len()` of block `block`.
    pub fn measure(&mut self, rounds: &mut Vec<Round>, config: usize, block: usize) {
        let t = rounds.len() as f64;
        let own = match self.own_drift {
            Some((c, d)) if c == config => d * t,
            _ => 0.0,
        };
        let log = self.truth[config]
            + self.noise.drift * t
            + own
            + self.noise.between * self.rng.normal();
        let mut r = Round::new(config, block, t);
        r.values.insert(self.metric, Sample::of(log.exp()));
        rounds.push(r);
    }

    /// `blocks` counterbalanced blocks of every configuration.
    pub fn fixed(&mut self, blocks: usize) -> Vec<Round> {
        let all: Vec<usize> = (0..self.truth.len()).collect();
        let mut rounds = Vec::new();
        for b in 0..blocks {
            for c in super::design::block_order(&all, b) {
                self.measure(&mut rounds, c, b);
            }
        }
        rounds
    }
}
