"""`bench parity --objects`: `trainyard admit`'s inputs as both sides get them (no cluster here)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from scheduler.api.kueue import Workload
from trainyard.benchmarks.parity import _totals, run
from trainyard.benchmarks.parity_inputs import each_objects_input, objects_input
from trainyard.benchmarks.parity_sides import EngineSide

REPO = Path(__file__).resolve().parents[2]
KUEUE = "kueue.x-k8s.io/v1beta2"

QUEUES = f"""\
apiVersion: {KUEUE}
kind: ResourceFlavor
metadata: {{name: default}}
---
apiVersion: {KUEUE}
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  namespaceSelector: {{matchLabels: {{team: a}}}}
  preemption: {{withinClusterQueue: LowerPriority}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{{name: default, resources: [{{name: cpu, nominalQuota: "4"}}]}}]
---
apiVersion: v1
kind: Namespace
metadata: {{name: team-a, labels: {{team: a}}}}
---
apiVersion: {KUEUE}
kind: LocalQueue
metadata: {{name: lq, namespace: team-a}}
spec: {{clusterQueue: cq}}
"""


def _workload(name: str, cpu: int, *, priority: int = 0, stamp: str = "", admitted: bool = False) -> str:
    created = f", creationTimestamp: '{stamp}'" if stamp else ""
    text = f"""\
---
apiVersion: {KUEUE}
kind: Workload
metadata: {{name: {name}, namespace: team-a{created}}}
spec:
  queueName: lq
  priority: {priority}
  podSets:
  - name: main
    count: 1
    template: {{spec: {{containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]}}}}
"""
    if admitted:
        text += f"""\
status:
  conditions:
  - {{type: QuotaReserved, status: "True", reason: QuotaReserved, message: "", lastTransitionTime: '{stamp}'}}
  admission:
    clusterQueue: cq
    podSetAssignments: [{{name: main, count: 1, flavors: {{cpu: default}}, resourceUsage: {{cpu: "{cpu}"}}}}]
"""
    return text


def test_workloads_arrive_by_creation_time_and_the_admitted_are_seeded(tmp_path: Path) -> None:
    path = tmp_path / "input.yaml"
    path.write_text(
        QUEUES
        + _workload("running", 3, stamp="2026-01-01T00:00:00Z", admitted=True)
        + _workload("later", 1, stamp="2026-01-01T00:02:00Z")
        + _workload("earlier", 1, stamp="2026-01-01T00:01:00Z")
        + _workload("undated", 1)
        + _workload("same-time-low", 1, stamp="2026-01-01T00:01:00Z")
        + _workload("same-time-high", 1, priority=5, stamp="2026-01-01T00:01:00Z")
    )
    parity = objects_input([str(path)], fair_sharing=False)
    assert parity.keys[:4] == ["team-a/running", "team-a/later", "team-a/earlier", "team-a/undated"]
    assert [w.metadata.name for w in parity.seeded] == ["running"]
    arrivals = [[d["metadata"]["name"] for d in step] for step in parity.steps]
    assert arrivals == [["undated"], ["same-time-high"], ["earlier"], ["same-time-low"], ["later"]]
    assert all("status" not in d and "creationTimestamp" not in d["metadata"] for step in parity.steps for d in step)
    assert parity.namespaces == {"team-a": {"team": "a"}}
    assert parity.durations == {}  # `admit` is a dry run: nothing finishes


def test_the_engine_side_starts_from_the_given_admissions(tmp_path: Path) -> None:
    """A seeded Workload holds its quota (recorded at step -1) and the higher priority preempts it."""
    path = tmp_path / "input.yaml"
    path.write_text(
        QUEUES
        + _workload("running", 3, stamp="2026-01-01T00:00:00Z", admitted=True)
        + _workload("urgent", 4, priority=100)
    )
    parity = objects_input([str(path)], fair_sharing=False)
    side = EngineSide(parity.objects, parity.fair_sharing, parity.namespaces)
    side.seed(parity.seeded)
    assert side.active("cq")
    assert not side.active("missing")
    assert side.record.admitted_step == {"team-a/running": -1}
    side.run_step(0, 1.0, [], [Workload.model_validate(d) for d in parity.steps[0]])
    kinds = {key: [d.kind for d in decisions] for key, decisions in side.record.decisions.items()}
    assert kinds["team-a/running"] == ["admitted", "preempted"]
    side.run_step(1, 2.0, [], [])
    assert side.record.admission_order[-1] == "team-a/urgent"


def test_a_topology_flavor_is_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"ResourceFlavor .* spec.topologyName"):
        objects_input([str(REPO / "manifests/samples/kueue-tas")], fair_sharing=False)


def test_each_path_is_an_input_of_its_own(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / f"{name}.yaml").write_text(QUEUES + _workload(name, 1))
    paths = [str(tmp_path / "one.yaml"), str(tmp_path / "two.yaml")]
    args = argparse.Namespace(objects=paths, each=True, fair_sharing=True)
    inputs = each_objects_input(args)
    assert [(p.keys, p.fair_sharing) for p in inputs] == [(["team-a/one"], True), (["team-a/two"], True)]
    assert len(each_objects_input(argparse.Namespace(objects=paths, each=False, fair_sharing=False))) == 1


def test_totals_weigh_each_run_by_its_workloads() -> None:
    runs = [
        {"workloads": 3, "decisions_equal_pct": 100.0, "order_equal_pct": 66.67},
        {"workloads": 1, "decisions_equal_pct": 0.0, "order_equal_pct": 100.0},
    ]
    assert _totals(runs) == {"workloads": 4, "decisions_equal_pct": 75.0, "order_equal_pct": 75.0}


def test_flags_that_need_objects_are_refused_without_them() -> None:
    args = argparse.Namespace(step_seconds=0.5, objects=None, each=True, fair_sharing=False)
    with pytest.raises(SystemExit, match="go with --objects"):
        run(args)


def test_a_finished_workload_is_given_to_neither_side(tmp_path: Path) -> None:
    finished = _workload("done", 4).replace(
        "spec:\n",
        "status:\n  conditions:\n  - {type: Finished, status: 'True', reason: Succeeded, message: '',"
        " lastTransitionTime: '2026-01-01T00:00:00Z'}\nspec:\n",
        1,
    )
    path = tmp_path / "input.yaml"
    path.write_text(QUEUES + finished + _workload("next", 1))
    parity = objects_input([str(path)], fair_sharing=False)
    assert parity.keys == ["team-a/next"]
    assert [[d["metadata"]["name"] for d in step] for step in parity.steps] == [["next"]]
