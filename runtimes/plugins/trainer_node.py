"""What every ML policy does first: the trainer's pod set sized by ``numNodes``, and its ``node``
container carrying the TrainJob's ``spec.trainer.env`` (Trainer's plugins each begin this way)."""

from __future__ import annotations

from typing import Any

from runtimes.api.trainer import NODE, Trainer
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
