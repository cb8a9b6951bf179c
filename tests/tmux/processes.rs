//! End to end: who does the I/O and where it goes, in the real TUI in tmux.
//! As root, `dd` writes to a loop device this test creates; `i` opens the
//! panel, which shows the dd on that device from the kernel; Esc closes it;
//! the detail pane of the loop device names its backing file. And the
//! incident of issue 35: fio on one loop device from inside a cgroup the
//! test makes, dd on another from outside it: at 80x24 the panel names fio
//! first on the first with its cgroup, dd on the other, neither on vda, and
//! the header shows the I/O pressure. Root only (they create devices);
//! skip otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::tmux::Tmux;
use common::*;

/// The first process row of the panel from the kernel (the line after its
/// `PROCESS` heading), without the box's border.
fn first_process(screen: &str) -> Option<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines.iter().position(|l| l.contains("PROCESS"))?;
    let row = lines.get(at + 1)?;
    Some(row.trim_start_matches(['│', ' ']).to_string())
}

/// The side panel's text (right of the charts' `│`), lines trimmed and
/// joined: a long path wrapped over several lines reads whole again.
fn side_panel(screen: &str) -> String {
    screen
        .lines()
        .filter(|l| l.contains('│'))
        .map(|l| l.rsplit('│').next().unwrap_or("").trim())
        .collect()
}

