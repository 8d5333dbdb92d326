"""Compile the engine's hot modules with mypyc: ``python -m scheduler.engine.native_build``.

Builds from a copy of the sources (mypyc writes next to what it compiles, and the working tree
must stay pure Python) into ``build/native/`` with the sources' digest, which
``scheduler.engine.native.activate`` checks at every import. Needs mypy (with mypyc) and a C
compiler with the Python headers; without them the engine simply stays pure Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from scheduler.engine.native import BUILD_DIR, COMPILED, ROOT, STAMP, source_digest


def build() -> Path:
    """Compile ``COMPILED`` into ``BUILD_DIR`` and write the stamp; returns the build dir."""
    digest = source_digest()
    with tempfile.TemporaryDirectory(prefix="engine-mypyc-") as scratch:
        work = Path(scratch)
        # mypyc builds next to its sources: compile a copy of the packages, never the tree
        for package in ("runtimes", "scheduler"):
            shutil.copytree(ROOT / package, work / package, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(ROOT / "pyproject.toml", work)  # the project's mypy settings
        sources = [f"scheduler/engine/{name}.py" for name in COMPILED]
        env = {**os.environ, "PYTHONPATH": str(work)}
        subprocess.run([sys.executable, "-m", "mypyc", *sources], cwd=work, env=env, check=True)
        if BUILD_DIR.exists():
            shutil.rmtree(BUILD_DIR)
        target = BUILD_DIR / "scheduler" / "engine"
        target.mkdir(parents=True)
        suffix = str(sysconfig.get_config_var("EXT_SUFFIX"))
        for name in COMPILED:
            shutil.copy2(work / "scheduler" / "engine" / f"{name}{suffix}", target)
        for shared in work.glob(f"*__mypyc{suffix}"):
            shutil.copy2(shared, BUILD_DIR)
    STAMP.write_text(digest + "\n")
    return BUILD_DIR


def main() -> int:
    print(f"compiled {len(COMPILED)} engine modules into {build()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
