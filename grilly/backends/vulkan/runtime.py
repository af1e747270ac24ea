"""The Vulkan runtime: instance, one Context per physical device (logical device, compute
queue, command recorder, pipelines), built on ``vulkan.lib``/``vulkan.ffi`` directly: the
cffi wrapper's structs cost about 4 us each, far too much for the dispatch path."""
from __future__ import annotations

import atexit
import hashlib
import os
import threading
from pathlib import Path

try:
    from vulkan._vulkan import ffi, lib
    IMPORT_ERROR = ""
except Exception as e:  # no loader (libvulkan.so) or no vulkan package
    ffi = lib = None
    IMPORT_ERROR = f"the Vulkan loader could not be loaded ({type(e).__name__}: {e})"

from . import addresses, coop, spirv
from .variants import SPV_DIR, per_op_variants

API_1_1 = (1 << 22) | (1 << 12)
MAX_BINDINGS = 4     # buffers of a kernel
FUSED_BINDINGS = 8   # buffers of the fused elementwise kernel (where the device allows 8)
PUSH_BYTES = 128
# device type -> rank: a real GPU wins the default device over the CPU backend, a CPU
# implementation of Vulkan (lavapipe) never does (see VulkanBackend.priority)
RANK = {2: 10, 1: 8, 3: 6, 4: 0, 0: 0}  # discrete, integrated, virtual, cpu, other
TYPE_NAMES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}


class VulkanError(RuntimeError):
    """A Vulkan call failed."""


_RESULTS = {-1: "out of host memory", -2: "out of device memory", -3: "initialization failed",
            -4: "the device was lost (a driver reset or a hung shader); arrays on it are gone, "
                "restart the process", -13: "a pipeline or shader could not be compiled"}


def check(res: int, what: str) -> None:
    if res != 0:
        why = _RESULTS.get(res, "")
        raise VulkanError(f"vulkan: {what} failed with VkResult {res}" + (f": {why}" if why else ""))


def _s(cdata) -> str:
    return ffi.string(cdata).decode(errors="replace")


class Instance:
    """The VkInstance and the physical devices it sees."""

    def __init__(self):
        app = ffi.new("VkApplicationInfo*", {"sType": lib.VK_STRUCTURE_TYPE_APPLICATION_INFO,
                                              "apiVersion": API_1_1})
        name = ffi.new("char[]", b"grilly")
        app.pApplicationName = name
        info = ffi.new("VkInstanceCreateInfo*", {"sType": lib.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                                  "pApplicationInfo": app})
        out = ffi.new("VkInstance*")
        check(lib.vkCreateInstance(info, ffi.NULL, out), "vkCreateInstance")
        self.handle = out[0]
        n = ffi.new("uint32_t*")
        check(lib.vkEnumeratePhysicalDevices(self.handle, n, ffi.NULL), "vkEnumeratePhysicalDevices")
        arr = ffi.new("VkPhysicalDevice[]", n[0])
        check(lib.vkEnumeratePhysicalDevices(self.handle, n, arr), "vkEnumeratePhysicalDevices")
        self.physical = [PhysicalDevice(self, arr[i], i) for i in range(n[0])]


