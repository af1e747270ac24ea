"""Small edits of SPIR-V binaries: float-control execution modes a device (or the build) asks for.

glslang writes at most one execution mode of a kind per shader, and a mode like DenormPreserve
is valid only where the device supports it, so these are added to the binary: by the build
(tools/build_shaders.py loads this module by path) and by the runtime per device.
"""
from __future__ import annotations

import struct

MAGIC = 0x07230203
OP_CAPABILITY, OP_EXECUTION_MODE, OP_ENTRY_POINT = 17, 16, 15
# SPV_KHR_float_controls: execution modes and their capabilities
DENORM_PRESERVE, CAP_DENORM_PRESERVE = 4459, 4464
SIGNED_ZERO_INF_NAN_PRESERVE = 4461


def _words(code: bytes) -> list[int]:
    if len(code) % 4 or len(code) < 20 or struct.unpack_from("<I", code)[0] != MAGIC:
        raise ValueError("spirv: not a little-endian SPIR-V module")
    return list(struct.unpack(f"<{len(code) // 4}I", code))


def _instructions(words: list[int]):
    """(start index, opcode, words) of each instruction after the 5-word header."""
    i = 5
    while i < len(words):
        n, op = words[i] >> 16, words[i] & 0xFFFF
        if n == 0:
            raise ValueError("spirv: zero-length instruction")
        yield i, op, words[i:i + n]
        i += n


def add_float_mode_twin(code: bytes, mode: int, from_bits: int, to_bits: int) -> bytes:
    """Give every ``mode`` execution mode for ``from_bits`` floats a ``to_bits`` twin."""
    words = _words(code)
    out = words[:5]
    for _, op, ins in _instructions(words):
        out += ins
        if op == OP_EXECUTION_MODE and len(ins) == 4 and ins[2] == mode and ins[3] == from_bits:
            out += [ins[0], ins[1], mode, to_bits]
    return struct.pack(f"<{len(out)}I", *out)


def add_denorm_preserve(code: bytes, bits: int = 32) -> bytes:
    """Ask for IEEE subnormals in ``bits``-wide float arithmetic (DenormPreserve) in every entry
    point; the module must already declare SPV_KHR_float_controls (shaders/common.glsl does)."""
    words = _words(code)
    insts = list(_instructions(words))
    entries = [ins[2] for _, op, ins in insts if op == OP_ENTRY_POINT]
    caps = [ins[1] for _, op, ins in insts if op == OP_CAPABILITY]
    modes = {(ins[1], ins[2], ins[3]) for _, op, ins in insts if op == OP_EXECUTION_MODE and len(ins) == 4}
    out = words[:5]
    last_cap = max(i for i, op, _ in insts if op == OP_CAPABILITY)
    last_mode = max((i for i, op, _ in insts if op in (OP_EXECUTION_MODE, OP_ENTRY_POINT)), default=None)
    for i, _, ins in insts:
        out += ins
        if i == last_cap and CAP_DENORM_PRESERVE not in caps:
            out += [(2 << 16) | OP_CAPABILITY, CAP_DENORM_PRESERVE]
        if i == last_mode:
            out += [w for e in entries if (e, DENORM_PRESERVE, bits) not in modes
                    for w in ((4 << 16) | OP_EXECUTION_MODE, e, DENORM_PRESERVE, bits)]
    return struct.pack(f"<{len(out)}I", *out)
