//! What a key can ask for ([`Action`]), how a binding spells its keys
//! ([`Key`], [`Binding`]), and the pure rules for an Esc that arrived glued
//! to the next key. The lists themselves are in [`super::bindings`].

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
    /// Open the udev export dialog (`e`); in the shoot-out's results,
    /// export the winner.
    Export,
    /// Open the scheduler shoot-out dialog (`b`).
    ShootOut,
    /// Alternate the two configurations of the last change in interleaved
    /// rounds (`A`), to decide what one before/after cannot.
    AbTest,
    /// Start or stop recording the live session to a file (`R`).
    Record,
    /// Live only: the latency probe of the selected device on or off.
    ToggleProbe,
    /// Live only: the processes panel (`i`) on or off.
    Processes,
    Faster,
    Slower,
    Pause,
    Help,
    /// The next sort column in the most telling order (`o`, F6).
    Sort,
    /// Sort by the column left (`<`) or right (`>`) of the sorted one.
    SortLeft,
    SortRight,
    Filter,
    Quit,
    /// Enter in an overlay.
    Confirm,
    /// Esc: close the overlay, or clear the filter.
    Cancel,
    /// A typed character in a text field.
    Input(char),
    Backspace,
    /// Ctrl-U in a text field: clear what is typed.
    ClearInput,
    /// Dialogs: the next option (match strategy, load).
    Cycle,
    /// Export dialog: this device / every changed device.
    Toggle,
    /// Export dialog: edit the path.
    EditPath,
    /// Shoot-out results: apply the winner.
    ApplyWinner,
    /// Replay: seek back ([`SEEK_STEP`](crate::tui::worker::replay::SEEK_STEP) seconds).
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
pub const FOREIGN: KeyModifiers = KeyModifiers::ALT
    .union(KeyModifiers::META)
    .union(KeyModifiers::SUPER)
    .union(KeyModifiers::HYPER);

impl Key {
    /// Does `ev` press this key? Shift is part of the character; any other
    /// modifier must be the one the key spells (Alt+s is not s).
    pub fn matches(self, ev: &KeyEvent) -> bool {
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
            | Action::SortLeft
            | Action::SortRight
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
