//! Parser for `/proc/diskstats`.
//!
//! Field layout: kernel `Documentation/admin-guide/iostats.rst` and
//! `Documentation/ABI/testing/procfs-diskstats`. A line is major, minor, name
//! and then 11 (before 4.18), 15 (4.18+: discards) or 17 (5.5+: flushes)
//! counters. The millisecond fields are printed with `%u` and wrap at 2^32;
//! the I/O and sector counts are `unsigned long` (64-bit here).

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// The raw counters of one device at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counters {
    pub rd_ios: u64,
    pub rd_merges: u64,
    pub rd_sectors: u64,
    pub rd_ticks: u32,
    pub wr_ios: u64,
    pub wr_merges: u64,
    pub wr_sectors: u64,
    pub wr_ticks: u32,
    pub in_flight: u64,
    /// Milliseconds the device had I/O in flight (`io_ticks`).
    pub io_ticks: u32,
    /// Weighted milliseconds (`time_in_queue`).
    pub time_in_queue: u32,
    /// Discard fields, from 4.18 on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discard: Option<DiscardCounters>,
    /// Flush fields, from 5.5 on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush: Option<FlushCounters>,
}

/// Discard counters (4.18+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DiscardCounters {
    pub ios: u64,
    pub merges: u64,
    pub sectors: u64,
    pub ticks: u32,
}

/// Flush counters (5.5+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FlushCounters {
    pub ios: u64,
    pub ticks: u32,
}

/// One parsed line of `/proc/diskstats`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskStatsLine {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    pub counters: Counters,
}

/// I/Os in flight now, split by direction: `/sys/block/X/inflight`, two
/// numbers, reads then writes (`part_inflight_show` in the kernel's
/// `block/genhd.c`; `Documentation/ABI/stable/sysfs-block`). Their sum is
/// diskstats' [`Counters::in_flight`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InFlight {
    pub reads: u64,
    pub writes: u64,
}

impl InFlight {
    /// Reads and writes together: what diskstats counts.
    pub fn total(self) -> u64 {
        self.reads.saturating_add(self.writes)
    }
}

impl FromStr for InFlight {
    type Err = ParseError;

    /// `       3        1\n`: exactly two numbers.
    fn from_str(text: &str) -> Result<Self, ParseError> {
        let cols: Vec<&str> = text.split_whitespace().collect();
        if cols.len() != 2 {
            return Err(ParseError::Columns(cols.len()));
        }
        Ok(Self {
            reads: num(&cols, 0)?,
            writes: num(&cols, 1)?,
        })
    }
}

/// Why a diskstats line (or an `inflight` file) could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("expected 14, 18 or 20 columns (2 in inflight), found {0}")]
    Columns(usize),
    #[error("column {column} is not a number: {value:?}")]
    Number { column: usize, value: String },
}

fn num<T: FromStr>(cols: &[&str], index: usize) -> Result<T, ParseError> {
    // Callers only pass indices below the checked column count.
    let raw = cols.get(index).copied().unwrap_or_default();
    raw.parse().map_err(|_| ParseError::Number {
        column: index + 1,
        value: raw.chars().take(32).collect(),
    })
}

impl FromStr for DiskStatsLine {
    type Err = ParseError;

