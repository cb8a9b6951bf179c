//! Who did a disk's I/O, as the BPF program attributes it (`bpf/latency.bpf.c`,
//! `on_start` and `attribute`): per disk, per owner (a process and its
//! cgroup v2, or a kernel worker's write-back and the cgroup its bio was
//! charged to), the requests and bytes completed per direction and the read
//! latencies in coarse slots. The map keeps cumulative counts; [`Owners`]
//! turns two readings into an interval's, as [`super::Intervals`] does for
//! the disks' histograms.
//!
//! The map is bounded (least recently used owners give way): an owner that
//! went away or whose counts went back was made anew, and its new counts are
//! the interval's. Requests whose start the program did not see (started
//! before attribution began) are counted for no owner ([`Owner::Unknown`]),
//! so that every completed request of a disk is in the map and the shares
//! of one reading add up.

use super::DevId;
use super::hist::{MAX_EXP, MIN_EXP, NR_SLOTS, SUB_BITS, slot_bounds};
use super::summary::MIN_IOS_FOR_P99;
use std::collections::HashMap;

/// Coarse slots per power of two, as a power of two (the program's `WHO_SUB_BITS`).
pub const WHO_SUB_BITS: u32 = 2;
/// The program's `WHO_SLOTS`: underflow, 4 slots per power of two, overflow.
pub const WHO_SLOTS: usize = 2 + (MAX_EXP - MIN_EXP + 1) as usize * (1 << WHO_SUB_BITS);
/// Directions counted per owner: reads, writes, the rest (discards, flushes).
pub const WHO_DIRS: usize = 3;
/// The map value as u64s: the name (16 bytes), the counts of requests and
/// bytes per direction, the sum of read latencies, the read slots.
pub const WHO_VALUE_LEN: usize = 2 + 2 * WHO_DIRS + 1 + WHO_SLOTS;
/// The map key as u64s: dev_t, diskseq, cgroup id, pid | flags << 32.
pub const WHO_KEY_LEN: usize = 4;
/// The key's flags: the submitter was a kernel workqueue worker
/// (`OWNER_WORKER`); the start was not seen (`OWNER_UNKNOWN`).
const OWNER_WORKER: u64 = 2;
const OWNER_UNKNOWN: u64 = 4;
/// Fine slots per coarse one.
const FINE_PER_COARSE: usize = 1 << (SUB_BITS - WHO_SUB_BITS);

/// Whose I/O: one process and its cgroup, or a kernel worker's, or nobody known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    /// A process (tgid) and its cgroup v2 id (its directory's inode number).
    Process { pid: u32, cgroup: u64 },
    /// A kernel workqueue worker (write-back, mostly), and the cgroup v2 the
    /// bio was charged to; `None` when the kernel kept none.
    Worker { cgroup: Option<u64> },
    /// Requests whose start was not seen (started before attribution began).
    Unknown,
}

impl Owner {
    /// The process, if one.
    pub fn pid(self) -> Option<u32> {
        match self {
            Owner::Process { pid, .. } => Some(pid),
            _ => None,
        }
    }

    /// The cgroup v2 id, if known.
    pub fn cgroup(self) -> Option<u64> {
        match self {
            Owner::Process { cgroup, .. } => Some(cgroup),
            Owner::Worker { cgroup } => cgroup,
            Owner::Unknown => None,
        }
    }
}

/// One owner's I/O on one disk: cumulative as read, or of one interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerIo {
    /// The process's name as the kernel had it at its first request here
    /// (empty for write-back).
    pub comm: String,
    /// Completed requests: reads, writes, the rest.
    pub ios: [u64; WHO_DIRS],
    /// Their bytes.
    pub bytes: [u64; WHO_DIRS],
    /// Sum of the reads' latencies (start to completion, as r_await), ns.
    pub read_sum_ns: u64,
    /// The reads' latencies in [`WHO_SLOTS`] coarse slots.
    pub read_slots: Vec<u64>,
}

impl OwnerIo {
    /// Requests of every direction.
    pub fn total_ios(&self) -> u64 {
        self.ios.iter().sum()
    }

    /// Bytes read and written (discards left out, as MB/s counts them).
    pub fn rw_bytes(&self) -> u64 {
        self.bytes[0].saturating_add(self.bytes[1])
    }

