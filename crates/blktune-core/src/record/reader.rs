//! Reading a recording, streaming and forgiving: whatever can be read is
//! used, and every problem becomes one line in [`RecordReader::notes`].
//!
//! - A last line cut off mid-write (the recorder was killed) is dropped.
//! - A gzip stream without its end (the recorder was killed) is read up to
//!   where the data stops; one whose data goes wrong (a bad checksum, junk
//!   after it) up to there, and the note says it is damaged.
//! - A line in the middle that is not a valid record is skipped.
//! - A header with a newer version than [`FORMAT_VERSION`] is an error: the
//!   records might mean something else.
//! - A line longer than [`MAX_LINE`] is skipped without being stored, and a
//!   record with a number, name or list out of range ([`check`]) is skipped.
//!   A line with no end after [`MAX_SKIP`] more bytes ends the reading (a
//!   stream without newlines, `/dev/zero`, would be read forever); a first
//!   line over [`MAX_LINE`] is no recording's and is not read past.
//! - Lines skipped (blank, not a record, too long, a second header) count
//!   toward a budget ([`Skipped`]): past [`MAX_SKIPPED_LINES`] of them (or
//!   as many as the records read, if more) or [`MAX_SKIPPED_BYTES`], reading
//!   stops with one note. Blank lines are otherwise skipped silently, and a
//!   file of nothing else (10 GiB of newlines gzip to 10 MB) would be read
//!   to its end, a minute per GiB; before the header, the file is refused.
//! - Only the first [`SHOWN_NOTES`] problems are told one by one; the rest
//!   are counted in one last line.

use super::RecordError;
use super::check::{self, MAX_LINE};
use super::format::{FORMAT_VERSION, Header, Record, Sample};
use flate2::bufread::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

/// The two bytes every gzip member starts with (RFC 1952, section 2.3.1).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Problems told one by one; later ones are only counted.
pub const SHOWN_NOTES: usize = 5;

/// Lines skipped before reading stops (unless more records than that were
/// read): a recording has none (the recorder writes no blank line), a
/// damaged one a few; a hundred thousand is no recording's.
pub const MAX_SKIPPED_LINES: usize = 100_000;

/// Bytes of skipped lines before reading stops: one over-long line of a
/// GiB is still read past ([`MAX_SKIP`]), two are not.
pub const MAX_SKIPPED_BYTES: u64 = 2 << 30;

/// What the reader skipped so far, against the budget.
#[derive(Debug, Default, Clone, Copy)]
struct Skipped {
    lines: usize,
    bytes: u64,
}

