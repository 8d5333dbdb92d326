"""The XGBoost ML policy: Rabit/collective workers find the tracker from ``DMLC_*`` variables.

As Kubeflow Trainer's XGBoost plugin: ``numNodes`` pods (the TrainJob's ``trainer.numNodes``
winning); the tracker runs on pod 0 of the ``node`` replicated job (``DMLC_TRACKER_URI``, port
29500); ``DMLC_TASK_ID`` is the pod's Job completion index; ``DMLC_NUM_WORKER`` = nodes × workers
per node, one worker per GPU on GPU nodes (the TrainJob's ``resourcesPerNode``, else the
runtime's ``node`` container), one per node otherwise.
"""

from __future__ import annotations

from runtimes.api.jobset import JOB_COMPLETION_INDEX_ANNOTATION
from runtimes.api.trainer import NODE, TrainJob
from runtimes.errors import FieldError
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.podspec import gpu_count, upsert_env, upsert_port
from runtimes.plugins.torch import TORCH_MASTER_PORT, node_resources
from runtimes.plugins.trainer_node import sized_trainer_with_node_container

DMLC_TRACKER_URI = "DMLC_TRACKER_URI"
DMLC_TRACKER_PORT = "DMLC_TRACKER_PORT"
DMLC_TASK_ID = "DMLC_TASK_ID"
DMLC_NUM_WORKER = "DMLC_NUM_WORKER"
XGBOOST_RESERVED_ENVS = (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER)


class XGBoostPlugin:
    name = "xgboost"

    def validate(self, info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
        trainer = trainjob.spec.trainer
        if info.ml_policy.xgboost is None or trainer is None:
            return []
        return [
            FieldError(
                f"spec.trainer.env[{index}]",
                f"{env.name} is reserved for the XGBoost runtime: it sets the DMLC_* variables from "
                "numNodes and the pod's index; remove it",
            )
            for index, env in enumerate(trainer.env or [])
            if env.name in XGBOOST_RESERVED_ENVS
        ]

    def enforce_ml_policy(self, info: RuntimeInfo, trainjob: TrainJob) -> None:
        if info.ml_policy.xgboost is None:
            return
        found = sized_trainer_with_node_container(info, trainjob)
        if found is None:
            return
        trainer_pod_set, container = found
        resources = node_resources(info, trainjob)
        gpus = gpu_count(resources.get("requests") or {}) or gpu_count(resources.get("limits") or {})
        workers = trainer_pod_set.count * max(1, gpus)
        upsert_env(
            container,
            [
                {"name": DMLC_TRACKER_URI, "value": f"{info.trainjob_name}-{NODE}-0-0.{info.subdomain}"},
                {"name": DMLC_TRACKER_PORT, "value": str(TORCH_MASTER_PORT)},
                {
                    "name": DMLC_TASK_ID,
                    "valueFrom": {
                        "fieldRef": {"fieldPath": f"metadata.annotations['{JOB_COMPLETION_INDEX_ANNOTATION}']"}
                    },
                },
                {"name": DMLC_NUM_WORKER, "value": str(workers)},
            ],
        )
        upsert_port(container, TORCH_MASTER_PORT)
