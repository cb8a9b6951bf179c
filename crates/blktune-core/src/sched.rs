//! The scheduler catalogue: what each mainline I/O scheduler is for, every
//! tunable with its default, unit, the range the kernel keeps and a line of
//! help, the limits of `nr_requests` and `read_ahead_kb`, and the one value
//! check the CLI (`set`, `export`), the TUI's editor, the exported rules and
//! the shoot-out all use.
//!
//! The ranges are what the kernel *stores* unchanged, from the store
//! functions of Linux 6.18 (`block/mq-deadline.c` `STORE_INT`/`STORE_JIFFIES`,
//! `block/kyber-iosched.c` `kyber_lat_store`, `block/bfq-iosched.c`
//! `STORE_FUNCTION` and friends) and checked by writing each bound to a loop
//! device: outside them the kernel clamps (`front_merges=7` stores 1) or
//! wraps (`slice_idle=4295` stores 0: bfq keeps it in a `u32` of ns).
//! Inside them only one change remains, which the tuner reports after its
//! read-back: tunables kept in jiffies are rounded up to a whole tick
//! (`read_expire=250` reads back 252 at HZ=250).

/// What a scheduler is for, in one line (fits the 80-column picker).
/// Sources: `Documentation/block/deadline-iosched.rst`, `kyber-iosched.rst`,
/// `bfq-iosched.rst`.
pub fn scheduler_help(name: &str) -> &'static str {
    match name {
        "none" => "no reordering; fast NVMe, or storage that schedules itself",
        "mq-deadline" => "read/write FIFOs with expiry, prefers reads; safe default",
        "kyber" => "token-based, aims at target read/write latencies; fast flash",
        "bfq" => "fair per-process budgets, interactive; slow disks, CPU cost",
        _ => "not described by blktune",
    }
}

/// The mainline schedulers, in the order the help overlay lists them.
pub const SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];

/// What a tunable's number counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds, kept exactly (bfq keeps them as nanoseconds).
    Ms,
    /// Milliseconds kept in jiffies: the kernel rounds up to a whole tick
    /// (`msecs_to_jiffies()`), so 250 reads back 252 at HZ=250.
    JiffiesMs,
    Us,
    Ns,
    /// 0 or 1.
    Bool,
    /// A plain number (requests, batches, a factor).
    Count,
    /// 512-byte sectors.
    Sectors,
    KiB,
}

impl Unit {
    /// The suffix after a value: ` ms`, ` KiB`, or nothing.
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Ms | Unit::JiffiesMs => " ms",
            Unit::Us => " us",
            Unit::Ns => " ns",
            Unit::Sectors => " sectors",
            Unit::KiB => " KiB",
            Unit::Bool | Unit::Count => "",
        }
    }
}

/// One tunable of one scheduler (`queue/iosched/<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tunable {
    pub scheduler: &'static str,
    pub name: &'static str,
    /// What a switch to the scheduler sets (`elevator_switch()` resets every
    /// tunable); `None` when it is derived from something else.
    pub default: Option<&'static str>,
    pub unit: Unit,
    /// The smallest and largest values the kernel keeps unchanged.
    pub min: i128,
    pub max: i128,
    pub help: &'static str,
}

const I32_MAX: i128 = i32::MAX as i128;
/// mq-deadline shows jiffies-backed values as an `int` of ms: above this the
/// rounded value overflows to a negative number (2147483647 reads back
/// -2147483648). The bound leaves room for a 10 ms tick (HZ=100).
const DD_JIFFIES_MAX: i128 = I32_MAX - 7;

const fn t(
    scheduler: &'static str,
    name: &'static str,
    default: Option<&'static str>,
    unit: Unit,
    (min, max): (i128, i128),
    help: &'static str,
) -> Tunable {
    Tunable {
        scheduler,
        name,
        default,
        unit,
        min,
        max,
        help,
    }
}

