"""An engine rebuilt from Workload status (a controller's new leadership term) keeps what the
previous engine decided: a TAS gang's nodes from its topologyAssignment, and an evicted
workload's backoff from its requeueState."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import Workload
from scheduler.api.loading import load_kueue_objects
from scheduler.controllers.workload_status import admission_document
from scheduler.engine import AdmissionEngine, WorkloadState
from scheduler.engine.node_failures import ReplacedPlacement
from tests.builders import TopologyBuilder

SAMPLE = Path(__file__).resolve().parents[2] / "manifests" / "samples" / "kueue-tas"
BLOCK = "network.topology.nvidia.com/block"
SPINE = "network.topology.nvidia.com/spine"


def _objects() -> tuple[list[Resource], Workload, dict[str, Node]]:
    loaded = load_kueue_objects([SAMPLE])
    nodes = {o.name: o for o in loaded.objects if isinstance(o, Node)}
    template = next(w for w in loaded.workloads if w.metadata.name == "allreduce-4x8")
    return list(loaded.objects), template, nodes


def _engine(objects: list[Resource], *extra: Resource) -> AdmissionEngine:
    engine = AdmissionEngine()
    for obj in [*objects, *extra]:
        engine.apply(obj)
    return engine


def _gang(template: Workload, name: str, hosts: int) -> Workload:
    workload = copy.deepcopy(template)
    workload.metadata.name = name
    workload.metadata.creation_timestamp = None
    workload.spec.pod_sets[0].count = hosts
    return workload


def _nodes(engine: AdmissionEngine, key: str) -> list[str]:
    admission = engine.workloads[key].admission
    assert admission is not None
    return [n for placement in admission.placements.values() for ps in placement.pod_sets for n in ps.nodes]


def _as_stored(workload: Workload, status: dict[str, Any]) -> Workload:
    return Workload.model_validate({**workload.to_dict(), "status": status})


def _admitted_elsewhere(objects: list[Resource], workload: Workload, *extra: Resource) -> tuple[Workload, list[str]]:
    """``workload`` as the API server holds it once another engine admitted it, and its nodes."""
    first = _engine(objects, *extra)
    key = first.submit(workload, now=0)
    assert [a.key for a in first.schedule(now=1).admitted] == [key]
    admission = first.workloads[key].admission
    assert admission is not None
    status = {
        "admission": admission_document(admission),
        "conditions": [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": "2026-11-20T10:00:00Z"}],
    }
    return _as_stored(workload, status), _nodes(first, key)


def test_a_restored_gang_holds_its_nodes_and_frees_them_when_it_finishes() -> None:
    objects, template, _ = _objects()
    stored, held = _admitted_elsewhere(objects, _gang(template, "restored", 4))
    engine = _engine(objects)
    key = engine.submit(stored, now=10)
    assert engine.workloads[key].state is WorkloadState.ADMITTED
    assert _nodes(engine, key) == held
    assert engine.workloads[key].reason == ""
    # four blocks of four hosts: the restored gang fills one, so only three block-sized gangs fit
    others = [engine.submit(_gang(template, f"new-{i}", 4), now=11 + i) for i in range(4)]
    admitted = [a.key for a in engine.schedule(now=20).admitted]
    assert admitted == others[:3]
    for other in admitted:
        assert not set(_nodes(engine, other)) & set(held)
    assert engine.workloads[others[3]].state is WorkloadState.PENDING
    engine.finish(key, now=30)
    assert [a.key for a in engine.schedule(now=31).admitted] == [others[3]]
    assert set(_nodes(engine, others[3])) == set(held)


def test_a_restored_gang_on_a_failed_node_is_re_placed_within_its_block() -> None:
    objects, template, nodes = _objects()
    stored, held = _admitted_elsewhere(objects, _gang(template, "restored", 2))
    engine = _engine(objects)
    key = engine.submit(stored, now=10)
    failed = held[0]
    data = nodes[failed].to_dict()
    data.setdefault("status", {})["conditions"] = [{"type": "Ready", "status": "False"}]
    engine.apply(Node.model_validate(data))
    outcomes = engine.node_failed(failed, now=11)
    assert len(outcomes) == 1
    assert isinstance(outcomes[0], ReplacedPlacement)
    after = _nodes(engine, key)
    assert failed not in after
    assert after[1:] == held[1:]
    assert {nodes[n].metadata.labels[BLOCK] for n in after} == {nodes[failed].metadata.labels[BLOCK]}
    assert engine.workloads[key].state is WorkloadState.ADMITTED


def test_pods_on_a_deleted_node_are_left_out_and_named_in_the_reason() -> None:
    objects, template, _ = _objects()
    stored, held = _admitted_elsewhere(objects, _gang(template, "restored", 4))
    engine = _engine(objects)
    engine.delete("Node", held[1])
    key = engine.submit(stored, now=10)
    info = engine.workloads[key]
    assert info.state is WorkloadState.ADMITTED
    assert _nodes(engine, key) == [held[0], *held[2:]]
    assert held[1] in info.reason
    assert "no longer in the flavor" in info.reason


def test_a_gang_placed_on_domains_above_the_hosts_holds_nodes_in_those_domains() -> None:
    objects, template, nodes = _objects()
    # Kueue stores only the domains (no hostnames) when the lowest level is not the hostname
    blocks = TopologyBuilder("gpu-fabric", SPINE, BLOCK).obj()
    stored, held = _admitted_elsewhere(objects, _gang(template, "restored", 4), blocks)
    assert stored.status.admission is not None
    topology_assignment = stored.status.admission.pod_set_assignments[0].topology_assignment
    assert topology_assignment is not None
    assert topology_assignment.to_dict()["levels"] == [SPINE, BLOCK]
    engine = _engine(objects, blocks)
    key = engine.submit(stored, now=10)
    restored = _nodes(engine, key)
    assert sorted(restored) == sorted(held)  # the block's four hosts, one pod each
    others = [engine.submit(_gang(template, f"new-{i}", 4), now=11 + i) for i in range(4)]
    assert len(engine.schedule(now=20).admitted) == 3
    taken = {nodes[n].metadata.labels[BLOCK] for other in others[:3] for n in _nodes(engine, other)}
    assert nodes[held[0]].metadata.labels[BLOCK] not in taken


def test_two_restored_gangs_on_the_same_nodes_keep_them_and_say_so() -> None:
    objects, template, _ = _objects()
    first, held = _admitted_elsewhere(objects, _gang(template, "first", 4))
    second = _as_stored(_gang(template, "second", 4), first.status.to_dict())
    engine = _engine(objects)
    engine.submit(first, now=10)
    key = engine.submit(second, now=10)
    assert _nodes(engine, key) == held
    assert "overcommit" in engine.workloads[key].reason
    engine.finish(key, now=11)  # releasing the overcommitted gang leaves the first one's hold
    engine.submit(_gang(template, "new", 4), now=12)
    result = engine.schedule(now=13)
    assert len(result.admitted) == 1
    assert not set(_nodes(engine, result.admitted[0].key)) & set(held)


def _rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _backed_off(template: Workload, requeue_at: float) -> Workload:
    status = {
        "requeueState": {"count": 2, "requeueAt": _rfc3339(requeue_at)},
        "conditions": [{"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout"}],
    }
    return _as_stored(_gang(template, "backed-off", 2), status)


def test_a_requeue_at_in_the_future_keeps_a_restored_workload_out_until_then() -> None:
    objects, template, _ = _objects()
    now = 1_800_000_000.0
    engine = _engine(objects)
    key = engine.submit(_backed_off(template, now + 60), now=now)
    assert engine.schedule(now=now).admitted == []
    assert engine.schedule(now=now + 59).admitted == []
    info = engine.workloads[key]
    assert info.state is WorkloadState.PENDING
    assert "requeueState" in info.reason
    assert info.requeue_count == 2
    assert engine.next_timer() == now + 60
    assert [a.key for a in engine.schedule(now=now + 60).admitted] == [key]


def test_a_requeue_at_in_the_past_admits_a_restored_workload_at_once() -> None:
    objects, template, _ = _objects()
    now = 1_800_000_000.0
    engine = _engine(objects)
    key = engine.submit(_backed_off(template, now - 5), now=now)
    assert engine.workloads[key].requeue_count == 2
    assert [a.key for a in engine.schedule(now=now).admitted] == [key]
