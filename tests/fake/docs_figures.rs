//! Every measured figure the README states is in the measurements it came
//! from: an interval such as `(-3.1..+3.2)` in its prose (code blocks and
//! inline code are examples, not claims) must appear in a file under
//! `benches/` (a results page or a run's own output), so a figure cannot be
//! written in advance or outlive the run it quotes.

use crate::common::docs::repo;
use std::fs;
use std::path::Path;

/// The README's prose: fenced blocks and inline code spans removed, lines
/// joined (a figure may wrap).
fn prose(markdown: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                out.push_str(part);
            }
        }
        out.push(' ');
    }
    out
}

/// Each `(lo..hi)` whose ends are signed or unsigned numbers.
fn intervals(text: &str) -> Vec<String> {
    let number = |s: &str| {
        let s = s.strip_prefix(['+', '-']).unwrap_or(s);
        !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.')
    };
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('(') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find(')') else { break };
        if let Some((lo, hi)) = rest[..close].split_once("..")
            && number(lo)
            && number(hi)
        {
            out.push(format!("({})", &rest[..close]));
        }
    }
    out
}

/// The text of every file under `dir`, recursively.
fn texts(dir: &Path, out: &mut Vec<String>) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            texts(&path, out);
        } else if let Ok(text) = fs::read_to_string(&path) {
            out.push(text);
        }
    }
}

#[test]
fn the_finder_reads_intervals_from_prose_only() {
    let text = prose(
        "cost **-0.0% IOPS (-3.1..+3.2)** over\n(-9.2..-1.3); an example `-16% (-19..-13)`; (a..b) (1..2\n```\n(+1..+2)\n```\n",
    );
    assert_eq!(intervals(&text), ["(-3.1..+3.2)", "(-9.2..-1.3)"]);
}

#[test]
fn every_interval_the_readme_states_is_in_a_measurement_under_benches() {
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let mut measured = Vec::new();
    texts(&repo().join("benches"), &mut measured);
    let found = intervals(&prose(&readme));
    assert!(found.len() >= 3, "the README's figures: {found:?}");
    let missing: Vec<&String> = (found.iter())
        .filter(|f| !measured.iter().any(|t| t.contains(f.as_str())))
        .collect();
    assert!(
        missing.is_empty(),
        "README figures in no file under benches/: {missing:?}"
    );
}
