//! The table's order and the rows that must stand out, as pure functions:
//! [`SortKey`] is any numeric column of the table (or the name),
//! [`cmp_rows`] orders two rows with ties broken by the most telling
//! figures (aqu-sz, then await), and [`hot`] says whether a row is over a
//! threshold: busy (util near 100 %) or slow (await far above the device's
//! own recent baseline).

use blktune_core::iostat::ExtStats;
use blktune_core::natural::natural_cmp;
use std::cmp::Ordering;

/// The table's sort column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Name,
    Size,
    Rs,
    Ws,
    RMbs,
    WMbs,
    RAwait,
    WAwait,
    RAreqSz,
    WAreqSz,
    /// I/Os in flight now.
    Inflight,
    Aqu,
    Util,
    /// The larger of r_await and w_await: what the sparkline draws.
    Await,
}

/// The columns in table order, left to right: what `<` and `>` walk.
pub const COLUMN_ORDER: [SortKey; 14] = [
    SortKey::Name,
    SortKey::Size,
    SortKey::Rs,
    SortKey::Ws,
    SortKey::RMbs,
    SortKey::WMbs,
    SortKey::RAwait,
    SortKey::WAwait,
    SortKey::RAreqSz,
    SortKey::WAreqSz,
    SortKey::Inflight,
    SortKey::Aqu,
    SortKey::Util,
    SortKey::Await,
];

/// The order `o` (and F6) cycles in: the figures that find a hurting disk
/// first, then the rest, then back to the name.
pub const TELLING_ORDER: [SortKey; 14] = [
    SortKey::Name,
    SortKey::Util,
    SortKey::Aqu,
    SortKey::Await,
    SortKey::RAwait,
    SortKey::WAwait,
    SortKey::Rs,
    SortKey::Ws,
    SortKey::RMbs,
    SortKey::WMbs,
    SortKey::RAreqSz,
    SortKey::WAreqSz,
    SortKey::Inflight,
    SortKey::Size,
];

/// The key after `k` in `order`, wrapping; `back` walks the other way.
fn step(order: &[SortKey], k: SortKey, back: bool) -> SortKey {
    let n = order.len();
    let i = order.iter().position(|&o| o == k).unwrap_or(0);
    order[if back { (i + n - 1) % n } else { (i + 1) % n }]
}

impl SortKey {
    /// The next column `o` moves to.
    pub fn next(self) -> Self {
        step(&TELLING_ORDER, self, false)
    }

    /// The column to the right (`>`) or to the left (`<`) in the table.
    pub fn beside(self, left: bool) -> Self {
        step(&COLUMN_ORDER, self, left)
    }

    /// How the status line names it (the column's heading).
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Name => "name",
            SortKey::Size => "size",
            SortKey::Rs => "r/s",
            SortKey::Ws => "w/s",
            SortKey::RMbs => "rMB/s",
            SortKey::WMbs => "wMB/s",
            SortKey::RAwait => "r_await",
            SortKey::WAwait => "w_await",
            SortKey::RAreqSz => "rareq-sz",
            SortKey::WAreqSz => "wareq-sz",
            SortKey::Inflight => "inflight",
            SortKey::Aqu => "aqu-sz",
            SortKey::Util => "%util",
            SortKey::Await => "await",
        }
    }

    /// The figure this key sorts by, larger first; `None` for the name
    /// (sorted A to Z) and for a row without statistics.
    pub fn value(self, r: &RowKey) -> Option<f64> {
        match self {
            SortKey::Size => return Some(r.size_bytes as f64),
            SortKey::Inflight => return r.inflight.map(|n| n as f64),
            _ => {}
        }
        let s = r.stats?;
        Some(match self {
            SortKey::Name | SortKey::Size | SortKey::Inflight => return None,
            SortKey::Rs => s.r_s,
            SortKey::Ws => s.w_s,
            SortKey::RMbs => s.rkb_s / 1024.0,
            SortKey::WMbs => s.wkb_s / 1024.0,
            SortKey::RAwait => s.r_await,
            SortKey::WAwait => s.w_await,
            SortKey::RAreqSz => s.rareq_sz,
            SortKey::WAreqSz => s.wareq_sz,
            SortKey::Aqu => s.aqu_sz,
            SortKey::Util => s.util,
            SortKey::Await => s.max_await(),
        })
    }
}

