//! End to end: the nr_requests editor and the scheduler picker of the real
//! binary in tmux (80x24) on a loop device this test creates, against the
//! kernel's limit under `none` (the hardware queue depth). Root only; skips
//! otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::Tmux;
use common::*;

const PROMPT: &str = "edit$";

/// Wait until sysfs of our loop device says `want` for `attr`.
fn wait_attr(lo: &TestLoop, tmux: &Tmux, attr: &str, want: &str) {
    let read = || {
        if attr == "scheduler" {
            lo.active_scheduler()
        } else {
            lo.queue(attr)
        }
    };
    assert!(
        wait_until(TIMEOUT, || read() == want),
        "sysfs {attr} never said {want} (is {}); screen:\n{}",
        read(),
        tmux.capture()
    );
}

/// Clear the editor's input and type `value`.
fn retype(tmux: &Tmux, value: &str) {
    tmux.keys(&["BSpace"; 6]);
    tmux.literal(value);
}

#[test]
fn nr_requests_above_the_hardware_depth_is_refused_in_the_editor_and_a_switch_to_none_lowers_it() {
    let name = "nr_requests_above_the_hardware_depth_is_refused_in_the_editor_and_a_switch_to_none_lowers_it";
    if !require_root(name) || !require_tool(name, "tmux") {
        return;
    }
    // TestLoop starts it on none with nr_requests 128.
    let lo = TestLoop::new(32);
    let dev = lo.name().to_string();
    let depth: u64 = std::fs::read_to_string(format!("/sys/block/{dev}/mq/0/nr_tags"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(lo.active_scheduler(), "none");
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("journal");
    let t = Tmux::shell(PROMPT, 80, 24);
    t.line(&format!(
        "env BLKTUNE_JOURNAL_DIR={} {} --device {dev} --interval 250ms",
        journal.display(),
        common::tmux::blktune_bin()
    ));
    t.wait("the TUI with the loop device", |s| {
        s.contains("every 250ms") && s.contains(&format!("▶{dev} "))
    });

    // Under none: one above the depth is refused while typing, and on Enter.
    let too_many = (depth + 1).to_string();
    t.keys(&["n"]);
    t.wait("the editor", |s| {
        s.contains(&format!("nr_requests of {dev}"))
    });
    retype(&t, &too_many);
    let hint = format!("4 to {depth} under none (hardware queue depth)");
    t.wait("the hint and the refusal", |s| {
        s.contains(&hint)
            && s.contains(&format!(
                "✗ nr_requests '{too_many}' is out of range: 4 to {depth} under none"
            ))
    });
    t.keys(&["Enter"]);
    // The status line wraps at 80 columns: join its rows.
    t.wait("the status", |s| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("under none; nothing was changed")
    });
    assert_eq!(lo.queue("nr_requests"), depth.to_string());
    assert!(
        !journal.exists() || std::fs::read_dir(&journal).unwrap().count() == 0,
        "nothing was journalled"
    );
    t.keys(&["Escape"]);
    // Until the editor is gone, an `s` would be glued to the Esc (one read
    // under load): taken as Esc only, and the picker would never open.
    t.wait("the editor closed", |s| {
        !s.contains(&format!("nr_requests of {dev}"))
    });

    // Under kyber the same value is fine (scheduler tags, up to 2048).
    t.keys(&["s"]);
    t.wait("the picker", |s| s.contains(&format!("scheduler of {dev}")));
    // none, mq-deadline, kyber, bfq: kyber is two down from none.
    t.keys(&["Down", "Down"]);
    t.wait("kyber under the cursor", |s| s.contains("▶   kyber"));
    t.keys(&["Enter"]);
    wait_attr(&lo, &t, "scheduler", "kyber");
    // Until its answer arrives a change is pending and n would say "busy".
    t.wait("the status of the switch", |s| {
        s.contains(&format!("{dev}: none→kyber")) && s.contains("(kernel")
    });
    let many = (depth * 4).to_string();
    t.keys(&["n"]);
    t.wait("the editor", |s| {
        s.contains(&format!("nr_requests of {dev}"))
    });
    retype(&t, &many);
    t.wait("the value accepted", |s| {
        s.contains("✓ valid") && s.contains("4 to 2048")
    });
    t.keys(&["Enter"]);
    wait_attr(&lo, &t, "nr_requests", &many);

    // Back to none: the picker says the kernel lowers it to the depth, and it does.
    t.wait("the status of the change", |s| {
        s.contains(&format!("→{many} (kernel"))
    });
    t.keys(&["s"]);
    t.wait("the picker", |s| s.contains(&format!("scheduler of {dev}")));
    t.keys(&["Up", "Up"]);
    t.wait("the note on what the switch does", |s| {
        s.contains(&format!(
            "the switch sets nr_requests {many}→{depth} (the hardware queue depth)"
        ))
    });
    t.keys(&["Enter"]);
    wait_attr(&lo, &t, "scheduler", "none");
    assert_eq!(lo.queue("nr_requests"), depth.to_string());
    t.wait("the status naming the lowered nr_requests", |s| {
        s.contains(&format!("{dev}: kyber→none, nr_requests {many}→{depth}"))
    });
    t.keys(&["q"]);
    t.wait("the prompt back", |s| {
        s.contains("blktune: ") && s.trim_end().ends_with(PROMPT)
    });
}
