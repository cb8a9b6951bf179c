//! Kernel uevents: how a block device's arrival, removal or change (a loop
//! device attached to an existing node, a resize) reaches the sampler within
//! one tick, without polling sysfs.
//!
//! The kernel broadcasts every uevent on a `NETLINK_KOBJECT_UEVENT` socket,
//! multicast group 1, whether or not udevd runs (netlink(7); the message
//! format is `lib/kobject_uevent.c`: `ACTION@DEVPATH\0KEY=VALUE\0...`). udevd
//! re-sends enriched copies on group 2 with a `libudev` header; those are not
//! read here. [`parse`] is pure; [`UeventSocket`] only moves bytes.

use crate::os::is_plausible_device_name;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// The kernel's largest uevent is its environment buffer (`UEVENT_BUFFER_SIZE`, 2048).
const MAX_MESSAGE: usize = 8192;

/// What happened to the device (`ACTION=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Add,
    Remove,
    Change,
    /// Renamed (`DEVPATH_OLD` names the old path): treated as a rescan.
    Move,
    /// bind, unbind, online, offline: nothing a block device's numbers depend on.
    Other,
}

/// One parsed kernel uevent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uevent {
    pub action: Action,
    /// `/devices/virtual/block/loop3`, or `.../block/sda/sda1` for a partition.
    pub devpath: String,
    pub subsystem: String,
    /// `loop3`, when the kernel names a device node (only plausible names are kept).
    pub devname: Option<String>,
    /// `disk` or `partition` for the block subsystem.
    pub devtype: Option<String>,
    /// The device's sequence number (5.15+): new on every loop attach.
    pub diskseq: Option<u64>,
}

/// Why a message is not a kernel uevent we can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("empty message")]
    Empty,
    #[error("message of {0} bytes is longer than any uevent")]
    TooLong(usize),
    #[error("a udevd message, not the kernel's")]
    Udevd,
    #[error("no 'action@devpath' header")]
    NoHeader,
    #[error("not UTF-8")]
    NotUtf8,
    #[error("no {0}= key")]
    Missing(&'static str),
    #[error("the header does not match ACTION= and DEVPATH=")]
    HeaderMismatch,
}

/// Parse one datagram of the kernel's uevent socket. Pure; never panics.
pub fn parse(msg: &[u8]) -> Result<Uevent, ParseError> {
    if msg.is_empty() {
        return Err(ParseError::Empty);
    }
    if msg.len() > MAX_MESSAGE {
        return Err(ParseError::TooLong(msg.len()));
    }
    if msg.starts_with(b"libudev\0") {
        return Err(ParseError::Udevd);
    }
    let text = std::str::from_utf8(msg).map_err(|_| ParseError::NotUtf8)?;
    let mut fields = text.split('\0');
    let header = fields.next().unwrap_or_default();
    let (h_action, h_path) = header.split_once('@').ok_or(ParseError::NoHeader)?;
    let (mut action, mut devpath, mut subsystem) = (None, None, None);
    let (mut devname, mut devtype, mut diskseq) = (None, None, None);
    for kv in fields.filter(|f| !f.is_empty()) {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        match k {
            "ACTION" => action = Some(v),
            "DEVPATH" => devpath = Some(v),
            "SUBSYSTEM" => subsystem = Some(v),
            // udevadm shows `/dev/loop3`; the kernel sends `loop3`.
            "DEVNAME" => devname = Some(v.trim_start_matches("/dev/")),
            "DEVTYPE" => devtype = Some(v),
            "DISKSEQ" => diskseq = v.parse().ok(),
            _ => {}
        }
    }
    let action = action.ok_or(ParseError::Missing("ACTION"))?;
    let devpath = devpath.ok_or(ParseError::Missing("DEVPATH"))?;
    let subsystem = subsystem.ok_or(ParseError::Missing("SUBSYSTEM"))?;
    if action != h_action || devpath != h_path {
        return Err(ParseError::HeaderMismatch);
    }
    Ok(Uevent {
        action: match action {
            "add" => Action::Add,
            "remove" => Action::Remove,
            "change" => Action::Change,
            "move" => Action::Move,
            _ => Action::Other,
        },
        devpath: devpath.to_owned(),
        subsystem: subsystem.to_owned(),
        devname: devname
            .filter(|n| is_plausible_device_name(n))
            .map(str::to_owned),
        devtype: devtype.map(str::to_owned),
        diskseq,
    })
}

