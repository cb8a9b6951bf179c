//! The few pieces of statistics the comparison engine needs, written out so
//! that each can be checked against published tables: Student's t
//! distribution (CDF and quantile, through the regularized incomplete beta
//! function), the t-interval of a mean, and a least-squares trend.
//!
//! Sources: the incomplete beta function by its continued fraction, evaluated
//! with the modified Lentz method (Press et al., *Numerical Recipes*, 3rd ed.,
//! §6.4 and §5.2); `ln Γ` by Lanczos' approximation (§6.1, g = 7, n = 9, the
//! coefficients of Godfrey's table); the t-interval of a mean with n − 1
//! degrees of freedom (Student 1908; Georges, Buytaert and Eeckhout,
//! "Statistically Rigorous Java Performance Evaluation", OOPSLA 2007, §3.2).

/// Lanczos coefficients for g = 7, n = 9 (Godfrey), as in most numerical libraries.
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// `ln Γ(x)` for x > 0 (Lanczos; relative error near 1e-15).
pub fn ln_gamma(value: f64) -> f64 {
    if value < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * value).sin()).ln() - ln_gamma(1.0 - value);
    }
    let x = value - 1.0;
    let mut sum = LANCZOS[0];
    for (i, c) in LANCZOS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, value: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * value / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        // The even step, then the odd one.
        for aa in [
            m * (b - m) * value / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * value / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 + aa * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + aa / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
pub fn inc_beta(a: f64, b: f64, value: f64) -> f64 {
    if value <= 0.0 {
        return 0.0;
    }
    if value >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * value.ln() + b * (1.0 - value).ln())
            .exp();
    // The fraction converges fast on this side of the mean; use the symmetry otherwise.
    if value < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, value) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - value) / b
    }
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
pub fn t_cdf(at: f64, df: f64) -> f64 {
    // P(|T| > t) = I_{df/(df+t²)}(df/2, 1/2).
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, df / (df + at * at));
    if at >= 0.0 { 1.0 - tail } else { tail }
}

/// Quantiles already computed, by (p, df): a comparison asks for the same
/// few again and again (every figure, every projection of more rounds).
const QUANTILE_CACHE: usize = 4096;

thread_local! {
    static QUANTILES: std::cell::RefCell<std::collections::HashMap<(u64, u64), f64>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The t with P(T ≤ t) = `quantile` (0 < p < 1), by bisection on [`t_cdf`]: slow
/// next to a closed form, but exact to 1e-10 for any degrees of freedom and
/// any tail, which the corrected levels (a few in ten thousand) need.
/// Remembered per thread.
pub fn t_quantile(quantile: f64, df: f64) -> f64 {
    if !(quantile > 0.0 && quantile < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if quantile < 0.5 {
        return -t_quantile(1.0 - quantile, df);
    }
    let key = (quantile.to_bits(), df.to_bits());
    if let Some(t) = QUANTILES.with(|c| c.borrow().get(&key).copied()) {
        return t;
    }
    let t = t_quantile_uncached(quantile, df);
    QUANTILES.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= QUANTILE_CACHE {
            c.clear();
        }
        c.insert(key, t);
    });
    t
}

/// [`t_quantile`] for p ≥ 0.5, computed.
fn t_quantile_uncached(quantile: f64, df: f64) -> f64 {
    let mut hi = 2.0;
    while t_cdf(hi, df) < quantile && hi < 1e12 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < quantile {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-10 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Mean and sample standard deviation (n − 1); `None` when empty. One
/// value has a standard deviation of 0 and no interval ([`Interval::of`]).
pub fn mean_sd(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return Some((mean, 0.0));
    }
    let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    Some((mean, (ss / (n - 1.0)).sqrt()))
}

/// The median of some values (`None` when empty).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        0.5 * (v[mid - 1] + v[mid])
    } else {
        v[mid]
    })
}

/// A two-sided t-interval of a mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    /// The values' sample standard deviation.
    pub sd: f64,
    pub n: usize,
    /// The t quantile used (n − 1 degrees of freedom).
    pub t: f64,
}

impl Interval {
    /// The interval of the mean of `values` at confidence `1 − alpha`:
    /// mean ± t(1 − alpha/2, n − 1) · sd / √n. `None` under two values
    /// (one value shows nothing of the spread).
    pub fn of(values: &[f64], alpha: f64) -> Option<Self> {
        if values.len() < 2 {
            return None;
        }
        let (mean, sd) = mean_sd(values)?;
        let n = values.len();
        let t = t_quantile(1.0 - alpha / 2.0, (n - 1) as f64);
        let half = t * sd / (n as f64).sqrt();
        Some(Self {
            mean,
            lo: mean - half,
            hi: mean + half,
            sd,
            n,
            t,
        })
    }

