"""What a rendered TrainJob becomes on one machine: the local execution plan.

The plan is read from the *rendered* JobSet (the same object the cluster would get), in its
dict form, so the local run executes exactly what the plugins produced: the node container's
command, args and env (PET_* included), the initializer jobs with their STORAGE_URI, the
JobSet failurePolicy and each Job's podFailurePolicy. Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtimes.k8s.quantity import parse_quantity
from runtimes.local.errors import LocalRunError

ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_ANCESTOR = "trainer"
INITIALIZER_ANCESTORS = ("dataset-initializer", "model-initializer")
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
TORCH_NPROC_ENV = "PET_NPROC_PER_NODE"
MPI_MARKER_ENV = "OMPI_MCA_orte_default_hostfile"
GPU_RESOURCE = "nvidia.com/gpu"
_MPI_MESSAGE = (
    "MPI runtimes (e.g. deepspeed-distributed) cannot run locally: they need mpirun and sshd "
    "between pods; use a torch or plain runtime for local runs"
)


@dataclass(frozen=True)
class ExitCodeMatch:
    """``podFailurePolicy.rules[].onExitCodes``."""

    operator: str  # In | NotIn
    values: tuple[int, ...]
    container_name: str | None = None

    def matches(self, container: str, exit_code: int) -> bool:
        if self.container_name and self.container_name != container:
            return False
        if self.operator == "In":
            return exit_code in self.values
        # NotIn only concerns failed containers: exit code 0 never matches.
        return exit_code != 0 and exit_code not in self.values


@dataclass(frozen=True)
class PodFailureRule:
    """``podFailurePolicy.rules[]``; rules on pod conditions never match a local process exit."""

    action: str  # FailJob | Ignore | Count | FailIndex
    on_exit_codes: ExitCodeMatch | None


@dataclass(frozen=True)
class JobSetFailureRule:
    """``failurePolicy.rules[]`` of the JobSet."""

    name: str
    action: str
    on_job_failure_reasons: tuple[str, ...] = ()
    on_job_failure_message_patterns: tuple[str, ...] = ()
    target_replicated_jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class FailurePolicy:
    max_restarts: int
    rules: tuple[JobSetFailureRule, ...] = ()


@dataclass(frozen=True)
class ContainerPlan:
    """One container of one replicated job, as rendered (env values not yet resolved per pod)."""

    replicated_job: str
    container: str
    command: tuple[str, ...]
    env: tuple[Mapping[str, Any], ...]
    working_dir: str | None
    parallelism: int
    pod_failure_rules: tuple[PodFailureRule, ...] = ()
    gpus: int = 0  # nvidia.com/gpu of the container: what the device plugin would hand each pod

    def env_value(self, name: str) -> str | None:
        for item in self.env:
            if item.get("name") == name and item.get("value") is not None:
                return str(item["value"])
        return None


@dataclass(frozen=True)
class LocalPlan:
    name: str
    namespace: str
    initializers: tuple[ContainerPlan, ...]
    trainer: ContainerPlan
    failure_policy: FailurePolicy | None
    config_maps: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    secrets: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def is_torch(self) -> bool:
        return self.trainer.env_value(TORCH_NPROC_ENV) is not None


def as_dict(obj: Any) -> dict[str, Any]:
    """The dict form of a rendered object (a KubeModel, or already a dict)."""
    if isinstance(obj, dict):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        result = to_dict()
        if isinstance(result, dict):
            return result
    raise LocalRunError(f"cannot read rendered object of type {type(obj).__name__}")


def _pod_failure_rules(job_spec: Mapping[str, Any]) -> tuple[PodFailureRule, ...]:
    rules = []
    for rule in (job_spec.get("podFailurePolicy") or {}).get("rules") or []:
        codes = rule.get("onExitCodes")
        match = (
            ExitCodeMatch(
                operator=str(codes.get("operator", "In")),
                values=tuple(int(v) for v in codes.get("values") or ()),
                container_name=codes.get("containerName"),
            )
            if codes
            else None
        )
        rules.append(PodFailureRule(action=str(rule.get("action", "Count")), on_exit_codes=match))
    return tuple(rules)


def _failure_policy(spec: Mapping[str, Any]) -> FailurePolicy | None:
    policy = spec.get("failurePolicy")
    if policy is None:
        return None
    rules = tuple(
        JobSetFailureRule(
            name=str(rule.get("name") or f"failurePolicyRule{index}"),
            action=str(rule.get("action", "RestartJobSet")),
            on_job_failure_reasons=tuple(rule.get("onJobFailureReasons") or ()),
            on_job_failure_message_patterns=tuple(rule.get("onJobFailureMessagePatterns") or ()),
            target_replicated_jobs=tuple(rule.get("targetReplicatedJobs") or ()),
        )
        for index, rule in enumerate(policy.get("rules") or [])
    )
    return FailurePolicy(max_restarts=int(policy.get("maxRestarts") or 0), rules=rules)


def container_gpus(resources: Mapping[str, Any] | None) -> int:
    """``nvidia.com/gpu`` of a rendered container: limits, else requests (Kubernetes defaults a
    missing request of an extended resource to its limit, and the two must then be equal)."""
    for part in ("limits", "requests"):
        quantity = ((resources or {}).get(part) or {}).get(GPU_RESOURCE)
        if quantity is not None:
            return int(parse_quantity(str(quantity)))
    return 0


def _container_plan(
    replicated_job: Mapping[str, Any], container_name: str, needs_command: bool = True
) -> ContainerPlan:
    name = str(replicated_job.get("name"))
    job_spec = (replicated_job.get("template") or {}).get("spec") or {}
    pod_spec = (job_spec.get("template") or {}).get("spec") or {}
    containers = pod_spec.get("containers") or []
    chosen = next((c for c in containers if c.get("name") == container_name), None)
    if chosen is None:
        raise LocalRunError(
            f"replicatedJob {name!r} has no container named {container_name!r}: "
            f"the runtime must define it (containers: {[c.get('name') for c in containers]})"
        )
    command = [*(chosen.get("command") or []), *(chosen.get("args") or [])]
    if not command and needs_command:
        raise LocalRunError(
            f"container {container_name!r} of replicatedJob {name!r} has no command: "
            "locally there is no image entrypoint, so set spec.trainer.command in the TrainJob"
        )
    return ContainerPlan(
        replicated_job=name,
        container=container_name,
        command=tuple(str(part) for part in command),
        env=tuple(chosen.get("env") or ()),
        working_dir=chosen.get("workingDir"),
        parallelism=int(job_spec.get("parallelism") or 1),
        pod_failure_rules=_pod_failure_rules(job_spec),
        gpus=container_gpus(chosen.get("resources")),
    )


def _data_of(objects: list[Any]) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for obj in objects:
        data = as_dict(obj)
        name = str((data.get("metadata") or {}).get("name"))
        values = {k: str(v) for k, v in (data.get("data") or {}).items()}
        values.update({k: str(v) for k, v in (data.get("stringData") or {}).items()})
        found[name] = values
    return found


def plan_from_jobset(
    jobset: Mapping[str, Any], config_maps: list[Any] | None = None, secrets: list[Any] | None = None
) -> LocalPlan:
    """The local plan of a rendered JobSet (dict form); raises LocalRunError when it cannot run here."""
    metadata = jobset.get("metadata") or {}
    spec = jobset.get("spec") or {}
    initializers: list[ContainerPlan] = []
    trainer: ContainerPlan | None = None
    for replicated_job in spec.get("replicatedJobs") or []:
        name = str(replicated_job.get("name"))
        labels = ((replicated_job.get("template") or {}).get("metadata") or {}).get("labels") or {}
        ancestor = labels.get(ANCESTOR_LABEL) or (name if name in INITIALIZER_ANCESTORS else None)
        if ancestor in INITIALIZER_ANCESTORS:
            # The launcher runs its own loader for initializers: their image command is not used.
            initializers.append(_container_plan(replicated_job, str(ancestor), needs_command=False))
        elif ancestor == TRAINER_ANCESTOR or (ancestor is None and name == "node" and trainer is None):
            if name == "launcher" or MPI_MARKER_ENV in str(replicated_job):
                raise LocalRunError(_MPI_MESSAGE)
            trainer = _container_plan(replicated_job, "node")
        else:
            raise LocalRunError(
                f"replicatedJob {name!r} of the runtime has no local equivalent: local runs execute "
                "the dataset-initializer, model-initializer and trainer (node) jobs only"
            )
    if trainer is None:
        raise LocalRunError(
            "the rendered JobSet has no trainer job (label "
            f"{ANCESTOR_LABEL}={TRAINER_ANCESTOR} or a replicatedJob named 'node'): check the runtime"
        )
    order = {name: i for i, name in enumerate(INITIALIZER_ANCESTORS)}
    initializers.sort(key=lambda plan: order.get(plan.container, len(order)))
    return LocalPlan(
        name=str(metadata.get("name") or "trainjob"),
        namespace=str(metadata.get("namespace") or "default"),
        initializers=tuple(initializers),
        trainer=trainer,
        failure_policy=_failure_policy(spec),
        config_maps=_data_of(config_maps or []),
        secrets=_data_of(secrets or []),
    )


@dataclass(frozen=True)
class PodContext:
    """The identity of one local "pod", for fieldRef env values."""

    jobset: str
    namespace: str
    replicated_job: str
    pod_index: int

    @property
    def pod_name(self) -> str:
        return f"{self.jobset}-{self.replicated_job}-0-{self.pod_index}"


def resolve_env(plan: LocalPlan, container: ContainerPlan, pod: PodContext) -> dict[str, str]:
    """The container's env for one pod, with fieldRef / configMapKeyRef / secretKeyRef resolved."""
    resolved: dict[str, str] = {}
    for item in container.env:
        name = str(item.get("name"))
        if item.get("value") is not None:
            resolved[name] = str(item["value"])
            continue
        source = item.get("valueFrom") or {}
        if not source:
            resolved[name] = ""
        elif "fieldRef" in source:
            resolved[name] = _field_value(str(source["fieldRef"].get("fieldPath", "")), pod, name)
        elif "configMapKeyRef" in source or "secretKeyRef" in source:
            kind = "configMapKeyRef" if "configMapKeyRef" in source else "secretKeyRef"
            ref = source[kind]
            store = plan.config_maps if kind == "configMapKeyRef" else plan.secrets
            value = store.get(str(ref.get("name")), {}).get(str(ref.get("key")))
            if value is None:
                if ref.get("optional"):
                    continue
                raise LocalRunError(
                    f"env {name} of container {container.container!r} reads {kind} "
                    f"{ref.get('name')}/{ref.get('key')}, which the rendered TrainJob does not contain"
                )
            resolved[name] = value
        else:
            raise LocalRunError(
                f"env {name} of container {container.container!r} uses valueFrom "
                f"{sorted(source)}, which local runs cannot resolve; set a plain value instead"
            )
    return resolved


def _field_value(path: str, pod: PodContext, env_name: str) -> str:
    values = {
        f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']": str(pod.pod_index),
        f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']": str(pod.pod_index),
        "metadata.name": pod.pod_name,
        "metadata.namespace": pod.namespace,
        "spec.nodeName": "localhost",
        "status.podIP": "127.0.0.1",
        "status.hostIP": "127.0.0.1",
    }
    if path not in values:
        raise LocalRunError(f"env {env_name} uses fieldRef {path!r}, which local runs cannot resolve")
    return values[path]
