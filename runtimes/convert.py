"""Training Operator v1 → Trainer v2: PyTorchJob and TFJob as a TrainJob (+ a runtime when needed).

A PyTorchJob whose pods differ from the built-in ``torch-distributed`` runtime only in fields a
TrainJob can carry (image, command, args, env, resources, and through ``runtimePatches`` the
service account, node selector, affinity, tolerations, volumes and mounts) becomes a TrainJob on
that runtime. Anything else (sidecars, init containers, probes, ports, a Master that differs from
its Workers) needs its own TrainingRuntime, generated next to the TrainJob. A TFJob always gets
one: Trainer ships no TensorFlow runtime, and ``TF_CONFIG`` (the cluster of chief, workers and
parameter servers) must be rebuilt from JobSet's stable pod names.

Everything that cannot be carried over is listed in :attr:`Conversion.unmapped`, for a person.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from runtimes.api.trainer import (
    ANCESTOR_LABEL,
    ANCESTOR_TRAINER,
    NODE,
    NUM_PROC_PER_NODE_WORDS,
    TRAINER_API_VERSION,
    TRAINING_RUNTIME_KIND,
    TRAINJOB_KIND,
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
TF_DEFAULT_PORT = 2222
TF_ROLE_TO_JOB = {"Chief": "chief", "Master": "chief", "Worker": NODE, "PS": "ps", "Evaluator": "evaluator"}
TF_ROLE_TO_TASK = {"Chief": "chief", "Master": "chief", "Worker": "worker", "PS": "ps", "Evaluator": "evaluator"}


class ConversionError(ValueError):
    """Input that is not a convertible Training Operator v1 job."""


@dataclass
class Conversion:
    trainjob: dict[str, Any]
    runtime: dict[str, Any] | None = None
    unmapped: list[str] = field(default_factory=list)

    def objects(self) -> list[dict[str, Any]]:
        return [self.runtime, self.trainjob] if self.runtime is not None else [self.trainjob]


def convert_v1_job(job: dict[str, Any]) -> Conversion:
    kind = job.get("kind")
    if kind == "PyTorchJob":
        return convert_pytorchjob(job)
    if kind == "TFJob":
        return convert_tfjob(job)
    raise ConversionError(f"kind {kind!r} is not supported: convert takes a kubeflow.org/v1 PyTorchJob or TFJob")


def _replica_specs(job: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    specs = (job.get("spec") or {}).get(key)
    if not isinstance(specs, dict) or not specs:
        raise ConversionError(f"{job.get('kind')} {_name(job)!r}: spec.{key} must list the replicas")
    return specs


def _name(job: dict[str, Any]) -> str:
    return str((job.get("metadata") or {}).get("name") or "")


def _trainjob_base(job: dict[str, Any], runtime_ref: dict[str, Any]) -> dict[str, Any]:
    metadata = job.get("metadata") or {}
    out_meta: dict[str, Any] = {"name": metadata.get("name", "")}
    for key in ("namespace", "labels", "annotations"):
        if metadata.get(key):
            out_meta[key] = copy.deepcopy(metadata[key])
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": TRAINJOB_KIND,
        "metadata": out_meta,
        "spec": {"runtimeRef": runtime_ref},
    }


def _map_run_policy(job: dict[str, Any], spec: dict[str, Any], unmapped: list[str]) -> int | None:
    """runPolicy fields with a TrainJob equivalent; returns backoffLimit for a generated runtime."""
    run_policy = (job.get("spec") or {}).get("runPolicy") or {}
    if run_policy.get("activeDeadlineSeconds") is not None:
        spec["activeDeadlineSeconds"] = run_policy["activeDeadlineSeconds"]
    if run_policy.get("suspend") is not None:
        spec["suspend"] = run_policy["suspend"]
    for key in ("cleanPodPolicy", "ttlSecondsAfterFinished", "schedulingPolicy", "managedBy"):
        if run_policy.get(key) is not None:
            unmapped.append(
                f"spec.runPolicy.{key}: no TrainJob equivalent (queueing and gangs come from Kueue labels "
                "and the runtime's podGroupPolicy); dropped"
            )
    backoff = run_policy.get("backoffLimit")
    return int(backoff) if backoff is not None else None


def _main_container(template: dict[str, Any], preferred: str) -> dict[str, Any] | None:
    containers = (template.get("spec") or {}).get("containers") or []
    for container in containers:
        if container.get("name") == preferred:
            found: dict[str, Any] = container
            return found
    return containers[0] if containers else None


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


def convert_pytorchjob(job: dict[str, Any]) -> Conversion:
    name = _name(job)
    specs = _replica_specs(job, "pytorchReplicaSpecs")
    unmapped: list[str] = []
    for role in specs:
        if role not in ("Master", "Worker"):
            unmapped.append(f"spec.pytorchReplicaSpecs.{role}: only Master and Worker are converted; dropped")
    roles = [role for role in ("Master", "Worker") if role in specs]
    if not roles:
        raise ConversionError(f"PyTorchJob {name!r}: spec.pytorchReplicaSpecs needs a Master or a Worker")
    num_nodes = sum(int(specs[role].get("replicas", 1)) for role in roles)
    primary = specs[roles[0]]
    template = copy.deepcopy(primary.get("template") or {})
    container = _main_container(template, "pytorch")
    if container is None:
        raise ConversionError(f"PyTorchJob {name!r}: spec.pytorchReplicaSpecs.{roles[0]} has no container")
    templates_differ = len(roles) == 2 and _comparable(specs["Master"]) != _comparable(specs["Worker"])
    for role in roles:
        policy = specs[role].get("restartPolicy")
        if policy and policy != "Never":
            unmapped.append(
                f"spec.pytorchReplicaSpecs.{role}.restartPolicy {policy}: a TrainJob restarts the whole gang "
                "through the runtime's failurePolicy instead of restarting single pods"
            )
    if (job.get("spec") or {}).get("elasticPolicy") is not None:
        unmapped.append("spec.elasticPolicy: elastic PyTorch is not supported by Trainer v2; the node count is fixed")

    trainer: dict[str, Any] = {"numNodes": num_nodes}
    nproc = (job.get("spec") or {}).get("nprocPerNode")
    if nproc is not None:
        text = str(nproc)
        trainer["numProcPerNode"] = int(text) if text.isdigit() else text
        if not text.isdigit() and text not in NUM_PROC_PER_NODE_WORDS:
            unmapped.append(f"spec.nprocPerNode {text!r}: not an integer or auto/cpu/gpu; check it")
    where = f"spec.pytorchReplicaSpecs.{roles[0]}.template.spec.containers[{container.get('name')}]"
    env = _clean_env(container.get("env") or [], f"{where}.env", unmapped)

    reasons = _needs_own_runtime(template, container)
    if templates_differ:
        reasons.append("Master and Worker pod templates differ (a TrainJob runs one node template)")
        unmapped.append(
            f"spec.pytorchReplicaSpecs: Master and Worker differ; every node now runs the {roles[0]}'s pod template"
        )
    backoff: int | None
    if reasons:
        runtime_name = f"{name}-torch"
        trainjob = _trainjob_base(job, {"name": runtime_name, "kind": TRAINING_RUNTIME_KIND})
        backoff = _map_run_policy(job, trainjob["spec"], unmapped)
        node_container = copy.deepcopy(container)
        node_container["name"] = NODE
        node_container["env"] = env
        if not env:
            node_container.pop("env")
        pod_spec = template.setdefault("spec", {})
        pod_spec["containers"] = [node_container if c is container else c for c in pod_spec.get("containers") or []]
        pod_spec.pop("restartPolicy", None)
        runtime = _runtime(
            job, runtime_name, {"numNodes": 1, "torch": {}}, [_replicated_job(NODE, template, trainer=True)], backoff
        )
        runtime["metadata"]["labels"] = {"trainer.kubeflow.org/framework": "torch"}
        trainjob["spec"]["trainer"] = trainer
        unmapped.insert(0, f"generated TrainingRuntime {runtime_name!r}: the pods use {'; '.join(reasons)}")
        return Conversion(trainjob=trainjob, runtime=runtime, unmapped=unmapped)

    trainjob = _trainjob_base(job, {"name": BUILTIN_TORCH_RUNTIME, "kind": "ClusterTrainingRuntime"})
    backoff = _map_run_policy(job, trainjob["spec"], unmapped)
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


def _replicated_job(name: str, pod_template: dict[str, Any], *, trainer: bool) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"template": pod_template}}
    if trainer:
        template["metadata"] = {"labels": {ANCESTOR_LABEL: ANCESTOR_TRAINER}}
    return {"name": name, "template": template}


def _runtime(
    job: dict[str, Any],
    name: str,
    ml_policy: dict[str, Any],
    replicated_jobs: list[dict[str, Any]],
    backoff: int | None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    namespace = (job.get("metadata") or {}).get("namespace")
    if namespace:
        metadata["namespace"] = namespace
    template_spec: dict[str, Any] = {"replicatedJobs": replicated_jobs}
    if backoff is not None:
        # v1's backoffLimit counted pod restarts; the closest v2 notion restarts the whole gang.
        template_spec["failurePolicy"] = {"maxRestarts": backoff}
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": TRAINING_RUNTIME_KIND,
        "metadata": metadata,
        "spec": {"mlPolicy": ml_policy, "template": {"spec": template_spec}},
    }


def convert_tfjob(job: dict[str, Any]) -> Conversion:
    name = _name(job)
    specs = _replica_specs(job, "tfReplicaSpecs")
    unmapped: list[str] = []
    roles = [role for role in ("Chief", "Master", "PS", "Worker", "Evaluator") if role in specs]
    for role in specs:
        if role not in TF_ROLE_TO_JOB:
            unmapped.append(f"spec.tfReplicaSpecs.{role}: unknown replica type; dropped")
    if "Worker" not in specs:
        raise ConversionError(f"TFJob {name!r}: spec.tfReplicaSpecs needs a Worker")
    if "Chief" in specs and "Master" in specs:
        unmapped.append("spec.tfReplicaSpecs.Master: both Chief and Master given; Master dropped")
        roles.remove("Master")
    runtime_name = f"{name}-tensorflow"
    trainjob = _trainjob_base(job, {"name": runtime_name, "kind": TRAINING_RUNTIME_KIND})
    backoff = _map_run_policy(job, trainjob["spec"], unmapped)
    for key in ("successPolicy", "enableDynamicWorker"):
        if (job.get("spec") or {}).get(key) is not None:
            unmapped.append(f"spec.{key}: no Trainer v2 equivalent; dropped")

    counts = {role: int(specs[role].get("replicas", 1)) for role in roles}
    cluster: dict[str, list[str]] = {}
    for role in roles:
        if role == "Evaluator":
            continue  # the Training Operator leaves evaluators out of the cluster spec too
        port = _tf_port(specs[role])
        job_name = TF_ROLE_TO_JOB[role]
        cluster[TF_ROLE_TO_TASK[role]] = [f"{name}-{job_name}-0-{i}.{name}:{port}" for i in range(counts[role])]
    replicated_jobs = []
    for role in roles:
        template = copy.deepcopy(specs[role].get("template") or {})
        container = _main_container(template, "tensorflow")
        if container is None:
            raise ConversionError(f"TFJob {name!r}: spec.tfReplicaSpecs.{role} has no container")
        if not container.get("command"):
            unmapped.append(
                f"spec.tfReplicaSpecs.{role}: the container has no command; TF_CONFIG is only set when the "
                "command is known, so add one to the generated runtime"
            )
        else:
            container["command"] = _tf_config_wrapper(TF_ROLE_TO_TASK[role], container["command"])
            container["env"] = [
                *(container.get("env") or []),
                {"name": "TF_CLUSTER_SPEC", "value": json.dumps(cluster, separators=(",", ":"))},
            ]
        policy = specs[role].get("restartPolicy")
        if policy and policy != "Never":
            unmapped.append(
                f"spec.tfReplicaSpecs.{role}.restartPolicy {policy}: failures restart the whole JobSet "
                "through failurePolicy instead"
            )
        (template.get("spec") or {}).pop("restartPolicy", None)
        job_name = TF_ROLE_TO_JOB[role]
        if job_name == NODE:
            container["name"] = NODE
        rjob = _replicated_job(job_name, template, trainer=job_name == NODE)
        if job_name != NODE:
            rjob["template"].setdefault("spec", {})["parallelism"] = counts[role]
            rjob["template"]["spec"]["completions"] = counts[role]
        replicated_jobs.append(rjob)
    runtime = _runtime(job, runtime_name, {"numNodes": counts["Worker"]}, replicated_jobs, backoff)
    runtime["metadata"]["labels"] = {"trainer.kubeflow.org/framework": "tensorflow"}
    # Parameter servers never exit: the job is done when the chief (else every worker) is.
    success_target = "chief" if ("Chief" in roles or "Master" in roles) else NODE
    runtime["spec"]["template"]["spec"]["successPolicy"] = {"operator": "All", "targetReplicatedJobs": [success_target]}
    trainjob["spec"]["trainer"] = {"numNodes": counts["Worker"]}
    unmapped.insert(
        0,
        f"generated TrainingRuntime {runtime_name!r}: Trainer has no TensorFlow runtime; TF_CONFIG is built "
        f"from JobSet pod names for a TrainJob named {name!r} with {counts['Worker']} workers — keep that "
        "name and numNodes, or edit TF_CLUSTER_SPEC in the runtime",
    )
    return Conversion(trainjob=trainjob, runtime=runtime, unmapped=unmapped)


def _tf_port(replica: dict[str, Any]) -> int:
    container = _main_container(replica.get("template") or {}, "tensorflow") or {}
    for port in container.get("ports") or []:
        if port.get("name") == "tfjob-port" and port.get("containerPort"):
            return int(port["containerPort"])
    return TF_DEFAULT_PORT


def _tf_config_wrapper(task_type: str, command: list[str]) -> list[str]:
    """Run ``command`` with TF_CONFIG built from the cluster spec and the pod's completion index.

    Indexed Jobs give every pod ``JOB_COMPLETION_INDEX``; that is the task index TF needs.
    """
    script = (
        'export TF_CONFIG="{\\"cluster\\":${TF_CLUSTER_SPEC},\\"task\\":{\\"type\\":\\"'
        + task_type
        + '\\",\\"index\\":${JOB_COMPLETION_INDEX:-0}},\\"environment\\":\\"cloud\\"}"; exec "$@"'
    )
    return ["/bin/sh", "-c", script, "--", *command]
