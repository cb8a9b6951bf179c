//! One list of key bindings per input mode. The same lists feed the footer
//! hints, the help overlay and the key dispatch, so they cannot disagree.
//! Mapping a key to an [`Action`] is a pure function; the app applies actions.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Everything a key can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Picker,
    EditNr,
    EditRa,
    EditTunables,
    Undo,
    RevertAll,
    /// The udev export of another feature; a hook until it lands.
    Export,
    /// The scheduler shoot-out of another feature; a hook until it lands.
    ShootOut,
    /// Recording of another feature; a hook until it lands.
    Record,
    /// Live only: the latency probe of the selected device on or off.
    ToggleProbe,
    Faster,
    Slower,
    Pause,
    Help,
    Sort,
    Filter,
    Quit,
    /// Enter in an overlay.
    Confirm,
    /// Esc: close the overlay, or clear the filter.
    Cancel,
    /// A typed character in a text field.
    Input(char),
    Backspace,
    /// Dialogs: the next option (match strategy, load).
    Cycle,
    /// Export dialog: this device / every changed device.
    Toggle,
    /// Export dialog: edit the path.
    EditPath,
    /// Shoot-out results: apply the winner.
    ApplyWinner,
    /// Replay: seek back ([`crate::tui::replay_source::SEEK_STEP`] seconds).
    SeekBack,
    /// Replay: seek forward.
    SeekForward,
    /// Replay: play faster.
    SpeedUp,
    /// Replay: play slower.
    SpeedDown,
}

/// A key as the bindings spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Code(KeyCode),
    Ctrl(char),
}

/// Modifiers no binding declares. crossterm reads an Esc followed at once by
/// another key (both in one read: over SSH, on a loaded machine) as Alt+key,
/// so such a key must never act as the plain key ([`split_escape`]).
const FOREIGN: KeyModifiers = KeyModifiers::ALT
    .union(KeyModifiers::META)
    .union(KeyModifiers::SUPER)
    .union(KeyModifiers::HYPER);

impl Key {
    /// Does `ev` press this key? Shift is part of the character; any other
    /// modifier must be the one the key spells (Alt+s is not s).
    fn matches(self, ev: &KeyEvent) -> bool {
        if ev.modifiers.intersects(FOREIGN) {
            return false;
        }
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        match self {
            Key::Ctrl(c) => ctrl && ev.code == KeyCode::Char(c),
            Key::Char(c) => !ctrl && ev.code == KeyCode::Char(c),
            Key::Code(code) => !ctrl && ev.code == code,
        }
    }
}

/// One binding: keys, how the help spells them, a footer hint, a description.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub keys: &'static [Key],
    /// `s/Enter` in the help overlay.
    pub shown: &'static str,
    /// Short footer word, `None` when the binding is not hinted in the footer.
    pub hint: Option<&'static str>,
    pub help: &'static str,
    pub action: Action,
    /// Does it change a device (refused in read-only mode)?
    pub changes: bool,
}

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

use Key::{Char as C, Code as K};

