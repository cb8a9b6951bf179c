//! Issue 37's runaway: a read-only TUI whose tmux session was killed about
//! 2 s after start kept running for 70 minutes, at 100% of a core and its
//! memory growing. Here the terminal is killed at random moments of
//! start-up and of the first frames, hundreds of times, in each way a
//! terminal goes away, and every blktune must be gone a few seconds later
//! with its memory small.
//!
//! The terminal is a pty of the test's own: the test holds its master side,
//! as tmux, sshd or a terminal emulator does, so a kill lands anywhere, at
//! a finer grain than a tmux session allows; one round in ten kills a real
//! tmux server instead. The TUI reads a captured tree (`--read-only
//! --sysfs-root/--proc-root`): no device is touched.
//!
//! `BLKTUNE_HANGUP_SEED` replays a run (its seed is printed);
//! `BLKTUNE_HANGUP_ROUNDS` changes the count; `BLKTUNE_TEST_BIN` runs an
//! older build (the build before the fix left about one TUI in ten of the
//! "SIGHUP, then the pty closes" kills spinning).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::blktune_bin;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::pty::{Winsize, openpty};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Rounds of one run: enough for a race of one in a hundred to show.
const ROUNDS: usize = 240;

/// A TUI whose terminal went away must be gone by then (it takes tens of
/// milliseconds; the rest is room for a loaded machine).
const EXIT_WITHIN: Duration = Duration::from_secs(5);

/// Far above a TUI on a small tree (about 15 MB), far below a runaway.
const MAX_RSS_KB: u64 = 200 * 1024;

/// How the terminal goes away.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// The master side closes (a terminal window closed, the emulator died).
    Close,
    /// SIGHUP, then the master closes at once (what a shell passes on to
    /// its jobs when its terminal hangs up; tmux kills its panes so).
    HupThenClose,
    /// Keys typed, then the master closes with them unread.
    KeysThenClose,
    /// Half an escape sequence, then the master closes.
    HalfSequenceThenClose,
    /// Nobody reads the screen (the TUI's output fills the pty and its
    /// writes block), then the master closes.
    UnreadThenClose,
    /// `tmux kill-server` of a server whose one pane runs the TUI.
    TmuxServer,
}

/// The kills of the pty rounds, the ones that caught the old reader most
/// often (half a sequence: it read the half, then waited for the rest on a
/// pty about to close) more often than the others.
const KILLS: [Kill; 10] = [
    Kill::HalfSequenceThenClose,
    Kill::HalfSequenceThenClose,
    Kill::HalfSequenceThenClose,
    Kill::HalfSequenceThenClose,
    Kill::HupThenClose,
    Kill::HupThenClose,
    Kill::KeysThenClose,
    Kill::KeysThenClose,
    Kill::Close,
    Kill::UnreadThenClose,
];

/// xorshift64: the test's own random numbers, replayable from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, count: u64) -> u64 {
        self.next() % count
    }
}

/// What one round saw (printed when it failed).
#[derive(Debug)]
#[allow(dead_code)]
struct Round {
    n: usize,
    kill: Kill,
    delay: Duration,
    /// Between waking the TUI and closing its terminal.
    gap: Duration,
    /// Keys read from /dev/tty (standard input not the terminal).
    dev_tty: bool,
    size: (u16, u16),
    /// Bytes the TUI had drawn before the kill.
    drawn: usize,
    /// How long it took to end after the kill; `None`: it did not.
    ended_after: Option<Duration>,
    max_rss_kb: u64,
    /// Of a TUI that did not end: its RSS growth and CPU time over a second.
    runaway: Option<String>,
}

/// A process's resident memory in KiB (0 once it is gone).
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// User and system CPU ticks of process `pid` (fields 14 and 15, proc(5)).
fn cpu_ticks(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.to_string();
            Some(
                rest.split_whitespace()
                    .skip(11)
                    .take(2)
                    .filter_map(|f| f.parse::<u64>().ok())
                    .sum(),
            )
        })
        .unwrap_or(0)
}

/// Is `pid` still running (not gone, not a zombie)?
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().to_string()))
        .is_some_and(|r| !r.starts_with('Z'))
}

