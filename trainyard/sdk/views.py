"""SDK views of cluster objects: a ClusterTrainingRuntime as ``Runtime``, a TrainJob and its pods
as ``TrainJob`` with steps (kubeflow SDK's shapes and status rules)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from runtimes.api.trainer import (
    ANCESTOR_DATASET_INITIALIZER,
    ANCESTOR_LABEL,
    ANCESTOR_MODEL_INITIALIZER,
    ANCESTOR_TRAINER,
    FRAMEWORK_LABEL,
)
from runtimes.sdk.types import Runtime, RuntimeTrainer, Step, TrainJob

REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
INITIALIZER_STEPS = (ANCESTOR_DATASET_INITIALIZER, ANCESTOR_MODEL_INITIALIZER)
LAUNCHER_JOB = "launcher"
GPU_RESOURCE = "nvidia.com/gpu"


def _labels(document: dict[str, Any]) -> dict[str, str]:
    return dict((document.get("metadata") or {}).get("labels") or {})


def parse_time(value: Any) -> datetime | None:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None


def _trainer_container(runtime_spec: dict[str, Any]) -> dict[str, Any] | None:
    """The runtime's ``node`` container of the replicated job the trainer overrides."""
    jobs = (((runtime_spec.get("template") or {}).get("spec") or {}).get("replicatedJobs")) or []
    for job in jobs:
        template = job.get("template") or {}
        if ((template.get("metadata") or {}).get("labels") or {}).get(ANCESTOR_LABEL) != ANCESTOR_TRAINER:
            continue
        pod = ((template.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in pod.get("containers") or []:
            if container.get("name") == "node":
                return dict(container)
    return None


def runtime_view(document: dict[str, Any]) -> Runtime:
    spec = document.get("spec") or {}
    framework = _labels(document).get(FRAMEWORK_LABEL, "unknown")
    policy = spec.get("mlPolicy") or {}
    container = _trainer_container(spec) or {}
    return Runtime(
        name=str(document["metadata"]["name"]),
        trainer=RuntimeTrainer(
            trainer_type="BuiltinTrainer" if framework == "torchtune" else "CustomTrainer",
            framework=framework,
            num_nodes=int(policy.get("numNodes") or 1),
            image=container.get("image"),
            command=tuple(container.get("command") or ()),
        ),
    )


def _device(pod: dict[str, Any]) -> tuple[str, str]:
    """("gpu", count) when the pod's first container asks for GPUs, else ("cpu", its CPU request)."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    resources = containers[0].get("resources") or {}
    amounts = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
    if GPU_RESOURCE in amounts:
        return "gpu", str(amounts[GPU_RESOURCE])
    return "cpu", str(amounts.get("cpu", "1"))


def _index(pod: dict[str, Any], label: str) -> int:
    metadata = pod.get("metadata") or {}
    value = (metadata.get("labels") or {}).get(label) or (metadata.get("annotations") or {}).get(label) or 0
    try:
        return int(value)
    except ValueError:
        return 0


def steps_of(pods: list[dict[str, Any]]) -> list[Step]:
    """Initializer steps by their replicated job, training nodes as ``node-<rank>`` (an MPI
    launcher is ``node-0`` and the node pods follow it), ordered as kubeflow's SDK lists them."""
    by_job: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        by_job.setdefault(_labels(pod).get(REPLICATED_JOB_LABEL, ""), []).append(pod)
    steps: list[tuple[int, int, Step]] = []

    def step(name: str, pod: dict[str, Any]) -> Step:
        device, count = _device(pod)
        phase = (pod.get("status") or {}).get("phase")
        return Step(name=name, status=phase, pod_name=str(pod["metadata"]["name"]), device=device, device_count=count)

    for order, job in enumerate(INITIALIZER_STEPS):
        for pod in by_job.pop(job, []):
            steps.append((order, 0, step(job, pod)))
    offset = 0
    for pod in by_job.pop(LAUNCHER_JOB, []):
        steps.append((2, 0, step("node-0", pod)))
        offset = 1
    for job, job_pods in sorted(by_job.items()):
        per_job = max(_index(p, COMPLETION_INDEX) for p in job_pods) + 1
        for pod in job_pods:
            rank = _index(pod, JOB_INDEX_LABEL) * per_job + _index(pod, COMPLETION_INDEX) + offset
            name = f"node-{rank}" if job == "node" else f"{job}-{rank}"
            steps.append((3 if job == "node" else 4, rank, step(name, pod)))
    return [s for _, _, s in sorted(steps, key=lambda entry: (entry[0], entry[1], entry[2].name))]


def _condition(document: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (document.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def job_view(document: dict[str, Any], runtimes: dict[str, Runtime], pods: list[dict[str, Any]]) -> TrainJob:
    """Status as kubeflow's SDK derives it: Complete or Failed from the TrainJob's conditions;
    Running once every training node's pod runs (or has succeeded); Created before that (a job
    waiting in its queue is suspended: the Suspended condition's message says so)."""
    name = str(document["metadata"]["name"])
    spec = document.get("spec") or {}
    runtime_name = str((spec.get("runtimeRef") or {}).get("name", ""))
    runtime = runtimes.get(runtime_name) or Runtime(runtime_name, RuntimeTrainer("CustomTrainer", "unknown"))
    num_nodes = int((spec.get("trainer") or {}).get("numNodes") or runtime.trainer.num_nodes)
    steps = steps_of(pods)
    nodes = [s for s in steps if s.name.startswith("node-")]
    status, message = "Created", None
    if (done := _condition(document, "Complete")) is not None:
        status, message = "Complete", done.get("message")
    elif (failed := _condition(document, "Failed")) is not None:
        status, message = "Failed", failed.get("message")
    elif nodes and all(s.status in ("Running", "Succeeded") for s in nodes):
        status = "Running"
    elif (suspended := _condition(document, "Suspended")) is not None:
        message = suspended.get("message")
    return TrainJob(
        name=name,
        runtime=runtime,
        steps=steps,
        num_nodes=num_nodes,
        status=status,
        creation_timestamp=parse_time((document.get("metadata") or {}).get("creationTimestamp")),
        message=message,
        trainer_status=(document.get("status") or {}).get("trainerStatus"),
    )
