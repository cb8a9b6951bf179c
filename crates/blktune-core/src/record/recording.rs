//! A recording, scanned once: what a viewer needs to know before playing it
//! (header, length, samples, the end record, the first changes, notes),
//! in bounded memory however long the file is. The records themselves stay
//! in the file: [`Player`](super::Player) and [`Recording::records`] read it
//! again, streaming.

use super::RecordError;
use super::check::MAX_DEVICES;
use super::format::{ChangeRecord, DeviceFacts, EndRecord, Header, Record};
use super::reader::RecordReader;
use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Most changes kept (and marked on replay, and summarised); later ones
/// are counted in a note.
pub const MAX_CHANGES: usize = 1000;

/// What a recording holds, from one pass over the file.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The file name, for messages.
    pub name: String,
    pub header: Header,
    /// One line per problem met while reading (cut-off end, skipped lines).
    pub notes: Vec<String>,
    path: PathBuf,
    /// Device and inode of a regular file (it can be read again); `None`
    /// for a pipe or a device, which can be read only once.
    identity: Option<(u64, u64)>,
    samples: usize,
    first_t: Option<f64>,
    last_t: Option<f64>,
    end: Option<EndRecord>,
    /// The first [`MAX_CHANGES`] changes, in file order.
    changes: Vec<ChangeRecord>,
    /// Every device of the header and of later `devices` records, once
    /// each, at most [`MAX_DEVICES`].
    devices: Vec<DeviceFacts>,
    /// Most disks (partitions included) in one sample.
    max_disks: usize,
}

/// Builds a [`Recording`] record by record: shared by [`Recording::open`]
/// and the one-pass summary.
#[derive(Debug)]
pub(super) struct Scan {
    rec: Recording,
    /// Samples left out because their time did not move forward.
    backwards: usize,
    /// Changes beyond [`MAX_CHANGES`].
    changes_more: usize,
    /// Devices beyond [`MAX_DEVICES`].
    devices_more: usize,
}

impl Scan {
    /// A scan of the file at `path`, whose header `reader` has read.
    pub(super) fn new(reader: &RecordReader, path: &Path, identity: Option<(u64, u64)>) -> Self {
        let header = reader.header().clone();
        let devices = header.devices.clone();
        Self {
            rec: Recording {
                name: reader.name().to_owned(),
                header,
                notes: Vec::new(),
                path: path.to_owned(),
                identity,
                samples: 0,
                first_t: None,
                last_t: None,
                end: None,
                changes: Vec::new(),
                devices,
                max_disks: 0,
            },
            backwards: 0,
            changes_more: 0,
            devices_more: 0,
        }
    }

    /// Take one record; `false` for a sample that replay leaves out (its
    /// time did not move forward: rates need time to pass).
    pub(super) fn take(&mut self, r: &Record) -> bool {
        let rec = &mut self.rec;
        match r {
            Record::Sample(s) => {
                if rec.last_t.is_some_and(|l| s.t <= l) || !s.t.is_finite() {
                    self.backwards += 1;
                    return false;
                }
                rec.first_t.get_or_insert(s.t);
                rec.last_t = Some(s.t);
                rec.samples += 1;
                rec.max_disks = rec.max_disks.max(s.disks.len());
            }
            Record::Change(c) => {
                if rec.changes.len() < MAX_CHANGES {
                    rec.changes.push(c.clone());
                } else {
                    self.changes_more += 1;
                }
            }
            Record::Devices(d) => {
                for f in &d.devices {
                    if rec.devices.iter().any(|k| k.name == f.name) {
                        continue;
                    }
                    if rec.devices.len() < MAX_DEVICES {
                        rec.devices.push(f.clone());
                    } else {
                        self.devices_more += 1;
                    }
                }
            }
            Record::End(e) => rec.end = Some(e.clone()),
            Record::Header(_) | Record::Settings(_) => {}
        }
        true
    }

    /// The recording, with the reader's notes and the scan's own.
    pub(super) fn finish(self, mut reader_notes: Vec<String>) -> Recording {
        let mut rec = self.rec;
        let name = rec.name.clone();
        if self.backwards > 0 {
            reader_notes.push(format!(
                "{name}: skipped {} sample(s) whose time did not move forward",
                self.backwards
            ));
        }
        if self.changes_more > 0 {
            reader_notes.push(format!(
                "{name}: {} change(s) after the first {MAX_CHANGES} are not marked or summarised",
                self.changes_more
            ));
        }
        if self.devices_more > 0 {
            reader_notes.push(format!(
                "{name}: {} device(s) after the first {MAX_DEVICES} are not listed",
                self.devices_more
            ));
        }
        if rec.end.is_none() {
            reader_notes.push(format!(
                "{name}: no end record (the recorder was killed or is still running); it stops at {:.1}s",
                rec.duration()
            ));
        }
        rec.notes = reader_notes;
        rec
    }
}