/// Every tunable of the mainline schedulers, checked against Linux 6.18.
/// bfq's fifo_expire_* and slice_idle are nanoseconds inside (250/125 ms
/// exactly, where the doc still says 248/124 from the old jiffies code);
/// `timeout_sync` is HZ/8 jiffies, so 124 is its default at HZ=250 (125 at
/// HZ=1000). mq-deadline's `async_depth` follows nr_requests
/// (`dd_depth_updated()`), so it has no fixed default.
pub const TUNABLES: &[Tunable] = &[
    // mq-deadline: kstrtoint() then clamped to [min, max] (`STORE_INT`).
    t(
        "mq-deadline",
        "async_depth",
        None,
        Unit::Count,
        (1, I32_MAX),
        "request slots async I/O may use (caps writes/readahead)",
    ),
    t(
        "mq-deadline",
        "fifo_batch",
        Some("16"),
        Unit::Count,
        (0, I32_MAX),
        "requests per batch before deadlines are checked (16)",
    ),
    t(
        "mq-deadline",
        "front_merges",
        Some("1"),
        Unit::Bool,
        (0, 1),
        "1: try front merges; 0: skip that check",
    ),
    t(
        "mq-deadline",
        "prio_aging_expire",
        Some("10000"),
        Unit::JiffiesMs,
        (0, DD_JIFFIES_MAX),
        "ms before a lower-priority request is served anyway",
    ),
    t(
        "mq-deadline",
        "read_expire",
        Some("500"),
        Unit::JiffiesMs,
        (0, DD_JIFFIES_MAX),
        "deadline of a read, ms (500)",
    ),
    t(
        "mq-deadline",
        "write_expire",
        Some("5000"),
        Unit::JiffiesMs,
        (0, DD_JIFFIES_MAX),
        "deadline of a write, ms (5000)",
    ),
    t(
        "mq-deadline",
        "writes_starved",
        Some("2"),
        Unit::Count,
        (i32::MIN as i128, I32_MAX),
        "read batches allowed before a write batch (2)",
    ),
    // kyber: kstrtoull(), kept as given.
    t(
        "kyber",
        "read_lat_nsec",
        Some("2000000"),
        Unit::Ns,
        (0, u64::MAX as i128),
        "target latency of reads, ns (2 ms)",
    ),
    t(
        "kyber",
        "write_lat_nsec",
        Some("10000000"),
        Unit::Ns,
        (0, u64::MAX as i128),
        "target latency of sync writes, ns (10 ms)",
    ),
    // bfq: kstrtoul() (no sign), then clamped.
    t(
        "bfq",
        "back_seek_max",
        Some("16384"),
        Unit::KiB,
        (0, I32_MAX),
        "max backward seek still served, KiB (16384)",
    ),
    t(
        "bfq",
        "back_seek_penalty",
        Some("2"),
        Unit::Count,
        (1, I32_MAX),
        "cost factor of a backward seek (2)",
    ),
    t(
        "bfq",
        "fifo_expire_async",
        Some("250"),
        Unit::Ms,
        (1, I32_MAX),
        "deadline of async requests, ms (250)",
    ),
    t(
        "bfq",
        "fifo_expire_sync",
        Some("125"),
        Unit::Ms,
        (1, I32_MAX),
        "deadline of sync requests, ms (125)",
    ),
    t(
        "bfq",
        "low_latency",
        Some("1"),
        Unit::Bool,
        (0, 1),
        "1: boost interactive and soft real-time tasks",
    ),
    t(
        "bfq",
        "max_budget",
        Some("0"),
        Unit::Sectors,
        (0, I32_MAX),
        "max sectors served per budget; 0 = auto-tuned",
    ),
    // Kept as nanoseconds in a u32 (`bfq_data.bfq_slice_idle`): 4295 ms wraps to 0.
    t(
        "bfq",
        "slice_idle",
        Some("8"),
        Unit::Ms,
        (0, 4294),
        "ms to wait for more I/O of an emptied sync queue (8)",
    ),
    t(
        "bfq",
        "slice_idle_us",
        Some("8000"),
        Unit::Us,
        (0, 4_294_967),
        "slice_idle in microseconds",
    ),
    t(
        "bfq",
        "strict_guarantees",
        Some("0"),
        Unit::Bool,
        (0, 1),
        "1: idle more to keep bandwidth shares exact",
    ),
    t(
        "bfq",
        "timeout_sync",
        Some("124"),
        Unit::JiffiesMs,
        (1, I32_MAX),
        "ms a sync queue may use its budget (HZ/8 ticks)",
    ),
];

/// The catalogue entry of tunable `name` (names are unique across the
/// mainline schedulers); `None` for a tunable blktune does not know.
pub fn tunable(name: &str) -> Option<&'static Tunable> {
    TUNABLES.iter().find(|t| t.name == name)
}

/// The tunables of `scheduler`, sorted by name (used to validate tunables
/// for a scheduler that is not active yet).
pub fn tunables_of(scheduler: &str) -> impl Iterator<Item = &'static Tunable> + use<'_> {
    TUNABLES.iter().filter(move |t| t.scheduler == scheduler)
}

/// The names of `scheduler`'s tunables.
pub fn known_tunables(scheduler: &str) -> Vec<&'static str> {
    tunables_of(scheduler).map(|t| t.name).collect()
}

/// What a switch to `scheduler` sets each tunable with a fixed default to.
pub fn default_tunables(scheduler: &str) -> Vec<(&'static str, &'static str)> {
    tunables_of(scheduler)
        .filter_map(|t| t.default.map(|d| (t.name, d)))
        .collect()
}