impl Uevent {
    /// Is this about a block device (disk or partition)?
    pub fn is_block(&self) -> bool {
        self.subsystem == "block"
    }

    /// The whole disk this event concerns: the disk itself, or a partition's
    /// parent (the DEVPATH component before the partition). `None` when it
    /// is not a block event or the names are implausible.
    pub fn disk(&self) -> Option<&str> {
        if !self.is_block() {
            return None;
        }
        let mut parts = self.devpath.rsplit('/');
        let last = parts.next()?;
        let name = match self.devtype.as_deref() {
            Some("partition") => parts.next()?,
            _ => self.devname.as_deref().unwrap_or(last),
        };
        is_plausible_device_name(name).then_some(name)
    }
}

/// What one [`UeventSocket::drain`] saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Drained {
    /// Parsed kernel events, oldest first.
    pub events: Vec<Uevent>,
    /// Datagrams that were not usable uevents (counted, not kept).
    pub malformed: usize,
    /// The kernel dropped events (socket buffer full): rescan everything.
    pub overflowed: bool,
}

/// A non-blocking socket on the kernel's uevent multicast group.
#[derive(Debug)]
pub struct UeventSocket {
    fd: OwnedFd,
}

impl UeventSocket {
    /// Open and bind the socket. Fails where netlink is unavailable
    /// (seccomp, a sandbox); callers then poll instead.
    pub fn open() -> io::Result<Self> {
        use nix::sys::socket::{
            AddressFamily, NetlinkAddr, SockFlag, SockProtocol, SockType, bind, setsockopt, socket,
            sockopt,
        };
        let fd = socket(
            AddressFamily::Netlink,
            SockType::Datagram,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkKObjectUEvent,
        )?;
        // Room for a storm (a thousand loop attaches) between two ticks; the
        // forced size needs CAP_NET_ADMIN, the plain one is capped by rmem_max.
        let want = 4 << 20;
        if setsockopt(&fd, sockopt::RcvBufForce, &want).is_err() {
            let _ = setsockopt(&fd, sockopt::RcvBuf, &want);
        }
        // Port id 0: the kernel picks one. Group 1: the kernel's own events.
        bind(fd.as_raw_fd(), &NetlinkAddr::new(0, 1))?;
        Ok(Self { fd })
    }

