"""An admission a cycle decided stands while the cycle writes its evictions.

A preemption cycle writes its victims' evictions first and hands its admissions off only after
them. On a loaded API server that takes a while, and two things seen at 3,000 Workloads on the
real kube-apiserver took the preemptor's admission back in the engine in that window (it was
admitted again cycles later, after more evictions):

- a change to the preemptor arriving meanwhile (the echo of its own pending reason, written a
  cycle before) read as "the server shows it pending", which it still did;
- the victim finishing just before its eviction landed: the eviction met a 409 and counted as
  failed, though a finished victim holds nothing on the server either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from fakeapi.fixtures import FakeApi
from queue_support import (
    NS,
    PatchHook,
    cluster_queue_doc,
    controller,
    is_admitted,
    kube,
    local_queue_doc,
    queued,
    seed_basics,
)

from scheduler.controllers.queueing.engine_mirror import EngineMirror
from scheduler.kube import KubeClient
from tests.eventually import eventually

QUOTA = 4


def seed(fake_api: FakeApi) -> None:
    """One low job holds the whole ClusterQueue; a high one waits in a held LocalQueue."""
    seed_basics(fake_api)
    put = fake_api.server.seed
    put(cluster_queue_doc("cq", QUOTA, preemption="LowerPriority"))
    put(local_queue_doc("lq", "cq"))
    put(local_queue_doc("lq-high", "cq", "Hold"))
    put(queued("low", "lq", QUOTA, "low"))
    put(queued("high", "lq-high", QUOTA, "high"))


def owner_of(name: str) -> str:
    return name.split("-")[1]  # trainjob-<owner>-<hash>


def is_eviction(patch: Any) -> bool:
    conditions = ((patch or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Evicted" and c.get("status") == "True" for c in conditions)


class EvictionHook(PatchHook):
    """A client that runs ``before`` (once) ahead of its first eviction write to the ``low`` job."""

    def __init__(self, client: KubeClient) -> None:
        super().__init__(client)
        self.before: Callable[[str], Awaitable[None]] | None = None
        self.ran = asyncio.Event()

    async def before_patch(self, kind: str, name: str, patch: Any, *, status: bool) -> None:
        if status and kind == "Workload" and owner_of(name) == "low" and is_eviction(patch) and not self.ran.is_set():
            self.ran.set()
            if self.before is not None:
                await self.before(name)


async def workload_of(client: KubeClient, owner: str) -> dict[str, Any]:
    found = await _find(client, owner)
    assert found is not None, f"no Workload of {owner}"
    return found


BeforeEviction = Callable[[KubeClient, str], Awaitable[None]]


async def preempt_with(fake_api: FakeApi, before: BeforeEviction) -> tuple[EngineMirror, dict[str, Any]]:
    """The high job preempts the low one; ``before(client, victim_name)`` runs ahead of the
    eviction write. The controller's engine mirror and the victim's Workload, after."""
    seed(fake_api)
    async with kube(fake_api) as plain:
        hooked = EvictionHook(plain)
        async with controller(hooked) as process:
            await eventually(lambda: _admitted(plain, "low"), what="the low job's admission")
            await eventually(lambda: _has_pending_reason(plain, "high"), what="the high job's pending reason")
            hooked.before = lambda name: before(plain, name)
            await plain.patch("LocalQueue", "lq-high", {"spec": {"stopPolicy": "None"}}, NS)
            await eventually(lambda: _admitted(plain, "high"), what="the preemptor's admission")
            assert hooked.ran.is_set()
            return process.built.queue.mirror, await workload_of(plain, "low")


async def test_a_change_to_the_preemptor_while_its_victim_is_evicted_does_not_take_its_admission_back(
    fake_api: FakeApi,
) -> None:
    async def touch_the_preemptor(client: KubeClient, _: str) -> None:
        # someone writes the preemptor while the cycle waits on the eviction
        high = await workload_of(client, "high")
        await client.patch("Workload", high["metadata"]["name"], {"metadata": {"labels": {"touched": "yes"}}}, NS)
        await asyncio.sleep(0.3)  # its watch event reaches the controller before the eviction lands

    mirror, _ = await preempt_with(fake_api, touch_the_preemptor)
    assert mirror.taken_back == {}  # admitted once, in the cycle that preempted for it


async def test_a_victim_that_finished_before_its_eviction_landed_lets_the_preemptor_in_at_once(
    fake_api: FakeApi,
) -> None:
    async def finish_the_victim(client: KubeClient, name: str) -> None:
        # the job's own end is written first: the eviction then meets a 409
        current = await client.get("Workload", name, NS)
        finished = {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done"}
        conditions = [*current["status"]["conditions"], {**finished, "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        await client.patch("Workload", name, {"status": {"conditions": conditions}}, NS, status=True)

    mirror, low = await preempt_with(fake_api, finish_the_victim)
    assert any(c["type"] == "Finished" and c["status"] == "True" for c in low["status"]["conditions"])
    assert not any(c["type"] == "Evicted" for c in low["status"]["conditions"])  # the eviction never landed
    assert mirror.taken_back == {}


async def _admitted(client: KubeClient, owner: str) -> bool:
    found = await _find(client, owner)
    return found is not None and is_admitted(found)


async def _has_pending_reason(client: KubeClient, owner: str) -> bool:
    conditions = ((await _find(client, owner) or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "QuotaReserved" and c["status"] == "False" for c in conditions)


async def _find(client: KubeClient, owner: str) -> dict[str, Any] | None:
    """The owner's Workload, or None before the controller made it."""
    listed = await client.list("Workload", NS)
    return next((w for w in listed.items if w["metadata"]["ownerReferences"][0]["name"] == owner), None)