/// One row as the comparator sees it.
#[derive(Debug, Clone, Copy)]
pub struct RowKey<'a> {
    pub name: &'a str,
    pub size_bytes: u64,
    pub stats: Option<&'a ExtStats>,
    pub inflight: Option<u64>,
}

/// Larger first; a row without the figure after every row with it.
fn desc(a: Option<f64>, b: Option<f64>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// The table's order under `key`: the key's figure, larger first; ties
/// (three devices at 100 %util) broken by aqu-sz, then by await, both
/// larger first, then by name in natural order. By name: natural order.
pub fn cmp_rows(key: SortKey, a: &RowKey, b: &RowKey) -> Ordering {
    if key == SortKey::Name {
        return natural_cmp(a.name, b.name);
    }
    let by = |k: SortKey| desc(k.value(a), k.value(b));
    by(key)
        .then_with(|| by(SortKey::Aqu))
        .then_with(|| by(SortKey::Await))
        .then_with(|| natural_cmp(a.name, b.name))
}

/// %util at or above this is "busy": the device was doing I/O nearly all
/// of the interval.
pub const HOT_UTIL: f64 = 98.0;
/// await at least this many times its baseline is "slow" ...
pub const HOT_AWAIT_FACTOR: f64 = 4.0;
/// ... and at least this many ms above it (0.05 ms against 0.01 is noise).
pub const HOT_AWAIT_MIN_MS: f64 = 2.0;
/// Intervals with I/O needed before a baseline means anything.
pub const BASELINE_MIN_POINTS: usize = 5;
/// How many recent intervals the baseline looks at.
pub const BASELINE_POINTS: usize = 60;

/// Why a row stands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hot {
    /// %util at or above [`HOT_UTIL`].
    Busy,
    /// await far above the device's own baseline.
    Slow,
}

