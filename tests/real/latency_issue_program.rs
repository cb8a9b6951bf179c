//! The issue program runs only where it has work: on a queue that times its
//! issues itself (most: write throttling turns the kernel's statistics on)
//! each I/O runs the completion program alone; a completion without an
//! issue time attaches the issue program at the next read (issue 14's cost
//! per I/O).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::latency::{DevId, Dir, Intervals, IssueProgram, Span, Tracer};
use common::{TestLoop, require_root, require_tool};
use std::process::Command;

/// The test's own loop device ([`TestLoop`]: scheduler `none`, detached on
/// drop) and its device numbers.
struct OwnLoop {
    lo: TestLoop,
    dev: DevId,
}

impl OwnLoop {
    fn new() -> Self {
        let lo = TestLoop::new(16);
        let dev = std::fs::read_to_string(format!("/sys/block/{}/dev", lo.name())).unwrap();
        let (major, minor) = dev.trim().split_once(':').unwrap();
        let dev = DevId {
            major: major.parse().unwrap(),
            minor: minor.parse().unwrap(),
        };
        Self { lo, dev }
    }

    /// `dd` on the device with these operands.
    fn dd(&self, args: &[&str]) {
        let st = Command::new("dd")
            .args(args)
            .args(["bs=4k", "status=none"])
            .status()
            .expect("dd");
        assert!(st.success(), "dd {args:?}");
    }

    /// One direct 4 KiB write and an fsync of the device: with a write
    /// cache (a loop device over a file has one), an empty flush request,
    /// which the kernel completes without issuing it (it issues a flush
    /// request of its own).
    fn write_and_flush(&self) {
        let of = format!("of=/dev/{}", self.lo.name());
        self.dd(&[
            &of,
            "if=/dev/zero",
            "count=1",
            "oflag=direct",
            "conv=fsync,notrunc",
        ]);
    }

    /// `n` direct 4 KiB reads, one at a time.
    fn read(&self, n: u32) {
        let input = format!("if=/dev/{}", self.lo.name());
        self.dd(&[
            &input,
            "of=/dev/null",
            "iflag=direct",
            &format!("count={n}"),
        ]);
    }
}

/// This process's descriptors whose `/proc/self/fdinfo` has `line`.
fn descriptors_with(line: &str) -> usize {
    std::fs::read_dir("/proc/self/fdinfo")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .filter(|t| t.contains(line))
        .count()
}

/// This process's BPF links on tracepoints: one per attached program.
fn tracepoint_links() -> usize {
    descriptors_with("link_type:\traw_tracepoint")
}

/// BPF programs this process holds (the loader's feature probes are
/// closed once made).
fn loaded_programs() -> usize {
    descriptors_with("prog_type:")
}

/// Reads of `dev` in `span` of an interval.
fn reads(i: &blktune_core::latency::Interval, dev: DevId, span: Span) -> u64 {
    i.summary(dev, None).get(span, Dir::Read).map_or(0, |p| p.n)
}

/// Both cases in one test: the links are counted per process, and two
/// tracers at once would count each other's.
#[test]
fn the_issue_program_runs_only_once_a_completion_lacks_an_issue_time() {
    // It counts the BPF programs and links its own process holds.
    if !common::in_own_process(
        module_path!(),
        "the_issue_program_runs_only_once_a_completion_lacks_an_issue_time",
    ) {
        return;
    }
    let t = "the_issue_program_runs_only_once_a_completion_lacks_an_issue_time";
    if !require_root(t) || !require_tool(t, "losetup") || !require_tool(t, "dd") {
        return;
    }
    let own = OwnLoop::new();
    where_the_kernel_times_every_issue_only_the_completion_program_runs(&own);
    assert_eq!(tracepoint_links(), 0, "a dropped tracer leaves no link");
    a_completion_without_an_issue_time_attaches_the_issue_program(&own);
    assert_eq!(tracepoint_links(), 0, "a dropped tracer leaves no link");
    a_shoot_outs_dwell_begins_with_the_issue_program_attached(&own);
    assert_eq!(tracepoint_links(), 0, "a dropped tracer leaves no link");
    a_detached_completion_program_times_nothing_until_attached_again(&own);
    assert_eq!(tracepoint_links(), 0, "a dropped tracer leaves no link");
}

/// The switch `benches/latency/overhead.sh` measures the program's cost
/// with (through `examples/latency_toggle.rs`): detached, the completion
/// program has no link and times no I/O; attached again, it times them
/// all; asking for the state it is in changes nothing.
fn a_detached_completion_program_times_nothing_until_attached_again(own: &OwnLoop) {
    let mut tracer = Tracer::start(false, true).expect("loads as root");
    let mut intervals = Intervals::new();
    intervals.next(tracer.read().expect("read"));
    tracer.set_completions(false).expect("detaches");
    assert_eq!(tracepoint_links(), 0, "detached");
    tracer
        .set_completions(false)
        .expect("already detached: nothing to do");
    own.read(100);
    let i = intervals.next(tracer.read().expect("read")).unwrap();
    assert_eq!(
        reads(&i, own.dev, Span::Total),
        0,
        "not timed while detached"
    );
    tracer.set_completions(true).expect("attaches");
    tracer
        .set_completions(true)
        .expect("already attached: nothing to do");
    assert_eq!(tracepoint_links(), 1, "one link again, not two");
    own.read(100);
    let i = intervals.next(tracer.read().expect("read")).unwrap();
    let total = reads(&i, own.dev, Span::Total);
    assert!(total >= 95, "{total} of 100 reads, {} lost", i.lost);
}

