"""A large review cannot freeze the webhook: bounded input, judged off the event loop, with a deadline.

Over real HTTPS: while a TrainJob with many overrides is reviewed, /healthz keeps answering within
1 s (a liveness probe's budget, a correctness property here), and the review is answered within
the webhook configuration's timeoutSeconds, allowed or refused with a reason the user can act on.
"""

from __future__ import annotations

import asyncio
import http.client
import itertools
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from webhook_support import Webhook, review, start_webhook, stop_webhook, wide_trainjob

from runtimes.trainjob_bounds import MAX_POD_TEMPLATE_OVERRIDES
from scheduler.api.checks import check_object
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict
from webhooks.review_runner import ReviewRunner
from webhooks.tls import CertificateFiles, SelfSignedBundle, client_context

ROOT = Path(__file__).resolve().parents[2]
PROBE_BUDGET = 1.0  # seconds: a health probe slower than this counts as a failed probe


def timeout_seconds(webhook_name: str) -> float:
    """The API server's timeout for one webhook, as manifests/webhook configures it."""
    path = ROOT / "manifests" / "webhook" / "webhook-configurations.yaml"
    for document in yaml.safe_load_all(path.read_text()):
        for hook in document["webhooks"]:
            if hook["name"] == webhook_name:
                return float(hook["timeoutSeconds"])
    raise AssertionError(f"no webhook {webhook_name} in {path}")


class HealthProbes:
    """GET /healthz every 50 ms, as the kubelet probes: a new TLS connection each time, from a thread
    of its own (not the server's event loop, which a blocking review would freeze along with the
    server), timing each answer until stopped."""

    def __init__(self, webhook: Webhook, ca_pem: bytes) -> None:
        self.port = webhook.server.port
        self.context = client_context(ca_pem)
        self.latencies: list[float] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="health-probes", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.is_set():
            started = time.perf_counter()
            connection = http.client.HTTPSConnection("localhost", self.port, context=self.context, timeout=10)
            try:
                connection.request("GET", "/healthz")
                response = connection.getresponse()
                answered = (response.status, response.read()) == (200, b"ok")
            except OSError:  # refused, reset or timed out: a failed probe
                answered = False
            finally:
                connection.close()
            self.latencies.append(time.perf_counter() - started if answered else float("inf"))
            time.sleep(0.05)

    async def finish(self) -> list[float]:
        self.stopped.set()
        await asyncio.to_thread(self.thread.join)
        return self.latencies


@pytest.fixture
async def probed(webhook: Webhook, tls_bundle: SelfSignedBundle) -> AsyncIterator[tuple[Webhook, HealthProbes]]:
    probes = HealthProbes(webhook, tls_bundle.ca.cert_pem)
    while not probes.latencies:  # probes are answered before the review starts
        await asyncio.sleep(0.01)
    yield webhook, probes
    await probes.finish()


async def _timed_review(webhook: Webhook, path: str, body: dict[str, object]) -> tuple[dict[str, object], float]:
    started = time.perf_counter()
    response = await webhook.admit(path, body)
    return response, time.perf_counter() - started


async def test_a_60_override_trainjob_leaves_healthz_answering_and_is_refused_in_time(
    probed: tuple[Webhook, HealthProbes],
) -> None:
    webhook, probes = probed
    job = wide_trainjob("wide", overrides=60, env=128)
    response, seconds = await _timed_review(webhook, "/validate/trainjobs", review(job))
    latencies = await probes.finish()
    assert seconds < timeout_seconds("vtrainjob.trainyard.dev")
    assert response["allowed"] is False
    status = response["status"]
    assert isinstance(status, dict)
    assert (
        f"spec.podTemplateOverrides: 60 entries, more than the {MAX_POD_TEMPLATE_OVERRIDES} accepted"
        in (status["message"])
    )
    assert latencies
    assert max(latencies) < PROBE_BUDGET, latencies


async def test_the_largest_accepted_override_list_is_rendered_in_time(probed: tuple[Webhook, HealthProbes]) -> None:
    webhook, probes = probed
    job = wide_trainjob("widest", overrides=MAX_POD_TEMPLATE_OVERRIDES, env=128)
    response, seconds = await _timed_review(webhook, "/validate/trainjobs", review(job))
    latencies = await probes.finish()
    assert seconds < timeout_seconds("vtrainjob.trainyard.dev")
    status = response["status"]
    assert isinstance(status, dict)
    # refused by a rule of the rendered job (Trainer owns the node container's env): it was merged
    assert "must not set env of the 'node' container" in status["message"]
    assert latencies
    assert max(latencies) < PROBE_BUDGET, latencies


