#!/usr/bin/env bash
# blktune next to iostat on real loop devices, in one run.
#
#   sudo benches/vs-iostat.sh [N ...]        (default: 200 1000)
#
# For each N: attaches N loop devices of its own (sparse files in /dev/shm),
# runs `blktune watch --json -i 1 -c 6` and `iostat -x -d 1 6` side by side
# over the same devices (every device on the machine, as both do by default),
# and prints the CPU time of each and the ratio; then watch's CPU without
# its kernel latency tracer (--no-bpf, alone: how much of watch is the BPF
# program's load), the TUI's first-frame
# time (in a tmux session of its own, --read-only), its CPU at a 1 s interval
# with the devices idle, and the peak RSS of each. Every device it attached is
# detached at the end, also on Ctrl-C. It only reads other devices.
#
# BLKTUNE=path picks the binary (default: target/release/blktune);
# TUI_SECONDS=n how long the TUI's idle CPU is measured (default 30);
# ROUNDS=n how many times watch and iostat run side by side (default 3);
# BASELINE=path another build whose TUI runs idle beside it over the same
# seconds (same size, also --read-only): its CPU is printed next to it, so a
# change's effect is seen in one run on a noisy machine.
set -euo pipefail

BLKTUNE=${BLKTUNE:-$(dirname "$0")/../target/release/blktune}
TUI_SECONDS=${TUI_SECONDS:-30}
ROUNDS=${ROUNDS:-3}
BASELINE=${BASELINE:-}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(200 1000)

[ "$(id -u)" = 0 ] || { echo "needs root (losetup)" >&2; exit 1; }
for t in iostat losetup tmux python3 /usr/bin/time; do
    command -v "$t" >/dev/null || { echo "needs $t" >&2; exit 1; }
done
[ -x "$BLKTUNE" ] || { echo "no binary at $BLKTUNE (cargo build --release)" >&2; exit 1; }

DIR=$(mktemp -d /dev/shm/blktune-vs-iostat.XXXXXX)
TMUX_NAME="blktune-vs-iostat-$$"
DEVS=()

