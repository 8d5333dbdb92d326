"""No test module imports another test module: what tests share lives in support modules (``*_support.py``,
``*_cases.py``, ``tests/builders``), so running or moving one test file never drags in another's tests."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_modules(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names.append(base)
            # ``from tests.cli import test_bad_inputs`` imports a test module by its last name
            names.extend(f"{base}.{alias.name}" for alias in node.names)
    return names


def _test_module(name: str) -> str | None:
    """The test module ``name`` imports or reaches into (``tests.cli.test_b`` of ``tests.cli.test_b.helper``)."""
    parts = name.split(".")
    for index, part in enumerate(parts):
        if part.startswith("test_"):
            return ".".join(parts[: index + 1])
    return None


def imports_of_test_modules(root: Path = TESTS) -> dict[str, list[str]]:
    """``{file relative to root: [test modules it imports]}`` for every Python file under ``root``."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        imported = [module for module in map(_test_module, _imported_modules(tree)) if module is not None]
        if imported:
            found[path.relative_to(root).as_posix()] = sorted(set(imported))
    return found


def test_no_test_module_imports_another() -> None:
    found = imports_of_test_modules()
    assert not found, f"test modules imported (move what they share into a support module): {found}"


def test_the_scan_sees_each_way_of_importing_a_test_module(tmp_path: Path) -> None:
    package = tmp_path / "cli"
    package.mkdir()
    (package / "test_a.py").write_text("from tests.cli.test_b import helper\n")
    (package / "test_c.py").write_text("from tests.cli import test_b\nimport os\n")
    (package / "test_d.py").write_text("from .test_b import helper\n")
    (package / "test_e.py").write_text("import test_b\nfrom tests.cli.b_support import helper\n")
    (package / "b_support.py").write_text("from tests.builders import trainjob\n")
    assert imports_of_test_modules(tmp_path) == {
        "cli/test_a.py": ["tests.cli.test_b"],
        "cli/test_c.py": ["tests.cli.test_b"],
        "cli/test_d.py": [".test_b"],
        "cli/test_e.py": ["test_b"],
    }
