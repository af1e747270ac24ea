"""A register-blocked GEMM written in LLVM IR for the host's widest vectors: C = alpha op(A)
op(B) + beta C for float32/float64 views of any strides, on the calling thread.

Why not BLAS: the BLAS Numba calls is the one SciPy/NumPy load, and a machine may pin it to an
older kernel set (``OPENBLAS_CORETYPE``) or lack a good one; and BLAS pays a call's setup on the
small per-image products of a convolution. The micro-kernel keeps an MR x NR tile of C in vector
registers (MR rows of NV vectors of the target's width: 16 float32 lanes with AVX-512, 8 with
AVX2, 4 on SSE and NEON), broadcasts one element of A per row and loads NV vectors of B per step
of K; LLVM emits the FMAs. The driver blocks K (so a B panel stays in L2),
packs B only where its rows are not contiguous or a panel is ragged, and writes a ragged or
strided C through a small scratch tile. docs/kernels/linalg.md has the figures.
"""
from __future__ import annotations

import platform

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, config
from numba.extending import intrinsic

_o = dict(cache=True, nogil=True)


def _target_features() -> set:
    """The CPU features Numba compiles for: NUMBA_CPU_NAME/NUMBA_CPU_FEATURES when set (a
    portable cache), else the host's."""
    if config.CPU_NAME:
        return {f[1:] for f in (config.CPU_FEATURES or "").split(",") if f.startswith("+")}
    return {k for k, v in llvm.get_host_cpu_features().items() if v}


def _shape() -> tuple:
    """(vector bytes, vectors per tile row) for the target: the tile's MR x NV accumulators
    plus NV B vectors and a broadcast must fit the register file (32 registers with AVX-512
    and on AArch64, 16 with AVX/AVX2 and SSE), or LLVM spills them."""
    f = _target_features()
    if "avx512f" in f:
        return 64, 4
    if "avx" in f:
        return 32, 2
    return 16, (4 if platform.machine().lower() in ("arm64", "aarch64") else 2)


VBYTES, NV = _shape()
MR = 6        # rows of A per micro-tile
KC = 384      # K per block: a B panel (KC x NR) stays in L1/L2, C's tile in registers across it
MC = 96       # rows of A per block: A's (MC, KC) block stays in L2 while the B panels pass


def _emit(context, builder, mr, nv, w, vt, fma, splat, K, ap, a_off, sai, sak, bp, b_off, ldb,
          cp, c_off, ldc, alpha, beta):
    """IR of the ``mr`` x ``nv`` micro-tile loop and its store."""
    i64 = ir.IntType(64)
    vp = vt.as_pointer()
    ft = vt.element
    # the accumulators live in allocas that LLVM promotes to registers
    acc = [[cgutils.alloca_once_value(builder, ir.Constant(vt, [0.0] * w)) for _ in range(nv)]
           for _ in range(mr)]
    with cgutils.for_range(builder, K) as loop:
        k = loop.index
        row = builder.add(b_off, builder.mul(k, ldb))
        bv = [builder.load(builder.bitcast(builder.gep(bp, [builder.add(row, i64(v * w))]), vp),
                           align=4) for v in range(nv)]
        ak = builder.add(a_off, builder.mul(k, sak))
        for i in range(mr):
            a = splat(builder.load(builder.gep(ap, [builder.add(ak, builder.mul(i64(i), sai))])))
            for v in range(nv):
                builder.store(builder.call(fma, [a, bv[v], builder.load(acc[i][v])]), acc[i][v])
    al, be = splat(alpha), splat(beta)
    zero_beta = builder.fcmp_ordered("==", beta, ir.Constant(ft, 0.0))
    for i in range(mr):
        for v in range(nv):
            off = builder.add(c_off, builder.add(builder.mul(i64(i), ldc), i64(v * w)))
            q = builder.bitcast(builder.gep(cp, [off]), vp)
            r = builder.fmul(al, builder.load(acc[i][v]))
            with builder.if_else(zero_beta) as (then, other):
                with then:
                    builder.store(r, q, align=4)
                with other:
                    builder.store(builder.call(fma, [be, builder.load(q, align=4), r]), q,
                                  align=4)


