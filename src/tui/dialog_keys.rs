//! Key bindings of the export (`e`) and shoot-out (`b`) dialogs, in the same
//! form as [`super::command`]'s lists, so the footer and help use them too.

use super::command::{Action, Binding, Key};
use crossterm::event::KeyCode;

const fn b(
    keys: &'static [Key],
    shown: &'static str,
    hint: Option<&'static str>,
    help: &'static str,
    action: Action,
) -> Binding {
    Binding {
        keys,
        shown,
        hint,
        help,
        action,
        changes: false,
    }
}

use Key::{Char as C, Code as K};

/// Keys of the export dialog (the path field uses the text keys).
pub const EXPORT: &[Binding] = &[
    b(
        &[C('m'), K(KeyCode::Tab)],
        "m/Tab",
        Some("match"),
        "next match strategy: id, model, class, kernel",
        Action::Cycle,
    ),
    b(
        &[C('a')],
        "a",
        Some("all"),
        "this device / every device changed in this session",
        Action::Toggle,
    ),
    b(
        &[C('p')],
        "p",
        Some("path"),
        "edit the path (Enter keeps it, Esc restores it)",
        Action::EditPath,
    ),
    b(
        &[K(KeyCode::Up), C('k')],
        "↑/k",
        Some("scroll"),
        "scroll the preview up",
        Action::Up,
    ),
    b(
        &[K(KeyCode::Down), C('j')],
        "↓/j",
        None,
        "scroll the preview down",
        Action::Down,
    ),
    b(
        &[K(KeyCode::PageUp)],
        "PgUp",
        None,
        "preview page up",
        Action::PageUp,
    ),
    b(
        &[K(KeyCode::PageDown), C(' ')],
        "PgDn",
        None,
        "preview page down",
        Action::PageDown,
    ),
    b(
        &[K(KeyCode::Enter), C('w')],
        "Enter",
        Some("write"),
        "write the file (asks before overwriting)",
        Action::Confirm,
    ),
    b(
        &[K(KeyCode::Esc), C('q')],
        "Esc",
        Some("close"),
        "close without writing",
        Action::Cancel,
    ),
    b(&[Key::Ctrl('c')], "Ctrl-C", None, "quit", Action::Quit),
];

/// Keys of the shoot-out dialog.
pub const BENCH: &[Binding] = &[
    b(
        &[C('l'), K(KeyCode::Tab)],
        "l/Tab",
        Some("load"),
        "passive or a read-only load (before starting)",
        Action::Cycle,
    ),
    b(
        &[K(KeyCode::Enter)],
        "Enter",
        Some("start"),
        "start the shoot-out",
        Action::Confirm,
    ),
    b(
        &[C('a')],
        "a",
        Some("apply"),
        "apply the winner (a change: u undoes it)",
        Action::ApplyWinner,
    ),
    b(
        &[C('e')],
        "e",
        Some("export"),
        "export the winner as a udev rule",
        Action::Export,
    ),
    b(
        &[K(KeyCode::Esc), C('q')],
        "Esc",
        Some("cancel/close"),
        "cancel (restores the original settings) or close",
        Action::Cancel,
    ),
    b(&[Key::Ctrl('c')], "Ctrl-C", None, "quit", Action::Quit),
];
