"""Kueue's side of one `bench parity` run, kept in a file, and the engine held to it again.

A run on the real cluster takes minutes per thousand Workloads, nearly all of it Kueue's side:
one wall-clock second per step. What Kueue decided depends only on the input, so ``--record
PATH`` keeps it (each Workload's creation timestamp, each step's clock, every decision and
Kueue's last pending message) and ``--replay PATH`` compares the engine with it again in
seconds, with no cluster: the way to work on an engine difference the benchmark found.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from trainyard.benchmarks.parity_sides import Decision, SideRecord

FORMAT = "trainyard.io/parity-recording/v1"


@dataclass
class KueueRecording:
    input_name: str
    workloads: int  # how many Workloads the input compared: a replay of another input is refused
    created: dict[str, str]  # key -> the creationTimestamp kube-apiserver gave
    step_clock: list[float]  # the engine's clock at each step (backoffs and timeouts read it)
    record: SideRecord

    def save(self, path: Path) -> None:
        document = {
            "format": FORMAT,
            "input": self.input_name,
            "workloads": self.workloads,
            "created": self.created,
            "step_clock": self.step_clock,
            "decisions": {key: [asdict(d) for d in decisions] for key, decisions in self.record.decisions.items()},
            "admission_order": self.record.admission_order,
            "waiting": self.record.waiting,
        }
        path.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> KueueRecording:
        try:
            document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise SystemExit(f"bench parity: --replay {path}: cannot read it ({error})") from None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise SystemExit(f"bench parity: --replay {path}: not a recording made by --record (format {FORMAT})")
        record = SideRecord()
        for key, decisions in document["decisions"].items():
            for decision in decisions:
                flavors = tuple((str(r), str(f)) for r, f in decision.pop("flavors"))
                record.decisions.setdefault(key, []).append(Decision(flavors=flavors, **decision))
        record.admission_order = list(document["admission_order"])
        record.waiting = dict(document["waiting"])
        return cls(
            input_name=str(document["input"]),
            workloads=int(document["workloads"]),
            created={str(k): str(v) for k, v in document["created"].items()},
            step_clock=[float(t) for t in document["step_clock"]],
            record=record,
        )

    def check_matches(self, input_name: str, workloads: int, path: Path) -> None:
        if (self.input_name, self.workloads) != (input_name, workloads):
            raise SystemExit(
                f"bench parity: --replay {path} recorded {self.input_name} with {self.workloads} Workloads, "
                f"not {input_name} with {workloads}: give the same --scenario/--objects and --workloads"
            )
