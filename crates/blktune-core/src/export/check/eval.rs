//! Evaluate parsed rules for one device and one action, the way udevd walks a
//! rules file (systemd `udev-rules.c`, `udev_rules_apply_to_event`): line by
//! line, a line applies when all its match keys match, its assignments run
//! left to right, `GOTO` skips to its `LABEL`.

use super::glob::udev_match;
use super::parse::{Op, Rule, Token};
use super::{ActionCheck, LineCheck, Status, Write, push_capped};
use crate::device::BlockDevice;
use crate::os::{DeviceName, SysRoot};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A property value as far as we know it.
#[derive(Debug, Clone)]
enum Known {
    Value(String),
    Unknown(String),
}

/// Three-valued match result.
#[derive(Debug)]
enum Tri {
    Yes,
    No,
    Unknown(String),
}

/// Keys that are matches whatever their operator: they run something.
const ALWAYS_MATCH_KEYS: &[&str] = &["IMPORT", "PROGRAM"];

struct Ctx<'a> {
    root: &'a SysRoot,
    action: &'a str,
    name: &'a str,
    env: BTreeMap<String, Known>,
    /// Keys not in `env`: empty (database present) or unknown (why).
    missing: Known,
    lineage: Vec<PathBuf>,
    /// The device whose queue the writes go to (`None` for a partition):
    /// what its values are checked against.
    device: Option<&'a BlockDevice>,
}

impl Ctx<'_> {
    fn env(&self, k: &str) -> Known {
        self.env
            .get(k)
            .cloned()
            .unwrap_or_else(|| match &self.missing {
                Known::Value(_) => Known::Value(String::new()),
                Known::Unknown(why) => Known::Unknown(format!("ENV{{{k}}}: {why}")),
            })
    }
}

fn has_subst(v: &str) -> bool {
    v.contains('%') || v.contains('$')
}

fn compare(t: &Token, actual: &str) -> Tri {
    if udev_match(&t.value, actual) == (t.op == Op::Match) {
        Tri::Yes
    } else {
        Tri::No
    }
}

fn unknown(t: &Token, why: &str) -> Tri {
    Tri::Unknown(format!("{}: {why}", t.display()))
}

/// One match key (not `ATTRS`, which is evaluated per rule).
fn eval_token(ctx: &Ctx<'_>, t: &Token) -> Option<Tri> {
    let is_match = t.op.is_match() || ALWAYS_MATCH_KEYS.contains(&t.key.as_str());
    if !is_match || t.key == "ATTRS" {
        return None;
    }
    let evaluable = matches!(
        (t.key.as_str(), t.attr.is_some()),
        ("ACTION" | "SUBSYSTEM" | "KERNEL" | "TEST", false) | ("ENV" | "ATTR", true)
    );
    if !evaluable {
        return Some(unknown(t, "cannot evaluate this key"));
    }
    if has_subst(&t.value) || t.attr.as_deref().is_some_and(has_subst) {
        return Some(unknown(t, "uses a udev substitution"));
    }
    Some(match (t.key.as_str(), t.attr.as_deref()) {
        ("ACTION", None) => compare(t, ctx.action),
        ("SUBSYSTEM", None) => compare(t, "block"),
        ("KERNEL", None) => compare(t, ctx.name),
        ("ENV", Some(k)) => match ctx.env(k) {
            Known::Value(v) => compare(t, &v),
            Known::Unknown(why) => Tri::Unknown(why),
        },
        // udev: an attribute that cannot be read fails the match, whatever the operator.
        ("ATTR", Some(a)) => match ctx
            .lineage
            .first()
            .map(|d| ctx.root.read_lineage_attr(d, a))
        {
            Some(Ok(v)) => compare(t, &v),
            _ => Tri::No,
        },
        ("TEST", None) if !t.value.starts_with('/') => {
            let exists = ctx.lineage.first().is_some_and(|d| {
                !t.value.split('/').any(|c| c == "..") && d.join(&t.value).exists()
            });
            if exists == (t.op == Op::Match) {
                Tri::Yes
            } else {
                Tri::No
            }
        }
        ("TEST", _) => unknown(t, "absolute paths and modes are not checked"),
        _ => unknown(t, "cannot evaluate this key"),
    })
}

