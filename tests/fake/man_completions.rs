//! `blktune man` and `blktune completions`: they print, and the bash script
//! sources cleanly and completes subcommands and flags.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn blktune(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn man_prints_a_roff_page_naming_every_subcommand() {
    let (code, out, err) = blktune(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(".TH blktune 1"), "{out}");
    assert!(out.contains(".SH SYNOPSIS"), "{out}");
    for sub in ["list", "watch", "set", "revert", "export", "bench", "man"] {
        assert!(
            out.contains(&format!("blktune\\-{sub}(1)")),
            "{sub}:\n{out}"
        );
    }
}

#[test]
fn man_of_a_subcommand_and_of_all_into_a_directory() {
    let (code, out, _) = blktune(&["man", "export"]);
    assert_eq!(code, 0);
    assert!(out.contains(".TH blktune-export 1"), "{out}");
    assert!(out.contains("\\-\\-check"), "{out}");
    let (code, _, err) = blktune(&["man", "nosuch"]);
    assert_eq!(code, 2);
    assert!(err.contains("one of: list"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = blktune(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("wrote "), "{out}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.contains(&"blktune.1".to_string()), "{names:?}");
    assert!(names.contains(&"blktune-bench.1".to_string()), "{names:?}");
    let (code, _, err) = blktune(&["man", "--dir", "/nonexistent-blktune-dir"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn completions_print_for_bash_zsh_fish() {
    for (shell, marker) in [
        ("bash", "complete -F _blktune"),
        ("zsh", "#compdef blktune"),
        ("fish", "complete -c blktune"),
    ] {
        let (code, out, err) = blktune(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains(marker), "{shell}:\n{out}");
        assert!(out.contains("export"), "{shell}");
    }
    let (code, _, err) = blktune(&["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
}

/// Source the script in a real bash and ask it to complete `blktune ex` and
/// `blktune export --ch`: what a user's Tab does.
#[test]
fn bash_completion_sources_cleanly_and_completes() {
    let (_, script, _) = blktune(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blktune.bash");
    std::fs::write(&file, script).unwrap();
    let complete = |words: &str| {
        let prog = format!(
            "set -eu; source {file}; complete -p blktune >/dev/null; \
             COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
             _blktune blktune \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file = file.display()
        );
        let o = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &prog])
            .output()
            .unwrap();
        assert!(
            o.status.success() && o.stderr.is_empty(),
            "{words}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let subs = complete("blktune ex");
    assert_eq!(subs.trim(), "export", "{subs}");
    let flags = complete("blktune export --ch");
    assert!(flags.lines().any(|l| l == "--check"), "{flags}");
}
