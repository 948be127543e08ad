#!/usr/bin/env bash
# Capture the console's screens at 80x24 with tmux into docs/screens/ (plain text, as a
# terminal of that size shows them): the live dashboard, a proof's detail, replay, help and
# the history graphs; then the 32 GiB sector's recorded session at 80x24 and at 200x60.
#
#   scripts/screens.sh [LIVE_WAIT_S]
#
# The live capture runs `sealtop --config sample-configs/cpu-only.toml` and waits LIVE_WAIT_S
# (default 60) for proofs to flow; a cold machine compiles kernels first and may need more;
# LIVE_WAIT_S=0 leaves the live capture out (the replays alone, about a minute).
# Replay, detail and help come from the fixed session tests/data/session_fixture.jsonl.
# The porep-32g-* screens replay docs/sessions/porep-32g-h200.jsonl.gz (one 10-partition job on
# one H200, the key made on the GPU): opened at its end (--paused) rather than played, since
# the session spans 141 s, and seeked back (g) for the screens in the middle of the job.
# Each tmux session is killed on exit, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
# this checkout's console, whatever tree an installed `sealtop` was installed from
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=docs/screens
WAIT=${1:-60}
SESSION="sealtop-screens-$$"
command -v tmux >/dev/null || { echo "screens.sh: tmux is not installed" >&2; exit 2; }
command -v sealtop >/dev/null || { echo "screens.sh: sealtop is not installed (pip install -e .)" >&2; exit 2; }
mkdir -p "$OUT"
trap 'tmux kill-session -t "$SESSION" 2>/dev/null || true' EXIT

start() {  # start COMMAND in a fresh session of COLSxROWS (default 80x24)
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    tmux new-session -d -s "$SESSION" -x "${2:-80}" -y "${3:-24}" "$1"
}
grab() {  # grab NAME: the pane's text into docs/screens/NAME.txt
    tmux capture-pane -p -t "$SESSION" >"$OUT/$1.txt"
    echo "wrote $OUT/$1.txt"
}
keys() { tmux send-keys -t "$SESSION" "$@"; sleep 1.5; }
wait_for() {  # wait_for TEXT: until the pane shows TEXT (at most 60 s, a loaded machine's start)
    for _ in $(seq 120); do
        tmux capture-pane -p -t "$SESSION" | grep -qF -- "$1" && { sleep 1; return 0; }
        sleep 0.5
    done
    echo "screens.sh: the console never showed '$1'" >&2
    return 1
}

start "sealtop replay tests/data/session_fixture.jsonl"
sleep 10  # plays to its end (5.7 s at x1)
grab replay
keys Enter
grab detail
keys Escape
keys '?'
grab help
keys Escape
keys h
grab history
keys Escape
keys q

# The 32 GiB sector: the dashboard at the end, proof 1's detail (its timeline and layered
# timers; at 80x24 also scrolled to its end), and the dashboard at 90 s (the key made, the GPU's
# memory full, three partitions done); each at 80x24, then at an operator's 200x60.
SEALED=docs/sessions/porep-32g-h200.jsonl.gz
for size in 80x24 200x60; do
    suffix=$([ "$size" = 80x24 ] && echo "" || echo "-$size")
    start "sealtop replay --paused $SEALED" "${size%x*}" "${size#*x}"
    wait_for "140.84 / 140.84 s"  # the control bar at the session's end
    grab "porep-32g-dashboard$suffix"
    keys Enter
    grab "porep-32g-detail$suffix"
    if [ "$size" = 80x24 ]; then  # the rest of the detail: all ten partitions' timers
        keys End
        grab porep-32g-detail-timers
    fi
    keys Escape
    keys g
    keys 90 Enter
    grab "porep-32g-midrun$suffix"
    keys q
done

if [ "$WAIT" != 0 ]; then
    start "sealtop --config sample-configs/cpu-only.toml --refresh 0.5"
    sleep "$WAIT"
    grab live
    keys q
    sleep 4
fi
