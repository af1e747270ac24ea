"""grilly quickstart: the devices found, then real work with arrays on the default device."""
import time

import grilly as gp
from grilly.cli import info

facts = info()
print(f"grilly {facts['version']} (Array API {facts['array_api_version']})")
for name, b in facts["backends"].items():
    devs = ", ".join(f"{d} ({v['description']})" for d, v in b["devices"].items()) or "none"
    print(f"  backend {name:7s} devices: {devs}" + (f"  [{b['unavailable']}]" if "unavailable" in b else ""))
dev = gp.default_device()
print(f"default device: {dev}\n")

# A least-squares fit y = a*x + b, computed entirely with namespace ops on the device.
x = gp.linspace(0.0, 1.0, 1_000_000, device=dev)
y = 3.0 * x + 0.5 + 0.01 * gp.sin(50.0 * x)
t = time.perf_counter()
n = x.shape[0]
mx, my = gp.mean(x), gp.mean(y)
a = gp.sum((x - mx) * (y - my)) / gp.sum((x - mx) ** 2)
b = my - a * mx
print(f"fit of 1M points: a={float(a):.4f} b={float(b):.4f}  ({(time.perf_counter() - t) * 1e3:.1f} ms)")

# Matrices: a product and a solve.
m = gp.reshape(gp.arange(16, dtype=gp.float64, device=dev), (4, 4)) + 10 * gp.eye(4, device=dev)
v = gp.ones(4, device=dev)
print("m @ v =", (m @ v).tolist())
print("solve(m, v) =", [round(t, 5) for t in gp.linalg.solve(m, v).tolist()])
print("sorted:", gp.sort(gp.asarray([3, 1, 2], device=dev)).tolist(),
      " unique:", gp.unique_values(gp.asarray([1, 1, 2, 3, 3], device=dev)).tolist())
