//! Enough of udev's rules syntax to evaluate scheduler rules (udev(7);
//! systemd `src/udev/udev-rules.c`, `udev_rules_parse_file` and `parse_line`):
//! one rule per line, `\` at the end continues it, lines starting with `#`
//! (after blanks) are skipped even inside a continued rule, keys are
//! `KEY`, `KEY{attr}`, operators `==`, `!=`, `=`, `+=`, `-=`, `:=`, values are
//! double-quoted (`\"` inside), optionally `e"..."` with C escapes.
//! A line udev would refuse (unknown key, bad quoting) is kept with the
//! reason, because udev ignores the whole line.

use serde::Serialize;

/// Keys udev knows (udev(7), systemd 252).
const KNOWN_KEYS: &[&str] = &[
    "ACTION",
    "DEVPATH",
    "KERNEL",
    "NAME",
    "SYMLINK",
    "SUBSYSTEM",
    "DRIVER",
    "ATTR",
    "SYSCTL",
    "KERNELS",
    "SUBSYSTEMS",
    "DRIVERS",
    "ATTRS",
    "TAGS",
    "TAG",
    "ENV",
    "CONST",
    "TEST",
    "PROGRAM",
    "RESULT",
    "OWNER",
    "GROUP",
    "MODE",
    "SECLABEL",
    "RUN",
    "LABEL",
    "GOTO",
    "IMPORT",
    "OPTIONS",
];

/// Keys udev only compares.
const MATCH_ONLY_KEYS: &[&str] = &[
    "ACTION",
    "DEVPATH",
    "KERNEL",
    "SUBSYSTEM",
    "DRIVER",
    "KERNELS",
    "SUBSYSTEMS",
    "DRIVERS",
    "ATTRS",
    "TAGS",
    "CONST",
    "TEST",
    "RESULT",
];

/// Keys udev only assigns.
const ASSIGN_ONLY_KEYS: &[&str] = &[
    "LABEL", "GOTO", "RUN", "OPTIONS", "OWNER", "GROUP", "MODE", "SECLABEL",
];

/// An operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Op {
    /// `==`
    Match,
    /// `!=`
    NoMatch,
    /// `=`
    Assign,
    /// `+=`
    Add,
    /// `-=`
    Remove,
    /// `:=`
    AssignFinal,
}

impl Op {
    /// Is this a comparison (as opposed to an assignment)?
    pub fn is_match(self) -> bool {
        matches!(self, Op::Match | Op::NoMatch)
    }

    /// The operator as written.
    pub fn text(self) -> &'static str {
        match self {
            Op::Match => "==",
            Op::NoMatch => "!=",
            Op::Assign => "=",
            Op::Add => "+=",
            Op::Remove => "-=",
            Op::AssignFinal => ":=",
        }
    }
}

/// One `KEY{attr}OP"value"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub key: String,
    pub attr: Option<String>,
    pub op: Op,
    pub value: String,
}

impl Token {
    /// `ATTR{queue/scheduler}="kyber"`.
    pub fn display(&self) -> String {
        let attr = self
            .attr
            .as_ref()
            .map(|a| format!("{{{a}}}"))
            .unwrap_or_default();
        format!("{}{attr}{}\"{}\"", self.key, self.op.text(), self.value)
    }
}

/// One logical line of a rules file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Line number (1-based) where the rule starts.
    pub line: usize,
    pub tokens: Vec<Token>,
    /// Why udev would ignore this line, if it would.
    pub invalid: Option<String>,
}

/// Split a file into rules.
pub fn parse_rules(text: &str) -> Vec<Rule> {
    let mut rules = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_start();
        if line.starts_with('#') {
            continue;
        }
        let (start, mut joined) = match pending.take() {
            Some((start, mut acc)) => {
                acc.push_str(line);
                (start, acc)
            }
            None => (n, line.to_owned()),
        };
        if joined.ends_with('\\') {
            joined.pop();
            pending = Some((start, joined));
            continue;
        }
        if !joined.trim().is_empty() {
            rules.push(parse_line(start, &joined));
        }
    }
    if let Some((start, acc)) = pending
        && !acc.trim().is_empty()
    {
        rules.push(parse_line(start, &acc));
    }
    rules
}

fn invalid(line: usize, tokens: Vec<Token>, why: String) -> Rule {
    Rule {
        line,
        tokens,
        invalid: Some(why),
    }
}

