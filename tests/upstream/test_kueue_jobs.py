"""Workloads derived from job kinds as Kueue's job integrations derive them (scheduler.jobs), and
`trainyard admit` taking the jobs as given."""

from __future__ import annotations

import contextlib
import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.jobs import JobDocument, derive_workloads, integration_for
from scheduler.trainjob import workload_name_for_owner
from trainyard.cli.main import main

CONTAINER = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 10}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: user-queue, namespace: default}
spec: {clusterQueue: cq}
"""


def template(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"annotations": annotations or {}}, "spec": {"containers": [CONTAINER]}}


def batch_job(name: str = "sample", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"} if labels is None else labels,
            "annotations": spec.pop("annotations", {}),
        },
        "spec": {"template": template(spec.pop("template_annotations", None)), **spec},
    }


def derive_one(document: dict[str, Any]) -> dict[str, Any]:
    derived = derive_workloads([JobDocument(document)])
    assert not derived.problems, derived.problems
    (workload,) = derived.workloads
    return workload.to_dict()


def test_batch_job_pod_set_counts_and_name_as_kueue() -> None:
    workload = derive_one(batch_job(parallelism=3, completions=2))
    assert workload["metadata"]["name"] == workload_name_for_owner("sample", "", "Job", "batch")
    assert workload["metadata"]["name"].startswith("job-sample-")
    assert workload["spec"]["queueName"] == "user-queue"
    (pod_set,) = workload["spec"]["podSets"]
    assert (pod_set["name"], pod_set["count"]) == ("main", 2)  # min(parallelism, completions)
    assert derive_one(batch_job())["spec"]["podSets"][0]["count"] == 1


def test_batch_job_partial_admission_and_tas_request() -> None:
    document = batch_job(
        parallelism=20,
        annotations={"kueue.x-k8s.io/job-min-parallelism": "5"},
        template_annotations={"kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-block"},
    )
    (pod_set,) = derive_one(document)["spec"]["podSets"]
    assert (pod_set["count"], pod_set["minCount"]) == (20, 5)
    assert pod_set["topologyRequest"] == {
        "required": "cloud.provider.com/topology-block",
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
    }
    bad = batch_job(parallelism=4, annotations={"kueue.x-k8s.io/job-min-parallelism": "4"})
    (problem,) = derive_workloads([JobDocument(bad)]).problems
    assert "from 1 to parallelism - 1 (3)" in str(problem[1])


def test_jobset_one_pod_set_per_replicated_job() -> None:
    document = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "replicatedJobs": [
                {"name": "Leader", "replicas": 1, "template": {"spec": {"template": template()}}},
                {
                    "name": "workers",
                    "replicas": 3,
                    "template": {
                        "spec": {
                            "parallelism": 2,
                            "completions": 2,
                            "template": template({"kueue.x-k8s.io/podset-preferred-topology": "block"}),
                        }
                    },
                },
            ]
        },
    }
    workload = derive_one(document)
    assert workload["metadata"]["name"].startswith("jobset-js-")
    leader, workers = workload["spec"]["podSets"]
    assert (leader["name"], leader["count"]) == ("leader", 1)
    assert (workers["name"], workers["count"]) == ("workers", 6)
    assert workers["topologyRequest"]["subGroupCount"] == 3
    assert workers["topologyRequest"]["subGroupIndexLabel"] == "jobset.sigs.k8s.io/job-index"


def test_kubeflow_jobs_one_pod_set_per_replica_type_in_kueue_order() -> None:
    document: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": 3, "template": template()},
                "Master": {"replicas": 1, "template": template()},
            }
        },
    }
    workload = derive_one(document)
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("master", 1), ("worker", 3)]
    document["spec"]["pytorchReplicaSpecs"]["Chief"] = {"template": template()}
    (problem,) = derive_workloads([JobDocument(document)]).problems
    assert "is not a PyTorchJob replica type" in str(problem[1])


def pod(name: str, group: str | None = "g", total: str | None = "2", cpu: str = "1") -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "user-queue"}
    annotations = {}
    if group:
        labels["kueue.x-k8s.io/pod-group-name"] = group
    if total:
        annotations["kueue.x-k8s.io/pod-group-total-count"] = total
    container = {**CONTAINER, "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels, "annotations": annotations},
        "spec": {"containers": [container]},
    }


def test_pod_group_is_one_workload_named_after_the_group_with_a_pod_set_per_role() -> None:
    derived = derive_workloads([JobDocument(pod("a")), JobDocument(pod("b")), JobDocument(pod("c", cpu="2"))])
    assert not derived.problems
    assert "Kueue deletes the excess pods" in derived.notes[0]  # 3 pods given for a group of 2
    (workload,) = derived.workloads
    assert workload.name == "g"
    assert workload.metadata.annotations["kueue.x-k8s.io/is-group-workload"] == "true"
    assert [p.count for p in workload.spec.pod_sets] == [2]  # a and b: one role
    roles = derive_workloads([JobDocument(pod("a")), JobDocument(pod("c", cpu="2"))]).workloads[0].spec.pod_sets
    assert sorted(p.count for p in roles) == [1, 1]  # two shapes, two roles


def test_an_incomplete_pod_group_waits_and_a_disagreeing_one_is_refused() -> None:
    waiting = derive_workloads([JobDocument(pod("a", total="3"))])
    assert waiting.workloads == []
    assert "1 of its 3 pods given" in waiting.notes[0]
    disagreeing = derive_workloads([JobDocument(pod("a", total="2")), JobDocument(pod("b", total="3"))])
    (problem,) = disagreeing.problems
    assert "differs between the group's pods: a=2, b=3" in str(problem[1])
    single = derive_workloads([JobDocument(pod("solo", group=None, total=None))])
    assert single.workloads[0].name.startswith("pod-solo-")


def test_a_job_without_queue_label_is_left_alone_unless_its_namespace_has_a_default_queue() -> None:
    unlabelled = batch_job(labels={})
    left = derive_workloads([JobDocument(unlabelled)])
    assert left.workloads == []
    assert "Kueue leaves it alone" in left.notes[0]
    defaulted = derive_workloads([JobDocument(batch_job(labels={}))], default_queues=["default"])
    assert defaulted.workloads[0].spec.queue_name == "default"


def test_integrations_match_the_api_group_first() -> None:
    assert integration_for("batch/v1", "Job") is not None
    assert integration_for("example.com/v1", "Job") is None
    assert integration_for("kubeflow.org/v2beta1", "MPIJob") is not None
    assert integration_for("kubeflow.org/v1", "MPIJob") is None


def test_a_generated_name_gets_a_stable_suffix() -> None:
    document = batch_job()
    del document["metadata"]["name"]
    document["metadata"]["generateName"] = "sample-job-"
    first, second = JobDocument(document, 0), JobDocument(document, 1)
    assert first.name.startswith("sample-job-")
    assert len(first.name) == len("sample-job-") + 5
    assert first.name == JobDocument(document, 0).name
    assert first.name != second.name


def admit(tmp_path: Path, *documents: str) -> tuple[int, str, str]:
    path = tmp_path / "input.yaml"
    path.write_text("\n---\n".join(documents))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["admit", str(path), "-o", "json"])
    return code, out.getvalue(), err.getvalue()


def test_admit_takes_jobs_as_given(tmp_path: Path) -> None:
    job = textwrap.dedent(
        """\
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: sample
          namespace: default
          labels: {kueue.x-k8s.io/queue-name: user-queue}
        spec:
          parallelism: 4
          template:
            spec:
              containers: [{name: c, image: busybox, resources: {requests: {cpu: "2"}}}]
        """
    )
    code, out, err = admit(tmp_path, QUEUES, job)
    assert code == 0, err
    (workload,) = json.loads(out)["workloads"]
    assert workload["status"] == "Admitted"
    assert workload["job"] == "Job default/sample"
    assert workload["counts"] == {"main": 4}


@pytest.mark.parametrize(
    ("mutation", "words"),
    [
        ("parallelism: 4", ["input.yaml:", 'Job "default/sample" is invalid', "spec.parallelism", "-1"]),
        ("containers: []", ['Job "default/sample" is invalid', "spec.template.spec.containers"]),
    ],
    ids=["negative-parallelism", "no-containers"],
)
def test_admit_refuses_a_job_kueue_cannot_build_a_workload_for(tmp_path: Path, mutation: str, words: list[str]) -> None:
    job = textwrap.dedent(
        """\
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: sample
          namespace: default
          labels: {kueue.x-k8s.io/queue-name: user-queue}
        spec:
          parallelism: 4
          template:
            spec:
              containers: [{name: c, image: busybox}]
        """
    )
    replaced = (
        job.replace("parallelism: 4", "parallelism: -1")
        if "parallelism" in mutation
        else job.replace("containers: [{name: c, image: busybox}]", mutation)
    )
    code, _, err = admit(tmp_path, QUEUES, replaced)
    assert code == 2
    assert "Traceback" not in err
    for word in words:
        assert word in err


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ("spec: {}", "spec.replicatedJobs: must list at least one replicated job"),
        (
            "spec:\n  replicatedJobs:\n  - name: workers\n    dependsOn: [{name: nowhere, status: Complete}]\n"
            "    template: {spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}",
            "spec.replicatedJobs[0].dependsOn[0].name: replicated job 'nowhere' does not exist",
        ),
    ],
    ids=["no-replicated-jobs", "unknown-dependency"],
)
def test_admit_names_a_jobset_field_by_its_path_from_the_object(tmp_path: Path, spec: str, path: str) -> None:
    """JobSet's rules report paths from ``spec`` once (an admit message once said spec.spec.replicatedJobs)."""
    jobset = (
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\n"
        "metadata: {name: js, namespace: default, labels: {kueue.x-k8s.io/queue-name: user-queue}}\n" + spec + "\n"
    )
    code, _, err = admit(tmp_path, QUEUES, jobset)
    assert code == 2, err
    assert 'JobSet "default/js" is invalid' in err
    assert path in err
    assert "spec.spec." not in err
    derived = derive_workloads([JobDocument(yaml.safe_load(jobset))])
    assert [error.path for _, problem in derived.problems for error in problem.errors] == [path.split(":")[0]]