/// The default of a tunable kept in jiffies, in ticks at `hz`: what the
/// kernel sets (`block/mq-deadline.c`: `read_expire = HZ / 2`,
/// `write_expire = 5 * HZ`, `prio_aging_expire = 10 * HZ`;
/// `block/bfq-iosched.c`: `bfq_timeout = HZ / 8`).
fn default_jiffies(name: &str, hz: u64) -> Option<u64> {
    match name {
        "read_expire" => Some(hz / 2),
        "write_expire" => Some(5 * hz),
        "prio_aging_expire" => Some(10 * hz),
        "timeout_sync" => Some(hz / 8),
        _ => None,
    }
}

/// The default of tunable `name` on a kernel ticking at `hz`
/// ([`crate::kernel_hz`]): for a jiffies-valued one, its ticks as the
/// kernel shows them (`jiffies_to_msecs()`, rounded up: `timeout_sync` 124
/// at HZ=250, 125 at HZ=1000, 120 at HZ=100); else the catalogue's.
pub fn default_at(name: &str, hz: u64) -> Option<String> {
    let t = tunable(name)?;
    t.default?;
    match default_jiffies(name, hz.max(1)) {
        Some(ticks) => Some((ticks * 1000).div_ceil(hz.max(1)).to_string()),
        None => t.default.map(str::to_owned),
    }
}

/// Tunables whose value follows another setting (mq-deadline's `async_depth`
/// follows nr_requests): not worth exporting or comparing to a default.
pub fn is_derived(name: &str) -> bool {
    tunable(name).is_some_and(|t| t.default.is_none())
}

/// What a tunable does, in one line; empty for an unknown one.
pub fn tunable_help(name: &str) -> &'static str {
    tunable(name).map_or("", |t| t.help)
}

/// Smallest nr_requests (`BLKDEV_MIN_RQ`): the kernel raises smaller values to 4.
pub const NR_REQUESTS_MIN: u64 = 4;
/// Largest nr_requests the kernel accepts with a scheduler (`MAX_SCHED_RQ`, the
/// scheduler tags' limit in `blk_mq_tag_update_depth()`, `block/blk-mq-tag.c`).
/// Without one the limit is lower: see [`nr_requests_max`].
pub const NR_REQUESTS_MAX: u64 = 2048;

/// The largest nr_requests the kernel accepts under `scheduler` (the one
/// active after the change). With a scheduler requests get scheduler tags,
/// up to [`NR_REQUESTS_MAX`]; under `none` they are the hardware tags, so
/// `blk_mq_update_nr_requests()` (`block/blk-mq.c`) refuses anything above
/// the tag set's depth with EINVAL. `hw_depth` is that depth
/// ([`crate::device::hw_queue_depth`]); unknown, only the general cap is known.
pub fn nr_requests_max(scheduler: &str, hw_depth: Option<u64>) -> u64 {
    match hw_depth {
        Some(d) if scheduler == "none" => d.clamp(NR_REQUESTS_MIN, NR_REQUESTS_MAX),
        _ => NR_REQUESTS_MAX,
    }
}

/// `4 to 128 under none`, or `4 to 2048`.
pub fn nr_requests_range(scheduler: &str, hw_depth: Option<u64>) -> String {
    let max = nr_requests_max(scheduler, hw_depth);
    match hw_depth {
        Some(_) if scheduler == "none" => format!("{NR_REQUESTS_MIN} to {max} under none"),
        _ => format!("{NR_REQUESTS_MIN} to {max}"),
    }
}

/// A generous upper bound on read-ahead (1 GiB); the kernel has no smaller cap.
pub const READ_AHEAD_KB_MAX: u64 = 1 << 20;

/// Page size in KiB; read_ahead_kb is kept in pages.
pub fn page_kb() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .map_or(4, |p| (p as u64 / 1024).max(1))
}

/// Why a value is refused, worded the same in the CLI and the TUI:
/// `front_merges '7' is out of range: 0 to 1`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} '{value}' is {why}")]
pub struct ValueError {
    pub what: String,
    pub value: String,
    pub why: String,
}

fn refuse(what: &str, value: impl ToString, why: impl Into<String>) -> ValueError {
    ValueError {
        what: what.chars().take(64).collect(),
        value: value.to_string().chars().take(32).collect(),
        why: why.into(),
    }
}

