//! Loading the BPF program (with the pure-Rust `aya` loader) and reading its
//! histogram map and its count of lost completions once per tick.
//!
//! The object is built from `bpf/latency.bpf.c` by `bpf/build.sh` and
//! committed, so a build needs only Rust. Its programs are BTF tracepoints
//! (`tp_btf`), relocated against `/sys/kernel/btf/vmlinux` (CO-RE).

use super::btf_slim::{CORE_STRUCTS, slim};
use super::hist::{Hist, SPANS_LEN};
use super::who::{WHO_KEY_LEN, WHO_VALUE_LEN, WhoReading, parse_key, parse_value};
use super::{Readings, Span};
use crate::os::ImmutableFile;
use aya::maps::{Array, HashMap, MapData, PerCpuArray};
use aya::programs::BtfTracePoint;
use aya::programs::tp_btf::BtfTracePointLinkId;
use aya::{Btf, Ebpf, EbpfLoader, Endianness};
use std::fmt;
use std::path::Path;

mod decode;
use decode::{fast_slots, fdinfo_field, group, split_value, sum_cpus};

/// The committed object, 8-byte aligned for the ELF parser.
#[repr(C, align(8))]
pub(super) struct Aligned<B: ?Sized>(pub(super) B);
pub(super) static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!("../../../bpf/latency.bpf.o"));

/// The programs and the tracepoints they attach to.
const PROGRAMS: [(&str, &str); 2] = [ISSUE, COMPLETE];

/// The completion program, which times every I/O.
const COMPLETE: (&str, &str) = ("on_complete", "block_rq_complete");

/// The issue program and its tracepoint: loaded (and so verified) and
/// attached only when the program must keep issue times itself (see
/// [`Tracer::read`]). Not loaded before: its verification took 1.4 ms of
/// `watch`'s start here (both programs' together, about a tenth of the
/// start at 1000 devices), and most machines never need this program.
const ISSUE: (&str, &str) = ("on_issue", "block_rq_issue");

/// The attribution program and its tracepoint (`block_io_start`, Linux
/// 6.5 on): loaded and attached only while attribution is on
/// ([`Tracer::set_who`]), so that no I/O pays for it otherwise.
const START: (&str, &str) = ("on_start", "block_io_start");

/// Most entries of the attribution map read per tick (its size).
const WHO_ENTRIES: usize = 2048;

/// The enumerators whose bits say that the kernel times a request's issue
/// itself: the queue flag that turns its statistics on, and the request
/// flag it then sets (the program's `queue_stats_mask`, `rq_stats_mask`).
const STATS_FLAGS: [&str; 2] = ["QUEUE_FLAG_STATS", "__RQF_STATS"];

/// The program's `fast` array: its slots (`FAST_SLOTS`), and the bit that
/// marks a slot's owner in `fast_owners` (`FAST_OWNED`).
const FAST_SLOTS: usize = 64;
const FAST_OWNED: u64 = 1 << 63;
// A slot per bit of `Tracer::fast_gone`.
const _: () = assert!(FAST_SLOTS <= 64);

const BTF_PATH: &str = "/sys/kernel/btf/vmlinux";
const LOCKDOWN_PATH: &str = "/sys/kernel/security/lockdown";

/// Why there are no kernel percentiles, in a few words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("disabled by --no-bpf")]
    Disabled,
    #[error("needs root")]
    NotRoot,
    #[error("not the live system (--sysfs-root/--proc-root)")]
    NotLive,
    #[error("no kernel BTF ({BTF_PATH})")]
    NoBtf,
    #[error("kernel lockdown ({0})")]
    Lockdown(String),
    #[error("BPF load failed: {0}")]
    Load(String),
    /// Loaded, then reading its map failed (tracing stops there).
    #[error("BPF read failed: {0}")]
    Read(String),
}

