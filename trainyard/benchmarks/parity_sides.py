"""The two sides of `bench parity`: real Kueue on a real cluster, and trainyard's engine.

Both are driven in the same steps: at each step the workloads due to finish are finished, the
step's new Workloads are created in order, and the side runs until it is quiet; what it decided
meanwhile (an admission with its ClusterQueue and flavors, a preemption) is recorded against
that step. ``KueueSide`` creates the Workloads on kube-apiserver (one step per wall-clock second,
so creation timestamps, which Kueue orders by and which have one-second resolution, never tie
across steps), marks finished ones ``Finished`` as Kueue's own performance runner does, and reads
Kueue's decisions from a watch; a phase of a step ends once no Workload changed for
``QUIET_SECONDS`` and every preemptor an eviction named is admitted (with less, on a loaded
machine, Kueue's admissions after a finish or a preemption were seen a step late).
``EngineSide`` gives trainyard's engine the very same Workloads, with the creation timestamps the
API server gave them.

A step has two phases, as ``EngineSide.run_step`` has: the finishes, and Kueue's answer to them,
then the arrivals and Kueue's answer to those. Tried and not kept: holding Kueue's watch streams
in a proxy while a phase is written, so that it sees each phase in one burst: it agreed with the
engine less (80-84% of 1,500 decisions), not more (94.8% without).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.kueue import Workload
from scheduler.engine import AdmissionEngine, EngineConfig

QUIET_SECONDS = 4.0  # no Workload changed for this long: Kueue is done with the step
# ...unless a preemptor named by an eviction is not admitted yet: Kueue admits it once the
# victims' reservations are given back, and on a loaded machine that chain can take seconds.
PREEMPTOR_WAIT_SECONDS = 60.0
_PREEMPTOR_UID = re.compile(r"\(UID: ([^,)]+)")


@dataclass
class Decision:
    step: int
    kind: str  # "admitted" | "preempted"
    cluster_queue: str = ""
    flavors: tuple[tuple[str, str], ...] = ()
    reason: str = ""


@dataclass
class SideRecord:
    decisions: dict[str, list[Decision]] = field(default_factory=dict)
    admission_order: list[str] = field(default_factory=list)
    admitted_step: dict[str, int] = field(default_factory=dict)  # key -> the step of its current admission
    waiting: dict[str, str] = field(default_factory=dict)  # key -> why it waits, in the side's words (latest)

    def add(self, key: str, decision: Decision) -> None:
        self.decisions.setdefault(key, []).append(decision)
        if decision.kind == "admitted":
            self.admission_order.append(key)
            self.admitted_step[key] = decision.step
        else:
            self.admitted_step.pop(key, None)


def _flavors(admission: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    found: dict[str, str] = {}
    for pod_set in admission.get("podSetAssignments") or ():
        found.update({str(k): str(v) for k, v in (pod_set.get("flavors") or {}).items()})
    return tuple(sorted(found.items()))


def _condition(workload: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (workload.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


async def release_reservation(client: Any, obj: dict[str, Any], message: str) -> None:
    """What a job integration does once an evicted job has stopped, as Kueue's own performance
    runner does for bare Workloads: the reservation is given back (admission unset,
    QuotaReserved and Admitted false); until then Kueue keeps counting its quota."""
    from scheduler.kube import KubeApiError, patch_status

    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conditions = []
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("QuotaReserved", "Admitted") and condition.get("status") == "True":
            reason = "Pending" if condition["type"] == "QuotaReserved" else "NoReservation"
            condition = {
                **condition,
                "status": "False",
                "reason": reason,
                "lastTransitionTime": stamp,
                "message": message,
            }
        conditions.append(condition)
    metadata = obj["metadata"]
    # a conflict: changed meanwhile, and the watch brings the newer copy, so this runs again
    with contextlib.suppress(KubeApiError):
        await patch_status(
            client,
            "Workload",
            metadata["name"],
            metadata["namespace"],
            {"admission": None, "conditions": conditions},
            resource_version=str(metadata["resourceVersion"]),
        )


def bare_workload(document: dict[str, Any]) -> dict[str, Any]:
    """A Workload as a client creates it: no status, and none of the server's metadata."""
    keep = ("name", "namespace", "labels", "annotations")
    metadata = {k: v for k, v in document["metadata"].items() if k in keep}
    return {"apiVersion": document["apiVersion"], "kind": "Workload", "metadata": metadata, "spec": document["spec"]}


def _given(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((dict(c) for c in status.get("conditions") or () if c.get("type") == kind), {})


def _complete_condition(kind: str) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"type": kind, "status": "True", "reason": kind, "message": "given admitted", "lastTransitionTime": stamp}


