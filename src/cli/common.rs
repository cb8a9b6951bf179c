//! What several subcommands share: the settings arguments of `set` and
//! `export`, the queue settings' JSON shape, and a few words and checks. A
//! leaf of `cli`: subcommands import from here, never from each other.

use super::UsageError;
use blktune_core::device::{BlockDevice, QueueSettings};
use blktune_core::export::ExportError;
use blktune_core::tuner::Wanted;
use serde::Serialize;
use std::collections::BTreeMap;

/// The settings a command asks for, flattened into `set` and `export`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SettingsArgs {
    /// Scheduler (one of the device's available ones). `set` switches to it;
    /// `export` exports it instead of the active one (keeping the live
    /// nr_requests and read_ahead_kb, written after it; dropping the old
    /// scheduler's tunables).
    #[arg(long, short = 's', value_name = "NAME")]
    pub scheduler: Option<String>,

    /// queue/nr_requests (4 to 2048; under none at most the hardware queue depth);
    /// written after the scheduler switch, which resets it.
    #[arg(long, value_name = "N")]
    pub nr_requests: Option<u64>,

    /// queue/read_ahead_kb (a multiple of the page size).
    #[arg(long, value_name = "N")]
    pub read_ahead_kb: Option<u64>,

    /// A tunable of the target scheduler, e.g. read_expire=100 (repeatable).
    #[arg(long = "tunable", short = 't', value_name = "NAME=VALUE", value_parser = parse_tunable)]
    pub tunables: Vec<(String, String)>,

    /// queue/wbt_lat_usec: write-back throttling's target read latency, in
    /// us (throttles buffered writes when reads wait longer); 0 turns it
    /// off, -1 restores the kernel's default (2000, 75000 on rotational
    /// disks). Written after the scheduler: bfq turns a default one off.
    #[arg(long, value_name = "US", allow_hyphen_values = true)]
    pub wbt_lat_usec: Option<String>,

    /// queue/nomerges: 0 tries every merge, 1 only one-hit merges, 2 none
    /// (saves CPU on random I/O).
    #[arg(long, value_name = "0-2")]
    pub nomerges: Option<String>,

    /// queue/rq_affinity: completions run on 0 any CPU, 1 the submitting
    /// CPU's group, 2 the submitting CPU itself.
    #[arg(long, value_name = "0-2")]
    pub rq_affinity: Option<String>,

    /// queue/max_sectors_kb: the largest request, in KiB (a page to
    /// max_hw_sectors_kb); 0 restores the kernel's default.
    #[arg(long, value_name = "KIB")]
    pub max_sectors_kb: Option<String>,

    /// queue/add_random: 1 feeds every completion to the entropy pool.
    #[arg(long, value_name = "0|1")]
    pub add_random: Option<String>,
}

impl SettingsArgs {
    /// The request these arguments make (empty when they name nothing).
    pub fn wanted(&self) -> Wanted {
        // In the catalogue's order, the one a change writes them in.
        let knobs = [
            ("wbt_lat_usec", &self.wbt_lat_usec),
            ("nomerges", &self.nomerges),
            ("rq_affinity", &self.rq_affinity),
            ("max_sectors_kb", &self.max_sectors_kb),
            ("add_random", &self.add_random),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v.clone()?)))
        .collect();
        Wanted {
            scheduler: self.scheduler.clone(),
            tunables: self.tunables.clone(),
            nr_requests: self.nr_requests,
            read_ahead_kb: self.read_ahead_kb,
            knobs,
        }
    }
}

/// `NAME=VALUE`.
pub fn parse_tunable(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not NAME=VALUE (example: read_expire=100)"))?;
    Ok((k.trim().to_owned(), v.trim().to_owned()))
}

/// A device's queue settings in JSON, the same keys wherever they appear
/// (`list --json`, and `before`/`after` of `set --json`).
#[derive(Debug, Serialize)]
pub struct QueueJson<'a> {
    pub scheduler: Option<&'a str>,
    pub schedulers: Vec<&'a str>,
    pub nr_requests: Option<u64>,
    pub read_ahead_kb: Option<u64>,
    pub tunables: &'a BTreeMap<String, String>,
    /// The queue settings next to the scheduler (`wbt_lat_usec`, ...), where
    /// the device has them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub knobs: &'a BTreeMap<String, String>,
}

