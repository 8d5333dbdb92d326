"""The pure parts of `bench admission --real`: the JSON shape, per-class averages, CPU and audit counts."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from trainyard.benchmarks.admission_measures import (
    SIDE_KEYS,
    SideTimes,
    class_averages,
    prefixed_documents,
    process_cpu_seconds,
    side_figures,
)
from trainyard.benchmarks.admission_real import KUEUE_USER, scenario_workloads
from trainyard.benchmarks.controller_real import audit_write_counts


def _times() -> SideTimes:
    times = SideTimes()
    for key, cls, created, admitted in [
        ("a/small-0", "small", 0.0, 3.0),
        ("a/small-1", "small", 1.0, 2.0),
        ("b/large-0", "large", 0.5, 1.0),
        ("b/medium-0", "medium", 2.0, None),
    ]:
        times.class_of[key] = cls
        times.created[key] = created
        if admitted is not None:
            times.admitted[key] = admitted
    return times


def test_class_averages_are_per_class_means_of_admitted_workloads() -> None:
    waits = _times().waits()
    assert waits == {"small": [3.0, 1.0], "large": [0.5]}
    assert class_averages(waits) == {"large": 0.5, "small": 2.0}


def test_side_figures_carry_the_issue_keys_and_the_detail() -> None:
    writes = Counter({"status": 6, "object": 2, "event": 3, "lease": 40})
    figures = side_figures(_times(), wall=12.345, cpu=1.234, writes=writes)
    assert set(SIDE_KEYS) <= set(figures)
    assert figures["wall_seconds"] == 12.35
    assert figures["cpu_seconds"] == 1.23
    assert figures["avg_time_to_admission_s"] == round(4.5 / 3, 3)
    assert figures["writes_per_workload"] == 2.0  # 8 writes over 4 workloads; leases and Events apart
    assert figures["event_writes_per_workload"] == 0.75
    assert figures["avg_time_to_admission_s_by_class"] == {"large": 0.5, "small": 2.0}
    assert (figures["workloads"], figures["admitted"]) == (4, 3)
    json.dumps(figures)


def test_process_cpu_seconds_reads_utime_and_stime(tmp_path: Path) -> None:
    ticks = os.sysconf("SC_CLK_TCK")
    (tmp_path / "42").mkdir()
    fields = ["S", *["0"] * 10, str(3 * ticks), str(ticks), *["0"] * 30]
    (tmp_path / "42" / "stat").write_text(f"42 (kueue manager) {' '.join(fields)}\n")
    assert process_cpu_seconds(42, tmp_path) == 4.0
    assert process_cpu_seconds(os.getpid()) > 0.0


def test_audit_counts_kueue_writes_apart_from_the_runner(tmp_path: Path) -> None:
    def event(user: str, verb: str, resource: str, subresource: str | None = None) -> str:
        reference = {"resource": resource, **({"subresource": subresource} if subresource else {})}
        body = {"stage": "ResponseComplete", "user": {"username": user}, "verb": verb, "objectRef": reference}
        return json.dumps(body)

    log = tmp_path / "audit.log"
    lines = [
        event(KUEUE_USER, "patch", "workloads", "status"),
        event(KUEUE_USER, "update", "workloads", "status"),
        event(KUEUE_USER, "create", "events"),
        event(KUEUE_USER, "watch", "workloads"),
        event("admin", "create", "workloads"),
    ]
    log.write_text("\n".join(lines) + "\n")
    counts = audit_write_counts(log, KUEUE_USER)
    assert (counts["status"], counts["event"], counts["object"]) == (2, 1, 0)
    assert (counts["status:PATCH workloads"], counts["status:PUT workloads"]) == (1, 1)


def test_audit_counts_read_the_rotated_backups_and_wait_for_a_half_written_line(tmp_path: Path) -> None:
    """kube-apiserver rotates its audit log (at 100 MB unless told): a count must read the backups too."""

    def event(verb: str) -> str:
        body = {"stage": "ResponseComplete", "user": {"username": KUEUE_USER}, "verb": verb}
        return json.dumps({**body, "objectRef": {"resource": "workloads", "subresource": "status"}})

    (tmp_path / "audit-2026-11-28T10-00-00.000.log").write_text(event("patch") + "\n" + event("update") + "\n")
    (tmp_path / "audit-2026-11-28T11-00-00.000.log").write_text(event("patch") + "\n")
    (tmp_path / "audit.log").write_text(event("update") + "\n" + event("patch")[:40])
    assert audit_write_counts(tmp_path / "audit.log", KUEUE_USER)["status"] == 4


def test_each_side_gets_its_own_queues_and_namespaces() -> None:
    objects, workloads = scenario_workloads("kueue-baseline", 120)
    renamed = prefixed_documents(objects, "ty-")
    queues = [d for d in renamed if d["kind"] == "ClusterQueue"]
    local = [d for d in renamed if d["kind"] == "LocalQueue"]
    assert len(queues) == 30
    assert all(q["metadata"]["name"].startswith("ty-cohort-") for q in queues)
    assert {lq["spec"]["clusterQueue"] for lq in local} == {q["metadata"]["name"] for q in queues}
    assert all(lq["metadata"]["namespace"] == lq["spec"]["clusterQueue"] for lq in local)
    flavors = [d for d in renamed if d["kind"] == "ResourceFlavor"]
    assert [f["metadata"]["name"] for f in flavors] == ["default"]
    assert all(not d["metadata"]["name"].startswith("ty-") for d in objects)  # the originals untouched
    # the first arrivals by creation time span every ClusterQueue, with spec.priority as Kueue's CRD needs
    assert len(workloads) == 120
    assert len({w[3]["metadata"]["namespace"] for w in workloads}) == 30
    assert [w[0] for w in workloads] == sorted(w[0] for w in workloads)
    assert {w[1] for w in workloads} == {"small", "medium", "large"}
    assert all(w[3]["spec"]["priority"] > 0 for w in workloads)
