"""The embedded simulator beside the sandbox: the same scenario, decision by decision.

``simulate_recorded(built, seed)`` runs the embedded simulator and keeps every decision it
played out (admissions with cluster queue, flavors and nodes; preemptions and evictions) at its
virtual time. ``compare(sim, sandbox)`` puts that beside the sandbox's ``RunRecord``: per job,
whether the two decision sequences are the same (``decisions_equal_pct``), the admission order,
and the metrics both runs report (per-queue waits, allocation, preemptions).

``comparable(scenario)`` is the scenario as both runs get it: KWOK stages without jitter
(pods ready at once, complete after their duration), so neither run rolls dice the other
cannot roll in the same order, and a difference is a difference of decisions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from sandbox.compare.records import Decision, RunRecord
from simulations.engine_driver import Admitted, Removed
from simulations.errors import SimulationInputError
from simulations.scenarios import IMMEDIATE_STAGES_DIR, BuiltScenario, Scenario
from simulations.simulator import Simulation, SimulationResult


def comparable(scenario: Scenario) -> Scenario:
    """``scenario`` with jitter-free KWOK stages; refused where the sandbox run cannot follow it."""
    if scenario.failures is not None:
        raise SimulationInputError(
            f"scenario {scenario.name}",
            None,
            "failures",
            "--backend sandbox does not inject node failures; remove `failures` from the scenario to compare it",
        )
    if scenario.pods_ready_timeout is not None:
        raise SimulationInputError(
            f"scenario {scenario.name}",
            None,
            "waitForPodsReady",
            "--backend sandbox runs the controllers on the wall clock, so pods-ready timeouts cannot line up "
            "with virtual time; remove `waitForPodsReady` to compare it",
        )
    if scenario.kueue_perf is not None:
        raise SimulationInputError(
            f"scenario {scenario.name}",
            None,
            "",
            "Kueue's perf scenarios submit bare Workloads, not TrainJobs; compare a GPU scenario "
            "(gpu-1k or a scenario file with a cluster and a workload)",
        )
    return dataclasses.replace(scenario, stages=(IMMEDIATE_STAGES_DIR,))


def _nodes(decision: Admitted) -> tuple[str, ...]:
    return tuple(sorted(decision.nodes)) if decision.placed else ()


class _Recorder:
    """The simulator's two effects, observed: the decisions it acts on are exactly these calls."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record

    def admitted(self, decision: Admitted, now: float) -> None:
        flavors = tuple(sorted(decision.flavors.items()))
        self.record.add(decision.key, Decision(now, "admitted", decision.cluster_queue, flavors, _nodes(decision)))

    def removed(self, removed: Removed, now: float, preempted: bool) -> None:
        # called only for a running gang, as only a running gang is taken back
        self.record.add(removed.key, Decision(now, "preempted" if preempted else "evicted"))


def simulate_recorded(built: BuiltScenario, seed: int = 1) -> tuple[SimulationResult, RunRecord]:
    """Run the embedded simulator and keep each decision it played out, at its virtual time."""
    record = RunRecord()
    simulation = Simulation(built, seed, played=_Recorder(record))
    result = simulation.run()
    for job in result.never_ran:
        if job["never_fits"]:
            # the engine's "can never fit" is what the validating webhook refuses a TrainJob for
            key = str(job["job"])
            submitted = simulation.metrics.jobs[key].submitted
            record.add(key, Decision(submitted, "refused", reason=str(job["reason"])))
    record.summary = result.summary
    record.jobs = list(simulation.metrics.jobs)
    record.wall_seconds = result.wall_seconds
    record.cycles = result.cycles
    return result, record


@dataclass
class Comparison:
    jobs: int
    decisions_equal: int
    order_equal: int  # positions of the admission order where both runs admitted the same job
    admissions: tuple[int, int]  # (simulator, sandbox)
    first_difference: dict[str, Any] | None
    differing: list[str] = field(default_factory=list)
    with_time: bool = True
    skew: tuple[float, float] = (0.0, 0.0)  # (mean, max) |virtual time difference| of first admissions
    refused: tuple[int, int] = (0, 0)  # jobs that can never fit: (simulator's engine says so, webhook refused)

    @property
    def decisions_equal_pct(self) -> float:
        return round(100.0 * self.decisions_equal / self.jobs, 2) if self.jobs else 100.0

    @property
    def order_equal_pct(self) -> float:
        longest = max(self.admissions)
        return round(100.0 * self.order_equal / longest, 2) if longest else 100.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "decisions_equal": self.decisions_equal,
            "decisions_equal_pct": self.decisions_equal_pct,
            "admission_order_equal_pct": self.order_equal_pct,
            "admissions": {"simulator": self.admissions[0], "sandbox": self.admissions[1]},
            "refused_never_fit": {"simulator": self.refused[0], "sandbox": self.refused[1]},
            "times_compared": self.with_time,
            "admission_time_skew_seconds": {"mean": round(self.skew[0], 3), "max": round(self.skew[1], 3)},
            "first_difference": self.first_difference,
            "differing_jobs": self.differing[:20],
        }


