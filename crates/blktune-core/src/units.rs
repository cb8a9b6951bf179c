//! Parsing and formatting of durations and sizes given on the command line.

use std::time::Duration;

/// Parse a duration as humantime does (`250ms`, `500us`, `1s`, `2m`, `1min`,
/// `1h30m`), a decimal with one unit (`1.5s`, humantime takes integers only),
/// or a bare number of seconds (`2`, `0.5`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let bad = || format!("'{text}' is not a duration (examples: 250ms, 1s, 1h30m, 2)");
    let secs = |v: f64| -> Result<Duration, String> {
        if !v.is_finite() || v < 0.0 {
            return Err(bad());
        }
        if v > 1e9 {
            return Err(format!("'{text}' is too long"));
        }
        Ok(Duration::from_secs_f64(v))
    };
    if let Ok(v) = t.parse::<f64>() {
        return secs(v);
    }
    match humantime::parse_duration(t) {
        Ok(d) if d.as_secs() > 1_000_000_000 => Err(format!("'{text}' is too long")),
        Ok(d) => Ok(d),
        Err(_) => {
            // `1.5s`: a decimal number and one unit humantime knows.
            let split = t
                .find(|c: char| c.is_ascii_alphabetic())
                .filter(|&i| i > 0)
                .ok_or_else(bad)?;
            let (num, unit) = t.split_at(split);
            let v: f64 = num.trim().parse().map_err(|_| bad())?;
            let one = humantime::parse_duration(&format!("1{unit}")).map_err(|_| bad())?;
            secs(v * one.as_secs_f64())
        }
    }
}

/// Parse a size: `512M`, `1G`, `4096` (bytes), binary units.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let err = || format!("'{text}' is not a size (examples: 256M, 1G)");
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                'B' => 1,
                _ => return Err(err()),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let v: f64 = num.trim().parse().map_err(|_| err())?;
    if !v.is_finite() || v < 0.0 || v * mult as f64 > u64::MAX as f64 / 2.0 {
        return Err(err());
    }
    Ok((v * mult as f64) as u64)
}

/// `250ms`, `1s`, `1.5s`: the shortest exact-looking form.
pub fn format_duration(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms < 1000 || !ms.is_multiple_of(100) {
        format!("{ms}ms")
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("NaN").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("1.5x").is_err());
    }

    #[test]
    fn durations_in_humantime_spelling() {
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1min"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("2min 30s"), Ok(Duration::from_secs(150)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0.25m"), Ok(Duration::from_secs(15)));
        assert!(parse_duration("100y").unwrap_err().contains("too long"));
        assert!(parse_duration("1e10").unwrap_err().contains("too long"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("1X").is_err());
        assert!(parse_size("").is_err());
    }

    #[test]
    fn duration_formatting() {
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_secs(1)), "1s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
    }
}

/// `2026-11-22T03:40:01.123Z` (UTC) for a wall-clock time; times before
/// 1970 (a clock set wrong) show as the epoch.
pub fn rfc3339(when: std::time::SystemTime) -> String {
    let t = when.max(std::time::UNIX_EPOCH);
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod time_tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_318_801_123);
        assert_eq!(rfc3339(t), "2026-11-22T03:40:01.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }
}