#[test]
fn a_dd_to_our_loop_device_shows_in_the_panel_and_its_file_in_the_detail() {
    let name = "a_dd_to_our_loop_device_shows_in_the_panel_and_its_file_in_the_detail";
    if !require_root(name) || !require_tool(name, "tmux") || !require_tool(name, "dd") {
        return;
    }
    let lo = TestLoop::new(64);
    let dev = lo.name().to_string();
    let _writer = dd_to(&dev);
    let t = Tmux::start(
        &format!(
            "{} --read-only --device {dev} --interval 250ms",
            tmux::blktune_bin()
        ),
        200,
        50,
    );
    t.wait("the device selected", |s| {
        s.lines().any(|l| l.starts_with(&format!("▶{dev} ")))
    });
    // Where the I/O goes: the loop device's backing file, in the detail pane.
    let file = lo.dev.file().display().to_string();
    let s = t.wait("the backing file in the detail pane", |s| {
        let side = side_panel(s);
        side.contains("where the I/O goes") && side.contains(&format!("file{file}"))
    });
    println!("200x50, the detail pane:\n{s}");
    t.keys(&["i"]);
    let title = format!("who does the I/O on {dev}, from the kernel");
    let s = t.wait("the dd in the panel, from the kernel", |s| {
        s.contains(&title) && first_process(s).is_some_and(|l| l.starts_with("dd "))
    });
    println!("200x50, the panel:\n{s}");
    assert!(!s.contains("approximate"), "{s}");
    // Esc closes it, as does i; the detail pane is back.
    t.keys(&["Escape"]);
    t.wait("the panel closed by Esc", |s| {
        !s.contains(&title) && side_panel(s).contains("where the I/O goes")
    });
    t.keys(&["i"]);
    t.wait("the panel open again", |s| s.contains(&title));
    t.keys(&["i"]);
    t.wait("the panel closed by i", |s| !s.contains(&title));
    t.keys(&["q"]);
    let s = t.wait("the exit after q", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{s}");
}

/// A cgroup this test makes under the cgroup v2 tree (`/sys/fs/cgroup` on a
/// host with only v2, `/sys/fs/cgroup/unified` on a hybrid one), removed on
/// drop once what ran in it is gone.
struct TestCgroup(std::path::PathBuf);

impl TestCgroup {
    fn new() -> Option<Self> {
        let root = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .into_iter()
            .map(std::path::PathBuf::from)
            .find(|d| d.join("cgroup.controllers").is_file())?;
        let dir = root.join(format!("blktune-test-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        Some(Self(dir))
    }

    fn name(&self) -> String {
        self.0.file_name().unwrap().to_string_lossy().into_owned()
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // Everything in it, killed: fio's job process leaves the process
        // group the test kills (it ran on for its 120 s, holding the loop
        // device, and the cgroup was never removed). `cgroup.kill` (Linux
        // 5.14), else each pid of `cgroup.procs`.
        if std::fs::write(self.0.join("cgroup.kill"), "1").is_err() {
            let procs = std::fs::read_to_string(self.0.join("cgroup.procs")).unwrap_or_default();
            for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        // The kernel may take a moment to let go of their css.
        common::wait_until(std::time::Duration::from_secs(10), || {
            std::fs::remove_dir(&self.0).is_ok() || !self.0.exists()
        });
    }
}

/// The panel at 80x24 says who does each device's I/O, from the kernel: fio
/// (in the test's cgroup) first on one loop device, dd (outside it) on the
/// other, neither on vda; the header shows the system's I/O pressure.
#[test]
fn at_80x24_the_panel_names_fio_with_its_cgroup_and_dd_on_their_devices_only() {
    let name = "at_80x24_the_panel_names_fio_with_its_cgroup_and_dd_on_their_devices_only";
    if !require_root(name)
        || !require_tool(name, "tmux")
        || !require_tool(name, "fio")
        || !require_tool(name, "dd")
    {
        return;
    }
    let (a, b) = (TestLoop::new(64), TestLoop::new(64));
    let (dev_a, dev_b) = (a.name().to_string(), b.name().to_string());
    let cg = TestCgroup::new().expect("a cgroup under the cgroup v2 tree");
    let cg_name = cg.name();
    // Declared after the cgroup: killed before it is removed.
    let _fio = spawn_group(&format!(
        "echo $$ > {}/cgroup.procs && exec fio --name=load --filename=/dev/{dev_a} \
         --rw=randread --bs=4k --iodepth=4 --direct=1 --ioengine=libaio --time_based \
         --runtime=120 --output=/dev/null",
        cg.0.display()
    ));
    let _dd = spawn_group(&format!(
        "while :; do dd if=/dev/zero of=/dev/{dev_b} bs=4k count=4096 oflag=direct status=none; done"
    ));
    let t = Tmux::start(
        &format!(
            "{} --read-only --device {dev_a} --interval 250ms",
            tmux::blktune_bin()
        ),
        80,
        24,
    );
    t.wait("the device selected", |s| {
        s.lines().any(|l| l.starts_with(&format!("▶{dev_a} ")))
    });
    t.keys(&["i"]);
    let s = t.wait("fio first on the first device, with its cgroup", |s| {
        s.contains(&format!("who does the I/O on {dev_a}"))
            && first_process(s).is_some_and(|l| l.starts_with("fio ") && l.contains(&cg_name))
    });
    println!("80x24, {dev_a}:\n{s}");
    let header = s.lines().next().unwrap();
    assert!(
        header.contains("psi "),
        "the header shows the I/O pressure: {header}"
    );
    assert!(!s.lines().any(|l| l.contains("│dd ")), "{s}");
    // The cgroup's own row, with its name.
    let cg_row = s.lines().skip_while(|l| !l.contains("PSI")).nth(1).unwrap();
    assert!(cg_row.contains(&cg_name), "{s}");
    // The other device (filtered to its row, then selected): dd, not fio.
    let select = |dev: &str| {
        t.keys(&["/"]);
        t.keys(&["C-u"]);
        t.literal(dev);
        t.keys(&["Enter"]);
        t.keys(&["Down"]);
    };
    select(&dev_b);
    let s = t.wait("dd first on the other device", |s| {
        s.contains(&format!("who does the I/O on {dev_b}"))
            && first_process(s).is_some_and(|l| l.starts_with("dd "))
    });
    println!("80x24, {dev_b}:\n{s}");
    assert!(!s.lines().any(|l| l.contains("│fio ")), "{s}");
    // vda: neither of them.
    select("vda");
    t.wait("the panel on vda", |s| {
        s.contains("who does the I/O on vda")
            && (first_process(s).is_some()
                || s.contains("vda did no I/O")
                || s.contains("vda: none"))
    });
    // A few intervals, so that a wrong attribution would have shown.
    let s = t.wait_redraws("a few intervals on vda", 4);
    println!("80x24, vda:\n{s}");
    assert!(s.contains("who does the I/O on vda"), "{s}");
    assert!(
        !s.lines().any(|l| l.contains("│fio ") || l.contains("│dd ")),
        "{s}"
    );
    t.keys(&["q"]);
    let s = t.wait("the exit after q", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{s}");
}
