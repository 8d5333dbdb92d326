"""`--backend kwok --controllers trainyard`: trainyard's own controllers admit on a "KWOK cluster".

The cluster is a ``Sandbox`` with KWOK's stages and the JobSet/Job/binder stand-ins but no
admission controller of its own (no Kueue, no trainyard), on its own thread, reached only
through its kubeconfig as a real KWOK cluster would be.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from sandbox.embedded import Sandbox
from simulations.cluster_spec import ClusterSpec
from simulations.scenarios import IMMEDIATE_STAGES_DIR, Scenario, build
from simulations.workloads import SyntheticWorkload
from trainyard.cli.main import main
from trainyard.cli.simulate.sandbox_backend import run_kwok_trainyard

SMALL = Scenario(
    name="kwok-small",
    cluster=ClusterSpec(zones=1, spines_per_zone=1, blocks_per_spine=1, nodes_per_block=4),
    workload=SyntheticWorkload(jobs=8, mix="kalos", load=1.0, max_duration=600.0),
    stages=(IMMEDIATE_STAGES_DIR,),
)


class KwokClusterThread:
    """A sandbox without controllers on its own loop: the "real KWOK cluster" of the test."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.kubeconfig = Path()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with Sandbox(self.scenario, webhook=False, controllers=False, heartbeat_seconds=None) as sandbox:
            self.kubeconfig = sandbox.kubeconfig_path
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> KwokClusterThread:
        self._thread.start()
        assert self._ready.wait(60), "the sandbox did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


def test_trainyard_controllers_run_a_scenario_on_a_kwok_cluster_without_kueue() -> None:
    built = build(SMALL)
    with KwokClusterThread(SMALL) as cluster:
        summary = run_kwok_trainyard(built, cluster.kubeconfig, seed=1, timeout=120.0, speedup=600.0)
    assert summary["controllers"] == "trainyard"
    jobs = summary["jobs"]
    assert jobs["submitted"] == 8
    # every job that can fit on 4 nodes was admitted by trainyard's queue controller and finished
    assert jobs["admitted"] == jobs["finished"] >= 6, jobs


def test_controllers_trainyard_needs_a_kubeconfig(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--backend", "kwok", "--controllers", "trainyard"]) != 0
    assert "--backend kwok needs --kubeconfig PATH" in capsys.readouterr().err


def test_controllers_trainyard_names_an_unreadable_kubeconfig(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("not: [a kubeconfig")
    code = main(["simulate", "--backend", "kwok", "--controllers", "trainyard", "--kubeconfig", str(broken)])
    assert code != 0
    error = capsys.readouterr().err
    assert "--kubeconfig" in error
    assert "Traceback" not in error