/// All `ATTRS` keys of a rule must match on one device of the lineage.
fn eval_attrs(ctx: &Ctx<'_>, rule: &Rule) -> Option<Tri> {
    let keys: Vec<&Token> = rule
        .tokens
        .iter()
        .filter(|t| t.key == "ATTRS" && t.op.is_match())
        .collect();
    if keys.is_empty() {
        return None;
    }
    if let Some(t) = keys.iter().find(|t| has_subst(&t.value)) {
        return Some(unknown(t, "uses a udev substitution"));
    }
    let hit = ctx.lineage.iter().any(|dir| {
        keys.iter().all(|t| {
            let a = t.attr.as_deref().unwrap_or_default();
            matches!(ctx.root.read_lineage_attr(dir, a), Ok(v) if matches!(compare(t, &v), Tri::Yes))
        })
    });
    Some(if hit { Tri::Yes } else { Tri::No })
}

fn eval_rule(ctx: &Ctx<'_>, rule: &Rule) -> Tri {
    let mut why = Vec::new();
    let results = rule
        .tokens
        .iter()
        .filter_map(|t| eval_token(ctx, t))
        .chain(eval_attrs(ctx, rule));
    for r in results {
        match r {
            Tri::No => return Tri::No,
            Tri::Unknown(w) => why.push(w),
            Tri::Yes => {}
        }
    }
    if why.is_empty() {
        Tri::Yes
    } else {
        Tri::Unknown(why.join("; "))
    }
}

/// The starting properties: the event, the device's `uevent` file, the database.
fn initial_env(
    root: &SysRoot,
    dev: &DeviceName,
    d: &BlockDevice,
    props: Option<&BTreeMap<String, String>>,
    action: &str,
) -> BTreeMap<String, Known> {
    let mut env = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        env.insert(k.to_owned(), Known::Value(v));
    };
    set("ACTION", action.into());
    set("SUBSYSTEM", "block".into());
    // Every entry of <sysfs>/block is a whole disk.
    set("DEVTYPE", "disk".into());
    set("MAJOR", d.major.to_string());
    set("MINOR", d.minor.to_string());
    set("DEVNAME", format!("/dev/{}", d.name));
    add_uevent_and_database(&mut env, root.read_dev_attr(dev, "uevent").ok(), props);
    env
}

/// Is `attr` reset by a scheduler switch (kernel `elevator_switch()`)?
fn resets(attr: &str) -> bool {
    attr == "queue/nr_requests" || attr.starts_with("queue/iosched/")
}

/// Ordering check: nr_requests or a tunable written before a scheduler switch
/// is lost. `seq` holds (line, write, does the line match for sure). On one
/// line the order is wrong whether or not the line matches; across lines only
/// when both match for sure (two lines that cannot be evaluated may exclude
/// each other, such as two id rules without a udev database).
/// Past [`super::MAX_SHOWN`] problems the rest are counted (the second value).
fn order_problems(seq: &[(usize, Write, bool)]) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut more = 0;
    let mut pending: Vec<&(usize, Write, bool)> = Vec::new();
    for w in seq {
        if w.1.attr == "queue/scheduler" {
            for p in pending.drain(..).filter(|p| p.0 == w.0 || (p.2 && w.2)) {
                let when = if p.0 == w.0 {
                    "before it writes the scheduler on the same line".to_string()
                } else {
                    format!("before line {} writes the scheduler", w.0)
                };
                let text = format!("line {} sets {} {when}, which resets it", p.0, p.1.attr);
                push_capped(&mut out, &mut more, text);
            }
        } else if resets(&w.1.attr) {
            pending.push(w);
        }
    }
    (out, more)
}

/// Walk the rules for one device and one action.
pub(super) fn evaluate(
    rules: &[Rule],
    root: &SysRoot,
    dev: &DeviceName,
    d: &BlockDevice,
    props: Option<&BTreeMap<String, String>>,
    action: &str,
) -> ActionCheck {
    let ctx = Ctx {
        root,
        action,
        name: &d.name,
        env: initial_env(root, dev, d, props, action),
        missing: missing(props),
        lineage: root.device_lineage(dev),
        device: Some(d),
    };
    walk(rules, ctx)
}

