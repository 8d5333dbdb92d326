"""Node failure and repair in a simulation: failures arrive as one Poisson stream over all nodes.

A failed node goes NotReady in the engine, its gangs are evicted (``NodeFailure``) and a repair
event brings it back after the scenario's repair time. The simulator owns the event queue and
what an eviction means for its books; this module owns when nodes fail and what the engine sees.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from runtimes.k8s.core import Node
from simulations.engine_driver import EngineDriver, Removed
from simulations.events import Event, EventKind
from simulations.invariants import NodeLedger
from simulations.scenarios import FailureSpec


class NodeFailures:
    def __init__(
        self,
        failures: FailureSpec | None,
        ledger: NodeLedger,
        node_documents: list[dict[str, Any]],
        driver: EngineDriver,
        rng: random.Random,
        push: Callable[[Event], None],
    ) -> None:
        self.failures = failures
        self.ledger = ledger
        self.node_documents = node_documents
        self.driver = driver
        self.rng = rng
        self.push = push

    def schedule_next(self, now: float) -> None:
        """The next failure of a random node (none without a failure spec)."""
        if self.failures is None or not self.ledger.names:
            return
        rate = len(self.ledger.names) / (self.failures.node_mtbf_hours * 3600.0)
        when = now + self.rng.expovariate(rate)
        name = self.ledger.names[self.rng.randrange(len(self.ledger.names))]
        self.push(Event(when, EventKind.NODE_FAILURE, name))

    def fail(self, name: str, now: float, removed: Callable[[Removed, float], None]) -> None:
        """``name`` fails (unless it is down already): its gangs are evicted, its repair scheduled."""
        i = self.ledger.index[name]
        if self.ledger.ready[i]:
            self.ledger.ready[i] = False
            self.driver.update_node(self._node_with_ready(i, False))
            for key in self.ledger.workloads_on(name):
                gone = self.driver.evict(key, "NodeFailure", now)
                if gone is not None:
                    removed(gone, now)
            repair = self.failures.repair_seconds if self.failures else 0.0
            self.push(Event(now + repair, EventKind.NODE_REPAIR, name))
        self.schedule_next(now)

    def repair(self, name: str) -> None:
        i = self.ledger.index[name]
        self.ledger.ready[i] = True
        self.driver.update_node(self._node_with_ready(i, True))

    def _node_with_ready(self, i: int, ready: bool) -> Node:
        document = dict(self.node_documents[i])
        status = dict(document["status"])
        status["conditions"] = [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "reason": "KubeletReady" if ready else "NodeFailure",
            }
        ]
        document["status"] = status
        return Node.model_validate(document)
