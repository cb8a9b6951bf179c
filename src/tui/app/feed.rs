//! The app's side of the worker's feed: snapshots (history, devices that
//! came, went or were replaced, the selection), change marks, and the
//! answers to the changes it asked for (one at a time, or a whole `U`).

use super::{
    App, FULL_HISTORY_DEVICES, KEEP_SECS, RevertBatch, SHORT_POINTS, StatusKind, replaced_devices,
};
use crate::tui::worker::protocol::{ApplyKind, ApplyReport, Feed};
use blktune_core::history::{ChangeMark, Point};
use blktune_core::natural::natural_cmp;
use blktune_core::sampler::Snapshot;
use std::sync::Arc;

impl App {
    /// Take one message of the source. While the display is paused, what was
    /// sampled (snapshots, marks, probe, latency, processes and placement) is
    /// held and taken in on resume; answers to the user's own actions are not.
    pub fn on_feed(&mut self, feed: Feed) {
        if let Some(held) = &mut self.held
            && matches!(
                feed,
                Feed::Snapshot(_)
                    | Feed::Change(_)
                    | Feed::Probe(_)
                    | Feed::Latency(_)
                    | Feed::WhereIo(_)
                    | Feed::Ab(_)
            )
        {
            held.push_back(feed);
            // At most what the charts keep (about three feeds per interval).
            let cap = (KEEP_SECS / self.interval.as_secs_f64().max(0.05)) as usize * 3 + 16;
            while held.len() > cap {
                held.pop_front();
            }
            return;
        }
        match feed {
            Feed::Snapshot(s) => self.on_snapshot(*s),
            Feed::Change(mark) => self.add_mark(mark),
            Feed::Applied(r) => self.on_applied(*r),
            Feed::Position(p) => self.on_position(p),
            Feed::Error(e) => self.say(StatusKind::Error, e),
            Feed::ShootOut(f) => self.on_shootout_feed(f),
            Feed::ExportWritten(r) => self.on_export_written(r),
            Feed::Reset => self.reset(),
            Feed::Record(ev) => self.on_record(ev),
            Feed::Probe(p) => self.on_probe(&p),
            Feed::Latency(l) => self.on_latency(l),
            Feed::WhereIo(w) => self.on_where_io(w),
            Feed::Ab(f) => self.on_ab(f),
        }
    }

    /// Live pause on or off: freeze the display (sampling goes on), or take
    /// in everything sampled meanwhile and show it.
    pub(super) fn toggle_pause(&mut self) -> usize {
        self.paused = !self.paused;
        if self.paused {
            self.held = Some(Default::default());
            return 0;
        }
        let held = self.held.take().unwrap_or_default();
        let n = held
            .iter()
            .filter(|f| matches!(f, Feed::Snapshot(_)))
            .count();
        for f in held {
            self.on_feed(f);
        }
        n
    }

    pub(super) fn add_mark(&mut self, mark: ChangeMark) {
        self.marks
            .entry(mark.device.clone())
            .or_default()
            .push(mark);
    }

    /// Does every device keep the long history? Counted over the devices
    /// with a size, the ones the table shows: detached loop nodes stay in
    /// the list by the hundred and must not cut everyone's history short.
    /// Once per tick; [`App::keep_secs`] takes the answer.
    pub(super) fn all_keep_long(&self) -> bool {
        self.sized.len() <= FULL_HISTORY_DEVICES
    }

    /// Seconds of history to keep of a device, given [`App::all_keep_long`].
    pub(super) fn keep_secs(&self, name: &str, all_long: bool) -> f64 {
        let long =
            all_long || self.selected.as_deref() == Some(name) || self.marks.contains_key(name);
        if long {
            KEEP_SECS
        } else {
            SHORT_POINTS * self.interval.as_secs_f64()
        }
    }

    fn on_snapshot(&mut self, s: Snapshot) {
        self.now = s.t;
        if self.status.as_ref().is_some_and(|st| st.expired(self.now)) {
            self.status = None;
        }
        self.iowait = s.iowait_pct;
        self.system.push(&s);
        self.pressure = s.pressure;
        self.samples += 1;
        self.replaced.clear();
        if !Arc::ptr_eq(&self.devices, &s.devices) {
            self.replaced = replaced_devices(&self.devices, &s.devices);
            self.devices = Arc::clone(&s.devices);
            self.devices_by_name =
                (self.devices).is_sorted_by(|a, b| natural_cmp(&a.name, &b.name).is_le());
            self.sized = (self.devices.iter())
                .filter(|d| !d.is_empty())
                .map(|d| d.name.clone())
                .collect();
            let replaced = self.replaced.clone();
            for name in &replaced {
                // Its originals belong to the device that went: never undo
                // onto the new one (`blktune revert` explains what is left).
                self.marks.remove(name);
                if self.undo.remove(name).is_some() {
                    self.say(
                        StatusKind::Error,
                        format!(
                            "'{name}' was replaced by another device of that name (new diskseq): \
                             its changes can no longer be undone here; see 'blktune revert {name}'"
                        ),
                    );
                }
            }
            // Another device's history must not go on under the same name.
            let sized = &self.sized;
            self.histories
                .retain(|name, _| !replaced.contains(name) && sized.contains(name));
            if let Some(p) = &mut self.probe {
                p.history.retain(|name, _| sized.contains(name));
            }
            self.seed_histories();
        }
        if let Some(itv) = s.interval {
            let all_long = self.all_keep_long();
            // Every tick, every device: its numbers in the snapshot's order
            // (no search of the snapshot per device: a thousand per tick),
            // updated in place (no allocation once a name is known).
            let mut seen = 0;
            for (name, st) in &s.stats {
                if self.push_point(name, Some(st), s.t, itv, all_long) {
                    seen += 1;
                }
            }
            // A device with a size but no diskstats line (the moment it
            // came): a point without data.
            if seen < self.sized.len() {
                let missing: Vec<String> = (self.sized.iter())
                    .filter(|n| !s.stats.contains_key(n.as_str()))
                    .cloned()
                    .collect();
                for name in missing {
                    self.push_point(&name, None, s.t, itv, all_long);
                }
            }
        }
        let rates = s.interval.is_some();
        self.now_stats = s.stats;
        if self.top_pick && rates {
            self.top_pick = false;
            if self.selected.is_some() && self.overlay.is_none() {
                self.selected = self.visible().first().map(|d| d.name.clone());
                self.selected_pos = 0;
            }
        }
        self.reconcile_selection();
        if let Some((why, what)) = self.close_overlay_of_other_device() {
            self.say(
                StatusKind::Error,
                format!(
                    "{why}: {what} closed, nothing changed{}",
                    if self.selected.is_none() {
                        "; no device selected"
                    } else {
                        ""
                    }
                ),
            );
        }
    }

