"""The import graph of the grilly package: which module imports which, and its cycles.

``python3 tools/import_graph.py`` prints every cycle (strongly connected component) among
grilly's modules, counting imports at module level and inside functions alike, since a
function-local import that exists to dodge a cycle is still a cycle. tests/test_import_graph.py
holds the result at zero.
"""
from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1] / "grilly"


def module_name(path: pathlib.Path) -> str:
    """The dotted name of a module file under ROOT."""
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(mod: str, is_pkg: bool, level: int, target: str | None) -> str:
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    if level:
        base = base[: len(base) - (level - 1)]
        return ".".join(base + ([target] if target else []))
    return target or ""


def graph(include_sys_modules: bool = True) -> dict[str, set[str]]:
    """module -> the grilly modules it imports (``from x import y`` counts y when it is a module)."""
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    out: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node.level, node.module)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                           for a in node.names]
            elif (include_sys_modules and isinstance(node, ast.Subscript)
                  and isinstance(node.value, ast.Attribute) and node.value.attr == "modules"
                  and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
                targets = [node.slice.value]
            for t in targets:
                while t and t not in files:
                    t = t.rpartition(".")[0]
                if t and t != mod and t.startswith("grilly"):
                    out[mod].add(t)
    return out


def _package_edges(g: dict[str, set[str]]) -> dict[str, set[str]]:
    # importing a.b.c runs a/__init__ and a/b/__init__ first
    out = {m: set(d) for m, d in g.items()}
    for m, deps in g.items():
        for d in list(deps):
            parts = d.split(".")
            for i in range(1, len(parts)):
                p = ".".join(parts[:i])
                if p in g and p != m and not m.startswith(p + ".") and p != "grilly":
                    out[m].add(p)
    return out


def cycles(g: dict[str, set[str]] | None = None) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    g = _package_edges(graph() if g is None else g)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    cs = cycles()
    for c in cs:
        print(len(c), " ".join(c))
    print(f"{len(cs)} cycle(s)")
