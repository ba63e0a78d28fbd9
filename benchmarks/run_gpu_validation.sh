#!/usr/bin/env bash
# On a GPU machine: the GPU test suites, then the evaluator benchmark. Results go to $OUT (default ./gpu-results).
#   benchmarks/run_gpu_validation.sh tests      # example verdicts, the reward-hack battery, the policy (about 4 min)
#   benchmarks/run_gpu_validation.sh suites     # bad input and the evaluator suite, timing, CLI (about 5 min)
#   benchmarks/run_gpu_validation.sh bench      # benchmarks/evaluator_bench.py without the memory section, and
#                                               # what rechecks of timed calls cost (benchmarks/recheck_cost.py)
#   benchmarks/run_gpu_validation.sh compile    # a fresh compile's stages, cold and after a warm-up; the cost section
#   benchmarks/run_gpu_validation.sh sandbox    # the sandbox battery and plan tests on the GPU, then what the sandbox costs
#   benchmarks/run_gpu_validation.sh trust      # everything on trust: the sandbox battery, the reward-hack suite with the
#                                               # policy on and off, whose fault a failure is, the examples (PART=1
#                                               # or 2 runs half, for machines lent in 10-minute calls)
#   benchmarks/run_gpu_validation.sh whole      # the whole test suite (PART=1 or 2: half of it)
#   benchmarks/run_gpu_validation.sh validate   # the whole suite in calls of at most BUDGET_S (540) seconds: the trust
#                                               # set first, most telling first, then the rest; each call goes on where
#                                               # the last stopped (state in test-artifacts/gpu-validation; RESTART=1
#                                               # starts over) and writes $OUT/validation-summary.md
#   benchmarks/run_gpu_validation.sh pinned     # where page-locked host memory shows and what refuses it, for each way
#                                               # of pinning (benchmarks/pinned_probe.py; about a minute)
#   benchmarks/run_gpu_validation.sh recheck    # whether 44 rechecks catch a kernel lazy on a random tenth of its timed
#                                               # calls, and what they cost (benchmarks/recheck_catch.py; resumes)
#   benchmarks/run_gpu_validation.sh suite      # the KernelBench suite benchmark (IDS=1-10 picks problems; resumes)
#   benchmarks/run_gpu_validation.sh truth      # our corpus of GPU truth measured (resumes), the speed of light checked,
#                                               # and the estimate scored and fitted on both corpora
#   benchmarks/run_gpu_validation.sh draws      # the judge's input draws, one seed after another and side by side, on the
#                                               # Level 2 problems whose draws were slowest (benchmarks/input_draws.py)
set -uo pipefail
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/nvidia-smi.csv"
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' | tee "$OUT/versions.txt"
case "${1:-tests}" in
  tests)
    timeout "${TEST_TIMEOUT:-560}" python3 -m pytest -q -p no:cacheprovider -rs --durations=15 \
      tests/test_examples.py tests/adversarial tests/executor/test_policy.py tests/executor/test_policy_reach.py \
      2>&1 | tee "$OUT/pytest.log"
    ;;
  suites)
    timeout "${TEST_TIMEOUT:-560}" python3 -m pytest -q -p no:cacheprovider -rs --durations=15 \
      tests/executor/test_evaluator.py tests/executor/test_device_lock.py tests/executor/worker/test_timing.py \
      tests/executor/worker/test_launcher_prebuild.py tests/test_cli.py 2>&1 | tee "$OUT/pytest-suites.log"
    ;;
  bench)
    timeout 240 python3 -m adaexplore profile examples/tasks/gemm_epilogue.py examples/kernels/gemm_epilogue/correct.py \
      --compile 2>&1 | tee "$OUT/profile_compile.txt"
    timeout "${BENCH_TIMEOUT:-560}" python3 benchmarks/evaluator_bench.py \
      --only cost,repeat,backtoback,dobench,references,concurrency,cpu --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
    timeout 300 python3 benchmarks/recheck_cost.py --evals 2 2>&1 | tee "$OUT/recheck_cost.log"
    ;;
  sandbox)
    timeout "${TEST_TIMEOUT:-400}" python3 -m pytest -q -p no:cacheprovider -rs --durations=10 \
      tests/sandbox tests/executor/test_sandbox_plan.py 2>&1 | tee "$OUT/pytest-sandbox.log"
    timeout "${BENCH_TIMEOUT:-300}" python3 benchmarks/sandbox_bench.py --task examples/tasks/gemm_epilogue.py \
      --kernel examples/kernels/gemm_epilogue/correct.py --evals "${EVALS:-4}" --json "$OUT/sandbox.json" \
      2>&1 | tee "$OUT/sandbox-bench.log"
    ;;
  trust)
    # -v: each test's result is in the log as it ends, so a run cut by its time limit still names its failures
    # (xdist's summary is lost when the interrupt reaches it mid-run)
    # PART=1: the sandbox battery and the reward-hack battery; PART=2: the honest corpus and the other adversarial
    # files, the examples, whose fault a failure is, the worker's checks and patches, the sampled rechecks, cancelled
    # worker starts. Side by side on a 16-core H200 host, part 1 took 435 s with WORKERS=8 and part 2 400 s with
    # WORKERS=6; no PART: both
    case "${PART:-all}" in
      1) files="tests/sandbox tests/executor/test_sandbox_plan.py tests/adversarial/test_adversarial.py" ;;
      2) files="tests/adversarial/test_detours.py tests/adversarial/test_honest_corpus.py
                tests/adversarial/test_hopper_code.py tests/adversarial/test_worker_checks.py
                tests/test_examples.py tests/executor/test_faults.py tests/executor/worker/test_worker_checks.py
                tests/executor/worker/test_fast_math.py tests/executor/worker/test_patches.py
                tests/executor/test_evaluator.py::test_large_outputs_are_rechecked_at_sampled_positions_on_the_gpu
                tests/executor/test_evaluator.py::test_a_worker_start_cancelled_at_any_moment_leaves_nothing_running" ;;
      *) files="tests/sandbox tests/executor/test_sandbox_plan.py tests/adversarial tests/test_examples.py
                tests/executor/test_faults.py tests/executor/worker/test_worker_checks.py
                tests/executor/worker/test_fast_math.py tests/executor/worker/test_patches.py
                tests/executor/test_evaluator.py::test_large_outputs_are_rechecked_at_sampled_positions_on_the_gpu
                tests/executor/test_evaluator.py::test_a_worker_start_cancelled_at_any_moment_leaves_nothing_running" ;;
    esac
    # shellcheck disable=SC2086  # the list is split on purpose
    timeout -s INT "${TEST_TIMEOUT:-1200}" python3 -m pytest -v -p no:cacheprovider -rfEs --durations=15 \
      -n "${WORKERS:-12}" --dist loadscope $files 2>&1 | tee "$OUT/pytest-trust${PART:-}.log"
    ;;
  whole)
    # the whole test suite on the GPU; PART=1: the executor, the sandbox and the adversarial files, PART=2: the rest
    case "${PART:-all}" in
      1) files="tests/executor tests/sandbox tests/adversarial" ;;
      2) files="tests --ignore=tests/executor --ignore=tests/sandbox --ignore=tests/adversarial" ;;
      *) files="tests" ;;
    esac
    # shellcheck disable=SC2086  # the list is split on purpose
    timeout -s INT "${TEST_TIMEOUT:-1800}" python3 -m pytest -v -p no:cacheprovider -rfEs --durations=15 \
      -n "${WORKERS:-12}" --dist loadscope $files 2>&1 | tee "$OUT/pytest-whole${PART:-}.log"
    ;;
  validate)
    python3 benchmarks/gpu_validation.py --out "$OUT" --budget-s "${BUDGET_S:-540}" --workers "${WORKERS:-8}" \
      ${RESTART:+--restart}
    ;;
  pinned)
    timeout 300 python3 benchmarks/pinned_probe.py --out "$OUT" --mib "${MIB:-1024}" 2>&1 | tee "$OUT/pinned_probe.txt"
    ;;
  recheck)
    # the rows are kept beside the checkout between calls, and copied to $OUT
    mkdir -p test-artifacts/recheck-catch
    timeout "${BENCH_TIMEOUT:-560}" python3 benchmarks/recheck_catch.py --out test-artifacts/recheck-catch \
      --budget-s "${BUDGET_S:-480}" 2>&1 | tail -"${TAIL:-8}"
    cp test-artifacts/recheck-catch/recheck_catch.jsonl "$OUT/"
    ;;
  suite)
    # LEVEL_DIR: a KernelBench level; SUITE_HOME keeps the reference timings between calls that split it
    timeout "${BENCH_TIMEOUT:-560}" python3 benchmarks/kernelbench_suite.py \
      --level-dir "${LEVEL_DIR:-../shared/data/kernelbench/level2}" --ids "${IDS:-1-100}" \
      --out "$OUT/suite.jsonl" --home "${SUITE_HOME:-$OUT/suite-home}" 2>&1 | tail -3
    python3 benchmarks/kernelbench_suite.py --summarize "$OUT/suite.jsonl" | tee "$OUT/suite-summary.txt"
    ;;
  truth)
    # ONLY=level2/12 measures some kernels; it resumes from benchmarks/gpu_truth/truth.jsonl, copied to $OUT;
    # KERNELBENCH_DIR: the folder of KernelBench's levels where the shared data is not beside the checkout
    timeout "${BENCH_TIMEOUT:-560}" python3 benchmarks/gpu_truth/measure.py ${ONLY:+--only "$ONLY"} \
      ${KERNELBENCH_DIR:+--kernelbench "$KERNELBENCH_DIR"} 2>&1 | tail -"${TAIL:-12}"
    cp benchmarks/gpu_truth/truth.jsonl benchmarks/gpu_truth/provenance.json "$OUT/" 2>/dev/null
    python3 benchmarks/sol_check.py ${KERNELBENCH_DIR:+--kernelbench "$KERNELBENCH_DIR"} | tee "$OUT/sol_check.txt"
    ;;
  draws)
    level=${LEVEL_DIR:-../shared/data/kernelbench/level2}
    timeout "${BENCH_TIMEOUT:-400}" python3 benchmarks/input_draws.py "$level"/10_*.py "$level"/19_*.py \
      "$level"/4_*.py "$level"/26_*.py 2>&1 | tee "$OUT/input_draws.txt"
    ;;
  compile)
    for round in 1 2 3; do
      python3 benchmarks/compile_stages.py
      python3 benchmarks/compile_stages.py --warm
    done 2>&1 | grep '^{' | tee "$OUT/compile_stages.jsonl"
    timeout "${BENCH_TIMEOUT:-400}" python3 benchmarks/evaluator_bench.py --only cost --evals 9 \
      --json "$OUT/cost.json" 2>&1 | tee "$OUT/cost.log"
    ;;
esac
