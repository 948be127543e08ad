#!/usr/bin/env bash
# One batched run on a lent GPU machine: the named steps, in order, each with its own time limit.
#
#   bash scripts/device_session.sh OUTDIR STEP...
#
# Steps:
#   compile        compile every CUDA module (NVRTC, in parallel; CuPy's cache in .cupycache)
#   tests          pytest -m gpu (kernels bit for bit against the CPU, proofs against the oracle)
#   kernels        scripts/gpu_check.py: multiplication probes, G1/G2 MSM and NTT timings
#   prove_chain    python3 -m engine bench prove --backend cuda --sizes 16,18,20
#   prove_presets  python3 -m engine bench prove --backend cuda --preset medium,large
#   prove_large    the same at large only (makes the large key on a fresh machine)
#   pipeline       bench pipeline at large: 4 synthesis workers, capacity 4, 2 slots, one GPU
#   cuzk           bench pipeline --matrix cuzk at large (capacity x permit_release)
#   dealloc        bench pipeline --matrix dealloc at large (sync against async)
#   two_gpu        bench pipeline at large on devices [0] and then [0, 1]
#   one_slot       bench pipeline at large on one GPU with 2 slots, then with 1 slot
#   latency        scripts/handoff_latency.py (a task/reply round trip by switch interval)
#   diagnose       one_slot's two runs with SEALTOP_PROVER_TRACE (engine/pipeline/prover_trace.py)
#   handoff        one_slot's two runs at CPython's default switch interval, then at the engine's
#   peer_build     (in the background) build sppark's harness and kernels/cuda/peer/sppark_ff_probe.cu
#                  from .peer (a copy of ../shared/peers/sppark; carry it) into /tmp/peer/build
#   variants_build (in the background) compile msm_g1 (and $VARIANT_MODULES) for each build variant in
#                  $VARIANTS (each a SEALTOP_CUDA_DEFINES value; variants apart by spaces, defines within
#                  one by ";", e.g. "MSM_G1_ACC_BOUNDS=__launch_bounds__(128,2)"; "default", "default2", ...:
#                  no defines, built once: a second default timed last gives the spread between runs),
#                  all at once; the variants and variant_tests steps wait for these compilations first
#   gpu_tests      the whole python3 -m pytest -q -m gpu
#   some_tests     python3 -m pytest -q -m gpu on $SOME_TESTS (files or node ids), limit $SOME_TESTS_S (200 s):
#                  for a call too short for the whole suite
#   batch_tests    the batch-affine MSM's GPU tests and the MSM/prove regressions beside them
#   variant_tests  $VARIANT_TESTS (default tests/test_cuda_msm_batch.py; pytest -k "$VARIANT_TESTS_K" when
#                  set) under each build variant in $VARIANTS but the defaults
#   rounds_tests   the "rounds" accumulation's GPU tests (tests/test_cuda_msm_rounds.py) and its
#                  host-built ones (time it with KERNELS_BENCH="msm_g1_acc=xyzz,rounds,rounds3:24,27")
#                  and the multi-item buckets' prefold (tests/test_cuda_msm_fold*.py: kernels/cuda/msm_fold.py;
#                  SEALTOP_MSM_PREFOLD=0 in the environment turns it off for a timing to compare)
#   sort2_tests    the two-pass sort into runs (kernels/cuda/msm_sort2.py): its GPU tests
#                  (tests/test_cuda_msm_sort2.py), its host-built ones and the one-pass runs test beside
#                  them (time it with KERNELS_BENCH="msm_g1_sort2=26,27")
#   ones_rounds_tests  the ones' sum by rounds (msm.sum_list, SEALTOP_MSM_ONES_ACC): its GPU tests
#                  (tests/test_cuda_msm_ones_rounds.py), the ones' list tests and the host-built rounds
#                  ones (time it with KERNELS_BENCH="msm_g1_ones=xyzz,rounds,rounds-l8,rounds-l16:20.3,30.7,61.4
#                  msm_g2_ones=xyzz,rounds,rounds-l12:20.3")
#   ncu_msm        Nsight Compute (clocks left alone) on the two G1 accumulation kernels at 2^24:
#                  XYZZ (window 16) and batch-affine (window 20); sections in $NCU_SECTIONS
#   compare_batch  compare with SEALTOP_MSM_ACC=${COMPARE_ACC:-auto} (sealtop's bucket accumulation)
#   msm_profile    scripts/msm_profile.py: each MSM of a porep-32g partition alone, phase by phase
#                  ($PROFILE_ONLY picks some of h,a,b1,l,b2; PROFILE_PAIRS=1: each witness MSM again
#                  with its pair table)
#   ncu_h          Nsight Compute (clocks left alone) on the H MSM's kernels with the defaults (two-pass
#                  sort, rounds, batch inversion levels, prefold, window slices), GLV split at 2^27:
#                  $NCU_COUNT (8) launches matching $NCU_KERNELS after the first $NCU_SKIP (0); sections in $NCU_SECTIONS
#   plans          scripts/msm_plans.py: one G1 MSM size ($PLANS_LOG, default 24) under the plans in $PLANS
#                  (window, per-window sort, runs, fold, slice levels and length, GPU finish), results compared equal
#   ff_probe       sppark's field multiplication probe (same shape as gpu_check.py's)
#   compare        .peer/harness/compare.py: sppark and sealtop on the same device buffers
#                  (sizes from $COMPARE_MSM, $COMPARE_NTT)
#   variants       G1 MSM timings ($VARIANT_BENCH) for each build variant in $VARIANTS ("default":
#                  $VARIANT_BENCH_DEFAULT when set, e.g. the rounds modes a runtime setting picks)
#   devkey_tests   the device-made key and H step GPU tests (medium), plus $EXTRA_GPU_TESTS
#   devkey_large   the device-made key equal to setup's key file at large (SEALTOP_HEAVY=1)
#   probe          scripts/device_key_probe.py $PROBE_PRESET (default large), $PROBE_PROOFS proofs
#   build32g       build the porep-32g circuit (Filecoin's exact 32 GiB C2 circuit) into .params/circuits
#                  (time, peak RSS, disk)
#   pipe32g        bench pipeline --preset porep-32g with sample-configs/porep-32g-h200.toml,
#                  $JOBS32 jobs (default 1) of 10 partitions; the prover generates the key on the
#                  GPU (the disk cannot hold it); GPU memory sampled by nvidia-smi every 0.5 s;
#                  the session recorded (gzipped) and /dev/shm listed after; its time limit is
#                  $PIPE32_S, else what is left until $CALL_END (epoch seconds), else 420 s;
#                  $PIPE32_SET adds arguments: PIPE32_SET='--matrix dealloc --one-engine --set
#                  abc_eval="cpu"' runs the dealloc matrix (or cuzk) in one engine that makes its
#                  device key once (a warm-up job), then each variant's $JOBS32 jobs
#   single32g      as pipe32g, one engine: a warm-up job makes the device key, then one job at a
#                  time on the resident key (--matrix dealloc --one-engine: async, then sync), each
#                  timed from its submission to its verified proof
#   both32g        as pipe32g, one engine, one device key for all three figures (--matrix lone
#                  --one-engine): the warm-up job (the first job's time, key included), $JOBS32 jobs
#                  (default 5) submitted together (the steady rate), then one job alone on the resident
#                  key (from its submission to its verified proof); ~70 s less than pipe32g + single32g
#   pairs_tests    the ones' sums by pairs (kernels/cuda/pairs.py): its GPU tests, the list split's
#                  beside them, and the MSM and prover tests with SEALTOP_MSM_PAIRS=1
#   ends_tests     the MSM ends beside the next MSM (msm_ends.Ends): their GPU tests, then the MSM, prover,
#                  device-key and pairs GPU tests with SEALTOP_MSM_ENDS=side
#   witness_bench  scripts/witness_bench.py, no GPU: a whole synthetic 32 GiB sector, then one porep-32g
#                  partition's witness and compact form on $WB_THREADS threads (default 4,8,16), the
#                  worker's path beside the whole-z and interpreter paths; its table goes to steps.txt too
#   r7_tests       the GPU tests of the fused H step, the MSM's list split and the NTT (its twiddle
#                  table grew by one entry), on the default paths otherwise
#   radix_bench    scripts/h_small_bench.py --what h4: the fused H step's passes in radix 2 against radix 4
#                  and 8 (hstep.RADIX, SEALTOP_NTT_RADIX), sizes $RADIX_SIZES (24,27); SEALTOP_NTT_MAX_STAGES sets
#                  the schedules; then SEALTOP_NTT_RADIX=4 (or 8) with gpu_tests or pipe32g
#   r7_bench       scripts/h_small_bench.py: old against new for the H step, the witness-like G1 MSM,
#                  the a/b/c evaluation (sizes $R7_SIZES, default 24,27) and G2 ($R7_G2, default 22);
#                  its table goes to steps.txt too
#   r7_regress     the MSM, prover and a/b/c GPU tests with every new path on (SEALTOP_H_PATH=fused
#                  SEALTOP_MSM_ONES=list SEALTOP_ABC_ROWS=split); limit $R7_REGRESS_S (default 150 s)
# The kernels step takes its --bench spec from $KERNELS_BENCH when set.
#
# Needs the cp312 oracle wheel in .whl (carry it). Keys and compiled circuits go to .params in the
# repo root (git-ignored), which a warm machine keeps between calls. Everything comes back as
# OUTDIR/steps.txt (one line per step) and OUTDIR/results.tgz (every step's full output). With
# CACHE_BACK=1, also CuPy's cache as OUTDIR/cupy_cache.tgz.part* of at most 15 MiB each (a file
# comes back from the device only under 16 MiB, and the whole cache has outgrown that):
# `cat .../cupy_cache.tgz.part* > .cupycache.tgz` here, carry it, and the compile step loads the
# modules instead of compiling them (57-80 s with a stale cache). Use it in one invocation a
# call: at most 8 files come back from a call.
set -u
out=${1:?usage: device_session.sh OUTDIR STEP...}
shift
work="$out/work"
mkdir -p "$work" .params .cupycache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=$PWD/.cupycache SEALTOP_PARAMS=$PWD/.params
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$work/gpu.txt" 2>&1
nproc >> "$work/gpu.txt"
# numba compiles cold on a fresh machine: warm it in the background while the GPU steps run
(python3 -m engine.warmup > "$work/warm.txt" 2>&1 &)

