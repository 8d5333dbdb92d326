"""The torch ML policy: torchrun's ``PET_*`` environment on the trainer's ``node`` container.

torchrun reads ``PET_<FLAG>`` for each of its flags, so with these set a plain ``torchrun
train.py`` joins the right rendezvous: ``PET_NNODES`` nodes of ``PET_NPROC_PER_NODE`` processes,
this pod being node ``PET_NODE_RANK`` (its Job completion index), rendezvous at node 0 of the
``node`` replicated job, addressed by its stable JobSet DNS name.
"""

from __future__ import annotations

import math
from typing import Any

from runtimes.api.jobset import JOB_COMPLETION_INDEX_ANNOTATION
from runtimes.api.trainer import NODE, NUM_PROC_PER_NODE_WORDS, NumProcPerNode, TrainJob
from runtimes.errors import FieldError
from runtimes.k8s.core import ResourceRequirements
from runtimes.k8s.quantity import parse_quantity
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.podspec import find_container, gpu_count, upsert_env, upsert_port
from runtimes.plugins.torchtune import is_torchtune, torchtune_command, validate_torchtune
from runtimes.plugins.trainer_node import node_container_with_env

PET_NNODES = "PET_NNODES"
PET_NPROC_PER_NODE = "PET_NPROC_PER_NODE"
PET_NODE_RANK = "PET_NODE_RANK"
PET_MASTER_ADDR = "PET_MASTER_ADDR"
PET_MASTER_PORT = "PET_MASTER_PORT"
TORCH_RESERVED_ENVS = (PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT)
# The rendezvous port on node 0: Kubeflow Trainer's ContainerTrainerPort, also declared on the container.
TORCH_MASTER_PORT = 29500


def master_address(trainjob_name: str, subdomain: str) -> str:
    """DNS name of pod 0 of Job 0 of the ``node`` replicated job: ``<tj>-node-0-0.<subdomain>``."""
    return f"{trainjob_name}-{NODE}-0-0.{subdomain}"


def _cpu_count(resources: dict[str, Any]) -> int:
    """CPUs of one node, requests before limits (Trainer's getNumCPUPerNode), rounded up; 0 if unset."""
    for part in ("requests", "limits"):
        quantity = (resources.get(part) or {}).get("cpu")
        if quantity is not None and parse_quantity(str(quantity)) != 0:
            return math.ceil(parse_quantity(str(quantity)))
    return 0


def _gpu_count(resources: dict[str, Any]) -> int:
    """Trainer's GetNumGPUPerNode: a "gpu" resource of the requests, else of the limits."""
    return gpu_count(resources.get("requests") or {}) or gpu_count(resources.get("limits") or {})


def node_resources(info: RuntimeInfo, trainjob: TrainJob) -> dict[str, Any]:
    """Resources of one training node as Trainer's torch plugin reads them: the TrainJob's
    ``resourcesPerNode`` if set (it replaces, not merges), else the runtime's ``node`` container."""
    trainer = trainjob.spec.trainer
    if trainer is not None and trainer.resources_per_node is not None:
        return trainer.resources_per_node.to_dict()
    trainer_pod_set = info.trainer_pod_set()
    pod_spec = info.pod_spec(trainer_pod_set.name) if trainer_pod_set is not None else None
    container = find_container(pod_spec, NODE) if pod_spec is not None else None
    resources: dict[str, Any] = (container or {}).get("resources") or {}
    return resources


def resolve_num_proc_per_node(
    value: NumProcPerNode | None, resources: dict[str, Any] | ResourceRequirements | None
) -> str:
    """What ``PET_NPROC_PER_NODE`` becomes (Trainer's torch plugin).

    ``cpu``, and ``auto`` (the default) on a node without GPUs, become the node's CPU count:
    requests before limits, rounded up, at least 1 — so a job with no resources at all gets 1,
    not torchrun's ``auto`` (which would start one process per CPU of whatever machine the pod
    lands on). ``auto`` with GPUs, ``gpu`` and integers are passed through.
    """
    chosen: NumProcPerNode = "auto" if value is None else value
    if isinstance(chosen, int):
        return str(chosen)
    given = resources.to_dict() if isinstance(resources, ResourceRequirements) else (resources or {})
    if chosen == "cpu" or (chosen == "auto" and _gpu_count(given) == 0):
        return str(max(1, _cpu_count(given)))
    return chosen


def pet_env(info: RuntimeInfo, num_nodes: str, num_proc: str, *, master: bool) -> list[dict[str, Any]]:
    """torchrun's PET_* variables; ``master`` adds the rendezvous address and port."""
    env: list[dict[str, Any]] = [
        {"name": PET_NNODES, "value": num_nodes},
        {"name": PET_NPROC_PER_NODE, "value": num_proc},
        {
            "name": PET_NODE_RANK,
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{JOB_COMPLETION_INDEX_ANNOTATION}']"}},
        },
    ]
    if master:
        env.append({"name": PET_MASTER_ADDR, "value": master_address(info.trainjob_name, info.subdomain)})
        env.append({"name": PET_MASTER_PORT, "value": str(TORCH_MASTER_PORT)})
    return env


