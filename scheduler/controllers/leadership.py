"""Which replica runs the controllers: the election on the controllers' Lease, as both modes wire it.

One replica at a time holds ``coordination.k8s.io/v1`` Lease ``LEADER_LEASE_NAME`` in the Pod's
namespace (``POD_NAMESPACE``, else the service account's, else trainyard-system); the others keep
their informers warm and stand by (``ControllerManager``).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from scheduler.controllers.constants import LEADER_LEASE_NAME
from scheduler.kube import KubeClient, LeaderElector, LeaseSettings

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_LEASE_NAMESPACE = "trainyard-system"


def default_identity() -> str:
    """A replica's name in the Lease: the Pod's name (or the host's) and the process id."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{os.getpid()}"


def default_lease_namespace() -> str:
    """POD_NAMESPACE, else the service account's namespace, else trainyard-system."""
    from_env = os.environ.get("POD_NAMESPACE")
    if from_env:
        return from_env
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or DEFAULT_LEASE_NAMESPACE
    except OSError:
        return DEFAULT_LEASE_NAMESPACE


def leader_elector(
    client: KubeClient,
    *,
    leader_elect: bool,
    lease_namespace: str | None,
    identity: str | None,
    settings: LeaseSettings | None,
) -> LeaderElector | None:
    """The replicas' election on the controllers' Lease (None: no election, the controllers just run)."""
    if not leader_elect:
        return None
    namespace = lease_namespace or default_lease_namespace()
    return LeaderElector(client, LEADER_LEASE_NAME, namespace, identity or default_identity(), settings=settings)
