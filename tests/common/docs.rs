//! The docs' examples as tests (docs/TESTING.md, "Examples in the docs"):
//! the fenced blocks of README.md, docs/ and benches/RESULTS.md, the console
//! examples in them run through a shell on a machine of the test's making,
//! and their output compared (or written in, when blessing).
//!
//! - A ```` ```console ```` block is run: each `$ ` line is a shell command
//!   (`sh -c`, stderr merged into stdout), the lines after it its output.
//!   `[..]` in an expected line matches any text within the line; a line
//!   `...` matches any number of lines; a command that exits non-zero ends
//!   with `[exit N]`. A block runs on the fake example machine
//!   (`tests/fake/docs_examples.rs`) unless the line before it says
//!   `<!-- run: loop -->`: then it runs as root on a loop device of the
//!   test's own (`tests/real/docs_examples.rs`).
//! - `BLKTUNE_BLESS_DOCS=1` writes what the commands print now into the
//!   docs, keeping every expected line that still matches (with its `[..]`).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents whose examples are checked: the README, every page of
/// docs/, and the benchmark results.
pub fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    docs.insert(0, repo().join("README.md"));
    docs.push(repo().join("benches/RESULTS.md"));
    docs
}

/// One fenced block of a document.
#[derive(Debug, Clone)]
pub struct Block {
    /// The info string after the opening fence (`console`, `text`, ...).
    pub info: String,
    /// The HTML comment on the line right before the fence, if any.
    pub marker: Option<String>,
    /// The paragraph of prose before the block (or before its marker).
    pub before: String,
    /// Line index of the opening fence.
    pub open: usize,
    /// Line index of the closing fence.
    pub close: usize,
    /// The fence's indentation (blocks inside list items are indented).
    pub indent: usize,
    /// The lines between the fences, without the indentation.
    pub body: Vec<String>,
}

impl Block {
    /// Where a console block runs: `fake` unless its marker says `run: X`.
    pub fn runs_on(&self) -> &str {
        self.marker
            .as_deref()
            .and_then(|m| m.strip_prefix("run:"))
            .map_or("fake", str::trim)
    }
}

/// The fenced blocks of a markdown text.
pub fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let trimmed = lines[at].trim_start();
        if !trimmed.starts_with("```") {
            at += 1;
            continue;
        }
        let indent = lines[at].len() - trimmed.len();
        let info = trimmed.trim_start_matches('`').trim().to_string();
        let close = (at + 1..lines.len())
            .find(|&j| lines[j].trim() == "```")
            .unwrap_or_else(|| panic!("a block opened at line {} is never closed", at + 1));
        let body = lines[at + 1..close]
            .iter()
            .map(|l| l.get(indent..).unwrap_or(l.trim_start()).to_string())
            .collect();
        let mut prose_end = at;
        let marker = at
            .checked_sub(1)
            .map(|j| lines[j].trim())
            .filter(|l| l.starts_with("<!--") && l.ends_with("-->"))
            .map(|l| {
                prose_end = at - 1;
                l.trim_start_matches("<!--")
                    .trim_end_matches("-->")
                    .trim()
                    .to_string()
            });
        // The paragraph before: back over blank lines, then to the next one.
        while prose_end > 0 && lines[prose_end - 1].trim().is_empty() {
            prose_end -= 1;
        }
        let mut start = prose_end;
        while start > 0 && !lines[start - 1].trim().is_empty() && !lines[start - 1].contains("```")
        {
            start -= 1;
        }
        out.push(Block {
            info,
            marker,
            before: lines[start..prose_end].join("\n"),
            open: at,
            close,
            indent,
            body,
        });
        at = close + 1;
    }
    out
}

/// One command of a console block and the output the document shows for it.
#[derive(Debug, Clone)]
pub struct Example {
    pub command: String,
    pub expected: Vec<String>,
}

/// The commands of a console block with their expected output.
pub fn examples(body: &[String]) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    for line in body {
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push(Example {
                command: cmd.to_string(),
                expected: Vec::new(),
            });
        } else if let Some(last) = out.last_mut() {
            last.expected.push(line.clone());
        } else {
            panic!("output before the first command: {line:?}");
        }
    }
    out
}

/// Does one expected line (with `[..]` wildcards) match an actual line?
/// Trailing blanks count on neither side.
pub fn line_matches(expected: &str, actual: &str) -> bool {
    let expected = expected.trim_end();
    let actual = actual.trim_end();
    let mut parts = expected.split("[..]");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Do the expected lines (with `[..]` and `...` lines) match the actual ones?
pub fn output_matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=actual.len()).any(|skip| output_matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(line, more)| line_matches(first, line) && output_matches(rest, more)),
    }
}

/// What to write for an output that no longer matches: each expected line
/// that still matches the actual line in its place is kept (with its
/// `[..]`), the rest is what the command printed.
pub fn blessed(expected: &[String], actual: &[String]) -> Vec<String> {
    let same_shape = expected.len() == actual.len() && !expected.iter().any(|l| l.trim() == "...");
    actual
        .iter()
        .enumerate()
        .map(|(i, line)| match expected.get(i) {
            Some(want) if same_shape && line_matches(want, line) => want.clone(),
            _ => line.clone(),
        })
        .collect()
}

