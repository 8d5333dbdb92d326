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
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.podspec import find_container, upsert_env, upsert_port
from runtimes.plugins.torchtune import is_torchtune, torchtune_command, validate_torchtune

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


def _has_gpu(resources: dict[str, Any]) -> bool:
    return any("gpu" in name.lower() for name in resources)


def _cpu_count(resources: dict[str, Any]) -> int:
    quantity = resources.get("cpu")
    return max(1, math.ceil(quantity.value)) if quantity is not None else 1


def resolve_num_proc_per_node(value: NumProcPerNode | None, resources: ResourceRequirements | None) -> str:
    """What ``PET_NPROC_PER_NODE`` becomes (Trainer's torch plugin).

    Without ``resourcesPerNode`` the value is passed through (``auto`` lets torchrun count GPUs,
    or CPUs when there are none). With it, ``auto`` on a node without GPUs and ``cpu`` become
    the node's CPU count (limits, else requests; at least 1), so a CPU job gets one process per
    CPU it asked for instead of one per CPU of the machine.
    """
    chosen: NumProcPerNode = "auto" if value is None else value
    if resources is None or isinstance(chosen, int):
        return str(chosen)
    given = resources.limits or resources.requests
    if chosen == "auto":
        return "auto" if _has_gpu(given) else str(_cpu_count(given))
    if chosen == "cpu":
        return str(_cpu_count(given))
    return chosen


class TorchPlugin:
    name = "torch"

    def validate(self, info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
        trainer = trainjob.spec.trainer
        if info.ml_policy.torch is None or trainer is None:
            return []
        errors: list[FieldError] = []
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
        if trainer is not None and trainer.num_nodes is not None:
            trainer_pod_set.count = trainer.num_nodes
        value = torch_policy.num_proc_per_node
        if trainer is not None and trainer.num_proc_per_node is not None:
            value = trainer.num_proc_per_node
        num_proc = resolve_num_proc_per_node(value, trainer.resources_per_node if trainer else None)
        info.resolved["numProcPerNode"] = num_proc

        pod_spec = info.pod_spec(trainer_pod_set.name)
        container = find_container(pod_spec, NODE) if pod_spec is not None else None
        if container is None:
            return
        if trainer is not None and trainer.env:
            upsert_env(container, [env.to_dict() for env in trainer.env])
        if trainer is not None and is_torchtune(trainer.command):
            # torchtune takes its distributed settings on the command line, not as PET_ variables;
            # the JobSet build writes this command in place of the TrainJob's ``tune run``.
            rendezvous = f"{master_address(info.trainjob_name, info.subdomain)}:{TORCH_MASTER_PORT}"
            info.resolved["trainerCommand"] = torchtune_command(
                info, trainjob, trainer_pod_set.count, num_proc, rendezvous
            )
        else:
            upsert_env(
                container,
                [
                    {"name": PET_NNODES, "value": str(trainer_pod_set.count)},
                    {"name": PET_NPROC_PER_NODE, "value": num_proc},
                    {
                        "name": PET_NODE_RANK,
                        "valueFrom": {
                            "fieldRef": {"fieldPath": f"metadata.annotations['{JOB_COMPLETION_INDEX_ANNOTATION}']"}
                        },
                    },
                    {"name": PET_MASTER_ADDR, "value": master_address(info.trainjob_name, info.subdomain)},
                    {"name": PET_MASTER_PORT, "value": str(TORCH_MASTER_PORT)},
                ],
            )
        # The port the headless Service publishes for the rendezvous.
        upsert_port(container, TORCH_MASTER_PORT)
