//! Writing a recording: one JSON object per line, buffered, flushed at least
//! every [`FLUSH_EVERY`] so a killed process loses only the last seconds.
//!
//! A name ending in `.gz` is gzip-compressed. Each flush is a deflate sync
//! flush (`Z_SYNC_FLUSH`, which `flate2::write::GzEncoder::flush` performs), so
//! everything before it can be decompressed even when the gzip trailer never
//! gets written.

use super::RecordError;
use super::format::Record;
use crate::atomic_file;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Longest time a written record may stay in memory.
pub const FLUSH_EVERY: Duration = Duration::from_secs(2);

/// Where the bytes go.
#[derive(Debug)]
enum Sink {
    Plain(BufWriter<File>),
    Gz(GzEncoder<BufWriter<File>>),
}

impl Sink {
    fn out(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Gz(w) => w,
        }
    }
}

pub use crate::atomic_file::is_stdio;

/// Does this path ask for gzip?
pub fn is_gzip_name(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

/// A recording file being written.
#[derive(Debug)]
pub struct RecordWriter {
    path: PathBuf,
    sink: Sink,
    last_flush: Instant,
}

impl RecordWriter {
    /// Create `path` through [`crate::atomic_file::create`]: never through a
    /// symlink; an existing name is an error unless `force`, and then only a
    /// regular file of this user or root is replaced (by a new file renamed
    /// over it, never truncated in place). Without `force` the check and the
    /// creation are one atomic step (`O_EXCL`), so two recorders cannot
    /// clobber each other.
    ///
    /// `-` is standard output (plain NDJSON; `force` does not apply).
    pub fn create(path: &Path, force: bool) -> Result<Self, RecordError> {
        let file = atomic_file::create(path, 0o644, force)?;
        let buf = BufWriter::with_capacity(64 * 1024, file);
        let sink = if is_gzip_name(path) {
            Sink::Gz(GzEncoder::new(buf, Compression::default()))
        } else {
            Sink::Plain(buf)
        };
        Ok(Self {
            path: path.to_owned(),
            sink,
            last_flush: Instant::now(),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one record; flushes when the last flush is [`FLUSH_EVERY`] old.
    pub fn write(&mut self, rec: &Record) -> Result<(), RecordError> {
        let mut line =
            serde_json::to_vec(rec).map_err(|e| RecordError::io(&self.path, e.into()))?;
        line.push(b'\n');
        self.sink
            .out()
            .write_all(&line)
            .map_err(|e| RecordError::io(&self.path, e))?;
        if self.last_flush.elapsed() >= FLUSH_EVERY {
            self.flush()?;
        }
        Ok(())
    }

    /// Push everything written so far to the file (a sync flush for gzip).
    pub fn flush(&mut self) -> Result<(), RecordError> {
        self.last_flush = Instant::now();
        self.sink
            .out()
            .flush()
            .map_err(|e| RecordError::io(&self.path, e))
    }

    /// Finish the file: write the gzip trailer, flush, and close.
    pub fn finish(self) -> Result<(), RecordError> {
        let path = self.path;
        let mut buf = match self.sink {
            Sink::Plain(w) => w,
            Sink::Gz(gz) => gz.finish().map_err(|e| RecordError::io(&path, e))?,
        };
        buf.flush().map_err(|e| RecordError::io(&path, e))
    }
}
