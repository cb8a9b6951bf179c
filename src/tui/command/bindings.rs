//! The key bindings, one list per input mode. The same lists feed the key
//! dispatch ([`super::action_for`]), the footer hints and the help overlay,
//! so they cannot disagree; a test checks that no key is bound twice in a
//! mode. The dialogs' lists (export, shoot-out) are here too: a dialog
//! handles [`Action`]s, never keys.

use super::action::{Action, Binding, Key};
use crossterm::event::KeyCode;

const fn b(
    keys: &'static [Key],
    shown: &'static str,
    hint: Option<&'static str>,
    help: &'static str,
    action: Action,
    changes: bool,
) -> Binding {
    Binding {
        keys,
        shown,
        hint,
        help,
        action,
        changes,
    }
}

/// A dialog's binding: it changes no device by itself (the dialog checks
/// before it acts).
const fn d(
    keys: &'static [Key],
    shown: &'static str,
    hint: Option<&'static str>,
    help: &'static str,
    action: Action,
) -> Binding {
    b(keys, shown, hint, help, action, false)
}

use Key::{Char as C, Code as K};

// Keys the main view and the replay viewer share.
const UP: Binding = b(
    &[K(KeyCode::Up), C('k')],
    "↑/k",
    None,
    "select the previous device",
    Action::Up,
    false,
);
const DOWN: Binding = b(
    &[K(KeyCode::Down), C('j')],
    "↓/j",
    None,
    "select the next device",
    Action::Down,
    false,
);
const PAGE_UP: Binding = b(
    &[K(KeyCode::PageUp)],
    "PgUp",
    None,
    "a page up",
    Action::PageUp,
    false,
);
const PAGE_DOWN: Binding = b(
    &[K(KeyCode::PageDown)],
    "PgDn",
    None,
    "a page down",
    Action::PageDown,
    false,
);
const HOME: Binding = b(
    &[K(KeyCode::Home)],
    "Home",
    None,
    "first device",
    Action::Home,
    false,
);
const END: Binding = b(
    &[K(KeyCode::End)],
    "End",
    None,
    "last device",
    Action::End,
    false,
);
const SORT: Binding = b(
    &[C('o'), K(KeyCode::F(6))],
    "o/F6",
    Some("sort"),
    "sort by the next column (default %util; aqu-sz, await, ...)",
    Action::Sort,
    false,
);
const SORT_LEFT: Binding = b(
    &[C('<')],
    "<",
    None,
    "sort by the column to the left of the sorted one",
    Action::SortLeft,
    false,
);
const SORT_RIGHT: Binding = b(
    &[C('>')],
    ">",
    None,
    "sort by the column to the right of the sorted one",
    Action::SortRight,
    false,
);
const CLEAR_FILTER: Binding = b(
    &[K(KeyCode::Esc)],
    "Esc",
    None,
    "clear the filter",
    Action::Cancel,
    false,
);
const WHO_KEY: Binding = b(
    &[C('i')],
    "i",
    Some("procs"),
    "who does the device's I/O: processes, cgroups (i/Esc close)",
    Action::Processes,
    false,
);
const HELP_KEY: Binding = b(
    &[C('?')],
    "?",
    Some("help"),
    "this help",
    Action::Help,
    false,
);

/// The main view's commands, in help order.
pub const MAIN: &[Binding] = &[
    UP,
    DOWN,
    PAGE_UP,
    PAGE_DOWN,
    HOME,
    END,
    b(
        &[C('s'), K(KeyCode::Enter)],
        "s/Enter",
        Some("sched"),
        "pick the scheduler",
        Action::Picker,
        true,
    ),
    b(
        &[C('n')],
        "n",
        Some("nr"),
        "edit nr_requests",
        Action::EditNr,
        true,
    ),
    b(
        &[C('r')],
        "r",
        Some("ra"),
        "edit read_ahead_kb",
        Action::EditRa,
        true,
    ),
    b(
        &[C('t')],
        "t",
        Some("tun"),
        "edit the active scheduler's tunables",
        Action::EditTunables,
        true,
    ),
    b(
        &[C('u')],
        "u",
        Some("undo"),
        "undo the last change of this device",
        Action::Undo,
        true,
    ),
    b(
        &[C('U')],
        "U",
        Some("undo all"),
        "revert every change of this session",
        Action::RevertAll,
        true,
    ),
    b(
        &[C('e')],
        "e",
        Some("export"),
        "export the settings as a udev rule",
        Action::Export,
        false,
    ),
    b(
        &[C('b')],
        "b",
        Some("shoot-out"),
        "scheduler shoot-out on this device",
        Action::ShootOut,
        true,
    ),
    b(
        &[C('A')],
        "A",
        Some("A/B"),
        "A/B of the last change: alternate before and after, then decide",
        Action::AbTest,
        true,
    ),
    b(
        &[C('R')],
        "R",
        Some("record"),
        "record this session to a file; asks where outside your own dir",
        Action::Record,
        false,
    ),
    b(
        &[C('P')],
        "P",
        Some("probe"),
        "latency probe of this device on/off (a few read-only reads/s)",
        Action::ToggleProbe,
        false,
    ),
    SORT,
    SORT_LEFT,
    SORT_RIGHT,
    b(
        &[C('/')],
        "/",
        Some("filter"),
        "filter devices by name (Esc clears)",
        Action::Filter,
        false,
    ),
    CLEAR_FILTER,
    b(
        &[C('+'), C('=')],
        "+",
        None,
        "sample faster (down to 100 ms)",
        Action::Faster,
        false,
    ),
    b(
        &[C('-')],
        "-",
        None,
        "sample slower (up to 10 s)",
        Action::Slower,
        false,
    ),
    b(
        &[C('p'), C(' ')],
        "p/space",
        Some("pause"),
        "freeze or resume the display (sampling goes on)",
        Action::Pause,
        false,
    ),
    WHO_KEY,
    HELP_KEY,
    b(
        &[C('q'), Key::Ctrl('c')],
        "q/Ctrl-C",
        Some("quit"),
        "quit (changes stay; the revert command is printed)",
        Action::Quit,
        false,
    ),
];

