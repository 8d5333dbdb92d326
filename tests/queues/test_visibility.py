"""Kueue's visibility API served from an engine, read with the kubernetes-asyncio client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.queues.support import NOW, fixture_state
from webhooks.objects import ObjectCache
from webhooks.server import create_app
from webhooks.visibility import VISIBILITY_KEY, EngineSource, VisibilityService
from webhooks.visibility_auth import Authenticator, Guard, allow_users, fixed_token

TOKEN = "visibility-test-token"
PREFIX = "/apis/visibility.kueue.x-k8s.io/v1beta1"


@pytest.fixture
async def visibility_url() -> AsyncIterator[str]:
    app = create_app(ObjectCache(), routes={})
    state = fixture_state()
    app[VISIBILITY_KEY] = VisibilityService(
        EngineSource(state.engine),
        Guard(Authenticator(fixed_token(TOKEN)), allow_users("visibility-reader")),
        clock=lambda: NOW,
    )
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def _get(url: str, path: str, token: str = TOKEN, **query: str) -> Any:
    configuration = client.Configuration(host=url)
    configuration.api_key = {"BearerToken": token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    async with client.ApiClient(configuration) as api:
        return await api.call_api(
            path,
            "GET",
            query_params=list(query.items()),
            header_params={"Accept": "application/json"},
            response_types_map={200: "object"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
        )


async def test_cluster_queue_pending_workloads_in_kueue_shape(visibility_url: str) -> None:
    answer = await _get(visibility_url, f"{PREFIX}/clusterqueues/team-a/pendingworkloads")
    assert answer["kind"] == "PendingWorkloadsSummary"
    assert answer["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
    first = answer["items"][0]
    assert first == {
        "metadata": {"name": "a-first", "namespace": "team-a", "creationTimestamp": "2026-01-01T00:00:30Z"},
        "priority": 0,
        "localQueueName": "main",
        "positionInClusterQueue": 0,
        "positionInLocalQueue": 0,
    }
    assert [(i["metadata"]["name"], i["positionInLocalQueue"]) for i in answer["items"]] == [
        ("a-first", 0),
        ("a-big", 1),
        ("a-other", 0),
    ]


async def test_local_queue_pending_workloads_with_offset_and_limit(visibility_url: str) -> None:
    path = f"{PREFIX}/namespaces/team-a/localqueues/main/pendingworkloads"
    answer = await _get(visibility_url, path, offset="1", limit="1")
    assert [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in answer["items"]] == [("a-big", 1)]
    other = await _get(visibility_url, f"{PREFIX}/namespaces/team-a/localqueues/other/pendingworkloads")
    assert [(i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in other["items"]] == [(2, 0)]


async def test_a_wrong_token_is_refused(visibility_url: str) -> None:
    with pytest.raises(ApiException) as refused:
        await _get(visibility_url, f"{PREFIX}/clusterqueues/team-a/pendingworkloads", token="wrong")
    assert refused.value.status == 401


@pytest.mark.parametrize(
    ("path", "status"),
    [
        (f"{PREFIX}/clusterqueues/nope/pendingworkloads", 404),
        (f"{PREFIX}/namespaces/team-a/localqueues/nope/pendingworkloads", 404),
    ],
    ids=["unknown-cluster-queue", "unknown-local-queue"],
)
async def test_unknown_queues_answer_not_found(visibility_url: str, path: str, status: int) -> None:
    with pytest.raises(ApiException) as missing:
        await _get(visibility_url, path)
    assert missing.value.status == status


async def test_bad_paging_is_a_bad_request(visibility_url: str) -> None:
    with pytest.raises(ApiException) as bad:
        await _get(visibility_url, f"{PREFIX}/clusterqueues/team-a/pendingworkloads", limit="-1")
    assert bad.value.status == 400