impl<'a> From<&'a QueueSettings> for QueueJson<'a> {
    fn from(q: &'a QueueSettings) -> Self {
        let s = q.scheduler.as_ref();
        Self {
            scheduler: s.map(|s| s.active.as_str()),
            schedulers: s.map_or_else(Vec::new, |s| {
                s.available.iter().map(String::as_str).collect()
            }),
            nr_requests: q.nr_requests,
            read_ahead_kb: q.read_ahead_kb,
            tunables: &q.tunables,
            knobs: &q.knobs,
        }
    }
}

/// Is this device listed without `--all`? A device with a scheduler and
/// a stack (LVM, crypt, multipath, md, an NVMe head), unless known to be
/// empty; never a hidden NVMe path (its head is listed, as lsblk does).
pub fn shown_by_default(d: &BlockDevice) -> bool {
    (d.queue.has_scheduler() || d.stack.is_some()) && !d.is_empty() && !d.hidden
}

/// What to say when the kernel lost completions (its count is
/// machine-wide: the histogram it could not make was the only record of
/// whose they were); nothing when it lost none.
pub fn lost_note(lost: u64) -> Option<String> {
    (lost > 0).then(|| {
        format!(
            "lost {lost} I/O(s) of some device in this interval: the kernel had no room for a \
             new histogram, so latency counts may be short by as many"
        )
    })
}

/// An export error with the CLI's exit codes (2 bad input, 1 failure).
pub fn cli_error(e: ExportError) -> anyhow::Error {
    match e {
        ExportError::Tune(t) => t.into(),
        e if e.exit_code() == 2 => UsageError(e.to_string()).into(),
        e => anyhow::anyhow!(e.to_string()),
    }
}

/// `blktune: s` on stderr, on one line with control characters escaped
/// (`eprintln!` would panic on a closed stderr; a message nobody can read
/// is dropped).
pub fn warn(s: &str) {
    use std::io::Write;
    let s = blktune_core::text::printable(s);
    let _ = writeln!(std::io::stderr(), "blktune: {s}");
}

/// Was standard output closed when blktune started (`>&-`)? Then nothing
/// written there is seen, and the caller must treat its report as not
/// printed. Rust's runtime plugs a closed standard descriptor with
/// `/dev/null` opened read-write before `main` (so the first file opened
/// cannot take number 1), which made a `set >&-` exit 0 silently: that
/// read-write `/dev/null` is how a closed stdout shows. (A shell's
/// `>/dev/null` opens it write-only: a chosen silence, not reported.)
/// Should descriptor 1 still be closed, it is plugged here the same way.
pub fn stdout_was_closed() -> bool {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    use nix::sys::stat::{SFlag, fstat, makedev};
    use std::os::fd::{AsFd, AsRawFd, IntoRawFd, OwnedFd};
    let stdout = std::io::stdout();
    let flags = match fcntl(stdout.as_fd(), FcntlArg::F_GETFL) {
        Ok(flags) => OFlag::from_bits_truncate(flags),
        Err(nix::errno::Errno::EBADF) => {
            if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
                let null = OwnedFd::from(null);
                if null.as_raw_fd() == 1 {
                    // It took the free descriptor 1 itself: keep it open there.
                    let _ = null.into_raw_fd();
                } else {
                    let _ = nix::unistd::dup2_stdout(&null);
                }
            }
            return true;
        }
        Err(_) => return false,
    };
    let read_write = flags & OFlag::O_ACCMODE == OFlag::O_RDWR;
    // /dev/null is character device 1:3 (Documentation/admin-guide/devices.txt).
    let null = fstat(stdout.as_fd()).is_ok_and(|st| {
        SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFCHR
            && st.st_rdev == makedev(1, 3)
    });
    read_write && null
}

/// The one error for a journal directory (or the register of live
/// devices) `dir` that cannot be read (root's are mode 0700, so reading
/// them needs root).
pub fn journal_error(dir: &std::path::Path, e: std::io::Error) -> anyhow::Error {
    let dir = dir.display();
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        anyhow::anyhow!(
            "cannot read the journal in {dir}: permission denied; reading it needs root (try sudo)"
        )
    } else {
        anyhow::Error::new(e).context(format!("cannot read the journal in {dir}"))
    }
}
