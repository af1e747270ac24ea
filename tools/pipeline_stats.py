"""What the driver made of shader variants: registers, shared memory, binary size
(VK_KHR_pipeline_executable_properties; NVIDIA's driver has it, lavapipe does not).

    python tools/pipeline_stats.py sgemm_nn_float32:0,1 sgemm_nn_w256_float32:0,1
    python tools/pipeline_stats.py --spv DIR sgemm_nn_float32:0,1   # SPIR-V from DIR first

Each argument is a variant and, after a colon, its specialization constants (what the backend
passes: ``(0, 1)`` for most kernels). A register count above 65536 / (256 x 2) = 128 leaves one
256-invocation workgroup per SM on NVIDIA GPUs (docs/vulkan.md, "matmul"). A diagnostic for
the GPU machine (tools/gpu_bench.sh run ...), not a test.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXT = "VK_KHR_pipeline_executable_properties"


def _enable_extension() -> None:
    """Have the device that grilly opens enable EXT and its feature (where the driver has it)."""
    from grilly.backends.vulkan import coop
    from grilly.backends.vulkan.runtime import ffi, lib

    extensions, chain = coop.extensions, coop.feature_chain

    def more_extensions(phys) -> list:
        return extensions(phys) + [EXT]

    def more_features(phys, pnext, keep: list):
        if EXT in phys.extensions:
            f = ffi.new("VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR*", {
                "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
                "pipelineExecutableInfo": 1, "pNext": pnext})
            keep.append(f)
            pnext = f
        return chain(phys, pnext, keep)

    coop.extensions, coop.feature_chain = more_extensions, more_features


def _stats(ctx, code: bytes, spec: tuple) -> list[tuple[str, object]]:
    """(name, value) of each statistic of the compute pipeline built from ``code``."""
    from grilly.backends.vulkan.runtime import ffi, lib

    dev = ctx.device
    cbuf = ffi.new("char[]", code)
    mod = ffi.new("VkShaderModule*")
    lib.vkCreateShaderModule(dev, ffi.new("VkShaderModuleCreateInfo*", {
        "sType": lib.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, "codeSize": len(code),
        "pCode": ffi.cast("uint32_t*", cbuf)}), ffi.NULL, mod)
    entries = ffi.new("VkSpecializationMapEntry[]", max(len(spec), 1))
    for i in range(len(spec)):
        entries[i].constantID, entries[i].offset, entries[i].size = i, 4 * i, 4
    data = ffi.new("int32_t[]", list(spec) or [0])
    sinfo = ffi.new("VkSpecializationInfo*", {"mapEntryCount": len(spec), "pMapEntries": entries,
                                              "dataSize": 4 * len(spec), "pData": data})
    main = ffi.new("char[]", b"main")
    cinfo = ffi.new("VkComputePipelineCreateInfo*", {
        "sType": lib.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, "layout": ctx.layout,
        "flags": lib.VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR})
    st = cinfo.stage
    st.sType = lib.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
    st.stage, st.module, st.pName, st.pSpecializationInfo = (
        lib.VK_SHADER_STAGE_COMPUTE_BIT, mod[0], main, sinfo)
    pipe = ffi.new("VkPipeline*")
    res = lib.vkCreateComputePipelines(dev, ffi.NULL, 1, cinfo, ffi.NULL, pipe)
    lib.vkDestroyShaderModule(dev, mod[0], ffi.NULL)
    if res != 0:
        raise RuntimeError(f"vkCreateComputePipelines failed with VkResult {res}")
    get = ffi.cast("PFN_vkGetPipelineExecutableStatisticsKHR",
                   lib.vkGetDeviceProcAddr(dev, b"vkGetPipelineExecutableStatisticsKHR"))
    info = ffi.new("VkPipelineExecutableInfoKHR*", {
        "sType": lib.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, "pipeline": pipe[0],
        "executableIndex": 0})
    n = ffi.new("uint32_t*")
    get(dev, info, n, ffi.NULL)
    out = ffi.new("VkPipelineExecutableStatisticKHR[]", n[0])
    for i in range(n[0]):
        out[i].sType = lib.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR
    get(dev, info, n, out)
    lib.vkDestroyPipeline(dev, pipe[0], ffi.NULL)
    rows = []
    for i in range(n[0]):
        s, fmt = out[i], out[i].format   # 0 bool32, 1 int64, 2 uint64, 3 float64
        value = (s.value.b32, s.value.i64, s.value.u64, s.value.f64)[fmt]
        rows.append((ffi.string(s.name).decode(), value))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="+", help="VARIANT[:spec,...]")
    ap.add_argument("--spv", type=Path, help="a directory whose .spv files are read first")
    args = ap.parse_args(argv)
    _enable_extension()
    import grilly as gp
    from grilly.backends.vulkan import runtime

    ctx = gp.backends.registry.device("vulkan").ctx
    if EXT not in ctx.phys.extensions:
        print(f"pipeline_stats: {ctx.phys.name} does not have {EXT}", file=sys.stderr)
        return 1
    for arg in args.variants:
        name, _, sp = arg.partition(":")
        spec = tuple(int(v) for v in sp.split(",")) if sp else ()
        path = args.spv / f"{name}.spv" if args.spv else None
        code = path.read_bytes() if path is not None and path.exists() else None
        if code is None:
            code = ctx.load_spirv(name)
        else:
            for bits in ctx.phys.denorm_modes():
                code = runtime.spirv.add_denorm_preserve(code, bits)
        print(f"{arg}: " + ", ".join(f"{k}={v}" for k, v in _stats(ctx, code, spec)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
