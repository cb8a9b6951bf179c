#!/usr/bin/env bash
# blktune next to iostat on real loop devices, in one run.
#
#   sudo benches/vs-iostat.sh [N ...]        (default: 200 1000)
#
# For each N: attaches loop devices of its own (sparse files in /dev/shm)
# until it owns N, then measures, ROUNDS times in interleaved rounds:
#   - the CPU each tool takes to its first report: `blktune watch --json -i 1
#     -c 1` and `iostat -x -d 1 1`, side by side (both start together over
#     the same devices: every device of the machine, as both read by default);
#   - the CPU of a longer run, `-c K+1` and `iostat -x -d 1 K+1`, side by side;
#     the difference over K is the steady cost of each further interval;
#   - the same two runs of `watch --no-bpf`, alone: how much of watch is the
#     kernel latency tracer.
# It prints, per figure, the median of the rounds with their range, and the
# watch/iostat ratio of each round's pair (median and range), so a noisy
# machine shows as a wide range instead of a wrong number. Then the TUI's
# first-frame time (tmux, 160x48, --read-only), its CPU at a 1 s interval with
# the devices idle, and peak RSS. It says how many entries /sys/block holds
# and how many have a size: both tools read every entry, and detached loop
# nodes stay there.
#
# Every device it attached is detached at the end, also on Ctrl-C, and the
# loop nodes it caused to be created are removed again (LOOP_CTL_REMOVE), so
# /sys/block is left as it was found. It only reads other devices.
#
# BLKTUNE=path picks the binary (default: target/release/blktune);
# ROUNDS=n interleaved rounds (default 7); K=n intervals of the long run
# beyond the first (default 10); TUI_SECONDS=n how long the TUI's idle CPU is
# measured (default 30; 0 skips the TUI); BASELINE=path another build whose
# TUI runs idle beside it over the same seconds.
set -euo pipefail

BLKTUNE=${BLKTUNE:-$(dirname "$0")/../target/release/blktune}
ROUNDS=${ROUNDS:-7}
K=${K:-10}
TUI_SECONDS=${TUI_SECONDS:-30}
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
# The loop nodes that existed before: any other node this run leaves
# detached was created for it (losetup -f adds one when none is free).
NODES_BEFORE=" $(cd /sys/block && ls -d loop* 2>/dev/null | tr '\n' ' ') "

cleanup() {
    tmux kill-session -t "$TMUX_NAME" 2>/dev/null || true
    tmux kill-session -t "$TMUX_NAME-base" 2>/dev/null || true
    # Only devices whose backing file is ours (never vda, zram0 or anyone else's).
    for d in "${DEVS[@]}"; do
        b=$(cat "/sys/block/$d/loop/backing_file" 2>/dev/null || true)
        case "$b" in "$DIR"/*) losetup -d "/dev/$d" 2>/dev/null || true ;; esac
    done
    # Remove the nodes this run created, if detached (a node someone else
    # attached meanwhile is busy: the kernel refuses, and it stays).
    local created=()
    for d in "${DEVS[@]}"; do
        case "$NODES_BEFORE" in *" $d "*) ;; *) created+=("${d#loop}") ;; esac
    done
    if [ ${#created[@]} -gt 0 ]; then
        python3 - "${created[@]}" <<'EOF' || true
import fcntl, os, sys
LOOP_CTL_REMOVE = 0x4C81  # include/uapi/linux/loop.h
fd = os.open("/dev/loop-control", os.O_RDWR)
removed = 0
for n in sys.argv[1:]:
    try:
        fcntl.ioctl(fd, LOOP_CTL_REMOVE, int(n))
        removed += 1
    except OSError:
        pass
print(f"removed {removed} of the {len(sys.argv) - 1} loop nodes this run created", file=sys.stderr)
EOF
    fi
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

# CPU seconds (user+sys) and peak RSS in KiB of one command. The CPU is the
# difference of getrusage(RUSAGE_CHILDREN) over the run (what python's own
# helpers used before it is not counted); GNU time, whose child execs the
# command at once, gives the RSS (a child forked by python would count
# python's pages) and adds about the same small exec cost to either tool.
cpu_of() {
    local rss="$DIR/rss.$1"; shift
    python3 -c '
import resource, subprocess, sys
def used():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
before = used()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("%.4f" % (used() - before))' /usr/bin/time -f %M -o "$rss" "$@"
    cat "$rss"
}

# Run watch and iostat side by side with COUNT reports each; append
# "watch_cpu iostat_cpu watch_rss iostat_rss" to $1.
pair() {
    local file=$1 count=$2
    cpu_of watch "$BLKTUNE" watch --json -i 1 -c "$count" >"$DIR/watch.res" &
    local wpid=$!
    cpu_of iostat iostat -x -d 1 "$count" >"$DIR/iostat.res" &
    local ipid=$!
    wait "$wpid" "$ipid"
    local wcpu wrss icpu irss
    { read -r wcpu; read -r wrss; } <"$DIR/watch.res"
    { read -r icpu; read -r irss; } <"$DIR/iostat.res"
    echo "$wcpu $icpu $wrss $irss" >>"$file"
}

# Ticks -> seconds of a pid's utime+stime.
pid_cpu() { awk '{ print ($14 + $15) }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

load() { cut -d' ' -f1-3 /proc/loadavg; }
entries() { ls /sys/block | wc -l; }
attached() { # entries with a size: the devices both tools have counters of
    local n=0 file size
    for file in /sys/block/*/size; do
        size=0
        read -r size <"$file" 2>/dev/null || true
        [ "$size" = 0 ] || n=$((n + 1))
    done
    echo "$n"
}