/// The main view's commands, in help order.
pub const MAIN: &[Binding] = &[
    b(
        &[K(KeyCode::Up), C('k')],
        "↑/k",
        None,
        "select the previous device",
        Action::Up,
        false,
    ),
    b(
        &[K(KeyCode::Down), C('j')],
        "↓/j",
        None,
        "select the next device",
        Action::Down,
        false,
    ),
    b(
        &[K(KeyCode::PageUp)],
        "PgUp",
        None,
        "a page up",
        Action::PageUp,
        false,
    ),
    b(
        &[K(KeyCode::PageDown)],
        "PgDn",
        None,
        "a page down",
        Action::PageDown,
        false,
    ),
    b(
        &[K(KeyCode::Home)],
        "Home",
        None,
        "first device",
        Action::Home,
        false,
    ),
    b(
        &[K(KeyCode::End)],
        "End",
        None,
        "last device",
        Action::End,
        false,
    ),
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
        None,
        "revert every change of this session",
        Action::RevertAll,
        true,
    ),
    b(
        &[C('e')],
        "e",
        None,
        "export the settings as a udev rule",
        Action::Export,
        false,
    ),
    b(
        &[C('b')],
        "b",
        None,
        "scheduler shoot-out on this device",
        Action::ShootOut,
        false,
    ),
    b(
        &[C('R')],
        "R",
        None,
        "record this session to a file",
        Action::Record,
        false,
    ),
    b(
        &[C('P')],
        "P",
        None,
        "latency probe of this device on/off (a few read-only reads/s)",
        Action::ToggleProbe,
        false,
    ),
    b(
        &[C('o')],
        "o",
        Some("sort"),
        "cycle the sort column",
        Action::Sort,
        false,
    ),
    b(
        &[C('/')],
        "/",
        Some("filter"),
        "filter devices by name (Esc clears)",
        Action::Filter,
        false,
    ),
    b(
        &[K(KeyCode::Esc)],
        "Esc",
        None,
        "clear the filter",
        Action::Cancel,
        false,
    ),
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
        "pause or resume sampling",
        Action::Pause,
        false,
    ),
    b(
        &[C('?')],
        "?",
        Some("help"),
        "this help",
        Action::Help,
        false,
    ),
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
        None,
        "delete a character",
        Action::Backspace,
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
    b(
        &[K(KeyCode::Up), C('k')],
        "↑/k",
        None,
        "select the previous device",
        Action::Up,
        false,
    ),
    b(
        &[K(KeyCode::Down), C('j')],
        "↓/j",
        None,
        "select the next device",
        Action::Down,
        false,
    ),
    b(
        &[K(KeyCode::PageUp)],
        "PgUp",
        None,
        "a page up",
        Action::PageUp,
        false,
    ),
    b(
        &[K(KeyCode::PageDown)],
        "PgDn",
        None,
        "a page down",
        Action::PageDown,
        false,
    ),
    b(
        &[K(KeyCode::Home)],
        "Home",
        None,
        "first device",
        Action::Home,
        false,
    ),
    b(
        &[K(KeyCode::End)],
        "End",
        None,
        "last device",
        Action::End,
        false,
    ),
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
    b(
        &[C('o')],
        "o",
        Some("sort"),
        "cycle the sort column",
        Action::Sort,
        false,
    ),
    b(
        &[C('/')],
        "/",
        None,
        "filter devices by name (Esc clears)",
        Action::Filter,
        false,
    ),
    b(
        &[K(KeyCode::Esc)],
        "Esc",
        None,
        "clear the filter",
        Action::Cancel,
        false,
    ),
    b(
        &[C('?')],
        "?",
        Some("help"),
        "this help",
        Action::Help,
        false,
    ),
    b(
        &[C('q'), Key::Ctrl('c')],
        "q/Ctrl-C",
        Some("quit"),
        "quit the replay",
        Action::Quit,
        false,
    ),
];

/// Which binding list is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Main,
    List,
    Text,
    Help,
    Confirm,
    /// The export dialog ([`super::dialog_keys::EXPORT`]).
    Export,
    /// The shoot-out dialog ([`super::dialog_keys::BENCH`]).
    Bench,
    /// The main view of a replay.
    Replay,
}

impl Mode {
    /// The bindings of this mode.
    pub fn bindings(self) -> &'static [Binding] {
        match self {
            Mode::Main => MAIN,
            Mode::List => LIST,
            Mode::Text => TEXT,
            Mode::Help => HELP,
            Mode::Confirm => CONFIRM,
            Mode::Export => super::dialog_keys::EXPORT,
            Mode::Bench => super::dialog_keys::BENCH,
            Mode::Replay => REPLAY,
        }
    }
}

/// The action a key asks for in `mode`, if any. Pure.
pub fn action_for(mode: Mode, ev: &KeyEvent) -> Option<Action> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    if let Some(bd) = mode
        .bindings()
        .iter()
        .find(|bd| bd.keys.iter().any(|k| k.matches(ev)))
    {
        return Some(bd.action);
    }
    match (mode, ev.code) {
        (Mode::Text, KeyCode::Char(c))
            if !ev
                .modifiers
                .intersects(FOREIGN.union(KeyModifiers::CONTROL)) =>
        {
            Some(Action::Input(c))
        }
        _ => None,
    }
}

/// An Alt+key is how crossterm reads an Esc followed at once by that key
/// (`ESC x` in one read of the terminal). No binding declares Alt, so it is
/// taken as the two keys it most likely was: `Some(the key without Alt)`,
/// to be handled after an Esc. Pure.
pub fn split_escape(ev: &KeyEvent) -> Option<KeyEvent> {
    if ev.kind == KeyEventKind::Release || !ev.modifiers.contains(KeyModifiers::ALT) {
        return None;
    }
    let mut key = *ev;
    key.modifiers.remove(KeyModifiers::ALT);
    Some(key)
}

/// May the key that came glued to an Esc act after it? Only what changes no
/// device and confirms nothing: the Esc was meant to cancel, and an Alt+key
/// pressed by mistake must not do more than move the cursor or the view.
pub fn safe_after_escape(a: Action) -> bool {
    matches!(
        a,
        Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::Home
            | Action::End
            | Action::Cancel
            | Action::Help
            | Action::Sort
            | Action::Filter
            | Action::Pause
            | Action::Faster
            | Action::Slower
            | Action::SeekBack
            | Action::SeekForward
            | Action::SpeedUp
            | Action::SpeedDown
    )
}