    /// Read every datagram waiting, without blocking. At most `limit`
    /// events are kept; beyond that the rest is drained and reported as an
    /// overflow, so a storm costs one rescan, not unbounded memory.
    pub fn drain(&self, limit: usize) -> Drained {
        use nix::errno::Errno;
        use nix::sys::socket::{NetlinkAddr, recvfrom};
        let mut out = Drained::default();
        let mut buf = [0u8; MAX_MESSAGE];
        loop {
            match recvfrom::<NetlinkAddr>(self.fd.as_raw_fd(), &mut buf) {
                Ok((n, from)) => {
                    // Only the kernel (port id 0) sends on group 1; anything
                    // else is a forgery and is ignored.
                    if from.is_none_or(|a| a.pid() != 0) {
                        out.malformed += 1;
                        continue;
                    }
                    match parse(&buf[..n.min(buf.len())]) {
                        Ok(ev) if out.events.len() < limit => out.events.push(ev),
                        Ok(_) => out.overflowed = true,
                        Err(_) => out.malformed += 1,
                    }
                }
                Err(Errno::EINTR) => {}
                Err(Errno::ENOBUFS) => out.overflowed = true,
                // EAGAIN: nothing more; anything else: try again next tick.
                Err(_) => return out,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn msg(parts: &[&str]) -> Vec<u8> {
        parts.join("\0").into_bytes()
    }

    #[test]
    fn a_loop_attach_as_the_kernel_sends_it() {
        let m = msg(&[
            "change@/devices/virtual/block/loop3",
            "ACTION=change",
            "DEVPATH=/devices/virtual/block/loop3",
            "SUBSYSTEM=block",
            "DEVNAME=loop3",
            "DEVTYPE=disk",
            "DISKSEQ=16",
            "SEQNUM=826",
            "MAJOR=7",
            "MINOR=3",
            "",
        ]);
        let ev = parse(&m).unwrap();
        assert_eq!(ev.action, Action::Change);
        assert_eq!(ev.devname.as_deref(), Some("loop3"));
        assert_eq!(ev.diskseq, Some(16));
        assert_eq!(ev.disk(), Some("loop3"));
    }

    #[test]
    fn a_partition_names_its_disk() {
        let m = msg(&[
            "add@/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda1",
            "ACTION=add",
            "DEVPATH=/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda1",
            "SUBSYSTEM=block",
            "DEVNAME=sda1",
            "DEVTYPE=partition",
        ]);
        assert_eq!(parse(&m).unwrap().disk(), Some("sda"));
    }

    #[test]
    fn other_subsystems_name_no_disk() {
        let m = msg(&[
            "add@/devices/virtual/net/veth0",
            "ACTION=add",
            "DEVPATH=/devices/virtual/net/veth0",
            "SUBSYSTEM=net",
        ]);
        let ev = parse(&m).unwrap();
        assert!(!ev.is_block());
        assert_eq!(ev.disk(), None);
    }

    #[test]
    fn malformed_messages_are_errors() {
        assert_eq!(parse(b""), Err(ParseError::Empty));
        assert_eq!(parse(b"libudev\0\xfe\xed"), Err(ParseError::Udevd));
        assert_eq!(parse(b"no header here"), Err(ParseError::NoHeader));
        assert_eq!(parse(b"add@/x\0\xff"), Err(ParseError::NotUtf8));
        assert_eq!(
            parse(&msg(&["add@/x", "ACTION=add", "SUBSYSTEM=block"])),
            Err(ParseError::Missing("DEVPATH"))
        );
        assert_eq!(
            parse(&msg(&[
                "add@/x",
                "ACTION=remove",
                "DEVPATH=/x",
                "SUBSYSTEM=block"
            ])),
            Err(ParseError::HeaderMismatch)
        );
        assert_eq!(
            parse(&vec![b'a'; MAX_MESSAGE + 1]),
            Err(ParseError::TooLong(MAX_MESSAGE + 1))
        );
    }

    #[test]
    fn path_tricks_in_names_are_dropped() {
        let m = msg(&[
            "change@/devices/virtual/block/..",
            "ACTION=change",
            "DEVPATH=/devices/virtual/block/..",
            "SUBSYSTEM=block",
            "DEVNAME=../../vda",
            "DEVTYPE=disk",
        ]);
        let ev = parse(&m).unwrap();
        assert_eq!(ev.devname, None);
        assert_eq!(ev.disk(), None);
    }

    /// A real socket opens here (the kernel sends uevents without udevd);
    /// draining an idle one returns at once.
    #[test]
    fn the_socket_opens_and_drains_without_blocking() {
        let Ok(s) = UeventSocket::open() else {
            return; // netlink not available in this sandbox
        };
        let t = std::time::Instant::now();
        let _ = s.drain(16);
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn parse_never_panics_on_near_uevents(
            action in "(add|remove|change|move|bind|x)",
            path in "/[a-z0-9/._:!-]{0,40}",
            name in "[a-z0-9./!-]{0,12}",
            extra in proptest::collection::vec("[A-Z_]{0,8}=?[ -~]{0,12}", 0..6),
        ) {
            let mut parts = vec![
                format!("{action}@{path}"),
                format!("ACTION={action}"),
                format!("DEVPATH={path}"),
                "SUBSYSTEM=block".to_string(),
                format!("DEVNAME={name}"),
            ];
            parts.extend(extra);
            let m = parts.join("\0").into_bytes();
            if let Ok(ev) = parse(&m) {
                // Whatever disk() names is safe to join under /sys/block.
                if let Some(d) = ev.disk() {
                    prop_assert!(is_plausible_device_name(d));
                }
            }
        }

        #[test]
        fn well_formed_block_events_round_trip(
            n in 0u32..4096,
            seq in any::<u64>(),
            action in prop_oneof![Just(("add", Action::Add)), Just(("remove", Action::Remove)), Just(("change", Action::Change))],
        ) {
            let name = format!("loop{n}");
            let path = format!("/devices/virtual/block/{name}");
            let m = msg(&[
                &format!("{}@{path}", action.0),
                &format!("ACTION={}", action.0),
                &format!("DEVPATH={path}"),
                "SUBSYSTEM=block",
                &format!("DEVNAME={name}"),
                "DEVTYPE=disk",
                &format!("DISKSEQ={seq}"),
            ]);
            let ev = parse(&m).unwrap();
            prop_assert_eq!(ev.action, action.1);
            prop_assert_eq!(ev.disk(), Some(name.as_str()));
            prop_assert_eq!(ev.diskseq, Some(seq));
        }
    }
}