/// The loaded, attached program; detached when dropped.
pub struct Tracer {
    /// Owns the programs and their links: dropping it detaches them.
    bpf: Ebpf,
    /// Key: `[map_id, diskseq]`; value: both spans' histograms ([`SPANS_LEN`]).
    hists: HashMap<MapData, [u64; 2], [u64; SPANS_LEN]>,
    /// The owner of each slot of `fast` (`map_id | FAST_OWNED`, diskseq).
    fast_owners: Array<MapData, [u64; 2 * FAST_SLOTS]>,
    /// The histograms of the disks that own a slot, read and write.
    fast: Array<MapData, [u64; SPANS_LEN]>,
    /// Slots whose owner was found replaced by a newer diskseq of its
    /// device: it can have no more I/O, so it is not read again.
    fast_gone: u64,
    /// One slot per CPU: completions that found no histogram.
    lost: PerCpuArray<MapData, u64>,
    /// One slot per CPU: completions with no issue time (the program's
    /// `untimed`): the sign that the issue program is needed.
    untimed: PerCpuArray<MapData, u64>,
    /// See [`Tracer::issue_program`].
    issue: IssueProgram,
    /// The link of an issue program attached after the start (lazily, or
    /// by [`Tracer::attach_issue_program`]): what detaches it.
    issue_link: Option<BtfTracePointLinkId>,
    /// [`IssueProgram::Failed`] was handed out by
    /// [`Tracer::take_issue_failure`].
    issue_failure_taken: bool,
    /// The number of type ids of the slim BTF blob the load used
    /// ([`slim`]); `None`: it needed the whole BTF.
    slim_btf: Option<u32>,
    /// See [`Tracer::kernel_issue_times`].
    kernel_issue_times: bool,
    /// The completion program's fd (owned by `bpf`): its `fdinfo` counts
    /// the runs the kernel skipped (a completion that came while the
    /// program ran on the same CPU), which are lost completions too.
    complete_fd: Option<i32>,
    /// Their count at the last read that found it: a read that fails
    /// keeps it (a cumulative count that dropped would read as 2^64 lost).
    skipped: u64,
    /// The completion program's link; `None` while a benchmark has it
    /// detached ([`Tracer::set_completions`]).
    complete_link: Option<BtfTracePointLinkId>,
    /// Attribution: the program's switch (`who_on`), its map (`who`), and
    /// the start program's link while it is on ([`Tracer::set_who`]).
    who_on: Array<MapData, u32>,
    who: HashMap<MapData, [u64; WHO_KEY_LEN], [u64; WHO_VALUE_LEN]>,
    start_link: Option<BtfTracePointLinkId>,
    /// The generation `who_on` holds while attribution is on (from 1).
    who_gen: u32,
}

// By hand: aya's per-CPU array has no `Debug`.
impl fmt::Debug for Tracer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracer")
            .field("bpf", &self.bpf)
            .field("hists", &self.hists)
            .field("slim_btf", &self.slim_btf)
            .field("kernel_issue_times", &self.kernel_issue_times)
            .field("issue", &self.issue)
            .finish_non_exhaustive()
    }
}

/// Whether the issue program (`on_issue`, on `block_rq_issue`) runs.
///
/// It has work only on a queue that does not time its issues itself (no
/// `QUEUE_FLAG_STATS`: write throttling, kyber and others turn them on, and
/// most queues have them). So it is attached at start only when the program
/// must keep every issue time; otherwise at the first read after a
/// completion came without an issue time. Until then each I/O runs one
/// program instead of two; the device span of a queue without statistics
/// starts with the I/Os issued after the attach (its count says so).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IssueProgram {
    /// Not attached: no completion has needed it yet.
    Waiting,
    Attached,
    /// The attach failed (never retried): no device span where the kernel
    /// does not time the issue.
    Failed(String),
}

/// What to say, once, when the issue program could not be attached: the
/// device span of a queue that does not time its issues itself stays empty.
pub fn no_device_span_note(why: &str) -> String {
    format!(
        "no device span (r_dev_p99, w_dev_p99) on queues that do not time their issues \
         themselves: the issue program could not be attached: {}",
        crate::text::printable(why)
    )
}

/// Where issue times come from: the kernel where it keeps them, else the
/// program ([`Tracer::start`]); always the program, its issue program
/// attached at start or lazily (tests and benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Issues {
    Kernel,
    Program,
    ProgramLazily,
}

