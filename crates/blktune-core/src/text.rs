//! Text from files, device names and paths, made safe to print on a
//! terminal. A recording, a rules file or a fake sysfs tree can hold any
//! bytes; printed raw, an escape sequence would drive the user's terminal
//! (move the cursor, rewrite lines, set the title) and bidi controls would
//! reorder what is shown. Every such character is shown as `\uXXXX`
//! instead: readable, unambiguous, and valid inside a JSON string, so JSON
//! printed through the same path keeps its meaning.

use std::borrow::Cow;

/// Must this character be escaped? C0 and C1 controls, DEL, and the
/// Unicode bidi controls (Trojan Source, CVE-2021-42574).
fn unsafe_char(ch: char) -> bool {
    ch.is_control()
        || matches!(
            ch,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| unsafe_char(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) && !keep(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One field (a name, a path, a note) with every control character escaped,
/// newlines and tabs included.
pub fn printable(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// Whole output text: like [`printable`], but newlines and tabs stay.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

/// Read a text file of at most `max` bytes; a bigger one is an error
/// (`InvalidData`) without being read whole, so a huge or endless file
/// (a rules file, a udev database entry in a fake tree) costs no memory.
/// For files found under a tree or root: it never blocks, so a FIFO in a
/// file's place reads as empty. A file the user names (which may be a
/// pipe) is read with [`read_capped_from`].
pub fn read_capped(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    read_capped_from(f, max)
}

/// [`read_capped`] of an open file or stream, as it reads: a pipe is read
/// until its writer ends it.
pub fn read_capped_from(source: impl std::io::Read, max: u64) -> std::io::Result<String> {
    use std::io::Read;
    let mut s = String::new();
    source.take(max + 1).read_to_string(&mut s)?;
    if s.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} KiB", max >> 10),
        ));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO where a file was expected reads as empty at once.
    #[test]
    fn a_capped_read_of_a_fifo_does_not_hang() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("60-x.rules");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let got = crate::fake::within("a read of a FIFO", move || read_capped(&fifo, 1 << 20).ok());
        assert_eq!(got, Some(String::new()));
    }

    #[test]
    fn controls_and_bidi_are_escaped_and_plain_text_is_borrowed() {
        assert!(matches!(printable("sda ü /tmp/x"), Cow::Borrowed(_)));
        assert_eq!(printable("a\x1b[2Jb"), "a\\u001b[2Jb");
        assert_eq!(printable("x\u{9b}31m\u{7f}"), "x\\u009b31m\\u007f");
        assert_eq!(printable("ab\u{202e}cd"), "ab\\u202ecd");
        assert_eq!(printable("l1\nl2\r"), "l1\\u000al2\\u000d");
        assert_eq!(printable_lines("l1\n\tl2\r\x07"), "l1\n\tl2\\u000d\\u0007");
    }

    #[test]
    fn escaped_json_still_parses_to_the_same_value() {
        let v = serde_json::json!({"name": "a\u{9b}b\u{202e}", "x": "\u{1b}"});
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        let safe = printable_lines(&text);
        assert!(!safe.contains('\u{9b}') && !safe.contains('\u{202e}'));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap_or_default();
        assert_eq!(back, v);
    }

    #[test]
    fn read_capped_refuses_a_bigger_file() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = d.path().join("f");
        std::fs::write(&p, "x".repeat(2048)).unwrap_or_default();
        assert_eq!(read_capped(&p, 4096).map(|s| s.len()).ok(), Some(2048));
        let e = read_capped(&p, 1024).err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("larger than 1 KiB"));
    }
}
