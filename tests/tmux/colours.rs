//! End to end: the real binary in tmux on a fake tree, with and without
//! NO_COLOR (<https://no-color.org>), read back with `capture-pane -e`
//! (the screen with its SGR escapes). Colour codes must be there by
//! default and with an empty NO_COLOR, and absent with NO_COLOR=1, while
//! reverse video (the selected row, the header) stays. Needs tmux, not root
//! (the fake tree and `--read-only` keep every real device out of it).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use blktune_core::diskstats::Counters;
use blktune_core::fake::{FakeDisk, FakeTree};
use common::tmux::{SESSION, Tmux};
use common::*;

/// A fake machine of two disks with some I/O since boot.
fn tree() -> (tempfile::TempDir, FakeTree) {
    let dir = tempfile::tempdir().unwrap();
    let t = FakeTree::new(dir.path()).unwrap();
    t.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
    t.add(
        &FakeDisk::new("sdb")
            .dev(8, 16)
            .rotational(true)
            .active("bfq"),
    )
    .unwrap();
    let c = Counters {
        rd_ios: 5_000,
        rd_sectors: 80_000,
        rd_ticks: 3_000,
        wr_ios: 2_000,
        wr_sectors: 90_000,
        wr_ticks: 4_000,
        io_ticks: 2_500,
        time_in_queue: 9_000,
        ..Counters::default()
    };
    t.set_diskstats(&[("sda", 8, 0, c), ("sdb", 8, 16, c)])
        .unwrap();
    (dir, t)
}

/// The SGR parameter lists (`\e[...m`) in `text`, split at `;`.
fn sgr_params(text: &str) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("\x1b[") {
        rest = &rest[i + 2..];
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == ';' || c == ':'))
            .unwrap_or(rest.len());
        if rest[end..].starts_with('m') {
            let ps = rest[..end]
                .split([';', ':'])
                .map(|p| p.parse().unwrap_or(0))
                .collect();
            out.push(ps);
        }
        rest = &rest[end..];
    }
    out
}

/// Does this SGR list set a colour (foreground, background or underline)?
/// 30-37/90-97 and 40-47/100-107 are the 16 colours; 38/48/58 introduce
/// 256-colour (`5;N`) and true-colour (`2;R;G;B`) ones. 39/49 only reset.
fn sets_colour(ps: &[u32]) -> bool {
    let mut i = 0;
    while i < ps.len() {
        match ps[i] {
            30..=37 | 40..=47 | 90..=97 | 100..=107 | 38 | 48 | 58 => return true,
            _ => i += 1,
        }
    }
    false
}

/// Is reverse video on where `needle` starts (the first place it is)?
/// Attributes carry on across the lines of a capture, as tmux writes them.
fn reversed_at(screen: &str, needle: &str) -> bool {
    let at = screen.find(needle).expect("needle on the screen");
    let mut on = false;
    for ps in sgr_params(&screen[..at]) {
        let mut i = 0;
        while i < ps.len() {
            match ps[i] {
                0 | 27 => on = false,
                7 => on = true,
                // A colour's own numbers (`38;5;7` is not reverse).
                38 | 48 | 58 => i += if ps.get(i + 1) == Some(&2) { 4 } else { 2 },
                _ => {}
            }
            i += 1;
        }
    }
    on
}

/// What the TUI drew, escapes included, with `no_color` as NO_COLOR
/// (`None`: unset), after it has shown a sample.
fn capture(no_color: Option<&str>) -> String {
    let (dir, _t) = tree();
    let journal = tempfile::tempdir().unwrap();
    let env = no_color.map_or_else(String::new, |v| format!("NO_COLOR='{v}' "));
    let cmd = format!(
        "env {env}BLKTUNE_JOURNAL_DIR='{}' '{}' --read-only --sysfs-root '{}' --proc-root '{}'",
        journal.path().display(),
        env!("CARGO_BIN_EXE_blktune"),
        dir.path().join("sys").display(),
        dir.path().join("proc").display(),
    );
    let t = Tmux::start(&cmd, 80, 24);
    // The table with the selected device, and the detail pane of it.
    t.wait("the device table", |s| {
        s.contains("DEVICE") && s.contains("▶sda") && s.contains("─ sda")
    });
    let o = t
        .tmux(&["capture-pane", "-e", "-p", "-t", SESSION])
        .output()
        .unwrap();
    assert!(o.status.success());
    let screen = String::from_utf8(o.stdout).unwrap();
    t.keys(&["q"]);
    t.wait("the TUI to quit", |s| s.contains("EXIT=0"));
    screen
}

#[test]
fn colour_escapes_follow_no_color() {
    if !require_tool("colour_escapes_follow_no_color", "tmux") {
        return;
    }
    let plain = |s: &str| sgr_params(s).into_iter().filter(|p| sets_colour(p)).count();
    let reverse = |s: &str| sgr_params(s).iter().any(|p| p.contains(&7));

    let default = capture(None);
    assert!(
        plain(&default) > 0,
        "no colour codes by default:\n{default:?}"
    );
    // Empty counts as unset (no-color.org).
    let empty = capture(Some(""));
    assert!(
        plain(&empty) > 0,
        "no colour codes with NO_COLOR='':\n{empty:?}"
    );

    let none = capture(Some("1"));
    assert!(none.contains("▶sda"), "{none}");
    assert_eq!(
        plain(&none),
        0,
        "colour codes with NO_COLOR=1: {:?}\n{none:?}",
        sgr_params(&none)
            .into_iter()
            .filter(|p| sets_colour(p))
            .collect::<Vec<_>>()
    );
    // Without colour the selection and the header bar are reverse video.
    // (crossterm drops colours under NO_COLOR by itself, writing `\e[;m`,
    // a full reset, instead; had blktune kept its colours, that reset would
    // wipe the reverse video and the selection would vanish.)
    assert!(
        reverse(&none),
        "no reverse video with NO_COLOR=1:\n{none:?}"
    );
    assert!(reversed_at(&none, "▶sda"), "selected row:\n{none:?}");
    assert!(reversed_at(&none, "testhost"), "header:\n{none:?}");
    assert!(!reversed_at(&none, " sdb "), "an other row:\n{none:?}");
    // With colour the selection is reverse video too.
    assert!(reversed_at(&default, "▶sda"), "{default:?}");
}

#[test]
fn sgr_parsing_sees_every_colour_form() {
    let codes = [
        ("\x1b[31m", true),
        ("\x1b[1;94m", true),
        ("\x1b[46m", true),
        ("\x1b[38;5;208m", true),
        ("\x1b[48;2;1;2;3m", true),
        ("\x1b[38:5:3m", true),
        ("\x1b[1;7m", false),
        ("\x1b[39;49m", false),
        ("\x1b[0m", false),
        ("\x1b[m", false),
    ];
    for (s, colour) in codes {
        let ps = sgr_params(&format!("x{s}y"));
        assert_eq!(ps.len(), 1, "{s:?}");
        assert_eq!(sets_colour(&ps[0]), colour, "{s:?}");
    }
    let s = "\x1b[7mA\x1b[0mB\x1b[1;7mC\x1b[27mD\x1b[7mE\x1b[mF\x1b[38;5;7;48;2;7;7;7mG";
    let on: Vec<bool> = ["A", "B", "C", "D", "E", "F", "G"]
        .iter()
        .map(|n| reversed_at(s, n))
        .collect();
    assert_eq!(on, [true, false, true, false, true, false, false]);
    // Cursor moves are not SGR.
    assert!(sgr_params("\x1b[31;1H").is_empty());
}
