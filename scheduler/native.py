"""The scheduler's hot modules compiled with mypyc, used only while they match their sources.

The pure-Python files stay the single source of truth. ``make install`` runs
``python -m scheduler.native_build``, which compiles ``COMPILED`` (the admission cycle's modules
in ``scheduler.engine`` and gang placement's in ``scheduler.topology``) with mypyc (the project's
strict typing is what mypyc needs) into ``build/native/`` (ignored by git) and records a sha256
of every compiled source next to them.
At import, each of those packages calls ``activate``: when the recorded digest equals the
sources' digest now, the package's compiled directory goes first on its ``__path__`` and the
compiled modules are what runs; when anything differs (a source was edited after the build, the
build is absent, another Python), nothing changes and the package runs as pure Python.
``TRAINYARD_PURE_ENGINE=1`` forces pure Python. Decisions are the same either way
(``tests/test_decision_hash.py`` checks them in whichever mode the checkout is in).
"""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
from pathlib import Path

# Pure-Python-heavy modules, per package. In the engine: the admission cycle (flavor assignment,
# quota walk, preemption search, queues) and the bridge to placement; the facade and restore
# stay interpreted. In topology: placement, capacity counts and domain search (numpy does the
# arithmetic; compiled, the Python around each numpy call costs less). graph.py (networkx) and
# model.py (records every layer builds and compares) stay interpreted.
COMPILED: dict[str, tuple[str, ...]] = {
    "simulations": (
        "arrivals",
        "engine_driver",
        "events",
        "kwok_query",
        "metrics",
        "observers",
        "simulator",
        "workloads",
    ),
    "simulations.kwok": ("delays", "lifecycle", "stages"),
    "scheduler.engine": (
        "admitted",
        "candidates",
        "cluster",
        "cycle",
        "engine",
        "fairsharing",
        "flavor_match",
        "flavors",
        "placement",
        "preemption",
        "queues",
        "quota",
        "results",
        "workloads",
    ),
    "scheduler.topology": (
        "capacity",
        "describe",
        "distribution",
        "leader",
        "leaf_index",
        "model",
        "node_cells",
        "placer",
        "reservations",
        "row_block",
        "search",
        "shapes",
    ),
}
ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = ROOT / "build" / "native"
STAMP = BUILD_DIR / "engine.sha256"
# mypyc's shared runtime module, on sys.path by itself: BUILD_DIR holds a ``scheduler`` tree of
# compiled modules without ``__init__.py``, and on sys.path it would be found as a namespace
# package ahead of an editable install's finder (in a spawned child process, which inherits
# sys.path), hiding the real package.
RUNTIME_DIR = BUILD_DIR / "runtime"
PURE_ENV = "TRAINYARD_PURE_ENGINE"


def source_path(package: str, module: str) -> Path:
    return ROOT.joinpath(*package.split("."), f"{module}.py")


def source_digest() -> str:
    """sha256 over the compiled modules' sources and this interpreter's extension suffix."""
    digest = hashlib.sha256(str(sysconfig.get_config_var("EXT_SUFFIX")).encode())
    for package, modules in COMPILED.items():
        for name in modules:
            digest.update(f"{package}.{name}".encode())
            digest.update(source_path(package, name).read_bytes())
    return digest.hexdigest()


def activate(package_path: list[str], package: str) -> bool:
    """Put ``package``'s compiled modules first on ``package_path`` when they match the sources."""
    if os.environ.get(PURE_ENV) or not STAMP.is_file():
        return False
    try:
        if STAMP.read_text().strip() != source_digest():
            return False
    except OSError:
        return False
    compiled = str(BUILD_DIR.joinpath(*package.split(".")))
    if compiled not in package_path:
        package_path.insert(0, compiled)
    if str(RUNTIME_DIR) not in sys.path:
        sys.path.append(str(RUNTIME_DIR))
    return True


def is_compiled() -> bool:
    """Whether the admission cycle and gang placement run compiled in this process."""
    from scheduler.engine import cycle
    from scheduler.topology import placer

    return not any((module.__file__ or "").endswith(".py") for module in (cycle, placer))
