"""What a run measured: per job, over time, and summarised.

Time-weighted figures (allocation, borrowing, fair share) integrate exactly between changes;
the sampled time series exist for the plots. Percentiles are nearest-rank on the recorded
values (numpy ``method="inverted_cdf"``), so a p99 is a real job's wait.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(slots=True, init=False)
class JobRecord:
    cluster_queue: str
    gpus: int
    submitted: float
    admitted: float | None
    running: float | None
    finished: float | None
    preemptions: int
    evictions: int

    # mypyc: CONTRIBUTING.md
    def __init__(
        self,
        cluster_queue: str,
        gpus: int,
        submitted: float,
        admitted: float | None = None,
        running: float | None = None,
        finished: float | None = None,
        preemptions: int = 0,
        evictions: int = 0,
    ) -> None:
        self.cluster_queue = cluster_queue
        self.gpus = gpus
        self.submitted = submitted
        self.admitted = admitted
        self.running = running
        self.finished = finished
        self.preemptions = preemptions
        self.evictions = evictions


@dataclass
class Sample:
    time: float
    allocated: int
    pending: dict[str, int]
    borrowed: dict[str, int]
    fragmented: int
    preempted: int = 0  # preemptions so far, warm-up included (for the plots)


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"count": 0, "mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    array = np.asarray(values, dtype=float)
    p50, p95, p99 = np.percentile(array, [50, 95, 99], method="inverted_cdf")
    return {
        "count": len(values),
        "mean": round(float(array.mean()), 3),
        "p50": round(float(p50), 3),
        "p95": round(float(p95), 3),
        "p99": round(float(p99), 3),
        "max": round(float(array.max()), 3),
    }


@dataclass
class MetricsRecorder:
    """Receives the simulator's events; knows nothing of how decisions were made."""

    capacity: int  # units of the primary resource (GPUs, or CPU for the Kueue perf scenarios)
    nominal: dict[str, int]  # ClusterQueue -> nominal quota of the primary resource
    unit: str = "GPUs"
    warmup: float = 0.0  # seconds at the start left out of every figure (steady-state scenarios)
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    tiers: Counter[str] = field(default_factory=Counter)
    tier_gaps: Counter[int] = field(default_factory=Counter)
    preemption_reasons: Counter[str] = field(default_factory=Counter)
    eviction_reasons: Counter[str] = field(default_factory=Counter)
    allocated: int = 0
    usage: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    pending: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    _last_time: float = 0.0
    _allocated_area: float = 0.0
    _usage_area: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    _borrowed_area: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    _fragmented_samples: list[tuple[float, int, int]] = field(default_factory=list)
    _awaiting_fragmented: list[tuple[Sample, int]] = field(default_factory=list)
    end_time: float = 0.0
    preempted_total: int = 0

    def advance(self, now: float) -> None:
        if now <= self._last_time:
            return
        span = now - max(self._last_time, self.warmup)  # nothing before the warm-up ends counts
        if span > 0:
            self._allocated_area += self.allocated * span
            nominal = self.nominal
            for cq, amount in self.usage.items():
                if amount:
                    self._usage_area[cq] += amount * span
                    over = amount - nominal.get(cq, 0)
                    if over > 0:  # only a queue using something can use more than its nominal
                        self._borrowed_area[cq] += over * span
        self._last_time = now

    def submitted(self, key: str, cluster_queue: str, gpus: int, now: float) -> None:
        record = self.jobs.get(key)
        if record is None:
            self.jobs[key] = JobRecord(cluster_queue, gpus, now)
        self.pending[cluster_queue] += 1

    def admitted(self, key: str, amount: int, now: float) -> None:
        self.advance(now)
        record = self.jobs[key]
        if record.admitted is None:
            record.admitted = now
        self.pending[record.cluster_queue] -= 1
        self.allocated += amount
        self.usage[record.cluster_queue] += amount

    def placement(self, level: str, gap: int | None) -> None:
        self.tiers[level] += 1
        if gap is not None:
            self.tier_gaps[gap] += 1

    def running(self, key: str, now: float) -> None:
        record = self.jobs[key]
        if record.running is None:
            record.running = now

    def released(self, key: str, amount: int, now: float, *, requeued: bool) -> None:
        self.advance(now)
        record = self.jobs[key]
        self.allocated -= amount
        self.usage[record.cluster_queue] -= amount
        if requeued:
            self.pending[record.cluster_queue] += 1
        else:
            record.finished = now

    def preempted(self, key: str, reason: str, now: float = 0.0) -> None:
        self.jobs[key].preemptions += 1
        self.preempted_total += 1
        if now >= self.warmup:
            self.preemption_reasons[reason] += 1

    def evicted(self, key: str, reason: str, now: float = 0.0) -> None:
        self.jobs[key].evictions += 1
        if now >= self.warmup:
            self.eviction_reasons[reason] += 1

    def measured(self, record: JobRecord) -> bool:
        """Whether a job counts in the wait and completion figures: submitted after the warm-up."""
        return record.submitted >= self.warmup

    def sample(self, now: float, fragmented: int | None = None) -> None:
        """Record the moment's figures; a fragmentation figure not given now comes later, in
        order, through ``observed`` (the simulator's observers may run in another process)."""
        self.advance(now)
        borrowed = {cq: max(0, used - self.nominal.get(cq, 0)) for cq, used in self.usage.items()}
        sample = Sample(now, self.allocated, dict(self.pending), borrowed, fragmented or 0, self.preempted_total)
        self.samples.append(sample)
        free = self.capacity - self.allocated
        self._fragmented_samples.append((now, fragmented or 0, free))
        if fragmented is None:
            self._awaiting_fragmented.append((sample, len(self._fragmented_samples) - 1))

    def observed(self, fragmented: list[int], tiers: Counter[str], tier_gaps: Counter[int]) -> None:
        """The observers' findings: one fragmentation figure per sample that awaited one (in
        order), and the placement tiers reached."""
        if len(fragmented) != len(self._awaiting_fragmented):
            raise ValueError(f"{len(fragmented)} fragmentation figures for {len(self._awaiting_fragmented)} samples")
        for (sample, position), figure in zip(self._awaiting_fragmented, fragmented, strict=True):
            sample.fragmented = figure
            now, _, free = self._fragmented_samples[position]
            self._fragmented_samples[position] = (now, figure, free)
        self._awaiting_fragmented = []
        self.tiers.update(tiers)
        self.tier_gaps.update(tier_gaps)

    def wait_times(self) -> dict[str, list[float]]:
        waits: dict[str, list[float]] = defaultdict(list)
        for record in self.jobs.values():
            if record.admitted is not None and record.submitted >= self.warmup:
                waits[record.cluster_queue].append(record.admitted - record.submitted)
        return dict(waits)

    def summary(self) -> dict[str, Any]:
        self.advance(self.end_time)
        horizon = (self.end_time - self.warmup if self.warmup else self.end_time) or 1.0
        queues = sorted({r.cluster_queue for r in self.jobs.values()} | set(self.nominal))
        waits: dict[str, list[float]] = {q: [] for q in queues}
        completion: list[float] = []
        for record in self.jobs.values():
            if record.submitted < self.warmup:
                continue
            if record.admitted is not None:
                waits[record.cluster_queue].append(record.admitted - record.submitted)
            if record.finished is not None:
                completion.append(record.finished - record.submitted)
        fragmented = [f / free for t, f, free in self._fragmented_samples if free > 0 and t >= self.warmup]
        gaps = sum(self.tier_gaps.values())
        finished = sum(1 for r in self.jobs.values() if r.finished is not None)
        admitted = sum(1 for r in self.jobs.values() if r.admitted is not None)
        return {
            **self._window(horizon),
            "unit": self.unit,
            "capacity": self.capacity,
            "virtual_seconds": round(self.end_time, 3),
            "jobs": {
                "submitted": len(self.jobs),
                "admitted": admitted,
                "finished": finished,
                "unfinished": len(self.jobs) - finished,
                # never admitted: absent from every wait percentile; listed with reasons in never_ran
                "never_ran": len(self.jobs) - admitted,
            },
            "allocation": {
                "mean_fraction": round(self._allocated_area / (self.capacity * horizon), 4) if self.capacity else None,
                "mean": round(self._allocated_area / horizon, 3),
            },
            "queue_wait_seconds": {q: percentiles(w) for q, w in waits.items()},
            "queue_wait_seconds_all": percentiles([w for ws in waits.values() for w in ws]),
            "completion_seconds": percentiles(completion),
            "fragmentation": {
                "mean_fraction_of_free": round(float(np.mean(fragmented)), 4) if fragmented else 0.0,
                "samples": len(self._fragmented_samples),
            },
            "preemptions": {"total": sum(self.preemption_reasons.values()), **dict(self.preemption_reasons)},
            "evictions": {"total": sum(self.eviction_reasons.values()), **dict(self.eviction_reasons)},
            "borrowing_mean": {q: round(self._borrowed_area.get(q, 0.0) / horizon, 3) for q in queues},
            "fair_share": self._fair_share(queues),
            "placement": {
                "tiers": dict(sorted(self.tiers.items())),
                "gap_vs_t_star": {str(k): v for k, v in sorted(self.tier_gaps.items())},
                "optimal_fraction": round(self.tier_gaps.get(0, 0) / gaps, 4) if gaps else None,
            },
        }

    def _window(self, measured: float) -> dict[str, Any]:
        if not self.warmup:
            return {}
        return {
            "window": {
                "warmup_seconds": self.warmup,
                "measured_seconds": round(measured, 3),
                "jobs_submitted_in_warmup": sum(1 for r in self.jobs.values() if r.submitted < self.warmup),
                "note": "the warm-up is left out of allocation, borrowing, fair share, fragmentation, "
                "preemption and eviction counts, and its jobs out of the wait and completion figures",
            }
        }

    def _fair_share(self, queues: list[str]) -> dict[str, dict[str, float | None]]:
        """Each queue's share of the GPU-seconds used against its share of the nominal quota."""
        total_usage = sum(self._usage_area.values()) or 1.0
        total_nominal = sum(self.nominal.values()) or 1
        fair_share: dict[str, dict[str, float | None]] = {}
        for q in queues:
            share = self._usage_area.get(q, 0.0) / total_usage
            entitled = self.nominal.get(q, 0) / total_nominal
            fair_share[q] = {
                "share_of_use": round(share, 4),
                "nominal_share": round(entitled, 4),
                "ratio": round(share / entitled, 4) if entitled else None,
            }
        return fair_share
