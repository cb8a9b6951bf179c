//! The bytes a terminal sends, as key events: what blktune reads from its
//! terminal itself instead of through crossterm's reader (which spins for
//! ever on a terminal that hung up: crossterm-rs/crossterm#793).
//!
//! It reads the keys an xterm-like terminal (xterm, tmux, screen, the Linux
//! console, SSH clients) sends with no special mode turned on: characters
//! (UTF-8), control keys, `ESC [` (CSI) and `ESC O` (SS3) sequences for the
//! arrows, Home/End, PgUp/PgDn, Insert/Delete and F1-F12 with their xterm
//! modifiers, and an Esc glued to the next key as Alt+key, as crossterm reads
//! them (so the key bindings see the same events). Sequences it does not know
//! (mouse, focus, reports) are skipped whole. Pure, and bounded: an
//! unfinished sequence is kept only up to [`MAX_SEQUENCE`] bytes.
//!
//! Sequences: <https://invisible-island.net/xterm/ctlseqs/ctlseqs.html>
//! ("PC-Style Function Keys", "VT220-Style Function Keys").

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

/// Longest unfinished sequence kept for the next read. Real key sequences
/// are under 16 bytes; more is noise (a broken terminal), dropped.
pub const MAX_SEQUENCE: usize = 64;

const ESC: u8 = 0x1b;

/// Turns reads of a terminal into events, keeping a sequence cut between
/// two reads for the next.
#[derive(Debug, Default)]
pub struct Decoder {
    pending: Vec<u8>,
    /// An overlong sequence was dropped: its rest is skipped too, up to
    /// its final byte, so that none of it reads as keys.
    skipping: bool,
}

/// What the bytes at the start of a buffer are.
#[derive(Debug, PartialEq)]
enum Step {
    /// A whole sequence of `len` bytes: an event, or one that is skipped.
    Done(Option<KeyEvent>, usize),
    /// The start of a sequence: wait for the rest.
    Unfinished,
}

impl Decoder {
    /// Decode one read of the terminal into `out`. `more`: the read filled
    /// its buffer, so a sequence cut at its end goes on in the next (a lone
    /// Esc at the end of a shorter read is the Esc key).
    pub fn decode(&mut self, bytes: &[u8], more: bool, out: &mut Vec<Event>) {
        let mut bytes = bytes;
        if self.skipping {
            let rest = bytes.iter().position(|b| !(0x20..=0x3f).contains(b));
            let Some(end) = rest else { return };
            self.skipping = false;
            // A final byte ends the sequence; anything else starts anew.
            let is_final = (0x40..=0x7e).contains(&bytes[end]);
            bytes = &bytes[end + usize::from(is_final)..];
        }
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        while at < self.pending.len() {
            match step(&self.pending[at..], more) {
                Step::Done(key, len) => {
                    out.extend(key.map(Event::Key));
                    at += len;
                }
                Step::Unfinished => break,
            }
        }
        self.pending.drain(..at);
        if self.pending.len() > MAX_SEQUENCE {
            self.pending.clear();
            self.skipping = true;
        }
    }

    /// Bytes held back as the start of an unfinished sequence.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

/// A key with no modifier.
fn key(code: KeyCode) -> Option<KeyEvent> {
    Some(KeyEvent::new(code, KeyModifiers::NONE))
}

/// The first event of `buf` (never empty).
fn step(buf: &[u8], more: bool) -> Step {
    match buf[0] {
        ESC => escape(buf, more),
        b'\r' => Step::Done(key(KeyCode::Enter), 1),
        b'\t' => Step::Done(key(KeyCode::Tab), 1),
        0x7f => Step::Done(key(KeyCode::Backspace), 1),
        0 => Step::Done(ctrl(' '), 1),
        // Ctrl+A..Ctrl+Z (Ctrl+J is \n, Ctrl+H is 0x08 in raw mode).
        c @ 0x01..=0x1a => Step::Done(ctrl(char::from(c - 1 + b'a')), 1),
        // Ctrl+\ ] ^ _ arrive as Ctrl+4..7 (what crossterm reads too).
        c @ 0x1c..=0x1f => Step::Done(ctrl(char::from(c - 0x1c + b'4')), 1),
        _ => utf8(buf),
    }
}

/// Ctrl and a character.
fn ctrl(ch: char) -> Option<KeyEvent> {
    Some(KeyEvent::new(KeyCode::Char(ch), KeyModifiers::CONTROL))
}

/// One UTF-8 character (uppercase carries Shift, as crossterm has it);
/// a byte that starts none is skipped.
fn utf8(buf: &[u8]) -> Step {
    let len = match buf[0] {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Step::Done(None, 1),
    };
    let Some(bytes) = buf.get(..len) else {
        // Continuation bytes only, so far: wait for the rest.
        return if buf[1..].iter().all(|b| b & 0xc0 == 0x80) {
            Step::Unfinished
        } else {
            Step::Done(None, 1)
        };
    };
    match std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.chars().next())
    {
        Some(c) => {
            let mods = if c.is_uppercase() {
                KeyModifiers::SHIFT
            } else {
                KeyModifiers::NONE
            };
            Step::Done(Some(KeyEvent::new(KeyCode::Char(c), mods)), len)
        }
        None => Step::Done(None, 1),
    }
}

