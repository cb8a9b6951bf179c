//! `blktune man` and `blktune completions`: they print; `man -l` renders
//! every page without a groff warning, with EXIT STATUS, ENVIRONMENT, FILES,
//! EXAMPLES and SEE ALSO; bash completes subcommands, flags and device names
//! through the function the script registers; zsh and fish parse their
//! scripts, and fish completes device names from its script.
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

/// Source the script in a real bash and ask it to complete `blktune ex` (export, exporter) and
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
    assert_eq!(subs.trim(), "export\nexporter", "{subs}");
    let flags = complete("blktune export --ch");
    assert!(flags.lines().any(|l| l == "--check"), "{flags}");
}

/// The pages as `man -l` renders them (man-db, 80 columns), with groff's warnings.
fn rendered_pages() -> Vec<(String, String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = blktune(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let mut pages = Vec::new();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let path = e.unwrap().path();
        let o = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(&path)
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_FORMATTING", "0")
            .env("LC_ALL", "C.UTF-8")
            .output()
            .unwrap();
        assert!(o.status.success(), "{path:?}");
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        pages.push((
            name,
            plain(&String::from_utf8_lossy(&o.stdout)),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ));
    }
    pages.sort();
    pages
}

/// Remove `x\bx` overstrikes (what man prints for bold without a terminal).
fn plain(text: &str) -> String {
    let mut out: Vec<char> = Vec::new();
    for c in text.chars() {
        if c == '\u{8}' {
            out.pop();
            continue;
        }
        out.push(c);
    }
    out.into_iter().collect()
}

#[test]
fn man_renders_the_sections_a_packager_expects() {
    if !crate::common::require_tool("man_renders_the_sections_a_packager_expects", "man") {
        return;
    }
    let pages = rendered_pages();
    assert!(pages.len() >= 10, "{pages:?}");
    for (name, text, warnings) in &pages {
        assert!(warnings.trim().is_empty(), "{name}: groff says: {warnings}");
        for section in [
            "NAME",
            "SYNOPSIS",
            "EXIT STATUS",
            "ENVIRONMENT",
            "FILES",
            "SEE ALSO",
        ] {
            assert!(
                text.contains(&format!("\n{section}\n")),
                "{name}: no {section}:\n{text}"
            );
        }
        assert!(!text.contains("\nEXTRA\n"), "{name}: clap's EXTRA:\n{text}");
        for needle in [
            "BLKTUNE_JOURNAL_DIR",
            "NO_COLOR",
            "/run/blktune",
            "61-blktune.rules",
            "iostat(1)",
            "udevadm(8)",
            "tuned-adm(8)",
            "lsblk(8)",
        ] {
            assert!(text.contains(needle), "{name}: no {needle}:\n{text}");
        }
        // Exit 3 is export --check's alone.
        let has3 = text.contains("\n       3      ");
        assert_eq!(
            has3,
            name == "blktune.1" || name == "blktune-export.1",
            "{name}:\n{text}"
        );
    }
    let watch = &pages.iter().find(|p| p.0 == "blktune-watch.1").unwrap().1;
    // Each example: its description, then the command alone on an indented line.
    assert!(watch.contains("\nEXAMPLES\n"), "{watch}");
    assert!(
        watch.contains(
            "Eight quarter-second intervals of sda:\n           blktune watch -i 250ms -c 8 sda\n"
        ),
        "{watch}"
    );
    let set = &pages.iter().find(|p| p.0 == "blktune-set.1").unwrap().1;
    assert!(set.contains("\nNOTES\n"), "{set}");
    assert!(
        set.contains("           sudo blktune set sda --scheduler kyber\n"),
        "{set}"
    );
}

/// Complete `words` (the last one is being completed) the way bash does for
/// a user: through the function `complete -p blktune` names.
fn bash_complete(file: &std::path::Path, words: &str) -> Vec<String> {
    let prog = format!(
        "set -u; source {file}; f=$(complete -p blktune | sed -n 's/.* -F \\([^ ]*\\) .*/\\1/p'); \
         COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
         COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
         \"$f\" blktune \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        file = file.display()
    );
    let o = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &prog])
        .output()
        .unwrap();
    completions(&o, words)
}

