#!/usr/bin/env bash
# Does the demo's headline reproduce? `blktune demo` three times in a row,
# each driven in tmux as a trainer drives it: wait for the load, `s` and
# pick bfq (from the demo's mq-deadline), read the one before/after the
# banner and the panel measured, then `A` (the A/B: 12 interleaved,
# counterbalanced rounds), read the engine's decided figures and check that
# the user's choice (bfq) is back on the device. Prints the machine, then
# each run's banner and its A/B rows, then the decided direction of the
# headline (the reads' p99) and of r/s in each run; exit 0 when the three
# runs decided the same direction on the headline, 1 otherwise (r/s is
# shown, not required: a closed-loop load's rate moves with its latency and
# is often undecided at 6 pairs on a busy machine). Issue 32's acceptance
# run; benches/demo/RESULTS.md has its last output. Root only (the demo
# makes its own loop device and removes it; nothing else is touched).
#
#   benches/demo/three-runs.sh
#
# BLKTUNE names the binary (default target/release/blktune, else debug);
# OUT the directory each run's captured screens go to (default a temp dir,
# kept).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$here/../..
bin=${BLKTUNE:-$top/target/release/blktune}
[ -x "$bin" ] || bin=$top/target/debug/blktune
[ "$(id -u)" -eq 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
command -v tmux >/dev/null || { echo "needs tmux" >&2; exit 1; }
out=${OUT:-$(mktemp -d /tmp/demo-three-runs.XXXXXX)}
mkdir -p "$out"
journal=$(mktemp -d)
session=blktune-demo-$$
cleanup() {
    # q ends the demo (it restores and removes its device); the kill is
    # for a run that hung.
    tmux send-keys -t "$session" q 2>/dev/null || true
    sleep 3
    tmux kill-session -t "$session" 2>/dev/null || true
    rm -rf "$journal"
}
trap cleanup EXIT

screen() { tmux capture-pane -p -t "$session"; }

# Wait until the screen matches the extended regexp $1 (at most $2 s).
wait_for() {
    local deadline=$((SECONDS + $2))
    until screen | grep -Eq -- "$1"; do
        if [ $SECONDS -ge $deadline ]; then
            echo "timed out waiting for: $1" >&2
            screen >&2
            return 1
        fi
        sleep 0.5
    done
}

# The panel's row of a figure (right of the charts' last │).
row() { screen | sed 's/.*│//' | grep -E "^$1 " | head -1; }

# The engine's answer at the end of a row in the wide panel.
answer() { awk '{print $NF}' <<<"$1"; }

echo "== $(hostname), Linux $(uname -r), $(nproc) CPUs, $(ls /sys/block | wc -l) /sys/block entries"
echo "   $bin demo --interval 500ms (scratch file in /var/tmp), 120x50, three runs in a row"
declare -a verdicts
for run in 1 2 3; do
    echo "== run $run ($(date -u +%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg))"
    tmux new-session -d -s "$session" -x 120 -y 50 \
        "env NO_COLOR=1 BLKTUNE_JOURNAL_DIR='$journal' '$bin' demo --interval 500ms; echo EXIT=\$?; sleep 30"
    wait_for 'DEMO loop[0-9]+: press s' 60
    dev=$(screen | grep -Eo 'DEMO loop[0-9]+' | head -1 | cut -d' ' -f2)
    # 20 s of the load under mq-deadline: the "before" window.
    sleep 20
    tmux send-keys -t "$session" s
    wait_for 'scheduler of' 10
    # The picker starts on the active scheduler (mq-deadline): kyber, then bfq.
    tmux send-keys -t "$session" Down Down Enter
    wait_for 'Δ mq-deadline→bfq' 30
    sleep 20
    screen >"$out/run$run-one-pair.txt"
    echo "   one before/after: $(screen | sed -n 2p | sed 's/^ *//')"
    tmux send-keys -t "$session" A
    wait_for 'A/B round 1 of 12' 30
    wait_for '\(A/B, [0-9]+ pairs\)|A/B, [0-9]+ pairs: no latency|UNRELIABLE|cancelled|failed' 300
    # The end of the A/B puts the user's choice back: the device's row.
    wait_for "^.{1,3}$dev +loop +bfq " 10
    screen >"$out/run$run-ab.txt"
    echo "   A/B:              $(screen | sed -n 2p | sed 's/^ *//')"
    echo "   after the A/B:    $(screen | grep -Eo 'A/B on loop[0-9]+ done: original settings restored \(scheduler=[a-z-]+')"
    echo "   load average at the A/B's end: $(cut -d' ' -f1-3 /proc/loadavg)"
    for f in r/s r_await r_p99 w/s w_await w_p99; do
        echo "     $(row "$f")"
    done
    verdicts[$run]="r_p99 $(answer "$(row r_p99)") r/s $(answer "$(row r/s)")"
    tmux send-keys -t "$session" q
    wait_for 'EXIT=0' 60
    tmux kill-session -t "$session"
done

echo "== decided directions (bfq against mq-deadline; ? = undecided)"
for run in 1 2 3; do
    echo "   run $run: ${verdicts[$run]}"
done
echo "(screens in $out)"
headline() { cut -d' ' -f1-2 <<<"$1"; }
[ "$(headline "${verdicts[1]}")" = "$(headline "${verdicts[2]}")" ] &&
    [ "$(headline "${verdicts[2]}")" = "$(headline "${verdicts[3]}")" ] &&
    ! grep -q '?' <<<"$(headline "${verdicts[1]}")"