/// Parse one logical line into tokens.
pub fn parse_line(line: usize, text: &str) -> Rule {
    let b = text.as_bytes();
    let mut i = 0;
    let mut tokens = Vec::new();
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let key = &text[start..i];
        if key.is_empty() {
            return invalid(line, tokens, format!("unexpected '{}'", &text[start..]));
        }
        let mut attr = None;
        if i < b.len() && b[i] == b'{' {
            let Some(end) = text[i..].find('}') else {
                return invalid(line, tokens, format!("'{key}{{' is not closed"));
            };
            attr = Some(text[i + 1..i + end].to_owned());
            i += end + 1;
        }
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let rest = &text[i..];
        let op = [
            ("==", Op::Match),
            ("!=", Op::NoMatch),
            ("+=", Op::Add),
            ("-=", Op::Remove),
            (":=", Op::AssignFinal),
            ("=", Op::Assign),
        ]
        .into_iter()
        .find(|(s, _)| rest.starts_with(s));
        let Some((op_text, op)) = op else {
            return invalid(line, tokens, format!("no operator after '{key}'"));
        };
        i += op_text.len();
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        // `e"..."`: C escapes; `r"..."`: no escapes at all.
        let prefix = (i + 1 < b.len() && b[i + 1] == b'"')
            .then(|| b[i])
            .filter(|p| *p == b'e' || *p == b'r');
        let escaped = prefix == Some(b'e');
        let raw = prefix == Some(b'r');
        if prefix.is_some() {
            i += 1;
        }
        // Seen with systemd 252: "Invalid key/value pair, ignoring" for r"...".
        if raw {
            return invalid(
                line,
                tokens,
                format!(
                    "raw string r\"...\" for '{key}' (udev 252 ignores such lines; newer versions accept them)"
                ),
            );
        }
        if i >= b.len() || b[i] != b'"' {
            return invalid(line, tokens, format!("the value of '{key}' is not quoted"));
        }
        i += 1;
        let mut value = String::new();
        let mut closed = false;
        let mut chars = text[i..].char_indices();
        while let Some((off, c)) = chars.next() {
            match c {
                '"' => {
                    i += off + 1;
                    closed = true;
                    break;
                }
                '\\' => {
                    let Some((_, next)) = chars.next() else { break };
                    match (escaped, next) {
                        (_, '"') => value.push('"'),
                        (true, 'n') => value.push('\n'),
                        (true, 't') => value.push('\t'),
                        (true, '\\') => value.push('\\'),
                        (true, other) => {
                            value.push('\\');
                            value.push(other);
                        }
                        // A plain string keeps other backslashes (glob escapes).
                        (false, other) => {
                            value.push('\\');
                            value.push(other);
                        }
                    }
                }
                c => value.push(c),
            }
        }
        if !closed {
            return invalid(line, tokens, format!("the value of '{key}' is not closed"));
        }
        if !KNOWN_KEYS.contains(&key) {
            return invalid(line, tokens, format!("invalid key '{key}'"));
        }
        // udev-rules.c `parse_token`: these keys only compare, those only assign.
        if MATCH_ONLY_KEYS.contains(&key) && !op.is_match() {
            return invalid(
                line,
                tokens,
                format!("'{key}' can only be compared (== or !=)"),
            );
        }
        if ASSIGN_ONLY_KEYS.contains(&key) && op.is_match() {
            return invalid(line, tokens, format!("'{key}' can only be assigned"));
        }
        tokens.push(Token {
            key: key.to_owned(),
            attr,
            op,
            value,
        });
        if i < b.len() && !(b[i].is_ascii_whitespace() || b[i] == b',') {
            return invalid(line, tokens, format!("unexpected text after '{key}'"));
        }
    }
    Rule {
        line,
        tokens,
        invalid: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuations_and_comments() {
        let text = "# header\n\
                    ACTION==\"add|change\", \\\n\
                    # a comment inside is skipped\n\
                    \x20 KERNEL==\"sd*\", ATTR{queue/scheduler}=\"bfq\"\n\
                    \n\
                    LABEL=\"end\"\n";
        let rules = parse_rules(text);
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].line, 2);
        assert_eq!(rules[0].tokens.len(), 3);
        assert_eq!(rules[0].tokens[2].attr.as_deref(), Some("queue/scheduler"));
        assert_eq!(rules[0].tokens[2].op, Op::Assign);
        assert_eq!(rules[1].line, 6);
        assert_eq!(rules[1].tokens[0].key, "LABEL");
    }

    #[test]
    fn operators_and_escapes() {
        let r = parse_line(
            1,
            r#"ENV{X}!="a\"b", TAG+="t", SYMLINK-="x", OWNER:="root", ENV{Y}=e"1\n2""#,
        );
        assert_eq!(r.invalid, None);
        let ops: Vec<Op> = r.tokens.iter().map(|t| t.op).collect();
        assert_eq!(
            ops,
            [
                Op::NoMatch,
                Op::Add,
                Op::Remove,
                Op::AssignFinal,
                Op::Assign
            ]
        );
        assert_eq!(r.tokens[0].value, "a\"b");
        assert_eq!(r.tokens[4].value, "1\n2");
    }

    #[test]
    fn lines_udev_ignores_are_marked() {
        for bad in [
            r#"FOO{bar}=="x""#,
            r#"KERNEL=="sda"#,
            r#"KERNEL==sda"#,
            r#"KERNEL"sda""#,
            r#"ATTR{x=="1""#,
            r#"ENV{Z}=r"a\b""#,
            r#"ACTION="add""#,
            r#"GOTO=="end""#,
        ] {
            assert!(parse_line(1, bad).invalid.is_some(), "{bad}");
        }
    }
}
