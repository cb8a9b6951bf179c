//! `--format script`: a POSIX sh script that applies the same settings now,
//! for hosts without udevd or a quick rollout. It selects devices the way the
//! rule would (same match keys, read from sysfs and the udev database), writes
//! in the same safe order, skips values already in place (so running it twice
//! changes nothing), reads every write back and exits 1 on any failure.

use super::matching::MatchKey;
use super::rules::{Block, common_header, device_line, measured_lines, sh_quote};
use super::safe::comment_text;
use super::{MatchStrategy, RenderOptions};
use std::fmt::Write as _;

/// Shell helpers; `$sys` and `$udevdb` can be pointed elsewhere for tests.
const PRELUDE: &str = r#"set -u
sys=${BLKTUNE_SYSFS:-/sys}
udevdb=${BLKTUNE_UDEV_DB:-/run/udev/data}
status=0

say() { printf 'blktune-apply: %s\n' "$*" >&2; }

# rd DEV REL: an attribute of the device, trailing blanks removed (as udev does).
rd() { sed -e 's/[[:space:]]*$//' "$sys/block/$1/$2" 2>/dev/null; }

# env_of DEV KEY: a property from the udev database; empty without one.
env_of() {
  devno=$(rd "$1" dev)
  [ -n "$devno" ] || return 0
  sed -n "s/^E:$2=//p" "$udevdb/b$devno" 2>/dev/null | head -n 1
}

# active DEV NAME: is NAME the active scheduler?
active() {
  case " $(rd "$1" queue/scheduler) " in
    *" [$2] "*) return 0 ;;
  esac
  return 1
}

# sched DEV NAME: switch to NAME unless it is active, then check that it is.
sched() {
  active "$1" "$2" && return 0
  if ! printf '%s' "$2" > "$sys/block/$1/queue/scheduler" 2>/dev/null; then
    say "$1: writing '$2' to queue/scheduler failed"
    return 1
  fi
  if ! active "$1" "$2"; then
    say "$1: wrote '$2' to queue/scheduler but it reads back '$(rd "$1" queue/scheduler)'"
    return 1
  fi
  echo "$1: queue/scheduler -> $2"
}

# put DEV REL VALUE: write VALUE unless it is there already, then read it back.
put() {
  old=$(rd "$1" "$2")
  [ "$old" = "$3" ] && return 0
  if ! printf '%s' "$3" > "$sys/block/$1/$2" 2>/dev/null; then
    say "$1: writing '$3' to $2 failed"
    return 1
  fi
  now=$(rd "$1" "$2")
  if [ "$now" != "$3" ]; then
    say "$1: wrote '$3' to $2 but it reads back '$now'"
    return 1
  fi
  echo "$1: $2 $old -> $3"
}

# put_default DEV REL VALUE: VALUE asks the kernel for its default (-1 for
# wbt_lat_usec, 0 for max_sectors_kb), so it reads back as that default.
put_default() {
  old=$(rd "$1" "$2")
  if ! printf '%s' "$3" > "$sys/block/$1/$2" 2>/dev/null; then
    say "$1: writing '$3' to $2 failed"
    return 1
  fi
  now=$(rd "$1" "$2")
  [ "$now" = "$old" ] || echo "$1: $2 $old -> $now (the kernel's default)"
}
"#;

