"""What watches a run without steering it: the invariant checker, t* with the placement tier
achieved, and the fragmentation samples.

Nothing here feeds back into a decision: the simulator tells the observers what the engine
decided, in order, and reads their findings only after the loop. That makes them a pipeline
stage. A large run (``ObserverProcess``) hands them to a second process over a pipe, in
batches, so the checks run on the second core while the loop goes on; a small run, or one whose
node failures read the ledger live, calls ``Observers`` in the loop's own process. Both run the
same ``Observers`` code on the same messages in the same order, so they report the same figures
(``tests/simulations/test_observers.py`` checks it).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import operator
import os
import pickle
import threading
import traceback
from collections import Counter
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Literal

from scheduler.api.kueue import ResourceFlavor
from simulations.engine_driver import Admitted
from simulations.errors import ObserverProcessError, SimulationInputError
from simulations.fragmentation import fragmented_gpus
from simulations.invariants import InvariantChecker, NodeLedger, pod_amounts
from simulations.scenarios import BuiltScenario
from simulations.workloads import JobSpec

ObserverMode = Literal["auto", "inline", "process"]
MODE_ENV = "TRAINYARD_SIM_OBSERVERS"
# ``auto`` hands the observers to a second process from this many jobs: below it, starting the
# process and pickling the messages cost more than the checks they move off the loop.
PROCESS_FROM_JOBS = 20_000
# messages per pipe write (about 170 kB pickled): large enough that pickling runs in bulk, small
# enough that a few fit in the pipe and the second process is kept busy while the loop runs
BATCH = 1024
# the pipe's capacity, where the platform lets us set it: a few batches
PIPE_BYTES = 1 << 20

# One message per fact, as a plain tuple (cheap to build and to pickle):
#   ("admitted", the decision's fields, the job's fields, now)
#   ("released", key)
#   ("sample", pending shapes)
Message = tuple[object, ...]
_job_fields = operator.attrgetter(*(f.name for f in dataclasses.fields(JobSpec)))
_decision_fields = operator.attrgetter(*(f.name for f in dataclasses.fields(Admitted)))


@dataclass
class ObserverReport:
    """The observers' findings: the invariants, the tiers placements reached, and one
    fragmentation figure per sample asked for, in order."""

    invariants: dict[str, object]
    tiers: Counter[str]
    tier_gaps: Counter[int]
    fragmented: list[int]


class Observers:
    """The observers themselves, in whichever process runs them."""

    def __init__(self, built: BuiltScenario) -> None:
        self.ledger = NodeLedger(built.nodes, built.levels)
        self.checker = InvariantChecker(built.objects, self.ledger)
        self.flavor_selectors = {
            o.name: dict(o.spec.node_labels) for o in built.objects if isinstance(o, ResourceFlavor)
        }
        self.tiers: Counter[str] = Counter()
        self.tier_gaps: Counter[int] = Counter()
        self.fragmented: list[int] = []

    def admitted(self, decision: Admitted, job: JobSpec, now: float) -> None:
        ledger = self.ledger
        best = None
        if decision.placed and job.nodes > 1 and ledger.levels:
            # t*, counted before the gang itself lands on the ledger
            flavor = next(iter(decision.flavors.values()), None)
            selector = self.flavor_selectors.get(flavor or "", {})
            best = ledger.best_possible_level(job.nodes, pod_amounts(job), selector)
        self.checker.admitted(
            decision.key,
            job,
            decision.cluster_queue,
            decision.usage,
            decision.flavors,
            decision.counts,
            decision.nodes,
            now,
        )
        if decision.nodes and ledger.levels:
            achieved = ledger.lowest_common_level(decision.nodes)
            level = ledger.levels[achieved] if achieved >= 0 else "spans top level"
            target = len(ledger.levels) - 1 if best is None else best
            self.tiers[level] += 1
            self.tier_gaps[target - achieved] += 1

    def released(self, key: str) -> None:
        self.checker.released(key)

    def sample(self, pending_shapes: Counter[tuple[int, int, int]]) -> None:
        self.fragmented.append(fragmented_gpus(self.ledger, pending_shapes))

    def handle(self, message: Message) -> None:
        kind = message[0]
        if kind == "admitted":
            _, decision, job, now = message
            self.admitted(Admitted(*decision), JobSpec(*job), now)  # type: ignore[arg-type, misc]
        elif kind == "released":
            self.released(message[1])  # type: ignore[arg-type]
        else:
            self.sample(message[1])  # type: ignore[arg-type]

    def finish(self) -> ObserverReport:
        self.checker.finish()
        return ObserverReport(self.checker.summary(), self.tiers, self.tier_gaps, self.fragmented)


def _serve(observers: Observers, inbox: Connection, outbox: Connection, unused: list[Connection]) -> None:
    """The second process: handle batches in order until told to finish, then report."""
    for connection in unused:
        connection.close()  # the parent's ends: with them closed, the parent's exit reads as EOF
    try:
        while True:
            batch = pickle.loads(inbox.recv_bytes())
            if batch is None:
                outbox.send(observers.finish())
                return
            for message in batch:
                observers.handle(message)
    except EOFError:
        return  # the loop's process went away: nobody to report to
    except BaseException:  # any failure goes to the loop, which raises it
        outbox.send(traceback.format_exc())


def _widen(connection: Connection) -> None:
    """Let the pipe hold a few batches (Linux allows 1 MiB unprivileged), so the loop hands a
    batch over and goes on while the second process is still busy with the one before."""
    try:
        import fcntl

        fcntl.fcntl(connection.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError):
        pass  # another platform, or a lower limit: the pipe keeps its default size


class ObserverProcess:
    """The observers in a forked second process, fed in batches over a pipe.

    Forked, the child starts with the observers exactly as built here (nodes, quota tree), so
    nothing but the messages crosses the pipe. The parent's copy is never told anything after
    the fork: only its fixed facts (node names, labels, allocatable) may be read in this process.
    """

    def __init__(self, observers: Observers) -> None:
        context = multiprocessing.get_context("fork")
        child_inbox, self._inbox_writer = context.Pipe(duplex=False)
        self._reports, child_outbox = context.Pipe(duplex=False)
        _widen(self._inbox_writer)
        parent_ends = [self._inbox_writer, self._reports]
        self._process = context.Process(
            target=_serve, args=(observers, child_inbox, child_outbox, parent_ends), daemon=True
        )
        self._process.start()
        child_inbox.close()
        child_outbox.close()
        self._outbox: list[Message] = []

    def _post(self, message: Message) -> None:
        outbox = self._outbox
        outbox.append(message)
        if len(outbox) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        try:
            self._send(self._outbox)
        except (BrokenPipeError, ConnectionResetError):
            raise self._failed() from None
        self._outbox = []

    def _send(self, batch: list[Message] | None) -> None:
        """One batch down the pipe (None: finish). pickle.dumps, not Connection.send: send's
        ForkingPickler wraps every batch in Python-level setup that costs more than pickling the
        tuples themselves."""
        self._inbox_writer.send_bytes(pickle.dumps(batch, pickle.HIGHEST_PROTOCOL))

    def _failed(self) -> ObserverProcessError:
        detail = ""
        if self._reports.poll():
            detail = f": {self._reports.recv()}"
        return ObserverProcessError(f"the simulation's observer process stopped{detail}")

    def admitted(self, decision: Admitted, job: JobSpec, now: float) -> None:
        # records as tuples of their fields: a dataclass pickles its class and field names too
        self._post(("admitted", _decision_fields(decision), _job_fields(job), now))

    def released(self, key: str) -> None:
        self._post(("released", key))

    def sample(self, pending_shapes: Counter[tuple[int, int, int]]) -> None:
        self._post(("sample", Counter(pending_shapes)))

    def finish(self) -> ObserverReport:
        self._flush()
        try:
            self._send(None)
            answer = self._reports.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            raise self._failed() from None
        finally:
            self._process.join(timeout=10)
        if not isinstance(answer, ObserverReport):
            raise ObserverProcessError(f"the simulation's observer process failed:\n{answer}")
        return answer


def choose_mode(mode: ObserverMode, built: BuiltScenario) -> Literal["inline", "process"]:
    """``auto``: a second process for a large run when this process may use a second core, is
    not itself a worker of a process pool, may fork safely (no other threads), and node failures
    do not read the ledger live."""
    requested = os.environ.get(MODE_ENV, mode)
    live_ledger = built.scenario.failures is not None  # node failures find their gangs on the ledger
    can_fork = "fork" in multiprocessing.get_all_start_methods()
    if requested == "process":
        if live_ledger or not can_fork:
            why = "node failures read the ledger live" if live_ledger else "this platform cannot fork"
            raise SimulationInputError("environment", None, MODE_ENV, f"process: {why}; use inline or auto")
        return "process"
    if requested == "inline":
        return "inline"
    if requested != "auto":
        raise SimulationInputError("environment", None, MODE_ENV, f"{requested!r}: expected auto, inline or process")
    large = built.job_count >= PROCESS_FROM_JOBS
    cores = _usable_cores() > 1
    alone = threading.active_count() == 1
    # a run inside a worker process (what-if variants run one per core) already shares the cores
    top_level = multiprocessing.parent_process() is None
    return "process" if large and cores and alone and top_level and can_fork and not live_ledger else "inline"


def _usable_cores() -> int:
    """Cores this process may run on (a taskset or cgroup pin counts, not the machine's total)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def start_observers(observers: Observers, mode: Literal["inline", "process"]) -> Observers | ObserverProcess:
    """What the loop reports to: the observers themselves, or a second process running a copy."""
    return ObserverProcess(observers) if mode == "process" else observers
