"""The mirror's resync heals what a skipped change left between the cache and the engine.

A change that arrives while the controller's own write to that Workload is in flight is not
applied (it may be the write's echo). When it was someone else's change instead and nothing
changes the Workload again, only the periodic resync brings the engine back to the server's view.
These tests play the cache directly: no server, no timing.
"""

from __future__ import annotations

import copy
from typing import Any

from builders import ClusterQueueBuilder, LocalQueueBuilder, ResourceFlavorBuilder, namespace
from queue_support import KUEUE, NS

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.queueing.engine_mirror import EngineMirror
from scheduler.engine.workloads import WorkloadState

KEY = f"{NS}/job"


def queue_objects() -> list[dict[str, Any]]:
    return [
        namespace(NS),
        ResourceFlavorBuilder("default").doc(),
        ClusterQueueBuilder("cq").quota("default", "cpu", 4).doc(),
        LocalQueueBuilder("lq", NS).cluster_queue("cq").doc(),
    ]


def workload(revision: int, *, admitted: bool = False, finished: bool = False) -> dict[str, Any]:
    document: dict[str, Any] = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"name": "job", "namespace": NS, "resourceVersion": str(revision), "uid": "u1"},
        "spec": {
            "queueName": "lq",
            "podSets": [
                {
                    "name": "node",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "4"}}}]}},
                }
            ],
        },
    }
    status: dict[str, Any] = {"conditions": []}
    if admitted:
        status["admission"] = {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "node", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "4"}, "count": 1}
            ],
        }
        status["conditions"].append({"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"})
        status["conditions"].append({"type": "Admitted", "status": "True", "reason": "Admitted"})
    if finished:
        status["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded"})
    document["status"] = status
    return document


def mirror_with(*documents: dict[str, Any]) -> tuple[ClusterCache, EngineMirror]:
    cache = ClusterCache()
    mirror = EngineMirror(cache, clock=lambda: 1000.0)
    for document in [*queue_objects(), *documents]:
        cache.apply(copy.deepcopy(document))
    mirror.rebuild()
    return cache, mirror


def skipped(cache: ClusterCache, mirror: EngineMirror, document: dict[str, Any]) -> None:
    """Deliver ``document`` while a write to it is in flight: the handler leaves the engine alone."""
    mirror.writing.add(KEY)
    cache.apply(document)
    mirror.writing.discard(KEY)


def test_a_finish_skipped_during_a_write_is_released_by_the_resync() -> None:
    cache, mirror = mirror_with(workload(1, admitted=True))
    assert mirror.engine.workloads[KEY].state is WorkloadState.ADMITTED
    skipped(cache, mirror, workload(2, admitted=True, finished=True))
    assert mirror.engine.workloads[KEY].state is WorkloadState.ADMITTED  # the quota is still held

    assert mirror.resync() == [KEY]
    assert KEY not in mirror.engine.workloads  # released and forgotten
    assert mirror.resync() == []  # nothing left to heal


def test_an_admission_the_server_no_longer_shows_is_taken_back_and_counted_by_its_cause() -> None:
    cache, mirror = mirror_with(workload(1, admitted=True))
    skipped(cache, mirror, workload(2))  # e.g. another writer's eviction, missed during our write
    assert mirror.resync() == [KEY]
    assert mirror.engine.workloads[KEY].state is not WorkloadState.ADMITTED
    assert mirror.taken_back == {"resync": 1}
    mirror.resubmit(KEY, "its admission was not written")  # pending before and after: nothing taken back
    assert mirror.taken_back == {"resync": 1}


def test_an_admission_skipped_during_a_write_is_restored_by_the_resync() -> None:
    cache, mirror = mirror_with(workload(1))
    assert mirror.engine.workloads[KEY].state is not WorkloadState.ADMITTED
    skipped(cache, mirror, workload(2, admitted=True))  # e.g. a killed leader's write landing late

    assert mirror.resync() == [KEY]
    assert mirror.engine.workloads[KEY].state is WorkloadState.ADMITTED


def test_the_resync_leaves_a_workload_alone_while_its_write_is_in_flight() -> None:
    cache, mirror = mirror_with(workload(1, admitted=True))
    skipped(cache, mirror, workload(2, admitted=True, finished=True))
    mirror.writing.add(KEY)
    assert mirror.resync() == []
    assert mirror.engine.workloads[KEY].state is WorkloadState.ADMITTED


def test_an_admission_handed_off_and_not_yet_written_is_neither_undone_by_an_echo_nor_by_the_resync() -> None:
    """The queue controller hands a cycle's admissions off: until the write lands the server still
    shows the Workload pending. Taking that view would undo the admission before its write ran
    (a 15,000-Workload run lost admissions this way until each resync)."""
    cache, mirror = mirror_with(workload(1))
    mirror.engine.schedule(1000.0)
    assert mirror.engine.workloads[KEY].state is WorkloadState.ADMITTED  # decided, write handed off
    handed_off = {KEY}
    mirror.handed_off = handed_off.__contains__

    cache.apply(workload(2))  # another change to the pending Workload (say, our pending reason's echo)
    assert mirror.resync() == []
    assert mirror.engine.workloads[KEY].state is WorkloadState.ADMITTED

    handed_off.clear()  # the write landed
    cache.apply(workload(3, admitted=True))
    assert mirror.resync() == []
    assert mirror.engine.workloads[KEY].state is WorkloadState.ADMITTED


def test_a_deleted_workload_the_engine_missed_is_forgotten_and_finished_ones_are_never_parsed() -> None:
    cache, mirror = mirror_with(workload(1, admitted=True))
    mirror.live = False  # the deletion is missed (as by a handler that did not run)
    cache.delete("Workload", "job", NS)
    mirror.live = True
    assert mirror.resync() == [KEY]
    assert KEY not in mirror.engine.workloads

    _, rebuilt = mirror_with(workload(3, admitted=True, finished=True))
    assert KEY not in rebuilt.engine.workloads  # a finished Workload holds nothing
    assert rebuilt.resync() == []


def test_a_failed_write_never_undoes_our_own_admission_the_cache_has_not_shown_yet() -> None:
    """The chaos bench's one quota violation: a cycle admitted the Workload, the watch that would
    echo it was cut, and the next cycle's eviction of it found the cache still pending. Taking
    that stale view freed quota the server still counted, and the preemptor was admitted over it."""
    cache, mirror = mirror_with(workload(1))
    admitted = workload(2, admitted=True)
    mirror.learned(KEY, admitted)  # the server's answer; its echo has not arrived
    assert mirror.freshest(KEY) == admitted

    mirror.resubmit(KEY, "its eviction was not written")
    assert mirror.engine.workloads[KEY].state is WorkloadState.ADMITTED  # the quota stays held

    cache.apply(copy.deepcopy(admitted))  # the echo arrives: the cache is the truth again
    assert mirror.freshest(KEY) == cache.get("Workload", "job", NS)
    mirror.live = False
    cache.apply(workload(3))  # a later change by someone else (say, an eviction by another writer)
    mirror.live = True
    assert mirror.freshest(KEY) == workload(3)  # newer than our write: the cache wins