    fn from_str(line: &str) -> Result<Self, Self::Err> {
        // The 20 columns we know in place (no allocation per line: a
        // thousand devices are a thousand lines per tick), and the count.
        let mut known = [""; 20];
        let mut n = 0;
        for (slot, w) in known.iter_mut().zip(line.split_ascii_whitespace()) {
            *slot = w;
            n += 1;
        }
        if n == known.len() {
            n += line.split_ascii_whitespace().skip(known.len()).count();
        }
        // Fields are only ever appended (4.18, 5.5), so a longer line from a
        // future kernel still starts with the 20 we know; the rest is ignored.
        if !matches!(n, 14 | 18 | 20..=64) {
            return Err(ParseError::Columns(n));
        }
        let cols = &known[..n.min(known.len())];
        let mut counters = Counters {
            rd_ios: num(cols, 3)?,
            rd_merges: num(cols, 4)?,
            rd_sectors: num(cols, 5)?,
            rd_ticks: num(cols, 6)?,
            wr_ios: num(cols, 7)?,
            wr_merges: num(cols, 8)?,
            wr_sectors: num(cols, 9)?,
            wr_ticks: num(cols, 10)?,
            in_flight: num(cols, 11)?,
            io_ticks: num(cols, 12)?,
            time_in_queue: num(cols, 13)?,
            discard: None,
            flush: None,
        };
        if n >= 18 {
            counters.discard = Some(DiscardCounters {
                ios: num(cols, 14)?,
                merges: num(cols, 15)?,
                sectors: num(cols, 16)?,
                ticks: num(cols, 17)?,
            });
        }
        if n >= 20 {
            counters.flush = Some(FlushCounters {
                ios: num(cols, 18)?,
                ticks: num(cols, 19)?,
            });
        }
        Ok(DiskStatsLine {
            major: num(cols, 0)?,
            minor: num(cols, 1)?,
            name: cols[2].to_owned(),
            counters,
        })
    }
}

/// Counters as the numbers of a diskstats line after the name.
pub fn counters_to_fields(counters: &Counters) -> Vec<u64> {
    let mut v = vec![
        counters.rd_ios,
        counters.rd_merges,
        counters.rd_sectors,
        u64::from(counters.rd_ticks),
        counters.wr_ios,
        counters.wr_merges,
        counters.wr_sectors,
        u64::from(counters.wr_ticks),
        counters.in_flight,
        u64::from(counters.io_ticks),
        u64::from(counters.time_in_queue),
    ];
    if let Some(d) = counters.discard {
        v.extend([d.ios, d.merges, d.sectors, u64::from(d.ticks)]);
        if let Some(f) = counters.flush {
            v.extend([f.ios, u64::from(f.ticks)]);
        }
    }
    v
}

/// The inverse of [`counters_to_fields`]; the ms fields must fit in 32 bits
/// (the kernel prints them with `%u`, `Documentation/admin-guide/iostats.rst`).
pub fn fields_to_counters(values: &[u64]) -> Result<Counters, String> {
    if !matches!(values.len(), 11 | 15 | 17) {
        return Err(format!(
            "expected 11, 15 or 17 counters, found {}",
            values.len()
        ));
    }
    let ms = |i: usize| {
        u32::try_from(values[i])
            .map_err(|_| format!("counter {} ({}) is not a 32-bit value", i + 1, values[i]))
    };
    Ok(Counters {
        rd_ios: values[0],
        rd_merges: values[1],
        rd_sectors: values[2],
        rd_ticks: ms(3)?,
        wr_ios: values[4],
        wr_merges: values[5],
        wr_sectors: values[6],
        wr_ticks: ms(7)?,
        in_flight: values[8],
        io_ticks: ms(9)?,
        time_in_queue: ms(10)?,
        discard: if values.len() >= 15 {
            Some(DiscardCounters {
                ios: values[11],
                merges: values[12],
                sectors: values[13],
                ticks: ms(14)?,
            })
        } else {
            None
        },
        flush: if values.len() == 17 {
            Some(FlushCounters {
                ios: values[15],
                ticks: ms(16)?,
            })
        } else {
            None
        },
    })
}