@intrinsic
def _micro(typingctx, mr, nv, K, A, a_off, sai, sak, B, b_off, ldb, C, c_off, ldc, alpha, beta):
    """The micro-kernel: (mr, nv, K, A, a_off, sai, sak, B, b_off, ldb, C, c_off, ldc, alpha,
    beta) for 1 <= mr <= MR rows and 1 <= nv <= NV vectors of columns (one loop per pair,
    chosen by a switch). Offsets and strides count elements; B's and C's rows are unit-stride.
    C's tile becomes alpha * sum_k A[i, k] B[k, j] + beta * C (C is not read when beta == 0,
    so a NaN there does not leak, as BLAS)."""
    if not all(isinstance(t, types.Array) for t in (A, B, C)):
        return None
    if not (A.dtype == B.dtype == C.dtype and A.dtype in (types.float32, types.float64)):
        return None
    sig = types.void(mr, nv, K, A, a_off, sai, sak, B, b_off, ldb, C, c_off, ldc, alpha, beta)

    def codegen(context, builder, signature, args):
        mr, nv, K, A, a_off, sai, sak, B, b_off, ldb, C, c_off, ldc, alpha, beta = args
        at, bt, ct = signature.args[3], signature.args[7], signature.args[10]
        dt = ct.dtype
        ptrs = [cgutils.create_struct_proxy(t)(context, builder, value=v).data
                for t, v in ((at, A), (bt, B), (ct, C))]
        alpha = context.cast(builder, alpha, signature.args[13], dt)
        beta = context.cast(builder, beta, signature.args[14], dt)
        ft = context.get_value_type(dt)
        w = VBYTES // context.get_abi_sizeof(ft)
        vt = ir.VectorType(ft, w)
        i32, i64 = ir.IntType(32), ir.IntType(64)
        fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vt, [vt, vt, vt]),
            f"llvm.fma.v{w}f{64 if ft == ir.DoubleType() else 32}")
        undef = ir.Constant(vt, ir.Undefined)
        lane0 = ir.Constant(ir.VectorType(i32, w), [0] * w)

        def splat(x):
            return builder.shuffle_vector(builder.insert_element(undef, x, i32(0)), undef, lane0)

        code = builder.add(builder.mul(builder.sext(mr, i64) if mr.type != i64 else mr,
                                       i64(8)), builder.sext(nv, i64) if nv.type != i64 else nv)
        done = builder.append_basic_block("micro.done")
        sw = builder.switch(code, done)
        for m in range(1, MR + 1):
            for v in range(1, NV + 1):
                blk = builder.append_basic_block(f"micro.{m}x{v}")
                sw.add_case(i64(m * 8 + v), blk)
                builder.position_at_end(blk)
                _emit(context, builder, m, v, w, vt, fma, splat, K, ptrs[0], a_off, sai, sak,
                      ptrs[1], b_off, ldb, ptrs[2], c_off, ldc, alpha, beta)
                builder.branch(done)
        builder.position_at_end(done)
        return context.get_dummy_value()

    return sig, codegen


@njit(**_o)
def _lanes(c) -> int:
    """Vector lanes for C's dtype."""
    return VBYTES // c.itemsize


@njit(**_o)
def _pack(b, tb, p0, kc, j0, w, wv, bp):
    """B's panel rows p0..p0+kc, columns j0..j0+w into bp (kc, wv), zero past w; read along
    B's unit-stride axis."""
    if tb:   # b is (n, k): its rows run along K
        for j in range(w):
            for q in range(kc):
                bp[q, j] = b[j0 + j, p0 + q]
    else:
        for q in range(kc):
            for j in range(w):
                bp[q, j] = b[p0 + q, j0 + j]
    for q in range(kc):
        for j in range(w, wv):
            bp[q, j] = 0


@njit(**_o)
def _pack_a(a, ta, i1, mc, p0, kc, ap):
    """A's rows i1..i1+mc, K p0..p0+kc into ap (mc, kc) rows along K; read along A's
    unit-stride axis."""
    if ta:   # a is (k, m): its rows run along M
        for q in range(kc):
            for i in range(mc):
                ap[i, q] = a[p0 + q, i1 + i]
    else:
        for i in range(mc):
            for q in range(kc):
                ap[i, q] = a[i1 + i, p0 + q]


@njit(**_o)
def _tile(mr, nv, kc, a, a_off, sai, sak, b, bp, packed, boff, nr, b_off, sbk, c, ct, direct,
          c_off, ldc, alpha, bet):
    """One micro-tile: from B's packed panel or B itself, into C's rows (``direct``) or the
    scratch tile ``ct``."""
    if direct:
        if packed:
            _micro(mr, nv, kc, a, a_off, sai, sak, bp, boff, nr, c, c_off, ldc, alpha, bet)
        else:
            _micro(mr, nv, kc, a, a_off, sai, sak, b, b_off, sbk, c, c_off, ldc, alpha, bet)
    elif packed:
        _micro(mr, nv, kc, a, a_off, sai, sak, bp, boff, nr, ct, 0, nr, alpha, 0.0)
    else:
        _micro(mr, nv, kc, a, a_off, sai, sak, b, b_off, sbk, ct, 0, nr, alpha, 0.0)