/// Is `value` a decimal integer as sysfs shows a tunable: digits (at most 20),
/// an optional minus sign, nothing else (surrounding whitespace trimmed)?
pub fn is_integer_text(value: &str) -> bool {
    let v = value.trim();
    let digits = v.strip_prefix('-').unwrap_or(v);
    !digits.is_empty() && digits.len() <= 20 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Check a tunable's value: a decimal integer the kernel keeps as it is
/// (see [`Tunable::min`]); a tunable the catalogue does not know needs only
/// to be an integer. `Ok` is the text to write: plain decimal, as
/// mq-deadline reads `010` as octal 8 and `0x10` as 16.
pub fn check_tunable(name: &str, input: &str) -> Result<String, ValueError> {
    let v = input.trim();
    if !is_integer_text(v) {
        return Err(refuse(name, v, "not an integer"));
    }
    let n: i128 = v.parse().map_err(|_| refuse(name, v, "not an integer"))?;
    match tunable(name) {
        Some(t) if !(t.min..=t.max).contains(&n) => Err(refuse(
            name,
            v,
            format!("out of range: {} to {}{}", t.min, t.max, t.unit.suffix()),
        )),
        None if !(i64::MIN as i128..=u64::MAX as i128).contains(&n) => {
            Err(refuse(name, v, "not an integer"))
        }
        _ => Ok(n.to_string()),
    }
}

/// Check nr_requests for the scheduler active after the change.
pub fn check_nr_requests(
    count: u64,
    scheduler: &str,
    hw_depth: Option<u64>,
) -> Result<(), ValueError> {
    if (NR_REQUESTS_MIN..=nr_requests_max(scheduler, hw_depth)).contains(&count) {
        return Ok(());
    }
    // Short enough for the TUI's status line; under none the top is the
    // hardware queue depth (the editor's hint and `set --help` say so).
    let range = nr_requests_range(scheduler, hw_depth);
    Err(refuse(
        "nr_requests",
        count,
        format!("out of range: {range}"),
    ))
}

/// Check read_ahead_kb: at most [`READ_AHEAD_KB_MAX`], a whole number of pages.
pub fn check_read_ahead_kb(count: u64, page_kb: u64) -> Result<(), ValueError> {
    let page = page_kb.max(1);
    if count > READ_AHEAD_KB_MAX {
        return Err(refuse(
            "read_ahead_kb",
            count,
            format!("out of range: 0 to {READ_AHEAD_KB_MAX}"),
        ));
    }
    if !count.is_multiple_of(page) {
        return Err(refuse(
            "read_ahead_kb",
            count,
            format!(
                "not a multiple of the page size ({page} KiB); the kernel would store {}",
                count - count % page
            ),
        ));
    }
    Ok(())
}

/// Does writing `value` to the queue setting `attr` ask the kernel for its
/// default (`wbt_lat_usec` -1, `max_sectors_kb` 0; kernel
/// Documentation/ABI/stable/sysfs-block)? Then it reads back as that
/// default, never as what was written.
pub fn asks_for_default(attr: &str, value: &str) -> bool {
    matches!(
        (attr, value.trim()),
        ("wbt_lat_usec", "-1") | ("max_sectors_kb", "0")
    )
}

/// One line on a value the kernel stored differently from what was written
/// (`kernel rounded read_expire 250 -> 252 ms`). `attr` is `nr_requests`,
/// `read_ahead_kb` or a tunable's name.
pub fn stored_note(attr: &str, wrote: &str, stored: &str) -> String {
    if let Some(k) = queue_knob(attr) {
        return match (attr, wrote) {
            _ if asks_for_default(attr, wrote) => {
                format!(
                    "kernel set {attr} to its default, {stored}{}",
                    k.unit.suffix()
                )
            }
            _ => format!(
                "kernel changed {attr} {wrote} -> {stored}{}",
                k.unit.suffix()
            ),
        };
    }
    let (verb, unit) = match attr {
        "read_ahead_kb" => ("rounded", " KiB"),
        "nr_requests" => ("raised", ""),
        _ => match tunable(attr) {
            Some(t) if t.unit == Unit::JiffiesMs => ("rounded", " ms"),
            Some(t) => ("changed", t.unit.suffix()),
            None => ("changed", ""),
        },
    };
    format!("kernel {verb} {attr} {wrote} -> {stored}{unit}")
}

/// Does the kernel keep `name` in jiffies? Then a value that is not a whole
/// number of ticks is rounded up ([`jiffies_rounded`]).
pub fn is_jiffies(name: &str) -> bool {
    tunable(name).is_some_and(|t| t.unit == Unit::JiffiesMs)
}

/// What a jiffies-backed tunable reads back after writing `ms` at `hz`:
/// `jiffies_to_msecs(msecs_to_jiffies(ms))`, i.e. up to a whole tick.
pub fn jiffies_rounded(ms: u64, hz: u64) -> u64 {
    let hz = hz.max(1);
    let jiffies = (ms * hz).div_ceil(1000);
    (jiffies * 1000).div_ceil(hz)
}

/// A queue setting next to the scheduler that an admin reaches for in a
/// latency incident (`queue/<name>`, `Documentation/ABI/stable/sysfs-block`,
/// `Documentation/block/queue-sysfs.rst`), with the range the kernel keeps
/// unchanged, a line of help, and why it is in the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueKnob {
    pub name: &'static str,
    pub unit: Unit,
    /// The smallest and largest values the kernel keeps as written (for
    /// `max_sectors_kb` the top is the device's own `max_hw_sectors_kb`,
    /// see [`check_knob`]).
    pub min: i128,
    pub max: i128,
    /// blktune may write it; the others are only shown.
    pub settable: bool,
    pub help: &'static str,
    /// What the kernel's documentation says it does to latency: why it is
    /// here (or why it is only shown).
    pub why: &'static str,
}

