//! `blktune exporter`: a long-running Prometheus exporter. What
//! node_exporter lacks, per device: the active scheduler (an info series),
//! nr_requests, read-ahead, the scheduler's tunables, and the kernel's
//! per-I/O latency as cumulative histograms per op (read, write, discard,
//! flush) and span (total: from the start of the I/O, what r_await
//! averages; device: from its issue), with the tracer's lost completions.
//!
//! Each scrape reads sysfs and the BPF maps once (one scrape at a time:
//! [`Collector`] sits behind a mutex); nothing is sampled between scrapes,
//! so the cost is the tracer's per-I/O cost plus one read per scrape
//! (`benches/exporter.rs` prints it at 1000 devices). The histograms count
//! from the moment the exporter loaded the program: a restart is a counter
//! reset, which `rate()` handles.
//!
//! The HTTP side ([`http`]) serves `GET /metrics` and `GET /` on the
//! `--listen` address (default 127.0.0.1, port [`DEFAULT_PORT`]), one
//! request per connection, at most [`MAX_CONNECTIONS`] at once.

mod http;

use super::common::shown_by_default;
use super::{Global, Out};
use anyhow::Context;
use blktune_core::device::{self, BlockDevice};
use blktune_core::export::{StableIds, UdevDb};
use blktune_core::latency::{Readings, Tracer};
use blktune_core::metrics::{
    DeviceLabels, Exposition, Kind, histogram, op_label, queue, span_label,
};
use blktune_core::os::SysRoot;
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The default port: the Prometheus exporters' range 9100-9999 is full, and
/// allocations continue above 10000 (see the project's default port
/// allocations wiki page).
pub const DEFAULT_PORT: u16 = 10215;

/// Connections served at once; more are answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 8;

/// Arguments of `blktune exporter`.
#[derive(Debug, clap::Args)]
pub struct ExporterArgs {
    /// Address to listen on: IP:PORT (port 0: any free port, printed at start).
    /// Default 127.0.0.1:10215; listen on another address only behind a
    /// firewall or a proxy (the metrics name the host's disks).
    #[arg(long, value_name = "ADDR", default_value_t = SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)))]
    pub listen: SocketAddr,

    /// Histogram buckets per power of two (1, 2, 4, 8, 16, 32 or 64): every
    /// bound is an edge of the kernel histogram's slots; more buckets, finer
    /// histogram_quantile, more series (per device, op and span: 46 buckets
    /// at 2, 90 at 4).
    #[arg(long, value_name = "N", default_value_t = histogram::DEFAULT_PER_OCTAVE, value_parser = parse_per_octave)]
    pub buckets_per_octave: u32,

    /// The udev database (ID_WWN, ID_SERIAL, ID_MODEL); default
    /// /run/udev/data, none with another --sysfs-root.
    #[arg(long, value_name = "DIR")]
    pub udev_db: Option<std::path::PathBuf>,

    /// Root of the udev configuration whose rules are read for
    /// blktune_rule_scheduler_info: <DIR>/etc/udev/rules.d, ... (tests use a fake tree).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub config_root: std::path::PathBuf,
}

/// How often the rules files and devices are looked at for a change.
const RULES_CHECK: std::time::Duration = std::time::Duration::from_secs(30);

/// `--buckets-per-octave`: a divisor of the kernel's 64 slots per power of two.
fn parse_per_octave(text: &str) -> Result<u32, String> {
    let n: u32 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if !histogram::PER_OCTAVE_CHOICES.contains(&n) {
        return Err(format!(
            "buckets per octave '{text}' must be one of 1, 2, 4, 8, 16, 32, 64 (a divisor of the kernel's 64 slots)"
        ));
    }
    Ok(n)
}

/// What one scrape reads: the tree, the udev database and the tracer.
struct Collector {
    root: SysRoot,
    db: UdevDb,
    tracer: Result<Tracer, String>,
    per_octave: u32,
    /// The scheduler the udev rules set per device (name to (scheduler,
    /// file)), kept up to date by [`watch_rules`]; `None` until its first pass.
    rules: Arc<Mutex<Option<RuleSchedulers>>>,
    /// Each device's identity and udev properties from its last full read,
    /// by name: kept while its diskseq stays and for [`IDENTITY_REFRESH`].
    known: BTreeMap<String, Known>,
    /// The last scrape's text once it was sent ([`Collector::recycle`]):
    /// the next one is written into it. Holds the memory of one scrape.
    spare: String,
}

