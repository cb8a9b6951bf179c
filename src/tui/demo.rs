//! `blktune demo`'s guided hint, drawn on the banner row of the TUI: what
//! to press first, and where to look once the switch is made.

use super::app::App;

/// The hint line for the demo device, or `None` outside a demo.
pub fn hint(app: &App) -> Option<String> {
    let dev = app.demo.as_deref()?;
    let switched = app.marks.get(dev).is_some_and(|m| !m.is_empty());
    if switched {
        return Some(format!(
            "DEMO {dev}: see the before/after panel; u undoes, q ends the demo"
        ));
    }
    let active = app
        .devices
        .iter()
        .find(|d| d.name == dev)
        .map(|d| d.queue.active_label().to_string());
    let pick = if active.as_deref() == Some("kyber") {
        "mq-deadline"
    } else {
        "kyber"
    };
    Some(format!(
        "DEMO {dev}: press s and pick {pick}, watch r_await"
    ))
}
