//! `blktune exporter` on a fake tree: what it serves (promtool accepts it),
//! and how it treats hostile clients: an oversized request, a silent one,
//! garbage, other methods and paths, more connections than it serves at
//! once. Each is one short answer and a closed socket, and /metrics keeps
//! answering meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use blktune_core::fake::FakeDisk;
use common::fake_host::FakeHost;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The exporter on a fake host, killed on drop.
struct Exporter {
    child: Child,
    addr: String,
    _host: FakeHost,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start it on port 0 and read the address it prints.
fn start() -> Exporter {
    let host = FakeHost::new(&[
        FakeDisk::new("sda")
            .dev(8, 0)
            .model("Samsung SSD 860", Some("ATA")),
        FakeDisk::new("nvme0n1").dev(259, 0).active("none"),
    ]);
    // A deployed rule: kyber for sda.
    let rules = host.path("etc/udev/rules.d");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("61-blktune.rules"),
        "ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"sda\", ATTR{queue/scheduler}=\"kyber\"\n",
    )
    .unwrap();
    let config_root = host.dir.path().to_str().unwrap().to_owned();
    let mut child = host
        .command(&[
            "exporter",
            "--listen",
            "127.0.0.1:0",
            "--config-root",
            &config_root,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("blktune exporter: listening on http://")
        .and_then(|a| a.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_owned();
    Exporter {
        child,
        addr,
        _host: host,
    }
}

/// Send `request` as it is and read the whole answer (the server closes).
fn exchange(addr: &str, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The status line of an answer.
fn status(answer: &str) -> &str {
    answer.lines().next().unwrap_or_default()
}

/// GET /metrics: its body.
fn metrics(addr: &str) -> String {
    let a = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(status(&a), "HTTP/1.1 200 OK", "{a}");
    assert!(a.contains("Content-Type: text/plain; version=0.0.4"), "{a}");
    a.split_once("\r\n\r\n").unwrap().1.to_owned()
}

#[test]
fn serves_the_settings_families_and_says_why_there_is_no_latency() {
    let e = start();
    // The rules are evaluated off the scrape path: they show within moments.
    let mut text = String::new();
    assert!(common::wait_until(Duration::from_secs(10), || {
        text = metrics(&e.addr);
        text.contains("blktune_rule_scheduler_info{")
    }));
    for want in [
        "blktune_queue_info{device=\"sda\",major=\"8\",minor=\"0\",wwn=\"\",serial=\"\",model=\"Samsung SSD 860\",scheduler=\"mq-deadline\"} 1\n",
        "blktune_queue_info{device=\"nvme0n1\",major=\"259\",minor=\"0\",",
        "blktune_nr_requests{device=\"sda\",major=\"8\",minor=\"0\"} ",
        "# TYPE blktune_iosched_tunable gauge\n",
        "blktune_exporter_scrape_seconds ",
        // What the deployed rule sets, next to what is active (mq-deadline).
        "blktune_rule_scheduler_info{device=\"sda\",major=\"8\",minor=\"0\",scheduler=\"kyber\",file=\"",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    // A fake tree is not the kernel's: no tracer, and the reason is said.
    let tracing = text
        .lines()
        .find(|l| l.starts_with("blktune_latency_tracing{"))
        .unwrap();
    assert!(tracing.ends_with("} 0"), "{tracing}");
    assert!(
        !text.contains("blktune_io_latency_seconds_bucket"),
        "{text}"
    );
    if common::require_tool("exporter_promtool", "promtool") {
        common::assert_promtool_accepts(&text);
    }
    let index = exchange(&e.addr, b"GET / HTTP/1.0\r\n\r\n");
    assert!(index.contains("/metrics"), "{index}");
    let head = exchange(&e.addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(status(&head), "HTTP/1.1 200 OK");
    assert!(head.ends_with("\r\n\r\n"), "no body for HEAD: {head}");
}

#[test]
fn hostile_clients_get_one_short_answer_and_metrics_keep_answering() {
    let e = start();
    // Other methods and paths, garbage.
    let post = exchange(
        &e.addr,
        b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert_eq!(status(&post), "HTTP/1.1 405 Method Not Allowed", "{post}");
    assert!(post.contains("Allow: GET, HEAD"));
    let other = exchange(&e.addr, b"GET /../../etc/shadow HTTP/1.1\r\n\r\n");
    assert_eq!(status(&other), "HTTP/1.1 404 Not Found", "{other}");
    let junk = exchange(
        &e.addr,
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
    );
    assert_eq!(status(&junk), "HTTP/1.1 400 Bad Request", "{junk}");
    // A request that never ends: cut at 8 KiB with 431, never read to its end.
    let mut s = TcpStream::connect(&e.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\n");
    let filler = format!("X-Filler: {}\r\n", "a".repeat(1000));
    let mut sent = 0;
    while sent < 64 * 1024 && s.write_all(filler.as_bytes()).is_ok() {
        sent += filler.len();
    }
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert_eq!(
        status(&answer),
        "HTTP/1.1 431 Request Header Fields Too Large",
        "{answer}"
    );
    drop(s);
    // Every earlier connection's thread has ended once only the main and the
    // rules threads are left.
    let threads = || {
        std::fs::read_dir(format!("/proc/{}/task", e.child.id()))
            .unwrap()
            .count()
    };
    assert!(common::wait_until(Duration::from_secs(5), || threads() == 2));
    // Silent clients hold a slot each, at most until the read deadline;
    // beyond the limit a connection is answered 503 at once, and once the
    // silent ones are dropped, /metrics answers again.
    let mut silent: Vec<TcpStream> = (0..8)
        .map(|_| TcpStream::connect(&e.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let busy = exchange(&e.addr, b"GET /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(status(&busy), "HTTP/1.1 503 Service Unavailable", "{busy}");
    // A silent client is closed by the server within its deadline (5 s).
    let mut one = silent.remove(0);
    one.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let t = Instant::now();
    let mut buf = Vec::new();
    let _ = one.read_to_end(&mut buf);
    assert!(buf.is_empty(), "{buf:?}");
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    drop(one);
    drop(silent);
    assert!(common::wait_until(Duration::from_secs(10), || {
        status(&exchange(&e.addr, b"GET /metrics HTTP/1.1\r\n\r\n")) == "HTTP/1.1 200 OK"
    }));
    assert!(metrics(&e.addr).contains("blktune_queue_info"));
}

#[test]
fn a_bad_listen_address_or_bucket_density_is_bad_input() {
    let host = FakeHost::new(&[FakeDisk::new("sda").dev(8, 0)]);
    let o = host.run(&["exporter", "--buckets-per-octave", "3"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = host.run(&["exporter", "--listen", "localhost"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
