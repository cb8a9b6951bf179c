#!/usr/bin/env bash
# Overhead per I/O of blktune's BPF latency program against bpftrace doing the
# same histograms (bpftrace-hist.bt), at the highest IOPS this machine drives:
# fio 4 KiB randread, direct I/O, io_uring, on a loop device over a file in
# /dev/shm, scheduler none. No assertions: figures for the README and reviews.
# Root only.
#
#   benches/latency/overhead.sh [ROUNDS] [SECONDS]      (default 40 rounds, windows of 2 s)
#
# Three phases, so that measuring does not inflate what is measured:
#  1. IOPS, with kernel.bpf_stats_enabled OFF (with it on, every BPF program
#     call is timed with two extra clock reads). One fio run goes on the whole
#     phase; the tracers are started and stopped under it, and its IOPS are
#     counted (from /proc/diskstats) over windows of SECONDS with no tracer
#     and with each tracer in turn, every tracer's window between two windows
#     without one, in an order that rotates each round:
#       none      no tracing;
#       ours      `blktune watch --json -i 1s DEV`: the real tool, so the BPF
#                 programs plus blktune's own sampling (diskstats, sysfs and
#                 the map read once per second) in userspace;
#       before    the same with the binary in $BLKTUNE_BEFORE, if set (to
#                 compare two builds in one run);
#       bpftrace  bpftrace-hist.bt.
#     A tracer's window counts only once it has attached (and its start-up
#     is over); a window without one starts after the last has exited. Each
#     tracer window's loss is against the mean of the windows either side of
#     it, so the VM's drift (its IOPS move by 10% from one fio run to the
#     next, and a few percent from second to second) cancels out in pairs;
#     the summary gives the median and the mean of those losses, each with a
#     95% bootstrap interval (of runs of three consecutive windows: a window
#     shares its neighbours without tracing with the windows next to it). Each window also gives the machine's busy CPU
#     time (user+system+irq, not steal) per I/O. (Until 2026-11-24 each
#     contender ran fio runs of its own, 4 s each, paired by round: those
#     runs' IOPS spread so widely that 16 rounds gave intervals 5 to 11
#     points wide; benches/latency/runs/ keeps their output.)
#  2. Run time in BPF per I/O, with bpf_stats ON, in separate short fio runs
#     (3 s, COST_ROUNDS times per tracer, default 12): the programs' total run time over the
#     calls of the busiest one (one call per I/O). With bpf_stats on, the
#     kernel reads the clock around every program call, and part of that
#     reading lands inside the time it records: an empty program measures
#     about 55 ns per call on the VM this was written on, more than the work
#     of blktune's programs. So the same runs measure `empty` (bpftrace with
#     empty probes on block_rq_issue and block_rq_complete), and each tracer's
#     figure is also given net of that cost per program call. The net figure
#     over the busy CPU time per I/O without tracing is the share of a
#     CPU-bound fio's IOPS the programs themselves take; phase 1 measures the
#     whole cost (the tracepoints' dispatch and blktune's userspace too).
#  3. IOPS with blktune's program switched on and off, bpf_stats off, in one
#     fio run of TOGGLE_SECONDS (default 300; 0 skips the phase):
#     crates/blktune-core/examples/latency_toggle.rs loads the program as
#     `watch` does, then detaches and attaches it again every half second
#     (windows of 400 ms, each 100 ms after its switch) and reads its maps
#     once a second in both states. Each window with the program on is
#     compared with the windows off either side of it, half a second away,
#     with no process started or stopped: the cost per I/O of the program
#     and of the tracepoint's dispatch of it, with the VM's drift cancelled
#     far better than phase 1's windows seconds apart can (what phase 1
#     adds to it is blktune's sampling once a second in userspace).
#
# A ROUNDS of 0 skips phase 1.
#
# BLKTUNE (default target/release/blktune) and BLKTUNE_BEFORE name the binaries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-40}
secs=${2:-2}
cost_secs=3
cost_rounds=${COST_ROUNDS:-12}
bin=${BLKTUNE:-$here/../../target/release/blktune}
toggle_secs=${TOGGLE_SECONDS:-300}
toggle=${TOGGLE:-$here/../../target/release/examples/latency_toggle}
before=${BLKTUNE_BEFORE:-}
[ "$(id -u)" -eq 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
[ "$toggle_secs" = 0 ] || [ -x "$toggle" ] || { echo "build first: cargo build --release --example latency_toggle" >&2; exit 1; }
[ -z "$before" ] || [ -x "$before" ] || { echo "BLKTUNE_BEFORE=$before is not executable" >&2; exit 1; }
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

img=$(mktemp /dev/shm/blktune-bench-latency.XXXXXX)
fio_out=$(mktemp)
toggle_out=$(mktemp)
stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled)
dev=""
bg=""
out=""
load=""
cleanup() {
  if [ -n "$bg" ]; then kill "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true; fi
  if [ -n "$load" ]; then kill "$load" 2>/dev/null || true; wait "$load" 2>/dev/null || true; fi
  [ -n "$dev" ] && losetup -d "$dev" || true
  rm -f "$img" "$fio_out" "$toggle_out" ${out:+"$out"}
  echo "$stats_was" > /proc/sys/kernel/bpf_stats_enabled
}
trap cleanup EXIT
[ "$stats_was" = 0 ] || echo "note: kernel.bpf_stats_enabled was $stats_was; off during the IOPS rounds, restored at exit"
truncate -s 1G "$img"
dev=$(losetup -f --show "$img")
name=${dev#/dev/}
echo none > "/sys/block/$name/queue/scheduler"
dd if=/dev/zero of="$dev" bs=1M count=1024 oflag=direct status=none  # no holes

# The machine's busy CPU time so far, in clock ticks: user, nice, system,
# irq and softirq of /proc/stat's "cpu" line (not idle, iowait or steal:
# what the VM's host takes is not ours).
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8; exit}' /proc/stat; }

