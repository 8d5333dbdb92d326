"""KWOK's controller over the API: Stages move a cluster's fake Nodes and their Pods, heartbeats keep Nodes alive.

``KwokStages(client, stages, speedup=..., informer_settings=...)`` watches Nodes and Pods through
any API server (the sandbox runs it in place of KWOK's binary) and plays the same Stage objects,
with the same semantics, that the simulator plays (``lifecycle``):
KWOK manages the Nodes annotated ``kwok.x-k8s.io/node: fake`` and the Pods bound to them. For a
managed object it picks one of the matching Stages (by weight), waits the Stage's delay divided
by ``speedup``, checks the Stage still matches the object as it is then, and applies its
``next``: ``delete`` deletes the object (grace period 0), a ``statusTemplate`` becomes one
``/status`` patch. A change restarts the choice, as a watch event does in KWOK; a Stage still
chosen keeps its deadline.

The Go template is not executed: its fields are rendered as KWOK's own templates render them —
``phase``, conditions (merged by type), ``podIP``/``hostIP``, ``startTime``, container statuses
whose state follows the phase (running, or terminated with exit code 0 when Succeeded and 1
when Failed), a Node's ``addresses``; ``allocatable``/``capacity`` keep what the Node has.

Heartbeats: every ``heartbeat_seconds`` (wall-clock) each managed, Ready Node's Lease in
``kube-node-lease`` is renewed, as a kubelet with leases does; the renewals are spread over the
interval, at most 50 a second (1,000 nodes renew every 20 s, with leases four times as long).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import logging
import random
import time
from collections import deque
from types import TracebackType
from typing import Any

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.conditions import condition_true, rfc3339
from scheduler.controllers.manager import object_key
from scheduler.controllers.runtime import Controller, ReconcileResult
from scheduler.controllers.workqueue import WorkQueue
from scheduler.kube import Informer, InformerSettings, KubeApiError, KubeClient, patch_status
from simulations.kwok.constants import KWOK_NODE_ANNOTATION
from simulations.kwok.stages import Stage

log = logging.getLogger(__name__)

NODE_LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
APPLIED_KEPT = 100_000
HEARTBEAT_WRITES_PER_SECOND = 50.0
# The queue backs off from 50 ms to 2 s, so a server injecting faults slows KWOK down without
# stalling it for a minute; a 409 (a cache behind the server) looks again after CONFLICT_RETRY_SECONDS.
QUEUE_BASE_DELAY = 0.05
QUEUE_MAX_DELAY = 2.0
CONFLICT_RETRY_SECONDS = 0.05


def _ip(seed: str, prefix: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return f"{prefix}.{digest[0]}.{digest[1] % 254 + 1}"


def _container_state(phase: str, now: str) -> tuple[dict[str, Any], bool]:
    if phase == "Succeeded":
        return {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}, False
    if phase == "Failed":
        return {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now}}, False
    return {"running": {"startedAt": now}}, True


def render_status(stage: Stage, obj: dict[str, Any], now: str) -> dict[str, Any]:
    """The status patch a Stage's ``statusTemplate`` gives ``obj`` (see the module docstring)."""
    effect = stage.effect
    current: dict[str, Any] = obj.get("status") or {}
    status: dict[str, Any] = {}
    phase = effect.phase or current.get("phase")
    if effect.phase is not None:
        status["phase"] = effect.phase
    if effect.conditions is not None:
        merged = {c.get("type"): dict(c) for c in current.get("conditions") or []}
        for kind, value in effect.conditions:
            old = merged.get(kind)
            changed = old is None or old.get("status") != value
            condition = {"type": kind, "status": value}
            condition["lastTransitionTime"] = now if changed or old is None else old.get("lastTransitionTime", now)
            if stage.kind == "Node":
                condition["lastHeartbeatTime"] = now
                if kind == "Ready" and value == "True":
                    condition.update(reason="KubeletReady", message="kubelet is posting ready status")
            merged[kind] = condition
        status["conditions"] = list(merged.values())
    metadata = obj.get("metadata") or {}
    node_name = str((obj.get("spec") or {}).get("nodeName") or "")
    fields = list(effect.fields)
    if stage.kind == "Pod" and phase in ("Succeeded", "Failed") and "containerStatuses" not in fields:
        fields.append("containerStatuses")  # a finished pod's containers have terminated, whatever the template says
    for field in fields:
        if field in ("podIP", "hostIP") and not current.get(field):
            if field == "podIP":
                status[field] = _ip(f"{metadata.get('namespace')}/{metadata.get('name')}", "10.244")
            else:
                status[field] = _ip(node_name, "10.0")
        elif field == "startTime" and not current.get(field):
            status[field] = now
        elif field == "containerStatuses":
            state, ready = _container_state(str(phase), now)
            status[field] = [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": ready,
                    "started": ready,
                    "restartCount": 0,
                    "state": state,
                }
                for c in (obj.get("spec") or {}).get("containers") or []
            ]
        elif field == "addresses" and stage.kind == "Node":
            status[field] = [{"type": "InternalIP", "address": _ip(str(metadata.get("name")), "10.0")}]
    return status


