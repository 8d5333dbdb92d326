"""The Alibaba openb 2023 GPU trace (cluster-trace-gpu-v2023, the FGD paper's input).

``openb_node_list_gpu_node.csv`` (sn, cpu_milli, memory_mib, gpu, model) becomes fake Nodes
labelled with their hostname and GPU model; ``openb_pod_list_default.csv`` becomes one
single-pod job per row. How the trace maps onto Kueue, and what it cannot express:

- every pod is a gang of one; its run time is ``deletion_time − scheduled_time``, or
  ``deletion_time − creation_time`` for pods the trace never scheduled (at least 1 s);
- a GPU share (``gpu_milli`` < 1000 on one GPU) asks for a whole GPU, since Kubernetes
  extended resources are integral (the count is reported as ``fractional_gpu_pods``);
- ``gpu_spec`` (allowed models, ``|``-separated) becomes a required node affinity on the model;
- ``qos`` becomes the priority: LS and Guaranteed → high, Burstable → normal, BE → low;
- all pods go to one ClusterQueue ``openb`` whose quota is the whole cluster, one
  ResourceFlavor per GPU model, and a Topology with the hostname as its only level.

What the trace holds at its snapshot (``notes``): pods already gone (Succeeded or Failed: a real
run time), censored pods (Running or Pending when the snapshot was taken: their deletion time is
the snapshot, so their run time is a lower bound) and pods never scheduled (no scheduled_time:
they run from their creation). Five pods (8 GPUs, 120 cores, 625-720 GiB, no gpu_spec) fit only
the 128-core G3 nodes; Kueue's flavor assignment settles on the first flavor whose quota fits
(gpu-g2, 96-core nodes), TAS then finds no G2 host for them even on an empty cluster, and they
never run: the report lists them with the engine's reason and the node they would fit.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtimes.k8s.core import Node
from simulations.cluster_spec import (
    GPU_PRODUCT_LABEL,
    GPU_RESOURCE,
    HOSTNAME_LABEL,
    node_document,
    nodes_from_documents,
)
from simulations.errors import SimulationInputError
from simulations.workloads import JobSpec

# the trace as published, shipped with the project (its README names the source and the terms)
BUNDLED_OPENB_DIR = Path(__file__).resolve().parents[1] / "data" / "alibaba-openb-2023"
NODES_FILE = "openb_node_list_gpu_node.csv"
PODS_FILE = "openb_pod_list_default.csv"
OPENB_TEAM = "openb"
QOS_PRIORITY = {"LS": "high", "Guaranteed": "high", "Burstable": "normal", "BE": "low"}


@dataclass
class OpenbTrace:
    nodes: list[Node]
    node_documents: list[dict[str, Any]]
    jobs: list[JobSpec]
    capacity_by_model: dict[str, dict[str, int]]
    notes: dict[str, int] = field(default_factory=dict)
    # pod name -> its share of one GPU in thousandths (gpu_milli), for the pods that share a GPU
    gpu_shares: dict[str, int] = field(default_factory=dict)

    @property
    def gpu_count(self) -> int:
        return sum(c[GPU_RESOURCE] for c in self.capacity_by_model.values())


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    try:
        handle = open(path, newline="")  # noqa: SIM115 - closed below
    except OSError as error:
        raise SimulationInputError(str(path), None, "", f"cannot read file: {error.strerror}") from None
    with handle:
        reader = csv.DictReader(handle)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise SimulationInputError(str(path), 1, missing[0], f"missing column(s) {', '.join(missing)}")
        return [(reader.line_num, row) for row in reader]


class _RowReader:
    """Integer columns of one CSV row, with errors that name the file, line and column."""

    def __init__(self, path: Path, line: int, row: dict[str, str]) -> None:
        self.path, self.line, self.row = path, line, row

    def optional(self, column: str) -> int | None:
        text = (self.row.get(column) or "").strip()
        if not text:
            return None
        try:
            value = int(text)
        except ValueError:
            raise SimulationInputError(str(self.path), self.line, column, f"{text!r} is not an integer") from None
        if value < 0:
            raise SimulationInputError(str(self.path), self.line, column, f"must not be negative, got {value}")
        return value

    def required(self, column: str) -> int:
        value = self.optional(column)
        if value is None:
            raise SimulationInputError(str(self.path), self.line, column, "empty; an integer is required")
        return value


POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)


def read_openb(directory: str | Path, limit: int | None = None) -> OpenbTrace:
    """Nodes and jobs of the trace in ``directory``; ``limit`` keeps only the first pods."""
    root = Path(directory)
    if not root.is_dir():
        raise SimulationInputError(str(root), None, "", f"not a directory holding {NODES_FILE} and {PODS_FILE}")
    documents, capacity = _read_nodes(root / NODES_FILE)
    jobs, notes, shares = _read_pods(root / PODS_FILE, set(capacity), limit)
    return OpenbTrace(nodes_from_documents(documents), documents, jobs, capacity, notes, shares)


def _read_nodes(node_path: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """Node documents, and per GPU model the cores, GiB and GPUs of its nodes."""
    documents: list[dict[str, Any]] = []
    capacity: dict[str, dict[str, int]] = {}
    for line, row in _rows(node_path, ("sn", "cpu_milli", "memory_mib", "gpu", "model")):
        read = _RowReader(node_path, line, row)
        name, model = (row.get("sn") or "").strip(), (row.get("model") or "").strip()
        if not name:
            raise SimulationInputError(str(node_path), line, "sn", "empty node name")
        if not model:
            raise SimulationInputError(str(node_path), line, "model", "empty GPU model")
        cpu, memory, gpus = read.required("cpu_milli"), read.required("memory_mib"), read.required("gpu")
        labels = {"type": "kwok", HOSTNAME_LABEL: name, GPU_PRODUCT_LABEL: model}
        allocatable = {"cpu": f"{cpu}m", "memory": f"{memory}Mi", GPU_RESOURCE: str(gpus), "pods": "110"}
        documents.append(node_document(name, labels, allocatable))
        totals = capacity.setdefault(model, {"cpu": 0, "memory": 0, GPU_RESOURCE: 0})
        totals["cpu"] += cpu // 1000
        totals["memory"] += memory // 1024
        totals[GPU_RESOURCE] += gpus
    if not documents:
        raise SimulationInputError(str(node_path), 2, "", "no nodes in the trace")
    return documents, capacity


def _read_pods(
    pod_path: Path, models: set[str], limit: int | None
) -> tuple[list[JobSpec], dict[str, int], dict[str, int]]:
    """One single-pod job per row, sorted by creation time, what the trace holds (``notes``) and
    the GPU shares of the pods that share one."""
    jobs: list[JobSpec] = []
    shares: dict[str, int] = {}
    notes = {"fractional_gpu_pods": 0, "never_scheduled_pods": 0, "censored_pods": 0, "already_gone_pods": 0}
    for line, row in _rows(pod_path, POD_COLUMNS):
        if limit is not None and len(jobs) >= limit:
            break
        read = _RowReader(pod_path, line, row)
        jobs.append(_pod_job(read, models, notes, len(jobs)))
        share = read.optional("gpu_milli") or 0
        if jobs[-1].gpus_per_node == 1 and 0 < share < 1000:
            shares[jobs[-1].name] = share
    jobs.sort(key=lambda job: job.submit_time)
    return jobs, notes, shares


def _pod_job(read: _RowReader, models: set[str], notes: dict[str, int], index: int) -> JobSpec:
    row, line, where = read.row, read.line, str(read.path)
    created = read.required("creation_time")
    deleted = read.required("deletion_time")
    scheduled = read.optional("scheduled_time")
    gpus = read.required("num_gpu")
    gpu_milli = read.optional("gpu_milli") or 0
    cpu, memory = read.required("cpu_milli"), read.required("memory_mib")
    start = scheduled if scheduled is not None else created
    if deleted < start:
        raise SimulationInputError(where, line, "deletion_time", f"{deleted} is before the pod started ({start})")
    if gpus > 8:
        raise SimulationInputError(where, line, "num_gpu", f"{gpus} GPUs; openb pods ask for 0 to 8")
    if gpus == 1 and 0 < gpu_milli < 1000:
        notes["fractional_gpu_pods"] += 1
    if scheduled is None:
        notes["never_scheduled_pods"] += 1
    if row.get("pod_phase") in ("Running", "Pending"):
        notes["censored_pods"] += 1
    elif row.get("pod_phase") in ("Succeeded", "Failed"):
        notes["already_gone_pods"] += 1
    spec = tuple(m for m in (row.get("gpu_spec") or "").split("|") if m)
    unknown = [m for m in spec if m not in models]
    if unknown:
        raise SimulationInputError(where, line, "gpu_spec", f"GPU model {unknown[0]!r} is on no node")
    qos = (row.get("qos") or "").strip()
    if qos not in QOS_PRIORITY:
        raise SimulationInputError(where, line, "qos", f"{qos!r}; expected one of {', '.join(QOS_PRIORITY)}")
    return JobSpec(
        name=(row.get("name") or f"openb-pod-{index}").strip(),
        team=OPENB_TEAM,
        submit_time=float(created),
        nodes=1,
        gpus_per_node=gpus,
        duration=float(max(1, deleted - start)),
        priority_class=QOS_PRIORITY[qos],
        cpu_milli=cpu,
        memory_mib=memory,
        topology_mode="required",
        topology_level=HOSTNAME_LABEL,
        gpu_models=spec,
    )
