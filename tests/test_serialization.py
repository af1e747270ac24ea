"""nn.save / nn.load: strict safetensors reading (malformed files), dtype round trips, and
interop both ways with the upstream ``safetensors`` package (a test-only oracle)."""
import json
import struct

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn.serialization import MAX_HEADER_BYTES, SafetensorsError

try:
    import safetensors.numpy as st_np
    from safetensors import safe_open
except ImportError:  # pragma: no cover - depends on the environment
    st_np = safe_open = None
needs_upstream = pytest.mark.skipif(st_np is None, reason="the safetensors package is not installed "
                                    "(test-only oracle: pip install safetensors)")

DTYPES = ["bool", "uint8", "int8", "int16", "uint16", "float16", "int32", "uint32", "float32",
          "int64", "uint64", "float64", "complex64", "complex128"]
UPSTREAM_DTYPES = [d for d in DTYPES if d != "complex128"]  # the spec has no C128


def _file(header=None, data=b"", *, raw=None, n=None) -> bytes:
    """A safetensors byte string from a header (dict, or raw bytes) and a data section."""
    hb = raw if raw is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(hb) if n is None else n) + hb + data


def _t(dtype="F32", shape=(2,), offsets=(0, 8)) -> dict:
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


W = "enc.w"  # the tensor name the malformed cases use, so messages can be checked for it
ONE = {W: _t()}
Z8 = b"\0" * 8

# (id, file bytes, tensor the message must name or None, text the message must contain)
MALFORMED = [
    ("too_short", b"\x08\0\0", None, "too short"),
    ("header_over_limit", struct.pack("<Q", MAX_HEADER_BYTES + 1) + b"{}", None, "limit"),
    ("header_past_eof", _file(ONE, Z8, n=10_000), None, "past the end"),
    ("header_u64_max", _file(ONE, Z8, n=2**64 - 1), None, "limit"),
    ("not_utf8", _file(raw=b'{"\xff\xfe":1}   '), None, "UTF-8"),
    ("not_json", _file(raw=b'{"a": }'), None, "not valid JSON"),
    ("json_list", _file(raw=b"[]"), None, "JSON object"),
    ("json_string", _file(raw=b'"abc"'), None, "JSON object"),
    ("json_nan", _file(raw=b'{"enc.w": NaN}'), None, "NaN"),
    ("json_too_deep", _file(raw=b"[" * 100_000), None, "too deeply"),
    ("duplicate_tensor", _file(raw=b'{"enc.w":' + json.dumps(_t()).encode() + b',"enc.w":'
                               + json.dumps(_t()).encode() + b"}", data=Z8), W, "more than once"),
    ("duplicate_field", _file(raw=b'{"enc.w":{"dtype":"F32","dtype":"F32","shape":[2],'
                              b'"data_offsets":[0,8]}}', data=Z8), W, "more than once"),
    ("metadata_list", _file({"__metadata__": ["a"], **ONE}, Z8), None, "__metadata__"),
    ("metadata_int_value", _file({"__metadata__": {"k": 1}, **ONE}, Z8), None, "__metadata__"),
    ("entry_not_object", _file({W: [0, 8]}, Z8), W, "must be an object"),
    ("entry_missing_offsets", _file({W: {"dtype": "F32", "shape": [2]}}, Z8), W, "data_offsets"),
    ("entry_extra_field", _file({W: {**_t(), "strides": [1]}}, Z8), W, "strides"),
    ("dtype_unknown", _file({W: _t("F33")}, Z8), W, "unknown dtype 'F33'"),
    ("dtype_not_string", _file({W: _t(4)}, Z8), W, "unknown dtype 4"),
    ("dtype_lowercase", _file({W: _t("f32")}, Z8), W, "unknown dtype"),
    ("shape_negative", _file({W: _t(shape=(-1, -2), offsets=(0, 8))}, Z8), W, "non-negative"),
    ("shape_not_list", _file({W: {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}}, Z8), W,
     "shape must be a list"),
    ("shape_float", _file({W: _t(shape=(2.0,))}, Z8), W, "shape must be a list"),
    ("shape_bool", _file({W: _t("U8", shape=(True,), offsets=(0, 1))}, b"\0"), W, "integers"),
    ("shape_null", _file({W: {"dtype": "F32", "shape": None, "data_offsets": [0, 8]}}, Z8), W,
     "shape"),
    ("offsets_three", _file({W: _t(offsets=(0, 8, 8))}, Z8), W, "two integers"),
    ("offsets_strings", _file({W: _t(offsets=("0", "8"))}, Z8), W, "two integers"),
    ("offsets_negative", _file({W: _t(offsets=(-8, 0))}, Z8), W, "0 <= begin"),
    ("offsets_reversed", _file({W: _t(offsets=(8, 0))}, Z8), W, "0 <= begin"),
    ("offsets_past_data", _file({W: _t(offsets=(0, 8))}, b"\0" * 4), W, "<= 4"),
    ("size_mismatch", _file({W: _t(shape=(3, 3), offsets=(0, 16))}, b"\0" * 16), W,
     "needs 36 bytes"),
    ("size_huge_shape", _file({W: _t(shape=(2**40, 2**40), offsets=(0, 8))}, Z8), W,
     "needs 4835703278458516698824704 bytes"),
    ("overlap", _file({W: _t(offsets=(0, 8)), "dec.b": _t(offsets=(4, 12))}, b"\0" * 12), "dec.b",
     "overlaps tensor 'enc.w'"),
    ("gap", _file({W: _t(offsets=(0, 8)), "dec.b": _t(offsets=(12, 20))}, b"\0" * 20), "dec.b",
     "gap of 4 bytes"),
    ("not_at_start", _file({W: _t(offsets=(4, 12))}, b"\0" * 12), W, "start of the data"),
    ("trailing_bytes", _file(ONE, b"\0" * 12), None, "trailing bytes"),
    ("same_offsets_twice", _file({W: _t(), "dec.b": _t()}, Z8), "dec.b", "overlaps"),
]
# Cases the upstream reader accepts and grilly refuses, and why:
#  duplicate_tensor: JSON keeps the last one silently; which tensor was meant is ambiguous.
#  entry_extra_field: an unknown field (strides, byte order...) may change what the bytes mean.
UPSTREAM_ACCEPTS = {"duplicate_tensor", "entry_extra_field"}