# fio's read IOPS over $1 seconds, and the machine's busy CPU time per I/O
# in ns over the same run (fio, the kernel, and the tracer with its
# userspace): "IOPS NS".
iops() {
  local b0 b1
  b0=$(busy)
  fio --name=bench --filename="$dev" --direct=1 --rw=randread --bs=4k \
    --ioengine=io_uring --iodepth=32 --numjobs="$(nproc)" --group_reporting \
    --time_based --runtime="$1" --output-format=json > "$fio_out"
  b1=$(busy)
  python3 - "$fio_out" "$((b1 - b0))" "$(getconf CLK_TCK)" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
ticks, hz = int(sys.argv[2]), int(sys.argv[3])
print(round(r["iops"]), round(ticks / hz * 1e9 / max(r["total_ios"], 1)))
PY
}

# Wait until $bg holds at least $1 BPF programs and their number has not
# changed for a second (blktune loads and attaches before it samples; bpftrace
# prints "Attaching" before it has loaded them all).
attached() {
  local n=-1 m i stable=0
  for i in $(seq 200); do
    alive
    m=$(prog_stats | wc -l)
    if [ "$m" -ge "$1" ] && [ "$m" -eq "$n" ]; then
      stable=$((stable + 1))
      [ "$stable" -ge 5 ] && return 0
    else
      stable=0
    fi
    n=$m
    sleep 0.2
  done
  echo "the tracer did not attach its programs in 40 s" >&2
  exit 1
}

# Fail if the tracer in the background has exited.
alive() { kill -0 "$bg" 2>/dev/null || { echo "the tracer exited" >&2; exit 1; }; }

# Start a tracer in the background ($bg) and wait until it is attached.
start() {
  case $1 in
    ours | before)
      local b=$bin
      [ "$1" = before ] && b=$before
      "$b" watch --json -i 1s "$name" > /dev/null & bg=$!
      # The completion program; the issue program only where a queue does
      # not time its issues (not this one; builds before 2026-11-25 loaded
      # it at start all the same).
      attached 1
      ;;
    bpftrace)
      out=$(mktemp)
      BPFTRACE_MAP_KEYS_MAX=200000 bpftrace "$here/bpftrace-hist.bt" > "$out" 2>/dev/null & bg=$!
      until grep -q Attaching "$out"; do alive; sleep 0.2; done
      # It says so before it has loaded them all.
      attached 3
      ;;
    empty)
      out=$(mktemp)
      bpftrace -e 'tracepoint:block:block_rq_issue {} tracepoint:block:block_rq_complete {}' \
        > "$out" 2>/dev/null & bg=$!
      until grep -q Attaching "$out"; do alive; sleep 0.2; done
      attached 2
      ;;
  esac
}

