"""The engine holds only live workloads during a run: completed jobs are forgotten."""

from __future__ import annotations

from scheduler.engine import WorkloadState
from simulations.scenarios import build
from simulations.simulator import Simulation
from tests.simulations.simulation_support import small_scenario


def test_completed_jobs_leave_the_engine_and_the_run_is_unchanged() -> None:
    built = build(small_scenario())
    simulation = Simulation(built, seed=3)
    seen_live: list[int] = []
    engine = simulation.driver.engine

    def progress(gone: int, total: int, now: float) -> None:
        live = [w for w in engine.workloads.values() if w.state is not WorkloadState.FINISHED]
        assert len(live) == len(engine.workloads), "a finished workload stayed in the engine's table"
        seen_live.append(len(engine.workloads))

    simulation.progress = progress
    result = simulation.run()
    assert result.invariants_held
    jobs = result.summary["jobs"]
    assert jobs["finished"] > 0
    assert max(seen_live) > 0
    # what is left is exactly the jobs that never finished
    assert len(engine.workloads) == jobs["unfinished"] == built.job_count - jobs["finished"]
    # the same seed without the progress hook decides the same things
    again = Simulation(build(small_scenario()), seed=3).run()
    assert again.summary == result.summary