def _write(tmp_path, name, blob):
    p = tmp_path / f"{name}.safetensors"
    p.write_bytes(blob)
    return p


@pytest.mark.parametrize("case", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_file_rejected(tmp_path, case):
    name, blob, tensor, text = case
    p = _write(tmp_path, name, blob)
    with pytest.raises(SafetensorsError) as info:
        nn.load(p)
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert str(p) in msg, msg
    assert text in msg, msg
    if tensor is not None:
        assert repr(tensor) in msg, msg


@needs_upstream
@pytest.mark.parametrize("case", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_file_upstream_agrees(tmp_path, case):
    name, blob, _, _ = case
    p = _write(tmp_path, name, blob)
    if name in UPSTREAM_ACCEPTS:
        st_np.load_file(str(p))  # documented divergence: grilly is stricter here
    else:
        with pytest.raises(Exception):  # noqa: B017 - upstream's error type is its own
            st_np.load_file(str(p))


def test_malformed_cases_are_many():
    assert len(MALFORMED) >= 20


# Unusual but valid files: both readers accept them and agree.
VALID_ODD = [
    ("empty_header", _file({}), {}),
    ("metadata_null", _file({"__metadata__": None, **ONE}, Z8), {W: np.zeros(2, np.float32)}),
    ("leading_whitespace", _file(raw=b"  " + json.dumps(ONE).encode(), data=Z8),
     {W: np.zeros(2, np.float32)}),
    ("zero_size_shared_offset", _file({W: _t(shape=(0, 3), offsets=(0, 0)),
                                       "b": _t("I64", shape=(0,), offsets=(0, 0))}),
     {W: np.zeros((0, 3), np.float32), "b": np.zeros(0, np.int64)}),
    ("scalar", _file({W: _t("F64", shape=(), offsets=(0, 8))}, struct.pack("<d", 2.5)),
     {W: np.array(2.5)}),
    ("out_of_order_offsets", _file({"b": _t("U8", shape=(1,), offsets=(8, 9)), W: _t()},
                                   Z8 + b"\x07"), {"b": np.array([7], np.uint8),
                                                   W: np.zeros(2, np.float32)}),
]


@pytest.mark.parametrize("case", VALID_ODD, ids=[c[0] for c in VALID_ODD])
def test_odd_but_valid_file_loads(tmp_path, case):
    name, blob, want = case
    p = _write(tmp_path, name, blob)
    got = nn.load(p)
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        assert np.asarray(got[k]).dtype == v.dtype and np.array_equal(np.asarray(got[k]), v)
    if st_np is not None:
        up = st_np.load_file(str(p))
        assert sorted(up) == sorted(want)
        for k in want:
            assert np.array_equal(up[k], np.asarray(got[k])) and up[k].dtype == want[k].dtype


def test_spec_dtype_grilly_lacks(tmp_path):
    p = _write(tmp_path, "f8", _file({W: _t("F8_E4M3", offsets=(0, 4))}, b"\0" * 4))
    with pytest.raises(SafetensorsError, match=r"'enc\.w'.*'F8_E4M3' is valid safetensors but grilly"):
        nn.load(p)


@needs_upstream
def test_bfloat16_round_trip_and_torch_interop(device, tmp_path):
    """bfloat16 saves as BF16 and loads back bit for bit (NaN, inf, -0, subnormals), both ways
    with torch's safetensors."""
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    t = torch.tensor([[1.5, -2.0, 0.1, float("nan")], [3e38, -0.0, 1e-40, -float("inf")]],
                     dtype=torch.bfloat16)
    bits = t.view(torch.int16).numpy().view(np.uint16)
    up = tmp_path / "torch.safetensors"
    st_torch.save_file({"w": t}, str(up))
    got = nn.load(up, device=device)["w"]
    assert got.dtype == gp.bfloat16 and np.array_equal(np.asarray(got).view(np.uint16), bits)
    mine = tmp_path / "mine.safetensors"
    nn.save({"w": got, "m": gp.astype(gp.ones((3,), device=device), gp.bfloat16)}, mine)
    theirs = st_torch.load_file(str(mine))
    assert theirs["w"].dtype == torch.bfloat16
    assert np.array_equal(theirs["w"].view(torch.int16).numpy().view(np.uint16), bits)
    back = nn.load(mine, device=device)
    assert back["m"].dtype == gp.bfloat16 and np.array_equal(np.asarray(back["w"]).view(np.uint16), bits)


def test_filesystem_errors_pass_through(tmp_path):
    with pytest.raises(FileNotFoundError):
        nn.load(tmp_path / "missing.safetensors")
    with pytest.raises(IsADirectoryError):
        nn.load(tmp_path)
    with pytest.raises(TypeError, match="load: expected a path"):
        nn.load(3)


def _sample(dtype: str, shape=(3, 5), seed=0) -> np.ndarray:
    """Values that exercise the whole dtype: extremes, signs, NaN/inf for floats."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    size = int(np.prod(shape))
    n = max(size, 4)  # room for the special values; cut to ``size`` at the end
    if dt.kind == "b":
        v = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        v[:2] = info.min, info.max
    else:
        real = np.finfo(dt).dtype
        v = (rng.standard_normal(n) * 1e3).astype(real)
        v[:4] = np.nan, np.inf, -np.inf, np.finfo(real).max
        if dt.kind == "c":
            v = (v + 1j * rng.standard_normal(n).astype(real)).astype(dt)
    return v[:size].reshape(shape)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, dtype and bytes (NaN payloads included)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
def test_roundtrip_every_dtype(tmp_path, dtype):
    ref = {"m": _sample(dtype), "s": _sample(dtype, ()), "e": _sample(dtype, (0, 4)),
           "v": _sample(dtype, (7,), seed=1)}
    sd = {k: gp.asarray(v) for k, v in ref.items()}
    p = tmp_path / "rt.safetensors"
    nn.save(sd, p, metadata={"note": "x"})
    back = nn.load(p)
    assert list(back) == list(ref)  # the caller's order comes back
    for k, v in ref.items():
        assert back[k].dtype == getattr(gp, dtype)
        assert _same(np.asarray(back[k]), v), k


def test_saved_tensors_are_aligned(tmp_path):
    sd = {"flag": gp.asarray(np.ones(3, bool)), "w": gp.asarray(np.ones(3)),
          "h": gp.asarray(np.ones(5, np.float16)), "z": gp.asarray(np.ones(2, np.complex64))}
    p = tmp_path / "al.safetensors"
    nn.save(sd, p)
    raw = p.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert n % 8 == 0
    for k, v in sd.items():
        assert header[k]["data_offsets"][0] % np.dtype(v.dtype.name).itemsize == 0, k


@needs_upstream
@pytest.mark.parametrize("dtype", UPSTREAM_DTYPES)
def test_upstream_numpy_interop(tmp_path, dtype):
    ref = {"a.w": _sample(dtype), "a.s": _sample(dtype, ()), "b": _sample(dtype, (2, 0, 3))}
    up = tmp_path / "up.safetensors"
    st_np.save_file(ref, str(up), metadata={"framework": "np"})
    back = nn.load(up)
    assert sorted(back) == sorted(ref)
    for k, v in ref.items():
        assert _same(np.asarray(back[k]), v), k
    mine = tmp_path / "mine.safetensors"
    nn.save({k: gp.asarray(v) for k, v in ref.items()}, mine, metadata={"who": "grilly"})
    theirs = st_np.load_file(str(mine))
    assert sorted(theirs) == sorted(ref)
    for k, v in ref.items():
        assert _same(theirs[k], v), k
    with safe_open(str(mine), framework="np") as f:
        assert f.metadata() == {"format": "grilly", "who": "grilly"}


@needs_upstream
def test_complex128_is_a_grilly_extension(tmp_path):
    p = tmp_path / "c128.safetensors"
    nn.save({"z": gp.asarray(_sample("complex128"))}, p)
    assert _same(np.asarray(nn.load(p)["z"]), _sample("complex128"))
    with pytest.raises(Exception, match="C128"):  # noqa: B017 - upstream's own error type
        st_np.load_file(str(p))


@needs_upstream
def test_upstream_torch_interop(tmp_path):
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    ref = {d: _sample(d, (4, 3), seed=i) for i, d in enumerate(UPSTREAM_DTYPES)}
    tensors = {k: torch.from_numpy(v.copy()) for k, v in ref.items()}
    tensors["bias"] = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()  # not contiguous
    ref["bias"] = np.arange(6, dtype=np.float32).reshape(2, 3).T.copy()
    up = tmp_path / "torch.safetensors"
    st_torch.save_file({k: t.contiguous() for k, t in tensors.items()}, str(up))
    back = nn.load(up)
    for k, v in ref.items():
        assert _same(np.asarray(back[k]), v), k
    mine = tmp_path / "mine.safetensors"
    nn.save({k: gp.asarray(v) for k, v in ref.items()}, mine)
    theirs = st_torch.load_file(str(mine))
    assert sorted(theirs) == sorted(ref)
    for k, v in ref.items():
        assert _same(theirs[k].numpy(), v), k


def test_save_rejects_bad_arguments(tmp_path):
    p = tmp_path / "x.safetensors"
    a = gp.asarray(np.ones(2, np.float32))
    with pytest.raises(TypeError, match="save: state_dict must be a mapping"):
        nn.save([("a", a)], p)
    with pytest.raises(TypeError, match="save: state_dict keys must be str, got int"):
        nn.save({1: a}, p)
    with pytest.raises(TypeError, match=r"save: state_dict\['a'\] is a ndarray"):
        nn.save({"a": np.ones(2)}, p)
    with pytest.raises(TypeError, match=r"save: state_dict\['a'\] is a list"):
        nn.save({"a": [1.0]}, p)
    with pytest.raises(ValueError, match="'__metadata__' is reserved"):
        nn.save({"__metadata__": a}, p)
    with pytest.raises(TypeError, match="save: metadata must be a mapping of str -> str"):
        nn.save({"a": a}, p, metadata={"epoch": 3})
    with pytest.raises(TypeError, match="save: metadata must be"):
        nn.save({"a": a}, p, metadata={3: "x"})
    with pytest.raises(TypeError, match="save: metadata must be"):
        nn.save({"a": a}, p, metadata=["x"])
    assert not p.exists() and not (tmp_path / "x.safetensors.tmp").exists()


def test_error_messages_stay_short(tmp_path):
    long = "n" * 100_000
    p = _write(tmp_path, "long", _file({long: _t("X" * 100_000)}, Z8))
    with pytest.raises(SafetensorsError, match="unknown dtype 'XXX") as info:
        nn.load(p)
    assert len(str(info.value)) < 1000 and str(p) in str(info.value)
