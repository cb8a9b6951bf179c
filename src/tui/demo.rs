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
    // Measured on a loop device under this load (random 4 KiB reads beside
    // an unthrottled 1 MiB writer, direct I/O): kyber's read-latency target
    // keeps the reads ahead of the writes, read await and p99 fall 3 to 5
    // times against none or mq-deadline; with a throttled writer there is
    // nothing to see.
    Some(if active.as_deref() == Some("kyber") {
        format!("DEMO {dev}: press s, pick mq-deadline: reads wait 3-5x longer (r_await, r_p99)")
    } else {
        format!("DEMO {dev}: press s, pick kyber: reads wait 3-5x less (r_await, r_p99)")
    })
}
