"""Compile the scheduler's hot modules with mypyc: ``python -m scheduler.native_build``.

Builds from a copy of the sources (mypyc writes next to what it compiles, and the working tree
must stay pure Python) into ``build/native/`` with the sources' digest, which
``scheduler.native.activate`` checks at every import. Needs mypy (with mypyc) and a C
compiler with the Python headers; without them the scheduler simply stays pure Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from scheduler.native import BUILD_DIR, COMPILED, ROOT, RUNTIME_DIR, STAMP, source_digest, source_path


def build() -> Path:
    """Compile ``COMPILED`` into ``BUILD_DIR`` and write the stamp; returns the build dir."""
    digest = source_digest()
    with tempfile.TemporaryDirectory(prefix="engine-mypyc-") as scratch:
        work = Path(scratch)
        # mypyc builds next to its sources: compile a copy of the packages, never the tree
        for package in ("runtimes", "scheduler", "simulations"):
            shutil.copytree(ROOT / package, work / package, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(ROOT / "pyproject.toml", work)  # the project's mypy settings
        sources = [str(source_path(package, name).relative_to(ROOT)) for package, name in _modules()]
        env = {**os.environ, "PYTHONPATH": str(work)}
        subprocess.run([sys.executable, "-m", "mypyc", *sources], cwd=work, env=env, check=True)
        if BUILD_DIR.exists():
            shutil.rmtree(BUILD_DIR)
        suffix = str(sysconfig.get_config_var("EXT_SUFFIX"))
        for package, name in _modules():
            target = BUILD_DIR.joinpath(*package.split("."))
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(work.joinpath(*package.split("."), f"{name}{suffix}"), target)
        for shared in work.glob(f"*__mypyc{suffix}"):
            RUNTIME_DIR.mkdir(parents=True, exist_ok=True)
            shutil.copy2(shared, RUNTIME_DIR)
    STAMP.write_text(digest + "\n")
    return BUILD_DIR


def _modules() -> list[tuple[str, str]]:
    return [(package, name) for package, modules in COMPILED.items() for name in modules]


def main() -> int:
    print(f"compiled {len(_modules())} modules of {', '.join(COMPILED)} into {build()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
