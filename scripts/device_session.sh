#!/usr/bin/env bash
# One batched run on a lent GPU machine: GPU tests, GPU prove benchmark, pipeline benchmark.
# Usage (from the repo root, with .whl and .cupycache carried): bash scripts/device_session.sh OUTDIR
# Each step has its own time limit and writes its output to OUTDIR as it goes, so a step that runs
# long costs only itself. numba compiles cold here (other Python, other path), so the CPU kernels
# are warmed in the background while the GPU tests run.
set -u
out=${1:?usage: device_session.sh OUTDIR}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=$PWD/.cupycache SEALTOP_PARAMS=/tmp/params
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
(python3 -m kernels.warm > "$out/warm.txt" 2>&1 &)
step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  local t0=$(date +%s)
  timeout "$secs" "$@" > "$out/$name.txt" 2>&1
  echo "$name: rc=$? in $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.txt"
}
step gpu_tests 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cuda_prove.py tests/test_cuda_ff.py tests/test_cuda_ntt.py tests/test_cuda_msm.py
step bench_prove 120 python3 -m engine bench prove --backend cuda --sizes 16,18,20 --repeat 3
step bench_pipeline 150 python3 -m engine bench pipeline --preset medium --jobs 4 --json "$out/pipeline.json" \
  --set backend=cuda --set 'devices=[0]' --set b_g2=gpu --set partition_workers=4 \
  --set gpu_channel_capacity=4 --set gpu_slots_per_device=2 --set partitions=2 --set memory_budget=0
tar czf "$out/cupy_cache.tar.gz" -C "$CUPY_CACHE_DIR" . 2>/dev/null
