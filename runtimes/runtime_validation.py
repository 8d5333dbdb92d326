"""Admission rules for a (Cluster)TrainingRuntime: its policies and its JobSet template.

Trainer's runtime webhook (``validateReplicatedJobs``) and CRD rules, plus the JobSet and
batch/v1 rules a runtime would otherwise only trip over when its first TrainJob's JobSet or
Jobs are created (failure-policy actions, podFailurePolicy shape, dependsOn targets).
"""

from __future__ import annotations

import re
from typing import Any

from runtimes.api.batch import POD_FAILURE_ACTIONS
from runtimes.api.jobset import FAILURE_POLICY_ACTIONS, JOB_FAILURE_REASONS
from runtimes.api.trainer import (
    ANCESTOR_CONTAINERS,
    LAUNCHER,
    NODE,
    NUM_PROC_PER_NODE_WORDS,
    AnyTrainingRuntime,
    MLPolicy,
    MPIMLPolicySource,
    PodGroupPolicy,
    TorchMLPolicySource,
)
from runtimes.errors import FieldError
from runtimes.plugins.info import ancestor_of

_RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_JOBS = "spec.template.spec.replicatedJobs"


def validate_runtime(runtime: AnyTrainingRuntime) -> list[FieldError]:
    """Everything wrong with ``runtime``; an empty list means it can serve TrainJobs."""
    spec = runtime.spec.to_dict()
    template_spec: dict[str, Any] = (spec.get("template") or {}).get("spec") or {}
    jobs: list[dict[str, Any]] = template_spec.get("replicatedJobs") or []
    return (
        _validate_policies(runtime, {str(job.get("name")) for job in jobs}, template_spec)
        + _validate_replicated_jobs(jobs)
        + _validate_jobset_policies(template_spec, {str(job.get("name")) for job in jobs})
    )


_INT32_MAX = 2**31 - 1
_POD_GROUP_SOURCES = frozenset({"coscheduling", "volcano"})
_ML_POLICY_FIELDS = frozenset({"numNodes", "torch", "mpi", "jax", "xgboost", "flux"})


def _validate_policies(
    runtime: AnyTrainingRuntime, job_names: set[str], template_spec: dict[str, Any]
) -> list[FieldError]:
    errors: list[FieldError] = []
    ml_policy = runtime.spec.ml_policy
    if ml_policy is not None:
        errors += _validate_ml_policy_choice(ml_policy)
        if ml_policy.torch is not None:
            errors += _validate_torch_policy(ml_policy.torch, job_names)
        if ml_policy.mpi is not None:
            errors += _validate_mpi_policy(ml_policy.mpi, job_names)
        if (ml_policy.torch is not None or ml_policy.mpi is not None) and (template_spec.get("network") or {}).get(
            "enableDNSHostnames"
        ) is False:
            errors.append(
                FieldError(
                    "spec.template.spec.network.enableDNSHostnames",
                    "false is not accepted for torch and MPI runtimes: their pods find each other by DNS hostname",
                )
            )
    return errors + _validate_pod_group_policy(runtime.spec.pod_group_policy)