/// The rest of an event's properties: the `uevent` file's (over what the
/// caller set), then the database's where still unset; `DEVPATH` is not
/// evaluated.
fn add_uevent_and_database(
    env: &mut BTreeMap<String, Known>,
    uevent: Option<String>,
    props: Option<&BTreeMap<String, String>>,
) {
    for (k, v) in uevent
        .iter()
        .flat_map(|u| u.lines())
        .filter_map(|l| l.split_once('='))
    {
        let v = if k == "DEVNAME" {
            format!("/dev/{v}")
        } else {
            v.to_owned()
        };
        env.insert(k.to_owned(), Known::Value(v));
    }
    for (k, v) in props.into_iter().flatten() {
        env.entry(k.clone())
            .or_insert_with(|| Known::Value(v.clone()));
    }
    env.insert(
        "DEVPATH".into(),
        Known::Unknown("ENV{DEVPATH}: not evaluated".into()),
    );
}

/// Keys not in the event: empty when the database has an entry, else unknown.
fn missing(props: Option<&BTreeMap<String, String>>) -> Known {
    match props {
        Some(_) => Known::Value(String::new()),
        None => Known::Unknown("no udev database entry for this device".into()),
    }
}

/// Walk the rules for partition `part` of `dev` (an event with
/// `DEVTYPE=partition`; its parents are the disk's), `props` being the
/// partition's udev properties if the database has them.
pub(super) fn evaluate_partition(
    rules: &[Rule],
    root: &SysRoot,
    dev: &DeviceName,
    part: &str,
    props: Option<&BTreeMap<String, String>>,
    action: &str,
) -> ActionCheck {
    let mut lineage = root.device_lineage(dev);
    let dir = lineage.first().map(|d| d.join(part)).unwrap_or_default();
    let mut env = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        env.insert(k.to_owned(), Known::Value(v));
    };
    set("ACTION", action.into());
    set("SUBSYSTEM", "block".into());
    set("DEVTYPE", "partition".into());
    set("DEVNAME", format!("/dev/{part}"));
    add_uevent_and_database(&mut env, root.read_lineage_attr(&dir, "uevent").ok(), props);
    lineage.insert(0, dir);
    let ctx = Ctx {
        root,
        action,
        name: part,
        env,
        missing: missing(props),
        lineage,
        device: None,
    };
    walk(rules, ctx)
}