async def clear_kueue_objects(kubeconfig: Any) -> None:
    """Every Workload and queue object deleted, and gone (finalizers Kueue holds are waited for,
    then cleared), so the next input meets a Kueue that holds nothing."""
    from scheduler.kube import KubeApiError, KubeClient, load_api_client

    api = await load_api_client(kubeconfig)
    client = KubeClient(api)
    try:
        for kind in ("Workload", "LocalQueue", "ClusterQueue", "Cohort", "ResourceFlavor", "WorkloadPriorityClass"):
            for attempt in range(100):
                listed = (await client.list(kind)).items
                if not listed:
                    break
                for obj in listed:
                    metadata = obj["metadata"]
                    with contextlib.suppress(KubeApiError):
                        if attempt >= 20 and metadata.get("finalizers"):  # 2 s on: Kueue let go of it
                            await client.patch(
                                kind, metadata["name"], {"metadata": {"finalizers": None}}, metadata.get("namespace")
                            )
                        elif not metadata.get("deletionTimestamp"):
                            await client.delete(kind, metadata["name"], metadata.get("namespace"))
                await asyncio.sleep(0.1)
            else:
                raise SystemExit(f"bench parity: the {kind} objects of the last input would not go")
    finally:
        await api.close()


class KueueSide:
    """Real Kueue: Workloads created over the API, decisions read from a watch."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.record = SideRecord()
        self.step = 0
        self._last_change = time.monotonic()
        self._admitted: dict[str, bool] = {}
        self._evicted: dict[str, bool] = {}
        self._keys_by_uid: dict[str, str] = {}
        self._preemptors: set[str] = set()  # named by an eviction, not admitted since
        self.created: dict[str, str] = {}  # key -> creationTimestamp the server gave
        self._tasks: set[asyncio.Task[None]] = set()

    async def watch(self, namespace: str | None = None) -> None:
        from scheduler.kube import KubeApiError

        while True:
            try:
                listed = await self.client.list("Workload", namespace)
                for obj in listed.items:
                    self._observe(obj)
                async for event in self.client.watch(
                    "Workload", namespace, resource_version=listed.resource_version, timeout_seconds=600
                ):
                    if event.type in ("ADDED", "MODIFIED"):
                        self._observe(event.object)
            except (KubeApiError, OSError, TimeoutError):
                await asyncio.sleep(0.2)

    def _observe(self, obj: dict[str, Any]) -> None:
        metadata = obj["metadata"]
        key = f"{metadata['namespace']}/{metadata['name']}"
        self._keys_by_uid[str(metadata.get("uid"))] = key
        admission = (obj.get("status") or {}).get("admission")
        admitted = bool(admission) and _condition(obj, "QuotaReserved") is not None
        for condition in (obj.get("status") or {}).get("conditions") or ():
            if condition.get("type") == "QuotaReserved" and condition.get("status") == "False":
                self.record.waiting[key] = str(condition.get("message", ""))
        evicted = _condition(obj, "Evicted")
        if admitted and not self._admitted.get(key) and admission is not None:
            self.record.add(key, Decision(self.step, "admitted", str(admission["clusterQueue"]), _flavors(admission)))
            self._preemptors.discard(key)
            self._last_change = time.monotonic()
        if evicted is not None and not self._evicted.get(key) and evicted.get("reason") == "Preempted":
            message = str(evicted.get("message", ""))
            self.record.add(key, Decision(self.step, "preempted", reason=message))
            self._await_preemptor(message)
            self._last_change = time.monotonic()
        self._admitted[key] = admitted
        self._evicted[key] = evicted is not None
        if evicted is not None and admission:
            task = asyncio.get_running_loop().create_task(self._finish_eviction(obj))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _await_preemptor(self, message: str) -> None:
        named = _PREEMPTOR_UID.search(message)
        preemptor = self._keys_by_uid.get(named.group(1)) if named else None
        if preemptor is not None and not self._admitted.get(preemptor):
            self._preemptors.add(preemptor)

    async def _finish_eviction(self, obj: dict[str, Any]) -> None:
        await release_reservation(self.client, obj, "Evicted by the parity runner")

    async def seed(self, documents: list[dict[str, Any]]) -> None:
        """Workloads given admitted: created, then their admission written as the scheduler would
        (QuotaReserved and Admitted), before step 0; Kueue's cache counts their quota from then."""
        from scheduler.kube import patch_status

        self.step = -1
        for document in documents:
            status = document.get("status") or {}
            answer = await self.client.create(bare_workload(document))
            metadata = answer["metadata"]
            self.created[f"{metadata['namespace']}/{metadata['name']}"] = str(metadata["creationTimestamp"])
            reserved = {**_complete_condition("QuotaReserved"), **_given(status, "QuotaReserved")}
            conditions = [reserved, _complete_condition("Admitted")]
            await patch_status(
                self.client,
                "Workload",
                metadata["name"],
                metadata["namespace"],
                {"admission": status["admission"], "conditions": conditions},
            )
        self._last_change = time.monotonic()
        while documents and time.monotonic() - self._last_change < QUIET_SECONDS:
            await asyncio.sleep(0.05)

    async def run_step(self, step: int, finishing: list[str], creating: list[dict[str, Any]]) -> None:
        """The step's finishes, Kueue's answer to them, then its arrivals: as ``EngineSide.run_step``."""
        self.step = step
        if finishing:
            await self._finish(finishing)
            await self._quiet()
        await asyncio.sleep(1.0 - time.time() % 1.0)  # a fresh second: creation times never tie across steps
        for document in creating:
            answer = await self.client.create(document)
            metadata = answer["metadata"]
            self.created[f"{metadata['namespace']}/{metadata['name']}"] = str(metadata["creationTimestamp"])
        await self._quiet()

    async def _finish(self, finishing: list[str]) -> None:
        from scheduler.kube import patch_status

        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for key in finishing:
            namespace, name = key.split("/", 1)
            condition = {
                "type": "Finished",
                "status": "True",
                "reason": "Succeeded",
                "message": "finished by the parity benchmark",
                "lastTransitionTime": stamp,
            }
            await patch_status(self.client, "Workload", name, namespace, {"conditions": [condition]})
            self._admitted[key] = False

    async def _quiet(self) -> None:
        """Until nothing changed for ``QUIET_SECONDS`` and every preemptor is admitted (or a minute
        went by: one that no longer fits once its victims are gone stays pending)."""
        started = self._last_change = time.monotonic()
        while True:
            now = time.monotonic()
            if now - self._last_change >= QUIET_SECONDS and (
                not self._preemptors or now - started >= PREEMPTOR_WAIT_SECONDS
            ):
                self._preemptors.clear()
                return
            await asyncio.sleep(0.05)


