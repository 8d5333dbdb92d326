"""PyTorchJob → a TrainJob on the built-in ``torch-distributed`` runtime, or on a runtime of its own.

A PyTorchJob whose pods differ from ``torch-distributed`` only in fields a TrainJob can carry
(image, command, args, env, resources, and through ``runtimePatches`` the service account, node
selector, affinity, tolerations, volumes and mounts) runs on that runtime. Anything else
(sidecars, init containers, probes, ports, a Master that differs from its Workers) gets its own
TrainingRuntime, generated next to the TrainJob.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from runtimes.api.trainer import NODE, NUM_PROC_PER_NODE_WORDS, TRAINING_RUNTIME_KIND
from runtimes.convert.common import (
    Conversion,
    ConversionError,
    job_name,
    main_container,
    map_run_policy,
    replica_specs,
    replicated_job,
    training_runtime,
    trainjob_base,
)
from runtimes.plugins.torch import TORCH_RESERVED_ENVS

CONVERT_MANAGER = "trainyard.io/convert"
BUILTIN_TORCH_RUNTIME = "torch-distributed"
# Pod spec fields a runtimePatches entry may set (Trainer's PodSpecPatch).
PATCHABLE_POD_FIELDS = frozenset(
    {
        "serviceAccountName",
        "volumes",
        "imagePullSecrets",
        "securityContext",
        "nodeSelector",
        "affinity",
        "tolerations",
        "schedulingGates",
        "terminationGracePeriodSeconds",
    }
)
# Container fields the TrainJob's trainer (or a ContainerPatch) carries.
TRAINER_CONTAINER_FIELDS = frozenset(
    {"name", "image", "command", "args", "env", "resources", "volumeMounts", "securityContext", "imagePullPolicy"}
)
# Set by the Training Operator itself; the v2 runtimes set their own.
OPERATOR_ENVS = frozenset({"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", *TORCH_RESERVED_ENVS})


def convert_pytorchjob(job: dict[str, Any]) -> Conversion:
    name = job_name(job)
    specs = replica_specs(job, "pytorchReplicaSpecs")
    unmapped: list[str] = []
    roles = _roles(name, specs, unmapped)
    primary = specs[roles[0]]
    template = copy.deepcopy(primary.get("template") or {})
    container = main_container(template, "pytorch")
    if container is None:
        raise ConversionError(f"PyTorchJob {name!r}: spec.pytorchReplicaSpecs.{roles[0]} has no container")
    _restart_policy_notes(specs, roles, unmapped)
    if (job.get("spec") or {}).get("elasticPolicy") is not None:
        unmapped.append("spec.elasticPolicy: elastic PyTorch is not supported by Trainer v2; the node count is fixed")
    trainer = _trainer(job, sum(int(specs[role].get("replicas", 1)) for role in roles), unmapped)
    where = f"spec.pytorchReplicaSpecs.{roles[0]}.template.spec.containers[{container.get('name')}]"
    env = _clean_env(container.get("env") or [], f"{where}.env", unmapped)
    reasons = _needs_own_runtime(template, container)
    if len(roles) == 2 and _comparable(specs["Master"]) != _comparable(specs["Worker"]):
        reasons.append("Master and Worker pod templates differ (a TrainJob runs one node template)")
        unmapped.append(
            f"spec.pytorchReplicaSpecs: Master and Worker differ; every node now runs the {roles[0]}'s pod template"
        )
    if reasons:
        return _on_own_runtime(job, name, template, container, env, trainer, reasons, unmapped)
    return _on_builtin_runtime(job, template, container, env, trainer, where, unmapped)


def _roles(name: str, specs: dict[str, dict[str, Any]], unmapped: list[str]) -> list[str]:
    """Master and Worker, in that order, of those given; other replica types are noted and dropped."""
    for role in specs:
        if role not in ("Master", "Worker"):
            unmapped.append(f"spec.pytorchReplicaSpecs.{role}: only Master and Worker are converted; dropped")
    roles: list[str] = [role for role in ("Master", "Worker") if role in specs]
    if not roles:
        raise ConversionError(f"PyTorchJob {name!r}: spec.pytorchReplicaSpecs needs a Master or a Worker")
    return roles


def _restart_policy_notes(specs: dict[str, dict[str, Any]], roles: list[str], unmapped: list[str]) -> None:
    for role in roles:
        policy = specs[role].get("restartPolicy")
        if policy and policy != "Never":
            unmapped.append(
                f"spec.pytorchReplicaSpecs.{role}.restartPolicy {policy}: a TrainJob restarts the whole gang "
                "through the runtime's failurePolicy instead of restarting single pods"
            )


def _trainer(job: dict[str, Any], num_nodes: int, unmapped: list[str]) -> dict[str, Any]:
    """The TrainJob's ``spec.trainer`` node count and processes per node."""
    trainer: dict[str, Any] = {"numNodes": num_nodes}
    nproc = (job.get("spec") or {}).get("nprocPerNode")
    if nproc is not None:
        text = str(nproc)
        trainer["numProcPerNode"] = int(text) if text.isdigit() else text
        if not text.isdigit() and text not in NUM_PROC_PER_NODE_WORDS:
            unmapped.append(f"spec.nprocPerNode {text!r}: not an integer or auto/cpu/gpu; check it")
    return trainer