/// The TUI's arguments on the captured tree.
fn tui_args(tree: &Path) -> Vec<String> {
    vec![
        "--read-only".into(),
        "--sysfs-root".into(),
        tree.join("sys").display().to_string(),
        "--proc-root".into(),
        tree.join("proc").display().to_string(),
        "--device".into(),
        "loop1".into(),
        "--interval".into(),
        "250ms".into(),
    ]
}

/// Read what the TUI drew until `until` (drawn bytes), so its writes never block.
fn drain(master: &OwnedFd, until: Instant) -> usize {
    let mut drawn = 0;
    let mut buf = [0u8; 8192];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return drawn;
        }
        let mut fds = [PollFd::new(master.as_fd(), PollFlags::POLLIN)];
        let t = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        if poll(&mut fds, t).unwrap_or(0) == 0 {
            continue;
        }
        match nix::unistd::read(master, &mut buf) {
            Ok(0) | Err(_)
                if fds[0]
                    .revents()
                    .is_some_and(|r| r.contains(PollFlags::POLLHUP)) =>
            {
                // The TUI is gone already (it ended early): nothing to drain.
                std::thread::sleep(left);
                return drawn;
            }
            Ok(n) => drawn += n,
            Err(_) => {}
        }
    }
}

/// Wait for `pid` to end after its terminal went away: how long it took,
/// its largest RSS meanwhile, and (if it did not end) what it was doing.
fn wait_end(pid: u32, mut child: Option<&mut Child>) -> (Option<Duration>, u64, Option<String>) {
    let t0 = Instant::now();
    let mut max_rss = 0;
    loop {
        let ended = match child.as_deref_mut() {
            Some(c) => c.try_wait().unwrap().is_some(),
            None => !running(pid),
        };
        if ended {
            return (Some(t0.elapsed()), max_rss, None);
        }
        max_rss = max_rss.max(rss_kb(pid));
        if t0.elapsed() > EXIT_WITHIN {
            let (rss0, cpu0) = (rss_kb(pid), cpu_ticks(pid));
            std::thread::sleep(Duration::from_secs(1));
            let (rss1, cpu1) = (rss_kb(pid), cpu_ticks(pid));
            let why = format!(
                "still running {EXIT_WITHIN:?} after; over the next second RSS {rss0}→{rss1} KiB, \
                 {} CPU ticks",
                cpu1.saturating_sub(cpu0)
            );
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            if let Some(c) = child {
                let _ = c.wait();
            }
            return (None, max_rss.max(rss1), Some(why));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One TUI on a pty of our own, killed `kill_how` after `delay`; `gap`:
/// between what wakes the TUI (a signal, keys) and the close, the moment the
/// old reader was caught in (it woke, then found the pty gone).
/// `dev_tty`: its standard input is /dev/null, so it reads its keys from
/// /dev/tty (the same pty, as its controlling terminal).
fn pty_round(
    tree: &Path,
    journal: &Path,
    kill_how: Kill,
    (delay, gap): (Duration, Duration),
    size: (u16, u16),
    dev_tty: bool,
) -> Round {
    let win = Winsize {
        ws_col: size.0,
        ws_row: size.1,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = openpty(Some(&win), None).unwrap();
    // openpty(3) sets no close-on-exec: a TUI that inherited the master
    // would hold its own terminal open, and no close of ours would end it.
    for fd in [&pty.master, &pty.slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).unwrap();
    }
    fcntl(&pty.master, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).unwrap();
    let slave = pty.slave;
    let stdio = || Stdio::from(slave.try_clone().unwrap());
    // setsid -c: a session of its own whose controlling terminal is the pty,
    // as a login or a tmux pane has (so a hang-up sends SIGHUP to it).
    let mut cmd = Command::new("setsid");
    cmd.arg("-c");
    if dev_tty {
        // The shell takes the pty as its terminal, then gives blktune
        // (its own pid: exec) /dev/null as standard input.
        cmd.args(["sh", "-c", "exec \"$0\" \"$@\" < /dev/null"]);
    }
    let mut child = cmd
        .arg(blktune_bin())
        .args(tui_args(tree))
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("TERM", "xterm-256color")
        .env("BLKTUNE_JOURNAL_DIR", journal)
        .stdin(stdio())
        .stdout(stdio())
        .stderr(stdio())
        .spawn()
        .unwrap();
    drop(slave);
    let pid = child.id();
    let until = Instant::now() + delay;
    let drawn = match kill_how {
        Kill::UnreadThenClose => {
            std::thread::sleep(delay);
            0
        }
        _ => drain(&pty.master, until),
    };
    match kill_how {
        Kill::HupThenClose => {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGHUP);
        }
        Kill::KeysThenClose => {
            let _ = nix::unistd::write(&pty.master, b"jjk\x1b[B\x1b[A?");
        }
        Kill::HalfSequenceThenClose => {
            let _ = nix::unistd::write(&pty.master, b"\x1b[1;");
        }
        _ => {}
    }
    // A sleep would be too coarse: spin for the gap.
    let woke = Instant::now();
    while woke.elapsed() < gap {
        std::hint::spin_loop();
    }
    drop(pty.master);
    let (ended_after, max_rss_kb, runaway) = wait_end(pid, Some(&mut child));
    Round {
        n: 0,
        kill: kill_how,
        delay,
        gap,
        dev_tty,
        size,
        drawn,
        ended_after,
        max_rss_kb,
        runaway,
    }
}

/// One TUI as the only pane of a private tmux server, killed with the server.
fn tmux_round(
    tree: &Path,
    journal: &Path,
    delay: Duration,
    size: (u16, u16),
    count: usize,
) -> Round {
    let sock = format!("blktune-hangup-{}-{count}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .arg("-L")
            .arg(&sock)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .output()
            .unwrap()
    };
    let (w, h) = (size.0.to_string(), size.1.to_string());
    let journal_env = format!("BLKTUNE_JOURNAL_DIR={}", journal.display());
    let bin = blktune_bin();
    let mut args = vec![
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-x",
        &w,
        "-y",
        &h,
        "-P",
        "-F",
        "#{pane_pid}",
        "--",
        "env",
        "-i",
        "TERM=xterm-256color",
        &journal_env,
        &bin,
    ];
    let tui = tui_args(tree);
    args.extend(tui.iter().map(String::as_str));
    let started = Instant::now();
    let o = tmux(&args);
    let pid: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    std::thread::sleep(delay.saturating_sub(started.elapsed()));
    tmux(&["kill-server"]);
    let (ended_after, max_rss_kb, runaway) = wait_end(pid, None);
    Round {
        n: count,
        kill: Kill::TmuxServer,
        delay,
        gap: Duration::ZERO,
        dev_tty: false,
        size,
        drawn: 0,
        ended_after,
        max_rss_kb,
        runaway,
    }
}

/// Processes of this test still running: those with `journal` in their environment.
fn leftovers(journal: &Path) -> Vec<u32> {
    let needle = format!("BLKTUNE_JOURNAL_DIR={}", journal.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
                && running(*pid)
        })
        .collect()
}

#[test]
fn a_terminal_killed_at_any_moment_of_start_up_leaves_no_blktune_running() {
    let name = "a_terminal_killed_at_any_moment_of_start_up_leaves_no_blktune_running";
    if !common::require_tool(name, "setsid") || !common::require_tool(name, "tmux") {
        return;
    }
    let tree = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/vm-6.18"
    ));
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("journal");
    let seed = std::env::var("BLKTUNE_HANGUP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let rounds = std::env::var("BLKTUNE_HANGUP_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(ROUNDS);
    println!("seed {seed} (BLKTUNE_HANGUP_SEED replays it), {rounds} rounds");
    let mut rng = Rng(seed);
    let started = Instant::now();
    let mut seen = Vec::new();
    for n in 0..rounds {
        // Mostly start-up and the first frames (the first snapshot comes
        // within ~50 ms, the next every 250 ms); some later.
        let delay = Duration::from_micros(match rng.below(10) {
            0..=3 => rng.below(60_000),
            4..=8 => rng.below(600_000),
            _ => rng.below(2_200_000),
        });
        let size = if rng.below(2) == 0 {
            (120, 40)
        } else {
            (60, 20)
        };
        let mut r = if n % 10 == 9 {
            tmux_round(&tree, &journal, delay, size, n)
        } else {
            let kill_how = KILLS[rng.below(KILLS.len() as u64) as usize];
            let gap = Duration::from_micros(rng.below(3000));
            let dev_tty = rng.below(5) == 0;
            pty_round(&tree, &journal, kill_how, (delay, gap), size, dev_tty)
        };
        r.n = n;
        seen.push(r);
    }
    let stuck: Vec<&Round> = seen.iter().filter(|r| r.ended_after.is_none()).collect();
    let slowest = seen.iter().filter_map(|r| r.ended_after).max();
    let max_rss = seen.iter().map(|r| r.max_rss_kb).max().unwrap_or(0);
    println!(
        "{} rounds in {:.0?}: {} still running after {EXIT_WITHIN:?}; slowest end {slowest:?}; \
         largest RSS {max_rss} KiB",
        seen.len(),
        started.elapsed(),
        stuck.len()
    );
    for r in &stuck {
        println!("  stuck: {r:?}");
    }
    assert!(
        stuck.is_empty(),
        "{} of {} TUIs did not end after their terminal went away (seed {seed}): {stuck:#?}",
        stuck.len(),
        seen.len()
    );
    assert!(
        max_rss < MAX_RSS_KB,
        "a TUI grew to {max_rss} KiB after its terminal went away"
    );
    let left = leftovers(&journal);
    assert!(left.is_empty(), "blktune processes left: {left:?}");
}

