#!/usr/bin/env bash
# Re-create the demo recording: a loop device this script creates itself,
# fio's mixed load on it (16 random 4k readers + 4 sequential 1M writers, direct I/O),
# recorded at 500 ms for 90 s while 'blktune set' switches the scheduler
# mq-deadline -> bfq at ~30 s and back to mq-deadline at ~60 s from another
# process: the live demo's switch (src/cli/demo.rs demo_load), then its undo.
# Needs root (losetup, scheduler writes). Removes the loop device and its file.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/blktune}
OUT=${1:-assets/demo-bfq-switch.ndjson.gz}
work=$(mktemp -d /var/tmp/blktune-demo.XXXXXX)  # not tmpfs: O_DIRECT needs a real fs
img=$work/blktune-scratch-demo.img
truncate -s 256M "$img"
dev=$(losetup --find --show --direct-io=on "$img")
name=${dev#/dev/}
export BLKTUNE_JOURNAL_DIR=$work/journal
rec_pid="" fio_pid=""
cleanup() {
  [ -n "$fio_pid" ] && kill "$fio_pid" 2>/dev/null || true
  [ -n "$rec_pid" ] && kill "$rec_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  losetup -d "$dev" || true
  rm -rf "$work"
}
trap cleanup EXIT
echo "scratch device: $name"
# Fill the file so that reads hit real blocks, not holes.
fio --name=fill --filename="$dev" --rw=write --bs=1M --direct=1 --size=256M >/dev/null
# A loop device keeps the queue settings of its previous user: go through
# 'none' so that mq-deadline starts with the kernel's defaults.
"$BIN" set "$name" --scheduler none --read-ahead-kb 128
"$BIN" set "$name" --scheduler mq-deadline
# The demo's load (src/cli/demo.rs demo_load): 16 random 4k readers and 4
# unthrottled sequential 1M writers, one synchronous I/O each. A throttled
# writer leaves the queue empty and no switch shows anything.
fio --filename="$dev" --direct=1 --ioengine=psync --time_based --runtime=105 \
    --name=randread --rw=randread --bs=4k --numjobs=16 \
    --name=seqwrite --rw=write --bs=1M --numjobs=4 --offset_increment=32M >/dev/null &
fio_pid=$!
sleep 2  # let fio ramp up: the recording is under load from its first interval
"$BIN" record "$OUT" --force --interval 500ms --duration 90s "$name" &
rec_pid=$!
sleep 30
"$BIN" set "$name" --scheduler bfq
sleep 30
"$BIN" set "$name" --scheduler mq-deadline
wait "$rec_pid"
rec_pid=""
"$BIN" revert "$name"