cleanup() {
    tmux kill-session -t "$TMUX_NAME" 2>/dev/null || true
    tmux kill-session -t "$TMUX_NAME-base" 2>/dev/null || true
    # Only devices whose backing file is ours (never vda, zram0 or anyone else's).
    for d in "${DEVS[@]}"; do
        b=$(cat "/sys/block/$d/loop/backing_file" 2>/dev/null || true)
        case "$b" in "$DIR"/*) losetup -d "/dev/$d" 2>/dev/null || true ;; esac
    done
    rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Attach until we own $1 devices.
attach_to() {
    while [ ${#DEVS[@]} -lt "$1" ]; do
        f="$DIR/img.${#DEVS[@]}"
        truncate -s 1M "$f"
        d=$(losetup -f --show "$f")
        DEVS+=("${d#/dev/}")
    done
}

# CPU seconds (user+sys, from getrusage: GNU time prints only hundredths)
# and peak RSS in KiB (from GNU time, whose child execs the command at once;
# a child forked by python would count python's pages). The CPU is the
# difference of getrusage(RUSAGE_CHILDREN) over the run: what python's
# children used before it counts too (a python3 that is a version manager's
# shim script has waited for about 60 ms of its own helpers by then, which
# used to be added to both tools' figures).
cpu_of() {
    local rss="$DIR/rss.$1"; shift
    python3 -c '
import resource, subprocess, sys
def used():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
before = used()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("%.3f" % (used() - before))' /usr/bin/time -f %M -o "$rss" "$@"
    cat "$rss"
}

# Ticks -> seconds of a pid's utime+stime.
pid_cpu() { awk '{ print ($14 + $15) }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "blktune vs iostat on $(uname -r), $(nproc) cores; binary $BLKTUNE"
echo "load average at start: $(load)"
printf '%7s %8s %12s %12s %7s %10s %11s %11s %12s %11s %9s %15s\n' \
    devices all "watch CPU s" "iostat CPU s" ratio "no-BPF s" "watch RSS" "iostat RSS" \
    "TUI 1st ms" "TUI core%" "TUI RSS" "load"
for n in "${SIZES[@]}"; do
    attach_to "$n"
    total=$(ls /sys/block | wc -l)
    # Side by side: both start together and sample the same devices;
    # ROUNDS times (the kernel accounts CPU in ticks of a few ms: one run of
    # 80 ms moves by a tenth). The figures are means, the ratio that of the
    # sums, and each round's ratio is printed below the row.
    wsum=0 isum=0 ratios=""
    for _ in $(seq 1 "$ROUNDS"); do
        cpu_of watch "$BLKTUNE" watch --json -i 1 -c 6 >"$DIR/watch.res" &
        wpid=$!
        cpu_of iostat iostat -x -d 1 6 >"$DIR/iostat.res" &
        ipid=$!
        wait "$wpid" "$ipid"
        { read -r wcpu; read -r wrss; } <"$DIR/watch.res"
        { read -r icpu; read -r irss; } <"$DIR/iostat.res"
        wsum=$(awk -v a="$wsum" -v b="$wcpu" 'BEGIN { print a + b }')
        isum=$(awk -v a="$isum" -v b="$icpu" 'BEGIN { print a + b }')
        ratios="$ratios $(awk -v a="$wcpu" -v b="$icpu" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
    done
    wcpu=$(awk -v a="$wsum" -v n="$ROUNDS" 'BEGIN { printf "%.3f", a / n }')
    icpu=$(awk -v a="$isum" -v n="$ROUNDS" 'BEGIN { printf "%.3f", a / n }')
    ratio=$(awk -v a="$wsum" -v b="$isum" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
    # The same watch without the BPF tracer, alone (not side by side).
    { read -r ncpu; read -r _; } < <(cpu_of nobpf "$BLKTUNE" --no-bpf watch --json -i 1 -c 6)

    # TUI: time from start to a frame with device rows (the status line says
    # "waiting for the first sample" until the first snapshot arrives).
    tmux kill-session -t "$TMUX_NAME" 2>/dev/null || true
    t0=$(date +%s%N)
    tmux new-session -d -s "$TMUX_NAME" -x 160 -y 48 "$BLKTUNE --read-only -i 1s"
    first=-
    for _ in $(seq 1 2000); do
        screen=$(tmux capture-pane -p -t "$TMUX_NAME" 2>/dev/null || true)
        if grep -q 'loop' <<<"$screen" && ! grep -q 'waiting for the first' <<<"$screen"; then
            first=$(( ($(date +%s%N) - t0) / 1000000 ))
            break
        fi
        sleep 0.005
    done
    tpid=$(pgrep -n -f "^$BLKTUNE --read-only -i 1s" || true)
    bpid=
    if [ -n "$BASELINE" ]; then
        tmux new-session -d -s "$TMUX_NAME-base" -x 160 -y 48 "$BASELINE --read-only -i 1s"
        sleep 0.5
        bpid=$(pgrep -n -f "^$BASELINE --read-only -i 1s" || true)
    fi
    core=- trss=- bcore=-
    if [ -n "$tpid" ]; then
        sleep 6 # the rows past the first screen are filled in the first ticks
        c0=$(pid_cpu "$tpid"); s0=$(date +%s%N)
        [ -z "$bpid" ] || b0=$(pid_cpu "$bpid")
        sleep "$TUI_SECONDS"
        c1=$(pid_cpu "$tpid"); s1=$(date +%s%N)
        [ -z "$bpid" ] || b1=$(pid_cpu "$bpid")
        core=$(awk -v c="$((c1 - c0))" -v hz="$HZ" -v ns="$((s1 - s0))" \
            'BEGIN { printf "%.2f", c / hz / (ns / 1e9) * 100 }')
        [ -z "$bpid" ] || bcore=$(awk -v c="$((b1 - b0))" -v hz="$HZ" -v ns="$((s1 - s0))" \
            'BEGIN { printf "%.2f", c / hz / (ns / 1e9) * 100 }')
        trss=$(awk '/VmHWM/ { print $2 }' "/proc/$tpid/status")
    fi
    tmux send-keys -t "$TMUX_NAME" q
    [ -z "$BASELINE" ] || tmux send-keys -t "$TMUX_NAME-base" q
    sleep 0.5
    tmux kill-session -t "$TMUX_NAME" 2>/dev/null || true
    tmux kill-session -t "$TMUX_NAME-base" 2>/dev/null || true

    printf '%7s %8s %12s %12s %7s %10s %9sKi %9sKi %12s %11s %7sKi %15s\n' \
        "$n" "$total" "$wcpu" "$icpu" "$ratio" "$ncpu" "$wrss" "$irss" "$first" "$core" "$trss" "$(load)"
    [ "$ROUNDS" = 1 ] || echo "        watch/iostat ratio of each round:$ratios"
    [ -z "$BASELINE" ] || echo "        TUI core% beside it, over the same seconds: $bcore ($BASELINE)"
done
echo
echo "devices: loop devices attached by this script; all: entries in /sys/block (both tools"
echo "read every one); CPU: user+sys of the whole run (6 samples at 1 s), from getrusage,"
echo "the mean of $ROUNDS runs side by side (ratio: of the sums);"
echo "TUI 1st ms: start to the first frame with device rows (tmux polling, ~5 ms resolution);"
echo "no-BPF s: the same watch with --no-bpf, run alone after the pair (the rest of watch's"
echo "CPU is loading the kernel latency tracer); TUI core%: CPU over ${TUI_SECONDS} s at a 1 s"
echo "interval, idle devices; RSS: peak; load: 1, 5, 15 min load average after the row."
