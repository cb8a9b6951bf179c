//! Reading a recording, streaming and forgiving: whatever can be read is
//! used, and every problem becomes one line in [`RecordReader::notes`].
//!
//! - A last line cut off mid-write (the recorder was killed) is dropped.
//! - A gzip stream without its end (the recorder was killed) is read up to
//!   where the data stops.
//! - A line in the middle that is not a valid record is skipped.
//! - A header with a newer version than [`FORMAT_VERSION`] is an error: the
//!   records might mean something else.

use super::RecordError;
use super::format::{FORMAT_VERSION, Header, Record};
use flate2::bufread::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

/// The two bytes every gzip member starts with (RFC 1952, section 2.3.1).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A recording being read line by line.
pub struct RecordReader {
    inner: Box<dyn BufRead>,
    name: String,
    header: Header,
    line_no: usize,
    notes: Vec<String>,
    done: bool,
}

impl std::fmt::Debug for RecordReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordReader")
            .field("name", &self.name)
            .field("line_no", &self.line_no)
            .finish_non_exhaustive()
    }
}

impl RecordReader {
    /// Open a recording (plain or gzip, told apart by content) and read its header.
    pub fn open(path: &Path) -> Result<Self, RecordError> {
        let file = File::open(path).map_err(|e| RecordError::io(path, e))?;
        let mut buf = BufReader::with_capacity(64 * 1024, file);
        let gz = buf
            .fill_buf()
            .map_err(|e| RecordError::io(path, e))?
            .starts_with(&GZIP_MAGIC);
        let inner: Box<dyn BufRead> = if gz {
            Box::new(BufReader::new(MultiGzDecoder::new(buf)))
        } else {
            Box::new(buf)
        };
        Self::from_reader(inner, &path.display().to_string())
    }

    /// Read a recording from any buffered reader; `name` is used in messages.
    pub fn from_reader(mut inner: Box<dyn BufRead>, name: &str) -> Result<Self, RecordError> {
        let mut line = Vec::new();
        let first = loop {
            line.clear();
            match inner.read_until(b'\n', &mut line) {
                Ok(0) => break None,
                Ok(_) if line.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(_) => break Some(line.clone()),
                // A gzip stream cut before the end of the first line.
                Err(e) if is_cut_off(&e) => break (!line.is_empty()).then(|| line.clone()),
                Err(e) => return Err(RecordError::io(Path::new(name), e)),
            }
        };
        let not_rec = |why: String| RecordError::NotARecording {
            name: name.to_owned(),
            why,
        };
        let first = first.ok_or_else(|| not_rec("it is empty".into()))?;
        let value: serde_json::Value = serde_json::from_slice(&first)
            .map_err(|e| not_rec(format!("its first line is not JSON ({e})")))?;
        if value.get("type").and_then(|t| t.as_str()) != Some("header") {
            return Err(not_rec("its first line is not a header record".into()));
        }
        let version = value
            .get("version")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| not_rec("its header has no version".into()))?;
        if version > u64::from(FORMAT_VERSION) {
            return Err(RecordError::Version {
                name: name.to_owned(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let header = match serde_json::from_value::<Record>(value) {
            Ok(Record::Header(h)) => h,
            Ok(_) => return Err(not_rec("its first line is not a header record".into())),
            Err(e) => return Err(not_rec(format!("its header is invalid ({e})"))),
        };
        Ok(Self {
            inner,
            name: name.to_owned(),
            header,
            line_no: 1,
            notes: Vec::new(),
            done: false,
        })
    }

    /// The name used in messages (the path).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header (first line).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// One line per problem met so far, for the user.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The notes, taken out.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn cut_off(&mut self, line: &[u8]) -> Option<Record> {
        self.done = true;
        // A line cut exactly before its newline is still whole.
        if let Ok(r) = serde_json::from_slice::<Record>(line) {
            return Some(r);
        }
        self.notes.push(format!(
            "{}: line {} is cut off (the recorder stopped mid-write); using the lines before it",
            self.name, self.line_no
        ));
        None
    }
}

/// Is this the error of a compressed stream that simply stops?
fn is_cut_off(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof | io::ErrorKind::InvalidInput
    )
}

impl Iterator for RecordReader {
    type Item = Record;

    /// The next readable record; bad lines are skipped and noted.
    fn next(&mut self) -> Option<Record> {
        let mut line = Vec::new();
        while !self.done {
            line.clear();
            let read = self.inner.read_until(b'\n', &mut line);
            match read {
                Ok(0) => self.done = true,
                Ok(_) => {
                    self.line_no += 1;
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    if line.last() != Some(&b'\n') {
                        return self.cut_off(&line);
                    }
                    match serde_json::from_slice::<Record>(&line) {
                        Ok(Record::Header(_)) => self.notes.push(format!(
                            "{}: line {}: skipped a second header",
                            self.name, self.line_no
                        )),
                        Ok(r) => return Some(r),
                        Err(e) => self.notes.push(format!(
                            "{}: line {}: skipped, not a valid record ({e})",
                            self.name, self.line_no
                        )),
                    }
                }
                Err(e) if is_cut_off(&e) => {
                    self.notes.push(format!(
                        "{}: the compressed data ends early (the recorder was killed); read up to line {}",
                        self.name, self.line_no
                    ));
                    if line.is_empty() {
                        self.done = true;
                        return None;
                    }
                    self.line_no += 1;
                    return self.cut_off(&line);
                }
                Err(e) => {
                    self.done = true;
                    self.notes.push(format!(
                        "{}: read error after line {} ({e}); using what was read",
                        self.name, self.line_no
                    ));
                }
            }
        }
        None
    }
}
