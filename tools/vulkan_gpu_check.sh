# Run the Vulkan tests on the GPU machine (see /work/shared/GPU.md): carry .gl and .whl, then `bash tools/vulkan_gpu_check.sh`.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/site/grilly_ep-0.dist-info
printf 'Metadata-Version: 2.1\nName: grilly-ep\nVersion: 0\n' > /tmp/site/grilly_ep-0.dist-info/METADATA
printf '[grilly.backends]\ncpu = grilly.backends.cpu_numba.plugin\nvulkan = grilly.backends.vulkan.plugin\n' > /tmp/site/grilly_ep-0.dist-info/entry_points.txt
python3 -c "import grilly.backends.vulkan as v; print(v.VULKAN_AVAILABLE, v.UNAVAILABLE_REASON)" 2>&1 | tail -3
if ! python3 -c "import grilly.backends.vulkan as v; assert v.VULKAN_AVAILABLE" 2>/dev/null; then export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; fi
python3 - <<'PY'
import grilly as gp, numpy as np, time
print(gp.devices(), gp.default_device())
d = gp.backends.registry.device("vulkan")
print(d.backend.info(d))
n = 1 << 24
x = gp.asarray(np.ones(n, np.float32), device=d); y = x + x; np.asarray(y[:2])
for k in range(3):
    t = time.perf_counter()
    for _ in range(10): y = x + x
    np.asarray(y[:2]); dt = (time.perf_counter() - t) / 10
    print(f"add 16M f32: {dt*1e3:.2f} ms, {3*4*n/dt/1e9:.0f} GB/s")
import torch
a = torch.ones(n, device="cuda"); torch.cuda.synchronize(); t = time.perf_counter()
for _ in range(10): b = a + a
torch.cuda.synchronize(); dt = (time.perf_counter() - t) / 10
print(f"torch add 16M f32: {dt*1e3:.3f} ms, {3*4*n/dt/1e9:.0f} GB/s")
PY
GRILLY_TEST_DEVICES=vulkan:0 python3 -m pytest tests/test_vulkan_elementwise.py tests/test_vulkan_runtime.py -q -p no:cacheprovider -x 2>&1 | tail -15
