//! Standard output that ends quietly when the reader goes away
//! (`blktune list --json | head -1`), and never passes a control character
//! from a file, a device name or a path to the terminal: everything written
//! goes through [`printable_lines`] (JSON keeps its meaning: the escapes are
//! JSON's own `\uXXXX`).

use blktune_core::text::printable_lines;
use std::io::{self, Write};

/// A writer for command output; a closed pipe becomes a quiet exit.
#[derive(Debug)]
pub struct Out {
    inner: io::Stdout,
}

impl Out {
    /// Standard output.
    pub fn stdout() -> Self {
        Self {
            inner: io::stdout(),
        }
    }

    /// Write one line and flush (for streaming output).
    pub fn line(&mut self, text: &str) -> anyhow::Result<()> {
        let mut lock = self.inner.lock();
        lock.write_all(escaped(text).as_bytes())?;
        lock.write_all(b"\n")?;
        lock.flush()?;
        Ok(())
    }

    /// Write text (control characters escaped, newlines kept) and flush:
    /// many lines in one write (standard output's line buffer passes
    /// everything up to the last newline to the kernel at once).
    pub fn text(&mut self, input: &str) -> anyhow::Result<()> {
        let mut lock = self.inner.lock();
        lock.write_all(escaped(input).as_bytes())?;
        lock.flush()?;
        Ok(())
    }
}

/// [`printable_lines`], with a fast pass for the usual output: printable
/// ASCII, newlines and tabs need no escape (a thousand-line interval of
/// `watch` is checked a byte at a time, not a character).
fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    // Whole chunks without an early exit: the compiler checks many bytes
    // at once (a thousand records of `watch --json` are 700 KiB a tick).
    let plain = |b: u8| (b' '..=b'~').contains(&b) | (b == b'\n') | (b == b'\t');
    if (text.as_bytes().chunks(64)).all(|c| c.iter().fold(true, |ok, &b| ok & plain(b))) {
        return std::borrow::Cow::Borrowed(text);
    }
    printable_lines(text)
}

/// Was this error a write to a closed pipe?
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::escaped;
    use std::borrow::Cow;

    #[test]
    fn plain_output_is_borrowed_and_controls_are_still_escaped() {
        assert!(matches!(escaped("sda  1.00\n\tx\n"), Cow::Borrowed(_)));
        assert_eq!(escaped("a\x1b[2Jb\n"), "a\\u001b[2Jb\n");
        assert_eq!(escaped("x\u{9b}y\n"), "x\\u009by\n");
        // Non-ASCII goes the slow way and stays as it was when printable.
        assert_eq!(escaped("ü\n"), "ü\n");
    }
}
