"""No file-level import cycles inside the packages: arrows between modules point one way.

A cycle hidden under ``TYPE_CHECKING`` or inside a function is still a cycle in the design (the two
modules cannot be understood apart), so every import statement counts, wherever it sits.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("scheduler", "runtimes", "webhooks", "simulations", "sandbox", "trainyard")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` names the module pkg.mod; `from pkg import thing` names pkg itself
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> nx.DiGraph:
    files = {_module_name(p, root): p for pkg in packages for p in (root / pkg).rglob("*.py")}
    known = set(files)
    graph: nx.DiGraph = nx.DiGraph()
    for name, path in files.items():
        graph.add_node(name)
        for target in _imported_modules(path, name, known):
            graph.add_edge(name, target)
    return graph


def file_cycles(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[list[str]]:
    """Every cycle between modules, package ``__init__`` files included: a package's facade may
    import its modules, and then none of them may import the facade back."""
    graph = import_graph(root, packages)
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


# Cycles known and owned elsewhere (each through an import inside a function); a debt list that
# may only shrink. An entry that is no longer a cycle is harmless: drop it when you see it gone
# (`python tests/test_import_cycles.py` prints what is left).
KNOWN: list[list[str]] = []


def test_no_file_level_import_cycles() -> None:
    cycles = file_cycles()
    new = [c for c in cycles if c not in KNOWN]
    assert not new, "import cycles between modules: " + "; ".join(" <-> ".join(c) for c in new)


def test_the_finder_reads_every_package() -> None:
    graph = import_graph()
    for package in PACKAGES:
        assert any(node.startswith(f"{package}.") for node in graph), package
    # Edges inside a package and across packages are both seen.
    assert graph.has_edge("scheduler.api.kueue", "scheduler.api.kueue_admission_checks")
    assert graph.has_edge("webhooks.tls", "runtimes.k8s.certificates")


def test_the_finder_sees_cycles_under_type_checking_in_functions_and_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.a import A\n")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\nA = 1\n")
    (pkg / "b.py").write_text("from .a import A\nB = A\n")
    (pkg / "c.py").write_text("from pkg import b\n")
    (pkg / "d.py").write_text("def late() -> None:\n    from pkg import e\n")
    (pkg / "e.py").write_text("import pkg.d\n")
    assert file_cycles(tmp_path, ("pkg",)) == [["pkg.a", "pkg.b"], ["pkg.d", "pkg.e"]]
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "e.py").write_text("E = 1\n")
    assert file_cycles(tmp_path, ("pkg",)) == []


def test_a_cycle_through_a_package_init_counts(tmp_path: Path) -> None:
    """``pkg/__init__`` re-exports ``pkg.a``; ``pkg.a`` reading a name of ``pkg`` (not a module of
    it) closes a loop, as ``native.py → engine/cycle.py → … → topology/__init__.py → native.py`` did."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.a import A\nfrom pkg.c import C\nfrom pkg.sub import S\n")
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "c.py").write_text("from pkg import a\nC = a.A\n")  # a module of pkg: no edge to pkg itself
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub.s import S\n")
    (pkg / "sub" / "s.py").write_text("S = 1\n")
    assert file_cycles(tmp_path, ("pkg",)) == []
    (pkg / "sub" / "s.py").write_text("def late() -> None:\n    from pkg import A\nS = 1\n")
    assert file_cycles(tmp_path, ("pkg",)) == [["pkg", "pkg.sub", "pkg.sub.s"]]


if __name__ == "__main__":
    for cycle in file_cycles():
        print(" <-> ".join(cycle))
