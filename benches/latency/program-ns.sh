#!/usr/bin/env bash
# What each of blktune's BPF programs takes per call, with and without
# attribution (`watch --json` against `watch --json --who`, twice each, 5 s
# each), under fio 4 KiB randread io_uring qd32 x2 on a loop device of this
# script's own over /dev/shm; and the watch process's own CPU. bpf_stats is
# switched on for it (restored at exit), which adds its own clock reads to
# every recorded call (52 to 55 ns on the VM of 2026-11-25: benches/latency/overhead.sh's
# `empty`). Root only. No assertions: figures for benches/RESULTS.md.
#
#   benches/latency/program-ns.sh          (BLKTUNE: default target/release/blktune)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${BLKTUNE:-$here/../../target/release/blktune}
[ "$(id -u)" -eq 0 ] || { echo "needs root" >&2; exit 1; }
img=$(mktemp /dev/shm/blktune-tc-stats.XXXXXX); dev=""; fio_pid=""; w=""
was=$(cat /proc/sys/kernel/bpf_stats_enabled)
cleanup() { [ -z "$w" ] || kill "$w" 2>/dev/null || true; [ -z "$fio_pid" ] || kill "$fio_pid" 2>/dev/null || true; wait 2>/dev/null || true; [ -z "$dev" ] || losetup -d "$dev"; rm -f "$img"; echo "$was" > /proc/sys/kernel/bpf_stats_enabled; }
trap cleanup EXIT
truncate -s 512M "$img"; dev=$(losetup -f --show "$img"); name=${dev#/dev/}
echo none > /sys/block/$name/queue/scheduler
dd if=/dev/zero of=$dev bs=1M count=512 oflag=direct status=none
fio --name=s --filename=$dev --direct=1 --rw=randread --bs=4k --ioengine=io_uring --iodepth=32 --numjobs=2 --time_based --runtime=1000 --output=/dev/null & fio_pid=$!
sleep 2
echo 1 > /proc/sys/kernel/bpf_stats_enabled
for mode in on who on who; do
  if [ $mode = who ]; then $bin watch --json --who $name > /dev/null & w=$!; else $bin watch --json $name > /dev/null & w=$!; fi
  sleep 3
  snap() { for f in /proc/$w/fdinfo/*; do grep -q '^prog_type' $f 2>/dev/null || continue; awk '/^prog_tag/{g=$2} /^run_time_ns/{t=$2} /^run_cnt/{c=$2} END{print g, t, c}' $f; done | sort; }
  s0=$(cat /proc/$w/task/*/schedstat | awk "{t+=\$1} END{print t}"); a=$(snap); sleep 5; b=$(snap); s1=$(cat /proc/$w/task/*/schedstat | awk "{t+=\$1} END{print t}")
  echo "$mode: its process $(( (s1 - s0) / 5000000 )) ms CPU per s (rounded down);"; echo "$mode (load $(cut -d' ' -f1 /proc/loadavg)):"
  join <(echo "$a") <(echo "$b") | awk '{dc=$5-$3; dt=$4-$2; if (dc>0) printf "  prog %s: %d calls, %.0f ns per call (bpf_stats on: includes ~50 ns of its own)\n", $1, dc, dt/dc}'
  kill $w; wait $w 2>/dev/null || true; w=""
done