class PhysicalDevice:
    """Capabilities of one physical device, probed once."""

    def __init__(self, inst: Instance, handle, index: int):
        self.instance, self.handle, self.index = inst, handle, index
        props = ffi.new("VkPhysicalDeviceProperties2*",
                        {"sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2})
        fc = ffi.new("VkPhysicalDeviceFloatControlsProperties*",
                     {"sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES})
        sub = ffi.new("VkPhysicalDeviceSubgroupProperties*",
                      {"sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                       "pNext": fc})
        props.pNext = sub
        lib.vkGetPhysicalDeviceProperties2(handle, props)
        p = props.properties
        lim = p.limits
        self.name = _s(p.deviceName)
        self.type = p.deviceType
        self.uuid = bytes(ffi.buffer(p.pipelineCacheUUID, 16)).hex()
        self.api = f"{p.apiVersion >> 22}.{(p.apiVersion >> 12) & 0x3ff}.{p.apiVersion & 0xfff}"
        self.max_storage = lim.maxStorageBufferRange
        self.min_offset_align = lim.minStorageBufferOffsetAlignment
        self.max_groups = lim.maxComputeWorkGroupCount[0]
        self.max_group_counts = tuple(lim.maxComputeWorkGroupCount[i] for i in range(3))
        self.max_shared = lim.maxComputeSharedMemorySize
        self.timestamp_period = lim.timestampPeriod   # nanoseconds per timestamp tick
        self.max_stage_buffers = lim.maxPerStageDescriptorStorageBuffers
        self.subgroup_size = sub.subgroupSize
        # the shaders ask for IEEE inf/NaN/signed zeros (shaders/common.glsl)
        self.ieee_preserve = {"float32": bool(fc.shaderSignedZeroInfNanPreserveFloat32),
                              "float64": bool(fc.shaderSignedZeroInfNanPreserveFloat64)}
        # IEEE subnormals on request (DenormPreserve), per float width: see denorm_modes()
        self.denorm_preserve = {16: bool(fc.shaderDenormPreserveFloat16),
                                32: bool(fc.shaderDenormPreserveFloat32),
                                64: bool(fc.shaderDenormPreserveFloat64)}
        self.denorm_independence = int(fc.denormBehaviorIndependence)
        self.subgroup_arithmetic = bool(
            sub.supportedOperations & lib.VK_SUBGROUP_FEATURE_ARITHMETIC_BIT
            and sub.supportedStages & lib.VK_SHADER_STAGE_COMPUTE_BIT)
        f1608 = ffi.new("VkPhysicalDeviceShaderFloat16Int8Features*",
                        {"sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES})
        f8 = ffi.new("VkPhysicalDevice8BitStorageFeatures*",
                     {"sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
                      "pNext": f1608})
        f16 = ffi.new("VkPhysicalDevice16BitStorageFeatures*",
                      {"sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                       "pNext": f8})
        feats = ffi.new("VkPhysicalDeviceFeatures2*",
                        {"sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": f16})
        lib.vkGetPhysicalDeviceFeatures2(handle, feats)
        f = feats.features
        self.features = {
            "shaderInt64": bool(f.shaderInt64), "shaderFloat64": bool(f.shaderFloat64),
            "shaderInt16": bool(f.shaderInt16),
            "storageBuffer8BitAccess": bool(f8.storageBuffer8BitAccess),
            "storageBuffer16BitAccess": bool(f16.storageBuffer16BitAccess),
            "shaderFloat16": bool(f1608.shaderFloat16), "shaderInt8": bool(f1608.shaderInt8),
        }
        n = ffi.new("uint32_t*")
        lib.vkEnumerateDeviceExtensionProperties(handle, ffi.NULL, n, ffi.NULL)
        ext = ffi.new("VkExtensionProperties[]", n[0])
        lib.vkEnumerateDeviceExtensionProperties(handle, ffi.NULL, n, ext)
        self.extensions = {_s(ext[i].extensionName) for i in range(n[0])}
        mp = ffi.new("VkPhysicalDeviceMemoryProperties*")
        lib.vkGetPhysicalDeviceMemoryProperties(handle, mp)
        self.heaps = [(mp.memoryHeaps[i].size, mp.memoryHeaps[i].flags)
                      for i in range(mp.memoryHeapCount)]
        self.mem_types = [(mp.memoryTypes[i].propertyFlags, mp.memoryTypes[i].heapIndex)
                          for i in range(mp.memoryTypeCount)]
        self.queue_family = self._compute_family()
        self.coop_f16 = coop.probe(self)   # float16 matmuls on tensor cores (vulkan/coop.py)
        self.coop_bf16 = coop.probe_bf16(self)   # and bfloat16 ones
        self.compute_units = self._compute_units()
        self.device_addresses = addresses.probe(self)   # VK_KHR_buffer_device_address

    def _compute_units(self) -> int | None:
        """Streaming multiprocessors (VK_NV_shader_sm_builtins) or compute units
        (VK_AMD_shader_core_properties) where the driver reports them, else None: how many
        workgroups run at once, which sizes a split product's slices (vulkan/linalg.py)."""
        nv = "VK_NV_shader_sm_builtins" in self.extensions
        if nv:
            p = ffi.new("VkPhysicalDeviceShaderSMBuiltinsPropertiesNV*", {
                "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV})
        elif "VK_AMD_shader_core_properties" in self.extensions:
            p = ffi.new("VkPhysicalDeviceShaderCorePropertiesAMD*", {
                "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD})
        else:
            return None
        props = ffi.new("VkPhysicalDeviceProperties2*", {
            "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, "pNext": p})
        lib.vkGetPhysicalDeviceProperties2(self.handle, props)
        n = p.shaderSMCount if nv else (p.shaderEngineCount * p.shaderArraysPerEngineCount
                                        * p.computeUnitsPerShaderArray)
        return int(n) or None

    def memory_budget(self) -> list | None:
        """(budget, usage) bytes per memory heap from VK_EXT_memory_budget, or None without it."""
        if "VK_EXT_memory_budget" not in self.extensions:
            return None
        b = ffi.new("VkPhysicalDeviceMemoryBudgetPropertiesEXT*", {
            "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT})
        mp = ffi.new("VkPhysicalDeviceMemoryProperties2*", {
            "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, "pNext": b})
        lib.vkGetPhysicalDeviceMemoryProperties2(self.handle, mp)
        return [(b.heapBudget[i], b.heapUsage[i]) for i in range(len(self.heaps))]

    def _compute_family(self) -> int:
        n = ffi.new("uint32_t*")
        lib.vkGetPhysicalDeviceQueueFamilyProperties(self.handle, n, ffi.NULL)
        qf = ffi.new("VkQueueFamilyProperties[]", n[0])
        lib.vkGetPhysicalDeviceQueueFamilyProperties(self.handle, n, qf)
        fams = [i for i in range(n[0]) if qf[i].queueFlags & lib.VK_QUEUE_COMPUTE_BIT]
        # a compute-only family is the dedicated async-compute queue on discrete GPUs
        pure = [i for i in fams if not qf[i].queueFlags & lib.VK_QUEUE_GRAPHICS_BIT]
        return (pure or fams or [-1])[0]

    def missing(self) -> list[str]:
        """What grilly requires that this device lacks (empty when usable)."""
        need = ["storageBuffer8BitAccess", "storageBuffer16BitAccess"]
        out = [f for f in need if not self.features[f]]
        if "VK_KHR_push_descriptor" not in self.extensions:
            out.append("VK_KHR_push_descriptor")
        if self.queue_family < 0:
            out.append("a compute queue")
        return out

    def denorm_modes(self) -> tuple[int, ...]:
        """Float widths whose shaders ask for DenormPreserve: float32 wherever the device offers
        it (a driver may otherwise flush subnormals, as NVIDIA's does), widths the device's
        denormBehaviorIndependence ties to float32 with it, or none where that cannot be met."""
        ok = self.denorm_preserve
        if not ok[32]:
            return ()
        if self.denorm_independence == 2:   # NONE: every width alike
            return (16, 32, 64) if ok[16] and ok[64] else ()
        return (32,)  # 32_BIT_ONLY (16 and 64 alike, here both left as they are) or ALL

    def info(self) -> dict:
        return {
            "name": self.name, "type": TYPE_NAMES.get(self.type, "other"), "api": self.api,
            **self.features, "subgroup_size": self.subgroup_size,
            "subgroup_arithmetic": self.subgroup_arithmetic,
            "signed_zero_inf_nan_preserve": self.ieee_preserve,
            "denorm_preserve": {f"float{b}": v for b, v in self.denorm_preserve.items()},
            "denorm_preserve_requested": [f"float{b}" for b in self.denorm_modes()],
            "compute_units": self.compute_units,
            # buffers reached by address: the optimizer step over all parameters in one dispatch
            "buffer_device_address": self.device_addresses,
            "maxComputeWorkGroupCount": list(self.max_group_counts),
            "maxStorageBufferRange": self.max_storage,
            "maxComputeSharedMemorySize": self.max_shared,
            "memory_heaps": [{"bytes": s, "device_local": bool(fl & 1)} for s, fl in self.heaps],
            "memory_budget": [{"budget": b, "usage": u} for b, u in self.memory_budget() or ()],
            "cooperative_matrix": "VK_KHR_cooperative_matrix" in self.extensions,
            "cooperative_matrix2": "VK_NV_cooperative_matrix2" in self.extensions,
            "matmul_float16": coop.describe(self),
            "matmul_bfloat16": coop.describe(self, "bfloat16"),
            "shader_float16_int8": "VK_KHR_shader_float16_int8" in self.extensions,
        }


def _cache_path(uuid: str) -> Path:
    base = os.environ.get("GRILLY_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "grilly")
    return Path(base) / f"vulkan-pipelines-{uuid}.bin"


class Context:
    """A logical device on one physical device: queue, recorder, layout, pipelines, memory."""

    def __init__(self, phys: PhysicalDevice, lock=None):
        self.phys = phys
        # the device's re-entrant lock (VulkanDevice.lock): held around everything that touches
        # the recorder, the fused run, the pool, staging or the pipeline dict
        self.lock = lock if lock is not None else threading.RLock()
        self._keep = []
        self.n_uploads = self.n_downloads = 0   # host transfers (gp.device_stats)
        prio = ffi.new("float[]", [1.0])
        qinfo = ffi.new("VkDeviceQueueCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
            "queueFamilyIndex": phys.queue_family, "queueCount": 1, "pQueuePriorities": prio})
        want = ["VK_KHR_push_descriptor", "VK_KHR_8bit_storage", "VK_KHR_16bit_storage",
                "VK_KHR_shader_float16_int8", "VK_KHR_storage_buffer_storage_class",
                "VK_EXT_memory_budget", "VK_KHR_shader_float_controls"]
        want += coop.extensions(phys)
        want += [addresses.EXTENSION] if phys.device_addresses else []
        names = [ffi.new("char[]", e.encode()) for e in want if e in phys.extensions]
        enames = ffi.new("char*[]", names)
        f8 = ffi.new("VkPhysicalDevice8BitStorageFeatures*", {
            "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
            "storageBuffer8BitAccess": 1})
        f16 = ffi.new("VkPhysicalDevice16BitStorageFeatures*", {
            "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
            "storageBuffer16BitAccess": 1, "pNext": f8})
        f16 = coop.feature_chain(phys, f16, self._keep)
        f16 = addresses.feature_chain(phys, f16, self._keep)
        feats = ffi.new("VkPhysicalDeviceFeatures2*", {
            "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": f16})
        ff = phys.features
        feats.features.shaderInt64 = ff["shaderInt64"]
        feats.features.shaderFloat64 = ff["shaderFloat64"]
        feats.features.shaderInt16 = ff["shaderInt16"]
        dinfo = ffi.new("VkDeviceCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, "pNext": feats,
            "queueCreateInfoCount": 1, "pQueueCreateInfos": qinfo,
            "enabledExtensionCount": len(names), "ppEnabledExtensionNames": enames})
        out = ffi.new("VkDevice*")
        check(lib.vkCreateDevice(phys.handle, dinfo, ffi.NULL, out), f"vkCreateDevice on {phys.name}")
        self.device = dev = out[0]
        q = ffi.new("VkQueue*")
        lib.vkGetDeviceQueue(dev, phys.queue_family, 0, q)
        self.queue = q[0]
        # (memory.Chunk gives every chunk an address where the device has them)
        self.get_buffer_address = addresses.getter(dev) if phys.device_addresses else None
        # the descriptor set layout has room for the fused kernel's buffers where the device
        # allows them (the Vulkan minimum is 4); elementwise fusion is off otherwise
        self.bindings = FUSED_BINDINGS if phys.max_stage_buffers >= FUSED_BINDINGS else MAX_BINDINGS
        fn = lib.vkGetDeviceProcAddr(dev, b"vkCmdPushDescriptorSetKHR")
        self.push_descriptors = ffi.cast("PFN_vkCmdPushDescriptorSetKHR", fn)
        self._make_layout()
        self._make_pipeline_cache()
        self.pipelines: dict = {}
        # (variant, op, flat pattern, n, *offsets) -> (pipeline, push constants, items)
        # of an elementwise dispatch (vulkan/kernels.py dispatch_flat)
        self.flat_calls: dict = {}
        self.spirv: dict = {}
        # pool, recorder, staging and fuser are attached by vulkan/backend.py (open_context),
        # which sits above the modules that define them
        self.pool = self.recorder = self.staging = self.fuser = self.new_fuser = None
        atexit.register(self.save_pipeline_cache)

    def _make_layout(self) -> None:
        b = ffi.new("VkDescriptorSetLayoutBinding[]", self.bindings)
        for i in range(self.bindings):
            b[i].binding = i
            b[i].descriptorType = lib.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            b[i].descriptorCount = 1
            b[i].stageFlags = lib.VK_SHADER_STAGE_COMPUTE_BIT
        info = ffi.new("VkDescriptorSetLayoutCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
            "flags": lib.VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
            "bindingCount": self.bindings, "pBindings": b})
        out = ffi.new("VkDescriptorSetLayout*")
        check(lib.vkCreateDescriptorSetLayout(self.device, info, ffi.NULL, out),
              "vkCreateDescriptorSetLayout")
        self.set_layout = out[0]
        rng = ffi.new("VkPushConstantRange*", {"stageFlags": lib.VK_SHADER_STAGE_COMPUTE_BIT,
                                               "offset": 0, "size": PUSH_BYTES})
        sl = ffi.new("VkDescriptorSetLayout[]", [self.set_layout])
        pinfo = ffi.new("VkPipelineLayoutCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, "setLayoutCount": 1,
            "pSetLayouts": sl, "pushConstantRangeCount": 1, "pPushConstantRanges": rng})
        pl = ffi.new("VkPipelineLayout*")
        check(lib.vkCreatePipelineLayout(self.device, pinfo, ffi.NULL, pl), "vkCreatePipelineLayout")
        self.layout = pl[0]

    def _make_pipeline_cache(self) -> None:
        self._cache_file = _cache_path(self.phys.uuid)
        try:
            data = self._cache_file.read_bytes()
        except OSError:
            data = b""
        buf = ffi.from_buffer(data) if data else ffi.NULL
        info = ffi.new("VkPipelineCacheCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
            "initialDataSize": len(data), "pInitialData": buf})
        out = ffi.new("VkPipelineCache*")
        check(lib.vkCreatePipelineCache(self.device, info, ffi.NULL, out), "vkCreatePipelineCache")
        self.pipeline_cache = out[0]

    def save_pipeline_cache(self) -> None:
        """Write the driver's pipeline cache to disk (at exit), so later runs start fast; what
        other processes saved meanwhile is merged in, not overwritten."""
        # the cache is externally synchronized: a thread still running kernels at exit may be
        # creating a pipeline; wait for it a while, never forever (it may be stuck)
        if not self.lock.acquire(timeout=5):
            return
        try:
            self._merge_saved_cache()
            n = ffi.new("size_t*")
            lib.vkGetPipelineCacheData(self.device, self.pipeline_cache, n, ffi.NULL)
            buf = ffi.new("char[]", n[0])
            lib.vkGetPipelineCacheData(self.device, self.pipeline_cache, n, buf)
            self._cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._cache_file.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(bytes(ffi.buffer(buf, n[0])))
            os.replace(tmp, self._cache_file)
        except Exception:
            pass  # a cache is an optimization; never fail at exit for it
        finally:
            self.lock.release()

    def _merge_saved_cache(self) -> None:
        try:
            data = self._cache_file.read_bytes()
        except OSError:
            return
        info = ffi.new("VkPipelineCacheCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
            "initialDataSize": len(data), "pInitialData": ffi.from_buffer(data)})
        other = ffi.new("VkPipelineCache*")
        if lib.vkCreatePipelineCache(self.device, info, ffi.NULL, other) != 0:
            return  # the driver refuses stale or foreign data: keep ours only
        src = ffi.new("VkPipelineCache[1]", [other[0]])
        lib.vkMergePipelineCaches(self.device, self.pipeline_cache, 1, src)
        lib.vkDestroyPipelineCache(self.device, other[0], ffi.NULL)

    # ---- pipelines -----------------------------------------------------------------------
    def load_spirv(self, variant: str) -> bytes:
        code = self.spirv.get(variant)
        if code is None:
            path = SPV_DIR / f"{variant}.spv"
            try:
                code = path.read_bytes()
            except OSError:
                raise NotImplementedError(
                    f"vulkan: shader {variant}.spv is missing from {SPV_DIR}; "
                    "build shaders with `python tools/build_shaders.py`") from None
            for bits in self.phys.denorm_modes():
                code = spirv.add_denorm_preserve(code, bits)
            self.spirv[variant] = code
        return code

    def pipeline(self, variant: str, spec: tuple = ()):
        """The compute pipeline of shader ``variant`` with int specialization constants."""
        key = (variant, spec)
        p = self.pipelines.get(key)
        if p is None:
            # an elementwise op's own module where one is built (variants.PER_OP; its OP is
            # fixed there, so the specialization's first constant no longer matters)
            ops = per_op_variants().get(variant)
            name = ops.get(spec[0], variant) if ops and spec else variant
            p = self.pipelines[key] = self.create_pipeline(name, self.load_spirv(name), spec)
        return p

    def create_pipeline(self, name: str, code: bytes, spec: tuple = ()):
        """Build a compute pipeline from SPIR-V ``code``; errors name the shader."""
        if len(code) % 4 or code[:4] != b"\x03\x02\x23\x07":
            raise VulkanError(f"vulkan: shader {name!r} is not valid SPIR-V "
                              f"({len(code)} bytes); rebuild with tools/build_shaders.py")
        cbuf = ffi.new("char[]", code)
        minfo = ffi.new("VkShaderModuleCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, "codeSize": len(code),
            "pCode": ffi.cast("uint32_t*", cbuf)})
        mod = ffi.new("VkShaderModule*")
        check_named(lib.vkCreateShaderModule(self.device, minfo, ffi.NULL, mod),
                    f"vkCreateShaderModule for shader {name!r}")
        entries = ffi.new("VkSpecializationMapEntry[]", max(len(spec), 1))
        for i in range(len(spec)):
            entries[i].constantID, entries[i].offset, entries[i].size = i, 4 * i, 4
        data = ffi.new("int32_t[]", list(spec) or [0])
        sinfo = ffi.new("VkSpecializationInfo*", {
            "mapEntryCount": len(spec), "pMapEntries": entries, "dataSize": 4 * len(spec),
            "pData": data})
        main = ffi.new("char[]", b"main")
        cinfo = ffi.new("VkComputePipelineCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, "layout": self.layout})
        st = cinfo.stage
        st.sType = lib.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
        st.stage = lib.VK_SHADER_STAGE_COMPUTE_BIT
        st.module = mod[0]
        st.pName = main
        st.pSpecializationInfo = sinfo
        out = ffi.new("VkPipeline*")
        res = lib.vkCreateComputePipelines(self.device, self.pipeline_cache, 1, cinfo, ffi.NULL, out)
        lib.vkDestroyShaderModule(self.device, mod[0], ffi.NULL)
        check_named(res, f"vkCreateComputePipelines for shader {name!r} (specialization {spec})")
        return out[0]


def check_named(res: int, what: str) -> None:
    if res != 0:
        raise VulkanError(f"vulkan: {what} failed with VkResult {res}")


def spirv_digest(code: bytes) -> str:
    return hashlib.sha256(code).hexdigest()
