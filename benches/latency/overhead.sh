#!/usr/bin/env bash
# Overhead per I/O of blktune's BPF latency program against bpftrace doing the
# same histograms (bpftrace-hist.bt), at the highest IOPS this machine drives:
# fio 4 KiB randread, direct I/O, io_uring, on a loop device over a file in
# /dev/shm, scheduler none. No assertions: figures for the README and reviews.
# Root only.
#
#   benches/latency/overhead.sh [ROUNDS] [SECONDS]      (default 12 rounds of 4 s)
#
# Two phases, so that measuring does not inflate what is measured:
#  1. IOPS, with kernel.bpf_stats_enabled OFF (with it on, every BPF program
#     call is timed with two extra clock reads). Each round runs fio once per
#     contender, interleaved, starting from a different one each round:
#       none      no tracing;
#       ours      `blktune watch --json -i 1s DEV`: the real tool, so the BPF
#                 programs plus blktune's own sampling (diskstats, sysfs and
#                 the map read once per second) in userspace;
#       before    the same with the binary in $BLKTUNE_BEFORE, if set (to
#                 compare two builds in one run);
#       bpftrace  bpftrace-hist.bt.
#     Per round, each contender's loss is against that round's `none`; the
#     summary gives medians, a 95% bootstrap interval of the median and the
#     spread of the per-round losses. Each run
#     also gives the machine's busy CPU time (user+system+irq, not steal) per
#     I/O: with fio CPU-bound, the share of IOPS a tracer costs, and steadier
#     than IOPS on a VM whose host takes a varying part of the CPUs.
#  2. Run time in BPF per I/O, with bpf_stats ON, in separate short fio runs
#     (3 s, ROUNDS times per tracer): the programs' total run time over the
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
#
# BLKTUNE (default target/release/blktune) and BLKTUNE_BEFORE name the binaries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-12}
secs=${2:-4}
cost_secs=3
bin=${BLKTUNE:-$here/../../target/release/blktune}
before=${BLKTUNE_BEFORE:-}
[ "$(id -u)" -eq 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
[ -z "$before" ] || [ -x "$before" ] || { echo "BLKTUNE_BEFORE=$before is not executable" >&2; exit 1; }
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

img=$(mktemp /dev/shm/blktune-bench-latency.XXXXXX)
fio_out=$(mktemp)
stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled)
dev=""
bg=""
out=""
cleanup() {
  if [ -n "$bg" ]; then kill "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true; fi
  [ -n "$dev" ] && losetup -d "$dev" || true
  rm -f "$img" "$fio_out" ${out:+"$out"}
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
    kill -0 "$bg" 2>/dev/null || { echo "the tracer exited" >&2; exit 1; }
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

# Start a tracer in the background ($bg) and wait until it is attached.
start() {
  case $1 in
    ours | before)
      local b=$bin
      [ "$1" = before ] && b=$before
      "$b" watch --json -i 1s "$name" > /dev/null & bg=$!
      attached 2
      ;;
    bpftrace)
      out=$(mktemp)
      BPFTRACE_MAP_KEYS_MAX=200000 bpftrace "$here/bpftrace-hist.bt" > "$out" 2>/dev/null & bg=$!
      until grep -q Attaching "$out"; do sleep 0.2; done
      # It says so before it has loaded them all.
      attached 3
      ;;
    empty)
      out=$(mktemp)
      bpftrace -e 'tracepoint:block:block_rq_issue {} tracepoint:block:block_rq_complete {}' \
        > "$out" 2>/dev/null & bg=$!
      until grep -q Attaching "$out"; do sleep 0.2; done
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
nc=${#contenders[@]}
declare -A res cpu
echo "IOPS, bpf_stats off: $rounds rounds of $secs s, fio 4k randread io_uring iodepth 32 x $(nproc) jobs on $name (/dev/shm)"
echo 0 > /proc/sys/kernel/bpf_stats_enabled
for r in $(seq "$rounds"); do
  line="round $r:"
  for i in $(seq 0 $((nc - 1))); do
    c=${contenders[$(((i + r - 1) % nc))]}
    [ "$c" = none ] || start "$c"
    read -r res[$c,$r] cpu[$c,$r] < <(iops "$secs")
    [ "$c" = none ] || stop "$c"
  done
  for c in "${contenders[@]}"; do
    line+=" $c ${res[$c,$r]} (${cpu[$c,$r]} ns CPU/I/O"
    [ "$c" = none ] || line+=", $(python3 -c "print(f'{100*(1-${res[$c,$r]}/${res[none,$r]}):.1f} % fewer IOPS, {100*(${cpu[$c,$r]}/${cpu[none,$r]}-1):+.1f} % CPU/I/O')")"
    line+=")"
  done
  echo "$line"
done

echo "BPF run time per I/O, bpf_stats on: $rounds runs of $cost_secs s per tracer"
# ns[$c,$r]: "RUN_TIME_PER_IO CALLS_PER_IO" of tracer c in run r.
declare -A ns
for c in "${contenders[@]}" empty; do
  [ "$c" = none ] && continue
  start "$c"
  echo 1 > /proc/sys/kernel/bpf_stats_enabled
  line=""
  for r in $(seq "$rounds"); do
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

args=()
for c in "${contenders[@]}"; do
  v="$c"
  for r in $(seq "$rounds"); do v+=" ${res[$c,$r]}"; done
  v+=" |"
  for r in $(seq "$rounds"); do v+=" $(tr ' ' : <<< "${ns[$c,$r]:-nan nan}")"; done
  v+=" |"
  for r in $(seq "$rounds"); do v+=" ${cpu[$c,$r]}"; done
  args+=("$v")
done
empty=""
for r in $(seq "$rounds"); do empty+=" $(tr ' ' : <<< "${ns[empty,$r]:-nan nan}")"; done
python3 - "$rounds" "$secs" "$empty" "${args[@]}" <<'PY'
import random, statistics as st, sys
rounds, secs = int(sys.argv[1]), int(sys.argv[2])

def runs(text):
    """(run time per I/O, program calls per I/O) of each bpf_stats run."""
    out = []
    for tok in text.split():
        t, calls = tok.split(":")
        if t != "nan":
            out.append((float(t), float(calls)))
    return out

def ci(xs, f=st.median, n=2000):
    """A 95% bootstrap interval of f(xs), seeded so a rerun prints the same."""
    rng = random.Random(1)
    ys = sorted(f(rng.choices(xs, k=len(xs))) for _ in range(n))
    return ys[int(0.025 * n)], ys[int(0.975 * n) - 1]

# The clock reading bpf_stats adds inside each program call's recorded time:
# an empty program's time per call.
empty = runs(sys.argv[3])
per_call = st.median(t / calls for t, calls in empty) if empty else float("nan")
iops, ns, cpu = {}, {}, {}
for a in sys.argv[4:]:
    head, tail, cpus = a.split("|")
    name, *vals = head.split()
    iops[name] = list(map(int, vals))
    ns[name] = runs(tail)
    cpu[name] = list(map(int, cpus.split()))
none = iops["none"]
nm = st.median(none)
cpu_none = st.median(cpu["none"])
print(f"median IOPS: none {nm:.0f}; busy CPU per I/O: none {cpu_none:.0f} ns")
print(f"bpf_stats' own cost inside each recorded program call (bpftrace, empty probes): "
      f"{per_call:.0f} ns")
parts = []
for c in iops:
    if c == "none":
        continue
    loss = [100 * (1 - o / n) for o, n in zip(iops[c], none)]
    more = [100 * (o / n - 1) for o, n in zip(cpu[c], cpu["none"])]
    lo, hi = ci(loss)
    m = st.median(iops[c])
    if ns[c]:
        raw = st.median(t for t, _ in ns[c])
        net = st.median(t - calls * per_call for t, calls in ns[c])
        cost = (f"{raw:.0f} ns/I/O in BPF as recorded, {net:.0f} net of bpf_stats "
                f"({100 * net / cpu_none:.1f} % of none's CPU per I/O)")
    else:
        cost = "BPF ns n/a"
    print(f"  {c:8s} {m:.0f} ({m/nm:.3f} of none); per round loss median {st.median(loss):.1f} % "
          f"(95% interval of the median {lo:.1f} .. {hi:.1f}; rounds {min(loss):.1f} .. {max(loss):.1f}); "
          f"busy CPU per I/O {st.median(more):+.1f} % (rounds {min(more):+.1f} .. {max(more):+.1f}); {cost}")
    parts.append(f"{c} {st.median(loss):.1f} % fewer IOPS (95% {lo:.1f} .. {hi:.1f}), "
                 f"{st.median(more):+.1f} % CPU per I/O, {cost}")
print("(ours = `blktune watch --json -i 1s`: the BPF programs plus blktune's userspace sampling "
      "once per second; IOPS and CPU with bpf_stats off, ns/I/O with it on, in separate runs. "
      "CPU per I/O: the machine's user+system+irq time over fio's I/Os, steal excluded: "
      "what a CPU-bound fio loses in IOPS, less moved by the VM's neighbours than IOPS)")
print(f"summary ({rounds} x {secs} s, median of per-round loss vs none, 95% interval): "
      + "; ".join(parts) + " [target: ours under 3 % and below bpftrace]")
PY
