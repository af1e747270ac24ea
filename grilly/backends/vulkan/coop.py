"""Tensor cores: whether a device can run float16 matmuls on them, and the features that turn
them on (VK_KHR_cooperative_matrix: 16x16x16 float16 -> float32 products at subgroup scope,
shaders/linalg/hgemm_coop.comp). Devices without them run the float16 variants of the sgemm
shader; ``grilly info`` says which, under ``matmul_float16``.

VK_NV_cooperative_matrix2 (workgroup-scope tiles the driver stages itself) was measured on the
H100 too, and ran no faster than the subgroup-scope shader (150-180 TFLOP/s at 4096^3 for
either), so grilly keeps the one shader that every vendor with cooperative matrices runs.
"""
from __future__ import annotations

try:
    from vulkan._vulkan import ffi, lib
except Exception:   # no loader: runtime.py reports it; nothing here is reached
    ffi = lib = None


def probe(phys) -> bool:
    """Whether float16 matmuls can run on tensor cores: VK_KHR_cooperative_matrix with 16x16x16
    float16 x float16 -> float32 products at subgroup scope, 32-wide subgroups, shaderFloat16 and
    the Vulkan memory model."""
    need = ("VK_KHR_cooperative_matrix", "VK_KHR_vulkan_memory_model")
    if any(e not in phys.extensions for e in need) or phys.subgroup_size != 32 \
            or not phys.features["shaderFloat16"]:
        return False
    cm = ffi.new("VkPhysicalDeviceCooperativeMatrixFeaturesKHR*", {
        "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR})
    mm = ffi.new("VkPhysicalDeviceVulkanMemoryModelFeatures*", {
        "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES, "pNext": cm})
    feats = ffi.new("VkPhysicalDeviceFeatures2*", {
        "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": mm})
    lib.vkGetPhysicalDeviceFeatures2(phys.handle, feats)
    if not (cm.cooperativeMatrix and mm.vulkanMemoryModel):
        return False
    f16, f32 = lib.VK_COMPONENT_TYPE_FLOAT16_KHR, lib.VK_COMPONENT_TYPE_FLOAT32_KHR
    return (16, 16, 16, f16, f16, f32, f32, lib.VK_SCOPE_SUBGROUP_KHR) in _shapes(phys)


# VK_KHR_shader_bfloat16 (extension 142) is newer than the vulkan package's headers: its
# features struct is laid out by hand (sType, pNext, then three VkBool32 at byte 16), its enums
# are the extension's own numbers
BF16_FEATURES = 1000141000   # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR
BF16_COMPONENT = 1000141000  # VK_COMPONENT_TYPE_BFLOAT16_KHR


def _bf16_features(pnext=None, enable: bool = False):
    """A VkPhysicalDeviceShaderBfloat16FeaturesKHR (type, dot product, cooperative matrix: the
    uint32s at 4, 5, 6), zeroed or with the type and cooperative-matrix features on."""
    raw = ffi.new("uint64_t[4]")   # 32 bytes, 8-aligned like the struct
    words = ffi.cast("uint32_t *", raw)
    words[0] = BF16_FEATURES
    ffi.cast("void **", raw)[1] = ffi.NULL if pnext is None else ffi.cast("void *", pnext)
    if enable:
        words[4] = words[6] = 1
    return raw


def probe_bf16(phys) -> bool:
    """Whether bfloat16 matmuls can run on tensor cores: float16's requirements (``probe``),
    VK_KHR_shader_bfloat16 with its cooperative-matrix feature, and 16x16x16 bfloat16 x
    bfloat16 -> float32 products at subgroup scope."""
    if not phys.coop_f16 or "VK_KHR_shader_bfloat16" not in phys.extensions:
        return False
    bf = _bf16_features()
    feats = ffi.new("VkPhysicalDeviceFeatures2*", {
        "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": ffi.cast("void *", bf)})
    lib.vkGetPhysicalDeviceFeatures2(phys.handle, feats)
    words = ffi.cast("uint32_t *", bf)
    if not (words[4] and words[6]):   # shaderBFloat16Type, shaderBFloat16CooperativeMatrix
        return False
    return (16, 16, 16, BF16_COMPONENT, BF16_COMPONENT, lib.VK_COMPONENT_TYPE_FLOAT32_KHR,
            lib.VK_COMPONENT_TYPE_FLOAT32_KHR, lib.VK_SCOPE_SUBGROUP_KHR) in _shapes(phys)


def _shapes(phys) -> set:
    """The device's cooperative-matrix products as (M, N, K, A, B, C, result, scope) tuples."""
    fn = lib.vkGetInstanceProcAddr(phys.instance.handle,
                                   b"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
    if fn == ffi.NULL:
        return set()
    get = ffi.cast("PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR", fn)
    n = ffi.new("uint32_t*")
    get(phys.handle, n, ffi.NULL)
    props = ffi.new("VkCooperativeMatrixPropertiesKHR[]", n[0])
    for i in range(n[0]):
        props[i].sType = lib.VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
    if get(phys.handle, n, props) != 0:
        return set()
    return {(p.MSize, p.NSize, p.KSize, p.AType, p.BType, p.CType, p.ResultType, p.scope)
            for p in props[0:n[0]]}


def describe(phys, dtype: str = "float16") -> str:
    """The float16 (or bfloat16) matmul path of a device, for ``grilly info``."""
    if dtype == "bfloat16":
        return ("tensor cores (VK_KHR_cooperative_matrix, VK_KHR_shader_bfloat16)"
                if phys.coop_bf16 else "float32 matmul, rounded")
    return ("tensor cores (VK_KHR_cooperative_matrix)" if phys.coop_f16
            else "shader (float32 arithmetic)")


def extensions(phys) -> list[str]:
    """Device extensions to enable for tensor-core matmuls."""
    out = ["VK_KHR_cooperative_matrix", "VK_KHR_vulkan_memory_model"] if phys.coop_f16 else []
    return out + (["VK_KHR_shader_bfloat16"] if phys.coop_bf16 else [])


def feature_chain(phys, pnext, keep: list):
    """``pnext`` extended with the features hgemm_coop.comp declares (kept alive in ``keep``)."""
    if not phys.coop_f16:
        return pnext
    cm = ffi.new("VkPhysicalDeviceCooperativeMatrixFeaturesKHR*", {
        "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
        "cooperativeMatrix": 1, "pNext": pnext})
    mm = ffi.new("VkPhysicalDeviceVulkanMemoryModelFeatures*", {
        "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
        "vulkanMemoryModel": 1, "pNext": cm})
    h16 = ffi.new("VkPhysicalDeviceShaderFloat16Int8Features*", {
        "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
        "shaderFloat16": 1, "pNext": mm})
    # the caller's pnext struct is reachable only through this chain now: keep it alive too
    keep += [pnext, cm, mm, h16]
    if not phys.coop_bf16:
        return h16
    bf = _bf16_features(h16, enable=True)
    keep.append(bf)
    return ffi.cast("void *", bf)
