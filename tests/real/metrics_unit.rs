//! contrib/systemd/blktune-metrics.{service,timer}, checked by systemd's own
//! tools and run as its ExecStart says, unprivileged: `systemd-analyze
//! verify` finds nothing, `systemd-analyze security --offline` rates the
//! sandbox SAFE (at most 2.0, `--threshold=20` on its 0-100 scale; the unit
//! that ran as root unsandboxed rated 8.4),
//! and the command, with the textfile directory taken from an environment
//! file as systemd would, writes a promtool-valid blktune.prom as user nobody.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common;
use common::*;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const UNIT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/contrib/systemd/blktune-metrics.service"
);
const TIMER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/contrib/systemd/blktune-metrics.timer"
);
const DEFAULTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/contrib/systemd/blktune.default"
);

/// The values of `key=` lines in the unit, in order.
fn values(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::to_owned)
        .collect()
}

/// The environment systemd gives ExecStart: `Environment=`, then the
/// environment file's `KEY=value` lines, which override it.
fn environment(unit: &str, env_file: &str) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let assignments = values(unit, "Environment");
    let from_file = env_file
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned);
    for a in assignments.into_iter().chain(from_file) {
        let (k, v) = a.split_once('=').unwrap();
        env.insert(k.to_owned(), v.to_owned());
    }
    env
}

/// `${NAME}` in `text` replaced from `env`, as systemd expands ExecStart.
fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = text.to_owned();
    for (k, v) in env {
        out = out.replace(&format!("${{{k}}}"), v);
    }
    out
}

#[test]
fn the_metrics_unit_verifies_is_sandboxed_and_runs_unprivileged() {
    let test = "the_metrics_unit_verifies_is_sandboxed_and_runs_unprivileged";
    if !require_root(test) || !require_tool(test, "systemd-analyze") {
        return;
    }
    let unit = std::fs::read_to_string(UNIT).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bin = public_binary(dir.path());
    // The units as installed, with the binary under test in ExecStart.
    let installed = dir.path().join("blktune-metrics.service");
    std::fs::write(
        &installed,
        unit.replace("/usr/bin/blktune", bin.to_str().unwrap()),
    )
    .unwrap();
    std::fs::copy(TIMER, dir.path().join("blktune-metrics.timer")).unwrap();
    let o = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&installed)
        .arg(dir.path().join("blktune-metrics.timer"))
        .output()
        .unwrap();
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success() && said.trim().is_empty(), "{said}");
    let o = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--threshold=20"])
        .arg(&installed)
        .output()
        .unwrap();
    let report = stdout(&o);
    assert!(
        o.status.success(),
        "exposure above 2.0:\n{report}{}",
        stderr(&o)
    );
    assert!(report.contains("Overall exposure level"), "{report}");
    eprintln!("{}", report.lines().last().unwrap_or_default());

    // The default directory is Debian's, the one place it may write.
    let env = environment(&unit, "");
    let default_dir = "/var/lib/prometheus/node-exporter";
    assert_eq!(env["BLKTUNE_TEXTFILE_DIR"], default_dir);
    assert_eq!(values(&unit, "ReadWritePaths"), [format!("-{default_dir}")]);
    assert_eq!(values(&unit, "EnvironmentFile"), ["-/etc/default/blktune"]);
    let defaults = std::fs::read_to_string(DEFAULTS).unwrap();
    assert!(defaults.contains(&format!("#BLKTUNE_TEXTFILE_DIR={default_dir}\n")));

    // Another directory from the environment file, owned by nobody; the
    // command run as nobody, as systemd would expand it.
    let textfile = dir.path().join("textfile");
    std::fs::create_dir(&textfile).unwrap();
    let chown = Command::new("chown")
        .args(["nobody:nogroup"])
        .arg(&textfile)
        .status()
        .unwrap();
    assert!(chown.success());
    let env_file = format!("# ours\nBLKTUNE_TEXTFILE_DIR={}\n", textfile.display());
    let env = environment(&unit, &env_file);
    let exec = expand(&values(&unit, "ExecStart")[0], &env);
    let mut words = exec.split_whitespace();
    assert_eq!(words.next(), Some("/usr/bin/blktune"));
    let o = as_nobody(&bin).args(words).output().unwrap();
    assert!(o.status.success(), "as nobody: {}", stderr(&o));
    let prom = textfile.join("blktune.prom");
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(text.contains("blktune_queue_info{"), "{text}");
    let entries: Vec<_> = std::fs::read_dir(&textfile).unwrap().collect();
    assert_eq!(entries.len(), 1, "only blktune.prom: {entries:?}");
    if require_tool(test, "promtool") {
        assert_promtool_accepts(&text);
    }
    assert!(Path::new(&prom).is_file());
}
