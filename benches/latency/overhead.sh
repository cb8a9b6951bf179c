#!/usr/bin/env bash
# Overhead per I/O of blktune's BPF latency program against bpftrace doing the
# same histograms (bpftrace-hist.bt), at the highest IOPS this machine drives:
# fio 4 KiB randread, direct I/O, io_uring, on a loop device over a file in
# /dev/shm, scheduler none. No assertions: figures for the README and reviews.
# Root only.
#
#   benches/latency/overhead.sh [ROUNDS] [SECONDS]      (default 5 rounds of 8 s)
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
#     summary gives medians and the spread of the per-round losses. Each run
#     also gives the machine's busy CPU time (user+system+irq, not steal) per
#     I/O: with fio CPU-bound, the share of IOPS a tracer costs, and steadier
#     than IOPS on a VM whose host takes a varying part of the CPUs.
#  2. Run time in BPF per I/O, with bpf_stats ON, in separate short fio runs
#     (3 s, ROUNDS times per tracer): the programs' total run time over the
#     calls of the busiest one (one call per I/O). It includes the timing's
#     own cost (about 30 ns per program call on the VM this was written on).
#
# BLKTUNE (default target/release/blktune) and BLKTUNE_BEFORE name the binaries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-5}
secs=${2:-8}
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
  esac
}

stop() {
  case $1 in
    bpftrace)
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
declare -A ns
for c in "${contenders[@]}"; do
  [ "$c" = none ] && continue
  start "$c"
  echo 1 > /proc/sys/kernel/bpf_stats_enabled
  line=""
  for r in $(seq "$rounds"); do
    # The counters are cumulative: the difference over one fio run, the
    # programs' total run time over the calls of the busiest one (one call
    # per I/O).
    t0=$(prog_stats)
    iops "$cost_secs" > /dev/null
    t1=$(prog_stats)
    ns[$c,$r]=$(python3 - "$t0" "$t1" <<'PY'
import sys
a = [tuple(map(int, l.split())) for l in sys.argv[1].splitlines() if l.strip()]
b = [tuple(map(int, l.split())) for l in sys.argv[2].splitlines() if l.strip()]
t = sum(y[0] - x[0] for x, y in zip(a, b))
n = max((y[1] - x[1] for x, y in zip(a, b)), default=0)
print(round(t / n) if n else "nan")
PY
)
    line+=" ${ns[$c,$r]}"
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
  for r in $(seq "$rounds"); do v+=" ${ns[$c,$r]:-nan}"; done
  v+=" |"
  for r in $(seq "$rounds"); do v+=" ${cpu[$c,$r]}"; done
  args+=("$v")
done
python3 - "$rounds" "$secs" "${args[@]}" <<'PY'
import math, statistics as st, sys
rounds, secs = int(sys.argv[1]), int(sys.argv[2])
iops, ns, cpu = {}, {}, {}
for a in sys.argv[3:]:
    head, tail, cpus = a.split("|")
    name, *vals = head.split()
    iops[name] = list(map(int, vals))
    ns[name] = [float(x) for x in tail.split() if x != "nan"]
    cpu[name] = list(map(int, cpus.split()))
none = iops["none"]
nm = st.median(none)
print(f"median IOPS: none {nm:.0f}; busy CPU per I/O: none {st.median(cpu['none']):.0f} ns")
parts = []
for c in iops:
    if c == "none":
        continue
    loss = [100 * (1 - o / n) for o, n in zip(iops[c], none)]
    more = [100 * (o / n - 1) for o, n in zip(cpu[c], cpu["none"])]
    m = st.median(iops[c])
    cost = f"{st.median(ns[c]):.0f} ns/I/O in BPF" if ns[c] else "BPF ns n/a"
    print(f"  {c:8s} {m:.0f} ({m/nm:.3f} of none, {100*(1-m/nm):.1f} % fewer; per round "
          f"median {st.median(loss):.1f} %, {min(loss):.1f} .. {max(loss):.1f} %); "
          f"busy CPU per I/O {st.median(more):+.1f} % (per round {min(more):+.1f} .. {max(more):+.1f}); {cost}")
    parts.append(f"{c} {st.median(loss):.1f} % fewer IOPS ({min(loss):.1f} .. {max(loss):.1f}), "
                 f"{st.median(more):+.1f} % CPU per I/O ({min(more):+.1f} .. {max(more):+.1f}), {cost}")
print("(ours = `blktune watch --json -i 1s`: the BPF programs plus blktune's userspace sampling "
      "once per second; IOPS and CPU with bpf_stats off, ns/I/O with it on, in separate runs. "
      "CPU per I/O: the machine's user+system+irq time over fio's I/Os, steal excluded: "
      "what a CPU-bound fio loses in IOPS, less moved by the VM's neighbours than IOPS)")
print(f"summary ({rounds} x {secs} s, median of per-round loss vs none, range): " + "; ".join(parts)
      + " [target: ours under 3 % and below bpftrace]")
PY
