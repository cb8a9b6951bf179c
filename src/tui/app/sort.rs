//! The table's order and the rows that must stand out, as pure functions:
//! [`SortKey`] is any numeric column of the table (or the name),
//! [`cmp_rows`] orders two rows with ties broken by the most telling
//! figures (aqu-sz, then await), and [`hot`] says whether a row is over a
//! threshold: busy (util near 100 %) or slow (await far above the device's
//! own recent baseline).

use super::Tracing;
use blktune_core::device::BlockDevice;
use blktune_core::iostat::ExtStats;
use blktune_core::latency::{Dir, MIN_IOS_FOR_P99};
use blktune_core::natural::natural_cmp;
use std::cmp::Ordering;

/// The table's sort column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Name,
    Size,
    /// nr_requests.
    Nr,
    /// read_ahead_kb.
    Ra,
    Rs,
    Ws,
    RMbs,
    WMbs,
    RAwait,
    WAwait,
    /// The kernel's read p99 of the newest interval (none under
    /// [`MIN_IOS_FOR_P99`] I/Os or without tracing: sorted last).
    RP99,
    /// The same for writes.
    WP99,
    RAreqSz,
    WAreqSz,
    /// I/Os in flight now.
    InFlight,
    Aqu,
    Util,
    /// The larger of r_await and w_await: what the sparkline draws.
    Await,
}

/// The first sort is by %util, largest first: in an incident the hurting
/// disk is the top row. Idle devices tie all the way down the chain of
/// [`cmp_rows`] and so stay in natural name order: a quiet screen is steady.
impl Default for SortKey {
    fn default() -> Self {
        SortKey::Util
    }
}

/// The columns in table order, left to right: what `<` and `>` walk.
pub const COLUMN_ORDER: [SortKey; 18] = [
    SortKey::Name,
    SortKey::Size,
    SortKey::Nr,
    SortKey::Ra,
    SortKey::Rs,
    SortKey::Ws,
    SortKey::RMbs,
    SortKey::WMbs,
    SortKey::RAwait,
    SortKey::WAwait,
    SortKey::RP99,
    SortKey::WP99,
    SortKey::RAreqSz,
    SortKey::WAreqSz,
    SortKey::InFlight,
    SortKey::Aqu,
    SortKey::Util,
    SortKey::Await,
];

/// The order `o` (and F6) cycles in from the default, %util: the figures
/// that find a hurting disk first, then the rest, then the name.
pub const TELLING_ORDER: [SortKey; 18] = [
    SortKey::Util,
    SortKey::Aqu,
    SortKey::Await,
    SortKey::RAwait,
    SortKey::WAwait,
    SortKey::RP99,
    SortKey::WP99,
    SortKey::Rs,
    SortKey::Ws,
    SortKey::RMbs,
    SortKey::WMbs,
    SortKey::RAreqSz,
    SortKey::WAreqSz,
    SortKey::InFlight,
    SortKey::Size,
    SortKey::Nr,
    SortKey::Ra,
    SortKey::Name,
];

/// The key after `sort_key` in `order`, wrapping; `back` walks the other way.
/// Without `latency` (no p99 columns on screen) the p99 keys are passed over.
fn step(order: &[SortKey], sort_key: SortKey, back: bool, latency: bool) -> SortKey {
    let n = order.len();
    let mut i = order.iter().position(|&o| o == sort_key).unwrap_or(0);
    for _ in 0..n {
        i = if back { (i + n - 1) % n } else { (i + 1) % n };
        if latency || !order[i].is_p99() {
            return order[i];
        }
    }
    sort_key
}

impl SortKey {
    /// The next column `o` moves to; the p99 columns only with `latency`
    /// (they are shown: [`super::App::p99_shown`]).
    pub fn next(self, latency: bool) -> Self {
        step(&TELLING_ORDER, self, false, latency)
    }