/// `from` replaced by `to` where it stands as a word of its own (`loop1` in
/// `loop1:` but not in `loop10`).
pub fn replace_word(text: &str, from: &str, to: &str) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let before_ok = !rest[..at].chars().next_back().is_some_and(word);
        let after_ok = !rest[at + from.len()..].chars().next().is_some_and(word);
        out.push_str(&rest[..at]);
        out.push_str(if before_ok && after_ok { to } else { from });
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

/// A shell in which the docs' commands run: `blktune` on its PATH is a
/// wrapper the machine wrote, and the machine's paths stand for the docs'.
#[derive(Debug)]
pub struct Shell {
    /// Holds the `blktune` wrapper; first on PATH.
    pub bin: PathBuf,
    /// The working directory of every command.
    pub work: PathBuf,
    /// Environment variables of every command.
    pub env: Vec<(String, String)>,
    /// Text of the docs' commands and what it stands for here, in order.
    pub to_here: Vec<(String, String)>,
    /// Text of what ran here and how the docs show it, in order; `word`
    /// marks replacements of whole words only.
    pub to_docs: Vec<(String, String, bool)>,
    /// On the real machine: the docs' name of the one device its commands
    /// may name; a command naming any other entry of `/sys/block` (`sda`,
    /// `vda`) is refused before it runs.
    pub only_device: Option<String>,
}

impl Shell {
    /// Write the `blktune` wrapper: `script` is its body after `#!/bin/sh`.
    pub fn write_wrapper(&self, script: &str) {
        let wrapper = self.bin.join("blktune");
        fs::write(&wrapper, format!("#!/bin/sh\n{script}")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The command as it runs here: no sudo, the docs' names and paths
    /// standing for this machine's.
    pub fn command_here(&self, command: &str) -> String {
        let mut cmd = command.replace("sudo blktune", "blktune");
        for (shown, here) in &self.to_here {
            cmd = replace_word(&cmd, shown, here);
        }
        cmd
    }

    /// Run one command of a block: its output lines as the docs show them,
    /// with `[exit N]` after a failure.
    pub fn run(&self, command: &str) -> Vec<String> {
        if let Some(ours) = &self.only_device {
            let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
            for name in command.split(|c: char| !word(c)) {
                assert!(
                    name.is_empty() || name == ours || !Path::new("/sys/block").join(name).exists(),
                    "`{command}`: an example on the real machine names '{name}'; it may name \
                     no device but '{ours}'"
                );
            }
        }
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("{{ {}\n}} 2>&1", self.command_here(command)))
            .current_dir(&self.work)
            .env("PATH", path)
            .env_remove("BLKTUNE_JOURNAL_DIR")
            .env_remove("NO_COLOR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        let out = super::output_within(cmd.spawn().unwrap(), Duration::from_secs(120), command);
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        for (here, shown, word) in &self.to_docs {
            text = if *word {
                replace_word(&text, here, shown)
            } else {
                text.replace(here, shown)
            };
        }
        let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
        if let Some(code) = out.status.code().filter(|&c| c != 0) {
            lines.push(format!("[exit {code}]"));
        }
        lines
    }
}

/// Where a document's block is, for messages.
pub fn place(doc: &Path, line: usize) -> String {
    format!(
        "{}:{}",
        doc.strip_prefix(repo()).unwrap_or(doc).display(),
        line + 1
    )
}

/// Run every console block that runs on `machine` (`fake`, `loop`), each on
/// a shell `new_shell` makes for it (the value it returns is kept alive
/// while the block runs), and compare (or bless). Returns how many commands
/// ran; panics with every difference.
pub fn check_console_blocks<T>(machine: &str, mut new_shell: impl FnMut() -> (Shell, T)) -> usize {
    let bless = std::env::var_os("BLKTUNE_BLESS_DOCS").is_some();
    let mut failures = String::new();
    let mut checked = 0;
    for doc in documents() {
        let text = fs::read_to_string(&doc).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut changed = false;
        // From the last block up, so a blessed block's new length does not
        // move the blocks still to do.
        for block in blocks(&text).into_iter().rev() {
            if block.info != "console" || block.runs_on() != machine {
                continue;
            }
            let (shell, _keep) = new_shell();
            let mut body = Vec::new();
            for example in examples(&block.body) {
                checked += 1;
                let actual = shell.run(&example.command);
                body.push(format!("$ {}", example.command));
                if output_matches(&example.expected, &actual) {
                    body.extend(example.expected);
                    continue;
                }
                let _ = writeln!(
                    failures,
                    "\n{}: `{}` printed:\n{}\n--- the docs show:\n{}",
                    place(&doc, block.open),
                    example.command,
                    actual.join("\n"),
                    example.expected.join("\n")
                );
                body.extend(blessed(&example.expected, &actual));
                changed = true;
            }
            let pad = " ".repeat(block.indent);
            let body = body
                .into_iter()
                .map(|l| if l.is_empty() { l } else { format!("{pad}{l}") });
            lines.splice(block.open + 1..block.close, body);
        }
        if bless && changed {
            fs::write(&doc, lines.join("\n") + "\n").unwrap();
        }
    }
    assert!(
        failures.is_empty() || bless,
        "examples in the docs that no longer print what they show \
         (BLKTUNE_BLESS_DOCS=1 writes the new output in; review the diff):{failures}"
    );
    checked
}
