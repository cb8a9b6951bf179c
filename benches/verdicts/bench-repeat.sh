#!/usr/bin/env bash
# Does the shoot-out contradict itself? `blktune bench --scratch 256M` (every
# scheduler, the built-in mixed load, the default budget) three times on a
# quiet machine and three times while another loop device of this script's
# own is under fio and two CPU hogs spin; prints all six results and checks
# that no two of them name different *decided* winners ("no winner" is
# never a contradiction). Issue 32's acceptance run. Root only.
#
#   benches/verdicts/bench-repeat.sh [EXTRA BENCH ARGS...]
#
# BLKTUNE names the binary (default target/release/blktune, else debug);
# OUT the directory the runs' JSON and stderr go to (default a temp dir,
# kept). Exit 0 when no two decided winners differ, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$here/../..
bin=${BLKTUNE:-$top/target/release/blktune}
[ -x "$bin" ] || bin=$top/target/debug/blktune
[ "$(id -u)" -eq 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
command -v fio >/dev/null || { echo "needs fio" >&2; exit 1; }
command -v jq >/dev/null || { echo "needs jq" >&2; exit 1; }
out=${OUT:-$(mktemp -d /tmp/bench-repeat.XXXXXX)}
mkdir -p "$out"
journal=$(mktemp -d)
scratch_dir=$(mktemp -d /var/tmp/bench-repeat-scratch.XXXXXX)

# The busy phase's own things, removed on any exit.
busy_img="" busy_dev="" fio_pid="" hogs=()
cleanup() {
    for p in "${hogs[@]}" $fio_pid; do
        kill "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    [ -z "$busy_dev" ] || losetup -d "$busy_dev" 2>/dev/null || true
    [ -z "$busy_img" ] || rm -f "$busy_img"
    rm -rf "$journal" "$scratch_dir"
}
trap cleanup EXIT

echo "machine:  $(uname -n), Linux $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "blktune:  $bin ($(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "entries:  $(ls /sys/block | wc -l) in /sys/block"
echo "command:  blktune bench --scratch 256M --scratch-dir $scratch_dir --json $*"
echo "runs:     $out"
echo

# One bench run: its name, then one line of what it said.
run() {
    local name=$1
    shift
    local load
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    local t0=$SECONDS
    BLKTUNE_JOURNAL_DIR=$journal "$bin" bench --scratch 256M --scratch-dir "$scratch_dir" \
        --json "$@" >"$out/$name.json" 2>"$out/$name.err" || true
    local secs=$((SECONDS - t0))
    if ! jq -e . "$out/$name.json" >/dev/null 2>&1; then
        printf '%-7s load %s  %4ss  FAILED: %s\n' "$name" "$load" "$secs" "$(tail -1 "$out/$name.err")"
        return
    fi
    jq -r --arg name "$name" --arg load "$load" --arg secs "$secs" '
        "\($name|.+"       "|.[0:7]) load \($load)  \($secs)s  \(.rounds) rounds  "
        + (if .verdict.winner then "WINNER \(.verdict.winner)" else "no winner" end)
        + "\n         \(.verdict.headline)"
        ' "$out/$name.json"
    jq -r '[.analysis.controls[]?, .analysis.comparisons[]?.controls[]?]
        | unique_by(.text) | map(select(.status != "ok")) | .[] | "         \(.status): \(.text)"' \
        "$out/$name.json"
}

echo "== quiet: nothing of this script's own runs beside the bench"
for i in 1 2 3; do run "quiet-$i" "$@"; done
echo

echo "== busy: fio on a loop device of this script's own, and two CPU hogs"
busy_img=$(mktemp /var/tmp/bench-repeat-busy.XXXXXX)
truncate -s 512M "$busy_img"
busy_dev=$(losetup -f --show --direct-io=on "$busy_img")
fio --name=busy --filename="$busy_dev" --direct=1 --ioengine=libaio --rw=randrw \
    --bs=4k --iodepth=16 --time_based --runtime=3600 --output=/dev/null &
fio_pid=$!
for _ in 1 2; do
    sh -c 'while :; do :; done' &
    hogs+=($!)
done
echo "         $busy_dev under fio (pid $fio_pid), hogs ${hogs[*]}"
for i in 1 2 3; do run "busy-$i" "$@"; done
echo

# The one number format of the tool (`-51% (-58..-43)`): one decimal when
# every value is under 10%.
echo "# Each run's last look: the leader against each other configuration on its figure"
echo "# (change (interval), pairs, sd of the pairs' log ratios, answer)"
for f in "$out"/quiet-*.json "$out"/busy-*.json; do
    jq -r --arg name "$(basename "$f" .json)" '
        def pct(d): (. * 100 * pow(10; d) | round / pow(10; d)) as $v
            | (if $v > 0 then "+" else "" end) + ($v | tostring);
        def number: ([.change, .lo, .hi] | map(fabs) | max) as $big
            | (if $big < 0.0995 then 1 else 0 end) as $d
            | if .lo == null then "\(.change | pct($d))% (one pair, no interval)"
              else "\(.change | pct($d))% (\(.lo | pct($d))..\(.hi | pct($d)))" end;
        .analysis as $a | .configurations as $c
        | "\($name): look \($a.look) of \($a.looks), \($a.confidence * 1000 | round / 10)% intervals, leader \($c[$a.leader].configuration // $a.leader)",
          ($a.comparisons[] | select(.goal != null)
           | "    vs \($c[.other].configuration // .other): \(.goal | number), \(.goal.pairs) pairs, sd \(.goal.sd * 100 | round / 100), \(.goal.answer)")
        ' "$f" 2>/dev/null || echo "$(basename "$f" .json): no analysis"
done
echo

winners=$(for f in "$out"/quiet-*.json "$out"/busy-*.json; do
    jq -r '.verdict.winner // empty' "$f" 2>/dev/null || true
done | sort -u)
n=$(printf '%s' "$winners" | grep -c . || true)
if [ "$n" -le 1 ]; then
    echo "PASS: never two different decided winners (decided: ${winners:-none})"
else
    echo "FAIL: different decided winners: $(echo "$winners" | tr '\n' ' ')"
    exit 1
fi
