//! The whole state of the screen in one struct, with no I/O: it takes
//! [`Feed`] messages from a source (live or replay) and [`Action`]s from keys,
//! and answers with [`Control`] messages for the source. Rendering borrows it.

use super::command::{Action, Mode, main_binding};
use super::edit::{Editor, Field, MAX_INPUT};
use super::source::{ApplyKind, ApplyReport, ApplyRequest, Control, Feed, ReplayPosition};
use crate::device::BlockDevice;
use crate::history::{ChangeMark, Comparison, DeviceHistory, Point, compare};
use crate::host::HostInfo;
use crate::iostat::ExtStats;
use crate::sampler::Snapshot;
use crate::tuner::Settings;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Seconds of history kept per device (the charts show up to this).
pub const KEEP_SECS: f64 = 600.0;
/// Above this many devices only the selected and changed ones keep a long history.
pub const FULL_HISTORY_DEVICES: usize = 64;
/// Points kept for the table's sparkline of other devices.
pub const SHORT_POINTS: f64 = 24.0;
/// Seconds before a change that the before/after table looks at, at most.
pub const BEFORE_WINDOW: f64 = 60.0;
/// The sample intervals `+` and `-` step through.
pub const INTERVALS_MS: [u64; 7] = [100, 250, 500, 1000, 2000, 5000, 10000];

/// The table's sort column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Name,
    Util,
    Await,
    Iops,
}

impl SortKey {
    /// The next column `o` moves to.
    pub fn next(self) -> Self {
        match self {
            SortKey::Name => SortKey::Util,
            SortKey::Util => SortKey::Await,
            SortKey::Await => SortKey::Iops,
            SortKey::Iops => SortKey::Name,
        }
    }

    /// How the status line names it.
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Name => "name",
            SortKey::Util => "%util",
            SortKey::Await => "await",
            SortKey::Iops => "IOPS",
        }
    }
}

/// A box drawn over the main view; it takes the keys first.
#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    Picker {
        device: String,
        options: Vec<String>,
        active: String,
        cursor: usize,
    },
    Tunables {
        device: String,
        scheduler: String,
        items: Vec<(String, String)>,
        cursor: usize,
    },
    Edit(Editor),
    Help {
        scroll: u16,
    },
    Confirm {
        devices: Vec<String>,
    },
}

/// How a status message reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusKind {
    Info,
    Done,
    Error,
}

/// The status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    pub kind: StatusKind,
}

/// What the app is started with.
#[derive(Debug, Clone)]
pub struct Config {
    pub host: HostInfo,
    /// Why changes are disabled, or `None` when they are allowed.
    pub read_only: Option<String>,
    pub interval: Duration,
    /// Page size in KiB (read_ahead_kb is kept in pages).
    pub page_kb: u64,
    pub color: bool,
    /// Device to select at start.
    pub select: Option<String>,
}

/// One device's changes in this session that are still in force.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionChange {
    pub device: String,
    /// The settings before the session's first change.
    pub original: Settings,
    pub labels: Vec<String>,
}

/// The state of the screen.
#[derive(Debug)]
pub struct App {
    pub host: HostInfo,
    pub read_only: Option<String>,
    pub interval: Duration,
    pub page_kb: u64,
    pub color: bool,
    pub paused: bool,
    pub devices: Arc<Vec<BlockDevice>>,
    pub histories: HashMap<String, DeviceHistory>,
    /// Every change seen, per device, oldest first.
    pub marks: HashMap<String, Vec<ChangeMark>>,
    /// Changes of this session not undone, per device, oldest first.
    pub undo: HashMap<String, Vec<ChangeMark>>,
    pub selected: Option<String>,
    selected_pos: usize,
    pub sort: SortKey,
    pub filter: String,
    pub filter_typing: bool,
    pub overlay: Option<Overlay>,
    pub status: Option<Status>,
    /// Changes sent to the source and not answered yet.
    pub pending: usize,
    /// Monotonic seconds of the newest snapshot.
    pub now: f64,
    pub iowait: Option<f64>,
    pub samples: u64,
    /// Set by a replay source; shown in the header.
    pub replay: Option<ReplayPosition>,
    /// Rows of the device table on screen (page size for PgUp/PgDn).
    pub page_rows: usize,
    pub quit: bool,
    next_id: u64,
    want_select: Option<String>,
}

