"""`trainyard bench webhook`: admission throughput and latency over loopback HTTPS.

The server (self-signed TLS, the test fixture objects) runs in its own process pinned to one
core where the OS allows; this process generates load from another core with an aiohttp client
over keep-alive TLS connections: a mix of valid and invalid TrainJob reviews on
/validate/trainjobs and /mutate/trainjobs. Latency is measured client-side per request, so it
includes TLS and HTTP.

``rps`` is wall-clock throughput, which on a busy machine also measures how much of its core the
server got. ``server_cpu_ms_per_request`` is the CPU time the server process spent per measured
request (read from /proc, Linux only), so ``1000 / server_cpu_ms_per_request`` is what one whole
core would sustain; compare the two to tell a slow server from a crowded machine.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
import uuid
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

FIXTURE_OBJECTS = Path(__file__).resolve().parents[2] / "tests" / "webhooks" / "fixtures" / "objects"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=10_000, help="reviews to send (default 10000)")
    parser.add_argument("--concurrency", type=int, default=8, help="connections / requests in flight (default 8)")
    parser.add_argument("--warmup", type=int, default=500, help="reviews sent before measuring (default 500)")
    parser.add_argument("--objects", type=Path, default=FIXTURE_OBJECTS, help="objects the server caches")
    parser.add_argument(
        "--profile", type=Path, default=None, help="write the server process's cProfile stats (CPU time) here"
    )


def _pin(*, first: bool) -> None:
    """The server on the first allowed core, the load generator on the last (when there are two)."""
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[0] if first else cores[-1]})


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process ``pid`` so far, from /proc (None where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _serve(objects: str, pipe: Connection, profile: str | None = None) -> None:
    import asyncio
    import cProfile
    import signal
    import tempfile

    from trainyard.event_loop import run_server
    from trainyard.gc_tuning import tune_for_large_heaps
    from webhooks.objects import ObjectCache, load_directory
    from webhooks.server import WebhookServer
    from webhooks.tls import self_signed, server_context

    _pin(first=True)  # one core, as the target says
    tune_for_large_heaps()  # the collector as `trainyard serve` sets it (a spawned child starts from defaults)

    async def main() -> None:
        cache = ObjectCache()
        load_directory(Path(objects), cache)
        bundle = self_signed(["localhost", "127.0.0.1"])
        with tempfile.TemporaryDirectory() as scratch:
            server = WebhookServer(cache, server_context(bundle.write(Path(scratch))), host="127.0.0.1", port=0)
            port = await server.start()
            pipe.send((port, bundle.ca.cert_pem))
            stop = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            await stop.wait()
            await server.stop()

    profiler = cProfile.Profile(time.process_time) if profile else None
    if profiler is not None:
        profiler.enable()
    run_server(main())  # the loop `trainyard serve` runs on
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(str(profile))


def _trainjob(
    name: str, labels: dict[str, str], gpus: int, nodes: int, runtime: str = "torch-distributed"
) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "team-a", "labels": labels},
        "spec": {
            "runtimeRef": {"name": runtime},
            "suspend": True,
            "trainer": {
                "numNodes": nodes,
                "resourcesPerNode": {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": str(gpus)}},
            },
        },
    }


def _reviews() -> list[tuple[str, dict[str, Any], bool]]:
    """(path, object, expected allowed): the mix the load cycles through."""
    queue = {"kueue.x-k8s.io/queue-name": "default"}
    return [
        ("/validate/trainjobs", _trainjob("fits", queue, 4, 2), True),
        ("/validate/trainjobs", _trainjob("fits-big", queue, 4, 4), True),
        ("/mutate/trainjobs", _trainjob("mutate", {}, 1, 1), True),
        ("/validate/trainjobs", _trainjob("too-big", queue, 4, 8), False),
        ("/validate/trainjobs", _trainjob("bad-queue", {"kueue.x-k8s.io/queue-name": "Bad_Q"}, 1, 1), False),
        ("/validate/trainjobs", _trainjob("no-runtime", queue, 1, 1, runtime="missing"), False),
        ("/validate/trainjobs", _trainjob("zero-nodes", queue, 1, 0), False),
        ("/validate/trainjobs", _trainjob("unqueued", {}, 1, 1), True),
    ]


def _body(obj: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": str(uuid.uuid4()),
                "kind": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"},
                "resource": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "resource": "trainjobs"},
                "name": obj["metadata"]["name"],
                "namespace": "team-a",
                "operation": "CREATE",
                "userInfo": {"username": "bench"},
                "object": obj,
                "dryRun": False,
            },
        }
    ).encode()


async def _load(
    port: int, ca_pem: bytes, requests: int, concurrency: int, warmup: int, server_pid: int | None = None
) -> dict[str, Any]:
    import asyncio

    import aiohttp

    from webhooks.tls import client_context

    mix = [(path, _body(obj), allowed) for path, obj, allowed in _reviews()]
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(ssl=client_context(ca_pem), limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        counter = iter(range(warmup + requests))

        async def worker() -> None:
            nonlocal errors
            for index in counter:
                path, body, expected = mix[index % len(mix)]
                started = time.perf_counter()
                try:
                    async with session.post(
                        f"https://localhost:{port}{path}", data=body, headers={"Content-Type": "application/json"}
                    ) as response:
                        document = await response.json(content_type=None)
                        ok = response.status == 200 and document["response"]["allowed"] is expected
                except (aiohttp.ClientError, ValueError, KeyError):
                    ok = False
                if index >= warmup:
                    latencies.append(time.perf_counter() - started)
                    errors += 0 if ok else 1

        # warm-up first (TLS handshakes, caches), then the measured run
        began = 0.0
        tasks = [asyncio.create_task(worker()) for _ in range(concurrency)]
        while len(latencies) == 0 and not all(task.done() for task in tasks):
            await asyncio.sleep(0.001)
        began = time.perf_counter()
        cpu_began = _cpu_seconds(server_pid) if server_pid is not None else None
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - began
        cpu_ended = _cpu_seconds(server_pid) if server_pid is not None else None
    latencies.sort()

    def percentile(q: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 3) if latencies else 0.0

    result: dict[str, Any] = {
        "requests": len(latencies),
        "rps": round(len(latencies) / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": percentile(0.50),
        "p99_ms": percentile(0.99),
        "errors": errors,
    }
    if cpu_began is not None and cpu_ended is not None and latencies:
        result["server_cpu_ms_per_request"] = round((cpu_ended - cpu_began) * 1000 / len(latencies), 3)
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio
    import signal

    from trainyard.cli.errors import UserError

    if args.requests < 1 or args.concurrency < 1:
        raise UserError("--requests and --concurrency must be at least 1")
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    profile = str(args.profile) if args.profile else None
    server = context.Process(target=_serve, args=(str(args.objects), child, profile), daemon=True)
    server.start()
    try:
        if not parent.poll(60):
            raise UserError("the webhook server process did not start within 60s")
        port, ca_pem = parent.recv()
        _pin(first=False)
        return asyncio.run(_load(port, ca_pem, args.requests, args.concurrency, args.warmup, server.pid))
    finally:
        if server.pid is not None and server.is_alive():
            os.kill(server.pid, signal.SIGTERM)
        server.join(10)
