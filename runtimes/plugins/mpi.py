"""The MPI ML policy (OpenMPI): SSH keys, a hostfile, and the launcher's OpenMPI environment.

The ``launcher`` replicated job runs ``mpirun``; it reaches the ``node`` pods over SSH with a
key pair from a generated Secret (mounted in every ``node`` container), and finds them in a
hostfile ConfigMap listing every node pod's DNS name with its slot count. With
``runLauncherAsNode`` the launcher is one of the nodes: the ``node`` job runs one pod fewer and
the launcher is listed in the hostfile too.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from runtimes.api.trainer import LAUNCHER, NODE, MPIMLPolicySource, TrainJob
from runtimes.errors import FieldError, RenderError
from runtimes.k8s.core import ResourceRequirements
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.owner import rendered_metadata
from runtimes.plugins.podspec import find_container, gpu_count, upsert_env, upsert_volume_mounts, upsert_volumes

SSH_AUTH_SECRET_SUFFIX = "-mpi-ssh-auth"
HOSTFILE_CONFIG_MAP_SUFFIX = "-mpi-hostfile"
SSH_AUTH_VOLUME = "mpi-ssh-auth"
HOSTFILE_VOLUME = "mpi-hostfile"
HOSTFILE_DIR = "/etc/mpi"
HOSTFILE_NAME = "hostfile"
SSH_PRIVATE_KEY = "ssh-privatekey"  # corev1.SSHAuthPrivateKey
SSH_PUBLIC_KEY = "ssh-publickey"
OPENMPI = "OpenMPI"
OMPI_HOSTFILE = "OMPI_MCA_orte_default_hostfile"
OMPI_KEEP_FQDN = "OMPI_MCA_orte_keep_fqdn_hostnames"
OMPI_DEFAULT_SLOTS = "OMPI_MCA_orte_set_default_slots"
OMPI_RSH_ARGS = "OMPI_MCA_plm_rsh_args"
OMPI_RESERVED_ENVS = (OMPI_HOSTFILE, OMPI_RSH_ARGS, OMPI_KEEP_FQDN, OMPI_DEFAULT_SLOTS)


@dataclass(frozen=True)
class SSHKeyPair:
    private_pem: bytes
    public_openssh: bytes


def generate_ssh_key_pair() -> SSHKeyPair:
    """An ECDSA P-521 key, as Trainer generates: PEM "EC PRIVATE KEY" and an authorized_keys line."""
    private_key = ec.generate_private_key(ec.SECP521R1())
    private_pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = private_key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return SSHKeyPair(private_pem=private_pem, public_openssh=public + b"\n")


class MPIPlugin:
    name = "mpi"

    def __init__(self, key_factory: Callable[[], SSHKeyPair] = generate_ssh_key_pair) -> None:
        self._key_factory = key_factory

    def validate(self, info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
        mpi = info.ml_policy.mpi
        trainer = trainjob.spec.trainer
        if mpi is None or trainer is None:
            return []
        errors: list[FieldError] = []
        num_nodes = 1 if trainer.num_nodes is None else trainer.num_nodes
        if (
            num_nodes >= 2
            and mpi.run_launcher_as_node
            and (info.pod_set(LAUNCHER) is None or info.pod_set(NODE) is None)
        ):
            errors.append(
                FieldError(
                    "spec.trainer.numNodes",
                    f"{num_nodes} is not accepted: must be 1 when the MPI runtime runs the launcher as a "
                    "node (runLauncherAsNode) but lacks a launcher or a node replicated job",
                )
            )
        if isinstance(trainer.num_proc_per_node, str):
            errors.append(
                FieldError(
                    "spec.trainer.numProcPerNode",
                    f"{trainer.num_proc_per_node!r} is not accepted: MPI runtimes take an integer >= 1",
                )
            )
        reserved = sorted({env.name for env in trainer.env or [] if env.name in OMPI_RESERVED_ENVS})
        if reserved:
            errors.append(
                FieldError(
                    "spec.trainer.env",
                    f"must not set the reserved OpenMPI variables {', '.join(reserved)}: the MPI runtime sets them",
                )
            )
        return errors

    def enforce_ml_policy(self, info: RuntimeInfo, trainjob: TrainJob) -> None:
        mpi = info.ml_policy.mpi
        if mpi is None:
            return
        if mpi.effective_mpi_implementation != OPENMPI:
            raise RenderError(
                f"TrainJob {info.trainjob_name}",
                [
                    FieldError(
                        "runtime spec.mlPolicy.mpi.mpiImplementation",
                        f"{mpi.mpi_implementation!r} is not supported: only OpenMPI is",
                    )
                ],
            )
        trainer = trainjob.spec.trainer
        num_nodes = info.ml_policy.num_nodes or 1
        if trainer is not None and trainer.num_nodes is not None:
            num_nodes = trainer.num_nodes
        node = info.pod_set(NODE)
        if node is not None:
            # With runLauncherAsNode the launcher is one of the nodes.
            node.count = max(num_nodes - 1, 1) if mpi.run_launcher_as_node else num_nodes
        slots = self._slots_per_node(info, trainjob, mpi)
        info.resolved["mpiSlots"] = slots
        _mount_ssh_auth_and_hostfile(info, mpi, slots)

    def _slots_per_node(self, info: RuntimeInfo, trainjob: TrainJob, mpi: MPIMLPolicySource) -> int:
        """The hostfile's slots per node: the TrainJob's numProcPerNode, else the runtime's, else one per GPU."""
        trainer = trainjob.spec.trainer
        slots = mpi.effective_num_proc_per_node
        if trainer is not None and isinstance(trainer.num_proc_per_node, int):
            slots = trainer.num_proc_per_node
        elif slots == 1:
            # One process per GPU when the runtime leaves the default of 1.
            resources = self._node_resources(info, trainjob)
            gpus = gpu_count(resources)
            slots = gpus if gpus > 1 else 1
        return slots

    @staticmethod
    def _node_resources(info: RuntimeInfo, trainjob: TrainJob) -> dict[str, Any]:
        trainer = trainjob.spec.trainer
        if trainer is not None and trainer.resources_per_node is not None:
            given = trainer.resources_per_node
            return dict(given.limits or given.requests)
        for pod_set in info.node_pod_sets():
            pod_spec = info.pod_spec(pod_set.name)
            container = find_container(pod_spec, NODE) if pod_spec is not None else None
            if container is not None and container.get("resources"):
                resources = ResourceRequirements.model_validate(container["resources"])
                return dict(resources.limits or resources.requests)
        return {}

    def build(self, info: RuntimeInfo, trainjob: TrainJob) -> list[dict[str, Any]]:
        mpi = info.ml_policy.mpi
        if mpi is None:
            return []
        metadata_base = rendered_metadata(trainjob, info.namespace)
        objects: list[dict[str, Any]] = []
        if info.key_material:
            objects.append(self._ssh_auth_secret(info, metadata_base))
        slots = int(info.resolved.get("mpiSlots", mpi.effective_num_proc_per_node))
        lines: list[str] = []
        for pod_set in info.pod_sets:
            if pod_set.name == NODE or (mpi.run_launcher_as_node and pod_set.name == LAUNCHER):
                lines.extend(f"{endpoint} slots={slots}\n" for endpoint in info.endpoints(pod_set))
        config_map = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{info.trainjob_name}{HOSTFILE_CONFIG_MAP_SUFFIX}", **metadata_base},
            "data": {HOSTFILE_NAME: "".join(lines)},
        }
        return [*objects, config_map]

    def _ssh_auth_secret(self, info: RuntimeInfo, metadata_base: dict[str, Any]) -> dict[str, Any]:
        keys = self._key_factory()
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{info.trainjob_name}{SSH_AUTH_SECRET_SUFFIX}", **metadata_base},
            "type": "kubernetes.io/ssh-auth",
            "immutable": True,
            "data": {
                SSH_PRIVATE_KEY: base64.b64encode(keys.private_pem).decode(),
                SSH_PUBLIC_KEY: base64.b64encode(keys.public_openssh).decode(),
            },
        }