impl App {
    /// A fresh app with no data yet.
    pub fn new(cfg: Config) -> Self {
        Self {
            host: cfg.host,
            read_only: cfg.read_only,
            interval: cfg.interval,
            page_kb: cfg.page_kb,
            color: cfg.color,
            paused: false,
            devices: Arc::new(Vec::new()),
            histories: HashMap::new(),
            marks: HashMap::new(),
            undo: HashMap::new(),
            selected: None,
            selected_pos: 0,
            sort: SortKey::Name,
            filter: String::new(),
            filter_typing: false,
            overlay: None,
            status: None,
            pending: 0,
            now: 0.0,
            iowait: None,
            samples: 0,
            replay: None,
            page_rows: 10,
            quit: false,
            next_id: 1,
            want_select: cfg.select,
        }
    }

    /// Which key bindings are in force.
    pub fn mode(&self) -> Mode {
        match &self.overlay {
            Some(Overlay::Picker { .. } | Overlay::Tunables { .. }) => Mode::List,
            Some(Overlay::Edit(_)) => Mode::Text,
            Some(Overlay::Help { .. }) => Mode::Help,
            Some(Overlay::Confirm { .. }) => Mode::Confirm,
            None if self.filter_typing => Mode::Text,
            None => Mode::Main,
        }
    }

