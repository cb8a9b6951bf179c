"""Statistics of benches/latency/overhead.sh, shared with pool-switched.py."""
import random
import statistics as st


def ci(xs, f=st.median, n=2000, block=3):
    """A 95% bootstrap interval of f(xs), seeded so a rerun prints the same.
    Resampled in runs of `block` consecutive windows (a moving-block
    bootstrap): a tracer's windows share their neighbours without tracing
    with the windows next to them, so they are not independent."""
    rng = random.Random(1)
    k = len(xs)
    b = max(1, min(block, k))
    ys = []
    for _ in range(n):
        sample = []
        while len(sample) < k:
            i = rng.randrange(k - b + 1)
            sample.extend(xs[i:i + b])
        ys.append(f(sample[:k]))
    ys.sort()
    return ys[int(0.025 * n)], ys[int(0.975 * n) - 1]


def switched_windows(lines, hz):
    """The windows of phase 3 (latency_toggle's lines, `on|off SECONDS
    READS BUSY_TICKS`, with or without overhead.sh's `window ` before them):
    (attached, reads per s, busy CPU ns per read)."""
    out = []
    for line in lines:
        w = line.split()
        if w and w[0] == "window":
            w = w[1:]
        if len(w) != 4 or w[0] not in ("on", "off"):
            continue
        n = int(w[2])
        out.append((w[0] == "on", n / float(w[1]), int(w[3]) / hz * 1e9 / n if n else 0.0))
    return out


def switched_losses(windows):
    """Each window with the program attached against the mean of the
    windows without it either side: (IOPS lost %, busy CPU per I/O more %)."""
    loss, more = [], []
    for i in range(1, len(windows) - 1):
        (p, pr, pc), (on, r, c), (a, ar, ac) = windows[i - 1:i + 2]
        if on and not p and not a:
            loss.append(100 * (1 - r / ((pr + ar) / 2)))
            more.append(100 * (c / ((pc + ac) / 2) - 1))
    return loss, more


def switched_report(loss, more):
    """One line of figures of switched windows' losses."""
    mlo, mhi = ci(loss)
    alo, ahi = ci(loss, st.mean)
    clo, chi = ci(more, st.mean)
    return (f"{st.median(loss):.1f} % fewer IOPS (median, 95% {mlo:.1f} .. {mhi:.1f}; mean "
            f"{st.mean(loss):.1f}, 95% {alo:.1f} .. {ahi:.1f}; {len(loss)} windows attached, "
            f"each {min(loss):.1f} .. {max(loss):.1f}), busy CPU per I/O {st.mean(more):+.1f} % "
            f"(mean, 95% {clo:+.1f} .. {chi:+.1f})")