/// A device read in full, and when.
struct Known {
    device: BlockDevice,
    env: BTreeMap<String, String>,
    ids: StableIds,
    read_at: Instant,
    /// Its tunables' names, as last listed.
    tunable_names: device::TunableNames,
}

/// How long a device's identity and udev properties are kept (its queue
/// settings are read at every scrape).
const IDENTITY_REFRESH: std::time::Duration = std::time::Duration::from_secs(300);

/// The scheduler the udev rules set per device: name to (scheduler, file).
type RuleSchedulers = BTreeMap<String, (String, String)>;

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("tracing", &self.tracer.is_ok())
            .field("per_octave", &self.per_octave)
            .finish()
    }
}

impl Collector {
    /// The shown devices (a scheduler and a size), in natural order: each
    /// one's queue settings read now; its identity and udev properties from
    /// [`Self::known`] while its diskseq is the same and the read is recent,
    /// else read in full. A device without a size (a detached loop device)
    /// costs one read.
    fn read_devices(&mut self) -> Vec<BlockDevice> {
        let names = self.root.block_names().unwrap_or_default();
        let mut out = Vec::new();
        for dev in &names {
            let mut probe = BlockDevice::unread(dev.as_str());
            probe.read_size(&self.root, dev);
            if probe.size_bytes == 0 {
                continue;
            }
            probe.read_diskseq(&self.root, dev);
            let fresh = self.known.get_mut(dev.as_str()).filter(|k| {
                k.device.diskseq == probe.diskseq && k.read_at.elapsed() < IDENTITY_REFRESH
            });
            let d = if let Some(known) = fresh {
                let mut d = known.device.clone();
                d.size_bytes = probe.size_bytes;
                d.queue = device::QueueSettings::read_with_tunables(
                    &self.root,
                    dev,
                    &mut known.tunable_names,
                );
                d
            } else {
                let d = BlockDevice::read(&self.root, dev);
                let env = self.db.properties(d.major, d.minor);
                let links = self.db.links(d.major, d.minor);
                let ids = StableIds::of(&d, &env, &links);
                self.known.insert(
                    d.name.clone(),
                    Known {
                        device: d.clone(),
                        env,
                        ids,
                        read_at: Instant::now(),
                        tunable_names: device::TunableNames::default(),
                    },
                );
                d
            };
            if shown_by_default(&d) {
                out.push(d);
            }
        }
        // Devices gone since: forgotten.
        self.known
            .retain(|name, _| names.iter().any(|n| n.as_str() == name));
        out
    }

    /// The text of one scrape.
    fn scrape(&mut self) -> String {
        let started = Instant::now();
        let devs = self.read_devices();
        let readings = self.read_tracer();
        self.render(started, &devs, readings.as_ref())
    }

    /// A scrape's text once sent: the next scrape writes into it.
    fn recycle(&mut self, text: String) {
        self.spare = text;
    }

    /// The tracer's counts now; a failed read stops tracing (the reason is
    /// then served by blktune_latency_tracing).
    fn read_tracer(&mut self) -> Option<Readings> {
        match &mut self.tracer {
            Ok(t) => match t.read() {
                Ok(r) => Some(r),
                Err(e) => {
                    self.tracer = Err(format!("a read of the kernel's histograms failed: {e}"));
                    None
                }
            },
            Err(_) => None,
        }
    }

