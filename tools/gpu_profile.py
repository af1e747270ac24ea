"""Where the Vulkan backend's time goes on a GPU: per-op GPU time (many ops per sync), sync
latency, Python recording cost, memory types, matmul shader variants; torch CUDA alongside.

Run on the GPU machine: python tools/gpu_profile.py [--json out.json]. A diagnostic, not a
benchmark: bench/bench_gpu.py gives the figures quoted in docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import grilly as gp
from grilly.backends.vulkan import linalg as vk_linalg


def best(fn, reps: int = 5) -> float:
    fn()
    t = float("inf")
    for _ in range(reps):
        s = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - s)
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    dev = gp.backends.registry.device("vulkan")
    ctx = dev.ctx
    out = {"device": str(dev), "mem_types": ctx.phys.mem_types}
    print(out)

    def rec(name, value, unit):
        out[name] = value
        print(f"{name:44s} {value:12.3f} {unit}")

    def gsync(x):
        dev.synchronize()

    tx = torch.ones(4, device="cuda")
    gx = gp.ones(4, dtype=gp.float32, device=dev)
    rec("tiny sum round trip grilly", best(lambda: float(gp.sum(gx)), 50) * 1e6, "us")
    rec("tiny sum round trip torch", best(lambda: tx.sum().item(), 50) * 1e6, "us")
    rec("1-elem read grilly", best(lambda: np.asarray(gp.reshape(gx, (-1,))[:1]), 50) * 1e6, "us")
    rec("synchronize with nothing queued", best(dev.synchronize, 50) * 1e6, "us")
    rec("synchronize after one tiny op", best(lambda: (gx + gx, dev.synchronize()), 50) * 1e6,
        "us")
    rec("one tiny op + synchronize torch", best(lambda: (tx + tx, torch.cuda.synchronize()), 50)
        * 1e6, "us")

    def record_only():
        y = gx
        for _ in range(200):
            y = y + 1.0
        return y
    from grilly.backends.vulkan import fusion
    for on in (True, False):
        fusion.enable(ctx, on)
        rec(f"record one tiny op grilly (fusion {'on' if on else 'off'})",
            best(record_only, 5) / 200 * 1e6, "us")
        ctx.recorder.flush()
    fusion.enable(ctx, fusion.wanted(ctx.phys))

    def torch_only():
        y = tx
        for _ in range(200):
            y = y + 1.0
        return y
    rec("launch one tiny op torch", best(torch_only, 5) / 200 * 1e6, "us")
    torch.cuda.synchronize()

    from grilly.backends.vulkan import kernels as vk_kernels
    from grilly.backends.vulkan import reductions as vk_red
    buf = gx._buf
    pipe = ctx.pipeline("ew_float32", (40, 1))
    pc = bytes(120)

    def dispatch_only():
        for _ in range(200):
            ctx.recorder.dispatch(pipe, [buf, buf, buf], pc, 4)
    rec("recorder.dispatch alone", best(dispatch_only) / 200 * 1e6, "us")
    ctx.recorder.flush()

    def launch_only():
        for _ in range(200):
            vk_kernels.launch(ctx, "ew_float32", 40, [buf, buf, buf], (4,), "add")
    rec("kernels.launch alone", best(launch_only) / 200 * 1e6, "us")
    ctx.recorder.flush()
    from grilly.backends.vulkan.runtime import ffi, lib
    r = ctx.recorder
    r._start()
    cmd = r.cmd
    for name, call in (
            ("vkCmdBindPipeline", lambda: lib.vkCmdBindPipeline(
                cmd, lib.VK_PIPELINE_BIND_POINT_COMPUTE, pipe)),
            ("vkCmdPushDescriptorSetKHR x4", lambda: ctx.push_descriptors(
                cmd, lib.VK_PIPELINE_BIND_POINT_COMPUTE, ctx.layout, 0, 4, r._writes)),
            ("vkCmdPushConstants 120 B", lambda: lib.vkCmdPushConstants(
                cmd, ctx.layout, lib.VK_SHADER_STAGE_COMPUTE_BIT, 0, 120, pc)),
            ("vkCmdDispatch", lambda: lib.vkCmdDispatch(cmd, 1, 1, 1)),
            ("vkCmdPipelineBarrier", lambda: lib.vkCmdPipelineBarrier(
                cmd, r._stages, r._stages, 0, 1, r._barrier, 0, ffi.NULL, 0, ffi.NULL))):
        def many(call=call):
            for _ in range(200):
                call()
        rec(f"{name} (cffi call)", best(many) / 200 * 1e6, "us")
    r.recording = True
    r.flush()
    import cProfile
    import pstats
    hx = gp.asarray(np.linspace(0, 1, 1024, dtype=np.float32), device=dev)

    def chain():
        y = hx * 1.5 + 0.5
        y = gp.exp(-y * y) - 0.25
        y = gp.tanh(y) * 2.0 + hx
        y = gp.sin(y) + gp.cos(y)
        return float(gp.sum(y * y))
    chain()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(200):
        chain()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)
    sm = gp.ones((4, 64), device=dev)

    def softmax_only():
        for _ in range(100):
            gp.nn.functional.softmax(sm, dim=1)
    rec("record one softmax call", best(softmax_only) / 100 * 1e6, "us")
    ctx.recorder.flush()

    n = 64 * 1024 * 1024
    h = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    ga, gb = gp.asarray(h, device=dev), gp.asarray(h, device=dev)
    ta, tb = torch.from_numpy(h).cuda(), torch.from_numpy(h).cuda()

    # GPU-side times: timestamps around the recorded work (grilly), CUDA events (torch)
    qinfo = ffi.new("VkQueryPoolCreateInfo*", {
        "sType": lib.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        "queryType": lib.VK_QUERY_TYPE_TIMESTAMP, "queryCount": 2})
    qpool = ffi.new("VkQueryPool*")
    lib.vkCreateQueryPool(ctx.device, qinfo, ffi.NULL, qpool)
    stamps = ffi.new("uint64_t[2]")
    from grilly.backends.vulkan import recorder as vk_rec

    def gpu_ms(fn, reps=5):
        r = ctx.recorder
        r.flush()
        old = vk_rec.SUBMIT_WORK
        vk_rec.SUBMIT_WORK = 1 << 62
        out = float("inf")
        try:
            for _ in range(reps):
                r._start()
                lib.vkCmdResetQueryPool(r.cmd, qpool[0], 0, 2)
                lib.vkCmdWriteTimestamp(r.cmd, lib.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qpool[0], 0)
                keep = fn()   # held: fusion stores only results something holds
                if r.pending is not None:
                    r.pending.emit()
                lib.vkCmdWriteTimestamp(r.cmd, lib.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qpool[0], 1)
                del keep
                r.flush()
                lib.vkGetQueryPoolResults(ctx.device, qpool[0], 0, 2, 16, stamps, 8,
                                          lib.VK_QUERY_RESULT_64_BIT | lib.VK_QUERY_RESULT_WAIT_BIT)
                out = min(out, (stamps[1] - stamps[0]) * 1e-6)
        finally:
            vk_rec.SUBMIT_WORK = old
        return out

    def cuda_ms(fn, reps=5):
        fn()
        out = float("inf")
        for _ in range(reps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            fn()
            e1.record()
            torch.cuda.synchronize()
            out = min(out, e0.elapsed_time(e1))
        return out
    hs0 = np.random.default_rng(1).standard_normal((4096, 4096)).astype(np.float32)
    gs0, ts0 = gp.asarray(hs0, device=dev), torch.from_numpy(hs0).cuda()
    rec("GPU time add 64M grilly", gpu_ms(lambda: ga + gb), "ms")
    rec("GPU time add 64M torch", cuda_ms(lambda: ta + tb), "ms")
    rec("GPU time sum 64M grilly", gpu_ms(lambda: gp.sum(ga)), "ms")
    rec("GPU time sum 64M torch", cuda_ms(lambda: ta.sum()), "ms")
    rec("GPU time softmax 4096^2 grilly", gpu_ms(lambda: gp.nn.functional.softmax(gs0, dim=1)), "ms")
    rec("GPU time softmax 4096^2 torch", cuda_ms(lambda: torch.softmax(ts0, dim=1)), "ms")
    rec("GPU time matmul 4096 grilly", gpu_ms(lambda: gs0 @ gs0), "ms")
    rec("GPU time matmul 4096 torch", cuda_ms(lambda: ts0 @ ts0), "ms")
    from grilly.backends.vulkan import kernels as vk_k

    def chain(xp, x):
        y = x * 1.5 + 0.5
        y = xp.exp(-y * y) - 0.25
        y = xp.tanh(y) * 2.0 + x
        y = xp.sin(y) + xp.cos(y)
        return y * y
    old_max = vk_k.FUSE_MAX
    vk_k.FUSE_MAX = 1 << 30
    for m in (12, 16, 18, 20, 22):
        hc = np.random.default_rng(5).standard_normal(1 << m).astype(np.float32)
        gc, tc = gp.asarray(hc, device=dev), torch.from_numpy(hc).cuda()
        for on in (True, False):
            fusion.enable(ctx, on)
            rec(f"GPU time 13-op chain 2^{m} grilly fusion {'on' if on else 'off'}",
                gpu_ms(lambda: chain(gp, gc)), "ms")
        rec(f"GPU time 13-op chain 2^{m} torch", cuda_ms(lambda: chain(torch, tc)), "ms")
    vk_k.FUSE_MAX = old_max
    fusion.enable(ctx, fusion.wanted(ctx.phys))
    for k in (1, 10):
        def g():
            for _ in range(k):
                y = ga + gb
            gsync(y)

        def t():
            for _ in range(k):
                ta + tb
            torch.cuda.synchronize()
        rec(f"add 64M x{k} per op grilly", best(g) / k * 1e3, "ms")
        rec(f"add 64M x{k} per op torch", best(t) / k * 1e3, "ms")

    # the same add on device-local (not host-visible) memory
    pool = ctx.pool
    local = [i for i, (f, _) in enumerate(ctx.phys.mem_types) if f == 1]
    if local:
        orig = pool.type_index
        pool.free.clear()
        pool.type_index = lambda bits: local[0]
        try:
            da, db = gp.empty(n, device=dev), gp.empty(n, device=dev)

            def g2():
                for _ in range(10):
                    y = da + db  # noqa: F841
                ctx.recorder.flush()
            rec("add 64M x10 per op grilly device-local", best(g2) / 10 * 1e3, "ms")
        finally:
            pool.type_index = orig
            pool.free.clear()

    for groups in (1056, 2048):
        vk_red.VEC4_GROUPS = groups

        def gsg():
            for _ in range(10):
                y = gp.sum(ga)
            gsync(y)
        rec(f"sum 64M x10 per op groups={groups}", best(gsg) / 10 * 1e3, "ms")
    for k in (1, 10):
        def gs():
            for _ in range(k):
                y = gp.sum(ga)
            gsync(y)

        def ts():
            for _ in range(k):
                ta.sum()
            torch.cuda.synchronize()
        rec(f"sum 64M x{k} per op grilly", best(gs) / k * 1e3, "ms")
        rec(f"sum 64M x{k} per op torch", best(ts) / k * 1e3, "ms")

    torch.backends.cuda.matmul.allow_tf32 = False
    hm = np.random.default_rng(2).standard_normal((4096, 4096)).astype(np.float32)
    gm, tm = gp.asarray(hm, device=dev), torch.from_numpy(hm).cuda()
    for bk in (3, 16):  # 3 divides no k here: the general 64-tile shader
        vk_linalg.SGEMM_BK = bk

        def gmm():
            for _ in range(3):
                y = gm @ gm
            gsync(y)
        rec(f"matmul 4096 f32 grilly {'sgemm' if bk == 16 else 'tiled64'}",
            2 * 4096**3 / (best(gmm, 3) / 3) / 1e12, "TFLOP/s")
    vk_linalg.SGEMM_BK = 16

    def tmm():
        for _ in range(3):
            tm @ tm
        torch.cuda.synchronize()
    rec("matmul 4096 f32 torch", 2 * 4096**3 / (best(tmm, 3) / 3) / 1e12, "TFLOP/s")

    hs = np.random.default_rng(1).standard_normal((4096, 4096)).astype(np.float32)
    gs_, ts_ = gp.asarray(hs, device=dev), torch.from_numpy(hs).cuda()

    def gsoft():
        for _ in range(5):
            y = gp.nn.functional.softmax(gs_, dim=1)
        gsync(y)

    def tsoft():
        for _ in range(5):
            torch.softmax(ts_, dim=1)
        torch.cuda.synchronize()
    rec("softmax 4096^2 per op grilly", best(gsoft) / 5 * 1e3, "ms")
    rec("softmax 4096^2 per op torch", best(tsoft) / 5 * 1e3, "ms")
    rec("download 256 MiB grilly (staged)", 4 * n / best(lambda: np.asarray(ga), 3) / 1e9, "GB/s")
    rec("download 256 MiB torch", 4 * n / best(lambda: ta.cpu().numpy(), 3) / 1e9, "GB/s")
    rec("upload 256 MiB grilly", 4 * n / best(lambda: gsync(gp.asarray(h, device=dev)), 3) / 1e9,
        "GB/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
