//! Shared helpers of the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod docs;
pub mod fake_host;
pub mod record_support;
pub mod screen;
pub mod tmux;
pub mod tui_fixture;

use blktune_core::scratch::ScratchLoop;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long a test waits for something that should happen soon. Generous:
/// under load (2 cores, test binaries in parallel) a redraw can take
/// seconds, and waits poll, so an idle machine never waits this long.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Wait for `child` to end and take its output; if it runs past `limit`,
/// kill it and fail saying `what` (a command that must never hang).
pub fn output_within(mut child: std::process::Child, limit: Duration, what: &str) -> Output {
    if !wait_until(limit, || child.try_wait().unwrap().is_some()) {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what}: still running after {limit:?}");
    }
    child.wait_with_output().unwrap()
}

/// Poll `cond` until it holds (true) or `timeout` has passed (false).
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Are we root? If not: skip (return false) with a message, or fail under CI=true.
pub fn require_root(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: needs root, and under CI=true a skipped test is a failure");
    }
    eprintln!("SKIPPED {test}: needs root (loop devices, sysfs writes)");
    false
}

/// Is a command on PATH? Missing under CI=true is a failure.
pub fn require_tool(test: &str, tool: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: needs '{tool}' (install it in .ci/run)");
    }
    eprintln!("SKIPPED {test}: '{tool}' is not installed");
    false
}

/// Run `attempt` until it gets the loop node it freed for a moment: it
/// returns `false` when another process took that node first (loop numbers
/// are shared by the whole machine). After five lost races the test is
/// skipped, and under CI=true a skipped test is a failure.
pub fn retry_node_races(test: &str, mut attempt: impl FnMut() -> bool) {
    for _ in 0..5 {
        if attempt() {
            return;
        }
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: the freed loop node was taken by another process five times");
    }
    eprintln!("SKIPPED {test}: the freed loop node was taken by another process five times");
}

/// A temp dir under the target dir, for loop device backing files: not /tmp,
/// which may be tmpfs, and O_DIRECT needs a real filesystem under the file.
pub fn temp_in_target() -> tempfile::TempDir {
    let base = option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    tempfile::tempdir_in(base).expect("temp dir")
}

/// A scratch loop device of `mib` MiB over a file in a temp dir, removed on drop.
pub struct TestLoop {
    pub dev: ScratchLoop,
    _dir: tempfile::TempDir,
}

impl TestLoop {
    pub fn new(mib: u64) -> Self {
        let dir = temp_in_target();
        let dev = ScratchLoop::create(dir.path(), mib << 20).expect("losetup");
        let lo = Self { dev, _dir: dir };
        // A loop device keeps its scheduler and nr_requests across detach and
        // attach (seen on 6.18; read_ahead_kb is recomputed at attach), so a
        // device reused from an earlier run would start changed: put back
        // what a never-used loop device has.
        lo.set_queue("scheduler", "none");
        lo.set_queue("nr_requests", "128");
        // And the queue settings next to the scheduler: write-back
        // throttling at the kernel's default for the device (-1), merges
        // and completion affinity as blk-mq starts them.
        lo.set_queue("wbt_lat_usec", "-1");
        lo.set_queue("nomerges", "0");
        lo.set_queue("rq_affinity", "1");
        lo
    }

    pub fn name(&self) -> &str {
        self.dev.name()
    }

    pub fn queue(&self, attr: &str) -> String {
        std::fs::read_to_string(format!("/sys/block/{}/queue/{attr}", self.name()))
            .unwrap()
            .trim()
            .to_string()
    }

    /// Test setup only: write a queue attribute of this test's OWN loop device
    /// directly (to give it a known "original" state before blktune runs).
    pub fn set_queue(&self, attr: &str, value: &str) {
        std::fs::write(format!("/sys/block/{}/queue/{attr}", self.name()), value)
            .unwrap_or_else(|e| panic!("setup: {attr}={value}: {e}"));
    }

    /// scheduler, nr_requests, read_ahead_kb and every iosched tunable, as text.
    pub fn settings(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("scheduler".to_string(), self.active_scheduler()),
            ("nr_requests".into(), self.queue("nr_requests")),
            ("read_ahead_kb".into(), self.queue("read_ahead_kb")),
        ];
        let dir = format!("/sys/block/{}/queue/iosched", self.name());
        if let Ok(rd) = std::fs::read_dir(&dir) {
            let mut t: Vec<(String, String)> = rd
                .map(|e| {
                    let e = e.unwrap();
                    let name = e.file_name().into_string().unwrap();
                    (
                        format!("iosched/{name}"),
                        std::fs::read_to_string(e.path())
                            .unwrap()
                            .trim()
                            .to_string(),
                    )
                })
                .collect();
            t.sort();
            v.extend(t);
        }
        v
    }

    pub fn active_scheduler(&self) -> String {
        let line = self.queue("scheduler");
        line.split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
            .unwrap_or(&line)
            .to_string()
    }
}

