"""A stand-in for kube-controller-manager's service-account controller: a ``default`` ServiceAccount in
every active Namespace, made again when deleted, as a cluster keeps one there for pods that name none.
"""

from __future__ import annotations

from typing import Any

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.runtime import ReconcileResult
from scheduler.kube import KubeApiError, KubeClient

from .keys import Standin, object_key, reconciled

DEFAULT_SERVICE_ACCOUNT = "default"


class ServiceAccountController(Standin):
    """Reconciles Namespace keys: an active namespace without its ``default`` ServiceAccount gets one."""

    name = "serviceaccounts-standin"

    def __init__(self, client: KubeClient, cache: ClusterCache, *, workers: int = 1) -> None:
        super().__init__(client, cache, workers=workers)
        cache.on_change("Namespace", self._namespace_changed)
        cache.on_change("ServiceAccount", self._account_changed)

    def _namespace_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is not None:
            self.queue.add(object_key(new))

    def _account_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None and old is not None and old["metadata"]["name"] == DEFAULT_SERVICE_ACCOUNT:
            self.queue.add(str(old["metadata"].get("namespace")))

    async def reconcile(self, key: str) -> ReconcileResult:
        return await reconciled(self._reconcile(key))

    async def _reconcile(self, namespace: str) -> None:
        found = self.cache.get("Namespace", namespace)
        if found is None or (found.get("status") or {}).get("phase", "Active") != "Active":
            return  # a namespace being deleted gets no new objects (the real controller skips it too)
        if self.cache.get("ServiceAccount", DEFAULT_SERVICE_ACCOUNT, namespace) is not None:
            return
        account = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace},
        }
        try:
            await self.client.create(account)
        except KubeApiError as error:
            if error.status != 409:  # already there: the cache had not seen it yet
                raise
