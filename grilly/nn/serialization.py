"""``save`` / ``load`` of state dicts in the safetensors format, written and read here (no
dependency): an 8-byte little-endian header length N, N bytes of UTF-8 JSON header mapping each
tensor name to its dtype, shape and [begin, end) byte offsets, then the raw little-endian data.
``load`` checks every header field against the spec before it reads any tensor data, so a
malformed or hostile file fails with a ``SafetensorsError`` (a ValueError) naming the file and
the tensor. Files load in PyTorch with ``safetensors.torch.load_file`` (but for complex128,
which the spec lacks)."""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import struct
from collections import Counter, OrderedDict
from collections.abc import Mapping
from typing import BinaryIO

import ml_dtypes  # noqa: F401  (registers numpy's "bfloat16" dtype, gp.bfloat16's host twin)
import numpy as np

from ..array import api as gp

__all__ = ["save", "load", "load_metadata", "SafetensorsError", "save_checkpoint",
           "load_checkpoint"]

# The upstream library refuses headers above 100 MB; so does grilly (it bounds the JSON parse).
MAX_HEADER_BYTES = 100_000_000

# grilly dtype name -> safetensors dtype tag (little-endian data). C128 is a grilly extension:
# the spec has no complex128, so files holding one do not load in the upstream library.
_TAGS = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16",
         "float16": "F16", "bfloat16": "BF16", "int32": "I32", "uint32": "U32", "float32": "F32",
         "int64": "I64", "uint64": "U64", "float64": "F64", "complex64": "C64", "complex128": "C128"}
_NAMES = {v: k for k, v in _TAGS.items()}
# Tags the spec defines that grilly has no dtype for: told apart from unknown tags in errors.
_SPEC_ONLY = {"F4", "F6_E2M3", "F6_E3M2", "F8_E5M2", "F8_E4M3", "F8_E8M0",
              "F8_E4M3FNUZ", "F8_E5M2FNUZ"}
_ENTRY_KEYS = {"dtype", "shape", "data_offsets"}


class SafetensorsError(ValueError):
    """A file that is not a valid safetensors file, or holds a dtype grilly cannot load."""


def _show(x) -> str:
    """repr of a value read from the file, cut short: a hostile header can hold huge strings."""
    r = repr(x)
    return r if len(r) <= 120 else r[:117] + "..."


def _is_int(x) -> bool:
    # JSON true/false arrive as Python bools, which are ints; the spec's integers are not bools
    return isinstance(x, int) and not isinstance(x, bool)


class _Object(dict):
    """A JSON object that remembers the keys it held twice (json.loads keeps the last)."""

    dups: list


def _object(pairs: list) -> _Object:
    out = _Object(pairs)
    out.dups = [] if len(out) == len(pairs) else sorted(
        k for k, c in Counter(k for k, _ in pairs).items() if c > 1)
    return out


def _no_constant(token: str):
    raise SafetensorsError(f"{token} in the header, which is not JSON")


def _read_header(f, where: str, size: int) -> tuple[dict, int]:
    """Parse and type-check the header; returns (header, length of the data section)."""
    head = f.read(8)
    if len(head) < 8:
        raise SafetensorsError(f"{where}: not a safetensors file (too short: {size} bytes, wanted at "
                               "least 8 for the header length)")
    (n,) = struct.unpack("<Q", head)
    if n > MAX_HEADER_BYTES:
        raise SafetensorsError(f"{where}: header length {n} is over the {MAX_HEADER_BYTES}-byte limit")
    if n > size - 8:
        raise SafetensorsError(f"{where}: header length {n} runs past the end of the file "
                               f"({size} bytes)")
    raw = f.read(n)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SafetensorsError(f"{where}: the header is not UTF-8 ({e})") from None
    try:
        header = json.loads(text, object_pairs_hook=_object, parse_constant=_no_constant)
    except SafetensorsError as e:
        raise SafetensorsError(f"{where}: {e}") from None
    except ValueError as e:  # json.JSONDecodeError
        raise SafetensorsError(f"{where}: the header is not valid JSON ({e})") from None
    except RecursionError:
        raise SafetensorsError(f"{where}: the header nests JSON too deeply") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{where}: the header must be a JSON object, got a "
                               f"{type(header).__name__}")
    if header.dups:
        raise SafetensorsError(f"{where}: tensor name(s) {_show(header.dups)} occur more than once in "
                               "the header; each name must be unique")
    meta = header.get("__metadata__")
    # null is allowed, as upstream (an optional map) allows it
    if meta is not None and not (isinstance(meta, dict) and not meta.dups
                                 and all(isinstance(v, str) for v in meta.values())):
        raise SafetensorsError(f"{where}: '__metadata__' must be an object of string -> string with "
                               f"unique keys, got {_show(meta)}")
    return header, size - 8 - n