/// Run the blktune binary with a private journal dir.
pub fn blktune(args: &[&str], journal: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blktune"))
        .args(args)
        .env("BLKTUNE_JOURNAL_DIR", journal)
        .output()
        .expect("run blktune")
}

/// Run `cmd` (its program, arguments and environment) under
/// `strace -f -qq -y -e trace=TRACE`; its output, and the calls strace saw,
/// one per line (`-y`: file descriptors with their paths).
pub fn strace(cmd: &Command, trace: &str, log: &Path) -> (Output, String) {
    let mut s = Command::new("strace");
    s.args(["-f", "-qq", "-y", "-e", &format!("trace={trace}"), "-o"])
        .arg(log)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => s.env(k, v),
            None => s.env_remove(k),
        };
    }
    let out = s.output().expect("run strace");
    (out, std::fs::read_to_string(log).unwrap_or_default())
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Is some loop device attached to a file inside `dir` (per `losetup -a`)?
pub fn loop_over(dir: &std::path::Path) -> bool {
    let o = Command::new("losetup")
        .arg("-a")
        .output()
        .expect("losetup -a");
    String::from_utf8_lossy(&o.stdout).contains(&dir.display().to_string())
}

/// Has every loop device over a file in `dir` gone (waiting up to [`TIMEOUT`])?
/// A detach of a device that is still open (`losetup -a` of a parallel test,
/// udev's probe, direct I/O completing) only marks it autoclear; the kernel
/// detaches on the last close, which takes a while on a busy machine.
pub fn loop_gone(dir: &std::path::Path) -> bool {
    wait_until(TIMEOUT, || !loop_over(dir))
}

/// A copy of the blktune binary in `dir` that any user can run (for tests
/// as user nobody); `dir` is made world-readable.
pub fn public_binary(dir: &std::path::Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.join("blktune");
    copy_binary(&bin);
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// Copy the binary under test to `to`. Through `cp`, not `std::fs::copy`:
/// while this process holds the copy open for writing, another test thread
/// that forks would hand that descriptor to its child until the child's
/// exec, and running the copy then fails with "Text file busy".
pub fn copy_binary(to: &std::path::Path) {
    let st = Command::new("cp")
        .arg(env!("CARGO_BIN_EXE_blktune"))
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success(), "cp the binary to {}", to.display());
}

/// `program` run as user nobody (setpriv), without root's groups.
pub fn as_nobody(program: &std::path::Path) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(program);
    c
}

/// fio on a device of the test (direct I/O) in the background, as threads
/// so one kill ends it; killed and reaped on drop.
pub struct FioLoad(std::process::Child);

impl FioLoad {
    /// 4 KiB random reads, 4 at a time: the load of the kernel-latency tests.
    pub fn randread(dev: &str) -> Self {
        Self::run(dev, &["--rw=randread", "--bs=4k", "--iodepth=4"])
    }

    /// 1 MiB random writes, 32 at a time from a fio at nice -10: keeps a
    /// loop device busy (%util 100) even while two CPU hogs and another
    /// fio hold both cores (`.ci/under-load`), where 4 at a time at the
    /// default priority left the queue empty 11 to 42% of the time
    /// (measured: 58 to 89% util; the tuner calls 98% busy).
    pub fn busy_writes(dev: &str) -> Self {
        Self::run(
            dev,
            &["--rw=randwrite", "--bs=1m", "--iodepth=32", "--nice=-10"],
        )
    }