stop() {
  case $1 in
    bpftrace | empty)
      # bpftrace 0.17 can miss a SIGINT that comes just before it waits for
      # events: send it again while it is still there.
      local i
      for i in $(seq 20); do
        kill -INT "$bg" 2>/dev/null || break
        for _ in $(seq 30); do kill -0 "$bg" 2>/dev/null || break 2; sleep 0.1; done
      done
      ;;
    *) kill "$bg" ;;
  esac
  wait "$bg" 2>/dev/null || true
  bg=""
  rm -f ${out:+"$out"}
  out=""
}

# The cumulative run time (ns) and call count of each BPF program $bg holds,
# one line each (counted only while bpf_stats is on).
prog_stats() {
  local f
  for f in /proc/"$bg"/fdinfo/*; do
    grep -q '^prog_type' "$f" 2>/dev/null || continue
    awk '/^run_time_ns/{t=$2} /^run_cnt/{c=$2} END{print t, c}' "$f"
  done
}

contenders=(none ours)
[ -n "$before" ] && contenders+=(before)
contenders+=(bpftrace)
tracers=("${contenders[@]:1}")
nt=${#tracers[@]}

# The device's completed reads so far (diskstats' 4th field).
reads() { awk -v d="$name" '$3 == d { print $4; exit }' /proc/diskstats; }

# fio's IOPS over a window of $secs s of the fio run going on, the
# machine's busy CPU time per I/O in ns over it, and the tracer's own CPU
# time in ns per s of it (0 without one): "IOPS NS OWN".
window() {
  local r0 r1 b0 b1 t0 t1 o0 o1
  r0=$(reads); b0=$(busy); o0=$(own); t0=$(date +%s%N)
  sleep "$secs"
  r1=$(reads); b1=$(busy); o1=$(own); t1=$(date +%s%N)
  awk -v r="$((r1 - r0))" -v b="$((b1 - b0))" -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" \
    -v o="$((o1 - o0))" \
    'BEGIN { printf "%d %d %d\n", r * 1e9 / t, (r > 0 ? b / hz * 1e9 / r : 0), o * 1e9 / t }'
}

# The CPU time the tracer in the background ($bg, all its threads) has
# run in userspace and in its system calls so far, in ns (schedstat); 0
# without one. Its BPF programs run in the context of whatever task the I/O
# completes in, so they are not in it.
own() {
  [ -n "$bg" ] || { echo 0; return; }
  cat /proc/"$bg"/task/*/schedstat 2>/dev/null | awk '{ t += $1 } END { printf "%d\n", t }'
}

declare -A res cpu self before_none after_none
nones=()
nones_cpu=()
if [ "$rounds" -gt 0 ]; then
  echo "IOPS, bpf_stats off: $rounds rounds of windows of $secs s in one fio run, fio 4k randread io_uring iodepth 32 x $(nproc) jobs on $name (/dev/shm)"
  echo 0 > /proc/sys/kernel/bpf_stats_enabled
  fio --name=bench --filename="$dev" --direct=1 --rw=randread --bs=4k \
    --ioengine=io_uring --iodepth=32 --numjobs="$(nproc)" --group_reporting \
    --time_based --runtime=1000000 --output=/dev/null & load=$!
  sleep 3
  read -r none_iops none_cpu _ < <(window)
  nones=("$none_iops")
  nones_cpu=("$none_cpu")
  for r in $(seq "$rounds"); do
    line="round $r: none $none_iops"
    for i in $(seq 0 $((nt - 1))); do
      c=${tracers[$(((i + r - 1) % nt))]}
      start "$c"
      read -r res[$c,$r] cpu[$c,$r] self[$c,$r] < <(window)
      stop "$c"
      sleep 0.3
      before_none[$c,$r]="$none_iops $none_cpu"
      read -r none_iops none_cpu _ < <(window)
      nones+=("$none_iops")
      nones_cpu+=("$none_cpu")
      after_none[$c,$r]="$none_iops $none_cpu"
      line+=" $c ${res[$c,$r]} none $none_iops"
    done
    echo "$line"
  done
  kill "$load"; wait "$load" 2>/dev/null || true; load=""