def _check_entry(where: str, name: str, info, data_len: int) -> tuple[np.dtype, tuple, int, int]:
    """Validate one tensor entry; returns (numpy dtype, shape, begin, end)."""
    at = f"{where}: tensor {_show(name)}"
    if not isinstance(info, dict):
        raise SafetensorsError(f"{at}: the entry must be an object with dtype, shape and "
                               f"data_offsets, got a {type(info).__name__}")
    if info.dups:
        raise SafetensorsError(f"{at}: key(s) {_show(info.dups)} occur more than once in the entry")
    if set(info) != _ENTRY_KEYS:
        missing, extra = sorted(_ENTRY_KEYS - set(info)), sorted(set(info) - _ENTRY_KEYS)
        raise SafetensorsError(f"{at}: the entry must have exactly dtype, shape and data_offsets "
                               f"(missing {missing}, unexpected {_show(extra)})")
    tag, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if tag in _SPEC_ONLY:
        raise SafetensorsError(f"{at}: dtype {tag!r} is valid safetensors but grilly has no such "
                               f"dtype (supported: {sorted(_NAMES)})")
    if not isinstance(tag, str) or tag not in _NAMES:
        raise SafetensorsError(f"{at}: unknown dtype {_show(tag)}; wanted one of {sorted(_NAMES)}")
    if not (isinstance(shape, list) and all(_is_int(d) and d >= 0 for d in shape)):
        raise SafetensorsError(f"{at}: shape must be a list of non-negative integers, "
                               f"got {_show(shape)}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_int, offsets))):
        raise SafetensorsError(f"{at}: data_offsets must be a list of two integers [begin, end], "
                               f"got {_show(offsets)}")
    lo, hi = offsets
    if not 0 <= lo <= hi <= data_len:
        raise SafetensorsError(f"{at}: data_offsets [{lo}, {hi}] must satisfy 0 <= begin <= end "
                               f"<= {data_len} (the size of the data section)")
    dt = np.dtype(_NAMES[tag]).newbyteorder("<")
    want = math.prod(shape) * dt.itemsize  # Python ints: no overflow on hostile shapes
    if hi - lo != want:
        raise SafetensorsError(f"{at}: {tag} of shape {_show(shape)} needs {want} bytes but data_offsets "
                               f"[{lo}, {hi}] hold {hi - lo}")
    return dt, tuple(shape), lo, hi


def _check_layout(where: str, spans: list, data_len: int) -> None:
    """Tensors must tile the data section exactly: no gap, no overlap, nothing left over."""
    end, prev = 0, None
    for lo, hi, name in sorted(spans):
        if lo != end:
            what = "overlaps" if lo < end else f"leaves a gap of {lo - end} bytes after"
            other = f"tensor {_show(prev)}" if prev is not None else "the start of the data section"
            raise SafetensorsError(f"{where}: tensor {_show(name)} (data_offsets [{lo}, {hi}]) {what} "
                                   f"{other}; tensors must be contiguous")
        end, prev = hi, name
    if end != data_len:
        raise SafetensorsError(f"{where}: the tensors cover {end} bytes of a {data_len}-byte data "
                               "section; the file has trailing bytes")


def load(path: str | os.PathLike | BinaryIO, device=None) -> "OrderedDict[str, gp.Array]":
    """Read a safetensors file (a path or a binary file object) into an OrderedDict of
    name -> Array on ``device`` (a state dict ``save`` wrote with modules' extra state gets
    its ``_extra_state`` values back)."""
    arrays, meta = _load(path, device)
    if _CHECKPOINT_KEY in meta:
        obj = _rebuild(meta, arrays, _where("load", path))
        # a state dict with extra state: its structure; any other checkpoint stays flat here
        # (gp.load rebuilds it)
        if isinstance(obj, Mapping) and all(
                isinstance(k, str) and (isinstance(v, gp.Array) or _is_extra_key(k))
                for k, v in obj.items()):
            return OrderedDict(obj)
    return arrays


def _is_extra_key(name: str) -> bool:
    """Whether a state-dict key holds a module's extra state (Module.get_extra_state)."""
    return name == "_extra_state" or name.endswith("._extra_state")


def _where(op: str, path) -> str:
    """``op`` and the file, for messages: its path, or the kind of file object."""
    if isinstance(path, (str, bytes, os.PathLike)):
        return f"{op}: {os.fsdecode(path)!r}"
    return f"{op}: a {type(path).__name__} file object"


@contextlib.contextmanager
def _reading(op: str, path):
    """(binary file, its size from here, where) for a path or a readable binary file object
    (torch.load takes either; the object is read from its position to its end)."""
    where = _where(op, path)
    if isinstance(path, (str, bytes, os.PathLike)):
        with open(path, "rb") as f:  # OSError (missing file, permissions) passes through
            yield f, os.fstat(f.fileno()).st_size, where
        return
    if not hasattr(path, "read"):
        raise TypeError(f"{op}: expected a path (str or os.PathLike) or a binary file object, "
                        f"got {type(path).__name__}")
    if isinstance(path, io.TextIOBase):
        raise TypeError(f"{where} must be opened in binary mode")
    data = path.read()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{where} must be opened in binary mode (it read {type(data).__name__})")
    yield io.BytesIO(data), len(data), where


def _load(path, device) -> tuple:
    """(OrderedDict of name -> Array, the ``__metadata__`` mapping)."""
    with _reading("load", path) as (f, size, where):
        header, data_len = _read_header(f, where, size)
        entries, spans = [], []
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dt, shape, lo, hi = _check_entry(where, name, info, data_len)
            entries.append((name, dt, shape, lo))
            spans.append((lo, hi, name))
        _check_layout(where, spans, data_len)
        # only now, with every size checked against the file, is the data read
        data = f.read(data_len)
    if len(data) != data_len:
        raise SafetensorsError(f"{where}: the file shrank while it was read")
    out = OrderedDict()
    for name, dt, shape, lo in entries:
        host = np.frombuffer(data, dtype=dt, count=math.prod(shape), offset=lo).reshape(shape)
        host = host.astype(dt.newbyteorder("="), copy=False)
        out[name] = gp.asarray(host, dtype=getattr(gp, dt.name), device=device)
    return out, dict(header.get("__metadata__") or {})


def load_metadata(path: str | os.PathLike | BinaryIO) -> dict:
    """The ``__metadata__`` mapping (str -> str) of a safetensors file, reading no tensor data."""
    with _reading("load_metadata", path) as (f, size, where):
        header, _ = _read_header(f, where, size)
    return dict(header.get("__metadata__") or {})   # _read_header checked its types


def _check_save_args(state_dict, metadata, extra_ok: bool = False) -> None:
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"save: state_dict must be a mapping of str -> Array or a Module, got "
                        f"{type(state_dict).__name__}")
    for name, value in state_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"save: state_dict keys must be str, got {type(name).__name__} {_show(name)}")
        if name == "__metadata__":
            raise ValueError("save: state_dict key '__metadata__' is reserved by the format")
        if extra_ok and _is_extra_key(name):
            continue   # packed with the checkpoint structure (its Arrays checked there)
        if not isinstance(value, gp.Array):
            raise TypeError(f"save: state_dict[{name!r}] is a {type(value).__name__}, "
                            "expected a grilly Array")
        if value.dtype.name not in _TAGS:
            raise TypeError(f"save: state_dict[{name!r}] has dtype {value.dtype.name}, which the "
                            f"format cannot hold (supported: {sorted(_TAGS)})")
    if metadata is not None and not (
            isinstance(metadata, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError(f"save: metadata must be a mapping of str -> str, got {metadata!r:.200}")


def save(state_dict, path: str | os.PathLike | BinaryIO, metadata: dict | None = None) -> None:
    """Write a mapping of name -> Array (or a Module's state_dict) to ``path`` (safetensors; a
    path, or a binary file object written from its position)."""
    if hasattr(state_dict, "state_dict") and callable(state_dict.state_dict):
        state_dict = state_dict.state_dict()
    _check_save_args(state_dict, metadata, extra_ok=True)
    if not all(isinstance(v, gp.Array) for v in state_dict.values()):
        # modules' extra state (Module.get_extra_state): written as a checkpoint, the
        # structure in the metadata, so ``load`` gives the state dict back
        return save_checkpoint(state_dict, path, metadata)
    # tobytes() writes C order whatever the strides; ascontiguousarray would make 0-d 1-d
    hosts = {name: np.asarray(v).astype(np.dtype(v.dtype.name).newbyteorder("<"), copy=False)
             for name, v in state_dict.items()}
    # Data goes widest itemsize first (stable), so with the 8-byte-aligned data section every
    # tensor starts aligned to its element size (upstream lays out files the same way); the
    # header keeps the caller's order, which is the order ``load`` returns.
    order = sorted(hosts, key=lambda k: -hosts[k].dtype.itemsize)
    spans, off = {}, 0
    for name in order:
        spans[name] = (off, off + hosts[name].nbytes)
        off += hosts[name].nbytes
    header = {"__metadata__": {"format": "grilly", **(metadata or {})}}
    for name, host in hosts.items():
        header[name] = {"dtype": _TAGS[host.dtype.name], "shape": list(host.shape),
                        "data_offsets": list(spans[name])}
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)  # safetensors aligns the data section to 8 bytes
    def write(f) -> None:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for name in order:
            f.write(hosts[name].tobytes())

    if not isinstance(path, (str, bytes, os.PathLike)):
        if not hasattr(path, "write"):
            raise TypeError(f"save: expected a path (str or os.PathLike) or a binary file "
                            f"object, got {type(path).__name__}")
        if isinstance(path, io.TextIOBase):
            raise TypeError(f"{_where('save', path)} must be opened in binary mode")
        write(path)   # torch.save to a file object: written from its position
        return
    tmp = f"{os.fsdecode(path)}.tmp"
    with open(tmp, "wb") as f:
        write(f)
    os.replace(tmp, path)


# ---- checkpoints: torch.save of nested dicts (model and optimizer state dicts, epoch, ...) ----
# The arrays are the file's tensors; the structure around them (dicts with any of these keys,
# lists, tuples, None, bools, ints, floats, strings) is JSON in the metadata under this key.
# Nothing is pickled: loading a file never runs code. Tagged JSON objects: {"$a": tensor name},
# {"$t": [items]} (a tuple), {"$f": "nan" | "inf" | "-inf"}, {"$d": [[key, value], ...],
# "$k": "dict" | "OrderedDict" | "Counter"} (any key type, order kept).
_CHECKPOINT_KEY = "grilly.checkpoint"
_MAPPINGS = {dict: "dict", OrderedDict: "OrderedDict", Counter: "Counter"}
_MAPPING_OF = {v: k for k, v in _MAPPINGS.items()}   # tag -> type


def _pack(obj, path: str, arrays: dict):
    """``obj`` as tagged JSON, its Arrays put into ``arrays`` under names made from ``path``."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
        obj = obj.item()   # a NumPy scalar (a step count, a loss): its Python value
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj) if math.isfinite(obj) else {"$f": repr(float(obj))}
    if isinstance(obj, gp.Array):
        name = path or "tensor"
        if name in arrays or name == "__metadata__":
            name = f"{name}#{len(arrays)}"
        arrays[name] = obj
        return {"$a": name}
    sub = f"{path}." if path else ""
    if type(obj) in (list, tuple):
        items = [_pack(v, f"{sub}{i}", arrays) for i, v in enumerate(obj)]
        return items if type(obj) is list else {"$t": items}
    if type(obj) in _MAPPINGS:
        return {"$k": _MAPPINGS[type(obj)],
                "$d": [[_pack(k, f"{path}[key]", arrays), _pack(v, f"{sub}{k}", arrays)]
                       for k, v in obj.items()]}
    where = f"the value at {path!r}" if path else "the object"
    raise TypeError(f"save: {where} is a {type(obj).__name__}; a checkpoint holds "
                    "grilly Arrays, dicts (OrderedDict, Counter), lists, tuples, None, bools, "
                    "ints, floats and strings (nothing is pickled)")


def _unpack(node, arrays: dict, where: str):
    """The object ``_pack`` made ``node`` from (every tag and tensor name checked)."""
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [_unpack(v, arrays, where) for v in node]
    if isinstance(node, dict):
        if node.keys() == {"$a"} and node["$a"] in arrays:
            return arrays[node["$a"]]
        if node.keys() == {"$t"} and isinstance(node["$t"], list):
            return tuple(_unpack(v, arrays, where) for v in node["$t"])
        if node.keys() == {"$f"} and node["$f"] in ("nan", "inf", "-inf"):
            return float(node["$f"])
        kind = _MAPPING_OF.get(node.get("$k"))
        if kind is not None and node.keys() == {"$k", "$d"} and isinstance(node["$d"], list) \
                and all(isinstance(kv, list) and len(kv) == 2 for kv in node["$d"]):
            pairs = [(_unpack(k, arrays, where), _unpack(v, arrays, where)) for k, v in node["$d"]]
            out = kind()   # (Counter(pairs) would count the pairs)
            try:
                for k, v in pairs:
                    out[k] = v
                return out
            except TypeError:   # an unhashable key
                pass
    raise SafetensorsError(f"{where}: the checkpoint structure holds an invalid entry "
                           f"{_show(node)}")


def save_checkpoint(obj, path: str | os.PathLike | BinaryIO, metadata: dict | None = None) -> None:
    """Write nested dicts, lists and tuples of Arrays and Python values (torch.save of
    ``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": e}``) as a
    safetensors file whose metadata holds the structure (beside ``metadata``, str -> str)."""
    _check_save_args({}, metadata)
    arrays: dict = {}
    skeleton = _pack(obj, "", arrays)
    save(arrays, path, metadata={**(metadata or {}),
                                 _CHECKPOINT_KEY: json.dumps(skeleton, separators=(",", ":"))})


def load_checkpoint(path: str | os.PathLike | BinaryIO, device=None):
    """Read a file ``save`` or ``save_checkpoint`` wrote: a checkpoint's structure, else the
    OrderedDict of name -> Array."""
    arrays, meta = _load(path, device)
    if _CHECKPOINT_KEY not in meta:
        return arrays
    return _rebuild(meta, arrays, _where("load", path))


def _rebuild(meta: dict, arrays: dict, where: str):
    """The object whose structure a checkpoint's metadata holds, its Arrays from ``arrays``."""
    try:
        skeleton = json.loads(meta[_CHECKPOINT_KEY], parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        raise SafetensorsError(f"{where}: the checkpoint structure is not valid JSON ({e})") \
            from None
    return _unpack(skeleton, arrays, where)
