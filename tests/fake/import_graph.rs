//! The import rules of docs/ARCHITECTURE.md, checked on the source: among the
//! modules of one parent (the core's `journal` and `tuner`; the TUI's `app`,
//! `render`, `dialogs`, ...; the CLI's subcommands) imports never go round in
//! a circle, and the TUI's dialogs, render and worker never reach the parts
//! the rules keep them from.
//!
//! A module's imports are the paths its code names (`use` trees and paths in
//! expressions: `crate::`, `super::`, `self::` and, from the binary crate,
//! `blktune_core::`), with comments and string literals left out. Each path
//! is resolved to the module it names; an import from module A to module B
//! is an edge between the two children of their nearest common parent that
//! hold A and B. A circle among siblings fails the test with its members.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from its crate root: `["tui", "app", "keys"]`.
type ModPath = Vec<String>;

/// The Rust files of a crate's `src`, each with its module path.
fn modules(src: &Path) -> Vec<(ModPath, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            let mut parts: Vec<String> = rel
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            let file = parts.pop().unwrap();
            let stem = file.trim_end_matches(".rs");
            match stem {
                "lib" | "main" if parts.is_empty() => {}
                "mod" => {}
                _ => parts.push(stem.to_string()),
            }
            out.push((parts, path));
        }
    }
    out.sort();
    out
}

/// The code of a file without comments and string literals (whose paths are
/// not imports), and without `#[cfg(test)]` modules' imports (a module's
/// tests may name what its code must not).
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(raw) = rest.strip_prefix("r#\"") {
            i += 3 + raw.find("\"#").map_or(raw.len(), |e| e + 2);
            out.push_str("\"\"");
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() {
                match rest.as_bytes()[j] {
                    b'\\' => j += 2,
                    b'"' => break,
                    _ => j += 1,
                }
            }
            i += (j + 1).min(rest.len());
            out.push_str("\"\"");
        } else if rest.starts_with("'") && rest.len() > 2 && rest.as_bytes()[2] == b'\'' {
            // A char literal such as '"' or '{'.
            i += 3;
            out.push_str("' '");
        } else if rest.starts_with("'\\") {
            i += rest[1..].find('\'').map_or(rest.len(), |e| e + 2);
            out.push_str("' '");
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    // Unit-test modules: from `#[cfg(test)]` to the end of the file is the
    // house style (tests last); their imports are the tests'.
    match out.find("#[cfg(test)]\nmod tests") {
        Some(at) => out[..at].to_string(),
        None => out,
    }
}