impl DiskStatsLine {
    /// The usual line (14, 18 or 20 columns of plain decimal digits but the
    /// name) in one pass over its bytes; `None` for anything else, which
    /// [`FromStr`] then parses or explains. A thousand devices are a
    /// thousand lines per tick.
    fn parse_plain(line: &str) -> Option<Self> {
        let bytes = line.as_bytes();
        let mut nums = [0u64; 20];
        let mut name = None;
        let mut col = 0;
        let mut i = 0;
        loop {
            while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            if i == bytes.len() {
                break;
            }
            let start = i;
            while bytes.get(i).is_some_and(|b| !b.is_ascii_whitespace()) {
                i += 1;
            }
            if col == 2 {
                name = line.get(start..i);
            } else {
                let slot = nums.get_mut(col)?;
                for &b in bytes.get(start..i)? {
                    if !b.is_ascii_digit() {
                        return None;
                    }
                    *slot = slot.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                }
            }
            col += 1;
        }
        if !matches!(col, 14 | 18 | 20) {
            return None;
        }
        let small = |i: usize| u32::try_from(nums[i]).ok();
        let counters = fields_to_counters(nums.get(3..col)?).ok()?;
        Some(DiskStatsLine {
            major: small(0)?,
            minor: small(1)?,
            name: name?.to_owned(),
            counters,
        })
    }
}