    /// The interval between an earlier reading and this one; `None` when a
    /// count went back (the entry was made anew: then this one is the interval's).
    fn since(&self, earlier: &OwnerIo) -> Option<OwnerIo> {
        let sub = |a: &[u64], b: &[u64]| -> Option<Vec<u64>> {
            a.iter().zip(b).map(|(x, y)| x.checked_sub(*y)).collect()
        };
        let ios = sub(&self.ios, &earlier.ios)?;
        let bytes = sub(&self.bytes, &earlier.bytes)?;
        Some(OwnerIo {
            comm: self.comm.clone(),
            ios: [ios[0], ios[1], ios[2]],
            bytes: [bytes[0], bytes[1], bytes[2]],
            read_sum_ns: self.read_sum_ns.wrapping_sub(earlier.read_sum_ns),
            read_slots: sub(&self.read_slots, &earlier.read_slots)?,
        })
    }

    /// Add another owner's I/O (a cgroup is the sum of its processes).
    pub fn add(&mut self, other: &OwnerIo) {
        for d in 0..WHO_DIRS {
            self.ios[d] = self.ios[d].saturating_add(other.ios[d]);
            self.bytes[d] = self.bytes[d].saturating_add(other.bytes[d]);
        }
        self.read_sum_ns = self.read_sum_ns.saturating_add(other.read_sum_ns);
        self.read_slots.resize(WHO_SLOTS, 0);
        for (a, b) in self.read_slots.iter_mut().zip(&other.read_slots) {
            *a = a.saturating_add(*b);
        }
    }

    /// No I/O at all.
    pub fn empty() -> Self {
        Self {
            comm: String::new(),
            ios: [0; WHO_DIRS],
            bytes: [0; WHO_DIRS],
            read_sum_ns: 0,
            read_slots: vec![0; WHO_SLOTS],
        }
    }

    /// The reads' p99 in ms, when there are at least [`MIN_IOS_FOR_P99`]
    /// of them; off by at most one coarse slot (a quarter of a power of two).
    pub fn read_p99_ms(&self) -> Option<f64> {
        let n: u64 = self.read_slots.iter().sum();
        if n < MIN_IOS_FOR_P99 {
            return None;
        }
        coarse_quantile_ns(&self.read_slots, 0.99).map(|ns| ns / 1e6)
    }
}

/// The coarse slot a fine one ([`super::hist::slot_of`]) falls in (the program's `who_slot`).
pub fn who_slot(fine: usize) -> usize {
    match fine {
        0 => 0,
        f if f >= NR_SLOTS - 1 => WHO_SLOTS - 1,
        f => 1 + (f - 1) / FINE_PER_COARSE,
    }
}

/// The latencies (ns) a coarse slot holds: `lo..hi`, no `hi` for the last.
pub fn who_slot_bounds(coarse: usize) -> (u64, Option<u64>) {
    match coarse {
        0 => slot_bounds(0),
        c if c >= WHO_SLOTS - 1 => slot_bounds(NR_SLOTS - 1),
        c => {
            let first = 1 + (c - 1) * FINE_PER_COARSE;
            (
                slot_bounds(first).0,
                slot_bounds(first + FINE_PER_COARSE - 1).1,
            )
        }
    }
}

/// The latency below which a fraction `q` of the counts lie, interpolated
/// inside its coarse slot; `None` without counts.
fn coarse_quantile_ns(slots: &[u64], q: f64) -> Option<f64> {
    let n: u64 = slots.iter().sum();
    if n == 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * n as f64;
    let mut below = 0u64;
    let mut last = 0;
    for (i, &c) in slots.iter().enumerate() {
        if c == 0 {
            continue;
        }
        last = i;
        if (below + c) as f64 >= rank {
            return Some(interpolate(i, (rank - below as f64) / c as f64));
        }
        below += c;
    }
    Some(interpolate(last, 1.0))
}

fn interpolate(coarse: usize, frac: f64) -> f64 {
    match who_slot_bounds(coarse) {
        (lo, Some(hi)) => lo as f64 + frac.clamp(0.0, 1.0) * (hi - lo) as f64,
        (lo, None) => lo as f64,
    }
}

/// A map entry's key: the disk (dev_t, diskseq) and the owner; `None` for
/// a key no program writes (a dev_t above 32 bits, unknown flags).
pub fn parse_key(raw: &[u64; WHO_KEY_LEN]) -> Option<(DevId, u64, Owner)> {
    let [dev, diskseq, cgroup, pid_flags] = *raw;
    if dev >> 32 != 0 {
        return None;
    }
    let pid = pid_flags as u32;
    let flags = pid_flags >> 32;
    let owner = match flags {
        0 => Owner::Process { pid, cgroup },
        OWNER_WORKER => Owner::Worker {
            cgroup: (cgroup != 0).then_some(cgroup),
        },
        OWNER_UNKNOWN => Owner::Unknown,
        _ => return None,
    };
    Some((DevId::from_kernel(dev), diskseq, owner))
}

