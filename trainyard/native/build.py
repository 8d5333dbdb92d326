"""Compile the list in ``trainyard.native.modules`` with mypyc: ``python -m trainyard.native.build``.

``make install`` runs it whenever one of its inputs changed (the Makefile's dependencies come from
``python -m trainyard.native.modules``). It compiles a copy of the sources (mypyc writes next to
what it compiles, and the working tree stays pure Python) into a fresh folder, writes the manifest
(each source's sha256) there, then puts the folder in place of ``build/native`` in one rename, so a
process starting meanwhile sees the old build or the new one, never half of one. Last it installs
the activation hook: a ``.pth`` file in this interpreter's site-packages that calls
``trainyard.native.activation.install`` at every start. Needs mypy (with mypyc) and a C compiler
with the Python headers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from trainyard.native.activation import PURE_ENV, extension_path
from trainyard.native.modules import BUILD_DIR, COMPILED, ROOT, compiled_modules, source_digest, source_path

# what mypy reads to type the compiled modules: their packages and what they import
SOURCE_PACKAGES = ("runtimes", "scheduler", "simulations")
HOOK_NAME = "trainyard-native.pth"
HOOK_LINE = "import trainyard.native.activation; trainyard.native.activation.install()\n"


def compile_into(target: Path) -> str:
    """Compile every listed module into ``target`` (laid out as ``extension_path`` says);
    returns the name of mypyc's shared runtime module."""
    suffix = str(sysconfig.get_config_var("EXT_SUFFIX"))
    with tempfile.TemporaryDirectory(prefix="trainyard-mypyc-") as scratch:
        work = Path(scratch)
        for package in SOURCE_PACKAGES:
            shutil.copytree(ROOT / package, work / package, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(ROOT / "pyproject.toml", work)  # the project's mypy settings
        sources = [str(source_path(module, work).relative_to(work)) for module in compiled_modules()]
        env = {**os.environ, "PYTHONPATH": str(work), PURE_ENV: "1"}
        subprocess.run([sys.executable, "-m", "mypyc", *sources], cwd=work, env=env, check=True)
        runtimes = sorted(work.glob(f"*__mypyc{suffix}"))
        if len(runtimes) != 1:
            raise RuntimeError(f"mypyc left {len(runtimes)} shared runtime modules in {work}, expected one")
        runtime = runtimes[0].name.removesuffix(suffix)
        placed = {runtimes[0]: extension_path(target, runtime, runtime)}
        for module in compiled_modules():
            placed[source_path(module, work).with_suffix(suffix)] = extension_path(target, module, runtime)
        for built, destination in placed.items():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, destination)
    return runtime


def build(build_dir: Path = BUILD_DIR) -> Path:
    """Compile, write the manifest, swap the new build in; returns ``build_dir``."""
    digests = {module: source_digest(module) for module in compiled_modules()}
    build_dir.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{build_dir.name}-", dir=build_dir.parent))
    try:
        runtime = compile_into(fresh)
        manifest = {"ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"), "runtime": runtime, "modules": digests}
        (fresh / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        old = build_dir.with_name(f".{build_dir.name}-old")
        shutil.rmtree(old, ignore_errors=True)
        if build_dir.exists():
            build_dir.rename(old)
        fresh.rename(build_dir)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    return build_dir


def install_hook(site_packages: Path | None = None) -> Path:
    """Write the ``.pth`` file that activates the build in every interpreter of this environment."""
    folder = site_packages or Path(sysconfig.get_paths()["purelib"])
    hook = folder / HOOK_NAME
    hook.write_text(HOOK_LINE)
    return hook


def main() -> int:
    where = build()
    hook = install_hook()
    print(f"compiled {len(compiled_modules())} modules of {', '.join(COMPILED)} into {where}; activated by {hook}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