fi

echo "BPF run time per I/O, bpf_stats on: $cost_rounds runs of $cost_secs s per tracer"
# ns[$c,$r]: "RUN_TIME_PER_IO CALLS_PER_IO" of tracer c in run r.
declare -A ns
for c in "${contenders[@]}" empty; do
  [ "$c" = none ] && continue
  start "$c"
  echo 1 > /proc/sys/kernel/bpf_stats_enabled
  line=""
  for r in $(seq "$cost_rounds"); do
    # The counters are cumulative: the difference over one fio run; the
    # programs' total run time and calls over the calls of the busiest one
    # (one call per I/O).
    t0=$(prog_stats)
    iops "$cost_secs" > /dev/null
    t1=$(prog_stats)
    ns[$c,$r]=$(python3 - "$t0" "$t1" <<'PY'
import sys
a = [tuple(map(int, l.split())) for l in sys.argv[1].splitlines() if l.strip()]
b = [tuple(map(int, l.split())) for l in sys.argv[2].splitlines() if l.strip()]
t = sum(y[0] - x[0] for x, y in zip(a, b))
calls = sum(y[1] - x[1] for x, y in zip(a, b))
n = max((y[1] - x[1] for x, y in zip(a, b)), default=0)
print(f"{t / n:.1f} {calls / n:.3f}" if n else "nan nan")
PY
)
    line+=" ${ns[$c,$r]% *}"
  done
  echo 0 > /proc/sys/kernel/bpf_stats_enabled
  stop "$c"
  echo "  $c: ns per I/O:$line"
done

if [ "$toggle_secs" != 0 ]; then
  echo "IOPS with blktune's program switched on and off every 0.5 s, bpf_stats off: one fio run of $toggle_secs s"
  fio --name=bench --filename="$dev" --direct=1 --rw=randread --bs=4k \
    --ioengine=io_uring --iodepth=32 --numjobs="$(nproc)" --group_reporting \
    --time_based --runtime=1000000 --output=/dev/null & load=$!
  sleep 3
  "$toggle" "$name" "$toggle_secs" > "$toggle_out"
  kill "$load"; wait "$load" 2>/dev/null || true; load=""
  # Every window, for pooling runs (benches/latency/pool-switched.py).
  sed 's/^/window /' "$toggle_out"
fi

args=()
for c in "${tracers[@]}"; do
  # Per round "ON_IOPS:ON_CPU:BEFORE_IOPS:BEFORE_CPU:AFTER_IOPS:AFTER_CPU:OWN",
  # OWN: the tracer's own CPU ns per s of the window.
  v="$c"
  for r in $(seq "$rounds"); do
    v+=" ${res[$c,$r]}:${cpu[$c,$r]}:$(tr ' ' : <<< "${before_none[$c,$r]}"):$(tr ' ' : <<< "${after_none[$c,$r]}"):${self[$c,$r]}"
  done
  v+=" |"
  for r in $(seq "$cost_rounds"); do v+=" $(tr ' ' : <<< "${ns[$c,$r]:-nan nan}")"; done
  args+=("$v")
done
empty=""
for r in $(seq "$cost_rounds"); do empty+=" $(tr ' ' : <<< "${ns[empty,$r]:-nan nan}")"; done
nones_arg="${nones[*]}|${nones_cpu[*]}"
PYTHONPATH="$here" python3 - "$rounds" "$secs" "$empty" "$nones_arg" "$toggle_out" "$(getconf CLK_TCK)" "$(nproc)" "${args[@]}" <<'PY'
import statistics as st, sys
from stats import ci, switched_losses, switched_report, switched_windows
rounds, secs = int(sys.argv[1]), float(sys.argv[2])

def runs(text):
    """(run time per I/O, program calls per I/O) of each bpf_stats run."""
    out = []
    for tok in text.split():
        t, calls = tok.split(":")
        if t != "nan":
            out.append((float(t), float(calls)))
    return out

# The clock reading bpf_stats adds inside each program call's recorded time:
# an empty program's time per call.
empty = runs(sys.argv[3])
per_call = st.median(t / calls for t, calls in empty) if empty else float("nan")
none_iops, none_cpu = ([int(x) for x in part.split()] for part in sys.argv[4].split("|"))
hz, ncpus = int(sys.argv[6]), int(sys.argv[7])
# Phase 3's windows: (on, reads per s, busy CPU ns per read).
with open(sys.argv[5]) as f:
    toggled = switched_windows(f, hz)
