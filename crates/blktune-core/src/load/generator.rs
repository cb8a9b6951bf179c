//! The worker threads of a load: each opens the target with O_DIRECT (so the
//! page cache neither hides nor adds I/O), issues one I/O at a time and times
//! it; the number of workers is the queue depth the device sees.

use super::{Histogram, LoadError, Mix, Target};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a load runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    pub mix: Mix,
    /// In-flight random I/Os: the number of random-I/O workers.
    pub queue_depth: usize,
    /// Sequential 1 MiB writers of the `mixed` mix.
    pub writers: usize,
    /// Stop by itself after this long (`None`: until stopped).
    pub duration: Option<Duration>,
    /// Size of random I/Os (rounded up to the device's alignment).
    pub block: u64,
    /// Size of sequential writes.
    pub seq_block: u64,
}

impl LoadOptions {
    /// Defaults for a mix: queue depth 4, one sequential writer, 4 KiB / 1 MiB.
    pub fn new(mix: Mix) -> Self {
        Self {
            mix,
            queue_depth: 4,
            writers: 1,
            duration: None,
            block: 4096,
            seq_block: 1 << 20,
        }
    }
}

/// Counts and latencies of one direction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpStats {
    pub ios: u64,
    pub bytes: u64,
    pub errors: u64,
    /// Latency of every completed I/O, in nanoseconds.
    pub hist: Histogram,
}

impl OpStats {
    fn merge(&mut self, op_stats: &OpStats) {
        self.ios += op_stats.ios;
        self.bytes += op_stats.bytes;
        self.errors += op_stats.errors;
        self.hist.merge(&op_stats.hist);
    }
}

/// What a load did since it started or was last reset.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadStats {
    pub mix: Mix,
    pub elapsed: Duration,
    pub reads: OpStats,
    pub writes: OpStats,
    /// The first I/O error a worker hit (that worker then stopped).
    pub first_error: Option<String>,
}

impl LoadStats {
    fn per_sec(&self, count: f64) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 { count / s } else { 0.0 }
    }

    /// Completed reads per second.
    pub fn read_iops(&self) -> f64 {
        self.per_sec(self.reads.ios as f64)
    }

    /// Completed writes per second.
    pub fn write_iops(&self) -> f64 {
        self.per_sec(self.writes.ios as f64)
    }

    /// Read plus write throughput in MB/s (10^6 bytes, like fio's MB/s).
    pub fn mb_s(&self) -> f64 {
        self.per_sec((self.reads.bytes + self.writes.bytes) as f64) / 1e6
    }
}

#[derive(Debug, Default)]
struct WorkerStats {
    reads: OpStats,
    writes: OpStats,
    first_error: Option<String>,
}

#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    cancel: Option<Arc<AtomicBool>>,
    deadline: Option<Instant>,
    workers: Vec<Mutex<WorkerStats>>,
    /// Start of the current measurement window, and its end once stopped.
    window: Mutex<(Instant, Option<Instant>)>,
}

