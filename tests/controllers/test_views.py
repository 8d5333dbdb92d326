"""The typed views read what the controllers read from the raw documents, and never change them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler.controllers.views import JobSetStatusView, TrainJobView, WorkloadView


def condition(kind: str, status: bool) -> dict[str, Any]:
    return {"type": kind, "status": "True" if status else "False", "reason": kind, "message": ""}


def workload(*conditions: dict[str, Any], admitted: bool = True, namespace: str | None = "team-a") -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": "trainjob-llm-1a2b3",
        "resourceVersion": "42",
        "ownerReferences": [
            {"kind": "JobSet", "name": "other", "controller": False},
            {"kind": "TrainJob", "name": "llm", "controller": True},
        ],
    }
    if namespace is not None:
        metadata["namespace"] = namespace
    status: dict[str, Any] = {"conditions": list(conditions)}
    if admitted:
        status["admission"] = {
            "clusterQueue": "team-a-cq",
            "podSetAssignments": [{"name": "node", "count": 4}, {"name": "launcher", "count": 1}],
        }
        status["admissionChecks"] = [{"name": "topology", "state": "Ready"}]
    return {"kind": "Workload", "metadata": metadata, "spec": {"queueName": "team-a"}, "status": status}


def test_a_workload_view_reads_what_the_queue_controller_reads() -> None:
    document = workload(condition("QuotaReserved", True), condition("Admitted", True))
    before = copy.deepcopy(document)
    view = WorkloadView(document)
    assert (view.key, view.name, view.namespace, view.resource_version) == (
        "team-a/trainjob-llm-1a2b3",
        "trainjob-llm-1a2b3",
        "team-a",
        "42",
    )
    assert (view.queue_name, view.cluster_queue, view.admitted_pods) == ("team-a", "team-a-cq", 5)
    assert [state["name"] for state in view.admission_checks] == ["topology"]
    assert view.owner_trainjob == "llm"
    assert view.quota_reserved
    assert view.admission_committed
    assert not view.finished
    assert view.document is document
    assert document == before


@pytest.mark.parametrize(
    ("conditions", "admitted", "reserved", "committed"),
    [
        pytest.param([condition("QuotaReserved", True)], True, True, False, id="reserved-not-admitted"),
        pytest.param(
            [condition("QuotaReserved", True), condition("Admitted", True), condition("Evicted", True)],
            True,
            False,
            False,
            id="being-evicted",
        ),
        pytest.param(
            [condition("QuotaReserved", True), condition("Finished", True)], True, False, False, id="finished"
        ),
        pytest.param(
            [condition("QuotaReserved", True), condition("Admitted", True)], False, False, False, id="no-admission"
        ),
        pytest.param([condition("QuotaReserved", False)], True, False, False, id="quota-not-reserved"),
    ],
)
def test_reserved_and_committed_need_every_part(
    conditions: list[dict[str, Any]], admitted: bool, reserved: bool, committed: bool
) -> None:
    view = WorkloadView(workload(*conditions, admitted=admitted))
    assert (view.quota_reserved, view.admission_committed) == (reserved, committed)


def test_an_empty_workload_reads_as_nothing_rather_than_failing() -> None:
    view = WorkloadView(workload(admitted=False, namespace=None))
    assert view.key == "default/trainjob-llm-1a2b3"  # as the engine keys a Workload without a namespace
    assert view.admission is None
    assert view.cluster_queue is None
    assert view.admitted_pods == 0
    assert list(view.pod_set_assignments) == []
    bare = WorkloadView({})
    assert (bare.name, bare.namespace, bare.uid, bare.owner_trainjob) == ("", None, None, None)


@pytest.mark.parametrize(
    ("conditions", "finished"),
    [
        pytest.param([condition("Complete", True)], True, id="complete"),
        pytest.param([condition("Failed", True)], True, id="failed"),
        pytest.param([condition("Complete", False), condition("Suspended", True)], False, id="running"),
    ],
)
def test_a_trainjob_view_says_when_it_finished(conditions: list[dict[str, Any]], finished: bool) -> None:
    document = {
        "metadata": {"name": "llm", "namespace": "team-a", "uid": "u1"},
        "spec": {"suspend": True, "managedBy": "trainer.kubeflow.org/trainjob-controller"},
        "status": {"conditions": conditions},
    }
    view = TrainJobView(document)
    assert (view.key, view.uid, view.suspended) == ("team-a/llm", "u1", True)
    assert view.managed_by == "trainer.kubeflow.org/trainjob-controller"
    assert view.finished is finished


def test_a_jobset_status_view_reads_a_missing_jobset_as_empty() -> None:
    assert list(JobSetStatusView(None).replicated_jobs) == []
    status = {
        "conditions": [condition("Completed", True), condition("Failed", False)],
        "replicatedJobsStatus": [{"name": "node", "succeeded": 4}],
    }
    view = JobSetStatusView({"status": status})
    assert [c["type"] for c in view.true_conditions()] == ["Completed"]
    assert [job["name"] for job in view.replicated_jobs] == ["node"]