class KwokStages:
    """A ``scheduler.controllers`` reconciler of ``Kind:key`` strings, plus the heartbeat task."""

    name = "kwok-stages"

    def __init__(
        self,
        client: KubeClient,
        stages: list[Stage],
        *,
        speedup: float = 1.0,
        seed: int = 0,
        heartbeat_seconds: float | None = 10.0,
        workers: int = 4,
        informer_settings: InformerSettings,
    ) -> None:
        if speedup <= 0:
            raise ValueError(f"speedup must be positive, got {speedup}")
        self.client = client
        self.speedup = speedup
        self.heartbeat_seconds = heartbeat_seconds
        self.rng = random.Random(seed)
        self.stages = {kind: [s for s in stages if s.kind == kind] for kind in ("Node", "Pod")}
        self.cache = ClusterCache()
        self.informers = [Informer(client, kind, self.cache, settings=informer_settings) for kind in ("Node", "Pod")]
        self.workers = workers
        self.controller: Controller[str] = Controller(
            self,
            workers=workers,
            queue=WorkQueue(base_delay=QUEUE_BASE_DELAY, max_delay=QUEUE_MAX_DELAY, name=self.name),
        )
        self.queue = self.controller.queue
        self.pending: dict[str, tuple[Stage, float]] = {}  # key -> chosen stage, loop time due
        # (key, stage name), in order, the latest APPLIED_KEPT: for tests and the demo
        self.applied: deque[tuple[str, str]] = deque(maxlen=APPLIED_KEPT)
        self._started = 0.0
        self._tasks: list[asyncio.Task[None]] = []
        self.cache.on_change("Pod", self._changed("Pod"))
        self.cache.on_change("Node", self._changed("Node"))

    # ------------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._tasks:
            raise RuntimeError("the KWOK stages are already running")
        loop = asyncio.get_running_loop()
        self._started = loop.time()
        for informer in self.informers:
            self._tasks.append(loop.create_task(informer.run(), name=f"kwok-informer-{informer.kind.kind}"))
        self._tasks.append(loop.create_task(self.controller.run(), name="kwok-stages"))
        if self.heartbeat_seconds is not None:
            self._tasks.append(loop.create_task(self._heartbeats(self.heartbeat_seconds), name="kwok-heartbeats"))

    async def synced(self, timeout: float = 30.0) -> None:
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(informer.synced.wait() for informer in self.informers))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        self.queue.shutdown()
        while True:  # repeated: see Standins.stop about 3.11's wait_for swallowing a cancel
            pending = [t for t in tasks if not t.done()]
            if not pending:
                break
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=0.5)

    async def __aenter__(self) -> KwokStages:
        self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # --------------------------------------------------------------------------- events

    def _changed(self, kind: str) -> Any:
        def handler(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            found = new if new is not None else old
            if found is not None:
                self.queue.add(f"{kind}:{object_key(found)}")

        return handler

    def managed(self, kind: str, obj: dict[str, Any]) -> bool:
        """KWOK's ownership: annotated Nodes, and Pods bound to one of them."""
        if kind == "Node":
            return (obj["metadata"].get("annotations") or {}).get(KWOK_NODE_ANNOTATION) == "fake"
        node_name = (obj.get("spec") or {}).get("nodeName")
        if not node_name:
            return False
        node = self.cache.get("Node", str(node_name))
        return node is not None and self.managed("Node", node)

    def virtual_now(self) -> float:
        return (asyncio.get_running_loop().time() - self._started) * self.speedup

    # ------------------------------------------------------------------------ reconcile

    async def reconcile(self, key: str) -> ReconcileResult:
        try:
            return ReconcileResult(requeue_after=await self._reconcile(key))
        except KubeApiError as error:
            if error.status != 409:
                raise
            # a write from a cache that is behind: the newer object's event requeues the key, and
            # a conflict with no newer object (an injected one) is looked at again shortly
            return ReconcileResult(requeue_after=CONFLICT_RETRY_SECONDS)

    def _pick(self, kind: str, obj: dict[str, Any]) -> Stage | None:
        matching = [s for s in self.stages[kind] if s.matches(obj)]
        if not matching:
            return None
        weights = [max(s.weight_of(obj) or 0, 0) for s in matching]
        if sum(weights) == 0:
            return self.rng.choice(matching)
        return self.rng.choices(matching, weights=weights)[0]

    async def _reconcile(self, key: str) -> float | None:
        kind, _, object_id = key.partition(":")
        namespace, slash, name = object_id.partition("/")
        obj = self.cache.get(kind, name, namespace) if slash else self.cache.get(kind, object_id)
        if obj is None or not self.managed(kind, obj):
            self.pending.pop(key, None)
            return None
        now = asyncio.get_running_loop().time()
        chosen = self.pending.get(key)
        if chosen is None or not chosen[0].matches(obj):
            stage = self._pick(kind, obj)
            if stage is None:
                self.pending.pop(key, None)
                return None
            delay = stage.delay_seconds(obj, self.virtual_now(), self.rng) / self.speedup
            chosen = (stage, now + delay)
            self.pending[key] = chosen
        stage, due = chosen
        if due > now:
            return due - now
        del self.pending[key]
        await self._apply(kind, obj, stage)
        return None

    async def _apply(self, kind: str, obj: dict[str, Any], stage: Stage) -> None:
        metadata = obj["metadata"]
        key = f"{kind}:{object_key(obj)}"
        if stage.effect.delete:
            with contextlib.suppress(KubeApiError):  # already gone is what we wanted
                await self.client.delete(kind, metadata["name"], metadata.get("namespace"))
            self.applied.append((key, stage.name))
            return
        status = render_status(stage, obj, rfc3339(time.time()))
        current = obj.get("status") or {}
        if all(current.get(k) == v for k, v in status.items()):
            return  # a stage that changes nothing ends the chain
        try:
            await patch_status(
                self.client,
                kind,
                metadata["name"],
                metadata.get("namespace"),
                status,
                resource_version=str(metadata["resourceVersion"]),
                attempts=1,
            )
        except KubeApiError as error:
            if error.status == 404:
                return  # deleted meanwhile: its DELETED event clears what was pending
            raise  # 409: ``reconcile`` looks again shortly, from the newer object
        self.applied.append((key, stage.name))

    # ------------------------------------------------------------------------ heartbeats

    async def _heartbeats(self, interval: float) -> None:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NODE_LEASE_NAMESPACE}}
        try:
            await self.client.create(namespace)
        except KubeApiError as error:
            if error.status != 409:
                log.warning("KWOK cannot create namespace %s for node leases: %s", NODE_LEASE_NAMESPACE, error)
        loop = asyncio.get_running_loop()
        while True:
            nodes = [n for n in self.cache.list("Node") if self.managed("Node", n) and condition_true(n, "Ready")]
            # one round per interval, spread evenly over it, and never more than
            # HEARTBEAT_WRITES_PER_SECOND: a big sandbox renews less often (its leases last longer)
            round_seconds = max(interval, len(nodes) / HEARTBEAT_WRITES_PER_SECOND)
            duration = max(LEASE_DURATION_SECONDS, int(4 * round_seconds))
            pause = round_seconds / max(len(nodes), 1)
            started = loop.time()
            for index, node in enumerate(nodes):
                try:
                    await self._renew(str(node["metadata"]["name"]), str(node["metadata"].get("uid", "")), duration)
                except KubeApiError as error:
                    log.warning("KWOK heartbeat of node %s failed: %s", node["metadata"]["name"], error)
                await asyncio.sleep(max(0.0, started + (index + 1) * pause - loop.time()))
            await asyncio.sleep(max(0.0, started + round_seconds - loop.time()))

    async def _renew(self, node: str, uid: str, duration: int = LEASE_DURATION_SECONDS) -> None:
        renew = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # MicroTime
        spec = {"holderIdentity": node, "leaseDurationSeconds": duration, "renewTime": renew}
        try:
            await self.client.patch("Lease", node, {"spec": spec}, NODE_LEASE_NAMESPACE)
        except KubeApiError as error:
            if error.status != 404:
                raise
            owner = {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}
            lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": node, "namespace": NODE_LEASE_NAMESPACE, "ownerReferences": [owner]},
                "spec": spec,
            }
            await self.client.create(lease)