/// Open `path` for reading; with `again`, only the regular file `identity`
/// names (never blocking on a FIFO put in its place).
fn open_file(path: &Path, again: Option<(u64, u64)>) -> Result<File, RecordError> {
    if super::writer::is_stdio(path) {
        if again.is_some() {
            return Err(RecordError::Refused(
                "standard input cannot be read twice: save it to a file first (--summary reads it once)".into(),
            ));
        }
        use std::os::fd::AsFd;
        let fd = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| RecordError::io(path, e))?;
        return Ok(File::from(fd));
    }
    let file = if again.is_some() {
        // A FIFO put in the file's place must not block the reader; on a
        // regular file O_NONBLOCK changes nothing.
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
    } else {
        // A named pipe is refused, not waited on (a pipe handed over is read).
        crate::os::open_named_file(path)
    }
    .map_err(|e| RecordError::io(path, e))?;
    if let Some(id) = again {
        let m = file.metadata().map_err(|e| RecordError::io(path, e))?;
        if !m.is_file() || (m.dev(), m.ino()) != id {
            return Err(RecordError::Refused(format!(
                "'{}' was replaced since it was opened; open it again",
                path.display()
            )));
        }
    }
    Ok(file)
}

impl Recording {
    /// Read a recording file (plain or gzip) once, keeping what a viewer
    /// needs. A pipe or a device works too, but then [`Recording::reopen`]
    /// (and so playing it) is refused: use [`super::summarize_file`] to
    /// summarise it in the same pass.
    pub fn open(path: &Path) -> Result<Self, RecordError> {
        let (mut reader, mut scan) = Self::start(path)?;
        for r in reader.by_ref() {
            scan.take(&r);
        }
        Ok(scan.finish(reader.take_notes()))
    }

    /// Open `path` and read its header: the reader and an empty scan.
    pub(super) fn start(path: &Path) -> Result<(RecordReader, Scan), RecordError> {
        let file = open_file(path, None)?;
        let m = file.metadata().map_err(|e| RecordError::io(path, e))?;
        // Standard input is read once, even when it is a regular file.
        let identity = (m.is_file() && !super::writer::is_stdio(path)).then(|| (m.dev(), m.ino()));
        let reader = RecordReader::from_file(file, &path.display().to_string())?;
        let scan = Scan::new(&reader, path, identity);
        Ok((reader, scan))
    }

    /// Can the file be read again (a regular file, not a pipe)?
    pub fn rereadable(&self) -> bool {
        self.identity.is_some()
    }

    /// Read the file again from its start: the same regular file (refused
    /// when it was a pipe, or has been replaced) with the same header.
    pub fn reopen(&self) -> Result<RecordReader, RecordError> {
        let Some(id) = self.identity else {
            return Err(RecordError::Refused(format!(
                "'{}' is not a regular file and can be read only once: save it to a file first",
                self.name
            )));
        };
        let reader = RecordReader::from_file(open_file(&self.path, Some(id))?, &self.name)?;
        if reader.header() != &self.header {
            return Err(RecordError::Refused(format!(
                "'{}' was rewritten since it was opened; open it again",
                self.name
            )));
        }
        Ok(reader)
    }

    /// Every record after the header, read again from the file (records
    /// the reader skips are left out, as on the first read).
    pub fn records(&self) -> Result<RecordReader, RecordError> {
        self.reopen()
    }

    /// Time of the last sample (seconds since the start).
    pub fn duration(&self) -> f64 {
        self.last_t.unwrap_or(0.0)
    }

    /// Time of the first sample.
    pub fn first_t(&self) -> f64 {
        self.first_t.unwrap_or(0.0)
    }

    /// Number of samples replay uses.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// Most disks (partitions included) in one sample.
    pub fn max_disks(&self) -> usize {
        self.max_disks
    }

    /// The changes (the first [`MAX_CHANGES`]), in file order.
    pub fn changes(&self) -> impl Iterator<Item = &ChangeRecord> {
        self.changes.iter()
    }

    /// Every whole device seen: the header's, then those plugged in later.
    pub fn devices(&self) -> &[DeviceFacts] {
        &self.devices
    }

    /// The `end` record, when the recorder stopped cleanly.
    pub fn end(&self) -> Option<&EndRecord> {
        self.end.as_ref()
    }

    /// Was this recorded on a host with another name than `local`?
    pub fn is_from_other_host(&self, local: &str) -> bool {
        !self.header.host.hostname.is_empty() && self.header.host.hostname != local
    }
}
