"""Functions a reader can hold at once: none in the packages runs past 60 lines (split it along what it does)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("scheduler", "runtimes", "webhooks", "simulations", "sandbox", "trainyard")
LIMIT = 60


def oversized_functions(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES, limit: int = LIMIT) -> dict[str, int]:
    """``{"path:line name": lines}`` for every function or method (nested ones too) over ``limit``
    lines, counted from its ``def`` line to its last line, docstring and comments included."""
    found: dict[str, int] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > limit:
                        found[f"{path.relative_to(root).as_posix()}:{node.lineno} {node.name}"] = lines
    return found


def test_no_function_over_the_limit() -> None:
    over = oversized_functions()
    assert not over, f"functions over {LIMIT} lines (split each along what it does): {over}"


def test_the_count_sees_long_functions_methods_and_nested_ones(tmp_path: Path) -> None:
    package = tmp_path / "pkg" / "sub"
    package.mkdir(parents=True)
    body = "    x = 1\n"
    (package / "mod.py").write_text(
        "def short():\n"
        + body * (LIMIT - 1)  # exactly LIMIT lines: allowed
        + "\n\ndef long():\n"
        + body * LIMIT
        + "\n\nclass C:\n    async def method(self):\n"
        + body.replace("    ", "        ") * LIMIT
        + "\n\ndef outer():\n    def inner():\n"
        + body.replace("    ", "        ") * LIMIT
    )
    start_long = 2 + LIMIT - 1 + 2  # short's lines, two blank lines, then long's def
    found = oversized_functions(tmp_path, ("pkg",))
    assert found == {
        f"pkg/sub/mod.py:{start_long} long": LIMIT + 1,
        f"pkg/sub/mod.py:{start_long + LIMIT + 4} method": LIMIT + 1,
        f"pkg/sub/mod.py:{start_long + 2 * LIMIT + 7} outer": LIMIT + 2,
        f"pkg/sub/mod.py:{start_long + 2 * LIMIT + 8} inner": LIMIT + 1,
    }


if __name__ == "__main__":
    for name, lines in sorted(oversized_functions().items(), key=lambda item: -item[1]):
        print(lines, name)