pairs, ns = {}, {}
for a in sys.argv[8:]:
    head, tail = a.split("|")
    name, *vals = head.split()
    pairs[name] = [tuple(map(int, v.split(":"))) for v in vals]
    ns[name] = runs(tail)
pairs.setdefault("ours", [])
ns.setdefault("ours", [])
if none_iops:
    cpu_none = st.median(none_cpu)
    print(f"IOPS without tracing: median {st.median(none_iops):.0f} over {len(none_iops)} windows "
          f"({min(none_iops)} .. {max(none_iops)}); busy CPU per I/O: median {cpu_none:.0f} ns")
else:
    cpu_none = st.median(c for on, _, c in toggled if not on) if toggled else float("nan")
print(f"bpf_stats' own cost inside each recorded program call (bpftrace, empty probes): "
      f"{per_call:.0f} ns")

def cost_of(c):
    if not ns[c]:
        return "BPF ns n/a"
    raw = st.median(t for t, _ in ns[c])
    net = st.median(t - calls * per_call for t, calls in ns[c])
    return (f"{raw:.0f} ns/I/O in BPF as recorded, {net:.0f} net of bpf_stats "
            f"({100 * net / cpu_none:.1f} % of none's CPU per I/O)")

parts = []
if toggled:
    loss, more = switched_losses(toggled)
    off = [r for on, r, _ in toggled if not on]
    print(f"IOPS with blktune's program detached: median {st.median(off):.0f} over {len(off)} "
          f"windows ({min(off):.0f} .. {max(off):.0f})")
    print(f"  program switched on and off every 0.5 s: {switched_report(loss, more)}; "
          f"{cost_of('ours')}")
    parts.append(f"ours switched on and off {switched_report(loss, more)}")
for c, ps in pairs.items():
    if not ps:
        continue
    # Against the mean of the windows without tracing either side.
    loss = [100 * (1 - p[0] / ((p[2] + p[4]) / 2)) for p in ps]
    more = [100 * (p[1] / ((p[3] + p[5]) / 2) - 1) for p in ps]
    # The tracer's own CPU (userspace and its system calls) as a share of
    # the machine's.
    own = 100 * st.mean(p[6] for p in ps) / 1e9 / ncpus
    mlo, mhi = ci(loss)
    alo, ahi = ci(loss, st.mean)
    clo, chi = ci(more, st.mean)
    cost = cost_of(c)
    print(f"  {c:8s} loss per window: median {st.median(loss):.1f} % (95% {mlo:.1f} .. {mhi:.1f}), "
          f"mean {st.mean(loss):.1f} % (95% {alo:.1f} .. {ahi:.1f}), windows {min(loss):.1f} .. "
          f"{max(loss):.1f}; busy CPU per I/O median {st.median(more):+.1f} %, mean "
          f"{st.mean(more):+.1f} % (95% {clo:+.1f} .. {chi:+.1f}); its own process "
          f"{own:.2f} % of the machine's CPU; {cost}")
    parts.append(f"{c} {st.median(loss):.1f} % fewer IOPS (median, 95% {mlo:.1f} .. {mhi:.1f}; "
                 f"mean {st.mean(loss):.1f}, 95% {alo:.1f} .. {ahi:.1f}), "
                 f"{st.mean(more):+.1f} % CPU per I/O (mean, 95% {clo:+.1f} .. {chi:+.1f}), "
                 f"its process {own:.2f} % of the CPU, {cost}")
if any(pairs.values()):
    print("(ours = `blktune watch --json -i 1s`: the BPF programs plus blktune's userspace sampling "
          "once per second; IOPS and CPU with bpf_stats off, ns/I/O with it on, in separate runs. "
          "Loss: a tracer's window against the mean of the windows without tracing either side, "
          "in one fio run. CPU per I/O: the machine's user+system+irq time over fio's I/Os, "
          "steal excluded)")
print(f"summary ({rounds} rounds of {secs} s windows; {len(toggled)} windows switched): "
      + "; ".join(parts) + " [target: ours under 3 % and below bpftrace]")
PY
