//! Value editors: what can be edited and the check run on every key press.
//! The tuner validates again before writing; this only lets the screen say
//! "why not" while the value is typed.

use super::text::is_boolean_tunable;
use crate::tuner::{NR_REQUESTS_MAX, NR_REQUESTS_MIN, READ_AHEAD_KB_MAX, Settings};

/// A value that can be edited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    NrRequests,
    ReadAheadKb,
    /// `queue/iosched/<name>` of the active scheduler.
    Tunable(String),
}

impl Field {
    /// The attribute name as sysfs spells it.
    pub fn label(&self) -> &str {
        match self {
            Field::NrRequests => "nr_requests",
            Field::ReadAheadKb => "read_ahead_kb",
            Field::Tunable(n) => n,
        }
    }
}

/// An open value editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Editor {
    pub device: String,
    pub field: Field,
    /// The value now in sysfs.
    pub current: String,
    /// What has been typed.
    pub input: String,
}

/// Longest input accepted (a 64-bit number and a sign).
pub const MAX_INPUT: usize = 20;

impl Editor {
    /// Check the typed value; `Ok` holds the settings to apply.
    pub fn check(&self, page_kb: u64) -> Result<Settings, String> {
        check(&self.field, &self.input, page_kb)
    }
}

/// Check `input` for `field`: the reason it would be refused, or the settings.
pub fn check(field: &Field, input: &str, page_kb: u64) -> Result<Settings, String> {
    let v = input.trim();
    if v.is_empty() {
        return Err("type a number".into());
    }
    let what = field.label();
    match field {
        Field::NrRequests | Field::ReadAheadKb => {
            let n: u64 = v
                .parse()
                .map_err(|_| format!("{what} '{v}' is not a whole number"))?;
            if *field == Field::NrRequests {
                if !(NR_REQUESTS_MIN..=NR_REQUESTS_MAX).contains(&n) {
                    return Err(format!(
                        "{what} '{v}' is out of range: {NR_REQUESTS_MIN} to {NR_REQUESTS_MAX}"
                    ));
                }
                return Ok(Settings {
                    nr_requests: Some(n),
                    ..Settings::default()
                });
            }
            if n > READ_AHEAD_KB_MAX {
                return Err(format!(
                    "{what} '{v}' is out of range: 0 to {READ_AHEAD_KB_MAX}"
                ));
            }
            if !n.is_multiple_of(page_kb.max(1)) {
                return Err(format!(
                    "{what} '{v}' is not a multiple of the page size ({page_kb} KiB)"
                ));
            }
            Ok(Settings {
                read_ahead_kb: Some(n),
                ..Settings::default()
            })
        }
        Field::Tunable(name) => {
            let n: i64 = v
                .parse()
                .map_err(|_| format!("{what} '{v}' is not an integer"))?;
            if is_boolean_tunable(name) && !(0..=1).contains(&n) {
                return Err(format!("{what} '{v}' must be 0 or 1"));
            }
            if n < 0 {
                return Err(format!("{what} '{v}' must not be negative"));
            }
            Ok(Settings {
                tunables: vec![(name.clone(), n.to_string())],
                ..Settings::default()
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checked_with_reasons() {
        let nr = Field::NrRequests;
        assert_eq!(check(&nr, "64", 4).unwrap().nr_requests, Some(64));
        assert!(check(&nr, "5000", 4).unwrap_err().contains("4 to 2048"));
        assert!(
            check(&nr, "abc", 4)
                .unwrap_err()
                .contains("not a whole number")
        );
        assert!(check(&nr, "", 4).is_err());
        let ra = Field::ReadAheadKb;
        assert_eq!(check(&ra, "256", 4).unwrap().read_ahead_kb, Some(256));
        assert!(check(&ra, "6", 4).unwrap_err().contains("page size"));
        let fm = Field::Tunable("front_merges".into());
        assert!(check(&fm, "2", 4).unwrap_err().contains("0 or 1"));
        let re = Field::Tunable("read_expire".into());
        assert_eq!(
            check(&re, "100", 4).unwrap().tunables,
            vec![("read_expire".to_string(), "100".to_string())]
        );
        assert!(check(&re, "-5", 4).is_err());
    }
}
