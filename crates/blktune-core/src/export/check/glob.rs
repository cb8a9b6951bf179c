//! udev's match patterns: shell globs (`fnmatch(3)`: `*`, `?`, `[...]`,
//! `[!...]`, `\` escapes) with `|` separating alternatives; an empty
//! alternative matches an empty value (udev(7), "Pattern matching").

/// Does `value` match the udev pattern?
pub fn udev_match(pattern: &str, value: &str) -> bool {
    pattern
        .split('|')
        .any(|alt| fnmatch(alt.as_bytes(), value.as_bytes()))
}

/// Shell-style glob match of `value` against `pattern`, over bytes.
fn fnmatch(pattern: &[u8], value: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    // Where to resume after the last `*`: (pattern index after it, value index).
    let mut star: Option<(usize, usize)> = None;
    while si < value.len() {
        if pi < pattern.len() {
            match pattern[pi] {
                b'*' => {
                    star = Some((pi + 1, si));
                    pi += 1;
                    continue;
                }
                b'?' => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                b'[' => match class(pattern, pi, value[si]) {
                    Some((true, next)) => {
                        pi = next;
                        si += 1;
                        continue;
                    }
                    Some((false, _)) => {}
                    // An unclosed `[` is a literal.
                    None if value[si] == b'[' => {
                        pi += 1;
                        si += 1;
                        continue;
                    }
                    None => {}
                },
                b'\\' if pi + 1 < pattern.len() && pattern[pi + 1] == value[si] => {
                    pi += 2;
                    si += 1;
                    continue;
                }
                // An escaped byte that differs: no match here.
                b'\\' if pi + 1 < pattern.len() => {}
                c if c == value[si] => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, ss)) => {
                pi = sp;
                si = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    pattern[pi..].iter().all(|&c| c == b'*')
}

/// Match one byte against the bracket expression at `pattern[start]`; returns
/// (matched, index after `]`), or `None` if the bracket is not closed.
fn class(pattern: &[u8], start: usize, byte: u8) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = matches!(pattern.get(i), Some(b'!' | b'^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < pattern.len() {
        if pattern[i] == b']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        let lo = pattern[i];
        if i + 2 < pattern.len() && pattern[i + 1] == b'-' && pattern[i + 2] != b']' {
            if (lo..=pattern[i + 2]).contains(&byte) {
                hit = true;
            }
            i += 3;
        } else {
            if lo == byte {
                hit = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_like_fnmatch() {
        assert!(udev_match("sd*", "sda"));
        assert!(udev_match("sd*", "sd"));
        assert!(!udev_match("sd*", "vda"));
        assert!(udev_match("nvme*n*", "nvme0n1"));
        assert!(!udev_match("nvme*n*", "nvme0"));
        assert!(udev_match("sd?", "sdb"));
        assert!(!udev_match("sd?", "sdab"));
        assert!(udev_match("sd[a-c]", "sdb"));
        assert!(!udev_match("sd[a-c]", "sdd"));
        assert!(udev_match("sd[!a-c]", "sdd"));
        assert!(udev_match("sd*[!0-9]", "sdab"));
        assert!(!udev_match("sd*[!0-9]", "sda1"));
        assert!(udev_match("a\\*b", "a*b"));
        assert!(!udev_match("a\\*b", "axb"));
        assert!(udev_match("*", ""));
        assert!(!udev_match("?*", ""));
        assert!(udev_match("?*", "x"));
    }

    #[test]
    fn alternatives() {
        assert!(udev_match("add|change", "change"));
        assert!(!udev_match("add|change", "remove"));
        assert!(udev_match("mmcblk*|sd*|nvme*", "nvme0n1"));
        assert!(udev_match("|x", ""));
        assert!(!udev_match("x", ""));
    }
}
