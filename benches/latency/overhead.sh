#!/usr/bin/env bash
# Overhead per I/O of blktune's BPF latency program against bpftrace doing the
# same histograms (bpftrace-hist.bt), at the highest IOPS this machine drives:
# fio 4 KiB randread, direct I/O, on a loop device over a file in /dev/shm,
# scheduler none. Rounds alternate: none, ours (blktune watch --json, which
# loads the program and reads its map every second), bpftrace. Prints the
# IOPS of each, the ratios, the extra ns per I/O, and the programs' own
# run time per call (kernel.bpf_stats_enabled, on only for the run).
# No assertions: figures for the README and reviews. Root only.
#
#   benches/latency/overhead.sh [ROUNDS] [SECONDS]      (default 3 rounds of 8 s)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-3}
secs=${2:-8}
bin=${BLKTUNE:-$here/../../target/release/blktune}
[ "$(id -u)" -eq 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

img=$(mktemp /dev/shm/blktune-bench-latency.XXXXXX)
stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled)
dev=""
bg=""
cleanup() {
  [ -n "$bg" ] && kill "$bg" 2>/dev/null && wait "$bg" 2>/dev/null || true
  [ -n "$dev" ] && losetup -d "$dev" || true
  rm -f "$img"
  echo "$stats_was" > /proc/sys/kernel/bpf_stats_enabled
}
trap cleanup EXIT
truncate -s 1G "$img"
dev=$(losetup -f --show "$img")
name=${dev#/dev/}
echo none > "/sys/block/$name/queue/scheduler"
dd if=/dev/zero of="$dev" bs=1M count=1024 oflag=direct status=none  # no holes
echo 1 > /proc/sys/kernel/bpf_stats_enabled

iops() {
  fio --name=bench --filename="$dev" --direct=1 --rw=randread --bs=4k \
    --ioengine=io_uring --iodepth=32 --numjobs="$(nproc)" --group_reporting \
    --time_based --runtime="$secs" --output-format=json |
    python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}

# Run time of the BPF programs a process holds, per I/O: their total run time
# over the calls of the busiest one (one call per I/O, on every device).
prog_ns() {
  local pid=$1 t=0 n=0 rt rc
  for f in /proc/"$pid"/fdinfo/*; do
    grep -q '^prog_type' "$f" 2>/dev/null || continue
    rt=$(awk '/^run_time_ns/{print $2}' "$f"); rc=$(awk '/^run_cnt/{print $2}' "$f")
    t=$((t + rt)); [ "$rc" -gt "$n" ] && n=$rc
  done
  [ "$n" -gt 0 ] && echo "$((t / n)) ns/I/O in BPF over $n I/Os" || echo "n/a"
}

declare -a none ours bt
for r in $(seq "$rounds"); do
  none+=("$(iops)")

  "$bin" watch --json -i 1s "$name" > /dev/null & bg=$!
  sleep 1
  ours+=("$(iops)")
  ours_ns=$(prog_ns "$bg")
  kill "$bg"; wait "$bg" 2>/dev/null || true; bg=""

  out=$(mktemp)
  BPFTRACE_MAP_KEYS_MAX=200000 bpftrace "$here/bpftrace-hist.bt" > "$out" 2>/dev/null & bg=$!
  until grep -q Attaching "$out"; do sleep 0.2; done
  sleep 1
  bt+=("$(iops)")
  bt_ns=$(prog_ns "$bg")
  kill -INT "$bg"; wait "$bg" 2>/dev/null || true; bg=""; rm -f "$out"
  echo "round $r: none ${none[-1]}  ours ${ours[-1]} ($ours_ns)  bpftrace ${bt[-1]} ($bt_ns)"
done

python3 - "${none[*]}" "${ours[*]}" "${bt[*]}" <<'PY'
import statistics as st, sys
none, ours, bt = (list(map(int, a.split())) for a in sys.argv[1:4])
n, o, b = st.median(none), st.median(ours), st.median(bt)
print(f"median IOPS: none {n:.0f}, ours {o:.0f} ({o/n:.3f} of none, {100*(1-o/n):.1f} % fewer), "
      f"bpftrace {b:.0f} ({b/n:.3f} of none, {100*(1-b/n):.1f} % fewer)")
print(f"extra wall time per I/O: ours {1e9/o-1e9/n:.0f} ns, bpftrace {1e9/b-1e9/n:.0f} ns")
PY
