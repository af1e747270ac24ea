"""Write the kernel table of docs/backends.md from grilly.backends.contract (the data).

    python tools/contract_table.py           # rewrite the table in docs/backends.md
    python tools/contract_table.py --check   # exit 1 when the docs are out of date
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from grilly.backends import contract  # noqa: E402

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "backends.md")
BEGIN, END = "<!-- contract table: tools/contract_table.py -->", "<!-- end contract table -->"


def table() -> str:
    """The contract as markdown: tier counts, then one row per call convention and family."""
    counts = ", ".join(f"{len(contract.names(t))} {t}" for t in
                       (contract.REQUIRED, contract.COMPOSED, contract.OPTIONAL))
    lines = [f"{len(contract.KERNELS)} kernels: {counts}.", "",
             "| family | tier | kernels | call |", "|---|---|---|---|"]
    groups: dict[tuple, list] = {}
    for name, k in contract.KERNELS.items():
        groups.setdefault((k.family, k.tier, k.call), []).append(name)
    for (fam, tier, call), names in groups.items():
        lines.append(f"| {fam} | {tier} | {', '.join(f'`{n}`' for n in names)} | `{call}` |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check; exit 1 when out of date")
    args = p.parse_args()
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    new = f"{head}{BEGIN}\n{table()}\n{END}{tail}"
    if args.check:
        return 0 if new == text else 1
    with open(DOC, "w", encoding="utf-8") as f:
        f.write(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