class EngineSide:
    """trainyard's engine, given the same Workloads with the server's creation timestamps."""

    def __init__(
        self, objects: list[Any], fair_sharing: bool, namespaces: dict[str, dict[str, str]] | None = None
    ) -> None:
        self.engine = AdmissionEngine(EngineConfig(fair_sharing=fair_sharing))
        for name, labels in (namespaces or {}).items():
            self.engine.set_namespace(name, labels)
        for obj in objects:
            self.engine.apply(obj)
        self.record = SideRecord()

    def active(self, cluster_queue: str) -> bool:
        info = self.engine.cluster_queue(cluster_queue)
        return info is not None and info.active

    def seed(self, workloads: list[Workload]) -> None:
        """Workloads given admitted hold their quota from before step 0 (recorded at step -1)."""
        for workload in workloads:
            self.engine.submit(workload, 0.0)
            key = f"{workload.metadata.namespace}/{workload.metadata.name}"
            admission = workload.to_dict()["status"]["admission"]
            self.record.add(key, Decision(-1, "admitted", str(admission["clusterQueue"]), _flavors(admission)))

    def run_step(self, step: int, now: float, finishing: list[str], creating: list[Workload]) -> None:
        """Finish, then the step's arrivals together, then cycles until quiet: Kueue's queues take
        a step's Workloads (created within a few milliseconds) before its next cycle, and order
        them by priority and then creation time, which one second's resolution makes equal."""
        for key in finishing:
            self.engine.finish(key, now)
            self.record.admitted_step.pop(key, None)
        self._settle(step, now)
        for workload in creating:
            self.engine.submit(workload, now)
        self._settle(step, now)

    def _settle(self, step: int, now: float) -> None:
        for _ in range(1000):  # cycles until one decides nothing: the engine is quiet
            result = self.engine.schedule(now)
            for admitted in result.admitted:
                flavors = tuple(sorted((str(r), str(f)) for r, f in admitted.flavors.items()))
                self.record.add(admitted.key, Decision(step, "admitted", admitted.cluster_queue, flavors))
            for preempted in result.preempted:
                self.record.add(preempted.key, Decision(step, "preempted", reason=preempted.reason))
            self.record.waiting.update(result.pending)
            if not result.admitted and not result.preempted:
                return
