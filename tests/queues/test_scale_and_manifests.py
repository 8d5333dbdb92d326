"""Tables at 1,000 ClusterQueues (a page, a summary line, a bounded cohort tree) and the
APIService manifest in Kueue's shape."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from scheduler.queues import cluster_queue_summaries, cohort_summaries, load_state, pending_workloads
from simulations.scenarios import BUILTIN, build
from trainyard.cli.queues.output import print_list

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests" / "visibility"


def test_a_thousand_cluster_queues_print_one_page_at_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    state = load_state(build(BUILTIN["kueue-large"]).objects, [], now=0.0)
    summaries = cluster_queue_summaries(state)
    assert len(summaries) == 1000
    totals = {"clusterQueues": 1000, "inactive": 0, "invalid": 0, "admitted": 0, "pending": 0}
    print_list(summaries[50:100], cohort_summaries(state), total=1000, offset=50, totals=totals, notes=[])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "ClusterQueues 51-100 of 1000; --offset 100 for the next page" in out
    assert "cohort-0-cq-59" in out
    assert "cohort-9-cq-99" not in out
    assert "more ClusterQueues" in out  # each cohort of 100 is summarised in the tree
    assert len(lines) < 200


def test_pending_at_a_thousand_cluster_queues_is_one_page_at_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    from simulations.engine_driver import EngineDriver
    from simulations.events import RandomStreams
    from trainyard.cli.queues.output import print_pending

    built = build(BUILTIN["kueue-large"])
    driver = EngineDriver()
    jobs = itertools.islice(built.jobs(RandomStreams(1)), 3000)
    workloads = [driver.workload(job) for job in jobs]  # enough to leave many pending across queues
    state = load_state(built.objects, workloads, now=0.0)
    entries = pending_workloads(state)
    assert len(entries) > 100
    print_pending(entries[:50], total=len(entries), offset=0, show_cluster_queue=True)
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(f"of {len(entries)}" in line for line in lines), lines[:3]
    assert len(lines) < 120


def test_the_api_service_registers_kueue_visibility_group() -> None:
    documents = [d for path in sorted(MANIFESTS.glob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]
    (service,) = [d for d in documents if d["kind"] == "APIService"]
    assert service["apiVersion"] == "apiregistration.k8s.io/v1"
    assert service["metadata"]["name"] == "v1beta1.visibility.kueue.x-k8s.io"
    assert (service["spec"]["group"], service["spec"]["version"]) == ("visibility.kueue.x-k8s.io", "v1beta1")
    backing = service["spec"]["service"]
    (svc,) = [d for d in documents if d["kind"] == "Service" and d["metadata"]["name"] == backing["name"]]
    assert svc["metadata"]["namespace"] == backing["namespace"]
    reader = next(d for d in documents if d["metadata"]["name"] == "trainyard-pending-workloads-reader")
    assert "clusterqueues/pendingworkloads" in reader["rules"][0]["resources"]
    assert "get" in reader["rules"][0]["verbs"]
    # what the server itself asks the API server: who a token is, and whether its user may read
    auth = next(
        d for d in documents if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "trainyard-visibility-auth"
    )
    asked = {(rule["apiGroups"][0], resource) for rule in auth["rules"] for resource in rule["resources"]}
    assert asked == {("authentication.k8s.io", "tokenreviews"), ("authorization.k8s.io", "subjectaccessreviews")}
    # and the aggregator's front-proxy CA, read from kube-system like every extension API server
    reader_binding = next(d for d in documents if d["kind"] == "RoleBinding")
    assert reader_binding["metadata"]["namespace"] == "kube-system"
    assert reader_binding["roleRef"]["name"] == "extension-apiserver-authentication-reader"
