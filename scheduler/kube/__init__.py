"""The Kubernetes adapter: a thin asyncio layer between the API server and trainyard's pure parts.

``KubeClient`` is the one interface to the API server (dicts in, dicts out, for every kind in
``KINDS``); ``Informer``/``InformerGroup`` mirror kinds into an ``ObjectSink`` (list, watch, list
again on 410); ``writes`` updates objects with resourceVersion and retries; ``LeaderElector``
holds a coordination.k8s.io/v1 Lease. The admission engine never imports this package.
"""

from scheduler.kube.backoff import Backoff
from scheduler.kube.client import KubeClient, ObjectList, WatchEvent, WatchInactive
from scheduler.kube.config import close_api_client, load_api_client, running_in_cluster
from scheduler.kube.errors import KubeApiError, KubeConfigError, KubeError, WatchExpired
from scheduler.kube.group import InformerGroup
from scheduler.kube.informer import Informer, InformerSettings, InformerStats, ObjectSink
from scheduler.kube.kinds import KINDS, KubeKind, kind_named
from scheduler.kube.leader import LeaderElector, LeaseSettings
from scheduler.kube.writes import (
    ConflictRetriesExhausted,
    create_unless_exists,
    patch_status,
    update_status_with_retry,
    update_with_retry,
    with_retries,
)

__all__ = [
    "KINDS",
    "Backoff",
    "ConflictRetriesExhausted",
    "Informer",
    "InformerGroup",
    "InformerSettings",
    "InformerStats",
    "KubeApiError",
    "KubeClient",
    "KubeConfigError",
    "KubeError",
    "KubeKind",
    "LeaderElector",
    "LeaseSettings",
    "ObjectList",
    "ObjectSink",
    "WatchEvent",
    "WatchExpired",
    "WatchInactive",
    "close_api_client",
    "create_unless_exists",
    "kind_named",
    "load_api_client",
    "patch_status",
    "running_in_cluster",
    "update_status_with_retry",
    "update_with_retry",
    "with_retries",
]
