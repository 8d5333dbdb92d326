"""What every ML policy does first: the trainer's pod set sized by ``numNodes``, and its ``node``
container carrying the TrainJob's ``spec.trainer.env`` (Trainer's plugins each begin this way)."""

from __future__ import annotations

from typing import Any

from runtimes.api.trainer import NODE, Trainer, TrainJob
from runtimes.plugins.framework import PodSetInfo, RuntimeInfo
from runtimes.plugins.podspec import find_container, upsert_env


def sized_trainer_pod_set(info: RuntimeInfo, trainer: Trainer | None) -> PodSetInfo | None:
    """The trainer's pod set, its count set from ``spec.trainer.numNodes`` when given."""
    pod_set = info.trainer_pod_set()
    if pod_set is not None and trainer is not None and trainer.num_nodes is not None:
        pod_set.count = trainer.num_nodes
    return pod_set


def node_container_with_env(info: RuntimeInfo, pod_set_name: str, trainer: Trainer | None) -> dict[str, Any] | None:
    """The pod set's ``node`` container with ``spec.trainer.env`` upserted; None if it has none."""
    pod_spec = info.pod_spec(pod_set_name)
    container = find_container(pod_spec, NODE) if pod_spec is not None else None
    if container is not None and trainer is not None and trainer.env:
        upsert_env(container, [env.to_dict() for env in trainer.env])
    return container


def sized_trainer_with_node_container(
    info: RuntimeInfo, trainjob: TrainJob
) -> tuple[PodSetInfo, dict[str, Any]] | None:
    """Both first steps, as the JAX and XGBoost policies take them: the sized trainer pod set and
    its ``node`` container with ``spec.trainer.env``; None when the runtime has either missing."""
    trainer = trainjob.spec.trainer
    pod_set = sized_trainer_pod_set(info, trainer)
    if pod_set is None:
        return None
    container = node_container_with_env(info, pod_set.name, trainer)
    if container is None:
        return None
    return pod_set, container