def _validate_ml_policy_choice(ml_policy: MLPolicy) -> list[FieldError]:
    """One known ML policy, a node count in range, and numNodes not beside torch's elastic range."""
    errors: list[FieldError] = []
    sources = ml_policy.sources()
    if len(sources) > 1:
        errors.append(FieldError("spec.mlPolicy", f"sets {', '.join(sources)}: only one ML policy may be configured"))
    if ml_policy.num_nodes is not None and not 1 <= ml_policy.num_nodes <= _INT32_MAX:
        errors.append(
            FieldError(
                "spec.mlPolicy.numNodes",
                f"{ml_policy.num_nodes} is not accepted: must be at least 1 and at most {_INT32_MAX}",
            )
        )
    for source in sorted(set(ml_policy.to_dict()) - _ML_POLICY_FIELDS):
        errors.append(
            FieldError(
                f"spec.mlPolicy.{source}",
                "is not an ML policy trainyard knows (numNodes with one of torch, mpi, jax, xgboost); "
                "rendering without it would start the pods without the framework's setup",
            )
        )
    if ml_policy.flux is not None:
        errors.append(
            FieldError(
                "spec.mlPolicy.flux",
                "is not supported by trainyard: Trainer's Flux plugin installs Flux with an init "
                "container, generates its broker configuration and curve certificate and replaces "
                "the entrypoint, none of which trainyard renders; run Flux runtimes with Kubeflow "
                "Trainer itself, or use a torch, mpi, jax or xgboost runtime",
            )
        )
    torch = ml_policy.torch
    if torch is not None and torch.elastic_policy is not None and ml_policy.num_nodes is not None:
        errors.append(
            FieldError(
                "spec.mlPolicy.numNodes",
                "numNodes should not be set if torch.elasticPolicy is configured (minNodes and maxNodes "
                "give the node range)",
            )
        )
    return errors


def _validate_torch_policy(torch: TorchMLPolicySource, job_names: set[str]) -> list[FieldError]:
    errors: list[FieldError] = []
    value = torch.num_proc_per_node
    if (isinstance(value, int) and value < 1) or (isinstance(value, str) and value not in NUM_PROC_PER_NODE_WORDS):
        errors.append(
            FieldError(
                "spec.mlPolicy.torch.numProcPerNode",
                f"{value!r} is not accepted: must be an integer >= 1 or one of auto, cpu, gpu",
            )
        )
    if NODE not in job_names:
        errors.append(
            FieldError(
                _JOBS,
                "a torch runtime must have a replicated job named 'node': the rendezvous address is its first pod",
            )
        )
    return errors


def _validate_mpi_policy(mpi: MPIMLPolicySource, job_names: set[str]) -> list[FieldError]:
    errors: list[FieldError] = []
    if mpi.num_proc_per_node is not None and mpi.num_proc_per_node < 1:
        errors.append(
            FieldError(
                "spec.mlPolicy.mpi.numProcPerNode",
                f"{mpi.num_proc_per_node} is not accepted: must be at least 1",
            )
        )
    if mpi.effective_mpi_implementation != "OpenMPI":
        errors.append(
            FieldError(
                "spec.mlPolicy.mpi.mpiImplementation",
                f"{mpi.mpi_implementation!r} is not supported: only OpenMPI is",
            )
        )
    if LAUNCHER not in job_names:
        errors.append(FieldError(_JOBS, "an MPI runtime must have a replicated job named 'launcher' that runs mpirun"))
    return errors


def _validate_pod_group_policy(pod_group_policy: PodGroupPolicy | None) -> list[FieldError]:
    errors: list[FieldError] = []
    for source in sorted(set(pod_group_policy.to_dict() if pod_group_policy is not None else {}) - _POD_GROUP_SOURCES):
        # Ignoring it would start the pods without the gang the runtime asks for.
        errors.append(
            FieldError(
                f"spec.podGroupPolicy.{source}",
                "is not supported by trainyard, which renders coscheduling and volcano pod groups only; "
                "use one of those, or Kubeflow Trainer itself for this scheduler",
            )
        )
    if pod_group_policy is not None and pod_group_policy.coscheduling is not None:
        timeout = pod_group_policy.coscheduling.schedule_timeout_seconds
        if timeout is not None and timeout < 0:
            errors.append(
                FieldError(
                    "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds",
                    f"{timeout} is not accepted: must be 0 (the default, 60s) or more",
                )
            )
    return errors


