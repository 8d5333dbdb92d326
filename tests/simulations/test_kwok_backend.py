"""`trainyard simulate --backend kwok` against the fake API server.

The fake server has no Kueue, Trainer or KWOK, so the test runs a small stand-in for them: for
each TrainJob the backend creates it writes the Workload Kueue would (owned by the TrainJob),
reserves quota for it at once, and marks it Finished after the pod-complete delay KWOK would
read from the pod template. The backend's own path is real: kubeconfig, object creation over
HTTP, submission on the wall clock, a Workload informer, and the metrics collector.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from fakeapi.fixtures import FakeApi, fake_api  # noqa: F401 (fixture)

from scheduler.kube import Informer, KubeClient
from simulations.cluster_spec import ClusterSpec, QueueSpec, TeamSpec
from simulations.events import RandomStreams
from simulations.kwok import POD_COMPLETE_DELAY_ANNOTATION
from simulations.kwok.cluster_run import _run
from simulations.scenarios import Scenario, build
from simulations.workloads import SyntheticWorkload

SCENARIO = Scenario(
    name="kwok-backend",
    cluster=ClusterSpec(zones=1, spines_per_zone=1, blocks_per_spine=1, nodes_per_block=4),
    queues=QueueSpec(teams=(TeamSpec("team-a", 0.5), TeamSpec("team-b", 0.5))),
    workload=SyntheticWorkload(jobs=6, mix="kalos", max_duration=600.0),
)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(kind: str, reason: str) -> dict[str, str]:
    return {"type": kind, "status": "True", "reason": reason, "message": reason, "lastTransitionTime": _now()}


def _duration_seconds(trainjob: dict[str, Any]) -> float:
    patch = trainjob["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    delay = patch["template"]["spec"]["template"]["metadata"]["annotations"][POD_COMPLETE_DELAY_ANNOTATION]
    return int(delay.removesuffix("ms")) / 1000


class StandIn:
    """What Kueue's TrainJob integration and KWOK's pod stages would do, reduced to the conditions."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube
        self.tasks: list[asyncio.Task[None]] = []
        self.seen: set[str] = set()

    def apply(self, document: dict[str, Any]) -> None:
        key = f"{document['metadata']['namespace']}/{document['metadata']['name']}"
        if key not in self.seen:
            self.seen.add(key)
            self.tasks.append(asyncio.create_task(self._run_job(document)))

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        """A deleted TrainJob is not run."""

    def mark_loaded(self) -> None:
        """Nothing waits for the first list."""

    async def _run_job(self, trainjob: dict[str, Any]) -> None:
        metadata = trainjob["metadata"]
        namespace, name = metadata["namespace"], f"trainjob-{metadata['name']}"
        owner = {"apiVersion": trainjob["apiVersion"], "kind": "TrainJob", "name": metadata["name"]}
        await self.kube.create(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "ownerReferences": [{**owner, "uid": metadata["uid"]}],
                },
                "spec": {
                    "queueName": "default",
                    "podSets": [
                        {
                            "name": "node",
                            "count": trainjob["spec"]["trainer"]["numNodes"],
                            "template": {"spec": {"containers": [{"name": "node", "image": "busybox"}]}},
                        }
                    ],
                },
            }
        )
        reserved = _condition("QuotaReserved", "QuotaReserved")
        await self.kube.patch("Workload", name, {"status": {"conditions": [reserved]}}, namespace, status=True)
        await asyncio.sleep(_duration_seconds(trainjob))
        finished = _condition("Finished", "Succeeded")
        await self.kube.patch(
            "Workload", name, {"status": {"conditions": [reserved, finished]}}, namespace, status=True
        )

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        results = await asyncio.gather(*self.tasks, return_exceptions=True)
        failed = [r for r in results if isinstance(r, Exception) and not isinstance(r, asyncio.CancelledError)]
        assert not failed, f"the stand-in's writes were refused: {failed}"


async def test_kwok_backend_submits_trainjobs_and_collects_metrics(fake_api: FakeApi) -> None:  # noqa: F811
    built = build(SCENARIO)
    jobs = list(built.jobs(RandomStreams(1)))
    # Squeeze the whole scenario into about three wall-clock seconds.
    horizon = max(job.submit_time + job.duration for job in jobs)
    speedup = horizon / 3.0
    api_client = await fake_api.api_client()
    async with api_client:
        kube = KubeClient(api_client)
        stand_in = StandIn(kube)
        watcher = asyncio.create_task(Informer(kube, "TrainJob", stand_in).run())
        try:
            summary = await _run(built, fake_api.kubeconfig, seed=1, timeout=30.0, speedup=speedup)
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            await stand_in.stop()
        created = await kube.list("TrainJob")
        nodes = await kube.list("Node")
        queues = await kube.list("ClusterQueue")
    assert summary["backend"] == "kwok"
    assert summary["jobs"]["submitted"] == summary["jobs"]["finished"] == len(jobs)
    assert summary["unfinished_jobs"] == []
    assert {item["metadata"]["name"] for item in created.items} == {job.name for job in jobs}
    assert len(nodes.items) == len(built.node_documents)
    assert {q["metadata"]["name"] for q in queues.items} == {o.name for o in built.objects if o.kind == "ClusterQueue"}
    # Times come back in the scenario's clock; condition stamps have one-second resolution.
    slack = 2 * speedup
    assert summary["completion_seconds"]["max"] == pytest.approx(
        max(job.duration for job in jobs), abs=slack + 0.05 * horizon
    )
    assert summary["queue_wait_seconds_all"]["p99"] <= slack


def test_speedup_divides_submit_times_and_durations() -> None:
    from simulations.kwok.export import exported_jobs

    built = build(SCENARIO)
    plain = list(exported_jobs(built, 1))
    fast = list(exported_jobs(built, 1, speedup=10.0))
    assert [dataclasses.replace(j, submit_time=j.submit_time / 10, duration=j.duration / 10) for j in plain] == fast
    with pytest.raises(ValueError, match="speedup must be > 0"):
        list(exported_jobs(built, 1, speedup=0))


def test_cli_backend_kwok_needs_a_kubeconfig(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from trainyard.cli.main import main

    assert main(["simulate", "--backend", "kwok", "--scenario", "gpu-1k"]) == 2
    assert "--backend kwok needs --kubeconfig" in capsys.readouterr().err
