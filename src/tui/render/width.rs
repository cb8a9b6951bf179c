//! Display width of text from outside (paths, host names, rules): columns on
//! the terminal, not `char`s, so a CJK path or an emoji in a host name cannot
//! push a line past its box (`unicode-width`, which ratatui itself uses).

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Columns `text` takes on the terminal.
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// The longest prefix of `text` that fits in `cols` columns.
fn prefix(text: &str, cols: usize) -> &str {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        used += c.width().unwrap_or(0);
        if used > cols {
            return &text[..i];
        }
    }
    text
}

/// `text` cut to `cols` columns, with `…` when something was cut.
pub fn clip(text: &str, cols: usize) -> String {
    if width(text) <= cols {
        return text.to_string();
    }
    format!("{}…", prefix(text, cols.saturating_sub(1)))
}

/// `text` cut to `cols` columns where a cut cannot change a number: never inside
/// or right after a number, nor between a name and its digits (`nr 256` at 6
/// columns reads `nr …`, never `nr 2` nor `nr 256…`; `→1000000` never
/// `→10000`; `20G` is whole or gone). Words may lose their end (`no…`).
/// What is left out is one `…`.
pub fn fit(text: &str, cols: usize) -> String {
    if width(text) <= cols {
        return text.to_string();
    }
    let numeric = |c: char| c.is_ascii_digit() || c == '.';
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut best = 0;
    let mut used = 0;
    for (k, &(i, c)) in chars.iter().enumerate() {
        // A cut before `c` keeps s[..i].
        let prev = k.checked_sub(1).map(|p| chars[p].1);
        let ok = !prev.is_some_and(|p| numeric(p) || (numeric(c) && p.is_alphanumeric()));
        if used < cols && ok {
            best = i;
        }
        used += c.width().unwrap_or(0);
        if used + 1 > cols {
            break;
        }
    }
    if used < cols {
        best = text.len();
    }
    let kept = &text[..best];
    if cols == 0 {
        return String::new();
    }
    format!("{kept}…")
}

/// `text` right-aligned in `cols` columns, or after one space when it fills them:
/// a figure never touches the one before it (`37.5~+8284%` read as one).
pub fn right(text: &str, cols: usize) -> String {
    if width(text) >= cols {
        format!(" {text}")
    } else {
        format!("{}{text}", " ".repeat(cols - width(text)))
    }
}

/// `text` broken into lines of at most `cols` columns, at spaces where possible.
pub fn wrap(text: &str, cols: usize) -> Vec<String> {
    let w = cols.max(8);
    let mut out = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let mut word = word;
        while width(word) > w {
            if !line.is_empty() {
                out.push(std::mem::take(&mut line));
            }
            let head = prefix(word, w);
            // A character wider than the line still moves on.
            let head = if head.is_empty() {
                &word[..word.chars().next().map_or(0, char::len_utf8)]
            } else {
                head
            };
            out.push(head.to_string());
            word = &word[head.len()..];
        }
        let need = width(&line) + usize::from(!line.is_empty()) + width(word);
        if need > w && !line.is_empty() {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_never_cuts_a_number() {
        assert_eq!(fit("nr 256  ra 128", 14), "nr 256  ra 128");
        assert_eq!(fit("nr 256  ra 128", 12), "nr 256  ra …");
        assert_eq!(fit("nr 256  ra 128", 5), "nr …");
        assert_eq!(
            fit("-4s  +12% nr_requests 128→1000000", 30),
            "-4s  +12% nr_requests 128→…"
        );
        assert_eq!(fit("12345", 4), "…");
        assert_eq!(fit("1.25ms", 5), "…");
        assert_eq!(fit("a-b", 0), "");
        for s in ["nr 256  ra 128", "mq-deadline→kyber", "12.5 34.25"] {
            for w in 0..20 {
                let f = fit(s, w);
                assert!(width(&f) <= w, "{s} at {w}: {f}");
                // Every number shown is one of the original's numbers, whole.
                for n in f.split(|c: char| !(c.is_ascii_digit() || c == '.')) {
                    if !n.is_empty() {
                        assert!(
                            s.split(|c: char| !(c.is_ascii_digit() || c == '.'))
                                .any(|o| o == n),
                            "{s} at {w}: {f}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn wide_characters_count_as_two_columns() {
        assert_eq!(width("/srv/データ"), 5 + 6);
        assert_eq!(clip("/srv/データ/x", 9), "/srv/デ…");
        assert!(width(&clip("/srv/データ/x", 9)) <= 9);
        assert_eq!(clip("short", 9), "short");
        for l in wrap("/var/lib/データベース/ファイル.img is written", 10) {
            assert!(width(&l) <= 10, "{l}");
        }
        assert_eq!(wrap("a bb ccc", 8), ["a bb ccc"]);
    }
}