@njit(**_o)
def mgemm(ta, tb, alpha, a, b, beta, c):
    """c = alpha op(a) op(b) + beta c on the calling thread (op: transpose where ta/tb), for
    2-D float32/float64 views of any strides; c is not read when beta == 0."""
    m, n = c.shape
    k = a.shape[0] if ta else a.shape[1]
    if m == 0 or n == 0:
        return
    isz = c.itemsize
    sai, sak = (a.strides[1], a.strides[0]) if ta else (a.strides[0], a.strides[1])
    sbk, sbj = (b.strides[1], b.strides[0]) if tb else (b.strides[0], b.strides[1])
    sai, sak, sbk, sbj = sai // isz, sak // isz, sbk // isz, sbj // isz
    ldc, scj = c.strides[0] // isz, c.strides[1] // isz
    if k == 0:
        for i in range(m):
            for j in range(n):
                c[i, j] = 0 if beta == 0 else beta * c[i, j]
        return
    lanes = _lanes(c)
    nr = NV * lanes
    npan = (n + nr - 1) // nr
    kcm = min(k, KC)
    # B is packed (once per K block, panel by panel, zero-padded to whole vectors) where its
    # rows are not unit-stride, and, with vectors narrower than 512 bits, where it is large
    # (a panel's rows one cache line each, a row stride apart, thrash L1: 1024^3 with AVX2
    # runs at 0.63x unpacked); else only a ragged last panel is
    packall = sbj != 1 or (m >= 48 and k * n >= (16384 if VBYTES < 64 else 1 << 20))
    ragged = n % lanes != 0
    bp = np.empty((kcm * (npan if packall else 1), nr), c.dtype)
    ct = np.empty((MR, nr), c.dtype)   # C's tile where C's own rows can't take it
    # A is packed (its (MC, kc) block, rows along K) where its K axis is not unit-stride (a
    # transposed view: x^T @ g, a weight gradient): the micro-kernel reads a row of A per tile
    # row, each step of K a row stride apart otherwise (4096 x 8000 x 4096 tn ran at 0.5x nt)
    packa = sak != 1 and n >= 2 * nr
    ap = np.empty((MC if packa else 1, kcm if packa else 1), c.dtype)
    for p0 in range(0, k, KC):
        kc = min(KC, k - p0)
        bet = beta if p0 == 0 else 1.0
        if packall or ragged:
            for pj in range(npan if packall else 1):
                jp = pj if packall else npan - 1
                w = min(nr, n - jp * nr)
                wv = (w + lanes - 1) // lanes * lanes
                _pack(b, tb, p0, kc, jp * nr, w, wv, bp[pj * kcm:pj * kcm + kc])
        for i1 in range(0, m, MC):   # A's (MC, kc) block stays in L2 across the B panels
            if packa:
                _pack_a(a, ta, i1, min(MC, m - i1), p0, kc, ap)
            for pj in range(npan):
                j0 = pj * nr
                w = min(nr, n - j0)
                nv = (w + lanes - 1) // lanes
                whole = w == nv * lanes
                packed = packall or not whole
                boff = (pj * kcm if packall else 0) * nr
                for i0 in range(i1, min(m, i1 + MC), MR):
                    mr = min(MR, m - i0)
                    if packa:
                        _tile(mr, nv, kc, ap, (i0 - i1) * kcm, kcm, 1, b, bp, packed, boff,
                              nr, p0 * sbk + j0, sbk, c, ct, scj == 1 and whole, i0 * ldc + j0,
                              ldc, alpha, bet)
                    else:
                        _tile(mr, nv, kc, a, i0 * sai + p0 * sak, sai, sak, b, bp, packed, boff,
                              nr, p0 * sbk + j0, sbk, c, ct, scj == 1 and whole, i0 * ldc + j0,
                              ldc, alpha, bet)
                    if scj == 1 and whole:
                        continue
                    for i in range(mr):
                        for j in range(w):
                            v = ct[i, j]
                            if bet != 0:
                                v += bet * c[i0 + i, j0 + j]
                            c[i0 + i, j0 + j] = v