    fn say(&mut self, kind: StatusKind, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            kind,
        });
    }

    // ---- what the screen shows -------------------------------------------

    /// Devices in the table, filtered and sorted.
    pub fn visible(&self) -> Vec<&BlockDevice> {
        let f = self.filter.to_lowercase();
        let mut v: Vec<&BlockDevice> = self
            .devices
            .iter()
            .filter(|d| d.size_bytes > 0 && (f.is_empty() || d.name.contains(&f)))
            .collect();
        let metric = |d: &BlockDevice| -> f64 {
            self.latest(&d.name).map_or(-1.0, |s| match self.sort {
                SortKey::Name => 0.0,
                SortKey::Util => s.util,
                SortKey::Await => s.max_await(),
                SortKey::Iops => s.iops(),
            })
        };
        v.sort_by(|a, b| {
            let by_metric = metric(b).partial_cmp(&metric(a)).unwrap_or(Ordering::Equal);
            by_metric.then_with(|| natural_cmp(&a.name, &b.name))
        });
        v
    }

    /// The selected device, if any is shown.
    pub fn selected_device(&self) -> Option<&BlockDevice> {
        let name = self.selected.as_deref()?;
        self.devices.iter().find(|d| d.name == name)
    }

    /// The newest statistics of a device.
    pub fn latest(&self, name: &str) -> Option<&ExtStats> {
        self.histories.get(name)?.last()?.stats.as_ref()
    }

    /// The newest change of a device and its before/after comparison.
    pub fn last_change(&self, name: &str) -> Option<(&ChangeMark, Comparison)> {
        self.changes_with_comparison(name).pop()
    }

    /// Every change of a device with its comparison, oldest first.
    pub fn changes_with_comparison(&self, name: &str) -> Vec<(&ChangeMark, Comparison)> {
        let (Some(marks), Some(h)) = (self.marks.get(name), self.histories.get(name)) else {
            return Vec::new();
        };
        marks
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let prev = i.checked_sub(1).map(|p| marks[p].t);
                let next = marks.get(i + 1).map(|n| n.t);
                (m, compare(h, m.t, BEFORE_WINDOW, prev, next))
            })
            .collect()
    }

    /// Changes still in force, for the summary printed on exit.
    pub fn session(&self) -> Vec<SessionChange> {
        let mut v: Vec<SessionChange> = self
            .undo
            .iter()
            .filter_map(|(dev, stack)| {
                Some(SessionChange {
                    device: dev.clone(),
                    original: stack.first()?.before.clone(),
                    labels: stack.iter().map(|m| m.label.clone()).collect(),
                })
            })
            .collect();
        v.sort_by(|a, b| natural_cmp(&a.device, &b.device));
        v
    }

    // ---- feed from the source --------------------------------------------

    /// Take one message of the source.
    pub fn on_feed(&mut self, feed: Feed) {
        match feed {
            Feed::Snapshot(s) => self.on_snapshot(&s),
            Feed::Change(mark) => self.add_mark(mark),
            Feed::Applied(r) => self.on_applied(*r),
            Feed::Position(p) => self.replay = Some(p),
            Feed::Error(e) => self.say(StatusKind::Error, e),
        }
    }

    fn add_mark(&mut self, mark: ChangeMark) {
        self.marks.entry(mark.device.clone()).or_default().push(mark);
    }

    fn keep_secs(&self, name: &str) -> f64 {
        let long = self.devices.len() <= FULL_HISTORY_DEVICES
            || self.selected.as_deref() == Some(name)
            || self.marks.contains_key(name);
        if long {
            KEEP_SECS
        } else {
            SHORT_POINTS * self.interval.as_secs_f64()
        }
    }

    fn on_snapshot(&mut self, s: &Snapshot) {
        self.now = s.t;
        self.iowait = s.iowait_pct;
        self.samples += 1;
        if !Arc::ptr_eq(&self.devices, &s.devices) {
            self.devices = Arc::clone(&s.devices);
            let devs = Arc::clone(&self.devices);
            self.histories
                .retain(|name, _| devs.iter().any(|d| &d.name == name && d.size_bytes > 0));
            self.close_overlay_of_vanished();
        }
        if let Some(itv) = s.interval {
            let devs = Arc::clone(&self.devices);
            for d in devs.iter().filter(|d| d.size_bytes > 0) {
                let keep = self.keep_secs(&d.name);
                let p = Point {
                    t: s.t,
                    itv,
                    stats: s.ext(&d.name).copied(),
                };
                self.histories
                    .entry(d.name.clone())
                    .or_default()
                    .push(p, keep);
            }
        }
        self.reconcile_selection();
    }

    fn close_overlay_of_vanished(&mut self) {
        let dev = match &self.overlay {
            Some(Overlay::Picker { device, .. } | Overlay::Tunables { device, .. }) => device,
            Some(Overlay::Edit(e)) => &e.device,
            _ => return,
        };
        if !self.devices.iter().any(|d| &d.name == dev && d.size_bytes > 0) {
            self.overlay = None;
        }
    }

    /// Keep the selection on a shown device; say so when it vanished.
    fn reconcile_selection(&mut self) {
        let names: Vec<String> = self.visible().iter().map(|d| d.name.clone()).collect();
        if let Some(want) = self.want_select.take() {
            if names.contains(&want) {
                self.selected = Some(want);
            } else {
                self.say(StatusKind::Error, format!("'{want}' is not shown (no such device, or size 0)"));
            }
        }
        match &self.selected {
            Some(sel) if names.contains(sel) => {}
            old => {
                let vanished = old.clone().filter(|o| {
                    !self.devices.iter().any(|d| &d.name == o && d.size_bytes > 0)
                });
                let pos = self.selected_pos.min(names.len().saturating_sub(1));
                self.selected = names.get(pos).cloned();
                if let Some(v) = vanished {
                    let now = self.selected.as_deref().unwrap_or("nothing");
                    self.say(StatusKind::Error, format!("'{v}' vanished; selected {now}"));
                }
            }
        }
        if let Some(sel) = &self.selected {
            self.selected_pos = names.iter().position(|n| n == sel).unwrap_or(0);
        }
    }

    fn on_applied(&mut self, r: ApplyReport) {
        self.pending = self.pending.saturating_sub(1);
        let dev = r.request.device.clone();
        match r.result {
            Err(e) => self.say(StatusKind::Error, e),
            Ok((o, mark)) => {
                let ms = o.kernel_time.as_secs_f64() * 1000.0;
                let label = mark.label.clone();
                let what = match r.request.kind {
                    ApplyKind::Change => "",
                    ApplyKind::Undo => "undo: ",
                    ApplyKind::RevertAll => "reverted: ",
                };
                if o.changes.is_empty() {
                    self.say(StatusKind::Info, format!("{what}{dev}: no change"));
                    return;
                }
                match r.request.kind {
                    ApplyKind::Change => self.undo.entry(dev.clone()).or_default().push(mark.clone()),
                    ApplyKind::Undo => {
                        if let Some(stack) = self.undo.get_mut(&dev) {
                            stack.pop();
                        }
                    }
                    ApplyKind::RevertAll => {
                        self.undo.remove(&dev);
                    }
                }
                self.undo.retain(|_, s| !s.is_empty());
                self.add_mark(mark);
                self.say(
                    StatusKind::Done,
                    format!("{what}{dev}: {label} (kernel {ms:.1} ms)"),
                );
            }
        }
    }

    // ---- keys ------------------------------------------------------------

    /// Apply an action; returns what the source must do.
    pub fn on_action(&mut self, a: Action) -> Vec<Control> {
        if a == Action::Quit {
            self.quit = true;
            return Vec::new();
        }
        match self.mode() {
            Mode::Main => self.main_action(a),
            Mode::Text if self.overlay.is_none() => {
                self.filter_action(a);
                Vec::new()
            }
            _ => self.overlay_action(a),
        }
    }

    fn select_by(&mut self, delta: isize, absolute: Option<usize>) {
        let names: Vec<String> = self.visible().iter().map(|d| d.name.clone()).collect();
        if names.is_empty() {
            return;
        }
        let cur = self
            .selected
            .as_ref()
            .and_then(|s| names.iter().position(|n| n == s))
            .unwrap_or(0);
        let pos = absolute.unwrap_or_else(|| {
            (cur as isize + delta).clamp(0, names.len() as isize - 1) as usize
        });
        let pos = pos.min(names.len() - 1);
        self.selected = Some(names[pos].clone());
        self.selected_pos = pos;
    }

    /// Why a change key cannot act now, if it cannot.
    fn refuse_change(&self, a: Action) -> Option<String> {
        let key = main_binding(a).map_or("", |b| b.shown);
        if let Some(why) = &self.read_only {
            return Some(format!("read-only ({why}): '{key}' would change settings; nothing was changed"));
        }
        if self.replay.is_some() {
            return Some("replay: a recording cannot be changed".into());
        }
        if self.pending > 0 {
            return Some("busy: a change is being applied; try again in a moment".into());
        }
        None
    }

    fn request(&mut self, device: &str, settings: Settings, kind: ApplyKind) -> Control {
        self.pending += 1;
        let id = self.next_id;
        self.next_id += 1;
        Control::Apply(ApplyRequest {
            id,
            device: device.to_string(),
            settings,
            kind,
        })
    }

    fn main_action(&mut self, a: Action) -> Vec<Control> {
        let page = self.page_rows.max(1) as isize;
        match a {
            Action::Up => self.select_by(-1, None),
            Action::Down => self.select_by(1, None),
            Action::PageUp => self.select_by(-page, None),
            Action::PageDown => self.select_by(page, None),
            Action::Home => self.select_by(0, Some(0)),
            Action::End => self.select_by(0, Some(usize::MAX)),
            Action::Picker | Action::EditNr | Action::EditRa | Action::EditTunables
            | Action::Undo | Action::RevertAll => {
                if let Some(why) = self.refuse_change(a) {
                    self.say(StatusKind::Error, why);
                    return Vec::new();
                }
                return self.change_action(a);
            }
            Action::Export => self.say(StatusKind::Info, "export: not available yet"),
            Action::ShootOut => self.say(StatusKind::Info, "shoot-out: not available yet"),
            Action::Record => self.say(StatusKind::Info, "record: not available yet"),
            Action::Faster | Action::Slower => {
                let ms = self.interval.as_millis() as u64;
                let next = if a == Action::Faster {
                    INTERVALS_MS.iter().rev().find(|&&i| i < ms).copied().unwrap_or(INTERVALS_MS[0])
                } else {
                    INTERVALS_MS.iter().find(|&&i| i > ms).copied().unwrap_or(INTERVALS_MS[6])
                };
                self.interval = Duration::from_millis(next);
                self.say(StatusKind::Info, format!("sampling every {}", fmt_interval(self.interval)));
                return vec![Control::Interval(self.interval)];
            }
            Action::Pause => {
                self.paused = !self.paused;
                let word = if self.paused { "paused" } else { "resumed" };
                self.say(StatusKind::Info, format!("sampling {word}"));
                return vec![Control::Pause(self.paused)];
            }
            Action::Help => self.overlay = Some(Overlay::Help { scroll: 0 }),
            Action::Sort => {
                self.sort = self.sort.next();
                self.say(StatusKind::Info, format!("sorted by {}", self.sort.label()));
            }
            Action::Filter => self.filter_typing = true,
            Action::Cancel => {
                if !self.filter.is_empty() {
                    self.filter.clear();
                    self.say(StatusKind::Info, "filter cleared");
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn change_action(&mut self, a: Action) -> Vec<Control> {
        let Some(d) = self.selected_device().cloned() else {
            self.say(StatusKind::Error, "no device selected");
            return Vec::new();
        };
        let needs_sched = matches!(a, Action::Picker | Action::EditNr | Action::EditTunables);
        if needs_sched && !d.queue.has_scheduler() {
            self.say(
                StatusKind::Error,
                format!("'{}' has no I/O scheduler (bio-based device); only read_ahead_kb can be set", d.name),
            );
            return Vec::new();
        }
        match a {
            Action::Picker => {
                if let Some(s) = &d.queue.scheduler {
                    self.overlay = Some(Overlay::Picker {
                        device: d.name.clone(),
                        cursor: s.available.iter().position(|n| *n == s.active).unwrap_or(0),
                        options: s.available.clone(),
                        active: s.active.clone(),
                    });
                }
            }
            Action::EditNr | Action::EditRa => {
                let (field, cur) = if a == Action::EditNr {
                    (Field::NrRequests, d.queue.nr_requests)
                } else {
                    (Field::ReadAheadKb, d.queue.read_ahead_kb)
                };
                let current = cur.map_or_else(|| "-".into(), |n| n.to_string());
                self.overlay = Some(Overlay::Edit(Editor {
                    device: d.name.clone(),
                    field,
                    input: current.clone(),
                    current,
                }));
            }
            Action::EditTunables => {
                if d.queue.tunables.is_empty() {
                    self.say(StatusKind::Info, format!("'{}': {} has no tunables", d.name, d.queue.active_label()));
                    return Vec::new();
                }
                self.overlay = Some(Overlay::Tunables {
                    device: d.name.clone(),
                    scheduler: d.queue.active_label().to_string(),
                    items: d.queue.tunables.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    cursor: 0,
                });
            }
            Action::Undo => {
                let Some(m) = self.undo.get(&d.name).and_then(|s| s.last()).cloned() else {
                    self.say(StatusKind::Info, format!("nothing to undo on '{}'", d.name));
                    return Vec::new();
                };
                self.say(StatusKind::Info, format!("applying: undo {} on {}…", m.label, d.name));
                return vec![self.request(&d.name, m.before, ApplyKind::Undo)];
            }
            Action::RevertAll => {
                let devices: Vec<String> = self.session().into_iter().map(|s| s.device).collect();
                if devices.is_empty() {
                    self.say(StatusKind::Info, "nothing to revert: no changes in this session");
                } else {
                    self.overlay = Some(Overlay::Confirm { devices });
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn filter_action(&mut self, a: Action) {
        match a {
            Action::Input(c) if self.filter.len() < 32 => self.filter.push(c),
            Action::Backspace => {
                self.filter.pop();
            }
            Action::Confirm => self.filter_typing = false,
            Action::Cancel => {
                self.filter.clear();
                self.filter_typing = false;
            }
            _ => {}
        }
        self.reconcile_selection();
    }

    fn overlay_action(&mut self, a: Action) -> Vec<Control> {
        let Some(ov) = self.overlay.take() else {
            return Vec::new();
        };
        if a == Action::Cancel {
            return Vec::new();
        }
        let mut out = Vec::new();
        let keep = match ov {
            Overlay::Picker { device, options, active, mut cursor } => match a {
                Action::Up | Action::Down => {
                    cursor = step(cursor, options.len(), a == Action::Down);
                    Some(Overlay::Picker { device, options, active, cursor })
                }
                Action::Confirm => {
                    let choice = options.get(cursor).cloned().unwrap_or_default();
                    if choice == active {
                        self.say(StatusKind::Info, format!("'{device}': {choice} is already active"));
                    } else {
                        self.say(StatusKind::Info, format!("applying: {device} {active}→{choice}…"));
                        let s = Settings { scheduler: Some(choice), ..Settings::default() };
                        out.push(self.request(&device, s, ApplyKind::Change));
                    }
                    None
                }
                _ => Some(Overlay::Picker { device, options, active, cursor }),
            },
            Overlay::Tunables { device, scheduler, items, mut cursor } => match a {
                Action::Up | Action::Down => {
                    cursor = step(cursor, items.len(), a == Action::Down);
                    Some(Overlay::Tunables { device, scheduler, items, cursor })
                }
                Action::Confirm => items.get(cursor).map(|(k, v)| {
                    Overlay::Edit(Editor {
                        device: device.clone(),
                        field: Field::Tunable(k.clone()),
                        current: v.clone(),
                        input: v.clone(),
                    })
                }),
                _ => Some(Overlay::Tunables { device, scheduler, items, cursor }),
            },
            Overlay::Edit(mut e) => match a {
                Action::Input(c) => {
                    if e.input.len() < MAX_INPUT {
                        e.input.push(c);
                    }
                    Some(Overlay::Edit(e))
                }
                Action::Backspace => {
                    e.input.pop();
                    Some(Overlay::Edit(e))
                }
                Action::Confirm => match e.check(self.page_kb) {
                    Err(why) => {
                        self.say(StatusKind::Error, format!("'{}': {why}; nothing was changed", e.device));
                        Some(Overlay::Edit(e))
                    }
                    Ok(_) if e.input.trim() == e.current => {
                        self.say(StatusKind::Info, format!("'{}': {} unchanged", e.device, e.field.label()));
                        None
                    }
                    Ok(s) => {
                        self.say(StatusKind::Info, format!("applying: {} {} → {}…", e.device, e.field.label(), e.input.trim()));
                        out.push(self.request(&e.device, s, ApplyKind::Change));
                        None
                    }
                },
                _ => Some(Overlay::Edit(e)),
            },
            Overlay::Help { scroll } => {
                let s = match a {
                    Action::Up => scroll.saturating_sub(1),
                    Action::Down => scroll.saturating_add(1),
                    Action::PageUp => scroll.saturating_sub(10),
                    Action::PageDown => scroll.saturating_add(10),
                    _ => scroll,
                };
                Some(Overlay::Help { scroll: s })
            }
            Overlay::Confirm { devices } => {
                if a == Action::Confirm {
                    for s in self.session() {
                        out.push(self.request(&s.device, s.original, ApplyKind::RevertAll));
                    }
                    self.say(StatusKind::Info, format!("applying: reverting {} device(s)…", devices.len()));
                    None
                } else {
                    Some(Overlay::Confirm { devices })
                }
            }
        };
        self.overlay = keep;
        out
    }
}

fn step(cursor: usize, len: usize, down: bool) -> usize {
    if down {
        (cursor + 1).min(len.saturating_sub(1))
    } else {
        cursor.saturating_sub(1)
    }
}

/// `250ms`, `1s`, `10s`.
pub fn fmt_interval(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 || ms % 1000 != 0 {
        format!("{ms}ms")
    } else {
        format!("{}s", ms / 1000)
    }
}

/// Names with their numbers in order: `loop2` before `loop10`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let split = |s: &str| {
        let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (head, num) = s.split_at(s.len() - digits);
        (head.to_string(), num.parse::<u64>().unwrap_or(0), s.to_string())
    };
    split(a).cmp(&split(b))
}
