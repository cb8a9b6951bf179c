//! `set` and `revert` on a real loop device this test creates (root only).
mod common;
use common::*;

#[test]
fn set_switches_scheduler_and_orders_nr_requests_after_it() {
    if !require_root("set_switches_scheduler_and_orders_nr_requests_after_it") {
        return;
    }
    let lo = TestLoop::new(64);
    let j = tempfile::tempdir().unwrap();
    let orig_sched = lo.active_scheduler();
    let orig_nr = lo.queue("nr_requests");
    let o = blktune(
        &[
            "set",
            lo.name(),
            "--scheduler",
            "kyber",
            "--nr-requests",
            "64",
        ],
        j.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lo.active_scheduler(), "kyber");
    assert_eq!(
        lo.queue("nr_requests"),
        "64",
        "nr_requests must be written after the switch"
    );
    assert!(
        stdout(&o).contains(&format!("scheduler    {orig_sched} -> kyber")),
        "{}",
        stdout(&o)
    );
    let o = blktune(&["revert", lo.name()], j.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lo.active_scheduler(), orig_sched);
    assert_eq!(lo.queue("nr_requests"), orig_nr);
}
