"""`trainyard bench dashboard`: the dashboard's server time per page at Kueue's large scale.

The Queues and Jobs pages are served over kueue-large (1,000 ClusterQueues in 10 cohorts and
50,000 workloads, settled by the engine first: ``load_s``, reported apart), the Topology page
over gpu-10k's 10,240 nodes with a few thousand gangs admitted on them (``topology_load_s``).
Each page is asked for over loopback HTTP, as a browser asks; a figure is the server's own time
for the page (its ``Server-Timing`` header), the median of ``--repeat`` requests after a first
one (``*_first_ms``: the first after the server started). Starting, the server works out what
the pages read first (the queue summaries, the jobs' rows, the nodes' layout: ``start_s`` and
``topology_start_s``, reported apart, like loading the engine). Target: each ≤ 500 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from typing import Any


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5, help="requests per page after the first (default 5)")
    parser.add_argument(
        "--gangs", type=int, default=4000, help="gpu-10k jobs submitted for the topology (default 4000)"
    )


def _kueue_large(seed: int) -> Any:
    from dashboard import StaticQueues
    from simulations.engine_driver import EngineDriver
    from simulations.events import RandomStreams
    from simulations.scenarios import BUILTIN, build

    built = build(BUILTIN["kueue-large"])
    driver = EngineDriver()
    workloads = [driver.workload(job) for job in built.jobs(RandomStreams(seed))]
    return StaticQueues(built.objects, workloads)


def _gpu_10k(seed: int, gangs: int) -> Any:
    from itertools import islice

    from dashboard import StaticQueues
    from simulations.engine_driver import EngineDriver
    from simulations.events import RandomStreams
    from simulations.scenarios import BUILTIN, build

    built = build(BUILTIN["gpu-10k"])
    driver = EngineDriver()
    workloads = [driver.workload(job) for job in islice(built.jobs(RandomStreams(seed)), gangs)]
    return StaticQueues([*built.objects, *built.nodes], workloads)


async def _server_times(base: str, paths: list[str], repeat: int) -> dict[str, tuple[float, float]]:
    """path -> (first request's server ms, median of the next ``repeat``)."""
    import aiohttp

    found: dict[str, tuple[float, float]] = {}
    async with aiohttp.ClientSession() as session:
        for path in paths:
            times = []
            for _ in range(repeat + 1):
                async with session.get(base + path) as answer:
                    await answer.read()
                    if answer.status != 200:
                        raise RuntimeError(f"GET {path} answered {answer.status}")
                    timing = answer.headers["Server-Timing"]
                    times.append(float(timing.partition("dur=")[2]))
            found[path] = (times[0], statistics.median(times[1:]))
    return found


async def _measure(queues: Any, paths: list[str], repeat: int) -> tuple[float, dict[str, tuple[float, float]]]:
    """Seconds the server took to start (it works out what the pages read first), and the pages' times."""
    from dashboard import DashboardData, DashboardServer

    server = DashboardServer(DashboardData("benchmark", queues=queues))
    started = time.perf_counter()
    await server.start()
    warm_s = time.perf_counter() - started
    try:
        return warm_s, await _server_times(server.url, paths, repeat)
    finally:
        await server.stop()


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    large = _kueue_large(args.seed)
    state = large.load(now=0.0)
    load_s = time.perf_counter() - started
    gc.freeze()  # the loaded engine lives as long as the server, as in `trainyard dashboard --objects`
    queues = sorted(state.engine.cluster_queues())
    scale = {"cluster_queues": len(queues), "workloads": len(state.engine.all_workloads())}
    some_queue = queues[len(queues) // 2]
    pages = ["/queues", f"/queues?cq={some_queue}", "/jobs", "/jobs?status=Pending&offset=1000"]
    queues_warm_s, queue_times = asyncio.run(_measure(large, pages, args.repeat))
    del large, state
    gc.unfreeze()
    gc.collect()

    started = time.perf_counter()
    cluster = _gpu_10k(args.seed, args.gangs)
    state = cluster.load(now=0.0)
    topology_load_s = time.perf_counter() - started
    admitted = sorted(w.key for w in state.engine.all_workloads() if w.admission is not None and w.admission.placements)
    job = admitted[len(admitted) // 2] if admitted else ""
    topology_pages = ["/topology", f"/topology?job={job}"]
    topology_warm_s, topology_times = asyncio.run(_measure(cluster, topology_pages, args.repeat))

    def ms(times: dict[str, tuple[float, float]], path: str, which: int = 1) -> float:
        return round(times[path][which], 1)

    return {
        "queues_page_ms": max(ms(queue_times, pages[0]), ms(queue_times, pages[1])),
        "jobs_page_ms": max(ms(queue_times, pages[2]), ms(queue_times, pages[3])),
        "topology_page_ms": max(ms(topology_times, p) for p in topology_pages),
        "queues_page_first_ms": ms(queue_times, pages[0], 0),
        "jobs_page_first_ms": ms(queue_times, pages[2], 0),
        "topology_page_first_ms": ms(topology_times, topology_pages[0], 0),
        "pages": {
            path: {"first_ms": round(a, 1), "median_ms": round(b, 1)}
            for path, (a, b) in {**queue_times, **topology_times}.items()
        },
        **scale,
        "nodes": len(state.engine.nodes()),
        "topology_admitted_gangs": len(admitted),
        "load_s": round(load_s, 3),
        "start_s": round(queues_warm_s, 3),
        "topology_load_s": round(topology_load_s, 3),
        "topology_start_s": round(topology_warm_s, 3),
    }