    /// The text of a scrape that began at `started`, of `devs` (from
    /// [`Self::read_devices`]) and the tracer's `readings`.
    fn render(
        &mut self,
        started: Instant,
        devs: &[BlockDevice],
        readings: Option<&Readings>,
    ) -> String {
        let shown: Vec<&BlockDevice> = devs.iter().collect();
        let env: BTreeMap<String, BTreeMap<String, String>> = shown
            .iter()
            .filter_map(|d| Some((d.name.clone(), self.known.get(&d.name)?.env.clone())))
            .collect();
        let ids: BTreeMap<String, StableIds> = shown
            .iter()
            .filter_map(|d| Some((d.name.clone(), self.known.get(&d.name)?.ids.clone())))
            .collect();
        let mut out = Exposition::reusing(std::mem::take(&mut self.spare));
        queue::render(
            &mut out,
            &queue::QueueSnapshot {
                devices: &shown,
                ids: &ids,
                udev_env: &env,
            },
        );
        render_latency(&mut out, &shown, readings, self.per_octave);
        self.render_rules(&mut out, &shown);
        let why = self
            .tracer
            .as_ref()
            .err()
            .map(String::as_str)
            .unwrap_or_default();
        out.family(
            "blktune_latency_tracing",
            Kind::Gauge,
            "1 while the kernel's per-I/O latency is traced (blktune_io_latency_seconds); 0 with the reason.",
        );
        out.sample(
            "blktune_latency_tracing",
            &[("reason", why)],
            u8::from(self.tracer.is_ok()),
        );
        out.family(
            "blktune_exporter_scrape_seconds",
            Kind::Gauge,
            "Time this scrape took to read sysfs and the kernel's histograms and render them.",
        );
        out.sample(
            "blktune_exporter_scrape_seconds",
            &[],
            started.elapsed().as_secs_f64(),
        );
        out.finish()
    }
}

impl Collector {
    /// `blktune_rule_scheduler_info`: the scheduler the udev rules set on
    /// each shown device, as [`watch_rules`] last evaluated them.
    fn render_rules(&self, out: &mut Exposition, shown: &[&BlockDevice]) {
        out.family(
            "blktune_rule_scheduler_info",
            Kind::Gauge,
            "The scheduler the udev rules set on the device (the last rules file that sets it), value always 1.",
        );
        let Ok(guard) = self.rules.lock() else {
            return;
        };
        let Some(set) = guard.as_ref() else {
            return;
        };
        for d in shown {
            if let Some((scheduler, file)) = set.get(&d.name) {
                let l = DeviceLabels::of(d);
                out.sample(
                    "blktune_rule_scheduler_info",
                    &l.with(&[("scheduler", scheduler), ("file", file)]),
                    1,
                );
            }
        }
    }
}

/// What the rules' outcome depends on: every rules file's name, size and
/// modification time, and the devices with a size (name and diskseq: two
/// reads each, not a full read).
fn rules_signature(config_root: &std::path::Path, root: &SysRoot) -> Vec<String> {
    use blktune_core::export::check::search;
    let (_, files) = search::rules_files(config_root);
    let mut sig: Vec<String> = files
        .iter()
        .map(|f| {
            let m = std::fs::metadata(f).ok();
            format!(
                "{}:{:?}:{:?}",
                f.display(),
                m.as_ref().map(std::fs::Metadata::len),
                m.and_then(|m| m.modified().ok())
            )
        })
        .collect();
    for dev in root.block_names().unwrap_or_default() {
        let mut d = BlockDevice::unread(dev.as_str());
        d.read_size(root, &dev);
        if d.size_bytes > 0 {
            d.read_diskseq(root, &dev);
            sig.push(format!("{}@{:?}", d.name, d.diskseq));
        }
    }
    sig
}

/// Keep `rules` up to date, off the scrape path: every [`RULES_CHECK`] look
/// at the rules files and the devices, and evaluate the whole search path
/// (as `export --check` does, for a change event) only when they changed.
/// Evaluating a search path for 1000 devices takes seconds; looking, a few
/// `stat` calls.
fn watch_rules(
    root: SysRoot,
    db: UdevDb,
    config_root: std::path::PathBuf,
    rules: Arc<Mutex<Option<RuleSchedulers>>>,
) {
    use blktune_core::export::check::search;
    let mut last: Option<Vec<String>> = None;
    loop {
        let sig = rules_signature(&config_root, &root);
        if last.as_ref() != Some(&sig) {
            let devs: Vec<BlockDevice> = device::discover_shown(&root, device::Identity::Full)
                .unwrap_or_default()
                .into_iter()
                .filter(shown_by_default)
                .collect();
            let report = search::check_search_path(&config_root, &root, &db, &devs);
            let set: RuleSchedulers = report
                .devices
                .iter()
                .filter_map(|d| {
                    let o = d.result.iter().find(|o| o.attr == "queue/scheduler")?;
                    Some((d.device.clone(), (o.value.clone(), o.file.clone())))
                })
                .collect();
            if let Ok(mut r) = rules.lock() {
                *r = Some(set);
            }
            last = Some(sig);
        }
        std::thread::sleep(RULES_CHECK);
    }
}

