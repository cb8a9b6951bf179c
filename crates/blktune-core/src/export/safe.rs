//! Which values may go into a udev rule.
//!
//! udev(7): values are double-quoted strings; `\"` is the only escape in a
//! plain string, match values are shell glob patterns (`*`, `?`, `[...]`) with
//! `|` separating alternatives, and `%`/`$` start substitutions in both match
//! and assignment values. A value from a device (model, serial, WWN) that
//! contains any of these would mean something else than it says, so it is
//! refused rather than escaped: an escape udev reads differently than we think
//! would make a rule that silently matches the wrong disk, or none.

/// Why a match value is unsafe, or `None` when it can be written as is.
pub fn check_match_value(val: &str) -> Option<&'static str> {
    if val.is_empty() {
        return Some("it is empty (an empty match also matches a missing value)");
    }
    if val.trim_end() != val {
        return Some("it ends in whitespace, which udev treats as significant only then");
    }
    if val.trim_start() != val {
        return Some("it starts with whitespace");
    }
    for c in val.chars() {
        let why = match c {
            '"' => "it contains a double quote",
            '\\' => "it contains a backslash",
            '*' | '?' | '[' | ']' => "it contains a glob character (* ? [ ])",
            '|' => "it contains '|', which separates alternatives",
            '%' | '$' => "it contains '%' or '$', which start udev substitutions",
            '\n' | '\r' => "it contains a line break",
            c if c.is_control() => "it contains a control character",
            c if !c.is_ascii() => "it contains a non-ASCII character",
            _ => continue,
        };
        return Some(why);
    }
    None
}

/// Why an assigned value (scheduler name, number) is unsafe, or `None`.
/// Only the characters such values consist of are allowed.
pub fn check_assign_value(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        return Some("it is empty");
    }
    if value.len() > 64 {
        return Some("it is longer than 64 characters");
    }
    if value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        None
    } else {
        Some("only letters, digits, '-', '_' and '.' are allowed")
    }
}

/// A value quoted for an error message, with control characters made visible.
pub fn shown(value: &str) -> String {
    let short: String = value.chars().take(80).collect();
    format!("{short:?}")
}

/// Text made safe for a `#` comment line: control characters become `?`.
pub fn comment_text(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_ids_pass() {
        for v in [
            "0x5002538e4063dd7b",
            "Samsung SSD 860 EVO 500GB",
            "WDC_WD40EFRX-68N32N0_WD-WCC7K1234567",
            "eui.0025388b91b12345",
            "loop0",
            "cciss!c0d0",
        ] {
            assert_eq!(check_match_value(v), None, "{v}");
        }
    }

    #[test]
    fn dangerous_ids_are_refused() {
        for v in [
            "",
            "a\"b",
            "a\\b",
            "a*",
            "a?",
            "a[1]",
            "a|b",
            "%k",
            "$kernel",
            "a\nb",
            "a\u{7}b",
            "trailing ",
            " leading",
            "caf\u{e9}",
        ] {
            assert!(check_match_value(v).is_some(), "{v:?}");
        }
    }

    #[test]
    fn assigned_values_are_plain_words() {
        assert_eq!(check_assign_value("mq-deadline"), None);
        assert_eq!(check_assign_value("64"), None);
        assert_eq!(check_assign_value("-1"), None);
        for v in ["", "a b", "x\"", "1;2", "$x", "%k"] {
            assert!(check_assign_value(v).is_some(), "{v:?}");
        }
    }

    #[test]
    fn comments_lose_control_characters() {
        assert_eq!(comment_text("a\nb\tc"), "a?b?c");
    }
}
