"""A stand-in for the Job controller (batch/v1), no more than trainyard needs.

An Indexed Job runs one pod per completion index, at most ``parallelism`` at a time, named
``<job>-<index>-<random5>`` (generateName), with the label and annotation
``batch.kubernetes.io/job-completion-index``, hostname ``<job>-<index>``, the template's labels,
annotations, subdomain and scheduling gates, and the Job as controller owner. A NonIndexed Job
runs ``completions`` pods named ``<job>-<random5>``. A failed pod is replaced until more pods have
failed than ``backoffLimit``; then the Job fails (``FailureTarget`` and ``Failed``, reason
BackoffLimitExceeded) and its running pods are deleted. When every index succeeded the Job
completes (``SuccessCriteriaMet`` and ``Complete``, reason CompletionsReached). A suspended Job
deletes its active pods (``Suspended``: JobSuspended / JobResumed). Status counts active, ready,
succeeded, failed, and ``completedIndexes`` as the real controller writes them.

Pods it created but has not seen in its cache yet are remembered ("expectations", as the real
controller keeps them), so a reconcile on a stale cache does not create a second pod for an index.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from dataclasses import dataclass
from typing import Any

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.runtime import ReconcileResult
from scheduler.kube import KubeApiError, KubeClient, patch_status

from .conditions import is_true, now_text, set_condition
from .keys import BATCH_SECONDS, BatchingStandin, controller_uid, object_key, reconciled, split_key

log = logging.getLogger(__name__)


COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
TERMINAL_PHASES = ("Succeeded", "Failed")
# how long a pod this controller created or deleted may stay unseen before it stops waiting for it
EXPECTATION_TIMEOUT = 5.0
BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase", "Pending"))


def _index(pod: dict[str, Any]) -> int | None:
    value = (pod["metadata"].get("annotations") or {}).get(COMPLETION_INDEX) or (
        pod["metadata"].get("labels") or {}
    ).get(COMPLETION_INDEX)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def compress_indexes(indexes: set[int]) -> str:
    """``completedIndexes`` as the Job controller writes it: ``0-3,5``."""
    ranges: list[list[int]] = []
    for index in sorted(indexes):
        if ranges and ranges[-1][1] == index - 1:
            ranges[-1][1] = index
        else:
            ranges.append([index, index])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


@dataclass
class PodCounts:
    """A Job's pods as the Job controller counts them."""

    live: list[dict[str, Any]]  # neither terminal nor terminating
    failed: int
    done: set[int]  # completed indexes (Indexed mode)
    succeeded: int
    completions: int
    indexed: bool
    backoff_limit: int

    @staticmethod
    def of(pods: list[dict[str, Any]], spec: dict[str, Any]) -> PodCounts:
        live = [p for p in pods if _phase(p) not in TERMINAL_PHASES and not p["metadata"].get("deletionTimestamp")]
        indexed = spec.get("completionMode") == "Indexed"
        completions = int(spec.get("completions") or spec.get("parallelism") or 1)
        if indexed:
            done = {i for p in pods if _phase(p) == "Succeeded" and (i := _index(p)) is not None and i < completions}
            succeeded = len(done)
        else:
            done = set()
            succeeded = sum(1 for p in pods if _phase(p) == "Succeeded")
        failed = sum(1 for p in pods if _phase(p) == "Failed")
        return PodCounts(live, failed, done, succeeded, completions, indexed, int(spec.get("backoffLimit", 6)))


def _finish_conditions(
    job: dict[str, Any], status: dict[str, Any], counts: PodCounts
) -> tuple[list[dict[str, Any]], bool]:
    """The Job's conditions once its pods are counted, and whether it is finished (Failed or Complete)."""
    conditions: list[dict[str, Any]] = status.get("conditions") or []
    finished = is_true(job, "Complete") or is_true(job, "Failed")
    if not finished and counts.failed > counts.backoff_limit:
        conditions = set_condition(conditions, "FailureTarget", True, *BACKOFF_LIMIT_EXCEEDED)
        conditions = set_condition(conditions, "Failed", True, *BACKOFF_LIMIT_EXCEEDED)
        finished = True
    elif not finished and counts.succeeded >= counts.completions:
        conditions = set_condition(conditions, "SuccessCriteriaMet", True, *COMPLETIONS_REACHED)
        conditions = set_condition(conditions, "Complete", True, *COMPLETIONS_REACHED)
        status["completionTime"] = now_text()
        finished = True
    return conditions, finished


