"""The JAX ML policy: ``jax.distributed.initialize()`` finds its peers from ``JAX_*`` variables.

As Kubeflow Trainer's JAX plugin: one JAX process per node pod (``numNodes``, the TrainJob's
``trainer.numNodes`` winning), process ``JAX_PROCESS_ID`` = the pod's Job completion index, the
coordinator on pod 0 of the ``node`` replicated job at its stable JobSet DNS name, over Gloo.
"""

from __future__ import annotations

from runtimes.api.jobset import JOB_COMPLETION_INDEX_ANNOTATION
from runtimes.api.trainer import NODE, TrainJob
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.podspec import upsert_env, upsert_port
from runtimes.plugins.trainer_node import sized_trainer_with_node_container

# The coordinator port (Trainer's JAXContainerPort, the Training Operator's JAXJob default).
JAX_COORDINATOR_PORT = 6666
JAX_DISTRIBUTED_BACKEND = "gloo"
JAX_RESERVED_ENVS = (
    "JAX_NUM_PROCESSES",
    "JAX_PROCESS_ID",
    "JAX_COORDINATOR_ADDRESS",
    "JAX_COORDINATOR_PORT",
    "JAX_DISTRIBUTED_BACKEND",
)


def coordinator_address(info: RuntimeInfo) -> str:
    return f"{info.trainjob_name}-{NODE}-0-0.{info.subdomain}:{JAX_COORDINATOR_PORT}"


class JaxPlugin:
    name = "jax"

    def enforce_ml_policy(self, info: RuntimeInfo, trainjob: TrainJob) -> None:
        if info.ml_policy.jax is None:
            return
        found = sized_trainer_with_node_container(info, trainjob)
        if found is None:
            return
        trainer_pod_set, container = found
        upsert_env(
            container,
            [
                {"name": "JAX_NUM_PROCESSES", "value": str(trainer_pod_set.count)},
                {
                    "name": "JAX_PROCESS_ID",
                    "valueFrom": {
                        "fieldRef": {"fieldPath": f"metadata.annotations['{JOB_COMPLETION_INDEX_ANNOTATION}']"}
                    },
                },
                {"name": "JAX_COORDINATOR_ADDRESS", "value": coordinator_address(info)},
                {"name": "JAX_COORDINATOR_PORT", "value": str(JAX_COORDINATOR_PORT)},
                {"name": "JAX_DISTRIBUTED_BACKEND", "value": JAX_DISTRIBUTED_BACKEND},
            ],
        )
        upsert_port(container, JAX_COORDINATOR_PORT)
