import numpy as np, grilly as gp
d = gp.backends.registry.device("vulkan")
for dt in ("float32", "float64"):
    for n in (1, 3, 4, 8):
        x = gp.asarray(np.array([np.inf, -np.inf, np.nan, 0.5, 1.0, 2.0, 3.0, 4.0][:n], dt), device=d)
        print(dt, n, "sin", np.asarray(gp.sin(x)), "isnan", np.asarray(gp.isnan(x)), "max", float(gp.max(x)))
    x = gp.asarray(np.array(np.nan, dt), device=d)
    print(dt, "0-d sin", np.asarray(gp.sin(x)), np.asarray(gp.cos(x)), np.asarray(gp.exp(x)))
