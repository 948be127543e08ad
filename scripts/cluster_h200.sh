#!/usr/bin/env bash
# The farm on one H200 machine: a Dask scheduler, a GPU host and a CPU host, jobs placed by
# resources; the farm's rate against the GPU host alone and the per-job overhead of the cluster.
#
#   bash scripts/cluster_h200.sh OUTDIR             on the device (carry .whl; see below)
#   bash scripts/cluster_h200.sh --dry-run OUTDIR   here: the same steps on the CPU backend with
#                                                   tiny jobs, to check the script's logic
#
# Steps (each under `timeout`, the whole run about 6 minutes at most on a fresh machine):
#   install   dask, distributed (and their dependencies) from .whl/cluster, tomlkit and the
#             oracle (py_arkworks_bls12381: the clients verify every proof) from .whl,
#             into /tmp/site-cluster: `pip install --no-index --find-links` (no network there)
#   numba     engine.warmup: numba's cache compiled once before the hosts start
#   farm      `sealtop cluster scheduler` on 127.0.0.1; the GPU host `gpu` (backend cuda, one
#             H200, pinned to the cores from 4 up, offering cuda_slots); the CPU host `cpu`
#             (backend cpu, `taskset -c 0-3`, offering cpu_slots)
#   warm      one large job (needs=cuda) and one small (needs=cpu) at once: each host makes or
#             loads its key (the large key is made on the GPU on a fresh machine, 80-100 s)
#   mix       `bench pipeline --cluster` twice at once: $LARGE_JOBS large jobs needing cuda and
#             $SMALL_JOBS small jobs needing cpu, so Dask's resources place them; each report
#             has the farm's per-job overhead (submission -> host, -> first synthesis, proof
#             back), in ms, mean and min
#   down      the hosts and the scheduler stopped (SIGTERM, then SIGKILL after 30 s); /dev/shm
#             checked for segments left behind
#   alone     `bench pipeline` of $LARGE_JOBS large jobs on the GPU host's settings, no farm
#   report    OUTDIR/summary.txt: the farm's rate (proofs per minute, large s/proof) against
#             the GPU host alone, and the overhead per job
#
# Everything is torn down at the end, however the script ends (a trap). Outputs: OUTDIR/*.log
# (each process and step), OUTDIR/*.json (the bench reports), OUTDIR/*.jsonl (the farm sessions),
# OUTDIR/summary.txt.
set -u
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
out=${1:?usage: cluster_h200.sh [--dry-run] OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
t_start=$(date +%s)
port=${FARM_PORT:-8786}
addr="tcp://127.0.0.1:$port"
pids=()

say() { echo "[$(($(date +%s) - t_start)) s] $*" | tee -a "$out/steps.txt"; }
budget=${BUDGET_S:-560}  # the whole run, teardown included, within the device's 600 s per call
cap() {  # cap N: N seconds, or what is left of the budget (keeping 40 s for the teardown)
  local left=$((budget - 40 - ($(date +%s) - t_start)))
  [ "$left" -lt 5 ] && left=5
  [ "$1" -lt "$left" ] && echo "$1" || echo "$left"
}

teardown() {  # stop every process this script started: workers first, then the scheduler
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for _ in $(seq 1 60); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.5
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null && say "killed $p (no exit after 30 s)"; done
  pids=()
}
trap teardown EXIT
trap 'say "interrupted"; exit 130' INT TERM

if [ $dry = 1 ]; then
  py=${PYTHON:-python}
  large=${LARGE_PRESET:-tiny} small=${SMALL_PRESET:-tiny}
  LARGE_JOBS=${LARGE_JOBS:-4} SMALL_JOBS=${SMALL_JOBS:-2}
  need_large=cpu need_small=cpu  # two CPU hosts here: both offer cpu_slots
  params="$out/params"
  gpu_engine='backend = "cpu"
partition_workers = 1
gpu_channel_capacity = 1'
  alone_set=(--set backend=cpu --set partition_workers=1 --set gpu_channel_capacity=1)
  gpu_pin="" cpu_pin=""
  cpu_workers=1
else
  py=${PYTHON:-python3}
  large=${LARGE_PRESET:-large} small=${SMALL_PRESET:-small}
  LARGE_JOBS=${LARGE_JOBS:-6} SMALL_JOBS=${SMALL_JOBS:-2}
  need_large=cuda need_small=cpu
  params="$root/.params"
  gpu_engine='backend = "cuda"
devices = [0]
partition_workers = 4
gpu_channel_capacity = 4
gpu_slots_per_device = 2
b_g2 = "gpu"
memory_budget = 0'
  alone_set=(--set backend=cuda --set "devices=[0]" --set partition_workers=4
             --set gpu_channel_capacity=4 --set gpu_slots_per_device=2 --set b_g2=gpu
             --set memory_budget=0)
  last=$(($(nproc) - 1))
  gpu_pin="taskset -c 4-$last" cpu_pin="taskset -c 0-3"
  cpu_workers=2
  say "install: dask, distributed from .whl/cluster"
  timeout "$(cap 120)" "$py" -m pip install -q --no-index --no-compile --no-cache-dir --target /tmp/site-cluster \
    --find-links .whl/cluster --find-links .whl dask distributed tomlkit py_arkworks_bls12381 > "$out/install.log" 2>&1 \
    || { say "install failed (install.log)"; exit 2; }
  export PYTHONPATH=/tmp/site-cluster:.
  export CUPY_CACHE_DIR=$root/.cupycache
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
fi
export PYTHONUNBUFFERED=1
mkdir -p "$params"
"$py" -c "import distributed, dask; print('dask', dask.__version__, 'distributed', distributed.__version__)" \
  > "$out/versions.txt" 2>&1 || { say "dask does not import (versions.txt)"; exit 2; }
nproc >> "$out/versions.txt"

cat > "$out/gpu.toml" <<EOF
[engine]
$gpu_engine
[paths]
param_cache = "$params"
[telemetry]
sample_interval_s = 0.5
EOF
cat > "$out/cpu.toml" <<EOF
[engine]
backend = "cpu"
partition_workers = $cpu_workers
gpu_channel_capacity = 1
[paths]
param_cache = "$params"
[telemetry]
sample_interval_s = 0.5
EOF

wait_line() {  # wait_line FILE TEXT SECONDS PID: until TEXT is in FILE, the process alive
  local f=$1 text=$2 secs=$3 pid=$4
  for _ in $(seq 1 $((secs * 2))); do
    grep -q "$text" "$f" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.5
  done
  return 1
}

start() {  # start NAME CMD...: in the background, its output in OUTDIR/NAME.log
  local name=$1; shift
  "$@" > "$out/$name.log" 2>&1 &
  pids+=($!)
  last_pid=$!
}

# ---- numba's cache warm first (a fresh machine compiles once, not in each host at once) -----
say "numba: warm-up"
timeout "$(cap 180)" "$py" -m engine.warmup > "$out/warmup.log" 2>&1 || say "warm-up did not finish (warmup.log)"

# ---- farm ----------------------------------------------------------------------------------
say "farm: scheduler at $addr"
start scheduler timeout "$(cap 540)" "$py" -m engine cluster scheduler --host 127.0.0.1 --port "$port"
wait_line "$out/scheduler.log" "scheduler at" 30 "$last_pid" || { say "no scheduler (scheduler.log)"; exit 2; }
# the hosts warm up at once (numba, their worker processes, the CUDA modules)
start host_gpu timeout "$(cap 540)" $gpu_pin "$py" -m engine cluster worker --scheduler "$addr" \
  --config "$out/gpu.toml" --name gpu
gpu_pid=$last_pid
start host_cpu timeout "$(cap 540)" $cpu_pin "$py" -m engine cluster worker --scheduler "$addr" \
  --config "$out/cpu.toml" --name cpu
cpu_pid=$last_pid
wait_line "$out/host_gpu.log" "joined" "$(cap 150)" "$gpu_pid" || { say "the GPU host did not join (host_gpu.log)"; exit 2; }
wait_line "$out/host_cpu.log" "joined" "$(cap 150)" "$cpu_pid" || { say "the CPU host did not join (host_cpu.log)"; exit 2; }
say "farm: $(grep joined "$out/host_gpu.log"); $(grep joined "$out/host_cpu.log")"
# the hosts' own processes (under timeout): their engines name their /dev/shm segments by pid
host_pids="$(pgrep -P "$gpu_pid" | tr '\n' ' ')$(pgrep -P "$cpu_pid" | tr '\n' ' ')"

farm_bench() {  # farm_bench NAME SECONDS PRESET JOBS NEEDS PARTITIONS
  timeout -k 10 "$(cap "$2")" "$py" -m engine bench pipeline --cluster "$addr" --preset "$3" --jobs "$4" \
    --set "needs=$5" --set "partitions=$6" --set "param_cache=\"$params\"" \
    --json "$out/$1.json" --record "$out/$1.jsonl" > "$out/$1.log" 2>&1
}

# ---- warm: each host makes or loads its key ------------------------------------------------
say "warm: one $large job on the GPU host, one $small job on the CPU host"
farm_bench warm_large 200 "$large" 1 "$need_large" 2 & w1=$!
farm_bench warm_small 200 "$small" 1 "$need_small" 1 & w2=$!
wait $w1; r1=$?; wait $w2; r2=$?
say "warm: exit $r1 (large), $r2 (small)"
[ $r1 = 0 ] && [ $r2 = 0 ] || { say "warm-up failed:"; tail -n 3 "$out"/warm_*.log | tee -a "$out/steps.txt"; exit 1; }

# ---- mix: large and small jobs at once, placed by resources --------------------------------
say "mix: $LARGE_JOBS $large jobs (needs $need_large) and $SMALL_JOBS $small jobs (needs $need_small) at once"
t0=$(date +%s.%N)
farm_bench mix_large 150 "$large" "$LARGE_JOBS" "$need_large" 2 & m1=$!
farm_bench mix_small 150 "$small" "$SMALL_JOBS" "$need_small" 1 & m2=$!
wait $m1; r1=$?; wait $m2; r2=$?
t1=$(date +%s.%N)
echo "$t0 $t1" > "$out/mix_wall.txt"
say "mix: exit $r1 (large), $r2 (small)"

# ---- down ----------------------------------------------------------------------------------
say "down: the hosts, then the scheduler"
teardown
left=0
for p in $host_pids; do
  n=$(ls /dev/shm 2>/dev/null | grep -c "^sealtop-$p-" || true)
  left=$((left + n))
done
say "down: $left segment(s) of the hosts (pids $host_pids) left in /dev/shm"

# ---- alone: the GPU host's settings, no farm -----------------------------------------------
say "alone: $LARGE_JOBS $large jobs on the GPU host's engine, no farm"
timeout -k 10 "$(cap 150)" $gpu_pin "$py" -m engine bench pipeline --preset "$large" --jobs "$LARGE_JOBS" \
  "${alone_set[@]}" --set partitions=2 --set "param_cache=\"$params\"" \
  --json "$out/alone.json" --record "$out/alone.jsonl" > "$out/alone.log" 2>&1
ra=$?
say "alone: exit $ra"

# ---- report --------------------------------------------------------------------------------
"$py" - "$out" "$dry" > "$out/summary.txt" 2>&1 <<'EOF'
import json, sys
from pathlib import Path

out, dry = Path(sys.argv[1]), sys.argv[2] == "1"
def load(name):
    p = out / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None

big, small, alone = load("mix_large"), load("mix_small"), load("alone")
t0, t1 = (float(x) for x in (out / "mix_wall.txt").read_text().split())
wall = t1 - t0
def f(v, fmt="{:.3f}"):
    return "-" if v is None else fmt.format(v)

proofs = sum(r["jobs_verified"] for r in (big, small) if r)
# the clients' own walls (connect to last proof), not their interpreters' start
walls = [r["wall_s"] for r in (big, small) if r and r.get("wall_s")]
wall = max(walls) if walls else wall
print(f"farm (mix): {proofs} proofs verified in {wall:.1f} s = {60 * proofs / wall:.2f} proofs/min"
      f" (both clients, {t1 - t0:.1f} s with their start)")
rows = [("farm: large on the GPU host", big), ("farm: small on the CPU host", small)]
print(f"{'run':32} {'jobs':>5} {'verified':>8} {'s/proof':>8} {'steady':>8}  proofs per host")
for name, r in rows:
    if r:
        print(f"{name:32} {r['jobs']:>5} {r['jobs_verified']:>8} {f(r['s_per_proof']):>8} "
              f"{f(r['steady_s_per_proof']):>8}  {r['proofs_per_host']}")
if alone:
    s = alone["summary"]
    print(f"{'GPU host alone (large)':32} {alone['jobs']:>5} {s['jobs_verified']:>8} "
          f"{f(s['s_per_proof']):>8} {f(s['steady_s_per_proof']):>8}")
    if big and big["steady_s_per_proof"] and s["steady_s_per_proof"]:
        print(f"large steady s/proof, farm / alone: "
              f"{big['steady_s_per_proof'] / s['steady_s_per_proof']:.3f}")
    if big and s["s_per_proof"]:
        extra = (small or {}).get("jobs_verified", 0)
        print(f"proofs/min: farm {60 * proofs / wall:.2f} ({big['jobs_verified']} large + {extra} "
              f"small) against the GPU host alone {60 / s['s_per_proof']:.2f} (large)")
print("per-job overhead of the cluster, ms (mean / min):")
for name, r in (("large", big), ("small", small)):
    if r:
        print(f"  {name}: submission -> host {f(r['submit_to_host_ms'], '{:.1f}')} / "
              f"{f(r['submit_to_host_min_ms'], '{:.1f}')}, -> first synthesis "
              f"{f(r['submit_to_first_synthesis_ms'], '{:.1f}')} / "
              f"{f(r['submit_to_first_synthesis_min_ms'], '{:.1f}')}, proof back "
              f"{f(r['proof_back_ms'], '{:.1f}')} / {f(r['proof_back_min_ms'], '{:.1f}')}")
placed = (big and set(big["proofs_per_host"]) == {"gpu"}) and \
    (small and set(small["proofs_per_host"]) == {"cpu"})
if dry:
    print("placement by resources: not checked (dry run: both hosts are CPU hosts)")
else:
    print("placement by resources: " + ("large all on gpu, small all on cpu" if placed
                                        else "NOT as asked (see proofs per host)"))
EOF
cat "$out/summary.txt" | tee -a "$out/steps.txt"
say "done in $(($(date +%s) - t_start)) s"
[ "$r1" = 0 ] && [ "$r2" = 0 ] && [ "$ra" = 0 ]
