# Runs on the GPU machine (docs/benchmarks.md, ../shared/GPU.md), in the repository root, with
# git-ignored folders carried along: .gl/ (Vulkan loader + GL dispatch .debs), .whl/ (cffi,
# pycparser, vulkan, ndindex; pytest-json-report, pytest-metadata, pytest-xdist, execnet for
# conformance) and, for `conformance`, .aat/ (array-api-tests with its spec submodule, plus
# plugins/aat_seed.py). Usage: bash tools/gpu_bench.sh bench|profile|accuracy|conformance|kit|tests|run
# (results in $OUT). conformance reads AAT_MAX_EXAMPLES (20), AAT_TIMEOUT (280 s per pass),
# AAT_PASSES ("default nodeadline") and AAT_ARGS (extra pytest arguments, e.g. a subset of files).
set -u
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import grilly.backends.vulkan as v; assert v.VULKAN_AVAILABLE" 2>/dev/null \
  || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
case "${1:-bench}" in
  bench)
    python3 bench/bench_gpu.py --device vulkan --json "$OUT/gpu_bench.json" 2>&1 | tail -18
    python3 bench/bench_train.py --device vulkan --json "$OUT/train_vulkan.json" 2>&1 | tail -8 ;;
  conformance)
    # with the suite's defaults (Hypothesis' 800 ms deadline also times first-call kernel
    # compiles in each fresh worker), and/or with --disable-deadline (behaviour only)
    mx=${AAT_MAX_EXAMPLES:-20}
    for pass in ${AAT_PASSES:-default nodeadline}; do
      extra=""; [ "$pass" = nodeadline ] && extra=--disable-deadline
      log="$OUT/conformance_${mx}_${pass}.log"
      (cd .aat && ARRAY_API_TESTS_MODULE=grilly GRILLY_DEVICE=vulkan PYTHONPATH="$PYTHONPATH:$PWD/plugins" \
        timeout "${AAT_TIMEOUT:-280}" python3 -m pytest -q -p no:cacheprovider --max-examples "$mx" \
        --derandomize -p aat_seed -n "${AAT_WORKERS:-8}" -rf --tb=line $extra ${AAT_ARGS:-array_api_tests/} \
        > "$log" 2>&1)
      grep -E "^FAILED|passed|failed" "$log" | tail -25
    done ;;
  accuracy)
    # worst float32 ulp per function (10^6 points per range), then what accuracy costs
    python3 tests/test_float_accuracy.py vulkan:0 2>&1 | tee "$OUT/accuracy.txt"
    python3 bench/bench_transcendental.py --json "$OUT/transcendental.json" 2>&1 | tail -8 ;;
  profile)
    python3 tools/gpu_profile.py --json "$OUT/gpu_profile.json" 2>&1 | tail -60 ;;
  kit)
    # the backend conformance kit (grilly.testing) on the GPU, checked mode on
    python3 -m grilly.cli conformance vulkan --json "$OUT/kit_vulkan.json" 2>&1 | tail -24 ;;
  run)
    # any command in this environment: bash tools/gpu_bench.sh run 'python3 bench/x.py ...'
    shift; eval "$@" ;;
  tests)
    GRILLY_TEST_DEVICES=vulkan GRILLY_REQUIRE_VULKAN=1 timeout 560 python3 -m pytest -q \
      -p no:cacheprovider tests 2>&1 | tail -15 ;;
esac
