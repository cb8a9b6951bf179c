//! The full-screen tuner (`blktune` with no subcommand).
//!
//! Threads: a source thread ([`source::LiveSource`]) samples and applies
//! changes; the main thread only receives [`source::Feed`] messages, updates
//! the [`app::App`], draws, and maps keys to actions ([`command`]). The
//! terminal is restored on every way out: quit, error, panic (ratatui's
//! hook), SIGTERM, SIGHUP and SIGINT.

pub mod app;
pub mod bench_dialog;
pub mod bench_worker;
pub mod command;
pub mod demo;
pub mod dialog_keys;
pub mod edit;
pub mod export_dialog;
pub mod latency;
pub mod live_record;
pub mod render;
pub mod replay_source;
pub mod replay_view;
pub mod source;

use crate::cli::{Global, TuiArgs};
use anyhow::Context;
use app::{App, Config};
use blktune_core::host::HostInfo;
use blktune_core::journal::Journal;
use blktune_core::sampler::Sampler;
use blktune_core::tuner::{self, Tuner};
use crossterm::event::{self, Event};
use ratatui::Terminal;
use ratatui::backend::Backend;
use source::{Control, Feed, LiveSource};
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

/// Shortest and longest sample interval of the TUI.
pub const INTERVAL_RANGE: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(10));
/// Longest wait for input, so signals and feed messages are seen quickly.
const POLL: Duration = Duration::from_millis(40);

/// Puts the terminal back when dropped, whatever happened.
struct RestoreGuard;

impl Drop for RestoreGuard {
    fn drop(&mut self) {
        // The terminal may be gone (SIGHUP): nothing useful to do on error.
        let _ = crossterm::execute!(std::io::stdout(), crossterm::cursor::Show);
        let _ = ratatui::try_restore();
    }
}

/// Flags set by signal handlers, checked by the event loop.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    pub term: Arc<AtomicBool>,
}

impl Signals {
    /// Register SIGTERM, SIGHUP and SIGINT.
    pub fn register() -> std::io::Result<Self> {
        let s = Self::default();
        for sig in [
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
            signal_hook::consts::SIGINT,
        ] {
            signal_hook::flag::register(sig, Arc::clone(&s.term))?;
        }
        Ok(s)
    }

    fn raised(&self) -> bool {
        self.term.load(Ordering::Relaxed)
    }
}

/// What waiting on the terminal found.
enum Input {
    None,
    Ready,
    HangUp,
}

/// Wait up to `timeout` for input on stdin, noticing a hang-up (the pty's
/// other end closed), which crossterm's reader does not.
fn wait_for_input(timeout: Duration) -> Input {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    let t = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::ZERO);
    match poll(&mut fds, t) {
        Ok(0) => Input::None,
        Ok(_) => match fds[0].revents() {
            Some(r)
                if r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) =>
            {
                Input::HangUp
            }
            _ => Input::Ready,
        },
        // EINTR (a signal): look at the flags, then wait again.
        Err(_) => Input::None,
    }
}

/// Is NO_COLOR unset (or empty)? <https://no-color.org>
pub fn color_allowed() -> bool {
    render::Theme::from_no_color(std::env::var_os("NO_COLOR").as_deref()).color
}

/// Run the TUI; returns the exit code.
pub fn run(g: &Global, a: &TuiArgs) -> anyhow::Result<i32> {
    run_with(g, a, |_| {})
}

