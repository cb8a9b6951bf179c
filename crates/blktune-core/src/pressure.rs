//! Pressure stall information (PSI) for I/O: the share of time in which some
//! (or all non-idle) tasks were stalled waiting for I/O. Unlike iowait it
//! counts tasks blocked on O_DIRECT, libaio and io_uring I/O, so it is the
//! honest "is this machine waiting on its disks".
//!
//! Format (kernel `Documentation/accounting/psi.rst`):
//!
//! ```text
//! some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! ```
//!
//! `avg*` are percentages over 10, 60 and 300 s; `total` is the stall time in
//! microseconds since boot (for a cgroup's `io.pressure`, since it was made).
//! The system-wide file is `/proc/pressure/io` (kernels 4.20 on, with
//! `CONFIG_PSI`); each cgroup v2 directory has `io.pressure` in the same format.

use serde::{Deserialize, Serialize};

/// One line of a pressure file.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Stall {
    /// Percent of the last 10 s.
    pub avg10: f64,
    /// Percent of the last 60 s.
    pub avg60: f64,
    /// Percent of the last 300 s.
    pub avg300: f64,
    /// Stalled microseconds in all.
    pub total_us: u64,
}

/// An I/O pressure file: `some` always, `full` where the kernel has it (5.13
/// on for the system file; cgroups had it from the start).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pressure {
    /// Some task was stalled on I/O.
    pub some: Stall,
    /// Every non-idle task was stalled on I/O at once.
    pub full: Option<Stall>,
}

impl Pressure {
    /// Parse a pressure file; `None` when it has no readable `some` line.
    /// Unknown keys are ignored (a later kernel may add some); a value that
    /// does not parse, or a percentage outside 0 to 100, spoils its line.
    pub fn parse(text: &str) -> Option<Self> {
        let mut some = None;
        let mut full = None;
        for line in text.lines().take(8) {
            let mut words = line.split_ascii_whitespace();
            let slot = match words.next() {
                Some("some") => &mut some,
                Some("full") => &mut full,
                _ => continue,
            };
            *slot = parse_stall(words);
        }
        Some(Self { some: some?, full })
    }

    /// Percent of the time between `prev` and `self` (`secs` apart) in which
    /// some task was stalled, from the two totals: exact for the interval,
    /// where the `avg*` figures are decaying averages. `None` when the total
    /// went backwards (another file, a cgroup made again) or `secs` is not
    /// positive.
    pub fn some_pct_since(&self, prev: &Pressure, secs: f64) -> Option<f64> {
        pct_since(self.some.total_us, prev.some.total_us, secs)
    }

    /// As [`Pressure::some_pct_since`], for `full`.
    pub fn full_pct_since(&self, prev: &Pressure, secs: f64) -> Option<f64> {
        pct_since(self.full?.total_us, prev.full?.total_us, secs)
    }
}

/// The system's I/O pressure as one sample gives it: the file, and the
/// stalled share of the interval since the sample before.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct IoPressure {
    /// `/proc/pressure/io` as read.
    pub file: Pressure,
    /// Percent of the interval in which some task stalled on I/O (`None`
    /// on the first sample).
    pub some_pct: Option<f64>,
    /// ... in which every non-idle task did.
    pub full_pct: Option<f64>,
}

impl IoPressure {
    /// This reading, with the interval's shares where `prev` (read `secs`
    /// before) allows.
    pub fn since(file: Pressure, prev: Option<&Pressure>, secs: Option<f64>) -> Self {
        let share = |f: fn(&Pressure, &Pressure, f64) -> Option<f64>| {
            prev.zip(secs).and_then(|(p, s)| f(&file, p, s))
        };
        Self {
            file,
            some_pct: share(Pressure::some_pct_since),
            full_pct: share(Pressure::full_pct_since),
        }
    }
}

/// `avg10=.. avg60=.. avg300=.. total=..`
fn parse_stall<'a>(words: impl Iterator<Item = &'a str>) -> Option<Stall> {
    let (mut avg10, mut avg60, mut avg300, mut total) = (None, None, None, None);
    for w in words {
        let (k, v) = w.split_once('=')?;
        let pct = || v.parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p));
        match k {
            "avg10" => avg10 = Some(pct()?),
            "avg60" => avg60 = Some(pct()?),
            "avg300" => avg300 = Some(pct()?),
            "total" => total = Some(v.parse::<u64>().ok()?),
            _ => {}
        }
    }
    Some(Stall {
        avg10: avg10?,
        avg60: avg60?,
        avg300: avg300?,
        total_us: total?,
    })
}

/// Stalled share of `secs` between two totals, in percent (capped at 100:
/// the two reads are not taken at exactly the interval's ends).
fn pct_since(now_us: u64, prev_us: u64, secs: f64) -> Option<f64> {
    let stalled = now_us.checked_sub(prev_us)?;
    (secs > 0.0).then(|| (stalled as f64 / (secs * 1e6) * 100.0).min(100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "some avg10=13.13 avg60=5.00 avg300=1.25 total=8000000\n\
                          full avg10=2.50 avg60=1.00 avg300=0.25 total=1000000\n";

    #[test]
    fn both_lines_parse_with_their_totals() {
        let p = Pressure::parse(SAMPLE).unwrap();
        assert_eq!(p.some.avg10, 13.13);
        assert_eq!(p.some.avg300, 1.25);
        assert_eq!(p.some.total_us, 8_000_000);
        assert_eq!(p.full.unwrap().avg60, 1.0);
    }

    #[test]
    fn an_old_kernel_has_only_some_and_garbage_is_none() {
        let p = Pressure::parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n").unwrap();
        assert_eq!(p.full, None);
        assert_eq!(Pressure::parse(""), None);
        assert_eq!(
            Pressure::parse("full avg10=1 avg60=1 avg300=1 total=1"),
            None
        );
        assert_eq!(
            Pressure::parse("some avg10=x avg60=0 avg300=0 total=0"),
            None
        );
        assert_eq!(
            Pressure::parse("some avg10=250 avg60=0 avg300=0 total=0"),
            None
        );
        assert_eq!(Pressure::parse("some avg10=1 avg60=1 avg300=1"), None);
        // Keys a later kernel might add are ignored.
        let p = Pressure::parse("some avg10=1 avg60=1 avg300=1 total=5 avg3600=1").unwrap();
        assert_eq!(p.some.total_us, 5);
    }

    #[test]
    fn the_share_of_an_interval_comes_from_the_totals() {
        let a = Pressure::parse(SAMPLE).unwrap();
        let mut b = a;
        b.some.total_us += 250_000; // 0.25 s stalled in 1 s
        b.full = Some(Stall {
            total_us: a.full.unwrap().total_us + 100_000,
            ..a.full.unwrap()
        });
        assert_eq!(b.some_pct_since(&a, 1.0), Some(25.0));
        assert_eq!(b.full_pct_since(&a, 2.0), Some(5.0));
        assert_eq!(a.some_pct_since(&b, 1.0), None, "backwards");
        assert_eq!(b.some_pct_since(&a, 0.0), None);
        b.some.total_us += 10_000_000;
        assert_eq!(b.some_pct_since(&a, 1.0), Some(100.0), "capped");
    }
}
