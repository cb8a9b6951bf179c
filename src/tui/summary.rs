//! What the live TUI prints after the terminal is restored: the session's
//! changes still in force and the command that reverts them, or
//! (`--revert-on-exit`) the devices put back.

use super::app::SessionChange;
use blktune_core::journal::Journal;
use blktune_core::kernel_hz::KernelHz;
use blktune_core::sched;
use blktune_core::tuner::{Tuner, Wanted};
use std::io::Write;

/// Name every file this session recorded to (each was closed with an end
/// record when recording stopped, at the latest on quit), with how to
/// replay the last one.
pub fn write_recordings(
    out: &mut impl Write,
    recordings: &[std::path::PathBuf],
) -> std::io::Result<()> {
    for p in recordings {
        writeln!(out, "blktune: recorded to {}", p.display())?;
    }
    if let Some(last) = recordings.last() {
        writeln!(
            out,
            "  replay with: blktune replay {}",
            shell_quote(&last.to_string_lossy())
        )?;
    }
    Ok(())
}

/// Print what this session changed and the command that reverts it. The
/// command names the journal the session wrote to when it is not where
/// `root`'s journal is by default (sudo drops `BLKTUNE_JOURNAL_DIR` from the
/// environment), and a fake tree's roots: without them the command would
/// go to the real devices.
pub fn write_summary(
    out: &mut impl Write,
    session: &[SessionChange],
    journal_dir: &std::path::Path,
    root: &blktune_core::os::SysRoot,
) -> std::io::Result<()> {
    if session.is_empty() {
        return writeln!(out, "blktune: no settings were changed in this session");
    }
    writeln!(out, "blktune: changed in this session (still in force):")?;
    let hz = KernelHz::read_config(root).unwrap_or_else(KernelHz::unknown);
    for s in session {
        writeln!(
            out,
            "  {}: {}",
            s.device,
            net_change(&s.original, &s.now, &hz)
        )?;
    }
    let devs: Vec<&str> = session.iter().map(|s| s.device.as_str()).collect();
    let env = if journal_dir == Journal::default_for(root).dir() {
        String::new()
    } else {
        format!(
            "{}={} ",
            blktune_core::journal::DIR_ENV,
            shell_quote(&journal_dir.to_string_lossy())
        )
    };
    writeln!(
        out,
        "to revert: sudo {env}blktune {}revert {}",
        roots_args(root),
        devs.join(" ")
    )
}

/// Original → now, one entry per value that differs (`none→mq-deadline,
/// nr_requests 128→256, wbt_lat_usec 2000→3000`), not the steps taken in between. After a switch the
/// old scheduler's tunables are gone: the new one's are listed only where
/// they differ from the kernel's default (`read_expire=100`).
pub fn net_change(original: &Wanted, now: &Wanted, hz: &KernelHz) -> String {
    let dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let mut out = Vec::new();
    let switched = original.scheduler != now.scheduler;
    if switched {
        out.push(format!(
            "{}→{}",
            dash(original.scheduler.clone()),
            dash(now.scheduler.clone())
        ));
    }
    for (k, v) in &now.tunables {
        let before = original.tunables.iter().find(|(o, _)| o == k);
        match before {
            Some((_, b)) if !switched && b.trim() != v.trim() => out.push(format!("{k} {b}→{v}")),
            _ if switched => {
                let has_default = sched::tunable(k).is_some_and(|t| t.default.is_some());
                if has_default && !hz.is_default(k, v) {
                    out.push(format!("{k}={v}"));
                }
            }
            _ => {}
        }
    }
    for (name, b, a) in [
        ("nr_requests", original.nr_requests, now.nr_requests),
        ("read_ahead_kb", original.read_ahead_kb, now.read_ahead_kb),
    ] {
        if a.is_some() && b != a {
            out.push(format!(
                "{name} {}→{}",
                dash(b.map(|n| n.to_string())),
                dash(a.map(|n| n.to_string()))
            ));
        }
    }
    // The queue settings beside the scheduler (wbt_lat_usec, nomerges...)
    // stay what they were across a switch.
    for (k, v) in &now.knobs {
        let before = original.knobs.iter().find(|(o, _)| o == k).map(|(_, b)| b);
        if before.is_none_or(|b| b.trim() != v.trim()) {
            out.push(format!("{k} {}→{v}", dash(before.cloned())));
        }
    }
    if out.is_empty() {
        return "back to its original settings".into();
    }
    out.join(", ")
}