    /// Give every device with a size a history (empty until its first
    /// interval): then the histories are exactly the table's rows, and a
    /// diskstats line needs one lookup per tick to find its row or to
    /// learn it has none (a partition, a detached loop node).
    pub(super) fn seed_histories(&mut self) {
        for name in &self.sized {
            if !self.histories.contains_key(name) {
                self.histories.insert(name.clone(), Default::default());
            }
        }
    }

    /// Add a device's numbers of the interval that ended at `t`, if it is a
    /// row of the table (it has a size, so a history:
    /// [`App::seed_histories`]); false if not.
    fn push_point(
        &mut self,
        name: &str,
        stat: Option<&blktune_core::sampler::DeviceStat>,
        t: f64,
        itv: f64,
        all_long: bool,
    ) -> bool {
        let keep = self.keep_secs(name, all_long);
        let p = Point {
            t,
            itv,
            stats: stat.and_then(|st| st.stats.as_ref().ok()).copied(),
        };
        let Some(h) = self.histories.get_mut(name) else {
            return false;
        };
        h.push(p, keep);
        true
    }

    fn on_applied(&mut self, r: ApplyReport) {
        self.pending = self.pending.saturating_sub(1);
        if r.request.kind == ApplyKind::RevertAll {
            return self.on_reverted(r);
        }
        let dev = r.request.device.clone();
        match r.result {
            Err(e) => self.say(StatusKind::Error, e.to_string()),
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
                // The device was replaced since (another diskseq in the
                // snapshot now): its undo and settings are not the new one's.
                let now = self.diskseq_of(&dev);
                if r.request.diskseq.is_some() && now.is_some() && now != r.request.diskseq {
                    self.undo.remove(&dev);
                    self.say(
                        StatusKind::Error,
                        format!(
                            "{what}{dev}: {label} was made on the device before it was replaced \
                             (new diskseq); see 'blktune revert {dev}'"
                        ),
                    );
                    return;
                }
                match r.request.kind {
                    ApplyKind::Change => {
                        self.undo.entry(dev.clone()).or_default().push(mark.clone())
                    }
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
                // Show the read-back settings at once: a picker opened before
                // the next snapshot must start from the scheduler now active.
                if let Some(d) = Arc::make_mut(&mut self.devices)
                    .iter_mut()
                    .find(|d| d.name == dev)
                {
                    d.queue = o.after.clone();
                }
                self.add_mark(mark);
                self.say(
                    StatusKind::Done,
                    format!("{what}{dev}: {label} (kernel {ms:.1} ms)"),
                );
            }
        }
    }
}

impl App {
    /// One answer of a `U`; the last one says what happened to every device.
    fn on_reverted(&mut self, r: ApplyReport) {
        let dev = r.request.device.clone();
        let batch = self.reverting.get_or_insert_with(RevertBatch::default);
        batch.left = batch.left.saturating_sub(1);
        let error = match r.result {
            Err(e) => {
                let e = e.to_string();
                batch.failed.push(e.clone());
                Some(e)
            }
            Ok((o, mark)) => {
                batch.reverted.push(dev.clone());
                self.undo.remove(&dev);
                if !o.changes.is_empty() {
                    if let Some(d) = Arc::make_mut(&mut self.devices)
                        .iter_mut()
                        .find(|d| d.name == dev)
                    {
                        d.queue = o.after.clone();
                    }
                    self.add_mark(mark);
                }
                None
            }
        };
        let Some(batch) = self.reverting.take_if(|b| b.left == 0) else {
            // More answers to come; an error shows at once (it names its device).
            if let Some(e) = error {
                self.say(StatusKind::Error, e);
            }
            return;
        };
        let done = batch.reverted.join(", ");
        let n = batch.reverted.len();
        if batch.failed.is_empty() {
            self.say(
                StatusKind::Done,
                format!("reverted {n} device(s) to their settings before this session: {done}"),
            );
        } else {
            let failed = batch.failed.join("; ");
            self.say(
                StatusKind::Error,
                format!("reverted {n} device(s): {done}; NOT reverted: {failed}"),
            );
        }
    }
}
