"""The ``grilly`` command: ``grilly info`` lists backends, devices and capabilities."""
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
        devs = b.devices()
        out["backends"][name] = {
            "devices": {str(d): {"description": d.description, **b.info(d)} for d in devs},
            **({"unavailable": b.unavailable_reason} if getattr(b, "unavailable_reason", "") else {}),
        }
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="grilly", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="backends, devices, capabilities (JSON)")
    args = p.parse_args(argv)
    if args.cmd == "info":
        print(json.dumps(info(), indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