def test_too_many_overrides_are_refused_by_every_reader_without_rendering() -> None:
    document = wide_trainjob("wide", overrides=MAX_POD_TEMPLATE_OVERRIDES + 1, env=2)
    check = check_object(document)
    assert [str(error) for error in check.errors] == [
        f"spec.podTemplateOverrides: {MAX_POD_TEMPLATE_OVERRIDES + 1} entries, more than the "
        f"{MAX_POD_TEMPLATE_OVERRIDES} accepted: merge overrides that target the same jobs into one entry"
    ]


# ------------------------------------------------------------------ the worker and its deadline


class CpuBoundHandlers:
    """Real handlers that burn CPU (``slow``) or answer at once (``quick``), recording when each ran."""

    def __init__(self, slow_seconds: float) -> None:
        self.slow_seconds = slow_seconds
        self.release = threading.Event()  # ends a slow handler early, so no thread outlives the test
        self.ran: list[tuple[str, float, float]] = []

    def slow(self, request: AdmissionRequest, cache: ObjectCache) -> Verdict:
        started = time.perf_counter()
        while time.perf_counter() - started < self.slow_seconds and not self.release.is_set():
            sum(range(2000))
        self.ran.append(("slow", started, time.perf_counter()))
        return Verdict.allow()

    def quick(self, request: AdmissionRequest, cache: ObjectCache) -> Verdict:
        started = time.perf_counter()
        self.ran.append(("quick", started, time.perf_counter()))
        return Verdict.allow()


@pytest.fixture
async def slow_webhook(
    cache: ObjectCache, tls_files: CertificateFiles, tls_bundle: SelfSignedBundle
) -> AsyncIterator[tuple[Webhook, CpuBoundHandlers]]:
    handlers = CpuBoundHandlers(slow_seconds=4.0)
    runner = ReviewRunner(deadline=0.5, inline_body_bytes=16 * 1024)
    webhook = await start_webhook(
        cache,
        tls_files,
        tls_bundle.ca.cert_pem,
        routes={"/validate/slow": handlers.slow, "/validate/quick": handlers.quick},
        runner=runner,
    )
    try:
        yield webhook, handlers
    finally:
        handlers.release.set()
        await stop_webhook(webhook)


async def test_a_review_past_its_deadline_is_refused_with_a_reason_and_the_server_keeps_serving(
    slow_webhook: tuple[Webhook, CpuBoundHandlers], tls_bundle: SelfSignedBundle
) -> None:
    webhook, handlers = slow_webhook
    probes = HealthProbes(webhook, tls_bundle.ca.cert_pem)
    large = review(wide_trainjob("large", overrides=8, env=64))  # over the 16 KiB judged inline
    response, seconds = await _timed_review(webhook, "/validate/slow", large)
    assert seconds < handlers.slow_seconds  # answered at the deadline, not when the handler ended
    assert response["allowed"] is False
    assert response["status"] == {
        "code": 504,
        "reason": "Timeout",
        "message": "trainyard webhook could not finish reviewing TrainJob team-a/large within its 0.5s "
        "deadline: the object is too large to judge in time (for a TrainJob: its podTemplateOverrides, "
        "runtimePatches and their env lists), or the webhook is busy with other large reviews; "
        "make the object smaller, or retry",
    }
    # a small review meanwhile waits for the worker rather than running beside the slow one
    small = await webhook.admit("/validate/quick", review(wide_trainjob("small", overrides=1, env=1)))
    latencies = await probes.finish()
    assert latencies
    assert max(latencies) < PROBE_BUDGET, latencies
    handlers.release.set()
    while len(handlers.ran) < (2 if small["allowed"] else 1):
        await asyncio.sleep(0.01)
    ran = sorted(handlers.ran, key=lambda entry: entry[1])
    assert all(earlier[2] <= later[1] for earlier, later in itertools.pairwise(ran)), ran
    # once the worker is free, small reviews are judged inline again
    assert (await webhook.admit("/validate/quick", review(wide_trainjob("after", overrides=1, env=1))))["allowed"]