/// Every path the code names that starts with `crate`, `super`, `self` or
/// (in the binary crate) `blktune_core`, with `use` trees expanded:
/// `use crate::{a::b, c}` gives `crate::a::b` and `crate::c`.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `use` trees, which may span lines and nest braces.
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        let tail = &rest[at + 3..];
        let end = tail.find(';').unwrap_or(tail.len());
        expand_tree(&tail[..end], &mut Vec::new(), &mut out);
        rest = &tail[end..];
    }
    // Paths in expressions and types: `crate::x::y(`, `super::z::W`.
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts_ident = chars[i].is_alphabetic() || chars[i] == '_';
        let after_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if starts_ident && !after_ident {
            let mut j = i;
            let mut segs = Vec::new();
            loop {
                let s = j;
                while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                segs.push(chars[s..j].iter().collect::<String>());
                if j + 2 < chars.len()
                    && chars[j] == ':'
                    && chars[j + 1] == ':'
                    && (chars[j + 2].is_alphabetic() || chars[j + 2] == '_')
                {
                    j += 2;
                } else {
                    break;
                }
            }
            if segs.len() > 1
                && matches!(
                    segs[0].as_str(),
                    "crate" | "super" | "self" | "blktune_core"
                )
            {
                out.push(segs);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Where the keyword `word` stands alone in `text`.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let at = from + at;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let alone = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if alone(before) && alone(after) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// Expand one `use` tree (the text between `use` and `;`) under `prefix`.
fn expand_tree(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    // Split at the top-level `::{`.
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim().trim_end_matches("::");
        let close = tree.rfind('}').unwrap_or(tree.len());
        let inner = &tree[open + 1..close];
        let n = prefix.len();
        prefix.extend(
            head.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from),
        );
        let mut depth = 0;
        let mut start = 0;
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_tree(&inner[start..k], prefix, out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        expand_tree(&inner[start..], prefix, out);
        prefix.truncate(n);
        return;
    }
    let path = tree.split(" as ").next().unwrap_or("").trim();
    if path.is_empty() {
        return;
    }
    let mut full = prefix.clone();
    full.extend(path.split("::").map(|s| s.trim().to_string()));
    if full.len() > 1
        && matches!(
            full[0].as_str(),
            "crate" | "super" | "self" | "blktune_core"
        )
    {
        out.push(full);
    }
}

/// The module a path names, absolute from its crate root, as far as
/// `known` modules go (`crate::tui::app::App` names `tui::app`).
fn resolve(
    from: &ModPath,
    is_mod_rs: bool,
    path: &[String],
    known: &BTreeSet<ModPath>,
) -> Option<ModPath> {
    let mut base: ModPath = match path[0].as_str() {
        "crate" | "blktune_core" => Vec::new(),
        "self" => from.clone(),
        "super" => {
            let mut b = from.clone();
            // `super` in a `mod.rs` (or `lib.rs`) is the parent of the module
            // the file *is*; in `x.rs` likewise: one level up either way.
            let _ = is_mod_rs;
            b.pop()?;
            b
        }
        _ => return None,
    };
    let mut rest = &path[1..];
    while rest.first().is_some_and(|s| s == "super") {
        base.pop()?;
        rest = &rest[1..];
    }
    for seg in rest {
        let mut next = base.clone();
        next.push(seg.clone());
        if known.contains(&next) {
            base = next;
        } else {
            break;
        }
    }
    Some(base)
}

/// Edges between sibling modules, by parent: parent -> (from child, to child)
/// -> where it was seen (file: path).
type Edges = BTreeMap<ModPath, BTreeMap<(String, String), String>>;

/// The sibling edges of one crate (`src`); `core` marks paths into the
/// engine crate from the binary, which are not edges of this crate.
fn sibling_edges(src: &Path, core: bool) -> Edges {
    let mods = modules(src);
    let known: BTreeSet<ModPath> = mods.iter().map(|(m, _)| m.clone()).collect();
    let mut edges = Edges::new();
    for (m, file) in &mods {
        // Unit tests in a file of their own (`mod tests;`) are the tests'.
        if m.last().is_some_and(|s| s == "tests") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let code = code_of(&text);
        let is_mod_rs = file.file_name().is_some_and(|f| f == "mod.rs");
        for path in paths_in(&code) {
            if path[0] == "blktune_core" && !core {
                continue;
            }
            let Some(to) = resolve(m, is_mod_rs, &path, &known) else {
                continue;
            };
            // The nearest common parent and the two children under it.
            let common = m.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common >= m.len() || common >= to.len() {
                continue; // into itself, an ancestor or a descendant
            }
            let parent = m[..common].to_vec();
            let key = (m[common].clone(), to[common].clone());
            edges
                .entry(parent)
                .or_default()
                .entry(key)
                .or_insert_with(|| {
                    format!(
                        "{}: {}",
                        file.strip_prefix(src.parent().unwrap()).unwrap().display(),
                        path.join("::")
                    )
                });
        }
    }
    edges
}

/// Circles among one parent's children: each strongly connected set of more
/// than one module (Tarjan's algorithm would do; the graphs are tiny, so
/// reachability both ways is enough).
fn circles(edges: &BTreeMap<(String, String), String>) -> Vec<BTreeSet<String>> {
    let nodes: BTreeSet<&String> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for (a, b) in edges.keys() {
                if *a == n && seen.insert(b.clone()) {
                    stack.push(b.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> = nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for n in &nodes {
        let scc: BTreeSet<String> = nodes
            .iter()
            .filter(|m| reach[*n].contains(**m) && reach[**m].contains(*n))
            .map(|m| (*m).clone())
            .collect();
        if scc.len() > 1 && !out.contains(&scc) {
            out.push(scc);
        }
    }
    out
}

/// Every circle of a crate, said with one import of each edge in it.
fn report(src: &Path, core: bool) -> Vec<String> {
    let mut out = Vec::new();
    for (parent, edges) in sibling_edges(src, core) {
        for scc in circles(&edges) {
            let within: Vec<String> = edges
                .iter()
                .filter(|((a, b), _)| scc.contains(a) && scc.contains(b))
                .map(|((a, b), seen)| format!("    {a} -> {b}  ({seen})"))
                .collect();
            out.push(format!(
                "circle under `{}`: {}\n{}",
                if parent.is_empty() {
                    "crate".to_string()
                } else {
                    parent.join("::")
                },
                scc.iter().cloned().collect::<Vec<_>>().join(", "),
                within.join("\n")
            ));
        }
    }
    out
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_import_circles_in_the_engine_or_the_binary() {
    let mut found = report(&root().join("crates/blktune-core/src"), false);
    found.extend(report(&root().join("src"), false));
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// The layering the architecture document promises: dialogs answer with a
/// reply and never reach the app; render borrows the app and knows nothing
/// of the workers' sources; workers know no app, dialog or render; the
/// engine knows no terminal (held by the compiler: it has no such crate).
#[test]
fn the_tuis_layers_import_only_downwards() {
    let edges = sibling_edges(&root().join("src"), false);
    let tui = edges
        .get(&vec!["tui".to_string()])
        .cloned()
        .unwrap_or_default();
    let forbidden = [
        ("dialogs", "app"),
        ("dialogs", "render"),
        ("worker", "app"),
        ("worker", "dialogs"),
        ("worker", "render"),
        ("render", "worker"),
        ("render", "replay"),
        ("render", "demo"),
        ("command", "app"),
    ];
    let broken: Vec<String> = forbidden
        .iter()
        .filter_map(|(a, b)| {
            tui.get(&(a.to_string(), b.to_string()))
                .map(|seen| format!("tui::{a} -> tui::{b} ({seen})"))
        })
        .collect();
    assert!(
        broken.is_empty(),
        "imports against the layering:\n{}",
        broken.join("\n")
    );
}

/// The checker itself finds a circle (so the tests above can fail).
#[test]
fn the_checker_finds_a_circle_and_expands_use_trees() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "mod inner;\n// use crate::c::X; (a comment)\nconst S: &str = \"crate::c::Y\";\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/inner.rs"),
        "use crate::{b::{self, Thing}, a};\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "fn f() { super::a::inner::g() }\n").unwrap();
    std::fs::write(src.join("c.rs"), "").unwrap();
    let found = report(&src, false);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("circle under `crate`: a, b"),
        "{}",
        found[0]
    );
    assert!(
        !found[0].contains(" c "),
        "comments and strings are not imports: {}",
        found[0]
    );
}