vb_pids=()  # the variants_build compilations still running
wait_variants() {  # the variants' compilations done (each writes its own variant_build_*.txt)
  [ ${#vb_pids[@]} -eq 0 ] && return
  wait "${vb_pids[@]}"
  echo "variants_build: done $(( $(date +%s) - vb_t0 )) s after it started; $(cat "$work"/variant_build_*.txt | grep -c ' compiled in ') compiled" \
    | tee -a "$out/steps.txt"
  vb_pids=()
}
defines() {  # defines VARIANT: its SEALTOP_CUDA_DEFINES value ("default", "default2", ...: none)
  case $1 in default*) echo "" ;; *) echo "$1" ;; esac
}

step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  local t0=$(date +%s)
  timeout -k 10 "$secs" "$@" > "$work/$name.txt" 2>&1
  local rc=$?
  echo "$name: rc=$rc in $(( $(date +%s) - t0 )) s; $(grep -v '^\s*$' "$work/$name.txt" | tail -1 | cut -c1-200)" | tee -a "$out/steps.txt"
  # after every step, so a call stopped at its time limit still brings back what was done
  tar czf "$out/results.tgz" --exclude=cupy_cache.tar.gz -C "$work" .
}
wait_warm() {  # the pipeline steps need numba warm, or every worker compiles
  timeout 300 python3 -m engine.warmup > "$work/warm_wait.txt" 2>&1
}
pipe() {  # pipe NAME SECONDS EXTRA-ARGS...: bench pipeline at large on one H200 unless told otherwise
  local name=$1 secs=$2; shift 2
  step "$name" "$secs" python3 -m engine bench pipeline --preset large --json "$work/$name.json" \
    --record "$work/$name.jsonl" --set "param_cache=\"$PWD/.params\"" --set backend=cuda --set b_g2=gpu --set partition_workers=4 --set gpu_channel_capacity=4 \
    --set gpu_slots_per_device=2 --set partitions=2 --set memory_budget=0 "$@"
}