/// What starts with ESC: a lone Esc, `ESC [` (CSI), `ESC O` (SS3), or an Esc
/// glued to the key after it (Alt+key).
fn escape(buf: &[u8], more: bool) -> Step {
    match buf.get(1) {
        None if more => Step::Unfinished,
        None => Step::Done(key(KeyCode::Esc), 1),
        Some(b'[') => csi(buf),
        Some(b'O') => ss3(buf, more),
        // Esc Esc: the first is the key, the second starts anew.
        Some(&ESC) => Step::Done(key(KeyCode::Esc), 1),
        Some(_) => match step(&buf[1..], more) {
            Step::Done(Some(mut k), len) => {
                k.modifiers |= KeyModifiers::ALT;
                Step::Done(Some(k), len + 1)
            }
            Step::Done(None, len) => Step::Done(None, len + 1),
            Step::Unfinished => Step::Unfinished,
        },
    }
}

/// `ESC O x`: the arrows, Home/End and F1-F4 in the terminal's
/// application mode. `ESC O` alone at the end of a read is Alt+O.
fn ss3(buf: &[u8], more: bool) -> Step {
    let Some(&final_byte) = buf.get(2) else {
        return if more {
            Step::Unfinished
        } else {
            Step::Done(
                Some(KeyEvent::new(
                    KeyCode::Char('O'),
                    KeyModifiers::ALT | KeyModifiers::SHIFT,
                )),
                2,
            )
        };
    };
    Step::Done(
        letter_key(final_byte).map(|c| KeyEvent::new(c, KeyModifiers::NONE)),
        3,
    )
}

/// The key a CSI or SS3 sequence ending in this letter names.
fn letter_key(final_byte: u8) -> Option<KeyCode> {
    Some(match final_byte {
        b'A' => KeyCode::Up,
        b'B' => KeyCode::Down,
        b'C' => KeyCode::Right,
        b'D' => KeyCode::Left,
        b'H' => KeyCode::Home,
        b'F' => KeyCode::End,
        b'P' => KeyCode::F(1),
        b'Q' => KeyCode::F(2),
        b'R' => KeyCode::F(3),
        b'S' => KeyCode::F(4),
        _ => return None,
    })
}

/// `ESC [ params final`: parameter bytes 0x30-0x3f, intermediates 0x20-0x2f,
/// a final byte 0x40-0x7e (ECMA-48 5.4). A byte outside those ends it as
/// garbage; the linux console's `ESC [ [ A`..`E` are F1-F5.
fn csi(buf: &[u8]) -> Step {
    if buf.get(2) == Some(&b'[') {
        return match buf.get(3) {
            None => Step::Unfinished,
            Some(&c @ b'A'..=b'E') => Step::Done(key(KeyCode::F(1 + c - b'A')), 4),
            Some(_) => Step::Done(None, 4),
        };
    }
    for (i, &b) in buf.iter().enumerate().skip(2) {
        match b {
            0x20..=0x3f => {}
            0x40..=0x7e => return Step::Done(csi_key(&buf[2..i], b), i + 1),
            // Not part of a sequence: drop what came before it.
            _ => return Step::Done(None, i),
        }
    }
    Step::Unfinished
}

