//! iostat -x extended statistics from two diskstats samples.
//!
//! The formulas are sysstat's: `compute_ext_disk_stats()` in `rd_stats.c` and
//! `write_ext_stat()` / `write_json_ext_stat()` in `iostat.c`. Field names in
//! JSON are iostat's `-o JSON` keys, so the two outputs can be diffed.
//!
//! Unlike sysstat, a counter that went backwards (the device was removed and
//! re-created, or the stats were reset) gives "no data" rather than zeros.

use crate::diskstats::Counters;
use serde::{Deserialize, Serialize};

/// One interval's extended statistics for one device, as `iostat -x` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ExtStats {
    #[serde(rename = "r/s")]
    pub r_s: f64,
    #[serde(rename = "w/s")]
    pub w_s: f64,
    #[serde(rename = "d/s")]
    pub d_s: f64,
    #[serde(rename = "f/s")]
    pub f_s: f64,
    #[serde(rename = "rkB/s")]
    pub rkb_s: f64,
    #[serde(rename = "wkB/s")]
    pub wkb_s: f64,
    #[serde(rename = "dkB/s")]
    pub dkb_s: f64,
    #[serde(rename = "rrqm/s")]
    pub rrqm_s: f64,
    #[serde(rename = "wrqm/s")]
    pub wrqm_s: f64,
    #[serde(rename = "drqm/s")]
    pub drqm_s: f64,
    /// %rrqm
    #[serde(rename = "rrqm")]
    pub rrqm_pct: f64,
    /// %wrqm
    #[serde(rename = "wrqm")]
    pub wrqm_pct: f64,
    /// %drqm
    #[serde(rename = "drqm")]
    pub drqm_pct: f64,
    pub r_await: f64,
    pub w_await: f64,
    pub d_await: f64,
    pub f_await: f64,
    #[serde(rename = "rareq-sz")]
    pub rareq_sz: f64,
    #[serde(rename = "wareq-sz")]
    pub wareq_sz: f64,
    #[serde(rename = "dareq-sz")]
    pub dareq_sz: f64,
    #[serde(rename = "aqu-sz")]
    pub aqu_sz: f64,
    /// %util
    #[serde(rename = "util")]
    pub util: f64,
}

impl ExtStats {
    /// Reads plus writes per second.
    pub fn iops(&self) -> f64 {
        self.r_s + self.w_s
    }

    /// The larger of r_await and w_await, the one number a sparkline shows.
    pub fn max_await(&self) -> f64 {
        self.r_await.max(self.w_await)
    }
}

/// Why an interval has no numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoData {
    /// First sample of this device: no earlier sample to subtract.
    FirstSample,
    /// A 64-bit counter went backwards: the device was re-created or reset.
    CounterReset,
    /// The interval was zero or negative.
    NoTime,
}

/// Difference of a 64-bit counter, `None` when it went backwards.
fn d64(prev: u64, cur: u64) -> Option<u64> {
    cur.checked_sub(prev)
}

/// Difference of a 32-bit millisecond counter. These wrap (the kernel prints
/// them with `%u`), so a smaller value is a wrap, never a reset on its own.
fn d32(prev: u32, cur: u32) -> u64 {
    u64::from(cur.wrapping_sub(prev))
}

/// `a / b`, or 0 when `b` is 0 (sysstat's convention for awaits and sizes).
fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
}