/// A map value as the program lays it out; the name is cut at its first NUL
/// and made printable.
pub fn parse_value(raw: &[u64; WHO_VALUE_LEN]) -> OwnerIo {
    let mut name = Vec::with_capacity(16);
    for w in &raw[..2] {
        name.extend_from_slice(&w.to_le_bytes());
    }
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let comm = crate::text::printable(&String::from_utf8_lossy(&name[..end])).into_owned();
    let at = 2;
    let ios = [raw[at], raw[at + 1], raw[at + 2]];
    let bytes = [raw[at + 3], raw[at + 4], raw[at + 5]];
    OwnerIo {
        comm,
        ios,
        bytes,
        read_sum_ns: raw[at + 6],
        read_slots: raw[at + 7..].to_vec(),
    }
}

/// A disk as the map names it: its number and diskseq.
pub type Disk = (DevId, u64);

/// The attribution map read once: every disk's owners, cumulative.
pub type WhoReading = Vec<(Disk, Owner, OwnerIo)>;

/// Keeps the previous reading; each new one gives the interval since.
#[derive(Debug, Default)]
pub struct Owners {
    prev: Option<HashMap<(Disk, Owner), OwnerIo>>,
}

/// One interval's I/O by owner: disk (dev_t, diskseq), owner, what it did.
/// Only owners that did I/O in it.
pub type WhoInterval = Vec<(Disk, Owner, OwnerIo)>;

impl Owners {
    /// No reading yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The interval since the last reading (`None` for the first: a baseline).
    pub fn next(&mut self, now: WhoReading) -> Option<WhoInterval> {
        let now: HashMap<_, _> = now.into_iter().map(|(d, o, io)| ((d, o), io)).collect();
        let out = self.prev.as_ref().map(|prev| {
            let mut v: WhoInterval = now
                .iter()
                .filter_map(|(k, io)| {
                    let d = match prev.get(k) {
                        Some(before) => io.since(before).unwrap_or_else(|| io.clone()),
                        // New (or made anew after giving way): all of it is this interval's.
                        None => io.clone(),
                    };
                    (d.total_ios() > 0).then_some((k.0, k.1, d))
                })
                .collect();
            v.sort_by_key(|e| (e.0, e.1));
            v
        });
        self.prev = Some(now);
        out
    }

