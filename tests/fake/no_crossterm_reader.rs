//! Nothing in blktune reads the terminal through crossterm's reader
//! (`event::poll`, `event::read`, `EventStream`, `cursor::position`): once
//! the terminal is gone it spins for ever inside those calls
//! (crossterm-rs/crossterm#793), which is how a TUI whose tmux was killed ran
//! 70 minutes at 100% of a core (issue 37). blktune reads its terminal
//! itself (`tui::terminal::input`); this keeps it so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// The uses of crossterm's reader in `code` (comments left out).
fn reader_uses(code: &str) -> Vec<String> {
    const CALLS: [&str; 5] = [
        "event::poll(",
        "event::read(",
        "EventStream",
        "cursor::position(",
        "poll_internal",
    ];
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap_or("");
        for call in CALLS {
            if line.contains(call) {
                found.push(format!("line {}: {}", n + 1, line.trim()));
            }
        }
        // `use crossterm::event::{poll, read}` and the like.
        if line.contains("crossterm::event::") {
            let items = line.split("crossterm::event::").nth(1).unwrap_or("");
            let words = items.split(|c: char| !(c.is_alphanumeric() || c == '_'));
            if words.into_iter().any(|w| w == "poll" || w == "read") {
                found.push(format!("line {}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_checker_sees_a_use_of_the_reader() {
    assert_eq!(reader_uses("let r = event::poll(t)?;").len(), 1);
    assert_eq!(reader_uses("use crossterm::event::{self, poll};").len(), 1);
    assert!(reader_uses("// event::read() spins at end of file").is_empty());
    assert!(reader_uses("use crossterm::event::{Event, KeyCode};").is_empty());
}

#[test]
fn no_code_reads_the_terminal_through_crossterm() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for dir in ["src", "crates/blktune-core/src"] {
        for file in sources(&root.join(dir)) {
            let code = std::fs::read_to_string(&file).unwrap();
            for u in reader_uses(&code) {
                found.push(format!("{}: {u}", file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "crossterm's reader spins on a closed terminal; read it through \
         tui::terminal::input instead:\n{}",
        found.join("\n")
    );
}
