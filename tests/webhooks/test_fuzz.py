"""Fuzz the running server with 10,000+ malformed and random reviews: never a 500, never a crash.

One server runs on its own event loop in a thread; hypothesis drives a plain keep-alive HTTPS
client (http.client) from the test thread, several requests per example to keep it fast.
"""

from __future__ import annotations

import asyncio
import copy
import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from builders import ClusterQueueBuilder, LocalQueueBuilder, cluster_training_runtime, trainjob
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from webhook_support import OBJECTS, review

from webhooks.objects import ObjectCache, load_directory
from webhooks.server import WebhookServer
from webhooks.tls import SelfSignedBundle, client_context, server_context

ENDPOINTS = ["/mutate/trainjobs", "/validate/trainjobs", "/validate/kueue", "/validate/runtimes"]
REQUESTS_PER_EXAMPLE = 4
EXAMPLES = 2600  # x 4 requests: more than 10,000 reviews
MAX_BODY = 16 * 1024

SEEDS: list[dict[str, Any]] = [
    trainjob("fuzz", "team-a", nodes=2, queue="default", suspend=True),
    ClusterQueueBuilder("fuzz").namespace_selector(None).quota("cpu", "cpu", 4).doc(),
    LocalQueueBuilder("fuzz", "team-a").cluster_queue("team-a-cq").doc(),
    cluster_training_runtime("fuzz"),
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


def _paths(document: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(document, dict):
        for key, value in document.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from _paths(value, (*prefix, index))


@st.composite
def mutated_reviews(draw: st.DrawFn) -> bytes:
    """A real review with one node somewhere replaced by random JSON, or deleted."""
    body = review(draw(st.sampled_from(SEEDS)), operation=draw(st.sampled_from(["CREATE", "UPDATE", "DELETE"])))
    if body["request"]["operation"] == "UPDATE":
        body["request"]["oldObject"] = copy.deepcopy(body["request"]["object"])
    paths = [path for path in _paths(body) if path]
    path = draw(st.sampled_from(paths))
    parent: Any = body
    for part in path[:-1]:
        parent = parent[part]
    if draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(json_values)
    return json.dumps(body).encode()


bodies = st.one_of(
    mutated_reviews(),
    json_values.map(lambda value: json.dumps(value).encode()),
    st.binary(max_size=64),
    st.builds(
        lambda value: json.dumps(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": value}
        ).encode(),
        json_values,
    ),
)


class ThreadedWebhook:
    """The server on its own loop in a thread, so hypothesis can drive it synchronously."""

    def __init__(self, bundle: SelfSignedBundle, directory: Any) -> None:
        cache = ObjectCache()
        load_directory(OBJECTS, cache)
        files = bundle.write(directory)
        self.loop = asyncio.new_event_loop()
        self.server = WebhookServer(
            cache, server_context(files), host="127.0.0.1", port=0, max_body_bytes=MAX_BODY, shutdown_timeout=1.0
        )
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(timeout=10)
        self.context = client_context(bundle.ca.cert_pem)
        self.connection = self._connect()
        self.requests = 0

    def _connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("localhost", self.port, context=self.context, timeout=10)

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"}
        for attempt in range(2):
            try:
                self.connection.request("POST", path, body=body, headers=headers)
                response = self.connection.getresponse()
                data = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.connection.close()
                    self.connection = self._connect()
                self.requests += 1
                return response.status, data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # The server may close a kept-alive connection after refusing a body; a crash would
                # also fail the reconnect, so one retry cannot hide one.
                self.connection.close()
                self.connection = self._connect()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.connection.close()
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@pytest.fixture
def threaded_webhook(tls_bundle: SelfSignedBundle, tmp_path: Any) -> Iterator[ThreadedWebhook]:
    running = ThreadedWebhook(tls_bundle, tmp_path / "tls")
    yield running
    running.close()


def check_answer(path: str, status: int, data: bytes) -> None:
    assert status in (200, 400, 413), (path, status, data[:300])
    document = json.loads(data)
    if status != 200:
        assert document["message"], document
        return
    response = document["response"]
    assert document["kind"] == "AdmissionReview"
    assert isinstance(response["uid"], str)
    assert response["uid"]
    assert isinstance(response["allowed"], bool)
    if not response["allowed"]:
        assert response["status"]["message"], document


def test_ten_thousand_random_reviews_never_500(threaded_webhook: ThreadedWebhook) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(
        st.lists(
            st.tuples(st.sampled_from(ENDPOINTS), bodies), min_size=REQUESTS_PER_EXAMPLE, max_size=REQUESTS_PER_EXAMPLE
        )
    )
    def fuzz(requests: list[tuple[str, bytes]]) -> None:
        for path, body in requests:
            status, data = threaded_webhook.post(path, body)
            check_answer(path, status, data)

    fuzz()
    assert threaded_webhook.requests >= 10_000
    status, data = threaded_webhook.post("/validate/kueue", json.dumps(review(SEEDS[2])).encode())
    assert status == 200
    assert json.loads(data)["response"]["allowed"] is True
