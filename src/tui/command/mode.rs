//! Which binding list is in force ([`Mode`]) and the pure map from a key
//! event to the [`Action`] it asks for.

use super::action::{Action, Binding, FOREIGN};
use super::bindings::{AB, CONFIRM, EXPORT, HELP, LIST, MAIN, REPLAY, SHOOTOUT, TEXT};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Which binding list is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Main,
    List,
    Text,
    Help,
    Confirm,
    /// The export dialog ([`EXPORT`]).
    Export,
    /// The shoot-out dialog ([`SHOOTOUT`]).
    ShootOut,
    /// The main view of a replay.
    Replay,
    /// The main view while an A/B runs ([`AB`]).
    Ab,
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
            Mode::Export => EXPORT,
            Mode::ShootOut => SHOOTOUT,
            Mode::Replay => REPLAY,
            Mode::Ab => AB,
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

/// The binding of an action in the main list (for "read-only" explanations).
pub fn main_binding(action: Action) -> Option<&'static Binding> {
    MAIN.iter().find(|bd| bd.action == action)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::command::action::{Key, safe_after_escape, split_escape};

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
            Mode::ShootOut,
            Mode::Replay,
            Mode::Ab,
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
            Mode::ShootOut,
            Mode::Replay,
            Mode::Ab,
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
