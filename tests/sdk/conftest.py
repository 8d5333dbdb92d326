"""Make ``runtimes`` the project package, not this test directory's parent.

The root conftest puts ``tests/`` on sys.path, where ``tests/runtimes/`` would otherwise be
found as a namespace package named ``runtimes``. A regular package anywhere on sys.path wins
over a namespace portion, so the repository root goes on sys.path before anything imports it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))
for _name in [m for m in sys.modules if m == "runtimes" or m.startswith("runtimes.")]:
    if getattr(sys.modules[_name], "__file__", None) is None:
        del sys.modules[_name]
