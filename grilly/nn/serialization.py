"""``save`` / ``load`` of state dicts in the safetensors format (written and read here: an
8-byte little-endian header length, a JSON header of dtype/shape/byte offsets, raw data).
Files load in PyTorch with ``safetensors.torch.load_file``."""
from __future__ import annotations

import json
import os
import struct
from collections import OrderedDict

import numpy as np

import grilly as gp

__all__ = ["save", "load"]

# grilly dtype name -> safetensors dtype tag (little-endian data)
_TAGS = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16",
         "float16": "F16", "int32": "I32", "uint32": "U32", "float32": "F32", "int64": "I64",
         "uint64": "U64", "float64": "F64", "complex64": "C64", "complex128": "C128"}
_NAMES = {v: k for k, v in _TAGS.items()}


def save(state_dict, path, metadata: dict | None = None) -> None:
    """Write a mapping of name -> Array (or a Module's state_dict) to ``path`` (safetensors)."""
    if hasattr(state_dict, "state_dict") and callable(state_dict.state_dict):
        state_dict = state_dict.state_dict()
    header, chunks, off = {}, [], 0
    for name, value in state_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"save: keys must be str, got {type(name).__name__}")
        if not isinstance(value, gp.Array):
            raise TypeError(f"save: {name!r} is a {type(value).__name__}, expected a grilly Array")
        host = np.ascontiguousarray(np.asarray(value)).astype(
            np.dtype(value.dtype.name).newbyteorder("<"), copy=False)
        data = host.tobytes()
        header[name] = {"dtype": _TAGS[value.dtype.name], "shape": list(value.shape),
                        "data_offsets": [off, off + len(data)]}
        chunks.append(data)
        off += len(data)
    meta = {"format": "grilly"}
    meta.update({str(k): str(v) for k, v in (metadata or {}).items()})
    header["__metadata__"] = meta
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)  # safetensors aligns the data section to 8 bytes
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for c in chunks:
            f.write(c)
    os.replace(tmp, path)


def load(path, device=None) -> "OrderedDict[str, gp.Array]":
    """Read a safetensors file into an OrderedDict of name -> Array on ``device``."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"load: {os.fspath(path)!r} is not a safetensors file (too short)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"load: {os.fspath(path)!r} has a corrupt header length {n}")
    try:
        header = json.loads(raw[8:8 + n])
    except ValueError as e:
        raise ValueError(f"load: {os.fspath(path)!r} has an unreadable header ({e})") from None
    base = 8 + n
    out = OrderedDict()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        tag = info.get("dtype")
        if tag not in _NAMES:
            raise TypeError(f"load: {name!r} has dtype {tag!r}, which grilly does not support")
        lo, hi = info["data_offsets"]
        dt = np.dtype(_NAMES[tag]).newbyteorder("<")
        host = np.frombuffer(raw, dtype=dt, count=(hi - lo) // dt.itemsize, offset=base + lo)
        host = host.reshape(info["shape"]).astype(dt.newbyteorder("="), copy=False)
        out[name] = gp.asarray(host, dtype=getattr(gp, _NAMES[tag]), device=device)
    return out
