//! `blktune demo`'s guided hint, drawn on the banner row of the TUI: what
//! to press first, and where to look once the switch is made.

use super::app::App;

/// The hint line for the demo device, or `None` outside a demo.
pub fn hint(app: &App) -> Option<String> {
    let dev = app.demo.as_deref()?;
    let switched = app.marks.get(dev).is_some_and(|m| !m.is_empty());
    if switched {
        return Some(format!(
            "DEMO {dev}: see the before/after panel (r_await, r_p99); u undoes, q ends the demo"
        ));
    }
    let active = app
        .devices
        .iter()
        .find(|d| d.name == dev)
        .map(|d| d.queue.active_label().to_string());
    // Measured on a loop device under this load (16 random 4 KiB readers
    // beside 4 unthrottled 1 MiB writers, direct I/O; three recordings by
    // assets/make-demo.sh): mq-deadline -> kyber cut read await by 25% to
    // 84% (the machine's state decides how much); kyber -> bfq starved the
    // reads every time (read await 60-80x, p99 over 100 ms). So the hint
    // promises a direction for kyber and the starvation for bfq.
    Some(if active.as_deref() == Some("kyber") {
        format!("DEMO {dev}: press s, pick bfq: reads starve behind the writes (r_await, r_p99)")
    } else {
        format!("DEMO {dev}: press s, pick kyber: reads get faster (r_await, r_p99); then bfq")
    })
}
