//! The exporter's HTTP, on std alone: one request per connection, read
//! with a size cap and a deadline, answered and closed. Only `GET` (and
//! `HEAD`) of `/metrics` and `/` are served; anything else gets its status
//! line and nothing more. Every byte read is hostile: a request line or
//! header block over [`MAX_REQUEST`] bytes, a client slower than
//! [`READ_DEADLINE`], a line that is not HTTP/1.x: each is one short answer
//! (or none) and a closed socket, never a stuck thread or unbounded memory.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The most a request (line and headers) may take: Prometheus sends ~300 bytes.
pub const MAX_REQUEST: usize = 8 * 1024;

/// The whole request must arrive within this.
pub const READ_DEADLINE: Duration = Duration::from_secs(5);

/// A response must be taken within this.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Metrics,
    Index,
}

/// A request read and understood, or why it is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `GET` (`head`: `HEAD`, no body) of a route.
    Get { route: Route, head: bool },
    /// 400: not an HTTP/1.x request line.
    Bad,
    /// 404: another path.
    NotFound,
    /// 405: another method.
    MethodNotAllowed,
    /// 431: the request line and headers did not fit [`MAX_REQUEST`].
    TooLarge,
}

/// Parse the head of a request (up to the blank line): only its request
/// line matters. Pure: the tests give it hostile bytes.
pub fn parse(head: &[u8]) -> Request {
    let Ok(text) = std::str::from_utf8(head) else {
        return Request::Bad;
    };
    let line = text.split("\r\n").next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Request::Bad;
    };
    if !matches!(version, "HTTP/1.0" | "HTTP/1.1") || !target.starts_with('/') {
        return Request::Bad;
    }
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        m if !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase()) => {
            return Request::MethodNotAllowed;
        }
        _ => return Request::Bad,
    };
    // Query strings are ignored (Prometheus sends none).
    let path = target.split('?').next().unwrap_or_default();
    let route = match path {
        "/metrics" => Route::Metrics,
        "/" => Route::Index,
        _ => return Request::NotFound,
    };
    Request::Get {
        route,
        head: head_only,
    }
}

/// Read a request's head from `stream`: up to the blank line, at most
/// [`MAX_REQUEST`] bytes, within [`READ_DEADLINE`]. `Ok(None)` when the
/// client closed or went silent before a whole head arrived.
pub fn read_head(stream: &mut TcpStream) -> io::Result<Option<Result<Vec<u8>, Request>>> {
    let start = Instant::now();
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    loop {
        let left = READ_DEADLINE.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Ok(None);
        }
        stream.set_read_timeout(Some(left))?;
        let n = match stream.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(None);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = find_blank_line(&head) {
            head.truncate(end);
            return Ok(Some(Ok(head)));
        }
        if head.len() > MAX_REQUEST {
            return Ok(Some(Err(Request::TooLarge)));
        }
    }
}

/// Where the head ends (`\r\n\r\n`, or a bare `\n\n`).
fn find_blank_line(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .or_else(|| bytes.windows(2).position(|w| w == b"\n\n"))
}

/// The status line's code and reason.
fn status(code: u16) -> &'static str {
    match code {
        200 => "200 OK",
        400 => "400 Bad Request",
        404 => "404 Not Found",
        405 => "405 Method Not Allowed",
        431 => "431 Request Header Fields Too Large",
        503 => "503 Service Unavailable",
        _ => "500 Internal Server Error",
    }
}

/// Write a whole response and close: status, content type and length,
/// `Connection: close`, then `body` unless `head`.
pub fn respond(
    stream: &mut TcpStream,
    code: u16,
    content_type: &str,
    body: &[u8],
    head: bool,
) -> io::Result<()> {
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut extra = String::new();
    if code == 405 {
        extra.push_str("Allow: GET, HEAD\r\n");
    }
    let header = format!(
        "HTTP/1.1 {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        status(code),
        body.len()
    );
    stream.write_all(header.as_bytes())?;
    if !head {
        stream.write_all(body)?;
    }
    stream.flush()
}

/// Close after answering: shut the sending side, then read and drop what
/// the client still sends (at most 64 KiB, at most a second), so that the
/// kernel does not reset the connection over unread bytes, which would
/// discard the answer before the client reads it.
pub fn close_gracefully(stream: &mut TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    let mut drained = 0;
    while drained < 64 * 1024 && start.elapsed() < Duration::from_secs(1) {
        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

/// The answer to a refused request: its code and a one-line body.
pub fn refusal(r: Request) -> (u16, &'static str) {
    match r {
        Request::Bad => (400, "bad request\n"),
        Request::NotFound => (404, "not found: blktune serves /metrics\n"),
        Request::MethodNotAllowed => (405, "only GET and HEAD\n"),
        Request::TooLarge => (431, "request too large\n"),
        Request::Get { .. } => (500, "\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_only_get_and_head_of_metrics_and_the_index() {
        let get = |t: &str| parse(format!("GET {t} HTTP/1.1\r\nHost: x\r\n").as_bytes());
        assert_eq!(
            get("/metrics"),
            Request::Get {
                route: Route::Metrics,
                head: false
            }
        );
        assert_eq!(
            get("/metrics?x=1"),
            Request::Get {
                route: Route::Metrics,
                head: false
            }
        );
        assert_eq!(
            get("/"),
            Request::Get {
                route: Route::Index,
                head: false
            }
        );
        assert_eq!(
            parse(b"HEAD /metrics HTTP/1.0\r\n"),
            Request::Get {
                route: Route::Metrics,
                head: true
            }
        );
        assert_eq!(get("/metrics/../etc/passwd"), Request::NotFound);
        assert_eq!(get("/favicon.ico"), Request::NotFound);
        assert_eq!(
            parse(b"POST /metrics HTTP/1.1\r\n"),
            Request::MethodNotAllowed
        );
        assert_eq!(parse(b"DELETE / HTTP/1.1\r\n"), Request::MethodNotAllowed);
    }

    #[test]
    fn hostile_request_lines_are_bad_requests() {
        for bad in [
            &b""[..],
            b"GET",
            b"GET /metrics",
            b"GET /metrics HTTP/2.0\r\n",
            b"GET /metrics HTTP/1.1 extra\r\n",
            b"GET  /metrics HTTP/1.1\r\n",
            b"GET metrics HTTP/1.1\r\n",
            b"get /metrics HTTP/1.1\r\n",
            b"GET /metrics\x00 HTTP/1.1\r\n",
            b"\xff\xfe GET / HTTP/1.1\r\n",
            b"SSH-2.0-OpenSSH_9.2\r\n",
        ] {
            let r = parse(bad);
            assert!(
                matches!(r, Request::Bad | Request::NotFound),
                "{:?}: {r:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn the_head_ends_at_the_blank_line() {
        assert_eq!(
            find_blank_line(b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody"),
            Some(20)
        );
        assert_eq!(find_blank_line(b"GET / HTTP/1.1\n\n"), Some(14));
        assert_eq!(find_blank_line(b"GET / HTTP/1.1\r\nA: b\r\n"), None);
    }
}