    fn run(dev: &str, pattern: &[&str]) -> Self {
        let child = Command::new("fio")
            .args(["--name=load", &format!("--filename=/dev/{dev}")])
            .args(pattern)
            .args([
                "--direct=1",
                "--ioengine=libaio",
                "--time_based",
                "--runtime=60",
                "--output=/dev/null",
                "--thread",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("fio");
        let load = Self(child);
        // Return once the device is busy: fio takes a moment to start (more
        // on a loaded machine), and a test's first intervals must see I/O.
        let ios = || {
            std::fs::read_to_string(format!("/sys/block/{dev}/stat"))
                .ok()
                .map(|s| {
                    let f: Vec<u64> = s
                        .split_whitespace()
                        .filter_map(|w| w.parse().ok())
                        .collect();
                    f.first().copied().unwrap_or(0) + f.get(4).copied().unwrap_or(0)
                })
                .unwrap_or(0)
        };
        let start = ios();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while ios() < start + 64 {
            assert!(
                std::time::Instant::now() < deadline,
                "fio did no I/O on {dev} in 30 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        load
    }
}

impl Drop for FioLoad {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `text` passes `promtool check metrics` (the OpenMetrics tests).
pub fn assert_promtool_accepts(text: &str) {
    use std::io::Write;
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool");
    p.stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let r = p.wait_with_output().expect("promtool");
    assert!(
        r.status.success(),
        "{}{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
}

/// A loop device a test attached by hand under a chosen number (to play
/// "another device under the same name"); detached on drop while it is still
/// bound to the test's file, never someone else's.
pub struct Reattached {
    pub name: String,
    pub file: PathBuf,
}

impl Reattached {
    /// Is the node still bound to our file?
    pub fn ours(&self) -> bool {
        std::fs::read_to_string(format!("/sys/block/{}/loop/backing_file", self.name))
            .is_ok_and(|b| Path::new(b.trim_end_matches('\n')) == self.file)
    }
}

impl Drop for Reattached {
    fn drop(&mut self) {
        if self.ours() {
            let _ = Command::new("losetup")
                .arg("-d")
                .arg(format!("/dev/{}", self.name))
                .status();
        }
    }
}

/// Attach `file` (which must exist) to exactly `/dev/<name>`; `None` if
/// another process took that free number first.
pub fn reattach(name: &str, file: &Path) -> Option<Reattached> {
    let file = file.canonicalize().ok()?;
    let ok = Command::new("losetup")
        .arg(format!("/dev/{name}"))
        .arg(&file)
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| Reattached {
        name: name.to_owned(),
        file,
    })
}

/// The shoot-out results table's cells of scheduler `name` (inside the
/// dialog's border; the winner's row is starred), by column label; `None`
/// while the table or the row is not on `screen`.
pub fn shootout_row(
    screen: &str,
    name: &str,
) -> Option<std::collections::BTreeMap<String, String>> {
    let inner = |l: &str| -> Vec<String> {
        l.split('│')
            .nth(1)
            .unwrap_or("")
            .trim_start_matches([' ', '★'])
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let head = screen
        .lines()
        .map(inner)
        .find(|c| c.first().map(String::as_str) == Some("scheduler"))?;
    let cells = screen
        .lines()
        .map(inner)
        .find(|c| c.first().map(String::as_str) == Some(name))?;
    Some(head.into_iter().zip(cells).collect())
}

/// Run the calling test again in a process of its own, for a test that
/// measures its process (its descriptors, its peak RSS) and so must not share
/// it with the harness's other tests. In the parent: runs this one test
/// (`module`: the caller's `module_path!()`, `test`: its function's name) in
/// a child of the same test binary, fails when the child fails or ran no
/// test, and returns false (the caller returns). In the child: true.
pub fn in_own_process(module: &str, test: &str) -> bool {
    const ALONE: &str = "BLKTUNE_TEST_ALONE";
    if std::env::var_os(ALONE).is_some() {
        return true;
    }
    // libtest names a test by its path inside the harness, without the crate.
    let path = match module.split_once("::") {
        Some((_, inside)) => format!("{inside}::{test}"),
        None => test.to_string(),
    };
    let o = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &path, "--nocapture", "--test-threads=1"])
        .env(ALONE, "1")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    eprint!("{err}");
    assert!(
        o.status.success(),
        "{path} in its own process failed:\n{out}\n{err}"
    );
    assert!(
        out.contains("1 passed"),
        "{path} in its own process ran no test:\n{out}"
    );
    false
}

/// A committed fixture tree ready to read: git keeps no empty directory, so
/// the ones a captured sysfs has (an empty `holders/`, a `slaves/sdX`
/// placeholder, a device directory with no attribute) are listed in the
/// tree's `EMPTY_DIRS` (written by `tests/fixtures/captured/build.py`) and
/// made again here, inside the tree (git does not see them). Idempotent.
pub fn fixture_tree(tree: &Path) -> PathBuf {
    if let Ok(list) = std::fs::read_to_string(tree.join("EMPTY_DIRS")) {
        for rel in list.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let p = Path::new(rel);
            assert!(
                p.is_relative()
                    && p.components()
                        .all(|c| matches!(c, std::path::Component::Normal(_))),
                "EMPTY_DIRS of {}: {rel:?} is not a plain relative path",
                tree.display()
            );
            std::fs::create_dir_all(tree.join(p)).unwrap();
        }
    }
    tree.to_path_buf()
}

/// A shell script in its own process group (`dd` loops, a cgroup's fio);
/// the whole group is killed and reaped on drop.
pub struct ProcessGroup(std::process::Child);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let pg = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::killpg(pg, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// `sh -c script` in its own process group, killed and reaped on drop.
pub fn spawn_group(script: &str) -> ProcessGroup {
    use std::os::unix::process::CommandExt;
    ProcessGroup(
        Command::new("sh")
            .args(["-c", script])
            .process_group(0)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("sh"),
    )
}

/// Synchronous 4 KiB writes to `/dev/{dev}` (the test's own loop device), a
/// new dd every 16 MiB so that one is always running however long the TUI
/// takes to start.
pub fn dd_to(dev: &str) -> ProcessGroup {
    spawn_group(&format!(
        "while :; do dd if=/dev/zero of=/dev/{dev} bs=4k count=4096 oflag=dsync status=none; done"
    ))
}
