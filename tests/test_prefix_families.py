"""A folder per concept: no folder holds a family of more than five modules sharing a name prefix.

Files named ``queues.py``, ``queues_edit.py``, ``queues_render.py``, ... are one concept split at the
size cap by prefix; past five they become a subpackage named for the concept (``queues/``) with
modules named for what each does (``queues/edit.py``), as kopf's ``_core/engines/`` does.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("scheduler", "runtimes", "webhooks", "simulations", "sandbox", "trainyard", "dashboard")
LIMIT = 5

# Families that their owners are turning into subpackages (issue 35); a debt list that may only
# shrink: remove an entry once its family is a subpackage. Each entry is "folder/prefix*".
KNOWN: set[str] = set()


def prefix_of(stem: str) -> str:
    """The name before the first ``_`` (the whole name when it has none)."""
    return stem.split("_", 1)[0]


def prefix_families(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES, limit: int = LIMIT) -> dict[str, int]:
    """``{"folder/prefix*": count}`` for every folder under ``packages`` with more than ``limit``
    ``.py`` files sharing a prefix (dunder modules such as ``__init__.py`` are not a family)."""
    found: dict[str, int] = {}
    for package in packages:
        folders = [root / package, *sorted(p for p in (root / package).rglob("*") if p.is_dir())]
        for folder in folders:
            families: defaultdict[str, int] = defaultdict(int)
            for path in folder.glob("*.py"):
                if not path.stem.startswith("__"):
                    families[prefix_of(path.stem)] += 1
            for prefix, count in families.items():
                if count > limit:
                    found[f"{folder.relative_to(root).as_posix()}/{prefix}*"] = count
    return found


def test_no_folder_holds_a_prefix_family() -> None:
    over = {family: count for family, count in prefix_families().items() if family not in KNOWN}
    assert not over, (
        f"folders with more than {LIMIT} modules sharing a prefix (make each family a subpackage "
        f"named for its concept, its modules named for what each does): {over}"
    )


def test_the_scan_sees_a_family(tmp_path: Path) -> None:
    folder = tmp_path / "pkg" / "sub"
    folder.mkdir(parents=True)
    for name in ("__init__", "tour", "tour_a", "tour_b", "tour_c", "tour_d", "tour_e", "serve", "serve_a"):
        (folder / f"{name}.py").write_text("")
    (tmp_path / "pkg" / "__init__.py").write_text("")
    assert prefix_families(tmp_path, ("pkg",)) == {"pkg/sub/tour*": 6}
    (folder / "tour_e.py").unlink()
    assert prefix_families(tmp_path, ("pkg",)) == {}


if __name__ == "__main__":
    for family, count in sorted(prefix_families().items()):
        print(count, family)