/// Walk the rules with the event `ctx`.
fn walk(rules: &[Rule], mut ctx: Ctx<'_>) -> ActionCheck {
    let action = ctx.action;
    let mut out = ActionCheck {
        action: action.into(),
        lines: Vec::new(),
        result: Vec::new(),
        uncertain: false,
        stopped: None,
        problems: Vec::new(),
        reset: Vec::new(),
        lines_more: 0,
        problems_more: 0,
        reset_more: 0,
    };
    let mut seq: Vec<(usize, Write, bool)> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    // The scheduler in force at each write: the device's, then the last
    // matching line's.
    let mut sched = ctx
        .device
        .and_then(|d| d.queue.scheduler.as_ref())
        .map(|s| s.active.clone());
    let mut i = 0;
    while i < rules.len() {
        let rule = &rules[i];
        i += 1;
        if rule.invalid.is_some() {
            continue;
        }
        let (status, why) = match eval_rule(&ctx, rule) {
            Tri::No => continue,
            Tri::Yes => (Status::Match, Vec::new()),
            Tri::Unknown(w) => (Status::CannotEvaluate, vec![w]),
        };
        let sure = status == Status::Match;
        let mut line = LineCheck {
            line: rule.line,
            status,
            why,
            sets: Vec::new(),
            env: Vec::new(),
            other: Vec::new(),
        };
        let mut jump = None;
        let mut stop = false;
        for t in rule.tokens.iter().filter(|t| !t.op.is_match()) {
            match (t.key.as_str(), t.attr.as_deref()) {
                ("ATTR", Some(a)) => {
                    let w = Write {
                        attr: a.into(),
                        value: t.value.clone(),
                    };
                    seq.push((rule.line, w.clone(), sure));
                    if sure && let Some(d) = ctx.device {
                        values.extend(value_problem(d, sched.as_deref(), rule.line, &w));
                        if w.attr == "queue/scheduler" {
                            sched = Some(w.value.trim().to_owned());
                        }
                    }
                    if sure && w.attr == "queue/scheduler" {
                        // The switch resets nr_requests and every tunable
                        // (kernel `block/elevator.c`): earlier writes are lost.
                        let (lost, kept): (Vec<Write>, Vec<Write>) =
                            out.result.drain(..).partition(|r| resets(&r.attr));
                        out.result = kept;
                        for w in lost {
                            push_capped(&mut out.reset, &mut out.reset_more, w);
                        }
                    }
                    if sure {
                        match out.result.iter_mut().find(|r| r.attr == w.attr) {
                            Some(r) => r.value = w.value.clone(),
                            None => out.result.push(w.clone()),
                        }
                    } else {
                        out.uncertain = true;
                    }
                    line.sets.push(w);
                }
                ("ENV", Some(k)) => {
                    let v = if !sure {
                        Known::Unknown(format!(
                            "ENV{{{k}}}: set on line {}, which cannot be evaluated",
                            rule.line
                        ))
                    } else if has_subst(&t.value) {
                        Known::Unknown(format!(
                            "ENV{{{k}}}: set with a substitution on line {}",
                            rule.line
                        ))
                    } else {
                        Known::Value(t.value.clone())
                    };
                    ctx.env.insert(k.into(), v);
                    line.env.push(Write {
                        attr: k.into(),
                        value: t.value.clone(),
                    });
                }
                ("IMPORT", _) => {
                    ctx.missing =
                        Known::Unknown(format!("IMPORT on line {} may have set it", rule.line));
                    let why = format!("IMPORT on line {} may have set it", rule.line);
                    for v in ctx.env.values_mut() {
                        if matches!(v, Known::Value(_)) {
                            *v = Known::Unknown(why.clone());
                        }
                    }
                    line.other.push(t.display());
                }
                ("GOTO", _) => {
                    jump = Some(t.value.clone());
                    line.other.push(t.display());
                }
                ("OPTIONS", _) if t.value.split(',').any(|o| o.trim() == "last_rule") => {
                    stop = true;
                    line.other.push(t.display());
                }
                ("PROGRAM", _) => {}
                _ => line.other.push(t.display()),
            }
        }
        // A bare LABEL line does nothing by itself.
        if !rule.tokens.iter().all(|t| t.key == "LABEL") {
            push_capped(&mut out.lines, &mut out.lines_more, line);
        }
        if (jump.is_some() || stop) && !sure {
            out.stopped = Some(format!(
                "line {}: GOTO or OPTIONS=\"last_rule\" under a condition that cannot be evaluated; later lines not evaluated",
                rule.line
            ));
            break;
        }
        if stop {
            out.stopped = Some(format!("line {}: OPTIONS=\"last_rule\"", rule.line));
            break;
        }
        if let Some(label) = jump {
            let target = rules[i..].iter().position(|r| {
                r.tokens
                    .iter()
                    .any(|t| t.key == "LABEL" && t.value == label)
            });
            // udev ignores a GOTO without a later LABEL.
            if let Some(p) = target {
                i += p;
            }
        }
    }
    (out.problems, out.problems_more) = order_problems(&seq);
    for v in values {
        push_capped(&mut out.problems, &mut out.problems_more, v);
    }
    out
}

