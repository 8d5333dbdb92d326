"""``limit``/``continue`` paging: the real kubernetes-asyncio client, KubeClient and the Informer."""

from __future__ import annotations

import asyncio
import json

import pytest
from fakeapi.fixtures import FakeApi
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from sandbox_support import config_map, kube

from scheduler.kube import Informer, InformerSettings
from scheduler.kube.backoff import Backoff
from tests.eventually import eventually


def _seed(fake_api: FakeApi, count: int, **labels: str) -> None:
    for index in range(count):
        fake_api.server.seed(config_map(f"cm-{index:02d}", **labels))


async def test_pages_carry_a_continue_token_and_the_remaining_count(fake_api: FakeApi) -> None:
    _seed(fake_api, 5)
    api = client.CoreV1Api(await fake_api.api_client())
    try:
        first = await api.list_namespaced_config_map("default", limit=2)
        second = await api.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)
        third = await api.list_namespaced_config_map("default", limit=2, _continue=second.metadata._continue)
    finally:
        await api.api_client.close()
    assert [i.metadata.name for i in first.items] == ["cm-00", "cm-01"]
    assert first.metadata.remaining_item_count == 3
    assert [i.metadata.name for i in second.items] == ["cm-02", "cm-03"]
    assert second.metadata.remaining_item_count == 1
    assert [i.metadata.name for i in third.items] == ["cm-04"]
    assert third.metadata._continue is None
    assert third.metadata.remaining_item_count is None
    assert first.metadata.resource_version == second.metadata.resource_version == third.metadata.resource_version


async def test_later_pages_show_the_list_as_of_the_first_page(fake_api: FakeApi) -> None:
    _seed(fake_api, 4)
    api = client.CoreV1Api(await fake_api.api_client())
    try:
        first = await api.list_namespaced_config_map("default", limit=2)
        await api.delete_namespaced_config_map("cm-03", "default")
        await api.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm-99"))
        )
        await api.patch_namespaced_config_map("cm-02", "default", {"data": {"k": "changed"}})
        rest = await api.list_namespaced_config_map("default", limit=10, _continue=first.metadata._continue)
        fresh = await api.list_namespaced_config_map("default")
    finally:
        await api.api_client.close()
    assert [i.metadata.name for i in rest.items] == ["cm-02", "cm-03"]
    assert rest.items[0].data == {"k": "cm-02"}
    assert [i.metadata.name for i in fresh.items] == ["cm-00", "cm-01", "cm-02", "cm-99"]


async def test_a_continue_token_older_than_compaction_is_410(fake_api: FakeApi) -> None:
    _seed(fake_api, 3)
    api = client.CoreV1Api(await fake_api.api_client())
    try:
        first = await api.list_namespaced_config_map("default", limit=1)
        fake_api.faults.expire_watches()
        with pytest.raises(ApiException) as expired:
            await api.list_namespaced_config_map("default", limit=1, _continue=first.metadata._continue)
        with pytest.raises(ApiException) as garbled:
            await api.list_namespaced_config_map("default", limit=1, _continue="not-a-token")
    finally:
        await api.api_client.close()
    assert expired.value.status == 410
    assert json.loads(expired.value.body)["reason"] == "Expired"
    assert garbled.value.status == 400


async def test_a_selector_filters_pages_and_leaves_the_count_unset(fake_api: FakeApi) -> None:
    _seed(fake_api, 3, team="a")
    fake_api.server.seed(config_map("other", team="b"))
    api = client.CoreV1Api(await fake_api.api_client())
    try:
        first = await api.list_namespaced_config_map("default", limit=2, label_selector="team=a")
        rest = await api.list_namespaced_config_map(
            "default", limit=2, label_selector="team=a", _continue=first.metadata._continue
        )
    finally:
        await api.api_client.close()
    assert [i.metadata.name for i in first.items] == ["cm-00", "cm-01"]
    assert first.metadata.remaining_item_count is None
    assert first.metadata._continue
    assert [i.metadata.name for i in rest.items] == ["cm-02"]


async def test_kube_client_pages_through_and_falls_back_when_the_token_expires(fake_api: FakeApi) -> None:
    _seed(fake_api, 7)
    async with kube(fake_api) as kube_client:
        paged = await kube_client.list("ConfigMap", "default", limit=3)
        assert paged.pages == 3
        assert [i["metadata"]["name"] for i in paged.items] == [f"cm-{i:02d}" for i in range(7)]
        assert paged.resource_version == str(fake_api.store.resource_version)
        fake_api.faults.fail("list", "/configmaps", code=410, query_has="continue")
        fallback = await kube_client.list("ConfigMap", "default", limit=3)
        whole = await kube_client.list("ConfigMap", "default", limit=None)
    assert [i["metadata"]["name"] for i in fallback.items] == [f"cm-{i:02d}" for i in range(7)]
    assert fallback.pages == 2  # the first page, then one unpaged list
    assert whole.pages == 1
    assert [q.query.get("limit") for q in fake_api.server.requests if q.verb == "list"][-3:] == ["3", None, None]


class _Sink:
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.loaded = False

    def apply(self, document: dict[str, object]) -> None:
        self.names.add(str(document["metadata"]["name"]))  # type: ignore[index]

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        self.names.discard(name)

    def mark_loaded(self) -> None:
        self.loaded = True


async def test_the_informer_lists_in_pages(fake_api: FakeApi) -> None:
    _seed(fake_api, 5)
    sink = _Sink()
    settings = InformerSettings(watch_timeout_seconds=30, backoff=Backoff(initial=0.01, maximum=0.05), page_size=2)
    async with kube(fake_api) as kube_client:
        informer = Informer(kube_client, "ConfigMap", sink, namespace="default", settings=settings)
        task = asyncio.create_task(informer.run())
        try:
            await eventually(lambda: sink.loaded, what="the informer's first list")
            fake_api.server.seed(config_map("late"))
            await eventually(lambda: "late" in sink.names, what="the watch after the paged list")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    assert sink.names == {f"cm-{i:02d}" for i in range(5)} | {"late"}
    limits = [q.query.get("limit") for q in fake_api.server.requests if q.verb == "list"]
    assert limits == ["2", "2", "2"]
