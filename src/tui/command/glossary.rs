//! Every mark and abbreviation the screens show, and what it means: the one
//! list the help overlay (`?`) prints under "Marks and abbreviations". A
//! test reads every committed screen snapshot and fails on a mark (a
//! character that is no letter, digit or box line) this list does not
//! explain.

/// A mark as the screen shows it, and what it means, grouped by where it
/// is shown (each group begins with an entry whose mark is empty: its title).
pub const GLOSSARY: &[(&str, &str)] = &[
    ("", "Table"),
    ("▶", "the selected device: the keys act on it"),
    (
        "!",
        "a row to look at: %util near 100, or await far above its usual",
    ),
    (
        "↓",
        "on a column's heading: the rows are sorted by it (o, <, >)",
    ),
    ("r/s w/s", "reads, writes completed per second (iostat -x)"),
    (
        "r_await",
        "mean ms of a read from its start to completion (w_: writes)",
    ),
    ("aqu-sz", "mean requests queued and on the device"),
    (
        "%util",
        "share of the interval the device was busy (not saturation on SSDs)",
    ),
    (
        "r_p99",
        "the kernel's 99th percentile of reads this interval, ms (w_: writes)",
    ),
    (
        "n=K",
        "under 100 I/Os (K of them): a count instead of a p99",
    ),
    (
        "-",
        "nothing to show: not traced, no interval yet, or unreadable",
    ),
    (
        "nr ra",
        "nr_requests, read_ahead_kb (in the device's title)",
    ),
    (
        "…",
        "text cut to fit (numbers are never cut: left out whole)",
    ),
    ("", "Charts"),
    (
        "2.41ms",
        "under a chart's name: the newest interval, as in the table",
    ),
    (
        "max 3.72",
        "the top of the bars' scale (highest bar or newest value)",
    ),
    (
        "1 col = 3s",
        "on the axis: each bar is the mean over that long",
    ),
    ("-2m00s", "the window (shorter while the history is short)"),
    ("▲ │", "a change; its before/after is on the right"),
    (
        "▒",
        "latency chart: solid to the p50, shaded from there to the p99",
    ),
    (
        "! busy",
        "in the pane's title: the selected row (▶) is a `!` row",
    ),
    ("", "Before and after a change"),
    ("Δ", "the last change and how long ago; its windows below"),
    ("→", "before→after of a setting"),
    ("covers", "seconds of samples each window holds"),
    (
        "±",
        "how much the intervals varied (one standard deviation)",
    ),
    (
        "~+3%",
        "within the noise: under 5% or the intervals' own spread",
    ),
    (
        "short",
        "a window of fewer than 3 intervals: no percent yet",
    ),
    ("few", "under 100 I/Os on a side: no percent"),
    ("n/a", "before was 0: no percent"),
    (
        "dev99",
        "r_dev99: p99 on the device alone (issue to completion); the rest \
         is time in the scheduler",
    ),
    ("↳", "what moved, when the p99 did"),
    ("", "Header"),
    (
        "psi 13.1/2.4%",
        "I/O pressure (PSI): share of the last interval some / all non-idle \
         tasks stalled on I/O; iowait misses O_DIRECT, libaio, io_uring",
    ),
    (
        "psi~",
        "before the first interval: the kernel's 10 s average",
    ),
    ("iowait", "CPU idle while some task waited for I/O"),
    ("● REC", "recording to that file (R stops)"),
    ("no p99: …", "the kernel's latency is not traced, and why"),
    (
        "lost 3 I/Os",
        "completions the kernel could not count; p99s rest on the rest",
    ),
    (
        "no dev span",
        "queues that do not time their issues have no dev99",
    ),
    (
        "READ-ONLY",
        "changes are disabled (--read-only, or not root)",
    ),
    ("▶ ‖ ■ end", "replay: playing, paused, at the end"),
    ("x2", "replay: playback speed"),
    ("", "Who does the I/O (i)"),
    ("IOPS MB/s", "requests and MiB read and written per second"),
    ("share", "percent of the device's requests"),
    (
        "(rest)",
        "smaller processes, and requests started before the panel opened",
    ),
    (
        "write-back",
        "a kernel worker writing dirty pages (kworker: one that also read)",
    ),
    (
        "PSI some/full",
        "share of the interval the cgroup's tasks stalled on I/O \
         (io.pressure); ~12%: its 10 s average",
    ),
    (
        "approximate",
        "no kernel attribution: /proc/PID/io, of every device",
    ),
    ("·", "separates a title's parts"),
    ("", "Lists and dialogs"),
    ("●", "the active scheduler (picker)"),
    ("★", "a shoot-out's winner"),
    ("░", "progress still to go"),
    ("▏", "the end of the text being typed (a value, R's path)"),
    ("↑/k ↓/j", "the arrow keys, or k and j"),
];

#[cfg(test)]
mod tests {
    use super::GLOSSARY;

    #[test]
    fn every_entry_says_something_and_no_mark_is_explained_twice() {
        for (i, (shown, means)) in GLOSSARY.iter().enumerate() {
            assert!(!means.is_empty(), "{shown}");
            assert!(
                shown.is_empty() || GLOSSARY[i + 1..].iter().all(|(s, _)| s != shown),
                "{shown} twice"
            );
        }
    }
}
