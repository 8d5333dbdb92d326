"""manifests/crds: structural CRDs that accept the upstream YAML of every kind trainyard needs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from crd_schemas import (
    CRDS,
    ROOT,
    as_json_schema,
    crd_files,
    drop_nulls,
    load_crds,
    load_documents,
    served_versions,
    structural_problems,
)
from kustomize_support import build
from upstream.anchors import UPSTREAM, needs_upstream

EXPECTED_KINDS = {
    # (group, version, kind, plural, scope, has status)
    ("trainer.kubeflow.org", "v1alpha1", "TrainJob", "trainjobs", "Namespaced", True),
    ("trainer.kubeflow.org", "v1alpha1", "TrainingRuntime", "trainingruntimes", "Namespaced", False),
    ("trainer.kubeflow.org", "v1alpha1", "ClusterTrainingRuntime", "clustertrainingruntimes", "Cluster", False),
    ("kueue.x-k8s.io", "v1beta2", "ResourceFlavor", "resourceflavors", "Cluster", False),
    ("kueue.x-k8s.io", "v1beta2", "ClusterQueue", "clusterqueues", "Cluster", True),
    ("kueue.x-k8s.io", "v1beta2", "LocalQueue", "localqueues", "Namespaced", True),
    ("kueue.x-k8s.io", "v1beta2", "Cohort", "cohorts", "Cluster", True),
    ("kueue.x-k8s.io", "v1beta2", "Workload", "workloads", "Namespaced", True),
    ("kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass", "workloadpriorityclasses", "Cluster", False),
    ("kueue.x-k8s.io", "v1beta2", "Topology", "topologies", "Cluster", False),
    ("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", "Namespaced", True),
    ("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups", "Namespaced", True),
}

# Upstream documents of a served kind that are not valid objects, and why (path, metadata.name).
NOT_VALID_UPSTREAM: dict[tuple[str, str], str] = {
    ("kueue/site/content/en/docs/concepts/admission_fair_sharing.md.block2.yaml", "sample-queue"): (
        "a documentation fragment: `resources:` stands for '...existing resource configuration...'"
    ),
    ("trainer/docs/operator-guides/job-scheduling/kai.md.block1.yaml", "pytorch-kai-runtime"): (
        "an upstream doc error: numNodes under mlPolicy.torch and pod fields directly under the JobSet spec; "
        "Trainer's own CRD rejects it too (kubectl's strict field validation) or prunes the fields"
    ),
}

# Fewest upstream documents of each kind the test must have checked (so it cannot pass vacuously).
MINIMUM_CHECKED = {
    "TrainJob": 10,
    "ClusterTrainingRuntime": 10,
    "TrainingRuntime": 1,
    "JobSet": 30,
    "ClusterQueue": 40,
    "LocalQueue": 20,
    "ResourceFlavor": 25,
    "Cohort": 8,
    "Workload": 3,
    "WorkloadPriorityClass": 5,
    "Topology": 4,
}


@pytest.fixture(scope="module")
def crds() -> list[dict[str, Any]]:
    return load_crds()


def _crd_for(crds: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [c for c in crds if c["spec"]["names"]["kind"] == kind]
    return found


def test_the_crds_are_the_kinds_trainyard_needs(crds: list[dict[str, Any]]) -> None:
    described = set()
    for crd in crds:
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
        (storage,) = [v for v in spec["versions"] if v["storage"]]
        described.add(
            (
                spec["group"],
                storage["name"],
                spec["names"]["kind"],
                spec["names"]["plural"],
                spec["scope"],
                "status" in (storage.get("subresources") or {}),
            )
        )
        assert [v["name"] for v in spec["versions"] if v["served"]] == [storage["name"]], (
            f"{crd['metadata']['name']}: one served version (v1beta1 Kueue would need Kueue's conversion webhook)"
        )
    assert described == EXPECTED_KINDS


def test_status_subresource_matches_a_status_field(crds: list[dict[str, Any]]) -> None:
    for crd in crds:
        for version in crd["spec"]["versions"]:
            has_status = "status" in version["schema"]["openAPIV3Schema"]["properties"]
            assert has_status == ("status" in (version.get("subresources") or {})), crd["metadata"]["name"]


@pytest.mark.parametrize("path", crd_files(), ids=lambda p: str(p.relative_to(CRDS)))
def test_schemas_are_structural(path: Path) -> None:
    for crd in load_documents(path):
        for version in crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            assert structural_problems(schema, crd["metadata"]["name"]) == []
            assert schema["properties"]["metadata"] == {"type": "object"}, "metadata is the API server's to type"
            assert {"apiVersion", "kind"} <= set(schema["properties"])


def _schema_at(schema: dict[str, Any], json_path: str) -> dict[str, Any] | None:
    node: dict[str, Any] | None = schema
    for part in json_path.strip(".").split("."):
        if node is None:
            return None
        name, _, selector = part.partition("[")
        if node.get("type") == "array":
            node = node["items"]
        node = (node.get("properties") or {}).get(name)
        if node is not None and selector:
            node = node.get("items")
    return node


def test_printer_columns_point_at_fields(crds: list[dict[str, Any]]) -> None:
    for crd in crds:
        for version in crd["spec"]["versions"]:
            columns = version.get("additionalPrinterColumns") or []
            assert columns[-1] == {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
            schema = version["schema"]["openAPIV3Schema"]
            for column in columns[:-1]:
                path = column["jsonPath"].split("[?")[0] if "[?" in column["jsonPath"] else column["jsonPath"]
                if "[?" in column["jsonPath"]:
                    # a condition filter: the column reads a field of the matched items
                    path = path + "." + column["jsonPath"].rsplit(".", 1)[1]
                assert _schema_at(schema, path) is not None, f"{crd['metadata']['name']}: {column['jsonPath']}"


def test_workload_columns_are_kueues(crds: list[dict[str, Any]]) -> None:
    columns = _crd_for(crds, "Workload")["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"] for c in columns] == ["Queue", "Reserved in", "Admitted", "Finished", "Age"]


def test_cohort_resource_groups_are_the_cluster_queues(crds: list[dict[str, Any]]) -> None:
    def groups(kind: str) -> Any:
        return _crd_for(crds, kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
            "properties"
        ]["resourceGroups"]

    assert groups("Cohort") == groups("ClusterQueue")


@pytest.mark.parametrize("runtime_kind", ["TrainingRuntime", "ClusterTrainingRuntime"])
def test_runtime_templates_hold_the_jobset_spec(crds: list[dict[str, Any]], runtime_kind: str) -> None:
    def schema(kind: str) -> dict[str, Any]:
        return dict(_crd_for(crds, kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])

    template = schema(runtime_kind)["properties"]["template"]["properties"]["spec"]
    assert template == schema("JobSet")


def test_kustomization_lists_every_crd_once() -> None:
    built = build(CRDS)
    assert sorted(d["metadata"]["name"] for d in built) == sorted(
        f"{plural}.{group}" for group, _, _, plural, _, _ in EXPECTED_KINDS
    )


def _validate(schema: dict[str, Any], document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(as_json_schema(schema))
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message[:300]}"
        for error in validator.iter_errors(drop_nulls(schema, json.loads(json.dumps(document))))
    ]


def upstream_documents() -> list[tuple[str, int, dict[str, Any]]]:
    found = []
    for path in sorted(UPSTREAM.rglob("*.yaml")):
        try:
            documents = load_documents(path)
        except yaml.YAMLError:
            continue  # documentation fragments that are not YAML at all (README table)
        for index, document in enumerate(documents):
            if isinstance(document, dict) and "kind" in document and "apiVersion" in document:
                found.append((str(path.relative_to(UPSTREAM)), index, document))
    return found


@needs_upstream
def test_every_upstream_document_of_a_served_kind_validates(crds: list[dict[str, Any]]) -> None:
    served = served_versions(crds)
    checked: Counter[str] = Counter()
    failures = []
    expected_failures_seen = set()
    for relative, index, document in upstream_documents():
        key = (document["apiVersion"], document["kind"])
        if key not in served:
            continue
        name = str((document.get("metadata") or {}).get("name", f"#{index}"))
        errors = _validate(served[key], document)
        checked[document["kind"]] += 1
        if (relative, name) in NOT_VALID_UPSTREAM:
            assert errors, f"{relative} {name} is listed as invalid but validates: remove it from the table"
            expected_failures_seen.add((relative, name))
            continue
        failures.extend(f"{relative} {document['kind']} {name}: {e}" for e in errors)
    assert failures == []
    assert expected_failures_seen == set(NOT_VALID_UPSTREAM)
    for kind, minimum in MINIMUM_CHECKED.items():
        assert checked[kind] >= minimum, f"only {checked[kind]} upstream {kind} documents were checked"


@needs_upstream
def test_kueue_v1beta1_documents_are_not_served(crds: list[dict[str, Any]]) -> None:
    served = served_versions(crds)
    old = [d for _, _, d in upstream_documents() if d["apiVersion"] == "kueue.x-k8s.io/v1beta1"]
    assert old, "the upstream corpus holds v1beta1 Kueue objects"
    assert not any((d["apiVersion"], d["kind"]) in served for d in old)


@pytest.mark.parametrize(
    ("kind", "document", "fragment"),
    [
        (
            "ClusterQueue",
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {}, "spec": {"cohort": "a"}},
            "cohort",
        ),
        (
            "Workload",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {},
                "spec": {"podSets": [{"name": "main", "count": "2", "template": {}}]},
            },
            "is not of type 'integer'",
        ),
        (
            "TrainJob",
            {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {}, "spec": {}},
            "runtimeRef",
        ),
        (
            "ResourceFlavor",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {},
                "spec": {"nodeTaints": [{"key": "a", "effect": "Sometimes"}]},
            },
            "is not one of",
        ),
    ],
    ids=["v1beta1-field-unknown", "count-typed", "runtimeRef-required", "taint-effect-enum"],
)
def test_the_check_rejects_what_the_api_server_would(
    crds: list[dict[str, Any]], kind: str, document: dict[str, Any], fragment: str
) -> None:
    schema = served_versions(crds)[(document["apiVersion"], kind)]
    errors = _validate(schema, document)
    assert any(fragment in e for e in errors), errors


TRAINYARDS_OWN = [
    ROOT / "manifests" / "runtimes",
    ROOT / "manifests" / "samples",
    ROOT / "tests" / "runtimes" / "golden",  # what the renderer writes: JobSets, PodGroups, TrainJobs
]


def test_trainyards_own_yaml_and_rendered_objects_validate(crds: list[dict[str, Any]]) -> None:
    served = served_versions(crds)
    checked: Counter[str] = Counter()
    failures = []
    for directory in TRAINYARDS_OWN:
        for path in sorted(directory.rglob("*.yaml")):
            for document in load_documents(path):
                if not isinstance(document, dict):
                    continue
                key = (document.get("apiVersion"), document.get("kind"))
                if key in served:
                    checked[str(document["kind"])] += 1
                    failures.extend(f"{path.relative_to(ROOT)}: {e}" for e in _validate(served[key], document))
    assert failures == []
    for kind in ("ClusterTrainingRuntime", "TrainJob", "JobSet", "PodGroup", "ClusterQueue", "LocalQueue", "Topology"):
        assert checked[kind] >= 1, f"no {kind} of trainyard's own was checked"


def _workload_with_admission(topology_assignment: dict[str, Any]) -> dict[str, Any]:
    from runtimes.loading import load_runtimes, load_trainjob
    from scheduler.trainjob import workload_for_trainjob

    runtimes = {r.metadata.name: r for r in load_runtimes(ROOT / "manifests" / "runtimes" / "torch_distributed.yaml")}
    trainjob = load_trainjob(ROOT / "manifests" / "samples" / "trainjobs" / "torch-2-nodes.yaml")
    trainjob.metadata.uid = "0d6c3a8e-0000-4000-8000-000000000001"
    trainjob.metadata.labels["kueue.x-k8s.io/queue-name"] = "team-a"
    workload = workload_for_trainjob(trainjob, runtimes[trainjob.spec.runtime_ref.name]).to_dict()
    workload["status"] = {
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "Quota reserved in ClusterQueue team-a",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "admission": {
            "clusterQueue": "team-a",
            "podSetAssignments": [
                {
                    "name": workload["spec"]["podSets"][0]["name"],
                    "flavors": {"cpu": "default"},
                    "resourceUsage": {"cpu": "4"},
                    "count": 2,
                    "topologyAssignment": topology_assignment,
                }
            ],
        },
        "requeueState": {"count": 1, "requeueAt": "2026-01-01T00:01:00Z"},
    }
    return workload


# Kueue v1beta2's wire format (v0.17, apis/kueue/v1beta2/workload_types.go: TopologyAssignmentSlice
# with valuesPerLevel[{universal} | {individual: {prefix, suffix, roots}}] and podCounts {universal} |
# {individual}).
KUEUE_V1BETA2_ASSIGNMENT = {
    "levels": ["kubernetes.io/hostname"],
    "slices": [
        {
            "domainCount": 2,
            "valuesPerLevel": [{"individual": {"prefix": "node-", "roots": ["1", "2"]}}],
            "podCounts": {"universal": 1},
        }
    ],
}


def test_the_workload_trainyard_writes_validates(crds: list[dict[str, Any]]) -> None:
    served = served_versions(crds)
    workload = _workload_with_admission(KUEUE_V1BETA2_ASSIGNMENT)
    assert _validate(served[("kueue.x-k8s.io/v1beta2", "Workload")], workload) == []


def test_trainyards_encoded_topology_assignment_is_kueues_format(crds: list[dict[str, Any]]) -> None:
    from scheduler.api.topology_assignment import encode_topology_assignment

    served = served_versions(crds)
    encoded = encode_topology_assignment(["kubernetes.io/hostname"], [(["node-1"], 1), (["node-2"], 1)])
    workload = _workload_with_admission(encoded)
    assert _validate(served[("kueue.x-k8s.io/v1beta2", "Workload")], workload) == []


def _sdk_function() -> None:
    print("hello")


def test_the_trainjob_the_sdk_submits_validates(crds: list[dict[str, Any]]) -> None:
    from runtimes.sdk import CustomTrainer, Runtime, RuntimeTrainer
    from trainyard.sdk import KubernetesBackend, KubernetesBackendConfig

    backend = KubernetesBackend(KubernetesBackendConfig(queue_name="team-a"))
    try:
        runtime = Runtime("torch-distributed", RuntimeTrainer("CustomTrainer", "torch"))
        trainer = CustomTrainer(func=_sdk_function, num_nodes=2, resources_per_node={"gpu": 1, "cpu": 4})
        manifest = backend.trainjob_manifest("a1b2c3d4e5f6", runtime, None, trainer)
    finally:
        backend.close()
    served = served_versions(crds)
    assert _validate(served[("trainer.kubeflow.org/v1alpha1", "TrainJob")], manifest) == []
