"""The ``grilly`` command: ``grilly info`` lists backends, devices and capabilities;
``grilly warmup`` compiles the CPU kernels into the on-disk cache ahead of first use."""
from __future__ import annotations

import argparse
import json


def info() -> dict:
    """Backends, their devices and what each device reports."""
    import grilly as gp
    from grilly.backends import registry

    out = {"version": gp.__version__, "array_api_version": gp.__array_api_version__,
           "default_device": str(gp.default_device()), "backends": {}}
    registry.load()
    for name, b in registry.backends.items():
        devs = registry.devices_of(b)
        out["backends"][name] = {
            "devices": {str(d): {"description": d.description, **b.info(d)} for d in devs},
            **({"unavailable": b.unavailable_reason} if getattr(b, "unavailable_reason", "") else {}),
        }
    if registry.problems:   # plugins left out (failed to import, raised, duplicate names)
        out["plugin_problems"] = dict(registry.problems)
    if registry.overridden:   # kernels a plugin replaced deliberately (grilly.backends.overrides)
        out["kernel_overrides"] = {f"{b}.{op}": f"{who} (was {was})"
                                   for (b, op), (who, was) in registry.overridden.items()}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="grilly", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="backends, devices, capabilities (JSON)")
    w = sub.add_parser("warmup", help="compile the CPU kernels of every op and dtype ahead of use")
    w.add_argument("-j", "--jobs", type=int, default=None, help="processes (default: all cores)")
    w.add_argument("-v", "--verbose", action="store_true", help="seconds per group and dtype")
    args = p.parse_args(argv)
    if args.cmd == "info":
        print(json.dumps(info(), indent=2, default=str))
    elif args.cmd == "warmup":
        from grilly.backends.cpu_numba.jit import cache_dir
        from grilly.warmup import warmup
        secs = warmup(args.jobs, args.verbose)
        print(f"grilly warmup: CPU kernels compiled into {cache_dir()} in {secs:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
