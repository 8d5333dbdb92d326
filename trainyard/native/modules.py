"""What the compiled build compiles, where the sources and the build live, and the sources' digests.

``python -m trainyard.native.modules`` prints the files a build is made from, one per line: the
Makefile's dependencies of ``build/native``, so editing any of them makes ``make install`` rebuild.
"""

from __future__ import annotations

from pathlib import Path

# Per package, its modules compiled with mypyc: the code run per job, per event or per placement.
# Modules left out are interpreted, and compiled code calls them as ordinary Python.
COMPILED: dict[str, tuple[str, ...]] = {
    # the simulator's loop: events, the engine driver, job generators, metrics, KWOK stage chains
    "simulations": (
        "arrivals",
        "engine_driver",
        "events",
        "metrics",
        "observers",
        "simulator",
        "workloads",
    ),
    "simulations.kwok": ("delays", "lifecycle", "query", "stages"),
    # the admission cycle (flavor assignment, the quota walk, preemption search, queues), its
    # records and the facade; restoring from Workload status, views and explanations run interpreted
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
        "preemption_classical",
        "preemption_fair",
        "preemption_search",
        "queues",
        "quota",
        "results",
        "workloads",
    ),
    # gang placement: the placer, its records (model), capacity counts, slot bitsets and domain
    # search; numpy does the arithmetic, compiled code calls it for less. graph.py (networkx)
    # and node-failure re-placement run interpreted
    "scheduler.topology": (
        "capacity",
        "describe",
        "distribution",
        "fragmentation",
        "leader",
        "leaf_index",
        "least_fragmenting",
        "model",
        "node_cells",
        "placer",
        "request_memo",
        "reservations",
        "row_block",
        "search",
        "shape_history",
        "shapes",
        "whole_growth",
    ),
}

NATIVE_PACKAGE = Path(__file__).resolve().parent
ROOT = NATIVE_PACKAGE.parent.parent
BUILD_DIR = ROOT / "build" / "native"
MANIFEST = BUILD_DIR / "manifest.json"


def compiled_modules() -> list[str]:
    """Every compiled module's dotted name, in the list's order."""
    return [f"{package}.{name}" for package, names in COMPILED.items() for name in names]


def source_path(module: str, root: Path = ROOT) -> Path:
    """``scheduler.engine.cycle`` → ``ROOT/scheduler/engine/cycle.py``."""
    *package, name = module.split(".")
    return root.joinpath(*package, f"{name}.py")


def source_digest(module: str, root: Path = ROOT) -> str:
    import hashlib  # here: the activation hook imports this module in every interpreter

    return hashlib.sha256(source_path(module, root).read_bytes()).hexdigest()


def build_inputs(root: Path = ROOT) -> list[Path]:
    """The files a build is made from: every compiled module's source and this package's own."""
    sources = [source_path(module, root) for module in compiled_modules()]
    return sources + sorted((root / NATIVE_PACKAGE.relative_to(ROOT)).glob("*.py"))


def main() -> int:
    for path in build_inputs():
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