/// Keys to move the picker's cursor from the active scheduler to `to`, as
/// a terminal sends them.
fn picker_moves(lo: &common::TestLoop, to: &str) -> Vec<u8> {
    let names: Vec<String> = lo
        .queue("scheduler")
        .split_whitespace()
        .map(|w| w.trim_matches(['[', ']']).to_string())
        .collect();
    let from = names
        .iter()
        .position(|n| *n == lo.active_scheduler())
        .unwrap();
    let to = names.iter().position(|n| n == to).expect("kyber available");
    let key: &[u8] = if to > from { b"\x1b[B" } else { b"\x1b[A" };
    key.repeat(from.abs_diff(to))
}

/// Everything readable from `fd` now, appended to `seen`.
fn read_now(fd: &OwnedFd, seen: &mut Vec<u8>) {
    let mut buf = [0u8; 65536];
    while let Ok(n) = nix::unistd::read(fd, &mut buf) {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
}

/// Its screen's writes fail (the output goes to a pipe whose reader goes
/// away; keys still come from its terminal): the TUI ends and
/// `--revert-on-exit` still puts the test's own loop device back. Root only.
#[test]
fn a_tui_whose_screen_writes_fail_reverts_on_exit_and_ends() {
    let name = "a_tui_whose_screen_writes_fail_reverts_on_exit_and_ends";
    if !common::require_root(name) || !common::require_tool(name, "setsid") {
        return;
    }
    let lo = common::TestLoop::new(64);
    let dev = lo.name().to_string();
    let before = lo.settings();
    let tmp = tempfile::tempdir().unwrap();
    let pty = openpty(
        Some(&Winsize {
            ws_col: 100,
            ws_row: 30,
            ws_xpixel: 0,
            ws_ypixel: 0,
        }),
        None,
    )
    .unwrap();
    for fd in [&pty.master, &pty.slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).unwrap();
    }
    let (screen, screen_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).unwrap();
    let child = Command::new("setsid")
        .arg("-c")
        .arg(blktune_bin())
        .args(["--device", &dev, "--interval", "250ms", "--revert-on-exit"])
        .env("TERM", "xterm-256color")
        .env("BLKTUNE_JOURNAL_DIR", tmp.path().join("journal"))
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(Stdio::from(screen_w))
        .stderr(Stdio::from(pty.slave))
        .spawn()
        .unwrap();
    // Until the end: a test that fails must not leave it holding the
    // device (std's kill never signals a pid it has already reaped).
    struct Running(Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Running(child);
    let mut seen = Vec::new();
    let shows = |seen: &mut Vec<u8>, what: &str| {
        common::wait_until(common::TIMEOUT, || {
            read_now(&screen, seen);
            String::from_utf8_lossy(seen).contains(what)
        })
    };
    assert!(shows(&mut seen, &dev), "the device table");
    nix::unistd::write(&pty.master, b"s").unwrap();
    assert!(
        shows(&mut seen, &format!("scheduler of {dev}")),
        "the picker"
    );
    let mut keys = picker_moves(&lo, "kyber");
    keys.push(b'\r');
    nix::unistd::write(&pty.master, &keys).unwrap();
    assert!(
        common::wait_until(common::TIMEOUT, || {
            read_now(&screen, &mut seen);
            lo.active_scheduler() == "kyber"
        }),
        "the switch"
    );
    // The screen's reader goes away: the next frame cannot be written.
    drop(screen);
    let ended = common::wait_until(EXIT_WITHIN, || child.0.try_wait().unwrap().is_some());
    assert!(ended, "still running after its screen's writes failed");
    assert_eq!(
        lo.settings(),
        before,
        "--revert-on-exit after a failed write"
    );
    drop(pty.master);
}

/// The worst left: the main thread stuck writing to a terminal that takes
/// nothing (nobody reads the pty; an SSH connection that stalled), then
/// SIGTERM. The loop cannot see the signal; the watchdog ends the session
/// after its grace: `--revert-on-exit` honoured, exit code 1, one line on
/// stderr. Root only (the test's own loop device); about 12 s.
#[test]
fn a_tui_stuck_writing_to_its_terminal_is_ended_by_its_watchdog_with_the_revert() {
    let name = "a_tui_stuck_writing_to_its_terminal_is_ended_by_its_watchdog_with_the_revert";
    if !common::require_root(name) || !common::require_tool(name, "setsid") {
        return;
    }
    let lo = common::TestLoop::new(64);
    let dev = lo.name().to_string();
    let before = lo.settings();
    let tmp = tempfile::tempdir().unwrap();
    // Large, so that two full redraws are more than the pty holds.
    let pty = openpty(
        Some(&Winsize {
            ws_col: 300,
            ws_row: 120,
            ws_xpixel: 0,
            ws_ypixel: 0,
        }),
        None,
    )
    .unwrap();
    for fd in [&pty.master, &pty.slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).unwrap();
    }
    fcntl(&pty.master, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).unwrap();
    let err_path = tmp.path().join("stderr");
    let child = Command::new("setsid")
        .arg("-c")
        .arg(blktune_bin())
        .args(["--device", &dev, "--interval", "250ms", "--revert-on-exit"])
        .env("TERM", "xterm-256color")
        .env("BLKTUNE_JOURNAL_DIR", tmp.path().join("journal"))
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(Stdio::from(pty.slave))
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    struct Running(Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Running(child);
    let mut seen = Vec::new();
    let shows = |seen: &mut Vec<u8>, what: &str| {
        common::wait_until(common::TIMEOUT, || {
            read_now(&pty.master, seen);
            String::from_utf8_lossy(seen).contains(what)
        })
    };
    assert!(shows(&mut seen, &dev), "the device table");
    nix::unistd::write(&pty.master, b"s").unwrap();
    assert!(
        shows(&mut seen, &format!("scheduler of {dev}")),
        "the picker"
    );
    let mut keys = picker_moves(&lo, "kyber");
    keys.push(b'\r');
    nix::unistd::write(&pty.master, &keys).unwrap();
    assert!(
        common::wait_until(common::TIMEOUT, || {
            read_now(&pty.master, &mut seen);
            lo.active_scheduler() == "kyber"
        }),
        "the switch"
    );
    // From now on nobody reads the screen. The help over the whole screen
    // and back, a few times: far more than the pty holds.
    for _ in 0..6 {
        let _ = nix::unistd::write(&pty.master, b"?");
        std::thread::sleep(Duration::from_millis(150));
        let _ = nix::unistd::write(&pty.master, b"\x1b");
        std::thread::sleep(Duration::from_millis(150));
    }
    let pid = Pid::from_raw(child.0.id() as i32);
    let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
    println!("before SIGTERM the TUI waits in {wchan:?}");
    kill(pid, Signal::SIGTERM).unwrap();
    let sent = Instant::now();
    let limit = Duration::from_secs(30);
    let ended = common::wait_until(limit, || child.0.try_wait().unwrap().is_some());
    let status = child.0.try_wait().unwrap();
    let said = std::fs::read_to_string(&err_path).unwrap();
    assert!(
        ended,
        "still running {limit:?} after SIGTERM; stderr: {said}"
    );
    println!(
        "ended {:.1?} after SIGTERM: {status:?}; stderr: {said}",
        sent.elapsed()
    );
    assert_eq!(lo.settings(), before, "--revert-on-exit; stderr: {said}");
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{said}");
    assert!(
        said.contains("had not ended") && said.contains(&format!("reverted {dev}: kyber→")),
        "{said}"
    );
}
