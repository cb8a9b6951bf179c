//! `p` pauses the display only (issue 16, item 8): no control reaches the
//! worker, the screen stays as it was, and on resume everything sampled
//! meanwhile is in the history: the charts have no gap.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::tui_fixture;
use tui_fixture::*;

#[test]
fn pause_freezes_the_display_and_resume_shows_what_happened_meanwhile() {
    let mut m = Machine::three();
    let mut app = m.app(None);
    m.run(&mut app, 10, &busy(4));
    let ctl = press(&mut app, &chars("p"));
    assert!(
        ctl.is_empty(),
        "sampling goes on: nothing sent to the worker: {ctl:?}"
    );
    assert!(app.paused);
    let frozen = text(&screen(&app, 80, 24));
    assert!(frozen.contains("PAUSED"), "{frozen}");
    let footer = frozen.lines().last().unwrap();
    assert!(
        footer.contains("p resume") && !footer.contains("pause"),
        "{footer}"
    );
    let points = app.histories["sda"].points().len();
    // The worker samples on: 20 intervals with a much slower disk.
    m.run(&mut app, 20, &busy(40));
    assert_eq!(
        app.histories["sda"].points().len(),
        points,
        "display frozen"
    );
    assert_eq!(
        text(&screen(&app, 80, 24)),
        frozen,
        "the screen does not move"
    );
    press(&mut app, &chars("p"));
    assert!(!app.paused);
    let footer = text(&screen(&app, 80, 24));
    assert!(
        footer.lines().last().unwrap().contains("p pause"),
        "{footer}"
    );
    let pts = app.histories["sda"].points();
    assert_eq!(pts.len(), points + 20, "every held sample is taken in");
    // No gap: each interval starts where the one before ended.
    for w in pts.iter().collect::<Vec<_>>().windows(2) {
        assert!(
            (w[1].start() - w[0].t).abs() < 1e-6,
            "gap: {} → {}",
            w[0].t,
            w[1].t
        );
    }
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("40.0"),
        "the slow intervals show after resume:\n{s}"
    );
    assert!(s.contains("20 samples taken while paused"), "{s}");
}
