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
    pub fn line(&mut self, s: &str) -> anyhow::Result<()> {
        let mut lock = self.inner.lock();
        lock.write_all(printable_lines(s).as_bytes())?;
        lock.write_all(b"\n")?;
        lock.flush()?;
        Ok(())
    }

    /// Write text (control characters escaped, newlines kept).
    pub fn text(&mut self, s: &str) -> anyhow::Result<()> {
        let mut lock = self.inner.lock();
        lock.write_all(printable_lines(s).as_bytes())?;
        lock.flush()?;
        Ok(())
    }
}

/// Was this error a write to a closed pipe?
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