pipe32g() {  # pipe32g NAME JOBS EXTRA-ARGS...: bench pipeline at porep-32g with the H200 sample config
  local name=$1 jobs=$2; shift 2
  wait_warm
  (nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader -lms 500 > "$work/gpu_mem_$name.csv" 2>&1 &
   echo $! > "$work/smi.pid")
  local left=$(( ${CALL_END:-0} - $(date +%s) ))  # with CALL_END (epoch s): what the call has left
  step "$name" "${PIPE32_S:-$(( left > 60 ? left : 420 ))}" python3 -m engine bench pipeline --preset porep-32g \
    --config sample-configs/porep-32g-h200.toml --jobs "$jobs" --json "$work/$name.json" \
    --record "$work/$name.jsonl" --set "param_cache=\"$PWD/.params\"" "$@"
  kill "$(cat "$work/smi.pid")" 2>/dev/null
  ls -la /dev/shm > "$work/shm_after_$name.txt" 2>&1
  sort -t, -k2 -n "$work/gpu_mem_$name.csv" | tail -1 > "$work/gpu_mem_${name}_peak.txt"
  gzip -f "$work/$name.jsonl" 2>/dev/null; cp "$work/$name.jsonl.gz" "$out/" 2>/dev/null
  tar czf "$out/results.tgz" --exclude=cupy_cache.tar.gz -C "$work" .
}