def _describe(decisions: list[Decision]) -> list[str]:
    out = []
    for d in decisions:
        text = f"{d.kind} at {d.time:.1f}s" + (f" ({d.reason})" if d.reason else "")
        if d.kind == "admitted":
            flavors = ",".join(f"{r}={f}" for r, f in d.flavors)
            text += f" in {d.cluster_queue} [{flavors}]"
            if d.nodes:
                text += f" on {len(d.nodes)} pods' nodes {d.nodes[0]}…" if len(d.nodes) > 1 else f" on {d.nodes[0]}"
        out.append(text)
    return out


def compare(simulator: RunRecord, sandbox: RunRecord, jobs: list[str], *, with_time: bool = True) -> Comparison:
    """Job by job: the same decisions in the same order (and, in lockstep, at the same instants)."""
    equal = 0
    differing: list[str] = []
    first: dict[str, Any] | None = None
    first_time = float("inf")
    for key in jobs:
        mine, theirs = simulator.decisions.get(key, []), sandbox.decisions.get(key, [])
        same = len(mine) == len(theirs) and all(
            a.same_as(b, with_time=with_time) for a, b in zip(mine, theirs, strict=True)
        )
        if same:
            equal += 1
            continue
        differing.append(key)
        when = min([d.time for d in mine[:1] + theirs[:1]] or [0.0])
        if when < first_time:
            first_time = when
            first = {"job": key, "simulator": _describe(mine), "sandbox": _describe(theirs)}
    skews = [
        abs(mine[0].time - theirs[0].time)
        for key in jobs
        for mine, theirs in [(simulator.decisions.get(key, []), sandbox.decisions.get(key, []))]
        if mine and theirs and mine[0].kind == theirs[0].kind == "admitted"
    ]
    order_equal = sum(1 for a, b in zip(simulator.admissions, sandbox.admissions, strict=False) if a == b)
    return Comparison(
        jobs=len(jobs),
        decisions_equal=equal,
        order_equal=order_equal,
        admissions=(len(simulator.admissions), len(sandbox.admissions)),
        first_difference=first,
        differing=differing,
        with_time=with_time,
        skew=(sum(skews) / len(skews), max(skews)) if skews else (0.0, 0.0),
        refused=(_refused(simulator), _refused(sandbox)),
    )


def _refused(record: RunRecord) -> int:
    return sum(1 for listed in record.decisions.values() if any(d.kind == "refused" for d in listed))


def side_by_side(simulator: dict[str, Any], sandbox: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(metric, simulator, sandbox) rows of the two runs' summaries: the report's main figures."""
    rows: list[tuple[str, Any, Any]] = []
    paths: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("jobs submitted", ("jobs", "submitted")),
        ("jobs admitted", ("jobs", "admitted")),
        ("jobs finished", ("jobs", "finished")),
        ("virtual seconds", ("virtual_seconds",)),
        ("allocation (mean fraction)", ("allocation", "mean_fraction")),
        ("preemptions", ("preemptions", "total")),
        ("wait p50 s (all)", ("queue_wait_seconds_all", "p50")),
        ("wait p95 s (all)", ("queue_wait_seconds_all", "p95")),
        ("wait mean s (all)", ("queue_wait_seconds_all", "mean")),
    )
    for label, path in paths:
        rows.append((label, _dig(simulator, path), _dig(sandbox, path)))
    queues = sorted(set(simulator.get("queue_wait_seconds") or {}) | set(sandbox.get("queue_wait_seconds") or {}))
    for queue in queues:
        for stat in ("p50", "mean"):
            path = ("queue_wait_seconds", queue, stat)
            rows.append((f"wait {stat} s {queue}", _dig(simulator, path), _dig(sandbox, path)))
    return rows


def _dig(document: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = document
    for part in path:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value
