"""Buffer device addresses (VK_KHR_buffer_device_address): a shader that reaches many buffers in
one dispatch (the multi-tensor optimizer step, shaders/nn/optim_multi.comp) reads their 64-bit
addresses from a table instead of binding each one, since a dispatch binds at most
runtime.FUSED_BINDINGS buffers.

Where the device has the feature, every chunk of the memory pool is created with an address
(memory.Chunk); ``address(buf)`` is then the byte address of a buffer view's first element.
Work that reaches memory through addresses names it to the recorder all the same
(Recorder.dispatch_allocs' ``touched``), which orders it and keeps it alive like bound memory.
"""
from __future__ import annotations

try:
    from vulkan._vulkan import ffi, lib
except Exception:   # no loader: runtime.py reports it; nothing here is reached
    ffi = lib = None

EXTENSION = "VK_KHR_buffer_device_address"


def probe(phys) -> bool:
    """Whether shaders can reach buffers by address on ``phys`` (the extension and its feature)."""
    if EXTENSION not in phys.extensions:
        return False
    f = ffi.new("VkPhysicalDeviceBufferDeviceAddressFeatures*", {
        "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES})
    feats = ffi.new("VkPhysicalDeviceFeatures2*", {
        "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": f})
    lib.vkGetPhysicalDeviceFeatures2(phys.handle, feats)
    return bool(f.bufferDeviceAddress)


def feature_chain(phys, pnext, keep: list):
    """``pnext`` extended with the bufferDeviceAddress feature where the device has it (the
    structs kept alive in ``keep``)."""
    if not phys.device_addresses:
        return pnext
    f = ffi.new("VkPhysicalDeviceBufferDeviceAddressFeatures*", {
        "sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES,
        "bufferDeviceAddress": 1, "pNext": pnext})
    keep += [pnext, f]
    return f


def getter(device):
    """vkGetBufferDeviceAddressKHR of a logical device created with the feature."""
    fn = lib.vkGetDeviceProcAddr(device, b"vkGetBufferDeviceAddressKHR")
    return ffi.cast("PFN_vkGetBufferDeviceAddressKHR", fn)


def of_buffer(ctx, buffer) -> int:
    """The device address of a VkBuffer created with SHADER_DEVICE_ADDRESS usage."""
    info = ffi.new("VkBufferDeviceAddressInfo*", {
        "sType": lib.VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, "buffer": buffer})
    return int(ctx.get_buffer_address(ctx.device, info))


def address(buf) -> int:
    """The byte address of a buffer view's first element (its element offset included)."""
    a = buf.alloc
    return a.chunk.address + a.offset + buf.offset * buf.dtype.itemsize
