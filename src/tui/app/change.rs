//! The before/after of a change as the comparison engine reads it
//! ([`blktune_core::before_after`]): the windows of the change in every
//! history the app keeps (the device's diskstats, the kernel's histograms,
//! the devices underneath it, the system), one pair of windows, and the
//! controls of the same windows.

use super::{App, BEFORE_WINDOW, KEEP_SECS};
use blktune_core::before_after::{self, BeforeAfter, SystemPoint, WindowFigures};
use blktune_core::compare::Metric;
use blktune_core::history::{ChangeWindows, Point};
use blktune_core::sampler::Snapshot;
use blktune_core::topology::DeviceNode;
use std::collections::VecDeque;

/// The system in each interval, oldest first (the controls of a before/after).
#[derive(Debug, Clone, Default)]
pub struct SystemHistory {
    /// (end of the interval, its length, the system in it).
    points: VecDeque<(f64, f64, SystemPoint)>,
}

impl SystemHistory {
    /// Take a snapshot's figures of the interval it ends.
    pub fn push(&mut self, s: &Snapshot) {
        let Some(itv) = s.interval else {
            return;
        };
        self.points.push_back((
            s.t,
            itv,
            SystemPoint {
                cpu_busy_pct: s.cpu_busy_pct,
                iowait_pct: s.iowait_pct,
                psi_some_pct: s.pressure.and_then(|p| p.some_pct),
            },
        ));
        while self.points.front().is_some_and(|f| f.0 < s.t - KEEP_SECS) {
            self.points.pop_front();
        }
    }

    /// The intervals `(start, end]` that `keep` accepts.
    pub fn within(&self, keep: impl Fn(f64, f64) -> bool) -> Vec<SystemPoint> {
        self.points
            .iter()
            .filter(|(t, itv, _)| keep(t - itv, *t))
            .map(|(_, _, p)| *p)
            .collect()
    }

    /// Forget everything (a replay refeeds from an earlier point).
    pub fn clear(&mut self) {
        self.points.clear();
    }
}

/// The kernel's figures a window can add.
const KERNEL: [Metric; 8] = Metric::KERNEL;

impl App {
    /// The whole devices `name`'s I/O goes to (a loop device's backing disk,
    /// a stacked device's members), where the worker told.
    pub fn underneath(&self, name: &str) -> Vec<String> {
        let nodes: Vec<DeviceNode> = self.devices.iter().map(DeviceNode::from).collect();
        self.where_io.topology.underneath(name, &nodes)
    }

    /// One side of a window of `name`: the device's figures from the
    /// intervals `keep` accepts, the kernel's from `kernel`, the devices
    /// underneath and the system over the same intervals.
    pub fn window_figures(
        &self,
        name: &str,
        keep: impl Fn(f64, f64) -> bool,
        kernel: Option<&super::Window>,
    ) -> Option<WindowFigures> {
        let h = self.histories.get(name)?;
        let pick = |p: &&Point| keep(p.start(), p.t);
        let mut f = WindowFigures::of_device(h.points().iter().filter(pick))?;
        if let Some(w) = kernel {
            for m in KERNEL {
                if let Some(s) = w.series(m) {
                    f = f.with_figure(m, s);
                }
            }
        }
        for under in self.underneath(name) {
            if let Some(uh) = self.histories.get(&under) {
                f = f.with_under(
                    &under,
                    &format!("under {name}"),
                    uh.points().iter().filter(pick),
                );
            }
        }
        Some(f.with_system(&self.system.within(&keep)))
    }

    /// The before/after of the `i`-th change of `name`, one window each
    /// side ([`before_after::one_pair`]); `None` until both windows have data.
    pub fn change_verdict(&self, name: &str, i: usize) -> Option<BeforeAfter> {
        let marks = self.marks.get(name)?;
        let m = marks.get(i)?;
        let prev = i.checked_sub(1).map(|j| marks[j].t);
        // An A/B of this change alternated both sides from its start on.
        let ab = self.ab_of(name, m.t).map(|a| a.started_at);
        let next = match (marks.get(i + 1).map(|n| n.t), ab) {
            (Some(n), Some(a)) => Some(n.min(a)),
            (n, a) => n.or(a),
        };
        let w = ChangeWindows::new(m.t, BEFORE_WINDOW, prev, next);
        let (kb, ka) = self.latency_compare(name, i).unwrap_or((None, None));
        let before = self.window_figures(name, |s, e| w.before(s, e), kb.as_ref())?;
        let after = self.window_figures(name, |s, e| w.after(s, e), ka.as_ref())?;
        Some(before_after::one_pair(&before, &after, name))
    }
}