/// The issue program's next state, if it changes: a waiting one is
/// attached once `needed` says a completion came without an issue time.
/// Neither is called otherwise (attached or failed: never retried).
fn next_issue_program(
    now: &IssueProgram,
    needed: impl FnOnce() -> bool,
    attach: impl FnOnce() -> Result<(), String>,
) -> Option<IssueProgram> {
    if *now != IssueProgram::Waiting || !needed() {
        return None;
    }
    Some(match attach() {
        Ok(()) => IssueProgram::Attached,
        Err(e) => IssueProgram::Failed(e),
    })
}

/// A failure's words the first time they are asked for.
fn take_failure(issue: &IssueProgram, taken: &mut bool) -> Option<String> {
    match issue {
        IssueProgram::Failed(e) if !*taken => {
            *taken = true;
            Some(e.clone())
        }
        _ => None,
    }
}

/// Is the issue program attached at start? When the program keeps every
/// issue time (the kernel's flags not found, or asked to), unless asked to
/// wait; else it waits for a completion without an issue time.
fn attach_issue_at_start(issues: Issues, masks: &(u64, u32)) -> bool {
    match issues {
        Issues::ProgramLazily => false,
        Issues::Program => true,
        Issues::Kernel => masks.1 == 0,
    }
}

/// The kernel's BTF with the attach point of a tracepoint program loaded
/// after the start: the program's fields were relocated at the start; its
/// load needs only the id of the tracepoint's type. The slim blob where it
/// can be made, as at the start, else the whole.
fn attach_btf(tracepoint: &str) -> Result<Btf, String> {
    let bytes = ImmutableFile::kernel_btf().map_err(|e| format!("kernel BTF: {e}"))?;
    let blob = slim(&bytes, &[tracepoint], &[], &[]).map(|s| s.blob);
    Btf::parse(blob.as_deref().unwrap_or(&bytes), Endianness::default())
        .map_err(|e| format!("kernel BTF: {e}"))
}

/// The checks made before any BPF call, as a pure function.
///
/// Root is required (CAP_BPF and CAP_PERFMON would do, but blktune changes
/// settings as root anyway); lockdown's confidentiality mode forbids reading
/// kernel memory, which tracing programs do.
fn precheck(
    no_bpf: bool,
    live: bool,
    root: bool,
    btf: bool,
    lockdown: Option<&str>,
) -> Result<(), Unavailable> {
    if no_bpf {
        return Err(Unavailable::Disabled);
    }
    if !live {
        return Err(Unavailable::NotLive);
    }
    if !root {
        return Err(Unavailable::NotRoot);
    }
    if !btf {
        return Err(Unavailable::NoBtf);
    }
    // The active mode is the one in brackets: "none integrity [confidentiality]".
    if let Some(mode) = lockdown.and_then(|l| {
        l.split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
    }) && mode == "confidentiality"
    {
        return Err(Unavailable::Lockdown(mode.to_string()));
    }
    Ok(())
}

/// The program's `queue_stats_mask` and `rq_stats_mask` from the bit numbers
/// of [`STATS_FLAGS`]: both or neither (0, 0: it keeps every issue time).
fn stats_masks(bits: &[Option<i64>]) -> (u64, u32) {
    match bits {
        [Some(q @ 0..=63), Some(r @ 0..=31)] => (1 << q, 1 << r),
        _ => (0, 0),
    }
}

impl Tracer {
    /// Load and attach the program, unless `no_bpf`, not `live` (a fake
    /// sysfs tree: the kernel's devices are not the ones shown), not root,
    /// no BTF or lockdown; then no BPF call is made at all.
    pub fn start(no_bpf: bool, live: bool) -> Result<Self, Unavailable> {
        Self::start_with(no_bpf, live, Issues::Kernel)
    }

    /// [`Tracer::start`], but the program times every issue itself, as on a
    /// queue that keeps no statistics (the kernel's own issue times unused):
    /// how tests and benchmarks check and measure that path on queues that
    /// keep them. The issue program is attached at start.
    pub fn start_timing_every_issue(no_bpf: bool, live: bool) -> Result<Self, Unavailable> {
        Self::start_with(no_bpf, live, Issues::Program)
    }