    /// Half the width.
    pub fn half(&self) -> f64 {
        0.5 * (self.hi - self.lo)
    }
}

/// A least-squares line through (x, y) points and its slope's two-sided
/// p-value (t with n − 2 degrees of freedom).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    pub slope: f64,
    pub p: f64,
    /// The x range the points span.
    pub span: f64,
}

impl Trend {
    /// The trend of `points`; `None` under three points or when all x are equal.
    pub fn of(points: &[(f64, f64)]) -> Option<Self> {
        let n = points.len();
        if n < 3 {
            return None;
        }
        let nf = n as f64;
        let mx = points.iter().map(|p| p.0).sum::<f64>() / nf;
        let my = points.iter().map(|p| p.1).sum::<f64>() / nf;
        let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
        if sxx <= 0.0 {
            return None;
        }
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let slope = sxy / sxx;
        let resid: f64 = points
            .iter()
            .map(|p| (p.1 - my - slope * (p.0 - mx)).powi(2))
            .sum();
        let se = (resid / (nf - 2.0) / sxx).sqrt();
        let p = if se > 0.0 {
            2.0 * (1.0 - t_cdf((slope / se).abs(), nf - 2.0))
        } else if slope == 0.0 {
            1.0
        } else {
            0.0
        };
        let (lo, hi) = points
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.0), b.max(p.0))
            });
        Some(Self {
            slope,
            p,
            span: hi - lo,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn ln_gamma_matches_factorials_and_half_integers() {
        for (x, want) in [
            (1.0, 0.0),
            (2.0, 0.0),
            (5.0, 24f64.ln()),
            (11.0, 3_628_800f64.ln()),
        ] {
            assert!(close(ln_gamma(x), want, 1e-12), "{x}: {}", ln_gamma(x));
        }
        // Γ(1/2) = √π.
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-12
        ));
    }

    /// Two-sided 95% and 99% quantiles from the standard table (e.g. NIST/SEMATECH
    /// e-Handbook of Statistical Methods, §1.3.6.7.2), and the normal limit.
    #[test]
    fn t_quantiles_match_the_table() {
        let table = [
            (1.0, 0.975, 12.706),
            (2.0, 0.975, 4.303),
            (3.0, 0.975, 3.182),
            (5.0, 0.975, 2.571),
            (9.0, 0.975, 2.262),
            (19.0, 0.975, 2.093),
            (30.0, 0.975, 2.042),
            (2.0, 0.995, 9.925),
            (9.0, 0.995, 3.250),
            (5.0, 0.9995, 6.869),
            (1e6, 0.975, 1.960),
        ];
        for (df, p, want) in table {
            let got = t_quantile(p, df);
            assert!(close(got, want, 0.0015), "df {df} p {p}: {got} vs {want}");
            assert!(close(t_cdf(got, df), p, 1e-9));
            assert!(close(t_quantile(1.0 - p, df), -got, 1e-9));
        }
        assert!(t_quantile(0.0, 3.0).is_nan());
        assert!(t_quantile(0.9, 0.0).is_nan());
        // The cdf at 0 is one half, whatever the degrees of freedom.
        assert!(close(t_cdf(0.0, 4.0), 0.5, 1e-15));
    }

    #[test]
    fn the_interval_of_a_mean_uses_n_minus_1_degrees_of_freedom() {
        // 1, 2, 3: mean 2, sd 1, half width t(0.975, 2) / √3 = 4.303 / 1.732.
        let i = Interval::of(&[1.0, 2.0, 3.0], 0.05).unwrap();
        assert!(close(i.mean, 2.0, 1e-12));
        assert!(close(i.sd, 1.0, 1e-12));
        assert!(close(i.half(), 4.302_653 / 3f64.sqrt(), 1e-5), "{i:?}");
        assert!(Interval::of(&[1.0], 0.05).is_none());
        // Equal values: an interval of no width.
        let z = Interval::of(&[0.5, 0.5, 0.5], 0.05).unwrap();
        assert_eq!((z.lo, z.hi), (0.5, 0.5));
    }

    #[test]
    fn a_trend_has_its_slope_and_a_small_p_only_when_steady() {
        let up: Vec<(f64, f64)> = (0..10)
            .map(|i| (f64::from(i), 0.1 * f64::from(i)))
            .collect();
        let t = Trend::of(&up).unwrap();
        assert!(
            close(t.slope, 0.1, 1e-12) && t.p < 1e-9 && t.span == 9.0,
            "{t:?}"
        );
        let flat = [(0.0, 1.0), (1.0, 2.0), (2.0, 1.0), (3.0, 2.0), (4.0, 1.0)];
        assert!(Trend::of(&flat).unwrap().p > 0.5);
        assert!(Trend::of(&[(0.0, 1.0), (1.0, 2.0)]).is_none());
        assert!(Trend::of(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]).is_none());
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
