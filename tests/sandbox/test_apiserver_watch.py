"""Watch streams of the fake API server through kubernetes_asyncio.watch.Watch, and injected faults."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from fakeapi.fixtures import FakeApi
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

KUEUE = ("kueue.x-k8s.io", "v1beta2")


def flavor(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name, "labels": labels},
    }


async def collect(stream: watch.Watch, count: int) -> list[tuple[str, str]]:
    events: list[tuple[str, str]] = []
    async for event in stream:
        events.append((event["type"], event["raw_object"]["metadata"]["name"]))
        if len(events) == count:
            break
    return events


async def test_watch_without_a_revision_starts_with_the_current_objects(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("a"))
    async with watch.Watch() as stream:
        events = stream.stream(api.list_cluster_custom_object, *KUEUE, "resourceflavors", timeout_seconds=5)
        first = await collect(events, 1)
        await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("b"))
        await api.patch_cluster_custom_object(
            *KUEUE,
            "resourceflavors",
            "b",
            {"spec": {"nodeLabels": {"x": "y"}}},
            _content_type="application/merge-patch+json",
        )
        await api.delete_cluster_custom_object(*KUEUE, "resourceflavors", "a")
        rest = await collect(events, 3)
    assert first == [("ADDED", "a")]
    assert rest == [("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "a")]


async def test_watch_resumes_from_a_revision(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("a"))
    listed = await api.list_cluster_custom_object(*KUEUE, "resourceflavors")
    revision = listed["metadata"]["resourceVersion"]
    await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("b"))
    await api.delete_cluster_custom_object(*KUEUE, "resourceflavors", "a")
    async with watch.Watch() as stream:
        events = stream.stream(
            api.list_cluster_custom_object, *KUEUE, "resourceflavors", resource_version=revision, timeout_seconds=5
        )
        assert await collect(events, 2) == [("ADDED", "b"), ("DELETED", "a")]


async def test_core_watch_deserialises_models(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    async with watch.Watch() as stream:
        events = stream.stream(core.list_node, timeout_seconds=5)
        await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="n1", labels={"zone": "a"})))
        async for event in events:
            assert event["type"] == "ADDED"
            assert isinstance(event["object"], client.V1Node)
            assert event["object"].metadata.labels == {"zone": "a"}
            break


async def test_label_selector_turns_modifications_into_added_and_deleted(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    created = await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("a"))
    async with watch.Watch() as stream:
        # the request is sent at the first iteration: resume from the creation so no change is missed
        events = stream.stream(
            api.list_cluster_custom_object,
            *KUEUE,
            "resourceflavors",
            label_selector="pool=gpu",
            resource_version=created["metadata"]["resourceVersion"],
            timeout_seconds=5,
        )
        for labels in ({"pool": "gpu"}, {"pool": "gpu", "x": "1"}, {"pool": "cpu"}):
            await api.patch_cluster_custom_object(
                *KUEUE,
                "resourceflavors",
                "a",
                {"metadata": {"labels": labels}},
                _content_type="application/merge-patch+json",
            )
        assert await collect(events, 3) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


async def test_too_old_revision_is_an_error_event_with_410(fake_api: FakeApi, kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("a"))
    revision = (await api.list_cluster_custom_object(*KUEUE, "resourceflavors"))["metadata"]["resourceVersion"]
    fake_api.faults.expire_watches()
    await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("b"))
    raw = await api.list_cluster_custom_object(
        *KUEUE, "resourceflavors", watch=True, resource_version=revision, timeout_seconds=5, _preload_content=False
    )
    assert raw.status == 200
    line = await raw.content.readline()
    raw.release()
    import json

    event = json.loads(line)
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"
    async with watch.Watch() as stream:
        events = stream.stream(
            api.list_cluster_custom_object, *KUEUE, "resourceflavors", resource_version=revision, timeout_seconds=5
        )
        with pytest.raises(ApiException) as raised:
            await collect(events, 1)
    assert raised.value.status == 410


async def test_bounded_history_expires_old_revisions(fake_api: FakeApi, kube_client: client.ApiClient) -> None:
    fake_api.store.history_limit = 3
    api = client.CustomObjectsApi(kube_client)
    start = (await api.list_cluster_custom_object(*KUEUE, "resourceflavors"))["metadata"]["resourceVersion"]
    for index in range(5):
        await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor(f"f{index}"))
    async with watch.Watch() as stream:
        events = stream.stream(
            api.list_cluster_custom_object, *KUEUE, "resourceflavors", resource_version=start, timeout_seconds=5
        )
        with pytest.raises(ApiException) as raised:
            await collect(events, 1)
    assert raised.value.status == 410


async def test_timeout_seconds_ends_the_stream(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with watch.Watch() as stream:
        events = stream.stream(api.list_cluster_custom_object, *KUEUE, "resourceflavors", timeout_seconds=1)
        assert await collect(events, 10) == []
    assert 0.9 <= loop.time() - started < 5


async def test_bookmark_at_the_end_carries_the_revision(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    async with watch.Watch() as stream:
        events = stream.stream(
            api.list_cluster_custom_object, *KUEUE, "resourceflavors", timeout_seconds=1, allow_watch_bookmarks=True
        )
        await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("a"))
        seen = [event async for event in events]
        assert [e["type"] for e in seen] == ["ADDED", "BOOKMARK"]
        assert stream.resource_version == seen[0]["raw_object"]["metadata"]["resourceVersion"]


async def test_close_watches_ends_open_streams_cleanly(fake_api: FakeApi, kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    async with watch.Watch() as stream:
        events = stream.stream(api.list_cluster_custom_object, *KUEUE, "resourceflavors", timeout_seconds=30)
        waiting = asyncio.create_task(collect(events, 1))
        while fake_api.faults.open_watches == 0:
            await asyncio.sleep(0.01)
        assert fake_api.faults.close_watches() == 1
        assert await waiting == []


async def test_abrupt_close_cuts_the_connection(fake_api: FakeApi, kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    async with watch.Watch() as stream:
        events = stream.stream(api.list_cluster_custom_object, *KUEUE, "resourceflavors", timeout_seconds=30)
        waiting = asyncio.create_task(collect(events, 1))
        while fake_api.faults.open_watches == 0:
            await asyncio.sleep(0.01)
        fake_api.faults.close_watches(abrupt=True)
        with pytest.raises(aiohttp.ClientError):
            await waiting


async def test_injected_failures_answer_with_a_status_then_stop(
    fake_api: FakeApi, kube_client: client.ApiClient
) -> None:
    api = client.CustomObjectsApi(kube_client)
    fake_api.faults.fail("list", "/resourceflavors", code=429, times=2, retry_after=1)
    for _ in range(2):
        with pytest.raises(ApiException) as raised:
            await api.list_cluster_custom_object(*KUEUE, "resourceflavors")
        assert raised.value.status == 429
        assert raised.value.headers["Retry-After"] == "1"
    assert (await api.list_cluster_custom_object(*KUEUE, "resourceflavors"))["items"] == []
    fake_api.faults.fail("create", code=500)
    with pytest.raises(ApiException) as raised:
        await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("a"))
    assert raised.value.status == 500
    assert "injected failure" in raised.value.body
    await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("a"))
    assert len(fake_api.faults.failed) == 3


async def test_stalled_watch_delivers_nothing(fake_api: FakeApi, kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    async with watch.Watch() as stream:
        events = stream.stream(api.list_cluster_custom_object, *KUEUE, "resourceflavors", timeout_seconds=1)
        waiting = asyncio.create_task(collect(events, 1))
        while fake_api.faults.open_watches == 0:
            await asyncio.sleep(0.01)
        fake_api.faults.stall_watches()
        await api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor("a"))
        assert await waiting == []
