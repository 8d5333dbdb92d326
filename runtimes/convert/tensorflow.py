"""TFJob → a TrainJob and a TrainingRuntime of its own.

Trainer ships no TensorFlow runtime, so every TFJob gets one: a replicated job per role (chief,
worker, ps, evaluator), and ``TF_CONFIG`` (the cluster of chief, workers and parameter servers)
rebuilt from JobSet's stable pod names.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from runtimes.api.trainer import NODE, TRAINING_RUNTIME_KIND
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

TF_DEFAULT_PORT = 2222
TF_ROLE_TO_JOB = {"Chief": "chief", "Master": "chief", "Worker": NODE, "PS": "ps", "Evaluator": "evaluator"}
TF_ROLE_TO_TASK = {"Chief": "chief", "Master": "chief", "Worker": "worker", "PS": "ps", "Evaluator": "evaluator"}


def convert_tfjob(job: dict[str, Any]) -> Conversion:
    name = job_name(job)
    specs = replica_specs(job, "tfReplicaSpecs")
    unmapped: list[str] = []
    roles = _roles(name, specs, unmapped)
    runtime_name = f"{name}-tensorflow"
    trainjob = trainjob_base(job, {"name": runtime_name, "kind": TRAINING_RUNTIME_KIND})
    backoff = map_run_policy(job, trainjob["spec"], unmapped)
    for key in ("successPolicy", "enableDynamicWorker"):
        if (job.get("spec") or {}).get(key) is not None:
            unmapped.append(f"spec.{key}: no Trainer v2 equivalent; dropped")
    counts = {role: int(specs[role].get("replicas", 1)) for role in roles}
    cluster = _cluster_spec(name, roles, specs, counts)
    replicated_jobs = [_role_job(name, role, specs[role], cluster, counts[role], unmapped) for role in roles]
    runtime = training_runtime(job, runtime_name, {"numNodes": counts["Worker"]}, replicated_jobs, backoff)
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


def _roles(name: str, specs: dict[str, dict[str, Any]], unmapped: list[str]) -> list[str]:
    """The known roles in cluster order; a Worker is required, and Chief wins over Master."""
    roles: list[str] = [role for role in ("Chief", "Master", "PS", "Worker", "Evaluator") if role in specs]
    for role in specs:
        if role not in TF_ROLE_TO_JOB:
            unmapped.append(f"spec.tfReplicaSpecs.{role}: unknown replica type; dropped")
    if "Worker" not in specs:
        raise ConversionError(f"TFJob {name!r}: spec.tfReplicaSpecs needs a Worker")
    if "Chief" in specs and "Master" in specs:
        unmapped.append("spec.tfReplicaSpecs.Master: both Chief and Master given; Master dropped")
        roles.remove("Master")
    return roles


def _cluster_spec(
    name: str, roles: list[str], specs: dict[str, dict[str, Any]], counts: dict[str, int]
) -> dict[str, list[str]]:
    """TF's cluster: each task type's pod addresses, from JobSet's stable pod names."""
    cluster: dict[str, list[str]] = {}
    for role in roles:
        if role == "Evaluator":
            continue  # the Training Operator leaves evaluators out of the cluster spec too
        port = _tf_port(specs[role])
        job = TF_ROLE_TO_JOB[role]
        cluster[TF_ROLE_TO_TASK[role]] = [f"{name}-{job}-0-{i}.{name}:{port}" for i in range(counts[role])]
    return cluster


def _role_job(
    name: str, role: str, spec: dict[str, Any], cluster: dict[str, list[str]], count: int, unmapped: list[str]
) -> dict[str, Any]:
    """One role's replicated job: its pod template, its command wrapped to set TF_CONFIG."""
    template = copy.deepcopy(spec.get("template") or {})
    container = main_container(template, "tensorflow")
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
    policy = spec.get("restartPolicy")
    if policy and policy != "Never":
        unmapped.append(
            f"spec.tfReplicaSpecs.{role}.restartPolicy {policy}: failures restart the whole JobSet "
            "through failurePolicy instead"
        )
    (template.get("spec") or {}).pop("restartPolicy", None)
    job = TF_ROLE_TO_JOB[role]
    if job == NODE:
        container["name"] = NODE
    rjob = replicated_job(job, template, trainer=job == NODE)
    if job != NODE:
        rjob["template"].setdefault("spec", {})["parallelism"] = count
        rjob["template"]["spec"]["completions"] = count
    return rjob


def _tf_port(replica: dict[str, Any]) -> int:
    container = main_container(replica.get("template") or {}, "tensorflow") or {}
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