impl Shared {
    fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// A running load; stops (and joins its threads) when dropped.
#[derive(Debug)]
pub struct Load {
    mix: Mix,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// Writes stay clear of the first MiB, so a scratch device never grows
/// something that looks like a partition table or superblock, and
/// [`Target::writable`] still accepts it after a load.
const WRITE_FLOOR: u64 = 1 << 20;

/// What one worker does.
#[derive(Debug, Clone, Copy)]
enum Role {
    RandomRead,
    RandomReadWrite,
    SequentialWrite { start: u64 },
}

impl Load {
    /// Start the workers on `target`. Refuses a writing mix unless the target
    /// allows writes ([`Target::writable`]). Every worker stops when `cancel`
    /// (e.g. the Ctrl-C flag) becomes true, at `duration`, or on [`Load::stop`].
    pub fn start(
        target: &Target,
        opts: &LoadOptions,
        cancel: Option<Arc<AtomicBool>>,
    ) -> Result<Load, LoadError> {
        if opts.mix.writes() && !target.writes_allowed() {
            return Err(LoadError::WriteRefused {
                dev: target.name().into(),
                why: format!(
                    "the '{}' load writes, and blktune writes only to scratch devices it created itself (use --scratch SIZE)",
                    opts.mix
                ),
            });
        }
        let qd = opts.queue_depth.max(1);
        let mut roles = Vec::new();
        match opts.mix {
            Mix::RandRead => roles.extend(std::iter::repeat_n(Role::RandomRead, qd)),
            Mix::RandRw => roles.extend(std::iter::repeat_n(Role::RandomReadWrite, qd)),
            Mix::Mixed => {
                roles.extend(std::iter::repeat_n(Role::RandomRead, qd));
                let w = opts.writers.max(1) as u64;
                let seq = opts.seq_block.max(target.align());
                for i in 0..w {
                    let start = ((target.size() / w * i) / seq * seq).max(WRITE_FLOOR);
                    roles.push(Role::SequentialWrite { start });
                }
            }
        }
        // Open everything before starting anything, so a failure leaves nothing running.
        let mut files = Vec::with_capacity(roles.len());
        for r in &roles {
            let write = !matches!(r, Role::RandomRead);
            files.push(open_direct(target, write)?);
        }
        // Checked after the opens: while they are held, a detach of a loop
        // device only sets autoclear and waits for the last close (seen on
        // 6.18: `losetup -d` returns 0, a re-attach fails with EBUSY, and
        // I/O still reaches the old file), so the files opened are the device
        // the target was made for, to the end of the load.
        target.check_same()?;
        let now = Instant::now();
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            cancel,
            deadline: opts.duration.map(|d| now + d),
            workers: roles
                .iter()
                .map(|_| Mutex::new(WorkerStats::default()))
                .collect(),
            window: Mutex::new((now, None)),
        });
        let mut load = Load {
            mix: opts.mix,
            shared: Arc::clone(&shared),
            threads: Vec::new(),
        };
        for (i, (role, file)) in roles.into_iter().zip(files).enumerate() {
            let w = Worker {
                id: i,
                role,
                file,
                size: target.size(),
                block: opts.block.max(target.align()).div_ceil(target.align()) * target.align(),
                seq_block: opts.seq_block.max(target.align()),
                align: target.align() as usize,
                shared: Arc::clone(&shared),
            };
            let h = std::thread::Builder::new()
                .name(format!("blktune-load-{i}"))
                .spawn(move || w.run())
                .map_err(LoadError::Thread)?;
            // On error `load` drops here, which stops and joins the started ones.
            load.threads.push(h);
        }
        Ok(load)
    }

    /// The figures since the start or the last [`Load::reset`].
    pub fn stats(&self) -> LoadStats {
        let mut s = LoadStats {
            mix: self.mix,
            elapsed: Duration::ZERO,
            reads: OpStats::default(),
            writes: OpStats::default(),
            first_error: None,
        };
        for w in &self.shared.workers {
            if let Ok(w) = w.lock() {
                s.reads.merge(&w.reads);
                s.writes.merge(&w.writes);
                if s.first_error.is_none() {
                    s.first_error.clone_from(&w.first_error);
                }
            }
        }
        if let Ok(win) = self.shared.window.lock() {
            s.elapsed = win.1.unwrap_or_else(Instant::now).duration_since(win.0);
        }
        s
    }

    /// Start a new measurement window (after a settle period).
    pub fn reset(&self) {
        // Clear the window first, so I/Os counted after the clear fit in it.
        if let Ok(mut win) = self.shared.window.lock() {
            *win = (Instant::now(), None);
        }
        for w in &self.shared.workers {
            if let Ok(mut w) = w.lock() {
                w.reads = OpStats::default();
                w.writes = OpStats::default();
            }
        }
    }

    /// Have all workers stopped (duration over, cancelled, or every one failed)?
    pub fn is_finished(&self) -> bool {
        self.threads.iter().all(|t| t.is_finished())
    }

