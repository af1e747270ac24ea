"""Outcomes of a kit run by op family, the missing kernels, and the ``grilly conformance`` and
``grilly kernels`` commands (pytest is imported only when the kit runs)."""
from __future__ import annotations

import json
import os
import sys

from grilly.backends import contract

SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "suite")
MISSING = "missing kernel: "       # skip reasons set by the kit's conftest
DTYPE = "dtype not supported: "
COLUMNS = ("passed", "failed", "missing kernel", "dtype not supported", "xfailed", "skipped")


def kit_id(item) -> str:
    """A test's id relative to the kit's suite folder (``test_elementwise.py::test_unary[...]``),
    the same wherever grilly is installed."""
    rel = os.path.relpath(str(item.path), SUITE).replace(os.sep, "/")
    return f"{rel}::{item.name}"


def tags(item) -> tuple[tuple, str]:
    """The kernels a test is tagged with, and its family (the first kernel's, or ``family=``)."""
    m = item.get_closest_marker("kernels")
    if m is None:
        return (), "untagged"
    ks = tuple(m.args)
    fam = m.kwargs.get("family")
    if fam is None:
        fam = next((contract.KERNELS[k].family for k in ks if k in contract.KERNELS), "other")
    return ks, fam


class Collector:
    """A pytest plugin recording each kit test's category, with a progress bar."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.tests: dict[str, dict] = {}
        self._items: dict[str, tuple] = {}
        self.total = 0
        self.done = 0

    def pytest_collectreport(self, report) -> None:
        if report.failed:   # pytest's own terminal output is off: say why collection failed
            self.stream.write(f"ERROR collecting {report.nodeid}:\n{report.longrepr}\n")

    def pytest_collection_finish(self, session) -> None:
        self.total = len(session.items)
        for it in session.items:
            self._items[it.nodeid] = (kit_id(it), *tags(it))

    def pytest_runtest_logreport(self, report) -> None:
        tid, ks, fam = self._items.get(report.nodeid, (report.nodeid, (), "untagged"))
        rec = self.tests.setdefault(tid, {"family": fam, "kernels": list(ks), "outcome": "passed",
                                          "seconds": 0.0})
        rec["seconds"] = round(rec["seconds"] + report.duration, 4)
        cat, msg = _category(report)
        if cat is not None and (rec["outcome"] == "passed" or cat == "failed"):
            rec["outcome"] = cat
            if msg:
                rec["message"] = msg
            if cat == "failed" and "reason" not in rec:
                rec["reason"] = failure_reason(report)
        if report.when == "teardown":
            self.done += 1
            self._progress()

    def _progress(self) -> None:
        n, t = self.done, max(self.total, 1)
        if self.stream.isatty():
            bar = "#" * (40 * n // t)
            self.stream.write(f"\r[{bar:<40}] {n}/{t}")
            if n == t:
                self.stream.write("\n")
        elif n == t or n % max(t // 10, 1) == 0:
            self.stream.write(f"[{'#' * (40 * n // t):<40}] {n}/{t}\n")
        self.stream.flush()

    def counts(self) -> dict[str, dict[str, int]]:
        """{family: {column: count}} and a ``total`` row."""
        out: dict[str, dict] = {}
        for rec in self.tests.values():
            for fam in (rec["family"], "total"):
                row = out.setdefault(fam, {**dict.fromkeys(COLUMNS, 0), "seconds": 0.0})
                row[rec["outcome"]] += 1
                row["seconds"] = round(row["seconds"] + rec["seconds"], 2)
        total = out.pop("total", {**dict.fromkeys(COLUMNS, 0), "seconds": 0.0})
        return {**dict(sorted(out.items())), "total": total}


def failure_reason(report) -> str:
    """One line saying why a test failed: the exception pytest reports (its first line) and,
    where checked mode noted it, which backend's kernel raised it and how it was called."""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    text = getattr(crash, "message", None) or str(report.longrepr).strip().splitlines()[-1:]
    text = text if isinstance(text, str) else " ".join(text)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    out = lines[0] if lines else ""
    full = str(report.longrepr)
    note = next((ln.strip().removeprefix("E").strip() for ln in full.splitlines()
                 if ln.strip().removeprefix("E").strip().startswith("raised by backend ")), None)
    if note and note not in out:
        out += f" ({note})"
    return out if len(out) <= 600 else out[:597] + "..."


