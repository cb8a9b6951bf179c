//! The tracer's decisions and its maps' decoding, without the kernel.
use super::super::hist::VALUE_LEN;
use super::super::{DevId, Dir, map_id};
use super::*;

#[test]
fn a_failed_issue_program_is_named_with_the_fields_it_empties() {
    let n = no_device_span_note("block_rq_issue: EPERM\x1b[2J");
    assert!(
        n.starts_with("no device span (r_dev_p99, w_dev_p99) "),
        "{n}"
    );
    assert!(n.contains("block_rq_issue: EPERM"), "{n}");
    assert!(!n.contains('\x1b'), "{n}");
}

#[test]
fn a_waiting_issue_program_is_attached_once_needed_and_a_failure_is_said_once() {
    let never = || -> Result<(), String> { panic!("attached when not needed") };
    let w = IssueProgram::Waiting;
    assert_eq!(next_issue_program(&w, || false, never), None);
    assert_eq!(
        next_issue_program(&w, || true, || Ok(())),
        Some(IssueProgram::Attached)
    );
    let failed = next_issue_program(&w, || true, || Err("EPERM".into())).unwrap();
    assert_eq!(failed, IssueProgram::Failed("EPERM".into()));
    // Attached or failed: not looked at again, never retried.
    let unasked = || -> bool { panic!("asked again") };
    assert_eq!(next_issue_program(&failed, unasked, never), None);
    assert_eq!(
        next_issue_program(&IssueProgram::Attached, unasked, never),
        None
    );

    let mut taken = false;
    assert_eq!(take_failure(&w, &mut taken), None);
    assert_eq!(take_failure(&failed, &mut taken), Some("EPERM".into()));
    assert_eq!(take_failure(&failed, &mut taken), None);
}

#[test]
fn the_issue_program_is_attached_at_start_only_when_the_program_keeps_every_issue_time() {
    let found = (1 << 3, 1 << 20);
    assert!(!attach_issue_at_start(Issues::Kernel, &found));
    // The kernel's flags not found: the program times every issue.
    assert!(attach_issue_at_start(Issues::Kernel, &(0, 0)));
    assert!(attach_issue_at_start(Issues::Program, &(0, 0)));
    assert!(!attach_issue_at_start(Issues::ProgramLazily, &(0, 0)));
}

/// Both flags or neither: a bit out of range (a hostile or odd BTF) or
/// one missing leaves the program keeping every issue time itself.
#[test]
fn stats_masks_are_both_or_neither() {
    assert_eq!(stats_masks(&[Some(7), Some(11)]), (1 << 7, 1 << 11));
    assert_eq!(stats_masks(&[Some(63), Some(31)]), (1 << 63, 1 << 31));
    for bad in [
        [None, Some(11)],
        [Some(7), None],
        [Some(64), Some(11)],
        [Some(7), Some(32)],
        [Some(-1), Some(11)],
    ] {
        assert_eq!(stats_masks(&bad), (0, 0), "{bad:?}");
    }
    assert_eq!(stats_masks(&[]), (0, 0));
}

#[test]
fn prechecks_give_the_first_reason() {
    assert_eq!(
        precheck(true, false, false, false, None),
        Err(Unavailable::Disabled)
    );
    assert_eq!(
        precheck(false, false, true, true, None),
        Err(Unavailable::NotLive)
    );
    assert_eq!(
        precheck(false, true, false, true, None),
        Err(Unavailable::NotRoot)
    );
    assert_eq!(
        precheck(false, true, true, false, None),
        Err(Unavailable::NoBtf)
    );
    assert_eq!(
        precheck(
            false,
            true,
            true,
            true,
            Some("none integrity [confidentiality]\n")
        ),
        Err(Unavailable::Lockdown("confidentiality".into()))
    );
    assert_eq!(
        precheck(
            false,
            true,
            true,
            true,
            Some("[none] integrity confidentiality")
        ),
        Ok(())
    );
    assert_eq!(precheck(false, true, true, true, None), Ok(()));
    assert_eq!(Unavailable::NotRoot.to_string(), "needs root");
}

#[test]
fn an_older_diskseq_is_dropped_and_reported_stale() {
    let dev = DevId { major: 7, minor: 3 };
    let mut old = Hist::empty();
    old.record(5_000_000);
    let mut new = Hist::empty();
    new.record(1_000);
    let r = map_id(dev, Dir::Read);
    let w = map_id(dev, Dir::Write);
    let (readings, stale) = group(vec![
        ([r, 4], Span::Total, old.clone()),
        ([r, 4], Span::Device, old.clone()),
        ([w, 4], Span::Device, old),
        ([r, 9], Span::Total, new.clone()),
        ([u64::MAX, 9], Span::Total, new.clone()),
    ]);
    assert_eq!(stale, vec![[r, 4], [w, 4]]);
    let d = &readings[&dev];
    assert_eq!(d.diskseq, 9);
    assert_eq!(d.hists.len(), 1);
    assert_eq!(d.hists[&(Span::Total, Dir::Read)], new);
}

