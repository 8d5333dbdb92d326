"""What other packages ask the engine goes through the facade's public queries, and each answers
from the engine's own state."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
from builders import ClusterQueueBuilder, CohortBuilder, WorkloadBuilder, flavor, local_queue

from scheduler.engine import AdmissionEngine, WorkloadState

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
ENGINE_STATE = {"model", "workloads", "placements"}  # the facade's state, for the engine's own parts


@pytest.fixture
def engine() -> AdmissionEngine:
    """Two ClusterQueues in a cohort (one CPU each); ``a-1`` admitted, ``a-2`` and ``a-3`` pending."""
    engine = AdmissionEngine()
    engine.apply(flavor("default"))
    engine.apply(CohortBuilder("research").obj())
    for name in ("team-a", "team-b"):
        engine.apply(ClusterQueueBuilder(name).cohort("research").quota("default", "cpu", 1, borrowing_limit=0).obj())
        engine.apply(local_queue("main", name, name))
    engine.apply(local_queue("side", "team-a", "team-a"))
    for index, name in enumerate(("a-1", "a-2", "a-3")):
        engine.submit(WorkloadBuilder(name, "team-a").queue("main").created(index).pod_set(cpu="1").obj(), now=0)
    engine.schedule(now=1)
    return engine


def test_a_workload_by_key_and_all_of_them(engine: AdmissionEngine) -> None:
    admitted = engine.workload("team-a/a-1")
    assert admitted is not None
    assert admitted.state is WorkloadState.ADMITTED
    assert engine.workload("team-a/nobody") is None
    assert [w.key for w in engine.all_workloads()] == ["team-a/a-1", "team-a/a-2", "team-a/a-3"]
    engine.forget("team-a/a-1", now=2)
    assert engine.workload("team-a/a-1") is None
    assert [w.key for w in engine.all_workloads()] == ["team-a/a-2", "team-a/a-3"]


def test_cluster_queues_their_pending_order_and_objects(engine: AdmissionEngine) -> None:
    assert sorted(engine.cluster_queues()) == ["team-a", "team-b"]
    team_a = engine.cluster_queue("team-a")
    assert team_a is not None
    assert [w.key for w in team_a.admitted.values()] == ["team-a/a-1"]
    assert engine.cluster_queue("team-z") is None
    assert [w.key for w in engine.pending_in_order("team-a")] == ["team-a/a-2", "team-a/a-3"]
    assert engine.pending_in_order("team-z") == []
    assert sorted(engine.cluster_queue_objects()) == ["team-a", "team-b"]
    engine.cluster_queue_objects().clear()  # a copy: the engine's table is not the caller's to change
    assert sorted(engine.cluster_queue_objects()) == ["team-a", "team-b"]


def test_cohorts_local_queues_and_admission_checks(engine: AdmissionEngine) -> None:
    assert sorted(engine.cohorts()) == ["research"]
    assert sorted(child.name for child in engine.cohorts()["research"].children) == ["team-a", "team-b"]
    cohort = engine.cohort_object("research")
    assert cohort is not None
    assert cohort.name == "research"
    assert engine.cohort_object("nowhere") is None
    main = engine.local_queue("team-a", "main")
    assert main is not None
    assert main.spec.cluster_queue == "team-a"
    assert engine.local_queue("team-b", "side") is None
    assert engine.local_queue_names("team-a") == ["main", "side"]
    assert engine.local_queue_names("nobody") == []
    assert engine.admission_checks().checks == {}
    assert list(engine.flavors()) == ["default"]
    assert engine.nodes() == {}
    assert engine.topologies() == {}


def test_removing_a_namespace_forgets_its_labels() -> None:
    engine = AdmissionEngine()
    selector = {"matchLabels": {"team": "a"}}
    engine.apply(flavor("default"))
    engine.apply(ClusterQueueBuilder("team-a").namespace_selector(selector).quota("default", "cpu", 4).obj())
    engine.apply(local_queue("main", "team-a", "team-a"))
    engine.set_namespace("team-a", {"team": "a"})
    engine.remove_namespace("team-a")
    key = engine.submit(WorkloadBuilder("w", "team-a").queue("main").pod_set(cpu="1").obj(), now=0)
    assert not engine.schedule(now=1).admitted  # the selector no longer matches the namespace
    workload = engine.workload(key)
    assert workload is not None
    assert workload.state is not WorkloadState.ADMITTED


def _engine_state_reads(path: Path) -> list[str]:
    """``<x>.engine.model`` / ``engine.workloads`` / ... : reads of the facade's state by name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Attribute) and node.attr in ENGINE_STATE:
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
            if name == "engine":
                found.append(f"{path}:{node.lineno}: engine.{node.attr}")
    return found


def test_no_package_outside_the_engine_reads_its_state() -> None:
    """The facade's state (``model``, ``workloads``, ``placements``) is for the engine's parts;
    every other package asks the facade's queries."""
    files = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    reads = [read for path in files if "scheduler/engine" not in path.as_posix() for read in _engine_state_reads(path)]
    assert not reads, "\n".join(reads)


def test_the_state_reader_finds_reads(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("a = state.engine.model.cluster_queues\nb = engine.workloads\nc = other.model\n")
    found = _engine_state_reads(sample)
    assert sorted(line.rsplit(": ", 1)[1] for line in found) == ["engine.model", "engine.workloads"]