/// A write of a line that matches for sure which the kernel would refuse
/// on this device (or store as another value): a scheduler it does not
/// offer, a number out of range or not a number. udev says nothing of a
/// failed write but a line in its log. Values with a substitution are not
/// judged. Worded without the device's name, so one line that does it to
/// every device is one problem.
fn value_problem(d: &BlockDevice, sched: Option<&str>, line: usize, w: &Write) -> Option<String> {
    let v = w.value.trim();
    if has_subst(v) {
        return None;
    }
    let number = |what: &str| -> Result<u64, String> {
        v.parse::<u64>()
            .map_err(|_| format!("{what} '{}' is not a whole number", v.escape_debug()))
    };
    let why = match w.attr.as_str() {
        "queue/scheduler" => {
            let s = d.queue.scheduler.as_ref()?;
            if s.available.iter().any(|a| a == v) {
                return None;
            }
            format!(
                "scheduler '{}' is not one the device offers ({})",
                v.escape_debug(),
                s.available.join(", ")
            )
        }
        "queue/nr_requests" => match number("nr_requests") {
            Ok(n) => crate::sched::check_nr_requests(n, sched?, d.hw_queue_depth)
                .err()?
                .to_string(),
            Err(e) => e,
        },
        "queue/read_ahead_kb" => match number("read_ahead_kb") {
            Ok(n) => crate::sched::check_read_ahead_kb(n, crate::sched::page_kb())
                .err()?
                .to_string(),
            Err(e) => e,
        },
        a if crate::os::QueueAttr::knob(a.strip_prefix("queue/").unwrap_or(a)).is_some() => {
            let name = a.strip_prefix("queue/")?;
            let max_hw = d
                .queue
                .knobs
                .get("max_hw_sectors_kb")
                .and_then(|v| v.parse().ok());
            crate::sched::check_knob(name, v, max_hw, crate::sched::page_kb())
                .err()?
                .to_string()
        }
        a => {
            let t = a.strip_prefix("queue/iosched/")?;
            crate::sched::check_tunable(t, v).err()?.to_string()
        }
    };
    Some(format!("line {line}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::check::parse::parse_rules;
    use crate::fake::{FakeDisk, FakeTree};

    /// Evaluate `text` for a fake sda (model in device/, serial on the disk).
    fn run(text: &str, props: Option<&BTreeMap<String, String>>) -> ActionCheck {
        let dir = tempfile::tempdir().unwrap();
        let t = FakeTree::new(dir.path()).unwrap();
        t.add(
            &FakeDisk::new("sda")
                .model("M1", Some("ATA"))
                .ids(Some("S1"), None),
        )
        .unwrap();
        let root = t.root();
        let dev = root.device("sda").unwrap();
        let d = BlockDevice::read(&root, &dev);
        evaluate(&parse_rules(text), &root, &dev, &d, props, "change")
    }

    fn result(a: &ActionCheck) -> Vec<(&str, &str)> {
        a.result
            .iter()
            .map(|w| (w.attr.as_str(), w.value.as_str()))
            .collect()
    }

    #[test]
    fn unreadable_attr_fails_even_with_not_equal() {
        let a = run(
            "ATTR{no/such}!=\"x\", ATTR{queue/read_ahead_kb}=\"1\"\n\
             ATTR{queue/rotational}!=\"1\", ATTR{queue/nr_requests}=\"8\"\n",
            None,
        );
        assert_eq!(result(&a), [("queue/nr_requests", "8")]);
    }

    #[test]
    fn goto_skips_to_its_label() {
        let a = run(
            "KERNEL==\"sd*\", GOTO=\"end\"\n\
             ATTR{queue/scheduler}=\"bfq\"\n\
             LABEL=\"end\"\n\
             ATTR{queue/scheduler}=\"kyber\"\n",
            None,
        );
        assert_eq!(result(&a), [("queue/scheduler", "kyber")]);
        assert_eq!(a.lines.len(), 2, "{a:?}");
    }

    #[test]
    fn env_set_by_an_earlier_line_is_seen() {
        let a = run(
            "KERNEL==\"sda\", ENV{FAST}=\"1\"\n\
             ENV{FAST}==\"1\", ATTR{queue/scheduler}=\"none\"\n",
            Some(&BTreeMap::new()),
        );
        assert_eq!(result(&a), [("queue/scheduler", "none")]);
    }

    #[test]
    fn import_makes_later_env_unknown() {
        let mut db = BTreeMap::new();
        db.insert("ID_SERIAL".to_string(), "S1".to_string());
        let text = "ENV{ID_SERIAL}==\"S1\", ATTR{queue/nr_requests}=\"8\"\n\
                    IMPORT{builtin}=\"path_id\"\n\
                    ENV{ID_SERIAL}==\"S1\", ATTR{queue/nr_requests}=\"16\"\n";
        let a = run(text, Some(&db));
        assert_eq!(result(&a), [("queue/nr_requests", "8")]);
        assert!(a.uncertain);
        assert_eq!(a.lines.last().unwrap().status, Status::CannotEvaluate);
    }

    #[test]
    fn attrs_keys_must_match_on_one_device() {
        // vendor and model sit on device/, serial on the disk itself.
        let a = run(
            "ATTRS{vendor}==\"ATA\", ATTRS{model}==\"M1\", ATTR{queue/nr_requests}=\"8\"\n\
             ATTRS{model}==\"M1\", ATTRS{serial}==\"S1\", ATTR{queue/nr_requests}=\"16\"\n\
             ATTRS{serial}==\"S1\", ATTR{queue/read_ahead_kb}=\"64\"\n",
            None,
        );
        assert_eq!(
            result(&a),
            [("queue/nr_requests", "8"), ("queue/read_ahead_kb", "64")]
        );
    }

    #[test]
    fn unknown_guard_on_goto_stops_evaluation() {
        let a = run(
            "PROGRAM==\"/bin/true\", GOTO=\"end\"\n\
             ATTR{queue/scheduler}=\"bfq\"\n\
             LABEL=\"end\"\n",
            None,
        );
        assert!(a.stopped.is_some());
        assert!(a.result.is_empty());
    }
}