def _on_own_runtime(
    job: dict[str, Any],
    name: str,
    template: dict[str, Any],
    container: dict[str, Any],
    env: list[dict[str, Any]],
    trainer: dict[str, Any],
    reasons: list[str],
    unmapped: list[str],
) -> Conversion:
    """A TrainingRuntime ``<name>-torch`` running the job's own pod template, and a TrainJob on it."""
    runtime_name = f"{name}-torch"
    trainjob = trainjob_base(job, {"name": runtime_name, "kind": TRAINING_RUNTIME_KIND})
    backoff = map_run_policy(job, trainjob["spec"], unmapped)
    node_container = copy.deepcopy(container)
    node_container["name"] = NODE
    node_container["env"] = env
    if not env:
        node_container.pop("env")
    pod_spec = template.setdefault("spec", {})
    pod_spec["containers"] = [node_container if c is container else c for c in pod_spec.get("containers") or []]
    pod_spec.pop("restartPolicy", None)
    runtime = training_runtime(
        job, runtime_name, {"numNodes": 1, "torch": {}}, [replicated_job(NODE, template, trainer=True)], backoff
    )
    runtime["metadata"]["labels"] = {"trainer.kubeflow.org/framework": "torch"}
    trainjob["spec"]["trainer"] = trainer
    unmapped.insert(0, f"generated TrainingRuntime {runtime_name!r}: the pods use {'; '.join(reasons)}")
    return Conversion(trainjob=trainjob, runtime=runtime, unmapped=unmapped)


def _on_builtin_runtime(
    job: dict[str, Any],
    template: dict[str, Any],
    container: dict[str, Any],
    env: list[dict[str, Any]],
    trainer: dict[str, Any],
    where: str,
    unmapped: list[str],
) -> Conversion:
    """A TrainJob on ``torch-distributed``: the container in ``spec.trainer``, the pod in ``runtimePatches``."""
    trainjob = trainjob_base(job, {"name": BUILTIN_TORCH_RUNTIME, "kind": "ClusterTrainingRuntime"})
    backoff = map_run_policy(job, trainjob["spec"], unmapped)
    if backoff is not None:
        unmapped.append(
            f"spec.runPolicy.backoffLimit {backoff}: {BUILTIN_TORCH_RUNTIME} restarts the gang up to its own "
            "failurePolicy.maxRestarts"
        )
    if container.get("imagePullPolicy"):
        unmapped.append(
            f"{where}.imagePullPolicy {container['imagePullPolicy']}: a TrainJob cannot set it; the runtime's applies"
        )
    for key in ("image", "command", "args", "resources"):
        if container.get(key) is not None:
            trainer["resourcesPerNode" if key == "resources" else key] = copy.deepcopy(container[key])
    if env:
        trainer["env"] = env
    trainjob["spec"]["trainer"] = trainer
    patch = _pod_patch(template, container)
    if patch:
        trainjob["spec"]["runtimePatches"] = [
            {
                "manager": CONVERT_MANAGER,
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {"replicatedJobs": [{"name": NODE, "template": {"spec": {"template": patch}}}]}
                    }
                },
            }
        ]
    return Conversion(trainjob=trainjob, unmapped=unmapped)


def _clean_env(env: list[dict[str, Any]], where: str, unmapped: list[str]) -> list[dict[str, Any]]:
    kept = [item for item in env if item.get("name") not in OPERATOR_ENVS]
    dropped = sorted(item.get("name", "") for item in env if item.get("name") in OPERATOR_ENVS)
    if dropped:
        unmapped.append(f"{where}: {', '.join(dropped)} dropped: the torch runtime sets the distributed environment")
    return kept


def _needs_own_runtime(template: dict[str, Any], container: dict[str, Any]) -> list[str]:
    """Why a pod template cannot be expressed as torch-distributed + trainer + runtimePatches."""
    reasons = []
    spec = template.get("spec") or {}
    extra_pod = sorted(set(spec) - PATCHABLE_POD_FIELDS - {"containers", "restartPolicy"})
    if extra_pod:
        reasons.append(f"pod fields {', '.join(extra_pod)}")
    if len(spec.get("containers") or []) > 1:
        reasons.append("more than one container")
    extra_container = sorted(set(container) - TRAINER_CONTAINER_FIELDS)
    if extra_container:
        reasons.append(f"container fields {', '.join(extra_container)}")
    return reasons


def _comparable(replica: dict[str, Any]) -> Any:
    return json.dumps(replica.get("template") or {}, sort_keys=True)


def _pod_patch(template: dict[str, Any], container: dict[str, Any]) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    metadata = {k: v for k, v in (template.get("metadata") or {}).items() if k in ("labels", "annotations") and v}
    if metadata:
        patch["metadata"] = copy.deepcopy(metadata)
    spec = {k: copy.deepcopy(v) for k, v in (template.get("spec") or {}).items() if k in PATCHABLE_POD_FIELDS}
    container_patch = {k: copy.deepcopy(container[k]) for k in ("volumeMounts", "securityContext") if container.get(k)}
    if container_patch:
        spec["containers"] = [{"name": NODE, **container_patch}]
    if spec:
        patch["spec"] = spec
    return patch
