"""A minimal kubelet stand-in that moves bound pods through their phases.

KWOK Stages replace it in the sandbox (issue 12): this is the smallest thing that lets a pod
on a node run and finish. A Pending pod bound to a node becomes Running, with Ready=True,
``start_seconds`` after the runner first sees it bound; it then ends ``run_seconds`` later (the
pod's annotation ``trainyard.io/sandbox-run-seconds``, else the runner's default) as Succeeded,
or as Failed when its annotation ``trainyard.io/sandbox-exit-code`` is not 0. A pod whose node
is NotReady fails at once (reason NodeNotReady), as if the node lifecycle controller had
evicted it; one whose node does not exist fails after a second's grace (reason NodeLost).
Each transition is one ``/status`` write; timings are kept in memory.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from runtimes.k8s.core import Node
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.runtime import ReconcileResult
from scheduler.kube import KubeClient, patch_status

from .conditions import now_text
from .keys import Standin, object_key, reconciled, split_key

log = logging.getLogger(__name__)

RUN_SECONDS_ANNOTATION = "trainyard.io/sandbox-run-seconds"
EXIT_CODE_ANNOTATION = "trainyard.io/sandbox-exit-code"
TERMINAL_PHASES = ("Succeeded", "Failed")
NODE_GRACE_SECONDS = 1.0  # how long a pod may name a node the cache does not know before it is lost


def _node_ready(node: dict[str, Any] | None) -> bool:
    return node is not None and Node.model_validate(node).ready


def _annotation_number(pod: dict[str, Any], key: str, default: float) -> float:
    value = (pod["metadata"].get("annotations") or {}).get(key)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        log.warning("pod %s: annotation %s=%r is not a number; using %s", pod["metadata"]["name"], key, value, default)
        return default


def _conditions(ready: bool, now: str) -> list[dict[str, Any]]:
    status = "True" if ready else "False"
    return [
        {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None, "lastTransitionTime": now},
        {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": now},
        {"type": "Ready", "status": status, "lastProbeTime": None, "lastTransitionTime": now},
        {"type": "ContainersReady", "status": status, "lastProbeTime": None, "lastTransitionTime": now},
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now},
    ]


def _container_statuses(pod: dict[str, Any], state: dict[str, Any], ready: bool) -> list[dict[str, Any]]:
    return [
        {
            "name": container.get("name", ""),
            "image": container.get("image", ""),
            "imageID": "",
            "ready": ready,
            "started": ready,
            "restartCount": 0,
            "state": state,
        }
        for container in (pod.get("spec") or {}).get("containers") or []
    ]


class PodRunner(Standin):
    """A ``scheduler.controllers`` reconciler of pod keys; ``queue`` is the one its controller works."""

    name = "pod-runner-standin"

    def __init__(
        self,
        client: KubeClient,
        cache: ClusterCache,
        *,
        start_seconds: float = 0.0,
        run_seconds: float = 1.0,
        workers: int = 4,
    ) -> None:
        super().__init__(client, cache, workers=workers)
        self.start_seconds = start_seconds
        self.run_seconds = run_seconds
        self.bound_at: dict[str, float] = {}
        self.running_at: dict[str, float] = {}
        self.transitions = 0
        cache.on_change("Pod", self._pod_changed)
        cache.on_change("Node", self._node_changed)

    def _pod_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            if old is not None:
                self.bound_at.pop(object_key(old), None)
                self.running_at.pop(object_key(old), None)
            return
        if (new.get("spec") or {}).get("nodeName") and (new.get("status") or {}).get("phase") not in TERMINAL_PHASES:
            self.queue.add(object_key(new))

    def _node_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        was, now = _node_ready(old), _node_ready(new)
        if was and not now:
            name = str((old or new or {})["metadata"]["name"])
            for pod in self.cache.list("Pod"):
                if (pod.get("spec") or {}).get("nodeName") == name:
                    self.queue.add(object_key(pod))

    async def reconcile(self, key: str) -> ReconcileResult:
        return await reconciled(self._reconcile(key))

    async def _reconcile(self, pod_key: str) -> float | None:
        """Move the pod on one step; the seconds until its next step is due, if it waits for one."""
        namespace, name = split_key(pod_key)
        pod = self.cache.get("Pod", name, namespace)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return None
        node_name = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if not node_name or phase in TERMINAL_PHASES:
            return None
        loop_now = asyncio.get_running_loop().time()
        since = self.bound_at.setdefault(pod_key, loop_now)
        node = self.cache.get("Node", str(node_name))
        if node is None and loop_now - since < NODE_GRACE_SECONDS:
            # a node this cache has not seen yet (its informer may be a moment behind the pods')
            return NODE_GRACE_SECONDS
        if not _node_ready(node):
            why = f"node {node_name} is not ready" if node is not None else f"node {node_name} does not exist"
            await self._finish(pod, 137, "NodeNotReady" if node is not None else "NodeLost", why)
            return None
        if phase == "Pending":
            wait = since + self.start_seconds - loop_now
            if wait > 0:
                return wait
            await self._start(pod)
            self.running_at[pod_key] = asyncio.get_running_loop().time()
            return _annotation_number(pod, RUN_SECONDS_ANNOTATION, self.run_seconds)
        started = self.running_at.setdefault(pod_key, loop_now)
        wait = started + _annotation_number(pod, RUN_SECONDS_ANNOTATION, self.run_seconds) - loop_now
        if wait > 0:
            return wait
        code = int(_annotation_number(pod, EXIT_CODE_ANNOTATION, 0))
        await self._finish(pod, code, "Completed" if code == 0 else "Error", None)
        return None

    async def _write(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        metadata = pod["metadata"]
        await patch_status(
            self.client,
            "Pod",
            metadata["name"],
            metadata.get("namespace"),
            status,
            resource_version=str(metadata["resourceVersion"]),
            attempts=1,
        )
        self.transitions += 1

    async def _start(self, pod: dict[str, Any]) -> None:
        now = now_text()
        running = {"running": {"startedAt": now}}
        await self._write(
            pod,
            {
                "phase": "Running",
                "startTime": now,
                "hostIP": "10.0.0.1",
                "podIP": "10.244.0.1",
                "conditions": _conditions(True, now),
                "containerStatuses": _container_statuses(pod, running, True),
            },
        )

    async def _finish(self, pod: dict[str, Any], exit_code: int, reason: str, message: str | None) -> None:
        now = now_text()
        terminated = {"terminated": {"exitCode": exit_code, "reason": reason, "startedAt": now, "finishedAt": now}}
        status: dict[str, Any] = {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "conditions": _conditions(False, now),
            "containerStatuses": _container_statuses(pod, terminated, False),
        }
        if message is not None:
            status["reason"], status["message"] = reason, message
        await self._write(pod, status)
        self.bound_at.pop(object_key(pod), None)
        self.running_at.pop(object_key(pod), None)