/// Parse a whole diskstats file. Malformed lines are returned as errors
/// beside the good ones, so one bad line never hides the other devices.
pub fn parse(text: &str) -> (Vec<DiskStatsLine>, Vec<(usize, ParseError)>) {
    // Lines are 50 to 200 bytes: room for about all at once (a hostile
    // file's size reserves no more than a few MiB).
    let mut good = Vec::with_capacity((text.len() / 40).min(1 << 16));
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match DiskStatsLine::parse_plain(line).map_or_else(|| line.parse(), Ok) {
            Ok(l) => good.push(l),
            Err(e) => bad.push((i + 1, e)),
        }
    }
    (good, bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_a_20_column_line() {
        let l: DiskStatsLine =
            " 254       0 vda 9436 2931 767428 4313 2117 1622 113858 2718 0 6832 7785 10 0 80 1 300 41"
                .parse()
                .unwrap();
        assert_eq!((l.major, l.minor, l.name.as_str()), (254, 0, "vda"));
        assert_eq!(l.counters.rd_ios, 9436);
        assert_eq!(l.counters.rd_merges, 2931);
        assert_eq!(l.counters.rd_sectors, 767428);
        assert_eq!(l.counters.rd_ticks, 4313);
        assert_eq!(l.counters.wr_ios, 2117);
        assert_eq!(l.counters.wr_ticks, 2718);
        assert_eq!(l.counters.io_ticks, 6832);
        assert_eq!(l.counters.time_in_queue, 7785);
        assert_eq!(
            l.counters.discard,
            Some(DiscardCounters {
                ios: 10,
                merges: 0,
                sectors: 80,
                ticks: 1
            })
        );
        assert_eq!(
            l.counters.flush,
            Some(FlushCounters {
                ios: 300,
                ticks: 41
            })
        );
    }

    #[test]
    fn parses_old_14_and_18_column_lines() {
        let l14: DiskStatsLine = "8 0 sda 1 2 3 4 5 6 7 8 9 10 11".parse().unwrap();
        assert_eq!(l14.counters.in_flight, 9);
        assert_eq!(l14.counters.discard, None);
        assert_eq!(l14.counters.flush, None);
        let l18: DiskStatsLine = "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15"
            .parse()
            .unwrap();
        assert_eq!(l18.counters.discard.unwrap().ticks, 15);
        assert_eq!(l18.counters.flush, None);
    }

    #[test]
    fn longer_lines_of_a_future_kernel_keep_the_known_fields() {
        let l: DiskStatsLine = "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19"
            .parse()
            .unwrap();
        assert_eq!(l.counters.rd_ios, 1);
        assert_eq!(l.counters.flush, Some(FlushCounters { ios: 16, ticks: 17 }));
        for n in [15, 16, 17, 19] {
            let line = format!("8 0 sda{}", " 1".repeat(n - 3));
            assert_eq!(line.parse::<DiskStatsLine>(), Err(ParseError::Columns(n)));
        }
    }

    #[test]
    fn ms_fields_hold_the_full_32_bit_range() {
        let l: DiskStatsLine = "8 0 sda 1 0 8 4294967295 0 0 0 0 0 4294967290 4294967295"
            .parse()
            .unwrap();
        assert_eq!(l.counters.rd_ticks, u32::MAX);
        assert_eq!(l.counters.io_ticks, u32::MAX - 5);
    }

    #[test]
    fn rejects_wrong_column_counts_and_garbage() {
        assert_eq!(
            "8 0 sda 1 2 3".parse::<DiskStatsLine>(),
            Err(ParseError::Columns(6))
        );
        assert!(matches!(
            "8 0 sda 1 2 x 4 5 6 7 8 9 10 11".parse::<DiskStatsLine>(),
            Err(ParseError::Number { column: 6, .. })
        ));
        // A ms field above 32 bits cannot come from the kernel.
        assert!(
            "8 0 sda 1 0 8 4294967296 0 0 0 0 0 1 1"
                .parse::<DiskStatsLine>()
                .is_err()
        );
    }

    #[test]
    fn one_bad_line_does_not_hide_the_others() {
        let (good, bad) =
            parse("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\nnonsense\n\n8 16 sdb 0 0 0 0 0 0 0 0 0 0 0\n");
        assert_eq!(good.len(), 2);
        assert_eq!(bad, vec![(2, ParseError::Columns(1))]);
    }

    proptest! {
        #[test]
        fn no_line_makes_the_parser_panic(s in "\\PC*") {
            let _ = s.parse::<DiskStatsLine>();
            let _ = parse(&s);
        }

        #[test]
        fn the_plain_pass_agrees_with_the_general_parser(
            cols in proptest::collection::vec("[0-9]{0,21}|-1|\\+7|[a-z]{1,3}|4294967296", 0..24),
            sep in "[ \t]{1,3}",
        ) {
            let line = cols.join(&sep);
            if let Some(plain) = DiskStatsLine::parse_plain(&line) {
                prop_assert_eq!(Ok(plain), line.parse::<DiskStatsLine>());
            }
            // And every line the general parser takes with plain digits is
            // the plain pass's too.
            let digits = cols.iter().enumerate().all(|(i, c)| i == 2 || (!c.is_empty() && c.bytes().all(|b| b.is_ascii_digit())));
            if digits
                && matches!(cols.len(), 14 | 18 | 20)
                && let Ok(l) = line.parse::<DiskStatsLine>()
            {
                prop_assert_eq!(DiskStatsLine::parse_plain(&line), Some(l));
            }
        }

        #[test]
        fn usual_lines_take_the_plain_pass_with_the_same_answer(
            width in proptest::sample::select(vec![14usize, 18, 20]),
            nums in proptest::collection::vec(0u64..=u64::from(u32::MAX), 20),
            name in "[a-z]{1,4}[0-9]{0,3}",
        ) {
            let mut cols: Vec<String> = nums[..width].iter().map(u64::to_string).collect();
            cols[2] = name;
            let line = format!("  {}", cols.join(" "));
            let plain = DiskStatsLine::parse_plain(&line);
            prop_assert!(plain.is_some());
            prop_assert_eq!(plain, line.parse::<DiskStatsLine>().ok());
        }

        #[test]
        fn numeric_lines_of_any_width_never_panic(
            cols in proptest::collection::vec("[0-9]{0,25}|-1|[a-z]{1,3}", 0..24)
        ) {
            let _ = cols.join(" ").parse::<DiskStatsLine>();
        }
    }

    #[test]
    fn inflight_is_reads_then_writes() {
        let f: InFlight = "       3        1\n".parse().unwrap();
        assert_eq!(
            f,
            InFlight {
                reads: 3,
                writes: 1
            }
        );
        assert_eq!(f.total(), 4);
        assert_eq!("0 0".parse::<InFlight>().unwrap(), InFlight::default());
        assert_eq!("".parse::<InFlight>(), Err(ParseError::Columns(0)));
        assert_eq!("1 2 3".parse::<InFlight>(), Err(ParseError::Columns(3)));
        assert!(matches!(
            "1 -2".parse::<InFlight>(),
            Err(ParseError::Number { column: 2, .. })
        ));
    }
}