/// `wbt_lat_usec` is stored as nanoseconds in a u64 (`wbt_set_min_lat()`,
/// `block/blk-sysfs.c` multiplies by 1000): above this it wraps. Seen here:
/// 18446744073709551 reads back as written.
pub const WBT_LAT_USEC_MAX: i128 = u64::MAX as i128 / 1000;

/// The queue settings next to the scheduler, in the order a change writes
/// them (after the scheduler: a switch to bfq turns write-back throttling
/// off, `bfq_init_queue()` -> `wbt_disable_default()`, and a switch away
/// turns it back on, so a value written before the switch could be undone
/// by it; one written after stays, the kernel then keeps it as the user's).
/// Checked against Linux 6.18 by writing each bound to a loop device.
pub const QUEUE_KNOBS: &[QueueKnob] = &[
    QueueKnob {
        name: "wbt_lat_usec",
        unit: Unit::Us,
        min: -1,
        max: WBT_LAT_USEC_MAX,
        settable: true,
        help: "write throttling's read target, us; 0 off, -1 default",
        why: "sysfs-block: the read latency above which write-back throttling \
              scales back buffered writes; 0 disables it, -1 restores the default \
              (75000 on rotational disks, else 2000); bfq turns it off",
    },
    QueueKnob {
        name: "nomerges",
        unit: Unit::Count,
        min: 0,
        max: 2,
        settable: true,
        help: "0 all merges; 1 one-hit only; 2 none (saves CPU)",
        why: "sysfs-block: merge tries that always fail on random I/O cost kernel \
              cycles on every request; 3 and up store 1",
    },
    QueueKnob {
        name: "rq_affinity",
        unit: Unit::Count,
        min: 0,
        max: 2,
        settable: true,
        help: "completions: 0 any CPU, 1 submitter's group, 2 its CPU",
        why: "sysfs-block: where completions run: on the submitting CPU's group \
              for cache effects, or spread; 3 and up are ignored",
    },
    QueueKnob {
        name: "max_sectors_kb",
        unit: Unit::KiB,
        min: 0,
        max: u32::MAX as i128,
        settable: true,
        help: "largest request, KiB; 0 restores the kernel's default",
        why: "sysfs-block: the largest request the block layer builds; a read \
              queued behind a large one waits for all of it; at most \
              max_hw_sectors_kb, at least a page",
    },
    QueueKnob {
        name: "add_random",
        unit: Unit::Bool,
        min: 0,
        max: 1,
        settable: true,
        help: "1: every completion feeds the entropy pool",
        why: "sysfs-block: the disk's entropy contribution, work done on every \
              completion; 2 and up store 1",
    },
    QueueKnob {
        name: "iostats",
        unit: Unit::Bool,
        min: 0,
        max: 1,
        settable: false,
        help: "1: I/O accounting on (shown, never set)",
        why: "sysfs-block: 0 stops the disk's statistics: /proc/diskstats, which \
              every figure here (and iostat, sar, node_exporter) reads, would \
              freeze; its cost per I/O is small",
    },
    QueueKnob {
        name: "max_hw_sectors_kb",
        unit: Unit::KiB,
        min: 0,
        max: u32::MAX as i128,
        settable: false,
        help: "largest request the hardware takes, KiB (read-only)",
        why: "sysfs-block: the top of max_sectors_kb",
    },
];

/// The catalogue entry of queue setting `name`.
pub fn queue_knob(name: &str) -> Option<&'static QueueKnob> {
    QUEUE_KNOBS.iter().find(|k| k.name == name)
}

/// The queue settings blktune may write, in write order.
pub fn settable_knobs() -> impl Iterator<Item = &'static QueueKnob> {
    QUEUE_KNOBS.iter().filter(|k| k.settable)
}

/// What a queue setting does, in one line; empty for an unknown one.
pub fn knob_help(name: &str) -> &'static str {
    queue_knob(name).map_or("", |k| k.help)
}

