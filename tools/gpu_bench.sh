for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import grilly.backends.vulkan as v; assert v.VULKAN_AVAILABLE" 2>/dev/null || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 bench/bench_gpu.py --device vulkan --json $OUT/gpu_bench.json 2>&1 | tail -12
GRILLY_TEST_DEVICES=vulkan:0 timeout 300 python3 -m pytest -q -p no:cacheprovider -x tests/test_vulkan_elementwise.py tests/test_vulkan_runtime.py tests/test_vulkan_kernels.py 2>&1 | tail -4