/// The words a completion run printed, sorted; it must have succeeded quietly.
fn completions(o: &std::process::Output, words: &str) -> Vec<String> {
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{words}: exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

#[test]
fn bash_completes_device_names_where_a_device_goes() {
    use blktune_core::fake::FakeDisk;
    let (_, script, _) = blktune(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blktune.bash");
    std::fs::write(&file, script).unwrap();
    let host = crate::common::fake_host::FakeHost::new(&[
        FakeDisk::new("sda").dev(8, 0),
        FakeDisk::new("nvme0n1").dev(259, 0),
    ]);
    let root = host.path("sys");
    let root = root.to_str().unwrap();
    let fake = |rest: &str| bash_complete(&file, &format!("blktune --sysfs-root {root} {rest}"));
    assert_eq!(fake("set ''"), ["nvme0n1", "sda"]);
    assert_eq!(fake("set s"), ["sda"]);
    assert_eq!(
        fake("export sda ''"),
        ["nvme0n1", "sda"],
        "every DEVICE of a list"
    );
    assert_eq!(
        fake("watch -i 1s ''"),
        ["nvme0n1", "sda"],
        "after an option's value"
    );
    assert_eq!(fake("--device ''"), ["nvme0n1", "sda"]);
    // record FILE DEVICE...: the first positional is the file.
    assert!(!fake("record ''").contains(&"sda".to_string()));
    assert_eq!(fake("record out.ndjson ''"), ["nvme0n1", "sda"]);
    // Not a device: options, an option's value, a subcommand without devices.
    assert!(fake("set --n").contains(&"--nr-requests".to_string()));
    assert!(!fake("set -s ''").contains(&"sda".to_string()));
    assert!(!fake("list ''").contains(&"sda".to_string()));
    // Without --sysfs-root: this machine's /sys/block, as ls lists it.
    let mut real: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    real.sort();
    assert_eq!(bash_complete(&file, "blktune set ''"), real);
}

/// Complete `words` as a user's bash does with the script installed where
/// the package puts it (`<data dir>/bash-completion/completions/blktune`)
/// and nothing sourced by hand: bash-completion's own loader
/// (/usr/share/bash-completion/bash_completion) finds it on the first TAB,
/// through `complete -D`, sources it inside its loader function and says
/// 124 (retry); bash then calls the function the script registered.
/// `XDG_DATA_DIRS` is the temp dir only, `BASH_COMPLETION_USER_DIR`, `HOME`
/// and the compat dir are empty ones: no other completion is found.
fn bash_complete_on_demand(data: &std::path::Path, words: &str) -> Vec<String> {
    let empty = data.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let prog = format!(
        "source /usr/share/bash-completion/bash_completion || exit 2; \
         ! complete -p blktune 2>/dev/null || {{ echo 'loaded before the first TAB' >&2; exit 3; }}; \
         loader=$(complete -p -D | sed -n 's/.* -F \\([^ ]*\\) .*/\\1/p'); \
         COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
         COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
         cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}; \
         \"$loader\" blktune \"$cur\" \"$prev\"; rc=$?; \
         [ $rc = 124 ] || {{ echo \"the loader said $rc, not 124\" >&2; exit 4; }}; \
         f=$(complete -p blktune | sed -n 's/.* -F \\([^ ]*\\) .*/\\1/p'); \
         [ -n \"$f\" ] || {{ echo 'no completion registered for blktune' >&2; exit 5; }}; \
         COMPREPLY=(); \"$f\" blktune \"$cur\" \"$prev\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    let o = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &prog])
        .env("XDG_DATA_DIRS", data)
        .env("BASH_COMPLETION_USER_DIR", &empty)
        .env("BASH_COMPLETION_COMPAT_DIR", &empty)
        .env("HOME", &empty)
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    completions(&o, words)
}

#[test]
fn bash_completion_loader_finds_the_installed_script_and_completes_devices() {
    use blktune_core::fake::FakeDisk;
    if !std::path::Path::new("/usr/share/bash-completion/bash_completion").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "bash-completion is not installed (.ci/install-deps installs it)"
        );
        eprintln!("skipped: bash-completion is not installed");
        return;
    }
    let (_, script, _) = blktune(&["completions", "bash"]);
    let data = tempfile::tempdir().unwrap();
    let completions = data.path().join("bash-completion/completions");
    std::fs::create_dir_all(&completions).unwrap();
    // The name and place .ci/package installs it under (/usr/share).
    std::fs::write(completions.join("blktune"), script).unwrap();
    let host = crate::common::fake_host::FakeHost::new(&[
        FakeDisk::new("sda").dev(8, 0),
        FakeDisk::new("nvme0n1").dev(259, 0),
    ]);
    let root = host.path("sys");
    let root = root.to_str().unwrap();
    let complete = |rest: &str| bash_complete_on_demand(data.path(), &format!("blktune {rest}"));
    assert_eq!(
        complete(&format!("--sysfs-root {root} set ''")),
        ["nvme0n1", "sda"]
    );
    assert_eq!(
        complete(&format!("--sysfs-root {root} watch n")),
        ["nvme0n1"]
    );
    assert!(complete("ex").contains(&"exporter".to_string()));
    // This machine's /sys/block (only read), as ls lists it.
    let mut real: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    real.sort();
    assert_eq!(complete("set ''"), real);
}

#[test]
fn zsh_and_fish_scripts_parse_and_fish_completes_devices() {
    let test = "zsh_and_fish_scripts_parse_and_fish_completes_devices";
    let dir = tempfile::tempdir().unwrap();
    if crate::common::require_tool(test, "zsh") {
        let (_, script, _) = blktune(&["completions", "zsh"]);
        let file = dir.path().join("_blktune");
        std::fs::write(&file, &script).unwrap();
        let o = Command::new("zsh").arg("-n").arg(&file).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(script.contains("':device -- The whole device (sda, nvme0n1, loop0), not a partition:_blktune_block_devices' \\"), "{script}");
    }
    if crate::common::require_tool(test, "fish") {
        let (_, script, _) = blktune(&["completions", "fish"]);
        let file = dir.path().join("blktune.fish");
        std::fs::write(&file, &script).unwrap();
        let o = Command::new("fish")
            .arg("--no-execute")
            .arg(&file)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // fish itself completes `blktune set ` from the script.
        let o = Command::new("fish")
            .arg("--no-config")
            .arg("-c")
            .arg(format!(
                "source {}; complete -C 'blktune set '",
                file.display()
            ))
            .output()
            .unwrap();
        let got: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.split('\t').next())
            .map(str::to_owned)
            .collect();
        let mut real: Vec<String> = std::fs::read_dir("/sys/block")
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        real.sort();
        let mut got_sorted = got.clone();
        got_sorted.sort();
        assert_eq!(got_sorted, real, "{got:?}");
    }
}