def _validate_replicated_jobs(jobs: list[dict[str, Any]]) -> list[FieldError]:
    errors: list[FieldError] = []
    if not jobs:
        return [FieldError(_JOBS, "must list at least one replicated job")]
    seen: set[str] = set()
    for index, job in enumerate(jobs):
        path = f"{_JOBS}[{index}]"
        name = str(job.get("name") or "")
        if not name:
            errors.append(FieldError(f"{path}.name", "must be set"))
        elif name in seen:
            errors.append(FieldError(f"{path}.name", f"{name!r} appears twice; replicated job names are unique"))
        seen.add(name)
        ancestor = ancestor_of(job)
        pod_spec = (((job.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
        containers = [str(c.get("name")) for c in pod_spec.get("containers") or []]
        if ancestor in ANCESTOR_CONTAINERS:
            replicas = job.get("replicas", 1)
            if replicas != 1:
                errors.append(
                    FieldError(
                        f"{path}.replicas", f"{replicas} is not accepted: always must be 1 for the {ancestor} step"
                    )
                )
            required = ANCESTOR_CONTAINERS[ancestor]
            if required not in containers:
                errors.append(
                    FieldError(
                        f"{path}.template.spec.template.spec.containers",
                        f"must contain the required container {required!r} for the {ancestor} step; has: "
                        f"{', '.join(containers) or '(none)'}",
                    )
                )
        job_spec = (job.get("template") or {}).get("spec") or {}
        errors.extend(_validate_pod_failure_policy(job_spec, pod_spec, containers, f"{path}.template.spec"))
    return errors


def _validate_pod_failure_policy(
    job_spec: dict[str, Any], pod_spec: dict[str, Any], containers: list[str], path: str
) -> list[FieldError]:
    policy = job_spec.get("podFailurePolicy")
    if not policy:
        return []
    errors: list[FieldError] = []
    restart_policy = pod_spec.get("restartPolicy")
    if restart_policy not in (None, "Never"):
        errors.append(
            FieldError(
                f"{path}.template.spec.restartPolicy",
                f"{restart_policy!r} is not accepted with a podFailurePolicy: Kubernetes requires Never",
            )
        )
    for index, rule in enumerate(policy.get("rules") or []):
        rule_path = f"{path}.podFailurePolicy.rules[{index}]"
        action = rule.get("action")
        if action not in POD_FAILURE_ACTIONS:
            errors.append(
                FieldError(
                    f"{rule_path}.action",
                    f"{action!r} is not accepted: must be one of {', '.join(POD_FAILURE_ACTIONS)}",
                )
            )
        # Kubernetes counts entries, so ``onPodConditions: []`` next to ``onExitCodes`` is valid.
        on_exit, on_conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
        if (on_exit is None) == (not on_conditions):
            errors.append(FieldError(rule_path, "must set exactly one of onExitCodes and onPodConditions"))
        if on_exit is not None:
            operator, values = on_exit.get("operator"), on_exit.get("values") or []
            if operator not in ("In", "NotIn"):
                errors.append(
                    FieldError(
                        f"{rule_path}.onExitCodes.operator", f"{operator!r} is not accepted: must be In or NotIn"
                    )
                )
            if not values:
                errors.append(FieldError(f"{rule_path}.onExitCodes.values", "must list at least one exit code"))
            if operator == "In" and 0 in values:
                errors.append(
                    FieldError(f"{rule_path}.onExitCodes.values", "0 is not accepted with In: exit code 0 is success")
                )
            container = on_exit.get("containerName")
            if container is not None and container not in containers:
                errors.append(
                    FieldError(
                        f"{rule_path}.onExitCodes.containerName",
                        f"{container!r} is not a container of this job; it has: {', '.join(containers)}",
                    )
                )
    return errors


def _validate_jobset_policies(template_spec: dict[str, Any], job_names: set[str]) -> list[FieldError]:
    return (
        _validate_success_policy(template_spec.get("successPolicy") or {}, job_names)
        + _validate_failure_policy(template_spec.get("failurePolicy") or {}, job_names)
        + _validate_depends_on(template_spec.get("replicatedJobs") or [], job_names)
    )


def _missing_targets(targets: list[str] | None, job_names: set[str], path: str) -> list[FieldError]:
    known = ", ".join(sorted(job_names))
    return [
        FieldError(path, f"replicated job {target!r} does not exist; the jobs are: {known}")
        for target in targets or []
        if target not in job_names
    ]


def _validate_success_policy(success: dict[str, Any], job_names: set[str]) -> list[FieldError]:
    if not success:
        return []
    errors: list[FieldError] = []
    if success.get("operator", "All") not in ("All", "Any"):
        errors.append(
            FieldError(
                "spec.template.spec.successPolicy.operator",
                f"{success.get('operator')!r} is not accepted: must be All or Any",
            )
        )
    path = "spec.template.spec.successPolicy.targetReplicatedJobs"
    return errors + _missing_targets(success.get("targetReplicatedJobs"), job_names, path)


def _validate_failure_policy(failure: dict[str, Any], job_names: set[str]) -> list[FieldError]:
    errors: list[FieldError] = []
    path = "spec.template.spec.failurePolicy"
    if failure.get("maxRestarts") is not None and failure["maxRestarts"] < 0:
        errors.append(FieldError(f"{path}.maxRestarts", f"{failure['maxRestarts']} is not accepted: must be 0 or more"))
    for index, rule in enumerate(failure.get("rules") or []):
        rule_path = f"{path}.rules[{index}]"
        name = rule.get("name")
        if name is not None and not _RULE_NAME.match(name):
            errors.append(
                FieldError(
                    f"{rule_path}.name",
                    f"{name!r} is not accepted: letters, digits, '_', ',' and ':', starting with a letter",
                )
            )
        if rule.get("action") not in FAILURE_POLICY_ACTIONS:
            errors.append(
                FieldError(
                    f"{rule_path}.action",
                    f"{rule.get('action')!r} is not accepted: must be one of {', '.join(FAILURE_POLICY_ACTIONS)}",
                )
            )
        for reason in rule.get("onJobFailureReasons") or []:
            if reason not in JOB_FAILURE_REASONS:
                errors.append(
                    FieldError(
                        f"{rule_path}.onJobFailureReasons",
                        f"{reason!r} is not accepted: must be one of {', '.join(JOB_FAILURE_REASONS)}",
                    )
                )
        errors += _missing_targets(rule.get("targetReplicatedJobs"), job_names, f"{rule_path}.targetReplicatedJobs")
    return errors


def _validate_depends_on(jobs: list[dict[str, Any]], job_names: set[str]) -> list[FieldError]:
    errors: list[FieldError] = []
    known = ", ".join(sorted(job_names))
    for index, job in enumerate(jobs):
        for dep_index, dependency in enumerate(job.get("dependsOn") or []):
            dep_path = f"{_JOBS}[{index}].dependsOn[{dep_index}]"
            if dependency.get("name") not in job_names:
                errors.append(
                    FieldError(
                        f"{dep_path}.name",
                        f"replicated job {dependency.get('name')!r} does not exist; the jobs are: {known}",
                    )
                )
            if dependency.get("status") not in ("Ready", "Complete"):
                errors.append(
                    FieldError(
                        f"{dep_path}.status", f"{dependency.get('status')!r} is not accepted: must be Ready or Complete"
                    )
                )
    return errors


def validate_jobset_spec(spec: dict[str, Any]) -> list[FieldError]:
    """A JobSet's own rules (its webhook's and the batch/v1 Job rules of its templates), for a
    JobSet given as such rather than as a runtime's template; paths start at ``spec``."""
    jobs: list[dict[str, Any]] = spec.get("replicatedJobs") or []
    names = {str(job.get("name")) for job in jobs}
    errors = _validate_replicated_jobs(jobs) + _validate_jobset_policies(spec, names)
    prefix = "spec.template.spec."
    return [
        FieldError("spec." + error.path[len(prefix) :], error.message) if error.path.startswith(prefix) else error
        for error in errors
    ]
