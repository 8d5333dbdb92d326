"""Trainer's jax, xgboost, volcano, flux and torch (envInjection, PET_*) behaviour, and steps by label."""

from __future__ import annotations

from typing import Any

import pytest

from runtimes.api.trainer import ClusterTrainingRuntime, TrainJob
from runtimes.errors import RenderError
from runtimes.k8s.fields import unknown_fields
from runtimes.render import RenderedTrainJob, render_trainjob
from runtimes.runtime_validation import validate_jobset_spec, validate_runtime
from runtimes.validation import validate_trainjob_update
from tests.builders import cluster_training_runtime, trainjob

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def runtime(
    name: str,
    ml_policy: dict[str, Any],
    *,
    pod_group_policy: dict[str, Any] | None = None,
    job_name: str = "node",
    labelled: bool = True,
    pod_spec: dict[str, Any] | None = None,
) -> ClusterTrainingRuntime:
    job: dict[str, Any] = {
        "name": job_name,
        "template": {
            "spec": {"template": {"spec": pod_spec or {"containers": [{"name": "node", "image": "busybox"}]}}}
        },
    }
    if labelled:
        job["template"]["metadata"] = {"labels": {ANCESTOR: "trainer"}}
    spec: dict[str, Any] = {} if pod_group_policy is None else {"podGroupPolicy": pod_group_policy}
    document = cluster_training_runtime(name, ml_policy=ml_policy, replicated_jobs=[job], **spec)
    return ClusterTrainingRuntime.model_validate(document)


def job_on(runtime_name: str, trainer: dict[str, Any] | None = None, **metadata: Any) -> TrainJob:
    """The TrainJob ``job`` on ``runtime_name``: no ``spec.trainer`` unless given; ``metadata`` fields added."""
    document = trainjob(runtime=runtime_name, nodes=None, trainer=trainer)
    document["metadata"].update(metadata)
    return TrainJob.model_validate(document)


def job_of(rendered: RenderedTrainJob, name: str = "node") -> dict[str, Any]:
    found: dict[str, Any] = next(j for j in rendered.jobset.to_dict()["spec"]["replicatedJobs"] if j["name"] == name)
    return found


def env_of(
    rendered: RenderedTrainJob, name: str = "node", container: str = "node", init: bool = False
) -> dict[str, Any]:
    pod_spec = job_of(rendered, name)["template"]["spec"]["template"]["spec"]
    chosen = next(c for c in pod_spec["initContainers" if init else "containers"] if c["name"] == container)
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in chosen.get("env") or []}


def test_jax_honours_num_nodes_and_sets_the_coordinator() -> None:
    rendered = render_trainjob(job_on("jax", {"numNodes": 3}), runtime("jax", {"numNodes": 1, "jax": {}}))
    assert job_of(rendered)["template"]["spec"]["parallelism"] == 3
    env = env_of(rendered)
    assert env["JAX_NUM_PROCESSES"] == "3"
    assert env["JAX_COORDINATOR_ADDRESS"] == "job-node-0-0.job:6666"
    assert env["JAX_PROCESS_ID"] == {
        "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
    }


def test_xgboost_counts_one_worker_per_gpu_and_refuses_reserved_env() -> None:
    rt = runtime("xgb", {"numNodes": 1, "xgboost": {}})
    rendered = render_trainjob(
        job_on("xgb", {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}}), rt
    )
    env = env_of(rendered)
    assert (env["DMLC_NUM_WORKER"], env["DMLC_TRACKER_URI"], env["DMLC_TRACKER_PORT"]) == (
        "8",
        "job-node-0-0.job",
        "29500",
    )
    with pytest.raises(RenderError, match="DMLC_NUM_WORKER is reserved for the XGBoost runtime"):
        render_trainjob(job_on("xgb", {"env": [{"name": "DMLC_NUM_WORKER", "value": "3"}]}), rt)