def _category(report) -> tuple[str | None, str]:
    """(category, message) of one phase's report; None for a phase that says nothing new."""
    if report.failed:
        return "failed", str(report.longrepr)[-2000:]
    if report.skipped:
        if hasattr(report, "wasxfail"):
            return "xfailed", report.wasxfail
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        for prefix, cat in ((MISSING, "missing kernel"), (DTYPE, "dtype not supported")):
            if reason.startswith(prefix):
                return cat, reason[len(prefix):]
        return "skipped", reason
    return (None, "") if report.when != "call" else ("passed", "")


def kernel_table(device) -> dict:
    """Per family: the contract kernels ``device`` provides, those composed by default, and
    those missing (required ones separately)."""
    st = contract.status(device.kernels)
    out = {}
    for fam in contract.FAMILIES:
        names = contract.names(family=fam)
        out[fam] = {
            "provided": [n for n in names if st[n] == "provided"],
            "composed": [n for n in names if st[n] == "composed"],
            "missing_required": [n for n in names if st[n] == "missing"
                                 and contract.KERNELS[n].tier == contract.REQUIRED],
            "missing_optional": [n for n in names if st[n] == "missing"
                                 and contract.KERNELS[n].tier != contract.REQUIRED],
        }
    extra = sorted(set(device.kernels) - set(contract.KERNELS))
    return {"device": str(device), "families": out, "extra": extra}


def print_kernels(table: dict, stream=None) -> None:
    """``grilly kernels``' text output."""
    w = (stream or sys.stdout).write
    fams = table["families"]
    tot = {k: sum(len(f[k]) for f in fams.values()) for k in next(iter(fams.values()))}
    w(f"kernels of device {table['device']}: {tot['provided']} provided, {tot['composed']} composed "
      f"by default, {tot['missing_required']} required missing, {tot['missing_optional']} optional "
      "missing\n")
    for fam, f in fams.items():
        w(f"\n{fam}: {len(f['provided'])} provided, {len(f['composed'])} composed, "
          f"{len(f['missing_required']) + len(f['missing_optional'])} missing\n")
        for key, label in (("provided", "provided"), ("composed", "composed"),
                           ("missing_required", "MISSING (required)"), ("missing_optional", "missing")):
            if f[key]:
                w(f"  {label + ':':20s}{' '.join(f[key])}\n")
    if table["extra"]:
        w(f"\nkernels outside the contract: {' '.join(table['extra'])}\n")


def run(device: str, json_path: str | None = None, xfails: str | None = None,
        extra_args: tuple = ()) -> int:
    """Run the kit on ``device`` in this process: progress bar, table, missing kernels; the exit
    status is 0 only when every required kernel is provided and no test fails."""
    try:
        import pytest
    except ImportError:
        print("grilly conformance: the kit needs pytest (pip install 'grilly[testing]')", file=sys.stderr)
        return 2
    import grilly as gp

    dev = gp.backends.registry.device(device)
    col = Collector()
    # -c devnull: no project's pytest configuration (addopts, testpaths) leaks into the kit
    args = ["-p", "grilly.testing.plugin", "-p", "no:terminal", "-p", "no:cacheprovider",
            "-c", os.devnull, "--rootdir", SUITE,
            "--grilly-device", str(dev), *(["--grilly-xfails", xfails] if xfails else []),
            *extra_args, SUITE]
    print(f"grilly conformance: device {dev} ({dev.description})")
    rc = pytest.main(args, plugins=[col])
    counts = col.counts()
    table = kernel_table(dev)
    req = [n for f in table["families"].values() for n in f["missing_required"]]
    opt = [n for f in table["families"].values() for n in f["missing_optional"]]
    _print_counts(counts)
    print(f"\nmissing required kernels ({len(req)}): {' '.join(req) or '-'}")
    print(f"missing optional kernels ({len(opt)}): {' '.join(opt) or '-'}")
    failed = [t for t, r in col.tests.items() if r["outcome"] == "failed"]
    for t in failed:
        reason = col.tests[t].get("reason")
        print(f"FAILED {t}" + (f" - {reason}" if reason else ""))
    ran = sum(counts["total"].values())   # a run that ran nothing proves nothing
    status = 0 if not req and not failed and rc == 0 and ran else 1
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump({"device": str(dev), "exit_status": status, "pytest_exit": int(rc),
                       "counts": counts, "missing_required": req, "missing_optional": opt,
                       "tests": col.tests}, f, indent=1)
    print(f"\ngrilly conformance {dev}: {'PASS' if status == 0 else 'FAIL'}")
    return status


def _print_counts(counts: dict) -> None:
    heads = ("family",) + COLUMNS + ("seconds",)
    widths = [max(12, len(h)) for h in heads]
    print("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(heads, widths))))
    for fam, row in counts.items():
        cells = [fam] + [str(row[c]) for c in COLUMNS] + [f"{row['seconds']:.1f}"]
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))))
