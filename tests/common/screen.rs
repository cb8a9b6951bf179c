//! Reading a captured screen as a user reads it: the device table's
//! columns by their headings, and numbers that were cut.
#![allow(dead_code)]

/// The line of the device table's column headings.
pub fn headings(screen: &str) -> &str {
    screen
        .lines()
        .find(|l| l.contains("DEVICE") && l.contains("%util"))
        .unwrap_or("")
}

/// The cells of the column whose heading is `head` (right-aligned, `width`
/// wide), row by row under the headings: (device, cell).
pub fn column(screen: &str, head: &str, width: usize) -> Vec<(String, String)> {
    let mut lines = screen.lines();
    let Some(h) = lines
        .by_ref()
        .find(|l| l.contains("DEVICE") && l.contains("%util"))
    else {
        return Vec::new();
    };
    let h: Vec<char> = h.chars().collect();
    let Some(end) = (0..h.len()).find(|&i| {
        h[i..]
            .iter()
            .take(head.chars().count())
            .copied()
            .eq(head.chars())
    }) else {
        return Vec::new();
    };
    let end = end + head.chars().count();
    lines
        .map(|l| l.chars().collect::<Vec<char>>())
        .take_while(|l| {
            l.len() >= end && matches!(l[0], ' ' | '▶' | '!') && l[1].is_ascii_alphanumeric()
        })
        .map(|l| {
            let name: String = l[1..].iter().take_while(|c| !c.is_whitespace()).collect();
            let cell: String = l[end - width..end].iter().collect();
            (name, cell.trim().to_string())
        })
        .collect()
}

/// The table row of device `name` (after the marker column: `▶`, `!` or a
/// blank), whole.
pub fn row<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    screen.lines().find(|l| {
        let mut c = l.chars();
        c.next();
        c.as_str().starts_with(&format!("{name} "))
    })
}

/// Numbers on `line` that end in a cut: digits followed by `…`.
pub fn cut_numbers(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    for (i, c) in chars.iter().enumerate() {
        if *c == '…' && i > 0 && chars[i - 1].is_ascii_digit() {
            let from = chars[..i]
                .iter()
                .rposition(|c| !(c.is_ascii_digit() || *c == '.'))
                .map_or(0, |p| p + 1);
            out.push(chars[from..=i].iter().collect());
        }
    }
    out
}

/// The digits right after each `→` on `line` (empty where none follow).
pub fn after_arrows(line: &str) -> Vec<String> {
    line.match_indices('→')
        .map(|(i, a)| {
            line[i + a.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect()
        })
        .collect()
}

/// Every number on `screen` is whole: none is directly followed by a cut
/// (`…`), and the digits after each `→` are `long` (the long value the
/// test set) or none; `what` names the screen in the panic.
pub fn assert_numbers_whole(screen: &str, long: &str, what: &str) {
    for line in screen.lines() {
        assert!(cut_numbers(line).is_empty(), "{what}: {line}\n{screen}");
        for v in after_arrows(line) {
            assert!(
                v.is_empty() || v == long,
                "{what}: →{v} for →{long}: {line}\n{screen}"
            );
        }
    }
}
