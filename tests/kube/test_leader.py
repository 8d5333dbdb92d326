"""Leader election with a Lease on the fake API server: one leader, takeover, stepping down."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from fakeapi.fixtures import FakeApi
from kube_support import kube

from scheduler.kube import KubeClient, LeaderElector, LeaseSettings
from tests.background import in_background
from tests.eventually import eventually

FAST = LeaseSettings(lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)


def campaigning(elector: LeaderElector) -> contextlib.AbstractAsyncContextManager[asyncio.Task[None]]:
    return in_background(elector.run())


async def lease_spec(client: KubeClient) -> dict[str, object]:
    spec: dict[str, object] = (await client.get("Lease", "trainyard", "kube-system"))["spec"]
    return spec


async def test_one_of_two_candidates_leads_and_the_other_takes_over_on_release(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        electors = {name: LeaderElector(client, "trainyard", "kube-system", name, settings=FAST) for name in "ab"}
        async with campaigning(electors["a"]) as task_a, campaigning(electors["b"]) as task_b:
            tasks = {"a": task_a, "b": task_b}
            await eventually(lambda: any(e.leading.is_set() for e in electors.values()), what="a leader")
            first = next(name for name, e in electors.items() if e.leading.is_set())
            second = "b" if first == "a" else "a"
            await asyncio.sleep(1.5)  # longer than the lease: the leader keeps renewing it
            assert electors[first].leading.is_set()
            assert not electors[second].leading.is_set()
            assert (await lease_spec(client))["holderIdentity"] == first
            tasks[first].cancel()  # the leader shuts down and releases the lease
            with contextlib.suppress(asyncio.CancelledError):
                await tasks[first]
            await eventually(lambda: electors[second].leading.is_set(), what="the takeover after release", timeout=2)
            spec = await lease_spec(client)
    assert spec["holderIdentity"] == second
    assert spec["leaseTransitions"] == 1


async def test_an_unrenewed_lease_is_taken_over_after_it_expires(fake_api: FakeApi) -> None:
    fake_api.server.seed(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "trainyard", "namespace": "kube-system"},
            "spec": {"holderIdentity": "crashed", "leaseDurationSeconds": 1, "leaseTransitions": 3},
        }
    )
    async with kube(fake_api) as client:
        b = LeaderElector(client, "trainyard", "kube-system", "b", settings=FAST)
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with campaigning(b):
            await eventually(lambda: b.leading.is_set(), what="the takeover", timeout=3)
            waited = loop.time() - started
            spec = await lease_spec(client)
    assert waited >= 1.0, "the crashed holder's lease is honoured for its duration"
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 4


async def test_a_leader_that_cannot_renew_steps_down_and_its_work_is_cancelled(fake_api: FakeApi) -> None:
    work_cancelled = asyncio.Event()

    async def lead() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            work_cancelled.set()
            raise

    async with kube(fake_api) as client:
        a = LeaderElector(client, "trainyard", "kube-system", "a", settings=FAST, on_started_leading=lead)
        async with campaigning(a) as task:
            await eventually(lambda: a.leading.is_set(), what="leadership")
            fake_api.faults.fail("update", "/leases/", code=500, times=1000)
            await asyncio.wait_for(task, 3)  # run() returns once the lease is lost
            assert not a.leading.is_set()
            assert work_cancelled.is_set()


def test_settings_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        LeaseSettings(lease_duration=5, renew_deadline=10, retry_period=1)
