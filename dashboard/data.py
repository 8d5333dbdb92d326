"""Everything a page reads, in one place: the queues, the cluster's objects, local runs, simulations.

Which parts exist depends on how the dashboard runs: against a cluster (objects, events and
logs, the queues from a cache or the controllers' own engine), on files (the queues only), on
the local run store, or any of these with simulation runs beside. Derived tables (the jobs'
rows) are kept until the data changes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from dashboard.cluster_access import ClusterAccess
from dashboard.jobs import JobRow, build_rows
from dashboard.local_runs import read_runs
from dashboard.sources import ChangeCounter, ObjectReader, QueueSource
from dashboard.topology import LayoutCache
from runtimes.local import LocalJobStore
from scheduler.queues import (
    ClusterQueueSummary,
    CohortSummary,
    QueueState,
    QuotaChange,
    QuotaPlan,
    cluster_queue_summaries,
    cohort_summaries,
)

# Applies a checked quota change (a patch with the resourceVersion on a cluster, an edit in place
# on files) and says what it did; the CLI hands one in only when writes are enabled.
QuotaWriter = Callable[[QuotaPlan, QuotaChange], Awaitable[str]]
T = TypeVar("T")


@dataclass
class DashboardData:
    label: str  # what the data is, for the page header ("cluster of sandbox.kubeconfig")
    changes: ChangeCounter = field(default_factory=ChangeCounter)
    queues: QueueSource | None = None
    objects: ObjectReader | None = None
    cluster: ClusterAccess | None = None
    local: LocalJobStore | None = None
    simulations: list[Path] = field(default_factory=list)
    quota_writer: QuotaWriter | None = None
    layouts: LayoutCache = field(default_factory=LayoutCache)
    _memo: dict[str, tuple[tuple[int, int], Any]] = field(default_factory=dict)

    def version(self) -> int:
        """Grows whenever something a page shows may have changed (the local runs included)."""
        return self.changes.version + self._local_signature()

    def _local_signature(self) -> int:
        if self.local is None or not self.local.jobs_dir.is_dir():
            return 0
        # trainjob.json carries the status and the latest metrics (written at most once a second);
        # the logs are followed by their own streams and change no page
        total = 0
        for directory in self.local.jobs_dir.iterdir():
            try:
                stat = (directory / "trainjob.json").stat()
            except OSError:
                continue
            total += stat.st_mtime_ns // 1_000_000 + stat.st_size
        return total

    def stale(self) -> bool:
        """The queues last handed out are older than the data (a rebuild was due but held back)."""
        return bool(getattr(self.queues, "stale", False))

    async def state(self) -> QueueState | None:
        return await self.queues.state() if self.queues is not None else None

    def documents(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.objects.list(kind, namespace) if self.objects is not None else []

    def remembered(self, name: str, state: QueueState | None, compute: Callable[[], T]) -> T:
        """``compute()``, kept until the data or the engine behind ``state`` changes."""
        key = (self.version(), id(state.engine) if state is not None else 0)
        kept = self._memo.get(name)
        if kept is not None and kept[0] == key:
            found: T = kept[1]
            return found
        value = compute()
        self._memo[name] = (key, value)
        return value

    async def warm(self) -> None:
        """Work out what every page reads first (the queues, their summaries, the jobs' rows, the
        topology's layouts), so the first visitor does not wait for it."""
        state = await self.state()
        if state is not None:
            await self.layouts.get(state.engine)
        await self.summaries()
        await self.rows()

    async def rows(self) -> list[JobRow]:
        state = await self.state()

        def build() -> list[JobRow]:
            local = read_runs(self.local) if self.local is not None else []
            trainjobs, workloads, pods = (self.documents(kind) for kind in ("TrainJob", "Workload", "Pod"))
            return build_rows(state, trainjobs, workloads, pods, local)

        return self.remembered("rows", state, build)

    async def summaries(self) -> tuple[QueueState | None, list[ClusterQueueSummary], list[CohortSummary]]:
        """The state with every ClusterQueue's and cohort's summary (what `trainyard queues list` prints)."""
        state = await self.state()
        if state is None:
            return None, [], []
        every = self.remembered("summaries", state, lambda: cluster_queue_summaries(state))
        cohorts = self.remembered("cohorts", state, lambda: cohort_summaries(state))
        return state, every, cohorts