for s in "$@"; do
  case $s in
    compile) step compile 240 python3 -c "import time; t=time.time(); from kernels.cuda.module import warm_up; warm_up(); print(f'modules ready in {time.time()-t:.1f} s')" ;;
    tests) step tests 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cuda_prove.py tests/test_cuda_upload.py tests/test_cuda_ff.py tests/test_cuda_ntt.py tests/test_cuda_msm.py ;;
    kernels) step kernels 300 python3 scripts/gpu_check.py "$work/gpu" --phases probe,bench --repeat 5 \
               --bench ${KERNELS_BENCH:-msm_g1=16,20,22,24,26 msm_g2=20,22 ntt=20,24} ;;
    peer_build) (
        t0=$(date +%s); rm -rf /tmp/peer; cp -r .peer /tmp/peer
        bash /tmp/peer/harness/build.sh /tmp/peer/sppark /tmp/peer/blst /tmp/peer/build &&
        nvcc -std=c++17 -O3 -arch=sm_90 -DFEATURE_BLS12_381 -I /tmp/peer/sppark -I /tmp/peer/blst/src \
            kernels/cuda/peer/sppark_ff_probe.cu -o /tmp/peer/build/ff_probe
        echo "peer_build: rc=$? in $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.txt"
      ) > "$work/peer_build.txt" 2>&1 &
      peer_pid=$! ;;
    variants_build) vb_t0=$(date +%s); built=" "
      for v in ${VARIANTS:-}; do
        d=$(defines "$v")
        case "$built" in *" [$d] "*) continue ;; esac  # "default2": the same build as "default"
        built="$built[$d] "
        for mod in msm_g1 ${VARIANT_MODULES:-}; do
          SEALTOP_CUDA_DEFINES="$(defines "$v")" timeout 400 python3 -c \
            "import time; t=time.time(); from kernels.cuda.module import module; module('$mod'); print(f'variant $v $mod compiled in {time.time()-t:.1f} s')" \
            > "$work/variant_build_${mod}_${v//[^A-Za-z0-9]/_}.txt" 2>&1 &
          vb_pids+=($!)
        done
      done ;;
    gpu_tests) step gpu_tests 420 python3 -m pytest -q -m gpu -p no:cacheprovider ;;
    some_tests) step some_tests "${SOME_TESTS_S:-200}" python3 -m pytest -q -m gpu -p no:cacheprovider ${SOME_TESTS:?set SOME_TESTS} ;;
    batch_tests) step batch_tests 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cuda_msm_batch.py \
        tests/test_cuda_host_inverse.py tests/test_cuda_msm.py tests/test_cuda_prove.py ;;
    rounds_tests) step rounds_tests 300 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_msm_rounds.py \
        tests/test_cuda_host_rounds.py tests/test_cuda_msm_fold_gpu.py tests/test_cuda_msm_fold.py ;;
    ones_rounds_tests) step ones_rounds_tests 300 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_msm_ones_rounds.py \
        tests/test_cuda_msm_ones.py tests/test_cuda_host_rounds.py ;;
    sort2_tests) step sort2_tests 300 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_msm_sort2.py \
        tests/test_cuda_host_sort2.py "tests/test_cuda_msm.py::test_sort_into_runs_matches_arkworks" ;;
    compare_batch) wait "${peer_pid:-0}" 2>/dev/null
      SEALTOP_MSM_ACC=${COMPARE_ACC:-auto} step compare_batch 420 python3 .peer/harness/compare.py --lib /tmp/peer/build/libsppark_harness.so \
        --out "$work/compare_batch.json" --msm "${COMPARE_MSM:-20,22,24}" --ntt "" --reps 5 ;;
    plans) step plans 240 python3 scripts/msm_plans.py --log "${PLANS_LOG:-24}" --out "$work/plans.json" \
        --plans ${PLANS:-default w16+bw w16+bw+fx w20 w20+sl2 w20+fx w20+fx+sl2 w20+fx+sl2+s16 w20+fx+sl2+gf w16+bw+fx+sl2} ;;
    ff_probe) wait "${peer_pid:-0}" 2>/dev/null; step ff_probe 60 /tmp/peer/build/ff_probe ;;
    compare) wait "${peer_pid:-0}" 2>/dev/null
      step compare "${COMPARE_S:-420}" python3 .peer/harness/compare.py --lib /tmp/peer/build/libsppark_harness.so \
        --out "$work/compare.json" --msm "${COMPARE_MSM:-20,22,24}" --ntt "${COMPARE_NTT:-20,24}" --reps 5 ;;
    variants) wait_variants
      for v in ${VARIANTS:-}; do
        export SEALTOP_CUDA_DEFINES="$(defines "$v")"
        spec=${VARIANT_BENCH:-msm_g1=20,22,24}
        [ "$v" = default ] && spec=${VARIANT_BENCH_DEFAULT:-$spec}
        step "variant_${v//[^A-Za-z0-9]/_}" 240 python3 scripts/gpu_check.py "$work/variant_${v//[^A-Za-z0-9]/_}" --phases bench --repeat 5 \
          --no-cache-save --bench $spec
        unset SEALTOP_CUDA_DEFINES
      done ;;
    variant_tests) wait_variants
      for v in ${VARIANTS:-}; do
        case $v in default*) continue ;; esac
        SEALTOP_CUDA_DEFINES="$v" step "vtests_${v//[^A-Za-z0-9]/_}" 200 python3 -m pytest -q -m gpu -p no:cacheprovider \
          ${VARIANT_TESTS_K:+-k "$VARIANT_TESTS_K"} ${VARIANT_TESTS:-tests/test_cuda_msm_batch.py}
      done ;;
    ncu_msm) ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      secs=""; for sec in ${NCU_SECTIONS:-SpeedOfLight Occupancy WarpStateStats MemoryWorkloadAnalysis ComputeWorkloadAnalysis}; do secs="$secs --section $sec"; done
      step ncu_msm 150 "$ncu_bin" --clock-control none -k regex:_accumulate -c 2 $secs python3 -c "