def test_volcano_builds_its_pod_group_with_queue_and_priority_class() -> None:
    pod_spec = {
        "priorityClassName": "high",
        "containers": [{"name": "node", "image": "x", "resources": {"requests": {"cpu": "2"}}}],
    }
    rt = runtime("vc", {"numNodes": 1, "torch": {}}, pod_group_policy={"volcano": {}}, pod_spec=pod_spec)
    job = job_on("vc", {"numNodes": 4}, annotations={"scheduling.volcano.sh/queue-name": "research"})
    rendered = render_trainjob(job, rt)
    assert rendered.pod_group is not None
    group = rendered.pod_group.to_dict()
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["spec"] == {
        "minMember": 4,
        "minResources": {"cpu": "8"},
        "queue": "research",
        "priorityClassName": "high",
    }
    annotations = job_of(rendered)["template"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["scheduling.k8s.io/group-name"] == "job"
    empty = job_on("vc", annotations={"scheduling.volcano.sh/queue-name": ""})
    with pytest.raises(RenderError, match="Volcano queue name must not be empty"):
        render_trainjob(empty, rt)


def test_flux_runtimes_are_refused_with_the_reason() -> None:
    problems = validate_runtime(runtime("flux", {"numNodes": 1, "flux": {}}))
    assert [p.path for p in problems] == ["spec.mlPolicy.flux"]
    assert "not supported by trainyard" in problems[0].message


@pytest.mark.parametrize(
    ("trainer", "expected"),
    [
        (None, "1"),
        ({"resourcesPerNode": {"requests": {"cpu": "3"}, "limits": {"cpu": "6"}}}, "3"),
        ({"resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}}, "auto"),
    ],
    ids=["no-trainer", "requests-first", "gpu-auto"],
)
def test_pet_env_even_without_spec_trainer(trainer: dict[str, Any] | None, expected: str) -> None:
    rendered = render_trainjob(job_on("torch", trainer), runtime("torch", {"numNodes": 2, "torch": {}}))
    env = env_of(rendered)
    assert (env["PET_NNODES"], env["PET_NPROC_PER_NODE"]) == ("2", expected)


def test_torchtune_gets_pet_counts_but_its_rendezvous_on_the_command_line() -> None:
    rt = runtime("torchtune-llama3.2-1b", {"numNodes": 1, "torch": {}})
    rendered = render_trainjob(job_on("torchtune-llama3.2-1b", {"command": ["tune", "run"]}), rt)
    env = env_of(rendered)
    assert {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK"} <= set(env)
    assert "PET_MASTER_ADDR" not in env


def test_env_injection_reaches_the_named_init_container_and_checks_names() -> None:
    pod_spec = {
        "initContainers": [{"name": "preflight", "image": "x"}],
        "containers": [{"name": "node", "image": "x"}],
    }
    targets = {"targets": [{"jobName": "node", "containerNames": ["preflight"]}]}
    rt = runtime("inj", {"numNodes": 2, "torch": {"envInjection": targets}}, pod_spec=pod_spec)
    env = env_of(render_trainjob(job_on("inj"), rt), container="preflight", init=True)
    assert (env["PET_NNODES"], env["PET_MASTER_ADDR"]) == ("2", "job-node-0-0.job")
    wrong = {"targets": [{"jobName": "node", "containerNames": ["missing"]}]}
    bad = runtime("inj", {"numNodes": 2, "torch": {"envInjection": wrong}}, pod_spec=pod_spec)
    with pytest.raises(RenderError, match="container 'missing' not found in runtime template"):
        render_trainjob(job_on("inj"), bad)


def test_steps_are_known_by_the_ancestor_label_only() -> None:
    unlabelled = render_trainjob(job_on("plain", {"numNodes": 3}), runtime("plain", {"numNodes": 2}, labelled=False))
    assert job_of(unlabelled)["template"]["spec"]["parallelism"] == 1
    labelled = render_trainjob(job_on("plain", {"numNodes": 3}), runtime("plain", {"numNodes": 2}, job_name="workers"))
    assert job_of(labelled, "workers")["template"]["spec"]["parallelism"] == 3


def test_pod_failure_rule_with_exit_codes_and_empty_pod_conditions_is_valid() -> None:
    rule: dict[str, Any] = {
        "action": "FailJob",
        "onExitCodes": {"operator": "In", "values": [42]},
        "onPodConditions": [],
    }
    job = {
        "name": "workers",
        "template": {
            "spec": {
                "podFailurePolicy": {"rules": [rule]},
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x"}]}},
            }
        },
    }
    assert validate_jobset_spec({"replicatedJobs": [job]}) == []
    rule["onExitCodes"] = None
    assert [p.path for p in validate_jobset_spec({"replicatedJobs": [job]})] == [
        "spec.replicatedJobs[0].template.spec.podFailurePolicy.rules[0]"
    ]


def test_unknown_pod_group_and_ml_policies_are_refused_not_ignored() -> None:
    rt = runtime("kai", {"numNodes": 1, "torch": {}, "unsloth": {}}, pod_group_policy={"kai": {}})
    assert sorted(p.path for p in validate_runtime(rt)) == ["spec.mlPolicy.unsloth", "spec.podGroupPolicy.kai"]


def test_elastic_torch_starts_min_nodes_with_the_node_range() -> None:
    rt = runtime("elastic", {"torch": {"elasticPolicy": {"minNodes": 2, "maxNodes": 4}}})
    rendered = render_trainjob(job_on("elastic"), rt)
    assert job_of(rendered)["template"]["spec"]["parallelism"] == 2
    assert env_of(rendered)["PET_NNODES"] == "2:4"
    both = runtime("elastic", {"numNodes": 2, "torch": {"elasticPolicy": {"minNodes": 2, "maxNodes": 4}}})
    assert [p.path for p in validate_runtime(both)] == ["spec.mlPolicy.numNodes"]


OVERRIDE_FIELDS: dict[str, Any] = {
    "nodeSelector": {"accelerator": "a100"},
    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "volumes": [{"name": "data", "emptyDir": {}}],
    "containers": [{"name": "node", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
}


@pytest.mark.parametrize(
    ("field", "override"),
    [
        ("podSpecOverrides", {"targetJobs": [{"name": "node"}], **OVERRIDE_FIELDS}),
        ("podTemplateOverrides", {"targetJobs": [{"name": "node"}], "spec": OVERRIDE_FIELDS}),
    ],
    ids=["v2.0-podSpecOverrides", "v2.1-podTemplateOverrides"],
)
def test_pod_overrides_of_older_trainer_versions_reach_the_targeted_pods(field: str, override: dict[str, Any]) -> None:
    """v2.0's podSpecOverrides (pod spec fields inline) render as v2.1's podTemplateOverrides do,
    never silently dropped."""
    job = job_on("torch", {"numNodes": 2}).to_dict()
    job["spec"][field] = [override]
    rendered = render_trainjob(TrainJob.model_validate(job), runtime("torch", {"numNodes": 1, "torch": {}}))
    pod_spec = job_of(rendered)["template"]["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == {"accelerator": "a100"}
    assert pod_spec["tolerations"] == OVERRIDE_FIELDS["tolerations"]
    assert pod_spec["volumes"] == [{"name": "data", "emptyDir": {}}]
    (node,) = pod_spec["containers"]
    assert node["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert env_of(rendered)["PET_NNODES"] == "2"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            {"targetJobs": [{"name": "workers"}]},
            r"podSpecOverrides\[0\]\.targetJobs\[0\]\.name: replicated job 'workers'",
        ),
        (
            {"targetJobs": [{"name": "node"}], "containers": [{"name": "sidecar"}]},
            r"podSpecOverrides\[0\]\.containers\[0\]\.name: container 'sidecar' does not exist",
        ),
        (
            {"targetJobs": [{"name": "node"}], "containers": [{"name": "node", "env": [{"name": "A", "value": "1"}]}]},
            r"podSpecOverrides\[0\]\.containers\[0\]\.env: must not set env of the 'node' container",
        ),
    ],
    ids=["unknown-job", "unknown-container", "trainer-env"],
)
def test_pod_spec_overrides_name_jobs_and_containers_of_the_runtime(override: dict[str, Any], message: str) -> None:
    job = job_on("torch").to_dict()
    job["spec"]["podSpecOverrides"] = [override]
    with pytest.raises(RenderError, match=message):
        render_trainjob(TrainJob.model_validate(job), runtime("torch", {"numNodes": 1, "torch": {}}))


def test_pod_spec_overrides_change_only_around_a_suspension() -> None:
    """As their successors (podTemplateOverrides, runtimePatches): a running TrainJob's pods keep
    the overrides they started with."""
    override = {"targetJobs": [{"name": "node"}], "nodeSelector": {"pool": "a"}}

    def job(pool: str, *, suspend: bool) -> TrainJob:
        data = job_on("torch").to_dict()
        data["spec"]["suspend"] = suspend
        data["spec"]["podSpecOverrides"] = [{**override, "nodeSelector": {"pool": pool}}]
        return TrainJob.model_validate(data)

    (error,) = validate_trainjob_update(job("b", suspend=False), job("a", suspend=False))
    assert error.path == "spec.podSpecOverrides"
    assert "PodSpecOverrides can only be modified when the TrainJob is suspended" in error.message
    assert validate_trainjob_update(job("b", suspend=True), job("a", suspend=False)) == []
    assert validate_trainjob_update(job("a", suspend=False), job("a", suspend=False)) == []


def test_every_pod_override_field_of_trainer_is_known() -> None:
    """Trainer's override fields are read, not reported as unknown (or dropped)."""
    fields: dict[str, Any] = {
        "serviceAccountName": "trainer",
        "nodeSelector": {"pool": "a"},
        "affinity": {"nodeAffinity": {}},
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "schedulingGates": [{"name": "gate"}],
        "containers": [{"name": "node", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
        "initContainers": [{"name": "init", "env": [{"name": "A", "value": "1"}]}],
    }
    data = job_on("torch").to_dict()
    data["spec"]["podSpecOverrides"] = [{"targetJobs": [{"name": "node"}], **fields}]
    data["spec"]["podTemplateOverrides"] = [
        {"targetJobs": [{"name": "node"}], "spec": {**fields, "imagePullSecrets": [{"name": "registry"}]}}
    ]
    job = TrainJob.model_validate(data)
    assert unknown_fields(job) == []
    assert job.to_dict() == data


def test_runtime_patch_pod_fields_of_trainer_are_known() -> None:
    """Trainer's PodSpecPatch fields (its examples/yaml/02-runtime-patches.yaml sets several) are
    read, not reported as unknown."""
    pod_spec: dict[str, Any] = {
        "serviceAccountName": "trainer",
        "nodeSelector": {"pool": "a"},
        "affinity": {"nodeAffinity": {}},
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "schedulingGates": [{"name": "gate"}],
        "imagePullSecrets": [{"name": "registry"}],
        "securityContext": {"runAsNonRoot": True},
        "terminationGracePeriodSeconds": 30,
        "containers": [{"name": "node", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
    }
    data = job_on("torch").to_dict()
    data["spec"]["runtimePatches"] = [
        {
            "manager": "example.io/platform-team",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}]
                    }
                }
            },
        }
    ]
    job = TrainJob.model_validate(data)
    assert unknown_fields(job) == []
    assert job.to_dict() == data
    data["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"][
        "spec"
    ]["template"]["spec"]["hostNetwork"] = True
    (unknown,) = unknown_fields(TrainJob.model_validate(data))
    assert "hostNetwork" in str(unknown)