/// Check a queue setting's value: a decimal integer in the catalogue's
/// range; `max_sectors_kb` also 0 (the kernel's default) or between a page
/// (`page_kb`) and the device's `max_hw_sectors_kb` when known (the kernel
/// refuses less, and stores its maximum for more). `Ok` is the text to write.
pub fn check_knob(
    name: &str,
    input: &str,
    max_hw_sectors_kb: Option<u64>,
    page_kb: u64,
) -> Result<String, ValueError> {
    let v = input.trim();
    let Some(k) = queue_knob(name) else {
        return Err(refuse(name, v, "not a queue setting blktune knows"));
    };
    if !k.settable {
        return Err(refuse(name, v, format!("shown only, never set: {}", k.why)));
    }
    if !is_integer_text(v) {
        return Err(refuse(name, v, "not an integer"));
    }
    let n: i128 = v.parse().map_err(|_| refuse(name, v, "not an integer"))?;
    let max = match (name, max_hw_sectors_kb) {
        ("max_sectors_kb", Some(hw)) => i128::from(hw),
        _ => k.max,
    };
    if !(k.min..=max).contains(&n) {
        return Err(refuse(
            name,
            v,
            format!("out of range: {} to {max}{}", k.min, k.unit.suffix()),
        ));
    }
    if name == "max_sectors_kb" && n != 0 && n < i128::from(page_kb.max(1)) {
        return Err(refuse(
            name,
            v,
            format!(
                "out of range: 0 (the default) or {} to {max} KiB",
                page_kb.max(1)
            ),
        ));
    }
    Ok(n.to_string())
}

