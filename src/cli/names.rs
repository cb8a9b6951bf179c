//! Device names as users type them: `/dev/sda`, `/dev/mapper/vg0-root`,
//! `/dev/disk/by-id/wwn-...`, `8:0`. Each is resolved once, before a
//! command runs, to the kernel name the command works on
//! ([`blktune_core::devname`]), with one line on stderr when it went through
//! a link. A name that does not resolve is left as typed: the command says
//! why in its own words (`revert` of a device gone, `watch` of a typo).

use super::{Args, Command};
use blktune_core::devname;
use blktune_core::export::UdevDb;
use std::path::PathBuf;

/// Replace every device name of `args` by its kernel name.
pub fn canonicalize(args: &mut Args) {
    let root = args.global.root();
    let live_db = || {
        if root.is_live() {
            UdevDb::default()
        } else {
            UdevDb::none()
        }
    };
    let db_of = |dir: &Option<PathBuf>| dir.as_ref().map_or_else(live_db, UdevDb::new);
    let one = |name: &mut String, db: &UdevDb| {
        let links = |major, minor| db.links(major, minor);
        if let Ok(r) = devname::resolve(&root, &links, name) {
            if let Some(via) = &r.via {
                eprintln!("blktune: {}", blktune_core::text::printable(via));
            }
            *name = r.dev.to_string();
        }
    };
    match &mut args.command {
        Some(Command::Set(a)) => one(&mut a.device, &live_db()),
        Some(Command::Revert(a)) => a.devices.iter_mut().for_each(|n| one(n, &live_db())),
        Some(Command::Watch(a)) => a.devices.iter_mut().for_each(|n| one(n, &live_db())),
        Some(Command::Record(a)) => a.devices.iter_mut().for_each(|n| one(n, &live_db())),
        Some(Command::Bench(a)) => {
            if let Some(n) = &mut a.device {
                one(n, &live_db());
            }
        }
        Some(Command::Export(a)) => {
            let db = db_of(&a.udev_db);
            a.devices.iter_mut().for_each(|n| one(n, &db));
        }
        None => {
            if let Some(n) = &mut args.tui.device {
                one(n, &live_db());
            }
        }
        _ => {}
    }
}