impl Skipped {
    /// Count one skipped line of `bytes` bytes.
    fn add(&mut self, bytes: u64) {
        self.lines += 1;
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// Is the budget spent, with `records` read so far?
    fn spent(&self, records: usize) -> bool {
        self.lines > MAX_SKIPPED_LINES.max(records) || self.bytes > MAX_SKIPPED_BYTES
    }
}

/// What one bounded line read found.
#[derive(Debug, PartialEq, Eq)]
enum Read {
    /// Nothing left.
    Eof,
    /// A line in the buffer (with its `\n`, unless the data ended first).
    Line,
    /// A line longer than the limit (this many bytes), read past and dropped.
    TooLong(u64),
    /// A line that went on past the limit and then past `skip_max` more
    /// bytes without an end: not read further.
    Endless,
}

/// Bytes of an over-long line read past (to go on after it) before the
/// reader gives up on the rest of the data: a stream with no end of line
/// (`/dev/zero`) would otherwise be read forever.
const MAX_SKIP: u64 = 1 << 30;

/// Read one line into `buf` (cleared first), storing at most `max` bytes:
/// a longer line is consumed to its end, up to `skip_max` more bytes, but
/// not kept, so one huge line costs no memory. On an error `buf` holds what
/// was read of the line.
fn read_line(
    r: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
    skip_max: u64,
) -> io::Result<Read> {
    buf.clear();
    let limit = u64::try_from(max).unwrap_or(u64::MAX);
    if <&mut dyn BufRead as io::Read>::take(&mut *r, limit).read_until(b'\n', buf)? == 0 {
        return Ok(Read::Eof);
    }
    if buf.last() == Some(&b'\n') || buf.len() < max {
        return Ok(Read::Line);
    }
    // `max` bytes and no end of line yet: read past the rest of it.
    let rest = <&mut dyn BufRead as io::Read>::take(&mut *r, skip_max).skip_until(b'\n');
    let read = match rest {
        // The data ended right there: the line was exactly `max` long.
        Ok(0) if skip_max > 0 => return Ok(Read::Line),
        Ok(n) if n as u64 >= skip_max => Ok(Read::Endless),
        Ok(n) => Ok(Read::TooLong(max as u64 + n as u64)),
        Err(e) => Err(e),
    };
    *buf = Vec::new();
    read
}

/// Parse one line. The recorder writes `"type"` first, so a sample (nearly
/// every line) is parsed straight into its struct: the tagged enum would
/// first buffer the whole line as a tree. Anything else, or a sample that
/// does not parse that way, goes through the enum (and its error message).
fn parse(line: &[u8]) -> serde_json::Result<Record> {
    if line.starts_with(br#"{"type":"sample","#)
        && let Ok(s) = serde_json::from_slice::<Sample>(line)
    {
        return Ok(Record::Sample(s));
    }
    serde_json::from_slice::<Record>(line)
}

/// A recording being read line by line.
pub struct RecordReader {
    inner: Box<dyn BufRead + Send>,
    name: String,
    header: Header,
    line_no: usize,
    notes: Vec<String>,
    /// Problems met beyond the first [`SHOWN_NOTES`].
    more: usize,
    /// Lines skipped, against their budget.
    skipped: Skipped,
    /// Why reading stopped early on the budget: told last, whatever the count.
    stopped: Option<String>,
    /// Records returned.
    records: usize,
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
        // A named pipe is refused, not waited on (a pipe handed over is read).
        let file = crate::os::open_named_file(path).map_err(|e| RecordError::io(path, e))?;
        Self::from_file(file, &path.display().to_string())
    }

    /// Read a recording from an opened file; `name` is used in messages.
    pub fn from_file(file: File, name: &str) -> Result<Self, RecordError> {
        let mut buf = BufReader::with_capacity(64 * 1024, file);
        let gz = buf
            .fill_buf()
            .map_err(|e| RecordError::io(Path::new(name), e))?
            .starts_with(&GZIP_MAGIC);
        let inner: Box<dyn BufRead + Send> = if gz {
            Box::new(BufReader::new(MultiGzDecoder::new(buf)))
        } else {
            Box::new(buf)
        };
        Self::from_reader(inner, name)
    }

    /// Read a recording from any buffered reader; `name` is used in messages.
    pub fn from_reader(
        mut inner: Box<dyn BufRead + Send>,
        name: &str,
    ) -> Result<Self, RecordError> {
        let mut line = Vec::new();
        let not_rec = |why: String| RecordError::NotARecording {
            name: name.to_owned(),
            why,
        };
        let mut blank = Skipped::default();
        let first = loop {
            // A first line that long is no recording's: not read past.
            match read_line(inner.as_mut(), &mut line, MAX_LINE, 0) {
                Ok(Read::Eof) => break None,
                Ok(Read::TooLong(_) | Read::Endless) => {
                    return Err(not_rec(format!(
                        "its first line is longer than {} MiB",
                        MAX_LINE >> 20
                    )));
                }
                Ok(Read::Line) if line.iter().all(u8::is_ascii_whitespace) => {
                    blank.add(line.len() as u64);
                    if blank.spent(0) {
                        return Err(not_rec(format!(
                            "its first {} lines are blank",
                            blank.lines
                        )));
                    }
                    continue;
                }
                Ok(Read::Line) => break Some(line.clone()),
                // A gzip stream cut before the end of the first line.
                Err(e) if is_cut_off(&e) && !line.is_empty() => break Some(line.clone()),
                // Cut or damaged before anything could be read: not "empty".
                Err(e) if is_cut_off(&e) => {
                    return Err(not_rec(format!(
                        "its data ends or is damaged before its first line ({e})"
                    )));
                }
                Err(e) => return Err(RecordError::io(Path::new(name), e)),
            }
        };
        let first = first.ok_or_else(|| not_rec("it is empty".into()))?;
        let value: serde_json::Value = serde_json::from_slice(&first)
            .map_err(|e| not_rec(format!("its first line is not JSON ({e})")))?;
        if value.get("type").and_then(|t| t.as_str()) != Some("header") {
            return Err(not_rec("its first line is not a header record".into()));
        }
        let version = match value.get("version") {
            None => return Err(not_rec("its header has no version".into())),
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => n,
                // -1, 0, "1", 2^64: not a version this format ever had.
                _ => {
                    let shown: String = v.to_string().chars().take(32).collect();
                    return Err(not_rec(format!(
                        "its header's version {shown} is not a format version (1 and up)"
                    )));
                }
            },
        };
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
        check::header(&header).map_err(|e| not_rec(format!("its header is invalid ({e})")))?;
        Ok(Self {
            inner,
            name: name.to_owned(),
            header,
            line_no: 1,
            notes: Vec::new(),
            more: 0,
            skipped: Skipped::default(),
            stopped: None,
            records: 0,
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

    /// One line per problem met so far (the first [`SHOWN_NOTES`]), for the user.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The notes, taken out, with one more line counting those not shown.
    pub fn take_notes(&mut self) -> Vec<String> {
        let mut v = std::mem::take(&mut self.notes);
        if self.more > 0 {
            v.push(format!(
                "{}: {} more problem(s) like these; lines skipped",
                self.name, self.more
            ));
            self.more = 0;
        }
        v.extend(self.stopped.take());
        v
    }

    /// Remember a problem: told when among the first few, else counted.
    fn note(&mut self, text: impl FnOnce() -> String) {
        if self.notes.len() < SHOWN_NOTES {
            self.notes.push(text());
        } else {
            self.more += 1;
        }
    }

    fn cut_off(&mut self, line: &[u8]) -> Option<Record> {
        self.done = true;
        // A line cut exactly before its newline is still whole.
        if let Ok(r) = parse(line)
            && !matches!(r, Record::Header(_))
            && check::record(&r).is_ok()
        {
            return Some(r);
        }
        let (name, n) = (&self.name, self.line_no);
        let text = format!(
            "{name}: line {n} is cut off (the recorder stopped mid-write); using the lines before it"
        );
        self.note(|| text);
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

impl RecordReader {
    /// Count a skipped line of `bytes` bytes; once the budget is spent,
    /// stop reading with a note (always shown: it says why the rest is missing).
    fn skip(&mut self, bytes: u64) {
        self.skipped.add(bytes);
        if self.skipped.spent(self.records) {
            self.done = true;
            let (name, n, lines) = (&self.name, self.line_no, self.skipped.lines);
            let why = if self.skipped.bytes > MAX_SKIPPED_BYTES {
                format!(
                    "over {} GiB of lines were blank, too long or not records",
                    MAX_SKIPPED_BYTES >> 30
                )
            } else {
                format!(
                    "{lines} lines were blank, too long or not records (at most \
                     {MAX_SKIPPED_LINES} are skipped, or as many as the records read)"
                )
            };
            self.stopped = Some(format!("{name}: read no further than line {n}: {why}"));
        }
    }

    /// The next readable record; bad lines are skipped and noted.
    fn next_record(&mut self) -> Option<Record> {
        let mut line = Vec::new();
        while !self.done {
            let read = read_line(self.inner.as_mut(), &mut line, MAX_LINE, MAX_SKIP);
            match read {
                Ok(Read::Eof) => self.done = true,
                Ok(Read::Endless) => {
                    self.line_no += 1;
                    self.done = true;
                    let (name, n) = (&self.name, self.line_no);
                    let text = format!(
                        "{name}: line {n}: no end of line in its first {} GiB: read no further",
                        (MAX_LINE as u64 + MAX_SKIP) >> 30
                    );
                    self.note(|| text);
                }
                Ok(Read::TooLong(bytes)) => {
                    self.line_no += 1;
                    let (name, n) = (&self.name, self.line_no);
                    let text = format!(
                        "{name}: line {n}: skipped, longer than {} MiB",
                        MAX_LINE >> 20
                    );
                    self.note(|| text);
                    self.skip(bytes);
                }
                Ok(Read::Line) => {
                    self.line_no += 1;
                    if line.iter().all(u8::is_ascii_whitespace) {
                        self.skip(line.len() as u64);
                        continue;
                    }
                    if line.last() != Some(&b'\n') {
                        return self.cut_off(&line);
                    }
                    let (name, n) = (self.name.clone(), self.line_no);
                    match parse(&line) {
                        Ok(Record::Header(_)) => {
                            self.note(|| format!("{name}: line {n}: skipped a second header"));
                        }
                        Ok(r) => match check::record(&r) {
                            Ok(()) => return Some(r),
                            Err(e) => self.note(|| format!("{name}: line {n}: skipped, {e}")),
                        },
                        Err(e) => {
                            self.note(|| {
                                format!("{name}: line {n}: skipped, not a valid record ({e})")
                            });
                        }
                    }
                    self.skip(line.len() as u64);
                }
                Err(e) if is_cut_off(&e) => {
                    let (name, n) = (&self.name, self.line_no);
                    // A stream that stops is a killed recorder; one whose
                    // data goes wrong (a bad checksum, junk after it) is not.
                    let text = if e.kind() == io::ErrorKind::UnexpectedEof {
                        format!(
                            "{name}: the compressed data ends early (the recorder was killed); read up to line {n}"
                        )
                    } else {
                        format!(
                            "{name}: the compressed data is damaged after line {n} ({e}); read up to there"
                        )
                    };
                    self.note(|| text);
                    if line.is_empty() {
                        self.done = true;
                        return None;
                    }
                    self.line_no += 1;
                    return self.cut_off(&line);
                }
                Err(e) => {
                    self.done = true;
                    let (name, n) = (&self.name, self.line_no);
                    let text =
                        format!("{name}: read error after line {n} ({e}); using what was read");
                    self.note(|| text);
                }
            }
        }
        None
    }
}

impl Iterator for RecordReader {
    type Item = Record;

    /// The next readable record; bad lines are skipped and noted.
    fn next(&mut self) -> Option<Record> {
        let r = self.next_record();
        self.records += usize::from(r.is_some());
        r
    }
}
