#!/usr/bin/env bash
# Capture the console's screens at 80x24 with tmux into docs/screens/ (plain text, as a
# terminal of that size shows them): the live dashboard, a proof's detail, replay, help and
# the history graphs.
#
#   scripts/screens.sh [LIVE_WAIT_S]
#
# The live capture runs `sealtop --config sample-configs/cpu-only.toml` and waits LIVE_WAIT_S
# (default 60) for proofs to flow; a cold machine compiles kernels first and may need more.
# Replay, detail and help come from the fixed session tests/data/session_fixture.jsonl.
# Each tmux session is killed on exit, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=docs/screens
WAIT=${1:-60}
SESSION="sealtop-screens-$$"
command -v tmux >/dev/null || { echo "screens.sh: tmux is not installed" >&2; exit 2; }
command -v sealtop >/dev/null || { echo "screens.sh: sealtop is not installed (pip install -e .)" >&2; exit 2; }
mkdir -p "$OUT"
trap 'tmux kill-session -t "$SESSION" 2>/dev/null || true' EXIT

start() {  # start COMMAND in a fresh 80x24 session
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    tmux new-session -d -s "$SESSION" -x 80 -y 24 "$1"
}
grab() {  # grab NAME: the pane's text into docs/screens/NAME.txt
    tmux capture-pane -p -t "$SESSION" >"$OUT/$1.txt"
    echo "wrote $OUT/$1.txt"
}
keys() { tmux send-keys -t "$SESSION" "$@"; sleep 1.5; }

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

start "sealtop --config sample-configs/cpu-only.toml --refresh 0.5"
sleep "$WAIT"
grab live
keys q
sleep 4
