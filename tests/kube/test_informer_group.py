"""InformerGroup: one sink, loaded only when every kind has been listed."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from fakeapi.fixtures import FakeApi
from kube_support import RecordingSink, fast_settings, flavor, kube, local_queue

from scheduler.kube import InformerGroup
from tests.eventually import eventually


async def test_the_sink_is_loaded_only_after_every_kind_synced(fake_api: FakeApi) -> None:
    fake_api.server.seed(flavor("gpu"))
    fake_api.server.seed(local_queue("default"))
    fake_api.faults.fail("list", "/localqueues", code=500, times=3)
    sink = RecordingSink()
    async with kube(fake_api) as client:
        group = InformerGroup(client, ["ResourceFlavor", "LocalQueue", "Namespace"], sink, settings=fast_settings())
        task = asyncio.create_task(group.run())
        try:
            await eventually(lambda: group.unsynced() == ["LocalQueue"], what="two kinds synced")
            assert sink.loaded == 0
            assert not group.synced.is_set()
            await asyncio.wait_for(group.synced.wait(), 5)
            assert sink.loaded == 1
            assert sink.names("LocalQueue") == {"default"}
            assert sink.names("Namespace") >= {"default", "kube-system"}
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def test_a_group_needs_a_kind() -> None:
    with pytest.raises(ValueError, match="at least one kind"):
        InformerGroup(object(), [], RecordingSink())  # type: ignore[arg-type]


def test_an_unknown_kind_is_named() -> None:
    with pytest.raises(ValueError, match="unknown kind 'Deployment'"):
        InformerGroup(object(), ["Deployment"], RecordingSink())  # type: ignore[arg-type]