BAD_CPU = "[{name: c, image: busybox, resources: {requests: {cpu: lots}}}]"
META = "metadata: {name: sample, namespace: default, labels: {kueue.x-k8s.io/queue-name: user-queue}}"


def with_containers(head: str, nesting: list[str], containers: str) -> str:
    """``head`` (apiVersion and kind), then ``nesting`` keys down to ``containers``, in block YAML."""
    lines = [head, META]
    for depth, key in enumerate(nesting):
        lines.append("  " * depth + f"{key}:")
    lines.append("  " * len(nesting) + f"containers: {containers}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("document", "path"),
    [
        (
            with_containers("apiVersion: v1\nkind: Pod", ["spec"], "[]"),
            "spec.containers: must list at least one",
        ),
        (
            with_containers("apiVersion: v1\nkind: Pod", ["spec"], BAD_CPU),
            "spec.containers[0].resources.requests.cpu: 'lots' is not a Kubernetes quantity",
        ),
        (
            with_containers("apiVersion: batch/v1\nkind: Job", ["spec", "template", "spec"], BAD_CPU),
            "spec.template.spec.containers[0].resources.requests.cpu: 'lots'",
        ),
        (
            with_containers(
                "apiVersion: kubeflow.org/v1\nkind: PyTorchJob",
                ["spec", "pytorchReplicaSpecs", "Master", "template", "spec"],
                BAD_CPU,
            ),
            "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].resources.requests.cpu: 'lots'",
        ),
        (
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\n"
            + META
            + "\nspec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        template:\n"
            + f"          spec:\n            containers: {BAD_CPU}\n",
            "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests.cpu: 'lots'",
        ),
    ],
    ids=["pod-no-containers", "pod-bad-quantity", "batch-job", "pytorchjob", "jobset"],
)
def test_admit_names_a_pod_template_field_by_its_path_in_the_job(tmp_path: Path, document: str, path: str) -> None:
    """A Pod's own spec is its template: its fields are spec.containers, not spec.spec.containers."""
    code, _, err = admit(tmp_path, QUEUES, document)
    assert code == 2, err
    assert path in err
    assert "spec.spec." not in err