/// `--sysfs-root S --proc-root P ` for a fake tree, nothing for the real one.
pub fn roots_args(root: &blktune_core::os::SysRoot) -> String {
    if root.is_live() {
        return String::new();
    }
    format!(
        "--sysfs-root {} --proc-root {} ",
        shell_quote(&root.sysfs().to_string_lossy()),
        shell_quote(&root.procfs().to_string_lossy())
    )
}

/// `text` as one shell word: as it is when it is plain, else in single quotes.
fn shell_quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,=@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// `--revert-on-exit`: put every device of the session back, all of them
/// even when writing the report fails (a closed terminal), then say so: what
/// was put back on `out`, what could not be on `err`. The journal entry
/// follows the one revert policy inside [`Tuner::restore`].
pub(super) fn revert_on_exit(
    out: &mut impl Write,
    err: &mut impl Write,
    tuner: &Tuner,
    session: &[SessionChange],
) -> i32 {
    let mut failed = 0;
    for s in session {
        match tuner.restore(&s.device, &s.original) {
            Ok(o) => {
                let _ = writeln!(out, "blktune: reverted {}: {}", s.device, o.label());
            }
            Err(e) => {
                failed += 1;
                let _ = writeln!(
                    err,
                    "blktune: cannot revert '{}': {e}; try 'sudo {}'",
                    s.device,
                    tuner.revert_command(&s.device)
                );
            }
        }
    }
    i32::from(failed > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn summary(dir: &str) -> String {
        let session = [SessionChange {
            device: "loop0".into(),
            original: Wanted::default(),
            now: Wanted::default(),
            labels: vec!["none→kyber".into()],
        }];
        let mut out = Vec::new();
        write_summary(&mut out, &session, Path::new(dir), &Default::default()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_revert_command_names_a_private_journal() {
        assert!(
            summary("/run/blktune").ends_with("\nto revert: sudo blktune revert loop0\n"),
            "{}",
            summary("/run/blktune")
        );
        assert!(
            summary("/tmp/j")
                .ends_with("\nto revert: sudo BLKTUNE_JOURNAL_DIR=/tmp/j blktune revert loop0\n"),
            "{}",
            summary("/tmp/j")
        );
        assert!(
            summary("/tmp/my j's").contains("BLKTUNE_JOURNAL_DIR='/tmp/my j'\\''s' blktune"),
            "{}",
            summary("/tmp/my j's")
        );
    }

    #[test]
    fn the_revert_command_of_a_fake_tree_names_its_roots_and_not_its_own_journal() {
        let session = [SessionChange {
            device: "sda".into(),
            original: Wanted::default(),
            now: Wanted::default(),
            labels: vec!["none→kyber".into()],
        }];
        let root = blktune_core::os::SysRoot::new("/tmp/t/sys", "/tmp/t/proc");
        let own = Journal::default_for(&root);
        let mut out = Vec::new();
        write_summary(&mut out, &session, own.dir(), &root).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.ends_with(
                "\nto revert: sudo blktune --sysfs-root /tmp/t/sys --proc-root /tmp/t/proc revert sda\n"
            ),
            "{s}"
        );
    }

    fn w(sched: &str, nr: u64, tun: &[(&str, &str)]) -> Wanted {
        Wanted {
            scheduler: Some(sched.into()),
            tunables: tun
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            nr_requests: Some(nr),
            read_ahead_kb: Some(128),
            knobs: Vec::new(),
        }
    }

    #[test]
    fn the_summary_says_original_to_now_per_value_not_the_steps() {
        // none→kyber, nr_requests 128→256, kyber→mq-deadline (which reset
        // nr_requests to the scheduler's 256 and read_expire to its default,
        // then read_expire was set to 100).
        let session = [SessionChange {
            device: "loop0".into(),
            original: w("none", 128, &[]),
            now: w(
                "mq-deadline",
                256,
                &[("read_expire", "100"), ("write_expire", "5000")],
            ),
            labels: vec![
                "none→kyber".into(),
                "nr_requests 128→256".into(),
                "kyber→mq-deadline".into(),
                "iosched/read_expire 500→100".into(),
            ],
        }];
        let mut out = Vec::new();
        write_summary(
            &mut out,
            &session,
            Path::new("/run/blktune"),
            &Default::default(),
        )
        .unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.contains("\n  loop0: none→mq-deadline, read_expire=100, nr_requests 128→256\n"),
            "{s}"
        );
        assert!(!s.contains("kyber"), "{s}");
        // Same scheduler: the tunable's own before and after.
        let dd = |re| w("mq-deadline", 256, &[("read_expire", re)]);
        assert_eq!(
            net_change(&dd("500"), &dd("250"), &KernelHz::unknown()),
            "read_expire 500→250"
        );
        // Changed and changed back.
        assert_eq!(
            net_change(&dd("500"), &dd("500"), &KernelHz::unknown()),
            "back to its original settings"
        );
    }

    #[test]
    fn the_summary_names_a_changed_queue_setting_beside_the_scheduler() {
        let knob = |v: &str| Wanted {
            knobs: vec![
                ("nomerges".into(), "0".into()),
                ("wbt_lat_usec".into(), v.into()),
            ],
            ..w("none", 128, &[])
        };
        assert_eq!(
            net_change(&knob("2000"), &knob("3000"), &KernelHz::unknown()),
            "wbt_lat_usec 2000→3000"
        );
        assert_eq!(
            net_change(&knob("2000"), &knob("2000"), &KernelHz::unknown()),
            "back to its original settings"
        );
        // A setting the original did not read (an older journal): now's value.
        let mut original = knob("2000");
        original.knobs.clear();
        assert_eq!(
            net_change(&original, &knob("3000"), &KernelHz::unknown()),
            "nomerges -→0, wbt_lat_usec -→3000"
        );
    }

    /// A terminal that is gone: every write fails.
    struct Gone;

    impl Write for Gone {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
    }

    #[test]
    fn revert_on_exit_puts_every_device_back_and_clears_the_journal_even_with_no_terminal() {
        use blktune_core::fake::{FakeDisk, FakeTree};
        use blktune_core::journal::Journal;
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(&dir.path().join("root")).unwrap();
        t.add(&FakeDisk::new("sda").dev(8, 0)).unwrap();
        t.add(&FakeDisk::new("sdb").dev(8, 16)).unwrap();
        let j = Journal::new(dir.path().join("j"));
        let tuner = Tuner::new(t.root(), Some(j.clone()));
        let ra = |n| Wanted {
            read_ahead_kb: Some(n),
            ..Wanted::default()
        };
        let mut session = Vec::new();
        for dev in ["sda", "sdb"] {
            let o = tuner.apply(dev, &ra(1024)).unwrap();
            session.push(SessionChange {
                device: dev.into(),
                original: Wanted::snapshot_of(&o.before),
                now: Wanted::snapshot_of(&o.after),
                labels: vec![o.label()],
            });
        }
        assert_eq!(j.list().unwrap().len(), 2);
        assert_eq!(revert_on_exit(&mut Gone, &mut Gone, &tuner, &session), 0);
        for dev in ["sda", "sdb"] {
            let ra = std::fs::read_to_string(t.dev_dir(dev).join("queue/read_ahead_kb")).unwrap();
            assert_eq!(ra.trim(), "128", "{dev}");
        }
        assert!(j.list().unwrap().is_empty(), "the one policy dropped both");
    }
}