/// Keys of lists (scheduler picker, tunables).
pub const LIST: &[Binding] = &[
    b(
        &[K(KeyCode::Up), C('k')],
        "↑/k",
        Some("move"),
        "previous entry",
        Action::Up,
        false,
    ),
    b(
        &[K(KeyCode::Down), C('j')],
        "↓/j",
        None,
        "next entry",
        Action::Down,
        false,
    ),
    b(
        &[K(KeyCode::Enter)],
        "Enter",
        Some("apply"),
        "choose",
        Action::Confirm,
        false,
    ),
    b(
        &[K(KeyCode::Esc), C('q')],
        "Esc",
        Some("cancel"),
        "close",
        Action::Cancel,
        false,
    ),
    b(
        &[Key::Ctrl('c')],
        "Ctrl-C",
        None,
        "quit",
        Action::Quit,
        false,
    ),
];

/// Keys of text fields (value editors, the name filter).
pub const TEXT: &[Binding] = &[
    b(
        &[K(KeyCode::Enter)],
        "Enter",
        Some("apply"),
        "use the value",
        Action::Confirm,
        false,
    ),
    b(
        &[K(KeyCode::Esc)],
        "Esc",
        Some("cancel"),
        "cancel",
        Action::Cancel,
        false,
    ),
    b(
        &[K(KeyCode::Backspace)],
        "Bksp",
        Some("delete"),
        "delete a character",
        Action::Backspace,
        false,
    ),
    b(
        &[Key::Ctrl('u')],
        "Ctrl-U",
        Some("clear"),
        "clear the value",
        Action::ClearInput,
        false,
    ),
    b(
        &[Key::Ctrl('c')],
        "Ctrl-C",
        None,
        "quit",
        Action::Quit,
        false,
    ),
];

/// Keys of the help overlay.
pub const HELP: &[Binding] = &[
    b(
        &[K(KeyCode::Up), C('k')],
        "↑/k",
        Some("scroll"),
        "scroll up",
        Action::Up,
        false,
    ),
    b(
        &[K(KeyCode::Down), C('j')],
        "↓/j",
        None,
        "scroll down",
        Action::Down,
        false,
    ),
    b(
        &[K(KeyCode::PageUp)],
        "PgUp",
        None,
        "page up",
        Action::PageUp,
        false,
    ),
    b(
        &[K(KeyCode::PageDown), C(' ')],
        "PgDn",
        None,
        "page down",
        Action::PageDown,
        false,
    ),
    b(
        &[K(KeyCode::Home)],
        "Home",
        None,
        "top",
        Action::Home,
        false,
    ),
    b(&[K(KeyCode::End)], "End", None, "end", Action::End, false),
    b(
        &[K(KeyCode::Esc), C('q'), C('?')],
        "Esc",
        Some("close"),
        "close the help",
        Action::Cancel,
        false,
    ),
    b(
        &[Key::Ctrl('c')],
        "Ctrl-C",
        None,
        "quit",
        Action::Quit,
        false,
    ),
];

/// Keys of a yes/no question.
pub const CONFIRM: &[Binding] = &[
    b(&[C('y')], "y", Some("yes"), "do it", Action::Confirm, false),
    b(
        &[C('n'), K(KeyCode::Esc), C('q')],
        "n/Esc",
        Some("no"),
        "cancel",
        Action::Cancel,
        false,
    ),
    b(
        &[Key::Ctrl('c')],
        "Ctrl-C",
        None,
        "quit",
        Action::Quit,
        false,
    ),
];