/// The histograms of every shown device (of the same diskseq: an earlier
/// device's I/O under the same number is never shown as the new one's) and
/// the lost completions.
fn render_latency(
    out: &mut Exposition,
    shown: &[&BlockDevice],
    readings: Option<&Readings>,
    per_octave: u32,
) {
    let Some(r) = readings else {
        return;
    };
    let labels: Vec<(DeviceLabels, &blktune_core::latency::DeviceHists)> = shown
        .iter()
        .filter_map(|d| {
            let id = blktune_core::latency::DevId {
                major: d.major,
                minor: d.minor,
            };
            let h = r.devices.get(&id)?;
            d.diskseq
                .is_none_or(|s| s == h.diskseq)
                .then(|| (DeviceLabels::of(d), h))
        })
        .collect();
    let series: Vec<histogram::Series<'_>> = labels
        .iter()
        .flat_map(|(l, h)| {
            h.hists
                .iter()
                .map(move |(&(span, dir), hist)| histogram::Series {
                    device: l,
                    op: op_label(dir),
                    span: span_label(span),
                    hist,
                })
        })
        .collect();
    histogram::render(out, &series, per_octave);
    out.family(
        "blktune_io_latency_lost_total",
        Kind::Counter,
        "Completions the kernel could not count (no room for a new histogram), of any device, since the tracer started.",
    );
    out.sample("blktune_io_latency_lost_total", &[], r.lost);
}

/// The landing page.
const INDEX: &str =
    "blktune exporter: block queue settings and the kernel's per-I/O latency.\nMetrics: /metrics\n";

/// The Content-Type of `/metrics`: Prometheus's text format 0.0.4.
const METRICS_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Serve one connection: read the request, answer, close.
fn serve(mut stream: TcpStream, collector: &Mutex<Collector>) {
    let head = match http::read_head(&mut stream) {
        Ok(Some(h)) => h,
        // Closed, silent past the deadline, or a socket error: nothing to answer.
        Ok(None) | Err(_) => return,
    };
    let request = match head {
        Ok(h) => http::parse(&h),
        Err(r) => r,
    };
    let _ = match request {
        http::Request::Get {
            route: http::Route::Metrics,
            head,
        } => {
            let text = match collector.lock() {
                Ok(mut c) => c.scrape(),
                Err(_) => return,
            };
            let sent = http::respond(&mut stream, 200, METRICS_TYPE, text.as_bytes(), head);
            if let Ok(mut c) = collector.lock() {
                c.recycle(text);
            }
            sent
        }
        http::Request::Get {
            route: http::Route::Index,
            head,
        } => http::respond(
            &mut stream,
            200,
            "text/plain; charset=utf-8",
            INDEX.as_bytes(),
            head,
        ),
        refused => {
            let (code, body) = http::refusal(refused);
            http::respond(
                &mut stream,
                code,
                "text/plain; charset=utf-8",
                body.as_bytes(),
                false,
            )
        }
    };
    http::close_gracefully(&mut stream);
}

