# Runs on the GPU machine (docs/benchmarks.md, ../shared/GPU.md), in the repository root, with
# git-ignored folders carried along: .gl/ (Vulkan loader + GL dispatch .debs), .whl/ (cffi,
# pycparser, vulkan, ndindex; pytest-json-report, pytest-metadata, pytest-xdist, execnet for
# conformance) and, for `conformance`, .aat/ (array-api-tests with its spec submodule, plus
# plugins/aat_seed.py). Usage: bash tools/gpu_bench.sh bench|profile|conformance|tests (results in $OUT)
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
    # twice: with the suite's defaults (Hypothesis' 800 ms deadline also times first-call kernel
    # compiles in each fresh worker), then with --disable-deadline (behaviour only)
    for extra in "" --disable-deadline; do
      log="$OUT/conformance_h100${extra:+_nodeadline}.log"
      (cd .aat && ARRAY_API_TESTS_MODULE=grilly GRILLY_DEVICE=vulkan PYTHONPATH="$PYTHONPATH:$PWD/plugins" \
        timeout 280 python3 -m pytest -q -p no:cacheprovider --max-examples 20 --derandomize -p aat_seed \
        -n 8 -rf --tb=line $extra array_api_tests/ > "$log" 2>&1)
      grep -E "^FAILED|passed|failed" "$log" | tail -25
    done ;;
  profile)
    python3 tools/gpu_profile.py --json "$OUT/gpu_profile.json" 2>&1 | tail -60 ;;
  tests)
    GRILLY_TEST_DEVICES=vulkan GRILLY_REQUIRE_VULKAN=1 timeout 560 python3 -m pytest -q \
      -p no:cacheprovider tests 2>&1 | tail -15 ;;
esac