import cupy as cp
from kernels.cuda import msm
from kernels.cuda.bench import distinct_points_device, random_fr_device
pts = distinct_points_device('g1', 1 << 24); sc = random_fr_device(1 << 24)
for acc, w in (('xyzz', 16), ('batch', 20)):
    msm.msm('g1', pts, sc, window=w, accumulate=acc); cp.cuda.Device().synchronize(); print(acc, 'done', flush=True)" ;;
    msm_profile) step msm_profile 240 python3 scripts/msm_profile.py --only "${PROFILE_ONLY:-h,a,b1,l,b2}" ${PROFILE_PAIRS:+--pairs} ;;
    ncu_h) ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      secs=""; for sec in ${NCU_SECTIONS:-SpeedOfLight Occupancy WarpStateStats MemoryWorkloadAnalysis LaunchStats}; do secs="$secs --section $sec"; done
      step ncu_h 240 "$ncu_bin" --clock-control none -k "regex:${NCU_KERNELS:-sort2_bin|sort2_place|g1_rounds_fused|fp_binv|g1_reduce_groups|g1_segments}" \
        --launch-skip "${NCU_SKIP:-0}" -c "${NCU_COUNT:-8}" $secs python3 -c "
import cupy as cp
from kernels.cuda import msm
from kernels.cuda.bench import distinct_points_device, random_fr_device
n = (1 << 27) - 1
ext = msm.endo_table(distinct_points_device('g1', n))
msm.msm('g1', ext[:n], random_fr_device(n), endo=ext); cp.cuda.Device().synchronize(); print('done', flush=True)" ;;
    prove_chain) step prove_chain 150 python3 -m engine bench prove --backend cuda --sizes 16,18,20 --repeat 3 ;;
    prove_presets) wait_warm; step prove_presets 360 python3 -m engine bench prove --backend cuda --preset medium,large --repeat 3 ;;
    prove_large) wait_warm; step prove_large 240 python3 -m engine bench prove --backend cuda --preset large --repeat 1 ;;
    pipeline) wait_warm; pipe pipeline 120 --jobs 6 --set 'devices=[0]' ;;
    cuzk) wait_warm; pipe cuzk 200 --jobs 4 --matrix cuzk --set 'devices=[0]' ;;
    dealloc) wait_warm; pipe dealloc 120 --jobs 4 --matrix dealloc --set 'devices=[0]' ;;
    one_slot) wait_warm; pipe one_gpu 100 --jobs 6 --set 'devices=[0]'; pipe one_slot 100 --jobs 6 --set 'devices=[0]' --set gpu_slots_per_device=1 ;;
    latency) step latency 60 python3 scripts/handoff_latency.py ;;
    handoff) wait_warm
      for si in 0 0.2; do
        export SEALTOP_SWITCH_INTERVAL_MS=$si
        pipe "handoff_2slot_$si" 100 --jobs 6 --set 'devices=[0]'
        pipe "handoff_1slot_$si" 100 --jobs 6 --set 'devices=[0]' --set gpu_slots_per_device=1
      done
      unset SEALTOP_SWITCH_INTERVAL_MS ;;
    diagnose) wait_warm  # the prover trace (one line per partition in the step's output)
      export SEALTOP_PROVER_TRACE=1
      pipe diag_1slot 100 --jobs 6 --set 'devices=[0]' --set gpu_slots_per_device=1
      pipe diag_2slot 100 --jobs 6 --set 'devices=[0]'
      unset SEALTOP_PROVER_TRACE ;;
    two_gpu) wait_warm; pipe one_gpu 100 --jobs 6 --set 'devices=[0]'; pipe two_gpu 100 --jobs 6 --set 'devices=[0,1]' ;;
    devkey_tests) step devkey_tests 150 python3 -m pytest -q -m gpu -p no:cacheprovider -x \
        tests/test_device_key_gpu.py tests/test_cuda_ntt.py ${EXTRA_GPU_TESTS:-} ;;
    devkey_large) SEALTOP_HEAVY=1 step devkey_large 240 python3 -m pytest -q -m gpu -p no:cacheprovider \
        -k large tests/test_device_key_gpu.py ;;
    probe) step "probe_${PROBE_PRESET:-large}" "${PROBE_S:-150}" python3 scripts/device_key_probe.py "${PROBE_PRESET:-large}" \
        --params .params --proofs "${PROBE_PROOFS:-2}" --json "$work/probe_${PROBE_PRESET:-large}.json" ;;
    build32g) step build32g "${BUILD32_S:-300}" python3 -c "
