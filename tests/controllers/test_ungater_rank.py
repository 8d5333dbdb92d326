"""The ungater's rank arithmetic and placement lookup (pure): Kueue's rank = job index × pods per
Job + completion index, domains filling ranks in order; unplaced ranks are never guessed."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.topology_assignment import HOSTNAME_LABEL, encode_topology_assignment
from scheduler.controllers.constants import PODSET_LABEL, TOPOLOGY_SCHEDULING_GATE
from scheduler.controllers.ungater import is_gated, placement_for_pod, pod_rank


def pod(
    completion: int | None, job_index: int | None = None, *, as_annotation: bool = False, **labels: str
) -> dict[str, Any]:
    pod_labels: dict[str, str] = {PODSET_LABEL: "worker", **labels}
    annotations: dict[str, str] = {}
    if completion is not None:
        target = annotations if as_annotation else pod_labels
        target["batch.kubernetes.io/job-completion-index"] = str(completion)
    if job_index is not None:
        pod_labels["jobset.sigs.k8s.io/job-index"] = str(job_index)
    return {
        "metadata": {"name": "p", "labels": pod_labels, "annotations": annotations},
        "spec": {"schedulingGates": [{"name": TOPOLOGY_SCHEDULING_GATE}]},
    }


def workload(
    levels: list[str], domains: list[tuple[list[str], int]], *, count: int, groups: int | None
) -> dict[str, Any]:
    request = {"subGroupCount": groups, "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index"} if groups else None
    pod_set: dict[str, Any] = {"name": "worker", "count": count}
    if request:
        pod_set["topologyRequest"] = request
    return {
        "spec": {"podSets": [pod_set]},
        "status": {
            "admission": {
                "podSetAssignments": [
                    {
                        "name": "worker",
                        "count": count,
                        "topologyAssignment": encode_topology_assignment(levels, domains),
                    }
                ]
            }
        },
    }


@pytest.mark.parametrize(
    ("job_index", "completion", "rank"),
    [(0, 0, 0), (0, 1, 1), (1, 0, 2), (2, 1, 5)],
    ids=["first", "second in job 0", "first in job 1", "last"],
)
def test_rank_is_job_index_times_pods_per_job_plus_completion_index(job_index: int, completion: int, rank: int) -> None:
    pod_set = {"topologyRequest": {"subGroupCount": 3}}
    assert pod_rank(pod(completion, job_index), pod_set, 6) == rank


def test_rank_reads_the_completion_index_annotation_and_the_replicas_label_without_a_topology_request() -> None:
    labelled = pod(1, 1, as_annotation=True, **{"jobset.sigs.k8s.io/replicatedjob-replicas": "2"})
    assert pod_rank(labelled, None, 4) == 3
    assert pod_rank(pod(None, 0), None, 4) is None


def test_hostname_placement_by_rank() -> None:
    wl = workload([HOSTNAME_LABEL], [(["n1"], 2), (["n2"], 2), (["n3"], 2)], count=6, groups=3)
    nodes = [placement_for_pod(pod(c, j), wl) for j in range(3) for c in range(2)]
    assert nodes == [{HOSTNAME_LABEL: n} for n in ["n1", "n1", "n2", "n2", "n3", "n3"]]


def test_domain_levels_become_the_node_selector_when_the_hostname_is_not_stored() -> None:
    wl = workload(["block", "rack"], [(["b1", "r1"], 1), (["b1", "r2"], 1)], count=2, groups=None)
    assert placement_for_pod(pod(1), wl) == {"block": "b1", "rack": "r2"}


def test_a_rank_the_assignment_does_not_cover_is_not_placed() -> None:
    wl = workload([HOSTNAME_LABEL], [(["n1"], 2)], count=4, groups=None)
    assert placement_for_pod(pod(3), wl) is None
    other = pod(0)
    other["metadata"]["labels"][PODSET_LABEL] = "launcher"
    assert placement_for_pod(other, wl) is None


def test_only_live_pods_with_the_topology_gate_are_gated() -> None:
    assert is_gated(pod(0))
    assert not is_gated({"metadata": {}, "spec": {"schedulingGates": [{"name": "other"}]}})
    deleting = pod(0)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not is_gated(deleting)