/// Extended statistics over `itv_secs` seconds between two samples.
pub fn compute(prev: &Counters, cur: &Counters, itv_secs: f64) -> Result<ExtStats, NoData> {
    if itv_secs.is_nan() || itv_secs <= 0.0 {
        return Err(NoData::NoTime);
    }
    let dis = |p: Option<u64>, c: Option<u64>| -> Result<u64, NoData> {
        match (p, c) {
            (Some(p), Some(c)) => d64(p, c).ok_or(NoData::CounterReset),
            _ => Ok(0),
        }
    };
    let rd_ios = d64(prev.rd_ios, cur.rd_ios).ok_or(NoData::CounterReset)? as f64;
    let wr_ios = d64(prev.wr_ios, cur.wr_ios).ok_or(NoData::CounterReset)? as f64;
    let rd_merges = d64(prev.rd_merges, cur.rd_merges).ok_or(NoData::CounterReset)? as f64;
    let wr_merges = d64(prev.wr_merges, cur.wr_merges).ok_or(NoData::CounterReset)? as f64;
    let rd_sec = d64(prev.rd_sectors, cur.rd_sectors).ok_or(NoData::CounterReset)? as f64;
    let wr_sec = d64(prev.wr_sectors, cur.wr_sectors).ok_or(NoData::CounterReset)? as f64;

    let pd = prev.discard;
    let cd = cur.discard;
    let dc_ios = dis(pd.map(|d| d.ios), cd.map(|d| d.ios))? as f64;
    let dc_merges = dis(pd.map(|d| d.merges), cd.map(|d| d.merges))? as f64;
    let dc_sec = dis(pd.map(|d| d.sectors), cd.map(|d| d.sectors))? as f64;
    let dc_ticks = match (pd, cd) {
        (Some(p), Some(c)) => d32(p.ticks, c.ticks) as f64,
        _ => 0.0,
    };
    let (fl_ios, fl_ticks) = match (prev.flush, cur.flush) {
        (Some(p), Some(c)) => (
            d64(p.ios, c.ios).ok_or(NoData::CounterReset)? as f64,
            d32(p.ticks, c.ticks) as f64,
        ),
        _ => (0.0, 0.0),
    };

    let rd_ticks = d32(prev.rd_ticks, cur.rd_ticks) as f64;
    let wr_ticks = d32(prev.wr_ticks, cur.wr_ticks) as f64;
    let io_ticks = d32(prev.io_ticks, cur.io_ticks) as f64;
    let rq_ticks = d32(prev.time_in_queue, cur.time_in_queue) as f64;

    let pct = |merges: f64, ios: f64| ratio(merges * 100.0, merges + ios);
    Ok(ExtStats {
        r_s: rd_ios / itv_secs,
        w_s: wr_ios / itv_secs,
        d_s: dc_ios / itv_secs,
        f_s: fl_ios / itv_secs,
        // Sectors are 512 bytes, so kB = sectors / 2.
        rkb_s: rd_sec / 2.0 / itv_secs,
        wkb_s: wr_sec / 2.0 / itv_secs,
        dkb_s: dc_sec / 2.0 / itv_secs,
        rrqm_s: rd_merges / itv_secs,
        wrqm_s: wr_merges / itv_secs,
        drqm_s: dc_merges / itv_secs,
        rrqm_pct: pct(rd_merges, rd_ios),
        wrqm_pct: pct(wr_merges, wr_ios),
        drqm_pct: pct(dc_merges, dc_ios),
        r_await: ratio(rd_ticks, rd_ios),
        w_await: ratio(wr_ticks, wr_ios),
        d_await: ratio(dc_ticks, dc_ios),
        f_await: ratio(fl_ticks, fl_ios),
        rareq_sz: ratio(rd_sec / 2.0, rd_ios),
        wareq_sz: ratio(wr_sec / 2.0, wr_ios),
        dareq_sz: ratio(dc_sec / 2.0, dc_ios),
        aqu_sz: rq_ticks / (itv_secs * 1000.0),
        // sysstat does not cap %util at 100 (FIELD-NOTES), neither do we.
        util: io_ticks / (itv_secs * 1000.0) * 100.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diskstats::{DiscardCounters, FlushCounters};
    use proptest::prelude::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn base() -> Counters {
        Counters {
            rd_ios: 1000,
            rd_merges: 10,
            rd_sectors: 8000,
            rd_ticks: 500,
            wr_ios: 2000,
            wr_merges: 100,
            wr_sectors: 400_000,
            wr_ticks: 9000,
            in_flight: 0,
            io_ticks: 10_000,
            time_in_queue: 20_000,
            discard: Some(DiscardCounters {
                ios: 5,
                merges: 0,
                sectors: 100,
                ticks: 3,
            }),
            flush: Some(FlushCounters { ios: 40, ticks: 80 }),
        }
    }

    /// Hand-computed: 2 s interval; 400 reads of 4 kB (8 sectors each) with
    /// 100 merges taking 1200 ms in all; 50 writes of 1 MiB (2048 sectors)
    /// with 50 merges taking 3000 ms; 10 discards of 64 sectors, 2 merged,
    /// 20 ms; 6 flushes, 30 ms; busy 1500 ms; weighted 4300 ms.
    #[test]
    fn every_statistic_matches_a_hand_computation() {
        let p = base();
        let mut c = p;
        c.rd_ios += 400;
        c.rd_merges += 100;
        c.rd_sectors += 400 * 8;
        c.rd_ticks += 1200;
        c.wr_ios += 50;
        c.wr_merges += 50;
        c.wr_sectors += 50 * 2048;
        c.wr_ticks += 3000;
        c.io_ticks += 1500;
        c.time_in_queue += 4300;
        c.discard = Some(DiscardCounters {
            ios: 15,
            merges: 2,
            sectors: 100 + 640,
            ticks: 23,
        });
        c.flush = Some(FlushCounters {
            ios: 46,
            ticks: 110,
        });
        let s = compute(&p, &c, 2.0).unwrap();
        let want = [
            ("r/s", s.r_s, 200.0),
            ("w/s", s.w_s, 25.0),
            ("d/s", s.d_s, 5.0),
            ("f/s", s.f_s, 3.0),
            ("rkB/s", s.rkb_s, 800.0),   // 3200 sectors = 1600 kB over 2 s
            ("wkB/s", s.wkb_s, 25600.0), // 102400 sectors = 51200 kB
            ("dkB/s", s.dkb_s, 160.0),   // 640 sectors = 320 kB
            ("rrqm/s", s.rrqm_s, 50.0),
            ("wrqm/s", s.wrqm_s, 25.0),
            ("drqm/s", s.drqm_s, 1.0),
            ("%rrqm", s.rrqm_pct, 20.0), // 100 / (100 + 400)
            ("%wrqm", s.wrqm_pct, 50.0), // 50 / (50 + 50)
            ("%drqm", s.drqm_pct, 100.0 * 2.0 / 12.0),
            ("r_await", s.r_await, 3.0),  // 1200 ms / 400
            ("w_await", s.w_await, 60.0), // 3000 ms / 50
            ("d_await", s.d_await, 2.0),
            ("f_await", s.f_await, 5.0),
            ("rareq-sz", s.rareq_sz, 4.0),
            ("wareq-sz", s.wareq_sz, 1024.0),
            ("dareq-sz", s.dareq_sz, 32.0),
            ("aqu-sz", s.aqu_sz, 2.15), // 4300 ms / 2000 ms
            ("%util", s.util, 75.0),    // 1500 ms / 2000 ms
        ];
        for (name, got, exp) in want {
            assert!(close(got, exp), "{name}: got {got}, want {exp}");
        }
    }

    #[test]
    fn idle_interval_is_all_zero_not_nan() {
        let p = base();
        let s = compute(&p, &p, 1.0).unwrap();
        assert_eq!(s, ExtStats::default());
    }

    #[test]
    fn wrapped_ms_counters_give_the_true_difference() {
        let mut p = base();
        p.rd_ticks = u32::MAX - 99;
        p.io_ticks = u32::MAX - 499;
        p.time_in_queue = u32::MAX;
        let mut c = p;
        c.rd_ios += 10;
        c.rd_ticks = 100; // 200 ms later, across the wrap
        c.io_ticks = 500; // 1000 ms busy
        c.time_in_queue = 1999; // 2000 ms weighted
        let s = compute(&p, &c, 1.0).unwrap();
        assert!(close(s.r_await, 20.0), "{}", s.r_await);
        assert!(close(s.util, 100.0), "{}", s.util);
        assert!(close(s.aqu_sz, 2.0), "{}", s.aqu_sz);
    }

    #[test]
    fn a_counter_that_went_backwards_is_no_data() {
        let p = base();
        let mut c = p;
        c.rd_ios = 3;
        assert_eq!(compute(&p, &c, 1.0), Err(NoData::CounterReset));
        let mut c = p;
        c.wr_sectors = 0;
        assert_eq!(compute(&p, &c, 1.0), Err(NoData::CounterReset));
        let mut c = p;
        c.flush = Some(FlushCounters { ios: 1, ticks: 0 });
        assert_eq!(compute(&p, &c, 1.0), Err(NoData::CounterReset));
    }

    #[test]
    fn old_kernels_without_discard_or_flush_fields_give_zero_for_them() {
        let mut p = base();
        p.discard = None;
        p.flush = None;
        let mut c = p;
        c.rd_ios += 10;
        let s = compute(&p, &c, 1.0).unwrap();
        assert_eq!((s.d_s, s.f_s, s.d_await, s.f_await), (0.0, 0.0, 0.0, 0.0));
        assert!(close(s.r_s, 10.0));
    }

    #[test]
    fn zero_or_nan_interval_is_no_data() {
        let p = base();
        assert_eq!(compute(&p, &p, 0.0), Err(NoData::NoTime));
        assert_eq!(compute(&p, &p, -1.0), Err(NoData::NoTime));
        assert_eq!(compute(&p, &p, f64::NAN), Err(NoData::NoTime));
    }

    fn counters() -> impl Strategy<Value = Counters> {
        (
            any::<[u64; 7]>(),
            any::<[u32; 4]>(),
            proptest::option::of((any::<[u64; 3]>(), any::<u32>())),
            proptest::option::of((any::<u64>(), any::<u32>())),
        )
            .prop_map(|(a, t, d, f)| Counters {
                rd_ios: a[0],
                rd_merges: a[1],
                rd_sectors: a[2],
                rd_ticks: t[0],
                wr_ios: a[3],
                wr_merges: a[4],
                wr_sectors: a[5],
                wr_ticks: t[1],
                in_flight: a[6],
                io_ticks: t[2],
                time_in_queue: t[3],
                discard: d.map(|(d, ticks)| DiscardCounters {
                    ios: d[0],
                    merges: d[1],
                    sectors: d[2],
                    ticks,
                }),
                flush: f.map(|(ios, ticks)| FlushCounters { ios, ticks }),
            })
    }

    proptest! {
        #[test]
        fn math_never_panics_and_never_gives_nan(p in counters(), c in counters(), itv in any::<f64>()) {
            if let Ok(s) = compute(&p, &c, itv) {
                let all = [s.r_s, s.w_s, s.d_s, s.f_s, s.rkb_s, s.wkb_s, s.dkb_s, s.rrqm_s,
                    s.wrqm_s, s.drqm_s, s.rrqm_pct, s.wrqm_pct, s.drqm_pct, s.r_await, s.w_await,
                    s.d_await, s.f_await, s.rareq_sz, s.wareq_sz, s.dareq_sz, s.aqu_sz, s.util];
                for v in all {
                    prop_assert!(!v.is_nan() && v >= 0.0, "{v} from {p:?} -> {c:?} in {itv}");
                }
            }
        }

        #[test]
        fn growing_counters_always_give_data(p in counters(), step in 0u64..1_000_000, itv in 0.001f64..100.0) {
            let mut c = p;
            c.rd_ios = p.rd_ios.saturating_add(step);
            c.rd_ticks = p.rd_ticks.wrapping_add(step as u32);
            prop_assert!(compute(&p, &c, itv).is_ok());
        }
    }
}