/// The key of a whole CSI sequence: `params` then `final_byte`.
fn csi_key(params: &[u8], final_byte: u8) -> Option<KeyEvent> {
    let text = std::str::from_utf8(params).ok()?;
    // Private sequences (`ESC [ ? ...`, `ESC [ < ...`: reports, mouse) are no keys.
    if text.starts_with(['?', '<', '>', '=']) {
        return None;
    }
    let mut numbers = text.split(';').map(|p| {
        // `5:1`: a sub-parameter (the event type of the kitty protocol).
        p.split(':').next().and_then(|n| n.parse::<u16>().ok())
    });
    let first = numbers.next().flatten();
    let mods = numbers
        .next()
        .flatten()
        .map_or(KeyModifiers::NONE, modifiers);
    let code = match final_byte {
        b'~' => tilde_key(first?)?,
        b'Z' if text.is_empty() => {
            return Some(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT));
        }
        // `ESC [ 1 ; 5 A` (Ctrl+Up); plain `ESC [ A`. Not `ESC [ 2 A`.
        letter if matches!(first, None | Some(1)) => letter_key(letter)?,
        _ => return None,
    };
    Some(KeyEvent::new(code, mods))
}

/// The keys of `ESC [ n ~` (VT220 style).
fn tilde_key(n: u16) -> Option<KeyCode> {
    Some(match n {
        1 | 7 => KeyCode::Home,
        2 => KeyCode::Insert,
        3 => KeyCode::Delete,
        4 | 8 => KeyCode::End,
        5 => KeyCode::PageUp,
        6 => KeyCode::PageDown,
        11..=15 => KeyCode::F((n - 10) as u8),
        17..=21 => KeyCode::F((n - 11) as u8),
        23..=26 => KeyCode::F((n - 12) as u8),
        28 | 29 => KeyCode::F((n - 13) as u8),
        31..=34 => KeyCode::F((n - 14) as u8),
        _ => return None,
    })
}

