"""The controller manager against the fake API server: informers always, controllers while leading."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from fakeapi.fixtures import FakeApi

from scheduler.controllers.manager import ControllerManager, WatchSpec, own_key
from scheduler.controllers.runtime import Controller, ReconcileResult
from scheduler.kube import InformerSettings, KubeClient, LeaderElector, LeaseSettings
from scheduler.kube.backoff import Backoff
from tests.background import in_background
from tests.eventually import eventually

FAST_LEASE = LeaseSettings(lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)
FAST_INFORMERS = InformerSettings(watch_timeout_seconds=30, inactivity_timeout=30.0, backoff=Backoff(0.01, 0.05))


class NodeRecorder:
    name = "nodes"

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    async def reconcile(self, key: str) -> ReconcileResult:
        self.calls[key] += 1
        return ReconcileResult()


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


@contextlib.asynccontextmanager
async def kube(fake_api: FakeApi) -> AsyncIterator[KubeClient]:
    api_client = await fake_api.api_client()
    try:
        yield KubeClient(api_client)
    finally:
        await api_client.close()


def running(manager: ControllerManager) -> contextlib.AbstractAsyncContextManager[asyncio.Task[None]]:
    return in_background(manager.run())


def node_manager(client: KubeClient, leader: LeaderElector | None) -> tuple[ControllerManager, NodeRecorder]:
    manager = ControllerManager(client, [WatchSpec("Node")], leader=leader, informer_settings=FAST_INFORMERS)
    recorder = NodeRecorder()
    manager.add(Controller(recorder, workers=2), enqueue={"Node": own_key})
    return manager, recorder


async def test_without_an_elector_cached_and_new_objects_are_reconciled(fake_api: FakeApi) -> None:
    fake_api.server.seed(node("n1"))
    async with kube(fake_api) as client:
        manager, recorder = node_manager(client, None)
        async with running(manager):
            await eventually(lambda: recorder.calls["n1"] >= 1, what="the seeded node reconciled")
            await client.create(node("n2"))
            await eventually(lambda: recorder.calls["n2"] >= 1, what="the new node reconciled")
            assert manager.cache.get("Node", "n2") is not None
            assert manager.terms == 1


class SettledNodeRecorder(NodeRecorder):
    """Calls a node settled when it carries the label ``done``."""

    def __init__(self, manager: ControllerManager) -> None:
        super().__init__()
        self.manager = manager

    def settled(self, key: str) -> bool:
        document = self.manager.cache.get("Node", key)
        return document is not None and "done" in (document["metadata"].get("labels") or {})


async def test_a_new_term_skips_settled_keys_but_their_changes_still_reconcile(fake_api: FakeApi) -> None:
    fake_api.server.seed(node("busy"))
    settled = node("finished")
    settled["metadata"]["labels"] = {"done": "true"}
    fake_api.server.seed(settled)
    async with kube(fake_api) as client:
        manager = ControllerManager(client, [WatchSpec("Node")], leader=None, informer_settings=FAST_INFORMERS)
        recorder = SettledNodeRecorder(manager)
        manager.add(Controller(recorder, workers=2), enqueue={"Node": own_key})
        async with running(manager):
            await eventually(lambda: recorder.calls["busy"] >= 1, what="the unsettled node reconciled")
            await asyncio.sleep(0.2)
            assert recorder.calls["finished"] == 0, "a settled key is left out of the term's first pass"
            await client.patch("Node", "finished", {"metadata": {"labels": {"changed": "yes"}}})
            await eventually(lambda: recorder.calls["finished"] >= 1, what="the settled node's change reconciled")


async def test_losing_the_lease_stops_the_controllers_at_once_while_the_cache_stays_warm(fake_api: FakeApi) -> None:
    fake_api.server.seed(node("n1"))
    async with kube(fake_api) as client:
        elector = LeaderElector(client, "lease", "default", "me", settings=FAST_LEASE)
        manager, recorder = node_manager(client, elector)
        async with running(manager):
            await eventually(lambda: recorder.calls["n1"] >= 1, what="leading")
            fake_api.faults.fail(None, "/leases", code=500, times=10_000)  # renewals fail
            await eventually(lambda: not manager.leading.is_set(), timeout=3, what="stepping down")
            assert not elector.leading.is_set()
            await client.create(node("n2"))
            await eventually(lambda: manager.cache.get("Node", "n2") is not None, what="the standby's cache")
            await asyncio.sleep(0.2)
            assert recorder.calls["n2"] == 0  # no controller runs on a standby
            fake_api.faults.clear()
            await eventually(lambda: recorder.calls["n2"] >= 1, timeout=5, what="leading again")
            assert manager.terms == 2


async def test_two_replicas_one_leads_and_the_other_takes_over(fake_api: FakeApi) -> None:
    fake_api.server.seed(node("n1"))
    async with kube(fake_api) as client:
        managers = {}
        recorders = {}
        for name in ("a", "b"):
            elector = LeaderElector(client, "lease", "default", name, settings=FAST_LEASE)
            managers[name], recorders[name] = node_manager(client, elector)
        async with running(managers["a"]) as task_a, running(managers["b"]) as task_b:
            tasks = {"a": task_a, "b": task_b}
            await eventually(lambda: any(m.leading.is_set() for m in managers.values()), what="a leader")
            first = next(name for name, m in managers.items() if m.leading.is_set())
            second = "b" if first == "a" else "a"
            await eventually(lambda: managers[second].cache.synced.is_set(), what="the standby synced")
            await asyncio.sleep(0.3)
            assert not managers[second].leading.is_set()
            assert recorders[second].calls["n1"] == 0
            tasks[first].cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await tasks[first]
            await eventually(lambda: recorders[second].calls["n1"] >= 1, timeout=3, what="the takeover")
