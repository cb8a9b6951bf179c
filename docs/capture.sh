#!/usr/bin/env bash
# The docs' live captures, taken again on this machine: the README's 80x24
# screen and the `watch` outputs of docs/list-watch.md. Needs root, tmux and
# fio. Everything runs on a loop device of the script's own (a 64 MiB file in
# /var/tmp, direct I/O, put on `none` with nr_requests 128 first) under fio's
# mixed load (random 4 KiB reads, sequential 1 MiB writes); the device, its
# file, fio and the tmux session are removed on every way out. No other
# device is changed (the tuner is pinned to ours with --device).
#
#   sudo docs/capture.sh [OUT_DIR]          (default: target/captures)
#
# Writes OUT_DIR/screen-80x24.txt (the tuner 2 s after `s` Down Down Enter,
# about 50 s into the session: none -> kyber), OUT_DIR/quit.txt (what `q`
# leaves on the terminal), OUT_DIR/revert.txt (`blktune revert` of the
# device), OUT_DIR/watch.txt and OUT_DIR/watch-latency.txt.
# The figures are this machine's at that moment: paste them into the docs
# with the machine and this command in the caption.
set -euo pipefail
cd "$(dirname "$0")/.."
BLKTUNE=${BLKTUNE:-$PWD/target/release/blktune}
out=${1:-target/captures}
[ "$(id -u)" -eq 0 ] || { echo "capture: needs root (a loop device, fio with direct I/O)" >&2; exit 1; }
for tool in tmux fio losetup; do
  command -v "$tool" >/dev/null || { echo "capture: needs $tool" >&2; exit 1; }
done
[ -x "$BLKTUNE" ] || { echo "capture: no binary at $BLKTUNE (cargo build --release)" >&2; exit 1; }
mkdir -p "$out"

work=$(mktemp -d /var/tmp/blktune-capture.XXXXXX)
session="blktune-capture-$$"
loop=""
fio_pid=""
cleanup() {
  tmux kill-session -t "$session" 2>/dev/null || true
  if [ -n "$fio_pid" ]; then kill "$fio_pid" 2>/dev/null || true; wait "$fio_pid" 2>/dev/null || true; fi
  if [ -n "$loop" ]; then losetup -d "$loop" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM HUP

truncate -s 64M "$work/disk"
loop=$(losetup --find --show --direct-io=on "$work/disk")
name=${loop#/dev/}
echo none >"/sys/block/$name/queue/scheduler"
echo 128 >"/sys/block/$name/queue/nr_requests"
echo "capture: $name, fio's mixed load"
fio --name=r --filename="$loop" --direct=1 --rw=randread --bs=4k --iodepth=8 --ioengine=libaio \
    --time_based --runtime=600 \
    --name=w --filename="$loop" --direct=1 --rw=write --bs=1M --iodepth=2 --ioengine=libaio \
    --time_based --runtime=600 >"$work/fio.log" 2>&1 &
fio_pid=$!
sleep 3

"$BLKTUNE" watch -i 1s -c 2 "$name" >"$out/watch.txt"
"$BLKTUNE" watch --latency -i 1s -c 1 "$name" >"$out/watch-latency.txt"

# A shell in tmux, so that what the tuner prints after it quits stays on screen.
tmux new-session -d -s "$session" -x 80 -y 24 "bash --norc --noprofile"
tmux send-keys -t "$session" "PS1='# '; clear; $BLKTUNE --device $name -i 250ms" Enter
screen() { tmux capture-pane -p -t "$session"; }
wait_for() { # wait_for TEXT: until the screen shows it (60 s at most)
  for _ in $(seq 1 600); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done
  echo "capture: '$1' never showed" >&2; screen >&2; return 1
}
wait_for "every 250ms"
sleep 48
tmux send-keys -t "$session" s Down Down Enter
wait_for "none→kyber"
sleep 2
screen >"$out/screen-80x24.txt"
tmux send-keys -t "$session" q
wait_for "to revert"
screen | sed -e '/^$/d' >"$out/quit.txt"
"$BLKTUNE" revert "$name" >"$out/revert.txt" 2>&1
echo "capture: wrote $out/screen-80x24.txt, quit.txt, revert.txt, watch.txt, watch-latency.txt"