    /// [`Tracer::start_timing_every_issue`], but with the issue program
    /// attached as on a queue without statistics found while tracing: at
    /// the first read after a completion had no issue time. How tests check
    /// that path on a kernel whose queues all time their issues.
    pub fn start_timing_every_issue_lazily(no_bpf: bool, live: bool) -> Result<Self, Unavailable> {
        Self::start_with(no_bpf, live, Issues::ProgramLazily)
    }

    fn start_with(no_bpf: bool, live: bool, issues: Issues) -> Result<Self, Unavailable> {
        let lockdown = std::fs::read_to_string(LOCKDOWN_PATH).ok();
        precheck(
            no_bpf,
            live,
            nix::unistd::geteuid().is_root(),
            Path::new(BTF_PATH).exists(),
            lockdown.as_deref(),
        )?;
        Self::load(issues).map_err(|e| match lockdown.as_deref().map(str::trim) {
            // Integrity mode may refuse some programs too: say it is on.
            Some(l) if !l.contains("[none]") => Unavailable::Load(format!("{e} (lockdown: {l})")),
            _ => Unavailable::Load(e),
        })
    }

    fn load(issues: Issues) -> Result<Self, String> {
        // Declared first: the loader borrows them.
        let (part, whole): (Btf, Btf);
        let mut masks = (0u64, 0u32);
        // blktune's copy of aya (vendor/README.md) makes a loader without
        // parsing the kernel's BTF; the one it relocates against is ours.
        let mut loader = EbpfLoader::new();
        // The relocations and the attach points need only a few of the
        // types; the whole is used if those are not enough.
        // Mapped, not copied, where the kernel allows it (6.16 on).
        let bytes = ImmutableFile::kernel_btf().map_err(|e| format!("kernel BTF: {e}"))?;
        let tracepoints = PROGRAMS.map(|(_, tp)| tp);
        if let Some(s) = slim(&bytes, &tracepoints, &CORE_STRUCTS, &STATS_FLAGS) {
            // Found in the same walk; unset (0) the program times every issue.
            if issues == Issues::Kernel {
                masks = stats_masks(&s.enumerators);
            }
            if let Ok(btf) = Btf::parse(&s.blob, Endianness::default()) {
                part = btf;
                if let Ok(loaded) = Self::load_with(&mut loader, &part, &masks, issues) {
                    return Self::from_loaded(loaded, Some(s.types), masks, issues);
                }
            }
        }
        whole =
            Btf::parse(&bytes, Endianness::default()).map_err(|e| format!("kernel BTF: {e}"))?;
        drop(bytes);
        let loaded = Self::load_with(&mut loader, &whole, &masks, issues)?;
        Self::from_loaded(loaded, None, masks, issues)
    }

