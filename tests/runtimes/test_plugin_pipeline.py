"""The plugin registry, pod-set derivation, placement checks and numProcPerNode resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtimes.api.trainer import AnyTrainingRuntime, TrainJob
from runtimes.errors import FieldError, RenderError
from runtimes.k8s.core import Affinity, ResourceRequirements
from runtimes.loading import load_runtimes, load_trainjob
from runtimes.plugins import RuntimeInfo, in_tree_registry
from runtimes.plugins.torch import resolve_num_proc_per_node
from runtimes.pod_placement import PodPlacement
from runtimes.podsets import workload_pod_sets
from runtimes.render import render_trainjob

ROOT = Path(__file__).resolve().parents[2]
TORCH_JOB = ROOT / "manifests/samples/trainjobs/torch-2-nodes.yaml"
MPI_JOB = ROOT / "manifests/samples/trainjobs/deepspeed-mpi.yaml"
INIT_JOB = ROOT / "manifests/samples/trainjobs/torch-with-initializers.yaml"


def runtime(name: str) -> AnyTrainingRuntime:
    (found,) = load_runtimes(ROOT / "manifests/runtimes" / name)
    return found


class TeamLabelPlugin:
    """What a platform team writes: a pod-group-phase plugin that stamps a cost label, and a check."""

    name = "team-label"

    def enforce_pod_group_policy(self, info: RuntimeInfo, trainjob: TrainJob) -> None:
        info.pod_labels["example.com/cost-center"] = trainjob.metadata.namespace or "none"

    def validate(self, info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
        if "example.com/owner" in trainjob.metadata.labels:
            return []
        return [FieldError("metadata.labels", "must carry example.com/owner")]


def test_a_registered_plugin_runs_in_its_phase_without_core_changes() -> None:
    registry = in_tree_registry()
    registry.register("team-label", TeamLabelPlugin, before="jobset")
    assert registry.names() == [
        "coscheduling",
        "volcano",
        "mpi",
        "plainml",
        "torch",
        "jax",
        "xgboost",
        "team-label",
        "jobset",
    ]
    job = load_trainjob(TORCH_JOB)
    with pytest.raises(RenderError, match=r"example\.com/owner"):
        render_trainjob(job, runtime("torch_distributed.yaml"), registry=registry)
    job.metadata.labels = {**job.metadata.labels, "example.com/owner": "ana"}
    rendered = render_trainjob(job, runtime("torch_distributed.yaml"), registry=registry)
    labels = rendered.jobset.spec.replicated_jobs[0].template.spec.template.metadata.labels
    assert labels["example.com/cost-center"] == "team-a"
    assert labels["scheduling.x-k8s.io/pod-group"] == "torch-ddp"
    with pytest.raises(ValueError, match="already registered"):
        registry.register("torch", TeamLabelPlugin)


def test_pod_sets_follow_the_rendered_jobset() -> None:
    rendered = render_trainjob(load_trainjob(MPI_JOB), runtime("deepspeed_distributed.yaml"))
    pod_sets = workload_pod_sets(rendered)
    assert [(p["name"], p["count"]) for p in pod_sets] == [("node", 2), ("launcher", 1)]
    assert pod_sets[1]["template"]["spec"]["containers"][0]["name"] == "node"
    assert rendered.pod_group is not None
    assert rendered.pod_group.spec.min_member == sum(p["count"] for p in pod_sets)

    with_init = workload_pod_sets(
        render_trainjob(load_trainjob(INIT_JOB), runtime("torch_distributed_with_initializers.yaml"))
    )
    assert [p["name"] for p in with_init] == ["dataset-initializer", "model-initializer", "node"]


def test_pod_sets_carry_kueue_topology_requests() -> None:
    job = load_trainjob(TORCH_JOB)
    rendered = render_trainjob(job, runtime("torch_distributed.yaml"))
    template = rendered.jobset.spec.replicated_jobs[0].template.spec.template
    template.metadata.annotations = {"kueue.x-k8s.io/podset-required-topology": "rack"}
    (pod_set,) = workload_pod_sets(rendered)
    assert pod_set["topologyRequest"] == {
        "required": "rack",
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
        "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
        "subGroupCount": 1,
    }
    assert pod_set["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] == "rack"


def test_placement_must_fit_the_jobset() -> None:
    job = load_trainjob(TORCH_JOB)
    with pytest.raises(RenderError) as raised:
        render_trainjob(job, runtime("torch_distributed.yaml"), PodPlacement(nodes={"node": ["only-one"]}))
    assert "placement.nodes[node]" in str(raised.value)
    with pytest.raises(RenderError, match="no replicated job 'workers'"):
        render_trainjob(job, runtime("torch_distributed.yaml"), PodPlacement(nodes={"workers": ["a"]}))


def test_placement_is_anded_with_the_runtimes_affinity() -> None:
    job = load_trainjob(TORCH_JOB)
    rt = runtime("torch_distributed.yaml")
    pod_spec = rt.spec.template.spec.replicated_jobs[0].template.spec.template.spec
    pod_spec.affinity = Affinity.model_validate(
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]
                }
            }
        }
    )
    rendered = render_trainjob(job, rt, PodPlacement(nodes={"node": ["n1", "n1"]}))
    affinity = rendered.jobset.spec.replicated_jobs[0].template.spec.template.spec.affinity
    assert affinity is not None
    assert affinity.node_affinity is not None
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    assert required is not None
    (term,) = required.node_selector_terms
    assert [(e.key, e.operator, e.values) for e in term.match_expressions] == [
        ("gpu", "Exists", []),
        ("kubernetes.io/hostname", "In", ["n1"]),
    ]


@pytest.mark.parametrize(
    ("value", "resources", "expected"),
    [
        (None, None, "1"),
        (4, {"limits": {"cpu": "8"}}, "4"),
        ("auto", {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}, "2"),
        ("auto", {"limits": {"cpu": "4"}}, "4"),
        ("auto", {"requests": {"cpu": "2500m"}}, "3"),
        ("auto", {"limits": {"nvidia.com/gpu": 2}}, "auto"),
        ("cpu", {"requests": {"memory": "1Gi"}}, "1"),
        ("gpu", {"limits": {"nvidia.com/gpu": 2}}, "gpu"),
    ],
    ids=[
        "no-resources-is-one",
        "integer",
        "requests-before-limits",
        "limits-without-requests",
        "auto-cpu-rounds-up",
        "auto-gpu",
        "cpu-without-cpu",
        "gpu",
    ],
)
def test_num_proc_per_node(value: int | str | None, resources: dict[str, object] | None, expected: str) -> None:
    given = ResourceRequirements.model_validate(resources) if resources is not None else None
    assert resolve_num_proc_per_node(value, given) == expected