def validate_env_injection(info: RuntimeInfo, env_injection: dict[str, Any] | None) -> list[FieldError]:
    """Each ``envInjection`` target names a replicated job of the runtime and containers it has."""
    errors: list[FieldError] = []
    for index, target in enumerate((env_injection or {}).get("targets") or []):
        path = f"spec.mlPolicy.torch.envInjection.targets[{index}]"
        job_name = str(target.get("jobName", ""))
        names = [str(name) for name in target.get("containerNames") or []]
        if NODE in names:
            errors.append(
                FieldError(
                    f"{path}.containerNames",
                    "must not include 'node': the trainer container always gets the PET_* variables",
                )
            )
        containers = info.runtime_containers(job_name)
        if containers is None:
            errors.append(
                FieldError(f"{path}.jobName", f"envInjection target podSet {job_name!r} not found in runtime template")
            )
            continue
        known = containers + (info.runtime_containers(job_name, init=True) or [])
        for name in names:
            if name not in known and name != NODE:
                errors.append(
                    FieldError(
                        f"{path}.containerNames",
                        f"envInjection target podSet {job_name!r} container {name!r} not found in runtime "
                        f"template; it has: {', '.join(known) or '(none)'}",
                    )
                )
    return errors


class TorchPlugin:
    name = "torch"

    def validate(self, info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
        trainer = trainjob.spec.trainer
        if info.ml_policy.torch is None:
            return []
        errors = validate_env_injection(info, info.ml_policy.torch.env_injection)
        if trainer is None:
            return errors
        value = trainer.num_proc_per_node
        if isinstance(value, str) and value not in NUM_PROC_PER_NODE_WORDS:
            errors.append(
                FieldError(
                    "spec.trainer.numProcPerNode",
                    f"{value!r} is not accepted: must be an integer >= 1 or one of auto, cpu, gpu",
                )
            )
        if is_torchtune(trainer.command):
            errors.extend(validate_torchtune(info, trainjob))
        else:
            reserved = sorted({env.name for env in trainer.env or [] if env.name in TORCH_RESERVED_ENVS})
            if reserved:
                errors.append(
                    FieldError(
                        "spec.trainer.env",
                        f"must not set the reserved torch variables {', '.join(reserved)}: the torch "
                        "runtime sets them from numNodes, numProcPerNode and the pod's index",
                    )
                )
        return errors

    def enforce_ml_policy(self, info: RuntimeInfo, trainjob: TrainJob) -> None:
        torch_policy = info.ml_policy.torch
        if torch_policy is None:
            return
        trainer = trainjob.spec.trainer
        trainer_pod_set = info.trainer_pod_set()
        if trainer_pod_set is None:
            return
        num_nodes = ""
        elastic = torch_policy.elastic_policy
        if elastic is not None:
            # v2.0/v2.1 elastic torchrun: minNodes pods start, PET_NNODES is the "min:max" range.
            min_nodes, max_nodes = int(elastic.get("minNodes") or 1), int(elastic.get("maxNodes") or 1)
            trainer_pod_set.count = min_nodes
            num_nodes = f"{min_nodes}:{max_nodes}"
        elif trainer is not None and trainer.num_nodes is not None:
            trainer_pod_set.count = trainer.num_nodes
        value = torch_policy.num_proc_per_node
        if trainer is not None and trainer.num_proc_per_node is not None:
            value = trainer.num_proc_per_node
        num_proc = resolve_num_proc_per_node(value, node_resources(info, trainjob))
        info.resolved["numProcPerNode"] = num_proc
        num_nodes = num_nodes or str(trainer_pod_set.count)
        self._inject_env_targets(info, torch_policy.env_injection, num_nodes, num_proc)

        container = node_container_with_env(info, trainer_pod_set.name, trainer)
        if container is None:
            return
        # A TrainJob without spec.trainer still runs torchrun on the runtime's command: it gets
        # the PET_* variables too. torchtune takes its rendezvous on the command line instead of
        # PET_MASTER_*; the JobSet build writes this command in place of the TrainJob's ``tune run``.
        torchtune = trainer is not None and is_torchtune(trainer.command)
        upsert_env(container, pet_env(info, num_nodes, num_proc, master=not torchtune))
        if torchtune:
            rendezvous = f"{master_address(info.trainjob_name, info.subdomain)}:{TORCH_MASTER_PORT}"
            info.resolved["trainerCommand"] = torchtune_command(
                info, trainjob, trainer_pod_set.count, num_proc, rendezvous
            )
        # The port the headless Service publishes for the rendezvous.
        upsert_port(container, TORCH_MASTER_PORT)

    @staticmethod
    def _inject_env_targets(
        info: RuntimeInfo, env_injection: dict[str, Any] | None, num_nodes: str, num_proc: str
    ) -> None:
        """``torch.envInjection.targets``: every PET_* variable, rendezvous included, in the named
        (init or sidecar) containers, e.g. for a preflight check before torchrun starts."""
        for target in (env_injection or {}).get("targets") or []:
            pod_spec = info.pod_spec(str(target.get("jobName", "")))
            if pod_spec is None:
                continue
            for name in target.get("containerNames") or []:
                container = find_container(pod_spec, str(name)) or find_container(pod_spec, str(name), init=True)
                if container is not None:
                    upsert_env(container, pet_env(info, num_nodes, num_proc, master=True))