/// How the status line names a key (`s`, `Enter`).
pub fn key_name(ev: &KeyEvent) -> String {
    match ev.code {
        KeyCode::Char(' ') => "space".into(),
        KeyCode::Char(c) if ev.modifiers.contains(KeyModifiers::CONTROL) => format!("Ctrl-{c}"),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::Esc => "Esc".into(),
        KeyCode::Backspace => "Bksp".into(),
        code => format!("{code:?}"),
    }
}

/// The binding of an action in the main list (for "read-only" explanations).
pub fn main_binding(action: Action) -> Option<&'static Binding> {
    MAIN.iter().find(|bd| bd.action == action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn keys_map_per_mode() {
        assert_eq!(
            action_for(Mode::Main, &key(KeyCode::Char('s'))),
            Some(Action::Picker)
        );
        assert_eq!(
            action_for(Mode::Main, &key(KeyCode::Enter)),
            Some(Action::Picker)
        );
        assert_eq!(
            action_for(Mode::List, &key(KeyCode::Enter)),
            Some(Action::Confirm)
        );
        assert_eq!(
            action_for(Mode::Text, &key(KeyCode::Char('q'))),
            Some(Action::Input('q'))
        );
        assert_eq!(
            action_for(Mode::Main, &key(KeyCode::Char('q'))),
            Some(Action::Quit)
        );
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        for m in [
            Mode::Main,
            Mode::List,
            Mode::Text,
            Mode::Help,
            Mode::Confirm,
        ] {
            assert_eq!(action_for(m, &ctrl_c), Some(Action::Quit), "{m:?}");
        }
        assert_eq!(action_for(Mode::Main, &key(KeyCode::Char('Z'))), None);
        // The probe reads the live machine: no such key in a replay.
        assert_eq!(
            action_for(Mode::Main, &key(KeyCode::Char('P'))),
            Some(Action::ToggleProbe)
        );
        assert_eq!(action_for(Mode::Replay, &key(KeyCode::Char('P'))), None);
    }

    /// crossterm reads `ESC Enter` in one packet as Alt+Enter: it must not
    /// confirm anything, in any mode, nor type into a text field.
    #[test]
    fn an_alt_key_triggers_no_binding_and_splits_into_esc_and_the_key() {
        let alt = |c| KeyEvent::new(c, KeyModifiers::ALT);
        let modes = [
            Mode::Main,
            Mode::List,
            Mode::Text,
            Mode::Help,
            Mode::Confirm,
            Mode::Export,
            Mode::Bench,
            Mode::Replay,
        ];
        for m in modes {
            for code in [
                KeyCode::Enter,
                KeyCode::Char('s'),
                KeyCode::Char('y'),
                KeyCode::Char('U'),
                KeyCode::Char('4'),
                KeyCode::Down,
            ] {
                assert_eq!(action_for(m, &alt(code)), None, "{m:?} Alt+{code:?}");
            }
            let ctrl_alt_c = KeyEvent::new(
                KeyCode::Char('c'),
                KeyModifiers::CONTROL | KeyModifiers::ALT,
            );
            assert_eq!(action_for(m, &ctrl_alt_c), None, "{m:?}");
        }
        assert_eq!(split_escape(&key(KeyCode::Enter)), None);
        assert_eq!(
            split_escape(&alt(KeyCode::Enter)),
            Some(key(KeyCode::Enter))
        );
        let shift_alt = KeyEvent::new(KeyCode::Char('U'), KeyModifiers::SHIFT | KeyModifiers::ALT);
        assert_eq!(
            split_escape(&shift_alt),
            Some(KeyEvent::new(KeyCode::Char('U'), KeyModifiers::SHIFT))
        );
        // What may follow the Esc: moving, never a change or a confirmation.
        for a in [Action::Down, Action::Cancel, Action::Sort] {
            assert!(safe_after_escape(a), "{a:?}");
        }
        for bd in MAIN.iter().filter(|b| b.changes) {
            assert!(!safe_after_escape(bd.action), "{:?}", bd.action);
        }
        for a in [
            Action::Confirm,
            Action::ApplyWinner,
            Action::Quit,
            Action::Input('4'),
            Action::Toggle,
            Action::EditPath,
            Action::Export,
            Action::ShootOut,
            Action::Record,
        ] {
            assert!(!safe_after_escape(a), "{a:?}");
        }
    }

    #[test]
    fn no_key_is_bound_twice_in_a_mode() {
        for m in [
            Mode::Main,
            Mode::List,
            Mode::Text,
            Mode::Help,
            Mode::Confirm,
            Mode::Export,
            Mode::Bench,
            Mode::Replay,
        ] {
            let keys: Vec<Key> = m
                .bindings()
                .iter()
                .flat_map(|b| b.keys.iter().copied())
                .collect();
            for (i, k) in keys.iter().enumerate() {
                assert!(!keys[i + 1..].contains(k), "{m:?}: {k:?} bound twice");
            }
        }
    }
}