/// Run the TUI after `setup` adjusted the fresh app (`blktune demo`).
pub fn run_with(g: &Global, a: &TuiArgs, setup: impl FnOnce(&mut App)) -> anyhow::Result<i32> {
    let root = g.root();
    if let Some(dev) = &a.device {
        tuner::resolve(&root, dev)?;
    }
    let read_only = if a.read_only {
        Some("--read-only".to_string())
    } else if !blktune_core::os::is_root() {
        Some("not root".to_string())
    } else {
        None
    };
    let interval = a.interval.clamp(INTERVAL_RANGE.0, INTERVAL_RANGE.1);
    let sampler = Sampler::new(root.clone())
        .with_context(|| format!("cannot read {}/diskstats", root.procfs().display()))?;
    let journal = Journal::for_root(&root);
    let tuner = read_only
        .is_none()
        .then(|| Tuner::new(root.clone(), Some(journal.clone())));
    let mut app = App::new(Config {
        host: HostInfo::read(&root),
        read_only: read_only.clone(),
        interval,
        page_kb: blktune_core::sched::page_kb(),
        color: color_allowed(),
        select: a.device.clone(),
    });
    // The udev database belongs to the real /sys only; a fake tree has none.
    if root.sysfs() == std::path::Path::new("/sys") {
        app.udev_db = Some(blktune_core::export::UdevDb::default());
    }
    // `P` turns the probe on at this rate when --probe did not.
    app.probe_rate = a.probe_rate;
    if a.probe {
        app.enable_probe(a.probe_rate);
    }
    setup(&mut app);
    let signals = Signals::register().context("cannot install signal handlers")?;
    let (feed_tx, feed_rx) = mpsc::channel();
    let (ctl_tx, ctl_rx) = mpsc::channel();
    // The probe starts when the app names the selected device; read-only
    // mode allows it (it only reads).
    let handle = LiveSource::new(sampler, tuner, interval)
        .with_probe_rate(a.probe_rate)
        .spawn(feed_tx, ctl_rx)
        .context("cannot start the sampler thread")?;

    let result = {
        // Never dropped: ratatui's Drop would eprintln! an error about the
        // cursor when the terminal is gone (SIGHUP), and eprintln! panics on
        // a dead stderr. The guard restores the terminal instead.
        let mut term =
            std::mem::ManuallyDrop::new(ratatui::try_init().context("cannot set up the terminal")?);
        let _guard = RestoreGuard;
        event_loop(&mut term, &mut app, &feed_rx, &ctl_tx, &signals)
    };
    // Answers to changes still in flight belong in the summary.
    let deadline = Instant::now() + Duration::from_secs(5);
    while app.pending > 0 && Instant::now() < deadline {
        match feed_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(f) => app.on_feed(f),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = ctl_tx.send(Control::Stop);
    drop(feed_rx);
    let _ = handle.join();
    // After SIGHUP the terminal is gone and drawing fails: that is how the
    // session ended, not an error to report (there is nowhere to report it).
    if !signals.raised() {
        result?;
    }

    let mut out = std::io::stdout().lock();
    if let Some(p) = &app.recording {
        // The source closed it on Stop, with an end record.
        let _ = writeln!(out, "blktune: recorded this session to {}", p.display());
    }
    let session = app.session();
    if a.revert_on_exit && read_only.is_none() && !session.is_empty() {
        return Ok(revert_on_exit(
            &mut out,
            &Tuner::new(root, Some(journal)),
            &session,
        ));
    }
    // Errors writing to a terminal that went away (SIGHUP) are ignored.
    let _ = write_summary(&mut out, &session, journal.dir(), &root);
    Ok(0)
}

/// Print what this session changed and the command that reverts it. The
/// command names the journal the session wrote to when it is not where
/// `root`'s journal is by default (sudo drops `BLKTUNE_JOURNAL_DIR` from the
/// environment), and a fake tree's roots: without them the command would
/// go to the real devices.
pub fn write_summary(
    out: &mut impl Write,
    session: &[app::SessionChange],
    journal_dir: &std::path::Path,
    root: &blktune_core::os::SysRoot,
) -> std::io::Result<()> {
    if session.is_empty() {
        return writeln!(out, "blktune: no settings were changed in this session");
    }
    writeln!(out, "blktune: changed in this session (still in force):")?;
    for s in session {
        writeln!(out, "  {}: {}", s.device, s.labels.join(", "))?;
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

/// `s` as one shell word: as it is when it is plain, else in single quotes.
fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,=@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `--revert-on-exit`: put every device of the session back, all of them
/// even when writing the report fails (a closed terminal), then say so.
/// The journal entry follows the one revert policy inside [`Tuner::restore`].
fn revert_on_exit(out: &mut impl Write, tuner: &Tuner, session: &[app::SessionChange]) -> i32 {
    let mut failed = 0;
    for s in session {
        match tuner.restore(&s.device, &s.original) {
            Ok(o) => {
                let _ = writeln!(out, "blktune: reverted {}: {}", s.device, o.label());
            }
            Err(e) => {
                failed += 1;
                let _ = writeln!(
                    std::io::stderr(),
                    "blktune: cannot revert '{}': {e}; try 'sudo blktune revert {}'",
                    s.device,
                    s.device
                );
            }
        }
    }
    i32::from(failed > 0)
}

/// Receive, update, draw, read keys; until quit or a signal.
pub fn event_loop<B: Backend>(
    term: &mut Terminal<B>,
    app: &mut App,
    feed: &Receiver<Feed>,
    ctl: &Sender<Control>,
    signals: &Signals,
) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let mut dirty = true;
    let stdin_tty = std::io::stdin().is_terminal();
    loop {
        if signals.raised() {
            return Ok(());
        }
        loop {
            match feed.try_recv() {
                Ok(f) => {
                    app.on_feed(f);
                    dirty = true;
                }
                Err(mpsc::TryRecvError::Empty) => break,
                // The source thread died (a panic): stop instead of showing stale data.
                Err(mpsc::TryRecvError::Disconnected) => {
                    anyhow::bail!("the sampler thread stopped unexpectedly")
                }
            }
        }
        // The first selection, or one moved by a vanished device or the filter.
        if let Some(c) = app.probe_control() {
            let _ = ctl.send(c);
        }
        if dirty {
            let size = term.size()?;
            if let Some(a) = render::layout(
                ratatui::layout::Rect::new(0, 0, size.width, size.height),
                app,
            ) {
                app.page_rows = a.table.height.saturating_sub(1).max(1) as usize;
            }
            term.draw(|f| render::draw(f, app))?;
            dirty = false;
        }
        let ready = if stdin_tty {
            match wait_for_input(POLL) {
                // crossterm may hold events it already read from the fd.
                Input::None | Input::Ready => event::poll(Duration::ZERO)?,
                // The terminal went away (SSH dropped, pty closed): stop now.
                // crossterm's reader would spin on the end of file.
                Input::HangUp => {
                    signals.term.store(true, Ordering::Relaxed);
                    return Ok(());
                }
            }
        } else {
            // crossterm reads /dev/tty then; let it wait.
            event::poll(POLL)?
        };
        // Take every event that is waiting, then draw once.
        let mut ready = ready;
        while ready {
            match event::read()? {
                Event::Key(k) => {
                    for c in app.on_key(&k) {
                        // A gone source thread shows up as a missing answer; keep drawing.
                        let _ = ctl.send(c);
                    }
                    dirty = true;
                }
                Event::Resize(..) => dirty = true,
                _ => {}
            }
            ready = !app.quit && event::poll(Duration::ZERO)?;
        }
        if app.quit {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blktune_core::tuner::Settings;
    use std::path::Path;

    fn summary(dir: &str) -> String {
        let session = [app::SessionChange {
            device: "loop0".into(),
            original: Settings::default(),
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
        let session = [app::SessionChange {
            device: "sda".into(),
            original: Settings::default(),
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
        let ra = |n| Settings {
            read_ahead_kb: Some(n),
            ..Settings::default()
        };
        let mut session = Vec::new();
        for dev in ["sda", "sdb"] {
            let o = tuner.apply(dev, &ra(1024)).unwrap();
            session.push(app::SessionChange {
                device: dev.into(),
                original: Settings::snapshot_of(&o.before),
                labels: vec![o.label()],
            });
        }
        assert_eq!(j.list().unwrap().len(), 2);
        assert_eq!(revert_on_exit(&mut Gone, &tuner, &session), 0);
        for dev in ["sda", "sdb"] {
            let ra = std::fs::read_to_string(t.dev_dir(dev).join("queue/read_ahead_kb")).unwrap();
            assert_eq!(ra.trim(), "128", "{dev}");
        }
        assert!(j.list().unwrap().is_empty(), "the one policy dropped both");
    }
}
