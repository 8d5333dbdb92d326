"""`trainyard serve controller` and `trainyard serve` as processes against the fake API server:
the controllers admit, /metrics shows Kueue's metrics, and of two replicas exactly one admits."""

from __future__ import annotations

import asyncio
import signal
import socket
import ssl

import aiohttp
import pytest
from fakeapi.fixtures import FakeApi
from process_support import trainyard
from queue_support import Reader, is_admitted, seed_queues, trainjob

from tests.eventually import eventually


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def controller_args(fake_api: FakeApi, identity: str, port: int) -> list[str]:
    return [
        "serve",
        "controller",
        "--kubeconfig",
        str(fake_api.kubeconfig),
        "--host",
        "127.0.0.1",
        "--metrics-port",
        str(port),
        "--lease-namespace",
        "default",
        "--identity",
        identity,
    ]


async def _admitted(reader: Reader, name: str) -> bool:
    return is_admitted(await reader.workload_of(name))


@pytest.mark.slow
async def test_serve_controller_admits_and_serves_kueue_metrics(fake_api: FakeApi) -> None:
    seed_queues(fake_api, cpu=4)
    fake_api.server.seed(trainjob("llm", nodes=2))
    reader = Reader(fake_api)
    port = _free_port()
    try:
        async with trainyard(*controller_args(fake_api, "solo", port)), aiohttp.ClientSession() as http:
            await eventually(lambda: _admitted(reader, "llm"), timeout=60, what="the admission")

            async def metrics() -> str:
                async with http.get(f"http://127.0.0.1:{port}/metrics") as answer:
                    text = await answer.text()
                # the gauges are set at the end of the cycle, just after its writes
                return text if 'kueue_admitted_active_workloads{cluster_queue="cq"} 1.0' in text else ""

            text = await eventually(metrics, timeout=30, what="/metrics")
            holder = await _holder(reader)
    finally:
        reader.close()
    assert 'kueue_quota_reserved_workloads_total{cluster_queue="cq"} 1.0' in text
    assert 'kueue_admitted_active_workloads{cluster_queue="cq"} 1.0' in text
    assert 'kueue_cluster_queue_resource_usage{cluster_queue="cq",flavor="default",resource="cpu"} 2.0' in text
    assert "kueue_admission_wait_time_seconds_bucket" in text
    assert holder == "solo"


@pytest.mark.slow
async def test_of_two_replicas_one_admits_and_the_other_takes_over(fake_api: FakeApi) -> None:
    seed_queues(fake_api, cpu=4)
    fake_api.server.seed(trainjob("first", nodes=1))
    reader = Reader(fake_api)
    try:
        async with (
            trainyard(*controller_args(fake_api, "a", _free_port())) as a,
            trainyard(*controller_args(fake_api, "b", _free_port())) as b,
        ):
            await eventually(lambda: _admitted(reader, "first"), timeout=60, what="the first admission")
            holder = await _holder(reader)
            leader, standby = (a, b) if holder == "a" else (b, a)
            leader.send_signal(signal.SIGTERM)  # releases the lease on the way out
            await asyncio.wait_for(leader.wait(), 20)
            fake_api.server.seed(trainjob("second", nodes=1))
            await eventually(lambda: _admitted(reader, "second"), timeout=60, what="the standby admitting")
            assert standby.returncode is None
            assert await _holder(reader) == ("b" if holder == "a" else "a")
    finally:
        reader.close()


async def _holder(reader: Reader) -> str:
    import kubernetes

    leases = kubernetes.client.CoordinationV1Api(reader.api)
    lease = await asyncio.to_thread(leases.read_namespaced_lease, "trainyard-controller", "default")
    return str(lease.spec.holder_identity)  # type: ignore[union-attr]


@pytest.mark.slow
async def test_serve_runs_the_webhook_and_the_controllers_in_one_process(fake_api: FakeApi) -> None:
    seed_queues(fake_api, cpu=4)
    fake_api.server.seed(trainjob("llm", nodes=1))
    reader = Reader(fake_api)
    port = _free_port()
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    args = [
        "serve",
        "--self-signed",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--kubeconfig",
        str(fake_api.kubeconfig),
    ]
    try:
        async with (
            trainyard(*args, "--no-leader-elect"),
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as http,
        ):
            await eventually(lambda: _admitted(reader, "llm"), timeout=60, what="the admission")

            async def metrics() -> str:
                try:
                    async with http.get(f"https://127.0.0.1:{port}/metrics") as answer:
                        return await answer.text()
                except aiohttp.ClientError:
                    return ""

            text = await eventually(metrics, timeout=30, what="/metrics")
    finally:
        reader.close()
    assert "# TYPE trainyard_webhook_requests" in text  # one /metrics serves both
    assert 'kueue_quota_reserved_workloads_total{cluster_queue="cq"} 1.0' in text