    /// Stop the workers, wait for their last I/O, and return the figures.
    pub fn stop(mut self) -> LoadStats {
        self.halt();
        self.stats()
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Ok(mut win) = self.shared.window.lock()
            && win.1.is_none()
        {
            win.1 = Some(Instant::now());
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Open the target with O_DIRECT; for writing only when the target allows it.
fn open_direct(target: &Target, write: bool) -> Result<File, LoadError> {
    let write = write && target.writes_allowed();
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(target.path())
        .map_err(|source| LoadError::Open {
            path: target.path().display().to_string(),
            mode: if write { "writing" } else { "reading" },
            source,
        })
}

/// A buffer whose start is aligned for O_DIRECT, without unsafe code: an
/// over-allocated Vec and the aligned window inside it.
#[derive(Debug)]
pub(crate) struct AlignedBuf {
    raw: Vec<u8>,
    off: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` bytes aligned to `align` (a power of two).
    pub(crate) fn new(len: usize, align: usize) -> Self {
        let raw = vec![0u8; len + align];
        let addr = raw.as_ptr() as usize;
        let off = (align - addr % align) % align;
        Self { raw, off, len }
    }

    /// The aligned bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.raw[self.off..self.off + self.len]
    }

    /// The aligned bytes, writable.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.off..self.off + self.len]
    }
}

/// xorshift64*: fast, good enough for picking offsets, no dependency.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded from the clock and `salt`.
    pub(crate) fn seeded(salt: u64) -> Self {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self((t ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    /// The next number.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A random multiple of `block` below `size` (at least 0).
    pub(crate) fn offset(&mut self, size: u64, block: u64) -> u64 {
        let blocks = (size / block).max(1);
        (self.next_u64() % blocks) * block
    }

    /// A random multiple of `block` in `[floor, size)` (`floor` a multiple of `block`).
    pub(crate) fn offset_from(&mut self, floor: u64, size: u64, block: u64) -> u64 {
        floor + self.offset(size.saturating_sub(floor), block)
    }
}

struct Worker {
    id: usize,
    role: Role,
    file: File,
    size: u64,
    block: u64,
    seq_block: u64,
    align: usize,
    shared: Arc<Shared>,
}

impl Worker {
    fn run(self) {
        let mut rng = Rng::seeded(self.id as u64 + 1);
        let len = match self.role {
            Role::SequentialWrite { .. } => self.seq_block,
            _ => self.block,
        } as usize;
        let mut buf = AlignedBuf::new(len, self.align);
        // Non-zero data, so nothing below can shortcut zero pages.
        for chunk in buf.bytes_mut().chunks_mut(8) {
            let r = rng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
        let mut pos = match self.role {
            Role::SequentialWrite { start } => start,
            _ => 0,
        };
        while !self.shared.should_stop() {
            let (off, write) = match self.role {
                Role::RandomRead => (rng.offset(self.size, self.block), false),
                Role::RandomReadWrite => {
                    if rng.next_u64() & 1 == 1 {
                        (rng.offset_from(WRITE_FLOOR, self.size, self.block), true)
                    } else {
                        (rng.offset(self.size, self.block), false)
                    }
                }
                Role::SequentialWrite { .. } => {
                    if pos + self.seq_block > self.size {
                        pos = WRITE_FLOOR;
                    }
                    let p = pos;
                    pos += self.seq_block;
                    (p, true)
                }
            };
            let t = Instant::now();
            let res = if write {
                self.file.write_at(buf.bytes(), off)
            } else {
                self.file.read_at(buf.bytes_mut(), off)
            };
            let ns = t.elapsed().as_nanos() as u64;
            let Ok(mut st) = self.shared.workers[self.id].lock() else {
                return;
            };
            let op = if write { &mut st.writes } else { &mut st.reads };
            match res {
                Ok(n) if n == len => {
                    op.ios += 1;
                    op.bytes += n as u64;
                    op.hist.record(ns);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                other => {
                    op.errors += 1;
                    let what = if write { "write" } else { "read" };
                    let msg = match other {
                        Ok(n) => format!("short {what} of {n} bytes at offset {off}"),
                        Err(e) => format!("{what} at offset {off} failed: {e}"),
                    };
                    st.first_error.get_or_insert(msg);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers_are_aligned() {
        for align in [512usize, 4096, 65536] {
            let mut b = AlignedBuf::new(4096, align);
            assert_eq!(b.bytes().as_ptr() as usize % align, 0);
            assert_eq!(b.bytes_mut().len(), 4096);
        }
    }

    #[test]
    fn offsets_are_aligned_and_inside_the_device() {
        let mut r = Rng::seeded(7);
        let size = 10 * 4096 + 100;
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..10_000 {
            let o = r.offset(size, 4096);
            assert_eq!(o % 4096, 0);
            assert!(o + 4096 <= size);
            seen.insert(o);
        }
        assert_eq!(seen.len(), 10, "every block is reachable");
        for _ in 0..1000 {
            let o = r.offset_from(WRITE_FLOOR, 2 * WRITE_FLOOR, 4096);
            assert!((WRITE_FLOOR..2 * WRITE_FLOOR).contains(&o) && o.is_multiple_of(4096));
        }
    }
}