    /// The column to the right (`>`) or to the left (`<`) in the table.
    pub fn beside(self, left: bool, latency: bool) -> Self {
        step(&COLUMN_ORDER, self, left, latency)
    }

    /// One of the kernel's p99 columns?
    pub fn is_p99(self) -> bool {
        matches!(self, SortKey::RP99 | SortKey::WP99)
    }

    /// How the status line names it (the column's heading).
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Name => "name",
            SortKey::Size => "size",
            SortKey::Nr => "nr_requests",
            SortKey::Ra => "read_ahead_kb",
            SortKey::Rs => "r/s",
            SortKey::Ws => "w/s",
            SortKey::RMbs => "rMB/s",
            SortKey::WMbs => "wMB/s",
            SortKey::RAwait => "r_await",
            SortKey::WAwait => "w_await",
            SortKey::RP99 => "r_p99",
            SortKey::WP99 => "w_p99",
            SortKey::RAreqSz => "rareq-sz",
            SortKey::WAreqSz => "wareq-sz",
            SortKey::InFlight => "inflight",
            SortKey::Aqu => "aqu-sz",
            SortKey::Util => "%util",
            SortKey::Await => "await",
        }
    }

    /// The figure this key sorts by, larger first; `None` for the name
    /// (sorted A to Z), for a row without statistics and for a row
    /// without a p99 (too few I/Os, not traced).
    pub fn value(self, row_key: &RowKey) -> Option<f64> {
        match self {
            SortKey::Size => return Some(row_key.size_bytes as f64),
            SortKey::Nr => return row_key.nr.map(|n| n as f64),
            SortKey::Ra => return row_key.ra.map(|n| n as f64),
            SortKey::InFlight => return row_key.in_flight.map(|n| n as f64),
            SortKey::RP99 => return row_key.r_p99,
            SortKey::WP99 => return row_key.w_p99,
            _ => {}
        }
        let s = row_key.stats?;
        Some(match self {
            SortKey::Name
            | SortKey::Size
            | SortKey::Nr
            | SortKey::Ra
            | SortKey::InFlight
            | SortKey::RP99
            | SortKey::WP99 => return None,
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
#[derive(Debug, Clone, Copy, Default)]
pub struct RowKey<'a> {
    pub name: &'a str,
    pub size_bytes: u64,
    pub stats: Option<&'a ExtStats>,
    /// Filled only when the table is sorted by it.
    pub in_flight: Option<u64>,
    pub nr: Option<u64>,
    pub ra: Option<u64>,
    /// The newest interval's p99 in ms, when it rests on at least
    /// [`MIN_IOS_FOR_P99`] I/Os (what the table shows as a figure, not a count);
    /// filled only when the table is sorted by a p99 column.
    pub r_p99: Option<f64>,
    pub w_p99: Option<f64>,
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
pub fn cmp_rows(key: SortKey, row_key: &RowKey, b: &RowKey) -> Ordering {
    cmp_figures(key, row_key, b).then_with(|| natural_cmp(row_key.name, b.name))
}

/// [`cmp_rows`] without its last tie-break, the names: a stable sort of
/// rows already in name order by this gives the same order.
pub fn cmp_figures(key: SortKey, row_key: &RowKey, b: &RowKey) -> Ordering {
    if key == SortKey::Name {
        return Ordering::Equal;
    }
    let by = |k: SortKey| desc(k.value(row_key), k.value(b));
    by(key)
        .then_with(|| by(SortKey::Aqu))
        .then_with(|| by(SortKey::Await))
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

impl Hot {
    /// What the detail pane's title says about the selected row, whose `▶`
    /// takes the place of the `!` (and, without colour, the only sign).
    pub fn label(self) -> &'static str {
        match self {
            Self::Busy => "! busy",
            Self::Slow => "! slow",
        }
    }
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
pub fn hot(ext_stats: &ExtStats, baseline: Option<f64>) -> Option<Hot> {
    if ext_stats.util >= HOT_UTIL {
        return Some(Hot::Busy);
    }
    let now = ext_stats.max_await();
    let b = baseline?;
    (now >= b * HOT_AWAIT_FACTOR && now - b >= HOT_AWAIT_MIN_MS).then_some(Hot::Slow)
}

impl super::App {
    /// Where `o` (`Action::Sort`), `<` or `>` moves the sort: the next key
    /// in its order whose column the table shows now ([`App::on_columns`];
    /// every key until a frame was drawn), so the rows are never ordered by
    /// a figure that is not on screen.
    pub fn sort_step(&self, action: crate::tui::command::Action) -> SortKey {
        use crate::tui::command::Action;
        let p99 = self.p99_shown();
        let mut k = self.sort;
        for _ in 0..TELLING_ORDER.len() {
            k = match action {
                Action::Sort => k.next(p99),
                a => k.beside(a == Action::SortLeft, p99),
            };
            if self.columns.as_ref().is_none_or(|c| c.contains(&k)) {
                return k;
            }
        }
        k
    }

    /// Are the p99 columns on screen (the source traces, or says why not)?
    /// Only then do `o` and `<`/`>` visit them.
    pub fn p99_shown(&self) -> bool {
        self.latency.tracing != Tracing::Unknown
    }

    /// The figures [`cmp_rows`] orders `device` by, looked up once per device.
    pub fn row_key<'a>(&'a self, device: &'a BlockDevice) -> RowKey<'a> {
        // Only a p99 sort looks at them (the ties go to aqu-sz and await):
        // computed for every row on every sort, they were a tenth of the
        // screen's idle cost at 1000 devices.
        let want_p99 = self.sort.is_p99();
        let p99 = |dir: Dir| {
            if !want_p99 {
                return None;
            }
            self.latency_now(&device.name, dir)
                .flatten()
                .filter(|p| p.n >= MIN_IOS_FOR_P99)
                .map(|p| p.p99)
        };
        RowKey {
            name: &device.name,
            size_bytes: device.size_bytes,
            stats: self.latest(&device.name),
            // Only its own sort looks at it (one lookup less per row).
            in_flight: (self.sort == SortKey::InFlight)
                .then(|| self.in_flight(&device.name).map(|n| n.total))
                .flatten(),
            nr: device.queue.nr_requests,
            ra: device.queue.read_ahead_kb,
            r_p99: p99(Dir::Read),
            w_p99: p99(Dir::Write),
        }
    }

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

    /// The table sorts rows already in name order stably by the figures
    /// alone: the same order as [`cmp_rows`], ties included.
    #[test]
    fn a_stable_sort_by_figures_of_rows_in_name_order_is_cmp_rows() {
        let names: Vec<String> = (0..40).map(|i| format!("loop{i}")).collect();
        let mut seed = 7u64;
        let mut pick = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        // Few distinct values: many ties at every level.
        let stats: Vec<Option<ExtStats>> = names
            .iter()
            .map(|_| {
                (pick(4) > 0).then(|| ExtStats {
                    util: pick(2) as f64 * 50.0,
                    aqu_sz: pick(2) as f64,
                    r_await: pick(2) as f64 * 2.0,
                    r_s: pick(3) as f64,
                    ..ExtStats::default()
                })
            })
            .collect();
        let rows: Vec<RowKey> = names
            .iter()
            .zip(&stats)
            .map(|(n, s)| RowKey {
                name: n,
                size_bytes: 1 << pick(3),
                stats: s.as_ref(),
                nr: Some(pick(2)),
                ..RowKey::default()
            })
            .collect();
        let mut key = SortKey::Name;
        for _ in 0..40 {
            let mut a = rows.clone();
            a.sort_by(|x, y| cmp_rows(key, x, y));
            let mut b = rows.clone();
            b.sort_by(|x, y| cmp_figures(key, x, y));
            let a: Vec<&str> = a.iter().map(|r| r.name).collect();
            let b: Vec<&str> = b.iter().map(|r| r.name).collect();
            assert_eq!(a, b, "{key:?}");
            key = key.next(true);
        }
    }

    fn order(key: SortKey, rows: &[(&str, Option<ExtStats>)]) -> Vec<String> {
        let mut v: Vec<RowKey> = rows
            .iter()
            .map(|(n, s)| RowKey {
                name: n,
                size_bytes: 1 << 30,
                stats: s.as_ref(),
                ..RowKey::default()
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
                in_flight: Some(0),
                nr: Some(64),
                ra: Some(128),
                r_p99: Some(0.5),
                w_p99: Some(0.5),
            };
            let b = RowKey {
                name: "b",
                size_bytes: 2,
                stats: Some(&big),
                in_flight: Some(3),
                nr: Some(256),
                ra: Some(4096),
                r_p99: Some(9.0),
                w_p99: Some(9.0),
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
        let mut k = SortKey::Name.next(true);
        assert_eq!(k, SortKey::Util, "the first o sorts by %util");
        while k != SortKey::Name {
            seen.push(k);
            k = k.next(true);
        }
        assert_eq!(seen.len(), COLUMN_ORDER.len());
        assert!(COLUMN_ORDER.iter().all(|c| seen.contains(c)));
        assert_eq!(SortKey::Name.beside(false, true), SortKey::Size);
        assert_eq!(SortKey::Size.beside(false, true), SortKey::Nr);
        assert_eq!(SortKey::Nr.beside(false, true), SortKey::Ra);
        assert_eq!(SortKey::WAwait.beside(false, true), SortKey::RP99);
        assert_eq!(SortKey::RP99.beside(false, true), SortKey::WP99);
        assert_eq!(SortKey::WP99.beside(false, true), SortKey::RAreqSz);
        assert_eq!(SortKey::Name.beside(true, true), SortKey::Await);
        assert_eq!(SortKey::Await.beside(false, true), SortKey::Name);
        assert_eq!(SortKey::Util.beside(true, true), SortKey::Aqu);
    }

    #[test]
    fn without_p99_columns_the_keys_pass_over_them() {
        assert_eq!(SortKey::WAwait.beside(false, false), SortKey::RAreqSz);
        assert_eq!(SortKey::RAreqSz.beside(true, false), SortKey::WAwait);
        assert_eq!(SortKey::WAwait.next(false), SortKey::Rs);
        let mut k = SortKey::Name.next(false);
        let mut n = 1;
        while k != SortKey::Name {
            assert!(!k.is_p99(), "{k:?}");
            k = k.next(false);
            n += 1;
        }
        assert_eq!(n, COLUMN_ORDER.len() - 2);
    }

    #[test]
    fn a_row_without_a_p99_sorts_last_and_ties_break_as_elsewhere() {
        let s = |aqu: f64| stats(10.0, aqu, 1.0);
        let (s1, s2, s3, s4) = (s(1.0), s(5.0), s(1.0), s(9.0));
        let rows = [
            ("few", Some(&s4), None),
            ("slow", Some(&s1), Some(12.0)),
            ("tie_a", Some(&s1), Some(3.0)),
            ("tie_b", Some(&s2), Some(3.0)),
            ("fast", Some(&s3), Some(0.4)),
            ("untraced", None, None),
        ];
        let mut v: Vec<RowKey> = rows
            .iter()
            .map(|&(name, stats, p99)| RowKey {
                name,
                stats,
                r_p99: p99,
                w_p99: p99,
                ..RowKey::default()
            })
            .collect();
        for k in [SortKey::RP99, SortKey::WP99] {
            v.sort_by(|a, b| cmp_rows(k, a, b));
            let names: Vec<&str> = v.iter().map(|r| r.name).collect();
            // Equal p99s: the larger aqu-sz first; no p99: after every
            // row with one, in the usual tie order (aqu-sz first).
            assert_eq!(
                names,
                ["slow", "tie_b", "tie_a", "fast", "few", "untraced"],
                "{k:?}"
            );
        }
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