/// xterm's modifier parameter: 1 + a bit mask (Shift 1, Alt 2, Ctrl 4,
/// Super 8, Hyper 16, Meta 32).
fn modifiers(param: u16) -> KeyModifiers {
    let mask = param.saturating_sub(1);
    let mut m = KeyModifiers::NONE;
    for (bit, flag) in [
        (1, KeyModifiers::SHIFT),
        (2, KeyModifiers::ALT),
        (4, KeyModifiers::CONTROL),
        (8, KeyModifiers::SUPER),
        (16, KeyModifiers::HYPER),
        (32, KeyModifiers::META),
    ] {
        if mask & bit != 0 {
            m |= flag;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Vec<KeyEvent> {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.decode(bytes, false, &mut out);
        assert_eq!(d.pending(), 0, "{bytes:?} left bytes behind");
        out.into_iter()
            .map(|e| match e {
                Event::Key(k) => k,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn with(code: KeyCode, key_modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, key_modifiers)
    }

    /// What tmux's send-keys (and so xterm) sends for the keys the TUI binds.
    #[test]
    fn the_keys_tmux_sends_read_as_crossterm_reads_them() {
        use KeyCode::*;
        let cases: &[(&[u8], KeyEvent)] = &[
            (b"q", k(Char('q'))),
            (b"G", with(Char('G'), KeyModifiers::SHIFT)),
            (b"\r", k(Enter)),
            (b"\t", k(Tab)),
            (b"\x7f", k(Backspace)),
            (b"\x03", with(Char('c'), KeyModifiers::CONTROL)),
            (b"\x15", with(Char('u'), KeyModifiers::CONTROL)),
            (b"\x1b", k(Esc)),
            (b"\x1b[A", k(Up)),
            (b"\x1b[B", k(Down)),
            (b"\x1b[C", k(Right)),
            (b"\x1b[D", k(Left)),
            (b"\x1bOA", k(Up)),
            (b"\x1b[1~", k(Home)),
            (b"\x1b[H", k(Home)),
            (b"\x1b[4~", k(End)),
            (b"\x1b[F", k(End)),
            (b"\x1b[5~", k(PageUp)),
            (b"\x1b[6~", k(PageDown)),
            (b"\x1b[3~", k(Delete)),
            (b"\x1b[2~", k(Insert)),
            (b"\x1bOP", k(F(1))),
            (b"\x1b[17~", k(F(6))),
            (b"\x1b[24~", k(F(12))),
            (b"\x1b[Z", with(BackTab, KeyModifiers::SHIFT)),
            (b"\x1b[1;5A", with(Up, KeyModifiers::CONTROL)),
            (b"\x1b[5;3~", with(PageUp, KeyModifiers::ALT)),
            (b"\xc3\xa9", k(Char('é'))),
            (b"\xe2\x96\xb6", k(Char('▶'))),
        ];
        for (bytes, want) in cases {
            assert_eq!(decode(bytes), [*want], "{bytes:?}");
        }
    }

    /// Esc then Enter in one packet is Alt+Enter; Esc then a key, Alt+key.
    #[test]
    fn an_esc_glued_to_a_key_is_alt_and_the_key() {
        use KeyCode::*;
        assert_eq!(decode(b"\x1b\r"), [with(Enter, KeyModifiers::ALT)]);
        assert_eq!(decode(b"\x1bs"), [with(Char('s'), KeyModifiers::ALT)]);
        assert_eq!(decode(b"\x1b\x1b[A"), [k(Esc), k(Up)], "Esc, then an arrow");
        assert_eq!(decode(b"\x1b\x1b"), [k(Esc), k(Esc)]);
        assert_eq!(decode(b"jjq"), [k(Char('j')), k(Char('j')), k(Char('q'))]);
    }

    /// A sequence cut between two reads is completed by the next; a lone
    /// Esc at the end of a full read waits, at the end of a short one it is
    /// the key.
    #[test]
    fn a_sequence_cut_between_reads_is_joined() {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.decode(b"j\x1b[", false, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(d.pending(), 2);
        d.decode(b"1;5", false, &mut out);
        d.decode(b"B", false, &mut out);
        assert_eq!(
            out[1],
            Event::Key(with(KeyCode::Down, KeyModifiers::CONTROL))
        );
        let mut out = Vec::new();
        d.decode(b"\x1b", true, &mut out);
        assert!(out.is_empty());
        d.decode(b"[B", false, &mut out);
        assert_eq!(out, [Event::Key(k(KeyCode::Down))]);
        d.decode(b"\xe2\x96", false, &mut out);
        d.decode(b"\xb6", false, &mut out);
        assert_eq!(out[1], Event::Key(k(KeyCode::Char('▶'))));
    }

    /// Reports, mouse and focus sequences and garbage are skipped whole:
    /// none turns into a key that could act.
    #[test]
    fn what_is_no_key_is_skipped_whole() {
        assert_eq!(decode(b"\x1b[?1;2c"), []);
        assert_eq!(decode(b"\x1b[<0;3;4M"), []);
        assert_eq!(decode(b"\x1b[I\x1b[O"), []);
        assert_eq!(decode(b"\x1b[12;40R"), []);
        assert_eq!(decode(b"\x1b[99~"), []);
        assert_eq!(decode(b"\xff\xfe"), []);
        // A CSI broken by a control byte: dropped up to it; the byte counts.
        assert_eq!(
            decode(b"\x1b[1\rq"),
            [k(KeyCode::Enter), k(KeyCode::Char('q'))]
        );
    }

    /// However a terminal misbehaves, what is held back stays small.
    #[test]
    fn an_endless_sequence_is_dropped_at_the_bound() {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.decode(b"\x1b[", false, &mut out);
        for _ in 0..10_000 {
            d.decode(b"1;1;1;1;", false, &mut out);
            assert!(d.pending() <= MAX_SEQUENCE + 8, "{}", d.pending());
        }
        assert!(out.is_empty());
        d.decode(b"q", false, &mut out);
        // The noise is gone; the next key reads again.
        d.decode(b"\x1b[Aq", false, &mut out);
        assert!(out.contains(&Event::Key(k(KeyCode::Up))), "{out:?}");
    }

    /// Any bytes at all: no panic, at most one event per byte, a bounded rest.
    #[test]
    fn any_bytes_decode_without_panic_and_within_bounds() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut d = Decoder::default();
        for _ in 0..2000 {
            let mut bytes = Vec::new();
            for _ in 0..(seed % 40) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Mostly the bytes sequences are made of.
                let b = (seed >> 24) as u8;
                bytes.push(match seed % 4 {
                    0 => ESC,
                    1 => b"[O;~1A5"[(b % 7) as usize],
                    _ => b,
                });
            }
            let mut out = Vec::new();
            d.decode(&bytes, seed.is_multiple_of(3), &mut out);
            assert!(out.len() <= bytes.len() + MAX_SEQUENCE);
            assert!(d.pending() <= MAX_SEQUENCE);
        }
    }
}
