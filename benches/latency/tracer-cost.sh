#!/usr/bin/env bash
# What the kernel latency tracer costs fio, by the comparison engine: fio
# 4 KiB randread, O_DIRECT, io_uring, queue depth 32, 2 jobs, on a loop
# device of this script's own over a file in /dev/shm (scheduler none: the
# highest IOPS this machine drives, the worst case for a cost per I/O).
# Interleaved rounds in a random order per block, one fio run per block:
#   off       blktune watch --json --no-bpf DEV   (the tool without the tracer)
#   on        blktune watch --json DEV            (the tracer, as watch runs it)
#   who       blktune watch --json --who DEV      (the tracer with attribution)
#   bpftrace  benches/latency/bpftrace-hist.bt    (the same histograms: the reference)
# crates/blktune-core/examples/tracer_cost.rs runs the rounds and feeds
# blktune_core::compare; this script owns the device, the header and the
# cleanup. No assertions: figures for benches/RESULTS.md. Root only.
#
#   cargo build --release && cargo build --release -p blktune-core --example tracer_cost
#   sudo benches/latency/tracer-cost.sh [BLOCKS] [DWELL_S] [SETTLE_S]   (default 12 4 1)
#
# BLKTUNE names the binary (default target/release/blktune);
# TOGGLE_SECONDS=N (default 0: none) adds, after the rounds, the program's and
# attribution's cost per I/O alone: crates/blktune-core/examples/latency_toggle.rs
# switches each on and off every 0.5 s for N s under one fio run (no process
# started or stopped; windows of 0.4 s, each against its neighbours:
# benches/latency/stats.py). Build it with --example latency_toggle.
# TRACER_COST_SEED repeats a run's orders; TRACER_COST_CONFIGS=off,on runs only those
# (more pairs of them in the same time; off is always one).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$here/../..
bin=${BLKTUNE:-$top/target/release/blktune}
runner=${TRACER_COST:-$top/target/release/examples/tracer_cost}
toggle=${TOGGLE:-$top/target/release/examples/latency_toggle}
toggle_secs=${TOGGLE_SECONDS:-0}
blocks=${1:-12}
dwell=${2:-4}
settle=${3:-1}
[ "$(id -u)" -eq 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
[ -x "$runner" ] || { echo "build first: cargo build --release -p blktune-core --example tracer_cost" >&2; exit 1; }
[ "$toggle_secs" = 0 ] || [ -x "$toggle" ] || { echo "build first: cargo build --release -p blktune-core --example latency_toggle" >&2; exit 1; }
command -v fio >/dev/null || { echo "needs fio" >&2; exit 1; }
command -v bpftrace >/dev/null || { echo "needs bpftrace" >&2; exit 1; }
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

img=$(mktemp /dev/shm/blktune-tracer-cost.XXXXXX)
dev=""
load=""
cleanup() {
  if [ -n "$load" ]; then kill "$load" 2>/dev/null || true; wait "$load" 2>/dev/null || true; fi
  [ -z "$dev" ] || losetup -d "$dev" 2>/dev/null || true
  rm -f "$img"
}
trap cleanup EXIT
entries_before=$(ls /sys/block | wc -l)
truncate -s 1G "$img"
dev=$(losetup -f --show "$img")
name=${dev#/dev/}
echo none > "/sys/block/$name/queue/scheduler"
dd if=/dev/zero of="$dev" bs=1M count=1024 oflag=direct status=none  # no holes

echo "date:     $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine:  $(uname -n), Linux $(uname -r), $(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "blktune:  $bin ($(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "entries:  $entries_before in /sys/block before this script's loop device ($(losetup -a | wc -l) loop devices attached with it)"
echo "device:   $name over $img (1 GiB, scheduler none)"
echo "fio:      fio --direct=1 --rw=randread --bs=4k --ioengine=io_uring --iodepth=32 --numjobs=2 --filename=$dev"
echo "command:  ${TOGGLE_SECONDS:+TOGGLE_SECONDS=$toggle_secs }${TRACER_COST_CONFIGS:+TRACER_COST_CONFIGS=$TRACER_COST_CONFIGS }$0 $blocks $dwell $settle"
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg) at the start"
echo
[ "$blocks" = 0 ] || "$runner" "$name" "$bin" "$here/bpftrace-hist.bt" "$blocks" "$dwell" "$settle"
if [ "$toggle_secs" != 0 ]; then
  for what in program who; do
    echo
    echo "the $what switched on and off every 0.5 s for $toggle_secs s under one fio run (load $(cut -d' ' -f1-3 /proc/loadavg)):"
    fio --name=toggle --filename="$dev" --direct=1 --rw=randread --bs=4k \
      --ioengine=io_uring --iodepth=32 --numjobs=2 --group_reporting \
      --time_based --runtime=1000000 --output=/dev/null & load=$!
    sleep 3
    out=$(mktemp)
    if [ "$what" = who ]; then "$toggle" "$name" "$toggle_secs" 400 who; else "$toggle" "$name" "$toggle_secs"; fi \
      | sed 's/^/window /' > "$out"
    kill "$load"; wait "$load" 2>/dev/null || true; load=""
    python3 "$here/pool-switched.py" "$out" | tail -1 | sed 's/^pooled, 1 runs: /  /'
    rm -f "$out"
  done
fi
echo
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg) at the end"
