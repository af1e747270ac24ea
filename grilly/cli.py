"""The ``grilly`` command: ``grilly info`` lists backends, devices and capabilities;
``grilly warmup`` compiles the CPU kernels into the on-disk cache ahead of first use;
``grilly conformance DEVICE`` runs the backend conformance kit; ``grilly kernels DEVICE`` lists
which contract kernels a device provides, composes or lacks."""
from __future__ import annotations

import argparse
import json
import sys


def _device_info(b, d) -> dict:
    """``b.info(d)``; a backend whose info raises (or returns no dict) is reported, not fatal:
    one plugin's bug must not take ``grilly info`` down for every other backend."""
    try:
        got = b.info(d)
    except Exception as e:
        return {"info_error": f"info() raised {type(e).__name__}: {e}"}
    if not isinstance(got, dict):
        return {"info_error": f"info() returned a {type(got).__name__}, expected a dict"}
    return got


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
            "devices": {str(d): {"description": d.description, **_device_info(b, d)}
                        for d in devs},
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
    sub.add_parser("info", help="backends, devices, capabilities (JSON)",
                   description="Print grilly's version, the default device, every backend with "
                   "its devices and what each device reports (features, limits, memory), and any "
                   "plugin problems or kernel overrides, as JSON on stdout.")
    w = sub.add_parser("warmup", help="compile the CPU kernels of every op and dtype ahead of use",
                       description="Compile the Numba kernels of every op for every dtype into "
                       "the on-disk cache ($GRILLY_CACHE_DIR, else $XDG_CACHE_HOME/grilly or "
                       "~/.cache/grilly), in parallel "
                       "processes, so that later processes load machine code instead of "
                       "compiling on first use.")
    w.add_argument("-j", "--jobs", type=int, default=None, help="processes (default: all cores)")
    w.add_argument("-v", "--verbose", action="store_true", help="seconds per group and dtype")
    c = sub.add_parser("conformance", help="run the backend conformance kit on a device",
                       description="Run the backend conformance kit (grilly.testing) on DEVICE: "
                       "a progress bar, a table of outcomes by op family, the missing kernels and "
                       "the failed tests. Exit status 0 only when every required kernel is "
                       "provided and no test fails. Needs pytest.")
    c.add_argument("device", help="device name (cpu, vulkan, vulkan:1, ...)")
    c.add_argument("--json", metavar="F", help="write counts and per-test outcomes to F")
    c.add_argument("--xfails", metavar="F", help="file of kit test ids expected to fail")
    k = sub.add_parser("kernels", help="kernels a device provides, composes by default, or lacks",
                       description="List, per op family, the contract kernels DEVICE provides, "
                       "those the array layer composes by default, and the missing ones. Exit "
                       "status 1 when a required kernel is missing.")
    k.add_argument("device", help="device name (cpu, vulkan, vulkan:1, ...)")
    k.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = p.parse_args(argv)
    if args.cmd in ("conformance", "kernels"):
        from grilly.backends import registry
        try:
            dev = registry.device(args.device)
        except ValueError as e:   # an unknown device: the message lists the available ones
            print(f"grilly {args.cmd}: {e}", file=sys.stderr)
            return 2
    if args.cmd == "conformance":
        from grilly.testing.report import run
        return run(str(dev), args.json, args.xfails)
    if args.cmd == "kernels":
        from grilly.testing.report import kernel_table, print_kernels
        table = kernel_table(dev)
        if args.json:
            print(json.dumps(table, indent=2))
        else:
            print_kernels(table)
        return 1 if any(f["missing_required"] for f in table["families"].values()) else 0
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