#[test]
fn a_disks_entries_in_both_maps_are_added_up_sum_modulo_2_64() {
    let dev = DevId { major: 7, minor: 3 };
    let r = map_id(dev, Dir::Read);
    let (mut fast, mut hash) = (Hist::empty(), Hist::empty());
    fast.record(u64::MAX - 10);
    fast.record(1_000);
    hash.record(2_000);
    let (readings, stale) = group(vec![
        ([r, 4], Span::Total, fast.clone()),
        ([r, 4], Span::Total, hash.clone()),
    ]);
    assert!(stale.is_empty());
    let h = &readings[&dev].hists[&(Span::Total, Dir::Read)];
    assert_eq!(h.count(), 3);
    assert_eq!(h.sum_ns(), (u64::MAX - 10).wrapping_add(3_000));
    // So an interval's difference stays exact across the wrap.
    let mut later = h.clone();
    later.record(500);
    assert_eq!(later.since(h).unwrap().sum_ns(), 500);
}

#[test]
fn only_owned_slots_with_a_diskseq_and_not_gone_are_read() {
    let mut owners = [0u64; 2 * FAST_SLOTS];
    let id = map_id(DevId { major: 7, minor: 3 }, Dir::Write);
    // Slot 0: owned, diskseq set. Slot 1: owned, diskseq not yet set.
    // Slot 5: owned, gone. Slot 63: owned. The rest: free.
    for (slot, seq) in [(0, 4), (1, 0), (5, 6), (63, 7)] {
        owners[2 * slot] = id | FAST_OWNED;
        owners[2 * slot + 1] = seq;
    }
    let got: Vec<_> = fast_slots(&owners, 1 << 5).collect();
    assert_eq!(got, vec![(0, [id, 4]), (63, [id, 7])]);
}

#[test]
fn the_fast_arrays_sizes_are_the_programs() {
    let define = super::super::bpf_define;
    let queues: usize = define("FAST_QUEUES").parse().unwrap();
    assert_eq!(define("FAST_SLOTS"), "(FAST_QUEUES * 2)");
    assert_eq!(queues * 2, FAST_SLOTS);
    assert_eq!(define("FAST_OWNED"), "(1ULL << 63)");
    assert_eq!(FAST_OWNED, 1 << 63);
}

/// A map value is the total span's histogram, then the device span's;
/// a span without I/O is left out.
#[test]
fn a_map_value_holds_both_spans() {
    let mut value = Box::new([0u64; SPANS_LEN]);
    let (mut total, mut device) = (Hist::empty(), Hist::empty());
    total.record(3_000_000);
    total.record(4_000_000);
    device.record(2_000_000);
    let total_value: Vec<u64> = total
        .slots()
        .iter()
        .copied()
        .chain([total.sum_ns()])
        .collect();
    let device_value: Vec<u64> = device
        .slots()
        .iter()
        .copied()
        .chain([device.sum_ns()])
        .collect();
    value[..VALUE_LEN].copy_from_slice(&total_value);
    value[VALUE_LEN..].copy_from_slice(&device_value);
    let spans: Vec<(Span, Hist)> = split_value(&value).collect();
    assert_eq!(
        spans,
        vec![(Span::Total, total), (Span::Device, device.clone())]
    );

    // No total span (a queue without statistics): only the device's.
    value[..VALUE_LEN].fill(0);
    let spans: Vec<(Span, Hist)> = split_value(&value).collect();
    assert_eq!(spans, vec![(Span::Device, device)]);
    value[VALUE_LEN..].fill(0);
    assert_eq!(split_value(&value).count(), 0);
}

/// A BPF program's `fdinfo` as Linux 6.x writes it: the skipped runs
/// are read; a field that is missing (before 5.12) or not a number is
/// none.
#[test]
fn recursion_misses_are_read_from_the_programs_fdinfo() {
    let info = "pos:\t0\nflags:\t02000002\nmnt_id:\t16\nino:\t1060\n\
                prog_type:\t26\nprog_jited:\t1\nprog_tag:\t0123456789abcdef\n\
                memlock:\t4096\nprog_id:\t42\nrun_time_ns:\t0\nrun_cnt:\t0\n\
                recursion_misses:\t17\nverified_insns:\t120\n";
    assert_eq!(fdinfo_field(info, "recursion_misses"), Some(17));
    assert_eq!(fdinfo_field(info, "prog_id"), Some(42));
    assert_eq!(
        fdinfo_field("pos:\t0\nrun_cnt:\t5\n", "recursion_misses"),
        None
    );
    assert_eq!(
        fdinfo_field("recursion_misses:\tmany\n", "recursion_misses"),
        None
    );
    assert_eq!(
        fdinfo_field("recursion_misses_x:\t3\n", "recursion_misses"),
        None
    );
}

/// The CPUs' lost counts are added modulo 2^64, as their differences are taken.
#[test]
fn lost_counts_are_summed_over_the_cpus() {
    assert_eq!(sum_cpus(&[]), 0);
    assert_eq!(sum_cpus(&[3, 0, 4]), 7);
    assert_eq!(sum_cpus(&[u64::MAX, 2]), 1);
}

/// The embedded object is the committed one and parses.
#[test]
fn the_object_is_embedded_and_aligned() {
    assert!(OBJECT.0.starts_with(b"\x7fELF"));
    assert_eq!(OBJECT.0.as_ptr() as usize % 8, 0);
}