/// Run `blktune exporter` (until killed).
pub fn run(global: &Global, args: &ExporterArgs, out: &mut Out) -> anyhow::Result<i32> {
    let root = global.root();
    let db = match &args.udev_db {
        Some(dir) => UdevDb::new(dir),
        None if root.is_live() => UdevDb::default(),
        None => UdevDb::none(),
    };
    // The program loads before the socket opens: the first scrape has histograms.
    let tracer = Tracer::start(global.no_bpf, root.is_live()).map_err(|e| e.to_string());
    if let Err(why) = &tracer {
        eprintln!(
            "blktune: exporter: no latency histograms: {}",
            blktune_core::text::printable(why)
        );
    }
    let listener = TcpListener::bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    out.line(&format!(
        "blktune exporter: listening on http://{addr}/metrics"
    ))?;
    let rules = Arc::new(Mutex::new(None));
    {
        let (root, db, config_root, rules) = (
            root.clone(),
            db.clone(),
            args.config_root.clone(),
            Arc::clone(&rules),
        );
        std::thread::Builder::new()
            .name("blktune-rules".into())
            .spawn(move || watch_rules(root, db, config_root, rules))
            .context("cannot start the rules thread")?;
    }
    let collector = Arc::new(Mutex::new(Collector {
        root,
        db,
        tracer,
        per_octave: args.buckets_per_octave,
        rules,
        known: BTreeMap::new(),
        spare: String::new(),
    }));
    let busy = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else {
            // Out of descriptors or memory: wait a moment rather than spin.
            std::thread::sleep(std::time::Duration::from_millis(100));
            continue;
        };
        if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            busy.fetch_sub(1, Ordering::SeqCst);
            // Answered at once: what the request sent so far is read without
            // waiting (so that closing does not reset the answer), no more.
            let _ = stream.set_nonblocking(true);
            let mut buf = [0u8; http::MAX_REQUEST];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = stream.set_nonblocking(false);
            let _ = http::respond(&mut stream, 503, "text/plain", b"busy\n", false);
            let _ = stream.shutdown(std::net::Shutdown::Write);
            continue;
        }
        let collector = Arc::clone(&collector);
        let busy_here = Arc::clone(&busy);
        let spawned = std::thread::Builder::new()
            .name("blktune-http".into())
            .spawn(move || {
                serve(stream, &collector);
                busy_here.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            busy.fetch_sub(1, Ordering::SeqCst);
        }
    }
    Ok(0)
}

/// What `benches/exporter.rs` drives: a scrape of a tree with latency
/// readings it supplies (a fake tree has no tracer), read, rendered and
/// answered by the live scrape's code. Not reachable from the command line.
#[doc(hidden)]
pub mod bench {
    use super::{BTreeMap, BlockDevice, Collector, Instant, METRICS_TYPE, Readings, SysRoot, http};
    use blktune_core::export::UdevDb;
    use std::net::TcpStream;
    use std::sync::{Arc, Mutex};

    /// A collector of one tree, without a tracer of its own.
    #[derive(Debug)]
    pub struct Scraper(Collector);

    impl Scraper {
        /// A scraper of `root` (no udev database) whose rules set
        /// `rules` (device name to (scheduler, file)).
        pub fn new(
            root: SysRoot,
            per_octave: u32,
            rules: BTreeMap<String, (String, String)>,
        ) -> Self {
            Self(Collector {
                root,
                db: UdevDb::none(),
                tracer: Err("the benchmark supplies the readings".into()),
                per_octave,
                rules: Arc::new(Mutex::new(Some(rules))),
                known: BTreeMap::new(),
                spare: String::new(),
            })
        }

        /// The text of one scrape whose tracer read gave `readings`.
        pub fn text(&mut self, readings: &Readings) -> String {
            let started = Instant::now();
            let devs: Vec<BlockDevice> = self.0.read_devices();
            self.0.render(started, &devs, Some(readings))
        }

        /// Give a scrape's text back, as the exporter does once it is sent.
        pub fn recycle(&mut self, text: String) {
            self.0.recycle(text);
        }

        /// One scrape answered on `stream` as `GET /metrics` is: the body's length.
        pub fn serve(
            &mut self,
            readings: &Readings,
            stream: &mut TcpStream,
        ) -> std::io::Result<usize> {
            let text = self.text(readings);
            http::respond(stream, 200, METRICS_TYPE, text.as_bytes(), false)?;
            let len = text.len();
            self.0.recycle(text);
            Ok(len)
        }
    }
}