/// The device's usual await: the median of `history`'s intervals that did
/// I/O (an idle interval's 0 is not a latency), or `None` with fewer than
/// [`BASELINE_MIN_POINTS`] of them.
pub fn await_baseline(history: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = history.iter().copied().filter(|&x| x > 0.0).collect();
    if v.len() < BASELINE_MIN_POINTS {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Is the row over a threshold? `baseline` is [`await_baseline`] of the
/// intervals before the newest one.
pub fn hot(s: &ExtStats, baseline: Option<f64>) -> Option<Hot> {
    if s.util >= HOT_UTIL {
        return Some(Hot::Busy);
    }
    let now = s.max_await();
    let b = baseline?;
    (now >= b * HOT_AWAIT_FACTOR && now - b >= HOT_AWAIT_MIN_MS).then_some(Hot::Slow)
}

impl super::App {
    /// Is `name`'s newest interval over a threshold ([`hot`]), against the
    /// baseline of its [`BASELINE_POINTS`] intervals before?
    pub fn row_hot(&self, name: &str) -> Option<Hot> {
        let h = self.histories.get(name)?;
        let s = h.last()?.stats.as_ref()?;
        let before: Vec<f64> = h
            .points()
            .iter()
            .rev()
            .skip(1)
            .take(BASELINE_POINTS)
            .map(|p| p.stats.as_ref().map_or(0.0, ExtStats::max_await))
            .collect();
        hot(s, await_baseline(&before))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(util: f64, aqu: f64, r_await: f64) -> ExtStats {
        ExtStats {
            util,
            aqu_sz: aqu,
            r_await,
            r_s: 10.0,
            ..ExtStats::default()
        }
    }

    fn order(key: SortKey, rows: &[(&str, Option<ExtStats>)]) -> Vec<String> {
        let mut v: Vec<RowKey> = rows
            .iter()
            .map(|(n, s)| RowKey {
                name: n,
                size_bytes: 1 << 30,
                stats: s.as_ref(),
                inflight: None,
            })
            .collect();
        v.sort_by(|a, b| cmp_rows(key, a, b));
        v.iter().map(|r| r.name.to_string()).collect()
    }

    #[test]
    fn ties_are_broken_by_aqu_then_await_then_name() {
        // Three devices at 100 %util: the worst by aqu-sz comes first.
        let rows = [
            ("sda", Some(stats(100.0, 1.0, 3.0))),
            ("sdb", Some(stats(100.0, 9.0, 3.0))),
            ("sdc", Some(stats(100.0, 4.0, 3.0))),
            ("loop10", Some(stats(20.0, 0.0, 0.0))),
            ("loop2", Some(stats(20.0, 0.0, 0.0))),
            ("idle", None),
        ];
        assert_eq!(
            order(SortKey::Util, &rows),
            ["sdb", "sdc", "sda", "loop2", "loop10", "idle"]
        );
        // Equal util and aqu-sz: the slower one first.
        let rows = [
            ("a", Some(stats(50.0, 2.0, 1.0))),
            ("b", Some(stats(50.0, 2.0, 7.0))),
        ];
        assert_eq!(order(SortKey::Util, &rows), ["b", "a"]);
        // By name: natural order, whatever the figures.
        let rows = [("loop10", Some(stats(99.0, 0.0, 0.0))), ("loop2", None)];
        assert_eq!(order(SortKey::Name, &rows), ["loop2", "loop10"]);
    }

    #[test]
    fn every_numeric_key_sorts_larger_first_and_nan_does_not_panic() {
        for k in COLUMN_ORDER.into_iter().filter(|&k| k != SortKey::Name) {
            let small = ExtStats::default();
            let big = ExtStats {
                r_s: 1.0,
                w_s: 1.0,
                rkb_s: 1.0,
                wkb_s: 1.0,
                r_await: 1.0,
                w_await: 1.0,
                rareq_sz: 1.0,
                wareq_sz: 1.0,
                aqu_sz: 1.0,
                util: 1.0,
                ..ExtStats::default()
            };
            let a = RowKey {
                name: "a",
                size_bytes: 1,
                stats: Some(&small),
                inflight: Some(0),
            };
            let b = RowKey {
                name: "b",
                size_bytes: 2,
                stats: Some(&big),
                inflight: Some(3),
            };
            assert_eq!(cmp_rows(k, &a, &b), Ordering::Greater, "{k:?}");
            assert_eq!(cmp_rows(k, &b, &a), Ordering::Less, "{k:?}");
        }
        let nan = stats(f64::NAN, 0.0, 0.0);
        let rows = [("x", Some(nan)), ("y", Some(stats(1.0, 0.0, 0.0)))];
        assert_eq!(order(SortKey::Util, &rows).len(), 2);
    }

    #[test]
    fn o_and_the_arrows_visit_every_column_and_wrap() {
        let mut seen = vec![SortKey::Name];
        let mut k = SortKey::Name.next();
        assert_eq!(k, SortKey::Util, "the first o sorts by %util");
        while k != SortKey::Name {
            seen.push(k);
            k = k.next();
        }
        assert_eq!(seen.len(), COLUMN_ORDER.len());
        assert!(COLUMN_ORDER.iter().all(|c| seen.contains(c)));
        assert_eq!(SortKey::Name.beside(false), SortKey::Size);
        assert_eq!(SortKey::Name.beside(true), SortKey::Await);
        assert_eq!(SortKey::Await.beside(false), SortKey::Name);
        assert_eq!(SortKey::Util.beside(true), SortKey::Aqu);
    }

    #[test]
    fn busy_and_slow_rows_stand_out() {
        // util near 100.
        assert_eq!(hot(&stats(99.5, 1.0, 1.0), None), Some(Hot::Busy));
        assert_eq!(
            hot(&stats(95.0, 1.0, 1.0), None),
            None,
            "busy, not saturated"
        );
        // await far above the device's own baseline of 1 ms.
        let history = [1.0, 0.0, 1.2, 0.9, 1.0, 0.0, 1.1, 0.8];
        let base = await_baseline(&history);
        assert_eq!(base, Some(1.0));
        assert_eq!(hot(&stats(30.0, 1.0, 7.0), base), Some(Hot::Slow));
        assert_eq!(hot(&stats(30.0, 1.0, 3.0), base), None, "3x is not far");
        // 7 ms is normal for a device that always takes 6 ms.
        let slow_disk = await_baseline(&[6.0; 10]);
        assert_eq!(hot(&stats(30.0, 1.0, 7.0), slow_disk), None);
        // A tiny baseline: 0.05 ms against 0.01 is not an incident.
        let tiny = await_baseline(&[0.01; 10]);
        assert_eq!(hot(&stats(1.0, 0.0, 0.05), tiny), None);
        // Too little history: no baseline, so no "slow" verdict.
        assert_eq!(await_baseline(&[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]), None);
        assert_eq!(hot(&stats(30.0, 1.0, 70.0), None), None);
    }
}