    /// Forget the previous reading: the next is a baseline again.
    pub fn reset(&mut self) {
        self.prev = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::hist::slot_of;

    /// The program's defines, so the two layouts cannot drift apart.
    #[test]
    fn layout_matches_the_bpf_program() {
        let define = super::super::bpf_define;
        assert_eq!(define("WHO_SUB_BITS"), WHO_SUB_BITS.to_string());
        assert_eq!(
            define("WHO_SLOTS"),
            "(2 + (MAX_EXP - MIN_EXP + 1) * (1 << WHO_SUB_BITS))"
        );
        assert_eq!(define("WHO_DIRS"), WHO_DIRS.to_string());
        assert_eq!(WHO_SLOTS, 98);
        assert_eq!(WHO_VALUE_LEN * 8, 16 + 8 * (2 * WHO_DIRS + 1 + WHO_SLOTS));
        assert_eq!(define("OWNER_WORKER"), OWNER_WORKER.to_string());
        assert_eq!(define("OWNER_UNKNOWN"), OWNER_UNKNOWN.to_string());
        // The program's who_slot: fine >> (SUB_BITS - WHO_SUB_BITS).
        assert_eq!(define("SUB_BITS"), SUB_BITS.to_string());
    }

    #[test]
    fn coarse_slots_hold_the_fine_slots_they_cover() {
        for ns in [
            0,
            500,
            1024,
            1500,
            2047,
            2048,
            100_000,
            1_234_567,
            1 << 34,
            u64::MAX / 2,
        ] {
            let c = who_slot(slot_of(ns));
            let (lo, hi) = who_slot_bounds(c);
            assert!(
                lo <= ns && hi.is_none_or(|h| ns < h),
                "{ns}: {c} {lo}..{hi:?}"
            );
        }
        assert_eq!(who_slot(NR_SLOTS - 1), WHO_SLOTS - 1);
        // Contiguous: each slot starts where the last ended.
        for c in 1..WHO_SLOTS - 1 {
            assert_eq!(who_slot_bounds(c - 1).1, Some(who_slot_bounds(c).0), "{c}");
        }
    }

    fn io(reads: u64, lat_ns: u64) -> OwnerIo {
        let mut v = OwnerIo::empty();
        v.comm = "fio".into();
        v.ios[0] = reads;
        v.bytes[0] = reads * 4096;
        v.read_sum_ns = reads * lat_ns;
        v.read_slots[who_slot(slot_of(lat_ns))] = reads;
        v
    }

    #[test]
    fn a_p99_needs_enough_reads_and_lies_within_its_coarse_slot() {
        assert_eq!(io(99, 1_000_000).read_p99_ms(), None);
        let p = io(1000, 1_000_000).read_p99_ms().unwrap();
        let (lo, hi) = who_slot_bounds(who_slot(slot_of(1_000_000)));
        assert!(lo as f64 / 1e6 <= p && p <= hi.unwrap() as f64 / 1e6, "{p}");
        assert!((p - 1.0).abs() < 0.2, "{p}");
    }

    #[test]
    fn keys_name_a_process_or_a_workers_write_back() {
        let dev = DevId { major: 7, minor: 3 }.to_kernel();
        let (d, seq, o) = parse_key(&[dev, 9, 1234, 42]).unwrap();
        assert_eq!((d, seq), (DevId { major: 7, minor: 3 }, 9));
        assert_eq!(
            o,
            Owner::Process {
                pid: 42,
                cgroup: 1234
            }
        );
        let (_, _, w) = parse_key(&[dev, 9, 0, OWNER_WORKER << 32]).unwrap();
        assert_eq!(w, Owner::Worker { cgroup: None });
        let (_, _, w) = parse_key(&[dev, 9, 77, OWNER_WORKER << 32]).unwrap();
        assert_eq!(w.cgroup(), Some(77));
        let (_, _, u) = parse_key(&[dev, 9, 0, OWNER_UNKNOWN << 32]).unwrap();
        assert_eq!((u, u.pid(), u.cgroup()), (Owner::Unknown, None, None));
        assert_eq!(parse_key(&[dev, 9, 0, 5 << 32]), None);
        assert_eq!(parse_key(&[1 << 40, 9, 0, 0]), None);
    }

    #[test]
    fn a_value_reads_as_the_program_lays_it_out() {
        let mut raw = [0u64; WHO_VALUE_LEN];
        raw[0] = u64::from_le_bytes(*b"postgres");
        raw[1] = u64::from_le_bytes(*b":\x1b[2J\0\0\0");
        raw[2..8].copy_from_slice(&[10, 20, 1, 40960, 81920, 0]);
        raw[8] = 5_000;
        raw[9 + 3] = 10;
        let v = parse_value(&raw);
        assert_eq!(v.comm, "postgres:\\u001b[2J");
        assert_eq!(v.ios, [10, 20, 1]);
        assert_eq!(v.bytes, [40960, 81920, 0]);
        assert_eq!(v.read_sum_ns, 5_000);
        assert_eq!(v.read_slots.len(), WHO_SLOTS);
        assert_eq!(v.read_slots[3], 10);
        assert_eq!(v.rw_bytes(), 122_880);
    }

    #[test]
    fn intervals_are_differences_and_a_made_anew_entry_counts_whole() {
        let disk = (DevId { major: 7, minor: 0 }, 3);
        let fio = Owner::Process { pid: 10, cgroup: 5 };
        let dd = Owner::Process { pid: 11, cgroup: 1 };
        let mut o = Owners::new();
        assert_eq!(o.next(vec![(disk, fio, io(100, 1000))]), None);
        let i = o
            .next(vec![(disk, fio, io(250, 1000)), (disk, dd, io(7, 1000))])
            .unwrap();
        assert_eq!(i.len(), 2);
        assert_eq!(i[0].1, fio);
        assert_eq!(i[0].2.ios[0], 150);
        assert_eq!(i[1].2.ios[0], 7);
        // fio gave way and came back with fewer: its new counts are the interval's;
        // dd did nothing: left out.
        let i = o
            .next(vec![(disk, fio, io(30, 1000)), (disk, dd, io(7, 1000))])
            .unwrap();
        assert_eq!(i.len(), 1);
        assert_eq!(i[0].2.ios[0], 30);
    }
}