/// `'value'` for sh, any character allowed.
fn q(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A shell statement that returns 1 from the match function unless `$1`
/// passes one match key. `ATTRS` keys are handled together by [`attrs_condition`].
fn key_statement(match_key: &MatchKey) -> Option<String> {
    if match_key.key == "KERNEL" {
        // Our KERNEL values are a plain name or a family pattern (`loop*`, `sd*`).
        let pat = match match_key.value.strip_suffix('*') {
            Some(prefix) => format!("{}*", q(prefix)),
            None => q(&match_key.value),
        };
        return Some(if match_key.negate {
            format!("case \"$1\" in {pat}) return 1 ;; esac")
        } else {
            format!("case \"$1\" in {pat}) ;; *) return 1 ;; esac")
        });
    }
    let cond = if let Some(env) = match_key
        .key
        .strip_prefix("ENV{")
        .and_then(|r| r.strip_suffix('}'))
    {
        format!("[ \"$(env_of \"$1\" {env})\" = {} ]", q(&match_key.value))
    } else if let Some(attr) = match_key
        .key
        .strip_prefix("ATTR{")
        .and_then(|r| r.strip_suffix('}'))
    {
        format!("[ \"$(rd \"$1\" {attr})\" = {} ]", q(&match_key.value))
    } else {
        return None;
    };
    Some(if match_key.negate {
        format!("! {cond} || return 1")
    } else {
        format!("{cond} || return 1")
    })
}

/// udev wants all `ATTRS` keys of a rule to match on one device of the
/// chain; the script looks at the disk itself and at its `device` parent.
fn attrs_condition(keys: &[&MatchKey]) -> String {
    let level = |prefix: &str| {
        keys.iter()
            .map(|k| {
                let attr = k.key.trim_start_matches("ATTRS{").trim_end_matches('}');
                format!("[ \"$(rd \"$1\" {prefix}{attr})\" = {} ]", q(&k.value))
            })
            .collect::<Vec<_>>()
            .join(" && ")
    };
    format!("{{ {}; }} || {{ {}; }}", level(""), level("device/"))
}

/// The whole script.
pub(super) fn render_script(blocks: &[Block], opts: &RenderOptions, warnings: &[String]) -> String {
    let mut out = String::from("#!/bin/sh\n");
    common_header(&mut out, "Script", opts);
    out.push_str(
        "#\n\
         # Applies now what the matching udev rules would apply on the next add/change\n\
         # event. Idempotent: values already in place are left alone. Writes in the safe\n\
         # order (scheduler, its tunables, nr_requests, read_ahead_kb: a switch resets\n\
         # the others), reads every value back, exits 1 if a write fails or a device it\n\
         # was written for is missing or no longer the same.\n",
    );
    let name = opts.output.as_ref().map_or_else(
        || "blktune-apply.sh".to_string(),
        |p| p.display().to_string(),
    );
    let _ = writeln!(out, "# Run:  sudo sh {}", comment_text(&sh_quote(&name)));
    if !warnings.is_empty() {
        out.push_str("#\n# Warnings:\n");
        for w in warnings {
            let _ = writeln!(out, "#   {}", comment_text(w));
        }
    }
    out.push('\n');
    out.push_str(PRELUDE);
    for (i, b) in blocks.iter().enumerate() {
        let n = i + 1;
        out.push('\n');
        for item in &b.items {
            let _ = writeln!(out, "# {}", device_line(&item.device));
            measured_lines(&mut out, item, "#   ");
        }
        let _ = writeln!(out, "#   match: {}", comment_text(&b.spec.render_keys()));
        let _ = writeln!(out, "#   sets:  {}", b.summary());
        // Selection: the same keys as the rule.
        let _ = writeln!(out, "match_{n}() {{");
        let attrs: Vec<&MatchKey> = b
            .spec
            .keys
            .iter()
            .filter(|k| k.key.starts_with("ATTRS{"))
            .collect();
        for k in b.spec.keys.iter().filter(|k| !k.key.starts_with("ATTRS{")) {
            if let Some(c) = key_statement(k) {
                let _ = writeln!(out, "  {c}");
            }
        }
        if !attrs.is_empty() {
            let _ = writeln!(out, "  {} || return 1", attrs_condition(&attrs));
        }
        out.push_str("  return 0\n}\n");
        // A kernel name may now belong to another disk: check it is still the one exported.
        let pinned = b.spec.strategy == MatchStrategy::Kernel;
        if pinned {
            let d = &b.items[0].device;
            let _ = writeln!(out, "same_{n}() {{");
            let _ = writeln!(
                out,
                "  [ \"$(rd \"$1\" dev)\" = {} ] || return 1",
                q(&format!("{}:{}", d.major, d.minor))
            );
            if let Some(seq) = d.diskseq {
                let _ = writeln!(
                    out,
                    "  [ \"$(rd \"$1\" diskseq)\" = {} ] || return 1",
                    q(&seq.to_string())
                );
            }
            out.push_str("  return 0\n}\n");
        }
        let _ = writeln!(out, "apply_{n}() {{");
        let steps: Vec<String> = b
            .assigns
            .iter()
            .map(|a| {
                let knob = a.attr.strip_prefix("queue/").unwrap_or(&a.attr);
                if a.attr == "queue/scheduler" {
                    format!("sched \"$1\" {}", q(&a.value))
                } else if crate::sched::asks_for_default(knob, &a.value) {
                    format!("put_default \"$1\" {} {}", a.attr, q(&a.value))
                } else {
                    format!("put \"$1\" {} {}", a.attr, q(&a.value))
                }
            })
            .collect();
        // `&&`: after a failed step the later ones would land on the wrong scheduler.
        let _ = writeln!(out, "  {}", steps.join(" &&\n    "));
        out.push_str("}\n");
        let _ = writeln!(out, "found_{n}=0");
        let _ = writeln!(out, "for d in \"$sys\"/block/*; do");
        out.push_str("  n=${d##*/}\n");
        let _ = writeln!(out, "  [ -e \"$d/{}\" ] || continue", b.guard_attr());
        let _ = writeln!(out, "  match_{n} \"$n\" || continue");
        let _ = writeln!(out, "  found_{n}=1");
        if pinned {
            let _ = writeln!(
                out,
                "  if ! same_{n} \"$n\"; then say \"$n: not the device this script was written for (dev or diskseq changed); not touched\"; status=1; continue; fi"
            );
        }
        let _ = writeln!(out, "  apply_{n} \"$n\" || status=1");
        out.push_str("done\n");
        if matches!(b.spec.strategy, MatchStrategy::Id | MatchStrategy::Kernel) {
            let names: Vec<&str> = b.items.iter().map(|i| i.device.name.as_str()).collect();
            let _ = writeln!(
                out,
                "[ \"$found_{n}\" = 1 ] || {{ say {}; status=1; }}",
                q(&comment_text(&format!(
                    "no device matches {} (written for {})",
                    b.spec.render_keys(),
                    names.join(", ")
                )))
            );
        } else {
            let _ = writeln!(
                out,
                "[ \"$found_{n}\" = 1 ] || say {}",
                q(&comment_text(&format!(
                    "no device matches {} here; nothing to do",
                    b.spec.render_keys()
                )))
            );
        }
    }
    out.push_str("\nexit \"$status\"\n");
    out
}