echo "blktune vs iostat on $(uname -r), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); binary $BLKTUNE"
echo "$ROUNDS interleaved rounds per size; the long run has $K intervals more than the first report"
echo "load average at start: $(load)"
for n in "${SIZES[@]}"; do
    attach_to "$n"
    runs="$DIR/runs.$n"
    : >"$runs.first"; : >"$runs.long"; : >"$runs.nobpf"
    for _ in $(seq 1 "$ROUNDS"); do
        pair "$runs.first" 1
        pair "$runs.long" $((K + 1))
        { read -r a; read -r _; } < <(cpu_of nobpf "$BLKTUNE" --no-bpf watch --json -i 1 -c 1)
        { read -r b; read -r _; } < <(cpu_of nobpf "$BLKTUNE" --no-bpf watch --json -i 1 -c $((K + 1)))
        echo "$a $b" >>"$runs.nobpf"
    done
    total=$(entries)
    with_size=$(attached)

    # TUI: time from start to a frame with device rows (the status line says
    # "waiting for the first sample" until the first snapshot arrives).
    first=- core=- trss=- bcore=-
    if [ "$TUI_SECONDS" != 0 ]; then
        tmux kill-session -t "$TMUX_NAME" 2>/dev/null || true
        t0=$(date +%s%N)
        tmux new-session -d -s "$TMUX_NAME" -x 160 -y 48 "$BLKTUNE --read-only -i 1s"
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
    fi

    echo
    echo "== $n loop devices attached by this script; /sys/block: $total entries, $with_size with a size"
    python3 - "$runs" "$K" <<'EOF'
import statistics, sys
base, k = sys.argv[1], int(sys.argv[2])
def rows(name):
    with open(f"{base}.{name}") as f:
        return [[float(x) for x in line.split()] for line in f if line.strip()]
first, long, nobpf = rows("first"), rows("long"), rows("nobpf")
def fig(values, scale=1000.0):
    """median (min-max), in ms"""
    v = sorted(x * scale for x in values)
    return f"{statistics.median(v):7.2f} ({v[0]:.2f}-{v[-1]:.2f})"
def ratio(pairs):
    r = sorted(a / b for a, b in pairs if b > 0)
    return f"{statistics.median(r):5.2f} ({r[0]:.2f}-{r[-1]:.2f})" if r else "-"
# Per round: the steady cost of one interval, from that round's two runs.
w_first = [r[0] for r in first]; i_first = [r[1] for r in first]
w_step = [(l[0] - f[0]) / k for f, l in zip(first, long)]
i_step = [(l[1] - f[1]) / k for f, l in zip(first, long)]
n_first = [r[0] for r in nobpf]; n_step = [(r[1] - r[0]) / k for r in nobpf]
print(f"{'CPU, ms: median (range)':31} {'watch':>22} {'iostat':>22} {'watch/iostat':>20}")
print(f"{'to the first report':31} {fig(w_first):>22} {fig(i_first):>22} {ratio(zip(w_first, i_first)):>20}")
print(f"{'each interval after it':31} {fig(w_step):>22} {fig(i_step):>22} {ratio(zip(w_step, i_step)):>20}")
print(f"{'watch --no-bpf, first report':31} {fig(n_first):>22}")
print(f"{'watch --no-bpf, each interval':31} {fig(n_step):>22}")
rss_w = statistics.median(r[2] for r in first + long) / 1024
rss_i = statistics.median(r[3] for r in first + long) / 1024
print(f"{'peak RSS, MiB (median)':31} {rss_w:22.1f} {rss_i:22.1f}")
EOF
    echo "TUI (160x48, --read-only, 1 s): first frame ${first} ms; idle CPU ${core}% of a core over ${TUI_SECONDS} s; peak RSS ${trss} KiB"
    [ -z "$BASELINE" ] || echo "    the baseline's TUI beside it, over the same seconds: ${bcore}% ($BASELINE)"
    echo "load average after the size: $(load)"
done
echo
echo "CPU is user+sys from getrusage (the kernel's exact runtime). 'to the first report':"
echo "watch -c 1 (start, the tracer's load, the first interval) and iostat ... 1 1 (start and"
echo "its since-boot report). 'each interval after it': the difference between that run and"
echo "one of $K more intervals, divided by $K, per round. The ratio is of each round's pair,"
echo "which ran side by side over the same seconds. Both tools read every entry of /sys/block."
