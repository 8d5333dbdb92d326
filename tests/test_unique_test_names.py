"""No two test modules share a basename: pytest imports them by basename (rootdir-relative
``sys.path`` entries, no packages), so the second stops the whole run at collection."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_test_module_has_a_basename_of_its_own() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        where[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: sorted(paths) for name, paths in where.items() if len(paths) > 1}
    assert not shared, f"test modules sharing a basename (rename one of each): {shared}"
