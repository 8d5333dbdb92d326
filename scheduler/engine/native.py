"""The engine's hot modules compiled with mypyc, used only while they match their sources.

The pure-Python files stay the single source of truth. ``make install`` runs
``python -m scheduler.engine.native_build``, which compiles ``COMPILED`` with mypyc (the
project's strict typing is what mypyc needs) into ``build/native/`` (ignored by git) and
records a sha256 of every compiled source next to them.
At import, ``scheduler.engine`` calls ``activate``: when the recorded digest equals the sources'
digest now, the compiled directory goes first on the package's ``__path__`` and the compiled
modules are what runs; when anything differs (a source was edited after the build, the build
is absent, another Python), nothing changes and the engine runs as pure Python.
``TRAINYARD_PURE_ENGINE=1`` forces pure Python. Decisions are the same either way
(``tests/test_decision_hash.py`` checks them in whichever mode the checkout is in).
"""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
from pathlib import Path

# Pure-Python-heavy modules of the admission cycle (flavor assignment, quota walk, preemption
# search, queues). The facade, restore and the topology bridge stay interpreted.
COMPILED = (
    "admitted",
    "candidates",
    "cluster",
    "cycle",
    "fairsharing",
    "flavor_match",
    "flavors",
    "preemption",
    "queues",
    "quota",
    "results",
    "workloads",
)
PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = PACKAGE_DIR.parent.parent
BUILD_DIR = ROOT / "build" / "native"
STAMP = BUILD_DIR / "engine.sha256"
PURE_ENV = "TRAINYARD_PURE_ENGINE"


def source_digest() -> str:
    """sha256 over the compiled modules' sources and this interpreter's extension suffix."""
    digest = hashlib.sha256(str(sysconfig.get_config_var("EXT_SUFFIX")).encode())
    for name in COMPILED:
        digest.update(name.encode())
        digest.update((PACKAGE_DIR / f"{name}.py").read_bytes())
    return digest.hexdigest()


def activate(package_path: list[str]) -> bool:
    """Put the compiled modules first on ``package_path`` when they match the sources."""
    if os.environ.get(PURE_ENV) or not STAMP.is_file():
        return False
    try:
        if STAMP.read_text().strip() != source_digest():
            return False
    except OSError:
        return False
    compiled = str(BUILD_DIR / "scheduler" / "engine")
    if compiled not in package_path:
        package_path.insert(0, compiled)
    if str(BUILD_DIR) not in sys.path:
        sys.path.append(str(BUILD_DIR))  # mypyc's shared runtime module lives there
    return True


def is_compiled() -> bool:
    """Whether the admission cycle runs compiled in this process."""
    from scheduler.engine import cycle

    return not (cycle.__file__ or "").endswith(".py")