/// The kernel's default of a queue setting on a device (`rotational`, when
/// known, and its scheduler), where it does not depend on the driver: write-back
/// throttling's target is 75 ms on rotational disks, 2 ms elsewhere
/// (`wbt_default_latency_nsec()`, `block/blk-wbt.c`), and off (0) under bfq;
/// `nomerges` 0, `rq_affinity` 1 (`QUEUE_FLAG_SAME_COMP` in blk-mq's
/// defaults). `None`: the driver's choice (`add_random`, `max_sectors_kb`).
pub fn knob_default(
    name: &str,
    rotational: Option<bool>,
    scheduler: Option<&str>,
) -> Option<&'static str> {
    match name {
        "wbt_lat_usec" if scheduler == Some("bfq") => Some("0"),
        "wbt_lat_usec" => Some(if rotational? { "75000" } else { "2000" }),
        "nomerges" => Some("0"),
        "rq_affinity" => Some("1"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_tunable_but_a_derived_one_has_a_default_in_range() {
        for (i, a) in TUNABLES.iter().enumerate() {
            assert!(
                TUNABLES[i + 1..].iter().all(|b| b.name != a.name),
                "{} twice",
                a.name
            );
            assert!(SCHEDULERS.contains(&a.scheduler));
            assert!(!a.help.is_empty() && a.min <= a.max, "{}", a.name);
            match a.default {
                Some(d) => assert_eq!(check_tunable(a.name, d).as_deref(), Ok(d), "{}", a.name),
                None => assert!(is_derived(a.name)),
            }
        }
        assert_eq!(known_tunables("kyber"), ["read_lat_nsec", "write_lat_nsec"]);
        assert!(known_tunables("none").is_empty());
        assert!(
            default_tunables("mq-deadline")
                .iter()
                .all(|(n, _)| *n != "async_depth")
        );
        assert_eq!(default_tunables("bfq").len(), 10);
    }

    /// What the kernel stored when each bound (and one past it) was written
    /// to a loop device on Linux 6.18 at HZ=250: every value inside the range
    /// reads back as written (or rounded to a tick), every value outside is
    /// one the kernel clamps, wraps or refuses.
    #[test]
    fn ranges_match_what_the_kernel_stored() {
        let seen: &[(&str, &str, &str)] = &[
            ("front_merges", "7", "1"),
            ("front_merges", "-1", "0"),
            ("read_expire", "-1", "0"),
            ("read_expire", "2147483647", "-2147483648"),
            ("fifo_batch", "-1", "0"),
            ("async_depth", "0", "1"),
            ("slice_idle", "4295", "0"),
            ("slice_idle", "9999999999999999999", "4293"),
            ("slice_idle_us", "4294968", "0"),
            ("fifo_expire_sync", "0", "1"),
            ("back_seek_max", "2147483648", "2147483647"),
            ("back_seek_penalty", "0", "1"),
            ("max_budget", "2147483648", "2147483647"),
            ("timeout_sync", "0", "4"),
            ("low_latency", "2", "1"),
            ("strict_guarantees", "2", "1"),
        ];
        for (name, wrote, stored) in seen {
            let e = check_tunable(name, wrote).expect_err(name);
            assert!(
                e.why.starts_with("out of range"),
                "{name}={wrote} (kernel: {stored}): {e}"
            );
        }
        let kept: &[(&str, &str)] = &[
            ("front_merges", "1"),
            ("slice_idle", "4294"),
            ("slice_idle_us", "4294967"),
            ("writes_starved", "-5"),
            ("read_lat_nsec", "18446744073709551615"),
            ("fifo_batch", "2147483647"),
            ("read_expire", "0"),
        ];
        for (name, v) in kept {
            assert_eq!(check_tunable(name, v).as_deref(), Ok(*v), "{name}");
        }
    }

    #[test]
    fn the_message_names_the_range_and_the_text_to_write_is_plain_decimal() {
        assert_eq!(
            check_tunable("front_merges", "7").unwrap_err().to_string(),
            "front_merges '7' is out of range: 0 to 1"
        );
        assert_eq!(
            check_tunable("slice_idle", "5000").unwrap_err().to_string(),
            "slice_idle '5000' is out of range: 0 to 4294 ms"
        );
        assert_eq!(check_tunable("read_expire", " 010 ").as_deref(), Ok("10"));
        for bad in ["", "-", "1e6", "0x10", "+1", "1.5", "123456789012345678901"] {
            assert!(check_tunable("read_expire", bad).is_err(), "{bad:?}");
        }
        // Unknown tunables (another scheduler): any 64-bit integer.
        assert_eq!(check_tunable("quantum", "-3").as_deref(), Ok("-3"));
        assert!(check_tunable("quantum", "99999999999999999999").is_err());
    }

    #[test]
    fn nr_requests_and_read_ahead_limits() {
        assert_eq!(nr_requests_max("none", Some(128)), 128);
        assert_eq!(nr_requests_max("none", Some(1)), NR_REQUESTS_MIN);
        assert_eq!(nr_requests_max("none", Some(100_000)), NR_REQUESTS_MAX);
        assert_eq!(nr_requests_max("none", None), NR_REQUESTS_MAX);
        assert_eq!(nr_requests_max("kyber", Some(128)), NR_REQUESTS_MAX);
        assert!(check_nr_requests(3, "kyber", None).is_err());
        assert!(check_nr_requests(2048, "kyber", Some(128)).is_ok());
        assert_eq!(
            check_nr_requests(129, "none", Some(128))
                .unwrap_err()
                .to_string(),
            "nr_requests '129' is out of range: 4 to 128 under none"
        );
        assert!(check_read_ahead_kb(4096, 4).is_ok());
        assert_eq!(
            check_read_ahead_kb(6, 4).unwrap_err().to_string(),
            "read_ahead_kb '6' is not a multiple of the page size (4 KiB); the kernel would store 4"
        );
        assert!(check_read_ahead_kb(READ_AHEAD_KB_MAX + 4, 4).is_err());
    }

    /// The jiffies defaults at each usual HZ, as the kernel shows them
    /// (the procfs capture's bfq disk on an HZ=1000 kernel reads 125).
    #[test]
    fn defaults_in_jiffies_follow_hz_and_the_others_do_not() {
        let at = |n, hz| default_at(n, hz).unwrap();
        assert_eq!(at("timeout_sync", 100), "120");
        assert_eq!(at("timeout_sync", 250), "124");
        assert_eq!(at("timeout_sync", 300), "124");
        assert_eq!(at("timeout_sync", 1000), "125");
        for hz in [100, 250, 300, 1000] {
            assert_eq!(at("read_expire", hz), "500");
            assert_eq!(at("write_expire", hz), "5000");
            assert_eq!(at("prio_aging_expire", hz), "10000");
            assert_eq!(at("fifo_batch", hz), "16");
            assert_eq!(at("fifo_expire_sync", hz), "125", "kept in ns");
        }
        assert_eq!(default_at("async_depth", 250), None, "derived");
        assert_eq!(default_at("quantum", 250), None, "not in the catalogue");
        // The catalogue's own value is HZ=250's.
        assert_eq!(tunable("timeout_sync").unwrap().default, Some("124"));
    }

    #[test]
    fn jiffies_rounding_and_notes() {
        assert_eq!(jiffies_rounded(250, 250), 252);
        assert_eq!(jiffies_rounded(1, 250), 4);
        assert_eq!(jiffies_rounded(500, 250), 500);
        assert_eq!(jiffies_rounded(250, 1000), 250);
        assert_eq!(jiffies_rounded(4999, 250), 5000);
        // The range's top survives every usual HZ without overflowing an int.
        for hz in [100, 250, 300, 1000] {
            assert!(
                jiffies_rounded(DD_JIFFIES_MAX as u64, hz) <= i32::MAX as u64,
                "{hz}"
            );
        }
        assert_eq!(
            stored_note("read_expire", "250", "252"),
            "kernel rounded read_expire 250 -> 252 ms"
        );
        assert_eq!(
            stored_note("nr_requests", "2", "4"),
            "kernel raised nr_requests 2 -> 4"
        );
    }
}

/// The queue settings next to the scheduler: their ranges as the kernel
/// keeps them (seen on a 6.18 loop device), defaults and notes.
#[cfg(test)]
mod knob_tests {
    use super::*;

    #[test]
    fn every_knob_has_help_a_reason_and_a_range() {
        for (i, k) in QUEUE_KNOBS.iter().enumerate() {
            assert!(
                !k.help.is_empty() && !k.why.is_empty() && k.min <= k.max,
                "{}",
                k.name
            );
            // The help column of the t list and the help overlay.
            assert!(k.help.chars().count() <= 56, "{}", k.name);
            assert!(QUEUE_KNOBS[i + 1..].iter().all(|o| o.name != k.name));
            assert!(tunable(k.name).is_none(), "{} is a tunable too", k.name);
        }
        let settable: Vec<&str> = settable_knobs().map(|k| k.name).collect();
        assert_eq!(
            settable,
            [
                "wbt_lat_usec",
                "nomerges",
                "rq_affinity",
                "max_sectors_kb",
                "add_random"
            ]
        );
    }

    /// What the kernel stored when each bound (and one past it) was
    /// written (6.18, loop device): inside the range as written, outside
    /// refused, clamped or ignored.
    #[test]
    fn ranges_match_what_the_kernel_stored() {
        let refused: &[(&str, &str, &str)] = &[
            ("wbt_lat_usec", "-2", "EINVAL"),
            ("wbt_lat_usec", "18446744073709552", "wraps"),
            ("nomerges", "3", "stores 1"),
            ("nomerges", "-1", "EINVAL"),
            ("rq_affinity", "3", "ignored"),
            ("add_random", "2", "stores 1"),
            ("max_sectors_kb", "3", "EINVAL: under a page"),
            ("max_sectors_kb", "1281", "stores 1280 (max_hw_sectors_kb)"),
        ];
        for (name, v, kernel) in refused {
            let e = check_knob(name, v, Some(1280), 4).expect_err(name);
            assert!(
                e.why.starts_with("out of range"),
                "{name}={v} ({kernel}): {e}"
            );
        }
        let kept: &[(&str, &str)] = &[
            ("wbt_lat_usec", "-1"),
            ("wbt_lat_usec", "0"),
            ("wbt_lat_usec", "18446744073709551"),
            ("nomerges", "2"),
            ("rq_affinity", "0"),
            ("max_sectors_kb", "0"),
            ("max_sectors_kb", "4"),
            ("max_sectors_kb", "1280"),
            ("add_random", "1"),
        ];
        for (name, v) in kept {
            assert_eq!(
                check_knob(name, v, Some(1280), 4).as_deref(),
                Ok(*v),
                "{name}"
            );
        }
        // Plain decimal out, whitespace and leading zeros gone.
        assert_eq!(
            check_knob("wbt_lat_usec", " 075000 ", None, 4).as_deref(),
            Ok("75000")
        );
        assert_eq!(
            check_knob("iostats", "0", None, 4)
                .unwrap_err()
                .why
                .split(':')
                .next(),
            Some("shown only, never set")
        );
        assert!(check_knob("scheduler", "1", None, 4).is_err());
        assert!(check_knob("nomerges", "1e3", None, 4).is_err());
        assert_eq!(
            check_knob("max_sectors_kb", "9999", Some(1280), 4)
                .unwrap_err()
                .to_string(),
            "max_sectors_kb '9999' is out of range: 0 to 1280 KiB"
        );
    }

    #[test]
    fn defaults_follow_the_disk_and_the_scheduler() {
        assert_eq!(
            knob_default("wbt_lat_usec", Some(false), Some("none")),
            Some("2000")
        );
        assert_eq!(
            knob_default("wbt_lat_usec", Some(true), Some("mq-deadline")),
            Some("75000")
        );
        assert_eq!(knob_default("wbt_lat_usec", None, Some("bfq")), Some("0"));
        assert_eq!(knob_default("wbt_lat_usec", None, Some("none")), None);
        assert_eq!(knob_default("rq_affinity", None, None), Some("1"));
        assert_eq!(knob_default("add_random", Some(false), None), None);
        assert_eq!(knob_default("max_sectors_kb", Some(false), None), None);
    }

    #[test]
    fn a_default_asked_for_is_said_as_such() {
        assert_eq!(
            stored_note("wbt_lat_usec", "-1", "2000"),
            "kernel set wbt_lat_usec to its default, 2000 us"
        );
        assert_eq!(
            stored_note("max_sectors_kb", "0", "1280"),
            "kernel set max_sectors_kb to its default, 1280 KiB"
        );
        assert_eq!(
            stored_note("nomerges", "3", "1"),
            "kernel changed nomerges 3 -> 1"
        );
    }
}
