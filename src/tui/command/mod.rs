//! Keys to actions, binsider-style: a key event maps to an [`Action`] by a
//! pure function ([`action_for`]) over one list of bindings per [`Mode`];
//! the app and the dialogs apply actions and never look at keys.
//!
//! - [`action`]: the action enum, how a binding spells a key, Esc glued to a key
//! - [`bindings`]: the lists (main view, lists, text fields, help, yes/no,
//!   replay, export, shoot-out), which also feed the footer and the help
//! - [`mode`]: which list is in force, and the lookup
//! - [`glossary`]: every mark and abbreviation on screen, for the help

pub mod action;
pub mod bindings;
pub mod glossary;
pub mod mode;

pub use action::{Action, Binding, Key, key_name, safe_after_escape, split_escape};
pub use bindings::{CONFIRM, EXPORT, HELP, LIST, MAIN, REPLAY, SHOOTOUT, TEXT};
pub use glossary::GLOSSARY;
pub use mode::{Mode, action_for, main_binding};
