"""The run's observers report the same findings whether they run in the loop's process or in a
forked second one, and a second process that fails is reported, not waited on."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import threading
from collections import Counter

import pytest

from simulations.cluster_spec import ClusterSpec
from simulations.errors import ObserverProcessError, SimulationInputError
from simulations.observers import (
    MODE_ENV,
    PROCESS_FROM_JOBS,
    ObserverProcess,
    Observers,
    choose_mode,
)
from simulations.scenarios import BENCH_SCENARIO, FailureSpec, Scenario, build
from simulations.simulator import Simulation
from trainyard.benchmarks.decision_hash import decision_hash


def _small_bench(jobs: int = 1500) -> Scenario:
    assert BENCH_SCENARIO.workload is not None
    return dataclasses.replace(
        BENCH_SCENARIO,
        cluster=ClusterSpec(zones=1, spines_per_zone=2, blocks_per_spine=4, nodes_per_block=25),
        workload=dataclasses.replace(BENCH_SCENARIO.workload, jobs=jobs),
        sample_seconds=600.0,
    )


def test_second_process_reports_what_the_loop_would() -> None:
    inline = Simulation(build(_small_bench()), 1, observers="inline").run()
    forked = Simulation(build(_small_bench()), 1, observers="process").run()
    assert inline.invariants["checked_admissions"] >= 1500  # preempted gangs are admitted again
    assert forked.invariants == inline.invariants
    assert forked.summary == inline.summary
    assert [s.fragmented for s in forked.samples] == [s.fragmented for s in inline.samples]
    assert any(s.fragmented for s in inline.samples)  # the comparison covers real figures
    assert decision_hash(forked) == decision_hash(inline)


def test_auto_keeps_small_runs_and_live_ledgers_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODE_ENV, raising=False)
    small = build(_small_bench(100))
    assert choose_mode("auto", small) == "inline"
    assert choose_mode("process", small) == "process"
    failing = build(
        dataclasses.replace(_small_bench(100), failures=FailureSpec(node_mtbf_hours=100.0, repair_seconds=600.0))
    )
    assert choose_mode("auto", failing) == "inline"
    with pytest.raises(SimulationInputError, match="node failures read the ledger live"):
        choose_mode("process", failing)
    large = build(_small_bench(PROCESS_FROM_JOBS))
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    # the affinity is read through the os module, so the compiled module sees the stand-in too
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert choose_mode("auto", large) == "process"
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})  # pinned to one core: no gain
    assert choose_mode("auto", large) == "inline"
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(threading, "active_count", lambda: 3)  # forking beside threads: unsafe
    assert choose_mode("auto", large) == "inline"
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())  # a pool's worker
    assert choose_mode("auto", large) == "inline"
    monkeypatch.setenv(MODE_ENV, "sideways")
    with pytest.raises(SimulationInputError, match=f"environment: {MODE_ENV}: 'sideways': expected auto"):
        choose_mode("auto", small)
    monkeypatch.setenv(MODE_ENV, "inline")
    assert choose_mode("process", small) == "inline"


def test_a_failing_second_process_is_reported_with_its_traceback() -> None:
    built = build(_small_bench(10))
    runner = ObserverProcess(Observers(built))
    runner.released("never-admitted")  # harmless: nothing is charged to it
    runner.sample(Counter({(8, 8, 1): 1}))
    runner._post(("admitted", "bad", None))  # a malformed message: the child raises on it
    with pytest.raises(ObserverProcessError, match=r"observer process failed:\n(.|\n)*Traceback"):
        runner.finish()