def _mount_ssh_auth_and_hostfile(info: RuntimeInfo, mpi: MPIMLPolicySource, slots: int) -> None:
    """The SSH key Secret on the node and launcher pods; the hostfile and mpirun's environment on the launcher."""
    secret_volume = {
        "name": SSH_AUTH_VOLUME,
        "secret": {
            "secretName": f"{info.trainjob_name}{SSH_AUTH_SECRET_SUFFIX}",
            "defaultMode": 0o640,
            "items": [
                {"key": SSH_PRIVATE_KEY, "path": "id_rsa"},
                {"key": SSH_PUBLIC_KEY, "path": "id_rsa.pub"},
                {"key": SSH_PUBLIC_KEY, "path": "authorized_keys"},
            ],
        },
    }
    hostfile_volume = {
        "name": HOSTFILE_VOLUME,
        "configMap": {
            "name": f"{info.trainjob_name}{HOSTFILE_CONFIG_MAP_SUFFIX}",
            "items": [{"key": HOSTFILE_NAME, "path": HOSTFILE_NAME, "mode": 0o444}],
        },
    }
    for job_name in (NODE, LAUNCHER):
        pod_spec = info.pod_spec(job_name)
        if pod_spec is None:
            continue
        upsert_volumes(pod_spec, [secret_volume, hostfile_volume] if job_name == LAUNCHER else [secret_volume])
        container = find_container(pod_spec, NODE)
        if container is None:
            continue
        upsert_volume_mounts(container, [{"name": SSH_AUTH_VOLUME, "mountPath": mpi.effective_ssh_auth_mount_path}])
        if job_name == LAUNCHER:
            upsert_volume_mounts(container, [{"name": HOSTFILE_VOLUME, "mountPath": HOSTFILE_DIR}])
            upsert_env(
                container,
                [
                    {"name": OMPI_HOSTFILE, "value": f"{HOSTFILE_DIR}/{HOSTFILE_NAME}"},
                    {"name": OMPI_KEEP_FQDN, "value": "true"},
                    {"name": OMPI_DEFAULT_SLOTS, "value": str(slots)},
                    {"name": OMPI_RSH_ARGS, "value": "-o ConnectionAttempts=10"},
                ],
            )
