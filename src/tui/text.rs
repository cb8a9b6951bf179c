//! One-line descriptions of the schedulers and their tunables, for the picker,
//! the tunables editor and the help overlay. Sources: the kernel's
//! `Documentation/block/deadline-iosched.rst`, `kyber-iosched.rst` and
//! `bfq-iosched.rst`.

/// What a scheduler is for, in one line (fits the 80-column picker).
pub fn scheduler_help(name: &str) -> &'static str {
    match name {
        "none" => "no reordering; fast NVMe, or storage that schedules itself",
        "mq-deadline" => "read/write FIFOs with expiry, prefers reads; safe default",
        "kyber" => "token-based, aims at target read/write latencies; fast flash",
        "bfq" => "fair per-process budgets, interactive; slow disks, CPU cost",
        _ => "not described by blktune",
    }
}

/// What a tunable does, in one line.
pub fn tunable_help(name: &str) -> &'static str {
    match name {
        // mq-deadline
        "read_expire" => "deadline of a read, ms (500)",
        "write_expire" => "deadline of a write, ms (5000)",
        "fifo_batch" => "requests per batch before deadlines are checked (16)",
        "writes_starved" => "read batches allowed before a write batch (2)",
        "front_merges" => "1: try front merges; 0: skip that check",
        "async_depth" => "request slots async I/O may use (caps writes/readahead)",
        "prio_aging_expire" => "ms before a lower-priority request is served anyway",
        // kyber
        "read_lat_nsec" => "target latency of reads, ns (2 ms)",
        "write_lat_nsec" => "target latency of sync writes, ns (10 ms)",
        // bfq
        "slice_idle" => "ms to wait for more I/O of an emptied sync queue (8)",
        "slice_idle_us" => "slice_idle in microseconds",
        "low_latency" => "1: boost interactive and soft real-time tasks",
        "strict_guarantees" => "1: idle more to keep bandwidth shares exact",
        "timeout_sync" => "ms a sync queue may use its budget (124)",
        "max_budget" => "max sectors served per budget; 0 = auto-tuned",
        "back_seek_max" => "max backward seek still served, KiB (16384)",
        "back_seek_penalty" => "cost factor of a backward seek (2)",
        "fifo_expire_async" => "deadline of async requests, ms (250)",
        "fifo_expire_sync" => "deadline of sync requests, ms (125)",
        _ => "",
    }
}

/// Tunables that only take 0 or 1.
pub fn is_boolean_tunable(name: &str) -> bool {
    matches!(name, "front_merges" | "low_latency" | "strict_guarantees")
}

/// Schedulers the help overlay describes.
pub const SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];