fn where_the_kernel_times_every_issue_only_the_completion_program_runs(own: &OwnLoop) {
    let mut tracer = Tracer::start(false, true).expect("the BPF program loads as root");
    assert!(
        tracer.kernel_issue_times(),
        "this kernel's BTF names QUEUE_FLAG_STATS and __RQF_STATS"
    );
    let mut intervals = Intervals::new();
    intervals.next(tracer.read().expect("read"));
    own.read(300);
    // A flush completed without an issue of its own needs no issue program.
    own.write_and_flush();
    let i = intervals.next(tracer.read().expect("read")).unwrap();
    // The kernel timed every issue: each read has both spans.
    assert!(reads(&i, own.dev, Span::Total) >= 290, "{}", i.lost);
    assert_eq!(
        reads(&i, own.dev, Span::Device),
        reads(&i, own.dev, Span::Total)
    );
    // Every block queue on this machine keeps statistics (write throttling
    // turns them on), so no completion anywhere asked for the issue program.
    assert_eq!(tracer.issue_program(), &IssueProgram::Waiting);
    assert_eq!(tracepoint_links(), 1, "only block_rq_complete's program");
    assert_eq!(
        loaded_programs(),
        1,
        "the issue program is not even loaded (verified) while it waits"
    );
}

fn a_completion_without_an_issue_time_attaches_the_issue_program(own: &OwnLoop) {
    // As on a queue without statistics: the program must time every issue,
    // and its issue program waits until a completion shows it is needed.
    let mut tracer = Tracer::start_timing_every_issue_lazily(false, true).expect("loads as root");
    assert_eq!(tracer.issue_program(), &IssueProgram::Waiting);
    assert_eq!(tracepoint_links(), 1);
    let mut intervals = Intervals::new();
    // Any completion on the machine since the load (another process's I/O)
    // has no issue time either: then this first read attaches already.
    intervals.next(tracer.read().expect("read"));
    let waited = tracer.issue_program() == &IssueProgram::Waiting;
    own.read(300);
    let i = intervals.next(tracer.read().expect("read")).unwrap();
    assert_eq!(tracer.issue_program(), &IssueProgram::Attached);
    assert_eq!(tracepoint_links(), 2);
    assert_eq!(loaded_programs(), 2, "loaded when it was attached");
    assert!(reads(&i, own.dev, Span::Total) >= 290, "{}", i.lost);
    if waited {
        // Issued before the attach: in the total span, not the device's.
        assert_eq!(reads(&i, own.dev, Span::Device), 0);
    }
    // From the next interval on, every read has its device span.
    own.read(200);
    let i = intervals.next(tracer.read().expect("read")).unwrap();
    let total = reads(&i, own.dev, Span::Total);
    assert!(total >= 190, "{total} of 200, {} lost", i.lost);
    assert_eq!(reads(&i, own.dev, Span::Device), total);
}

/// A dwell whose I/O began only once it had: its device span counts every
/// read all the same (the issue program is attached as the dwell begins,
/// not at its end, the first read to find a completion without an issue
/// time), and it is detached when the shoot-out ends.
fn a_shoot_outs_dwell_begins_with_the_issue_program_attached(own: &OwnLoop) {
    use blktune_core::shootout::{self, Config, Tracing};
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};
    let tracer = Tracer::start_timing_every_issue_lazily(false, true).expect("loads as root");
    let tracer = Arc::new(Mutex::new(tracer));
    let cfg = Config {
        schedulers: vec!["none".into()],
        length: shootout::Length::Rounds(1),
        settle: std::time::Duration::ZERO,
        dwell: std::time::Duration::from_millis(1500),
        ..Config::passive(own.lo.name())
    };
    let root = blktune_core::os::SysRoot::default();
    let cancel = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        // The device's I/O starts well inside the dwell.
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(500));
            own.read(300);
        });
        shootout::run_traced(
            &root,
            None,
            &cfg,
            Tracing::Shared(Arc::clone(&tracer)),
            |_| {},
            &cancel,
        )
        .expect("the shoot-out runs")
    });
    // Detached again when the shoot-out ended: a shared tracer's every
    // I/O does not pay for it afterwards.
    assert_eq!(
        tracer.lock().unwrap().issue_program(),
        &IssueProgram::Waiting
    );
    assert_eq!(tracepoint_links(), 1, "only block_rq_complete's program");
    let k = result.measurements[0].kernel.expect("traced");
    let n = |l: Option<blktune_core::latency::IoLatency>| l.map_or(0, |l| l.n);
    let total = n(k.reads);
    assert!(total >= 290, "{total} of 300 reads in the dwell");
    assert_eq!(n(k.dev_reads), total, "the device span of every read");
    assert_eq!(own.lo.active_scheduler(), "none", "restored");
}