class JobController(BatchingStandin):
    """A ``scheduler.controllers`` reconciler of Job keys; ``queue`` is the one its controller works."""

    name = "job-standin"

    def __init__(
        self, client: KubeClient, cache: ClusterCache, *, workers: int = 4, batch_seconds: float = BATCH_SECONDS
    ) -> None:
        super().__init__(client, cache, workers=workers, batch_seconds=batch_seconds)
        cache.on_change("Job", self._job_changed)
        cache.on_change("Pod", self._pod_changed)
        # job uid -> pod name -> loop time until which to wait: pods created (not seen yet), deleted (still seen)
        self._expected_created: dict[str, dict[str, float]] = {}
        self._expected_deleted: dict[str, dict[str, float]] = {}
        self._job_keys: dict[str, str] = {}
        self.pods_created = 0

    def _job_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new or old
        assert obj is not None
        uid = str(obj["metadata"].get("uid"))
        if new is None:
            self._expected_created.pop(uid, None)
            self._expected_deleted.pop(uid, None)
            self._job_keys.pop(uid, None)
        else:
            self._job_keys[uid] = object_key(obj)
        self.queue.add(object_key(obj))

    def _pod_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        uid = controller_uid(new or old)
        if uid is None:
            return
        name = str((new or old or {})["metadata"]["name"])
        if new is not None:
            self._expected_created.get(uid, {}).pop(name, None)
        else:
            self._expected_deleted.get(uid, {}).pop(name, None)
        key = self._job_keys.get(uid)
        if key is not None:
            self.queue.add_after(key, self.batch_seconds)

    def _pending(self, uid: str) -> float:
        """Seconds to wait for the cache to show this controller's own writes for a Job (0: none)."""
        now = asyncio.get_running_loop().time()
        wait = 0.0
        for expectations in (self._expected_created.get(uid), self._expected_deleted.get(uid)):
            for name, until in list((expectations or {}).items()):
                if until <= now:
                    del expectations[name]  # type: ignore[union-attr]
                else:
                    wait = max(wait, until - now)
        return wait

    def _expect(self, table: dict[str, dict[str, float]], uid: str, name: str) -> None:
        table.setdefault(uid, {})[name] = asyncio.get_running_loop().time() + EXPECTATION_TIMEOUT

    async def reconcile(self, key: str) -> ReconcileResult:
        return await reconciled(self._reconcile(key))

    async def _reconcile(self, key: str) -> float | None:
        namespace, name = split_key(key)
        job = self.cache.get("Job", name, namespace)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return None
        uid = str(job["metadata"]["uid"])
        wait = self._pending(uid)
        if wait:
            # the cache has not caught up with this controller's own writes: their events requeue the Job
            return wait
        spec = job.get("spec") or {}
        status = copy.deepcopy(job.get("status") or {})
        counts = PodCounts.of(self._pods_of(uid), spec)
        live, failed, done, succeeded = counts.live, counts.failed, counts.done, counts.succeeded
        completions, indexed = counts.completions, counts.indexed
        if indexed:
            status["completedIndexes"] = compress_indexes(done)
        conditions, finished = _finish_conditions(job, status, counts)
        suspended = bool(spec.get("suspend"))
        if finished or suspended:
            await self._delete_pods(uid, live)
            live = []
        if suspended and not finished:
            conditions = set_condition(conditions, "Suspended", True, "JobSuspended", "Job suspended")
        elif any(c.get("type") == "Suspended" and c.get("status") == "True" for c in conditions):
            conditions = set_condition(conditions, "Suspended", False, "JobResumed", "Job resumed")
        if not finished and not suspended:
            status.setdefault("startTime", now_text())
            live += await self._create_pods(job, uid, live, done, completions, succeeded, indexed)
        status.update(
            {
                "active": len(live),
                "ready": sum(1 for p in live if _ready(p)),
                "succeeded": succeeded,
                "failed": failed,
                "terminating": 0,
                "uncountedTerminatedPods": {},
            }
        )
        if conditions:
            status["conditions"] = conditions
        if status != (job.get("status") or {}):
            await patch_status(
                self.client,
                "Job",
                name,
                namespace,
                status,
                resource_version=str(job["metadata"]["resourceVersion"]),
                attempts=1,
            )
        return None

    def _pods_of(self, uid: str) -> list[dict[str, Any]]:
        """The pods whose controller owner is the Job ``uid``."""
        return [p for p in self.cache.owned_by("Pod", uid) if controller_uid(p) == uid]

    async def _create_pods(
        self,
        job: dict[str, Any],
        uid: str,
        live: list[dict[str, Any]],
        done: set[int],
        completions: int,
        succeeded: int,
        indexed: bool,
    ) -> list[dict[str, Any]]:
        parallelism = int(job["spec"].get("parallelism", 1))
        room = parallelism - len(live)
        if indexed:
            running = {_index(p) for p in live}
            free = [i for i in range(completions) if i not in done and i not in running]
            wanted: list[int | None] = list(free[: max(room, 0)])
        else:
            wanted = [None] * max(min(room, completions - succeeded - len(live)), 0)
        made: list[dict[str, Any]] = []
        for index in wanted:
            body = self._pod(job, uid, index)
            created = await self.client.create(body)
            self.pods_created += 1
            if created["metadata"]["name"] not in {p["metadata"]["name"] for p in self._pods_of(uid)}:
                self._expect(self._expected_created, uid, created["metadata"]["name"])
            made.append(created)
        return made

    @staticmethod
    def _pod(job: dict[str, Any], uid: str, index: int | None) -> dict[str, Any]:
        name = job["metadata"]["name"]
        template = copy.deepcopy(job["spec"].get("template") or {})
        metadata = template.get("metadata") or {}
        labels = dict(metadata.get("labels") or {})
        annotations = dict(metadata.get("annotations") or {})
        spec = template.get("spec") or {}
        if index is not None:
            labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = str(index)
            spec["hostname"] = f"{name}-{index}"
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": f"{name}-{index}-" if index is not None else f"{name}-",
                "namespace": job["metadata"].get("namespace"),
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": name,
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
        }

    async def _delete_pods(self, uid: str, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            name = pod["metadata"]["name"]
            try:
                await self.client.delete("Pod", name, pod["metadata"].get("namespace"))
            except KubeApiError as error:
                if error.status != 404:
                    raise
                continue
            if self.cache.get("Pod", name, pod["metadata"].get("namespace")) is not None:
                self._expect(self._expected_deleted, uid, name)