    /// Load the object and attach its programs, relocated against `btf`,
    /// with the flag masks of [`stats_masks`]; the issue program only when
    /// [`attach_issue_at_start`]. With the completion program's link.
    fn load_with<'b>(
        loader: &mut EbpfLoader<'b>,
        btf: &'b Btf,
        masks: &'b (u64, u32),
        issues: Issues,
    ) -> Result<(Ebpf, BtfTracePointLinkId), String> {
        let mut bpf = loader
            .btf(Some(btf))
            .override_global("queue_stats_mask", &masks.0, true)
            .override_global("rq_stats_mask", &masks.1, true)
            .load(&OBJECT.0)
            .map_err(|e| e.to_string())?;
        let mut complete_link = None;
        for (name, tracepoint) in PROGRAMS {
            let prog: &mut BtfTracePoint = bpf
                .program_mut(name)
                .ok_or_else(|| format!("no program {name}"))?
                .try_into()
                .map_err(|e| format!("{name}: {e}"))?;
            if name != ISSUE.0 || attach_issue_at_start(issues, masks) {
                prog.load(tracepoint, btf)
                    .map_err(|e| format!("{tracepoint}: {e}"))?;
                let link = prog.attach().map_err(|e| format!("{tracepoint}: {e}"))?;
                if name == COMPLETE.0 {
                    complete_link = Some(link);
                }
            }
        }
        let link = complete_link.ok_or_else(|| format!("no program {}", COMPLETE.0))?;
        Ok((bpf, link))
    }

    fn from_loaded(
        (mut bpf, complete_link): (Ebpf, BtfTracePointLinkId),
        slim_btf: Option<u32>,
        masks: (u64, u32),
        issues: Issues,
    ) -> Result<Self, String> {
        let hists = take_map(&mut bpf, "hists")?;
        let fast_owners = take_map(&mut bpf, "fast_owners")?;
        let fast = take_map(&mut bpf, "fast")?;
        let lost = take_map(&mut bpf, "lost")?;
        let untimed = take_map(&mut bpf, "untimed")?;
        let who_on = take_map(&mut bpf, "who_on")?;
        let who = take_map(&mut bpf, "who")?;
        let issue = if attach_issue_at_start(issues, &masks) {
            IssueProgram::Attached
        } else {
            IssueProgram::Waiting
        };
        let complete_fd = bpf.program(COMPLETE.0).and_then(|p| p.fd().ok()).map(|fd| {
            use std::os::fd::{AsFd, AsRawFd};
            fd.as_fd().as_raw_fd()
        });
        Ok(Self {
            bpf,
            hists,
            fast_owners,
            fast,
            fast_gone: 0,
            lost,
            untimed,
            issue,
            issue_failure_taken: false,
            issue_link: None,
            slim_btf,
            kernel_issue_times: masks.1 != 0,
            complete_fd,
            skipped: 0,
            complete_link: Some(complete_link),
            who_on,
            who,
            start_link: None,
            who_gen: 0,
        })
    }

    /// Does the program take the issue time of a request the kernel times
    /// itself from the kernel (`io_start_time_ns`), keeping its own only for
    /// the rest? `false`: the kernel's flags were not found; it keeps every
    /// issue time.
    pub fn kernel_issue_times(&self) -> bool {
        self.kernel_issue_times
    }

    /// Whether the issue program runs ([`IssueProgram`]).
    pub fn issue_program(&self) -> &IssueProgram {
        &self.issue
    }

    /// Why the issue program could not be attached, once: the first call
    /// after it failed, `None` before and after. How `watch` and the TUI
    /// say, once, that a queue without statistics has no device span.
    pub fn take_issue_failure(&mut self) -> Option<String> {
        take_failure(&self.issue, &mut self.issue_failure_taken)
    }

    /// Attach the issue program now if it waits: a measurement that starts
    /// (a shoot-out's dwell) then has the device span of every I/O issued
    /// in it, on any queue, instead of those after the first read that
    /// found a completion without an issue time (a dwell's end, where the
    /// I/O began only once the dwell had). Not retried after a failure.
    /// True when this call attached it: its caller detaches it when done
    /// ([`Tracer::detach_issue_program`]), so that every I/O does not pay
    /// for it afterwards.
    pub fn attach_issue_program(&mut self) -> bool {
        let waited = self.issue == IssueProgram::Waiting;
        self.attach_issue_when(true);
        waited && self.issue == IssueProgram::Attached
    }

    /// Detach an issue program attached after the start, back to waiting
    /// for a completion without an issue time (seen at a read: one
    /// already counted attaches it again at the next). Nothing to do
    /// otherwise; a failed detach leaves it attached.
    pub fn detach_issue_program(&mut self) {
        let Some(link) = self.issue_link.take() else {
            return;
        };
        let detached = self
            .bpf
            .program_mut(ISSUE.0)
            .and_then(|p| <&mut BtfTracePoint>::try_from(p).ok())
            .is_some_and(|p| p.detach(link).is_ok());
        if detached {
            self.issue = IssueProgram::Waiting;
        }
    }

    /// Detach the completion program (`false`), so that no I/O is timed,
    /// or attach it again (`true`); nothing to do if it already is so. The
    /// tool never detaches it: this is for a benchmark that measures what
    /// the program costs an I/O against no tracing within one fio run,
    /// switching it on and off every fraction of a second
    /// (`examples/latency_toggle.rs`, run by `benches/latency/overhead.sh`).
    pub fn set_completions(&mut self, on: bool) -> Result<(), String> {
        let (name, tracepoint) = COMPLETE;
        let p = self
            .bpf
            .program_mut(name)
            .ok_or_else(|| format!("no program {name}"))?;
        let p: &mut BtfTracePoint = p.try_into().map_err(|e| format!("{name}: {e}"))?;
        match (on, self.complete_link.take()) {
            (true, None) => {
                let link = p.attach().map_err(|e| format!("{tracepoint}: {e}"))?;
                self.complete_link = Some(link);
            }
            (false, Some(link)) => p.detach(link).map_err(|e| format!("{tracepoint}: {e}"))?,
            (_, link) => self.complete_link = link,
        }
        Ok(())
    }

    /// Attribute each request to its submitter (`true`), or stop. On: the
    /// start program is loaded (the first time) and attached, then the
    /// completion program told to attribute; off: the other way round, so
    /// that no I/O pays for attribution while nobody looks. Only requests
    /// started while it is on are attributed. Nothing to do if it already
    /// is so; on a failed attach it stays off, with why (on kernels before
    /// 6.5, which have no `block_io_start`).
    pub fn set_who(&mut self, on: bool) -> Result<(), String> {
        let (name, tracepoint) = START;
        match (on, self.start_link.is_some()) {
            (true, false) => {
                let p = self
                    .bpf
                    .program_mut(name)
                    .ok_or_else(|| format!("no program {name}"))?;
                let p: &mut BtfTracePoint = p.try_into().map_err(|e| format!("{name}: {e}"))?;
                if p.fd().is_err() {
                    let btf = attach_btf(tracepoint)?;
                    p.load(tracepoint, &btf)
                        .map_err(|e| format!("{tracepoint}: {e}"))?;
                }
                let link = p.attach().map_err(|e| format!("{tracepoint}: {e}"))?;
                self.start_link = Some(link);
                // A new generation: owners noted while it was on before
                // are not taken for this time's (the program's `owner`).
                self.who_gen = self.who_gen.wrapping_add(1).max(1);
                if let Err(e) = self.who_on.set(0, self.who_gen, 0) {
                    let _ = self.set_who(false);
                    return Err(format!("map who_on: {e}"));
                }
            }
            (false, true) => {
                self.who_on
                    .set(0, 0, 0)
                    .map_err(|e| format!("map who_on: {e}"))?;
                if let Some(link) = self.start_link.take() {
                    let p = self
                        .bpf
                        .program_mut(name)
                        .and_then(|p| <&mut BtfTracePoint>::try_from(p).ok())
                        .ok_or_else(|| format!("no program {name}"))?;
                    p.detach(link).map_err(|e| format!("{tracepoint}: {e}"))?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Is attribution on ([`Tracer::set_who`])?
    pub fn who(&self) -> bool {
        self.start_link.is_some()
    }

    /// Every disk's I/O by owner so far (cumulative; see [`super::who`]).
    /// At most the map's size; a key no program writes is skipped.
    pub fn read_who(&self) -> Result<WhoReading, String> {
        let mut out = Vec::new();
        for item in self.who.iter().take(WHO_ENTRIES) {
            // A key that gave way between listing and lookup is skipped.
            let Ok((key, value)) = item else { continue };
            if let Some((dev, diskseq, owner)) = parse_key(&key) {
                out.push(((dev, diskseq), owner, parse_value(&value)));
            }
        }
        Ok(out)
    }

    /// Attach the issue program if it waits and a completion came without
    /// an issue time. A failed read of the count tries again at the next
    /// read (the histograms are read all the same).
    fn attach_issue_if_needed(&mut self) {
        self.attach_issue_when(false);
    }

    /// [`Tracer::attach_issue_if_needed`], or at once with `now`.
    fn attach_issue_when(&mut self, now: bool) {
        let Tracer {
            bpf,
            untimed,
            issue,
            issue_link,
            ..
        } = self;
        // Unreadable: tried again at the next read.
        let needed = || now || untimed.get(&0, 0).is_ok_and(|n| sum_cpus(&n) > 0);
        let attach = || {
            let (name, tracepoint) = ISSUE;
            let p = bpf
                .program_mut(name)
                .ok_or_else(|| format!("no program {name}"))?;
            let p: &mut BtfTracePoint = p.try_into().map_err(|e| format!("{name}: {e}"))?;
            // Loaded the first time only (a detached one stays loaded).
            if p.fd().is_err() {
                let btf = attach_btf(tracepoint)?;
                p.load(tracepoint, &btf)
                    .map_err(|e| format!("{tracepoint}: {e}"))?;
            }
            *issue_link = Some(p.attach().map_err(|e| format!("{tracepoint}: {e}"))?);
            Ok(())
        };
        if let Some(next) = next_issue_program(issue, needed, attach) {
            *issue = next;
        }
    }

    /// The number of type ids of the slim BTF blob the load relocated and
    /// attached against (`btf_slim.rs`); `None`: it needed the whole BTF.
    pub fn slim_btf(&self) -> Option<u32> {
        self.slim_btf
    }

    /// Completions the kernel did not run the completion program for, so
    /// far: it was already running on that CPU (an interrupt's completion
    /// during it). From the program's `fdinfo`; `None` before Linux 5.12,
    /// or when unreadable. [`Tracer::read`] counts them as lost.
    pub fn skipped_completions(&self) -> Option<u64> {
        self.complete_fd
            .and_then(|fd| std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok())
            .and_then(|t| fdinfo_field(&t, "recursion_misses"))
    }

    /// Every device's cumulative histograms now, and the completions lost
    /// so far. Histograms of an earlier device under the same number (a
    /// lower diskseq) are dropped from the map, so they are neither read
    /// again nor mistaken for the new one's.
    pub fn read(&mut self) -> Result<Readings, String> {
        self.attach_issue_if_needed();
        let per_cpu = self.lost.get(&0, 0).map_err(|e| format!("map lost: {e}"))?;
        if let Some(n) = self.skipped_completions() {
            self.skipped = n;
        }
        let lost = sum_cpus(&per_cpu).wrapping_add(self.skipped);
        let mut raw: Vec<([u64; 2], Span, Hist)> = Vec::new();
        let owners = self
            .fast_owners
            .get(&0, 0)
            .map_err(|e| format!("map fast_owners: {e}"))?;
        let mut fast_keys = Vec::new();
        for (slot, key) in fast_slots(&owners, self.fast_gone) {
            let value = self
                .fast
                .get(&(slot as u32), 0)
                .map_err(|e| format!("map fast: {e}"))?;
            raw.extend(split_value(&value).map(|(span, h)| (key, span, h)));
            fast_keys.push((slot, key));
        }
        // The keys first, then each value straight into `split_value`: an
        // iterator of (key, value) pairs moves each 24 KiB value around
        // twice more, a third of the read at a thousand devices.
        let keys: Vec<[u64; 2]> = self.hists.keys().filter_map(Result::ok).collect();
        for key in keys {
            // A key deleted between listing and lookup is skipped.
            if let Ok(value) = self.hists.get(&key, 0) {
                raw.extend(split_value(&value).map(|(span, h)| (key, span, h)));
            }
        }
        let (devices, stale) = group(raw);
        for key in stale {
            if let Some(&(slot, _)) = fast_keys.iter().find(|(_, k)| *k == key) {
                self.fast_gone |= 1 << slot;
            }
            // Already gone (or only in `fast`) is fine.
            let _ = self.hists.remove(&key);
        }
        Ok(Readings { devices, lost })
    }
}

/// The program's map `name`, as the aya map type its use needs.
fn take_map<M>(bpf: &mut Ebpf, name: &str) -> Result<M, String>
where
    M: TryFrom<aya::maps::Map, Error = aya::maps::MapError>,
{
    let map = bpf.take_map(name).ok_or_else(|| format!("no map {name}"))?;
    M::try_from(map).map_err(|e| format!("map {name}: {e}"))
}

#[cfg(test)]
mod tests;