import resource, shutil, time
from engine.c2.circuit import build_c2
from engine.pipeline.circuits import circuit_cache_dir
from engine.seal.registry import seal_proof
t = time.time()
d = circuit_cache_dir('$PWD/.params')
s = build_c2(seal_proof('StackedDrg32GiBV1_1'), d, progress=lambda m: print(f'{time.time() - t:7.1f} s  {m}', flush=True)).shape
r = s.r1cs
print(f'porep-32g: {r.num_constraints} constraints, {r.num_vars} variables, nnz {r.A.nnz + r.B.nnz + r.C.nnz} '
      f'in {time.time() - t:.1f} s; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GiB; '
      f'disk free {shutil.disk_usage(d).free / 2**30:.1f} GiB')" ;;
    pipe32g) pipe32g pipe32g "${JOBS32:-1}" ${PIPE32_SET:-} ;;
    single32g) pipe32g single32g 1 --matrix dealloc --one-engine ${PIPE32_SET:-} ;;
    both32g) pipe32g both32g "${JOBS32:-5}" --matrix lone --one-engine ${PIPE32_SET:-} ;;
    pairs_tests) step pairs_tests 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cuda_msm_pairs.py \
        tests/test_cuda_msm_ones.py
      SEALTOP_MSM_PAIRS=1 step pairs_regress 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cuda_msm.py \
        tests/test_cuda_prove.py tests/test_device_key.py ;;
    ends_tests) step ends_tests 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cuda_msm_ends.py
      SEALTOP_MSM_ENDS=side step ends_regress 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cuda_msm.py \
        tests/test_cuda_prove.py tests/test_device_key.py tests/test_cuda_msm_pairs.py ;;
    witness_bench) wait_warm; step witness_bench 150 python3 scripts/witness_bench.py --preset porep-32g \
        --threads "${WB_THREADS:-4,8,16}" --repeat 3
      sed -n '/a synthetic sector/p; /^ *threads/,$p' "$work/witness_bench.txt" | tee -a "$out/steps.txt" ;;
    r7_tests) step r7_tests 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cuda_hstep.py \
        tests/test_cuda_msm_ones.py tests/test_cuda_ntt.py ;;
    r7_bench) step r7_bench 150 python3 scripts/h_small_bench.py "$work/r7" --sizes "${R7_SIZES:-24,27}" \
        --g2-sizes "${R7_G2:-22}" --repeat 5
      cat "$work/r7/h_small_bench.md" 2>/dev/null | tee -a "$out/steps.txt" ;;
    radix_bench) step radix_bench 240 python3 scripts/h_small_bench.py "$work/radix" --sizes "${RADIX_SIZES:-24,27}" \
        --what h4 --repeat 5
      cat "$work/radix/h_small_bench.md" 2>/dev/null | tee -a "$out/steps.txt" ;;
    r7_regress) SEALTOP_H_PATH=fused SEALTOP_MSM_ONES=list SEALTOP_ABC_ROWS=split step r7_regress "${R7_REGRESS_S:-150}" \
        python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cuda_msm.py tests/test_cuda_abc.py \
        tests/test_cuda_prove.py tests/test_abc_eval_gpu.py ;;
    *) echo "unknown step $s" | tee -a "$out/steps.txt" ;;
  esac
done
wait_variants  # compilations no step waited for still land in the cache that goes back
rm -rf "$work"
if [ -n "${CACHE_BACK:-}" ]; then
  tar czf - -C .cupycache . | split -b 15m - "$out/cupy_cache.tgz.part"
fi