/// The replay viewer's commands, in help order (read-only: no change keys).
pub const REPLAY: &[Binding] = &[
    UP,
    DOWN,
    PAGE_UP,
    PAGE_DOWN,
    HOME,
    END,
    b(
        &[C('p'), C(' ')],
        "p/space",
        Some("pause"),
        "pause or resume playback (at the end: play again)",
        Action::Pause,
        false,
    ),
    b(
        &[K(KeyCode::Left), C('h')],
        "←/h",
        Some("-10s"),
        "seek back 10 seconds",
        Action::SeekBack,
        false,
    ),
    b(
        &[K(KeyCode::Right), C('l')],
        "→/l",
        Some("+10s"),
        "seek forward 10 seconds",
        Action::SeekForward,
        false,
    ),
    b(
        &[C(']'), C('+'), C('=')],
        "]/+",
        Some("faster"),
        "play faster (up to x64)",
        Action::SpeedUp,
        false,
    ),
    b(
        &[C('['), C('-')],
        "[/-",
        Some("slower"),
        "play slower (down to x0.25)",
        Action::SpeedDown,
        false,
    ),
    SORT,
    SORT_LEFT,
    SORT_RIGHT,
    b(
        &[C('/')],
        "/",
        None,
        "filter devices by name (Esc clears)",
        Action::Filter,
        false,
    ),
    CLEAR_FILTER,
    WHO_KEY,
    HELP_KEY,
    b(
        &[C('q'), Key::Ctrl('c')],
        "q/Ctrl-C",
        Some("quit"),
        "quit the replay",
        Action::Quit,
        false,
    ),
];

/// Keys of the export dialog (the path field uses the text keys).
pub const EXPORT: &[Binding] = &[
    d(
        &[C('m'), K(KeyCode::Tab)],
        "m/Tab",
        Some("match"),
        "next match strategy: id, model, class, kernel",
        Action::Cycle,
    ),
    d(
        &[C('a')],
        "a",
        Some("all"),
        "this device / every device changed in this session",
        Action::Toggle,
    ),
    d(
        &[C('f')],
        "f",
        Some("file"),
        "edit the file's path (Enter keeps it, Esc restores it)",
        Action::EditPath,
    ),
    d(
        &[K(KeyCode::Up), C('k')],
        "↑/k",
        Some("scroll"),
        "scroll the preview up",
        Action::Up,
    ),
    d(
        &[K(KeyCode::Down), C('j')],
        "↓/j",
        None,
        "scroll the preview down",
        Action::Down,
    ),
    d(
        &[K(KeyCode::PageUp)],
        "PgUp",
        None,
        "preview page up",
        Action::PageUp,
    ),
    d(
        &[K(KeyCode::PageDown), C(' ')],
        "PgDn",
        None,
        "preview page down",
        Action::PageDown,
    ),
    d(
        &[K(KeyCode::Enter), C('w')],
        "Enter",
        Some("write"),
        "write the file (asks before overwriting)",
        Action::Confirm,
    ),
    d(
        &[K(KeyCode::Esc), C('q')],
        "Esc",
        Some("close"),
        "close without writing",
        Action::Cancel,
    ),
    d(&[Key::Ctrl('c')], "Ctrl-C", None, "quit", Action::Quit),
];

/// Keys while an A/B runs (`A`): the device is the A/B's until it ends.
pub const AB: &[Binding] = &[
    b(
        &[K(KeyCode::Esc)],
        "Esc",
        Some("stop A/B"),
        "stop the A/B (your choice comes back)",
        Action::Cancel,
        false,
    ),
    HELP_KEY,
    b(
        &[C('q'), Key::Ctrl('c')],
        "q/Ctrl-C",
        Some("quit"),
        "quit (the A/B stops and your choice comes back first)",
        Action::Quit,
        false,
    ),
];

/// Keys of the shoot-out dialog.
pub const SHOOTOUT: &[Binding] = &[
    d(
        &[C('l'), K(KeyCode::Tab)],
        "l/Tab",
        Some("load"),
        "passive or a read-only load (before starting)",
        Action::Cycle,
    ),
    d(
        &[K(KeyCode::Enter)],
        "Enter",
        Some("start"),
        "start the shoot-out",
        Action::Confirm,
    ),
    d(
        &[C('a')],
        "a",
        Some("apply"),
        "apply the winner (a change: u undoes it)",
        Action::ApplyWinner,
    ),
    d(
        &[C('e')],
        "e",
        Some("export"),
        "export the winner as a udev rule",
        Action::Export,
    ),
    d(
        &[K(KeyCode::Esc), C('q')],
        "Esc",
        Some("cancel/close"),
        "cancel (restores the original settings) or close",
        Action::Cancel,
    ),
    d(&[Key::Ctrl('c')], "Ctrl-C", None, "quit", Action::Quit),
];
