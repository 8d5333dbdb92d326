"""The plain ML policy: no framework environment, just numNodes pods running the trainer's command.

Applies when the runtime names no ML framework (``mlPolicy`` absent or only ``numNodes``).
"""

from __future__ import annotations

from runtimes.api.trainer import NODE, TrainJob
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.podspec import find_container, upsert_env


class PlainMLPlugin:
    name = "plainml"

    def enforce_ml_policy(self, info: RuntimeInfo, trainjob: TrainJob) -> None:
        if info.ml_policy.sources():
            return
        trainer = trainjob.spec.trainer
        trainer_pod_set = info.trainer_pod_set()
        if trainer is None or trainer_pod_set is None:
            return
        if trainer.num_nodes is not None:
            trainer_pod_set.count = trainer.num_nodes
        pod_spec = info.pod_spec(trainer_pod_set.name)
        container = find_container(pod_spec, NODE) if pod_spec is not None else None
        if container is not None and trainer.env:
            upsert_env(container, [env.to_dict() for env in trainer.env])
