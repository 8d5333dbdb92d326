"""PendingStatus: new reasons written at once, position refreshes within a rate budget, stalest first."""

from __future__ import annotations

from typing import Any

from builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue

from scheduler.controllers.queueing.pending_status import PendingStatus, quota_reserved_message, reason_skeleton
from scheduler.controllers.workload_status import pending_patch
from scheduler.engine import AdmissionEngine


def _engine_with_queue(waiting: int) -> tuple[AdmissionEngine, dict[str, dict[str, Any]]]:
    """One admitted job holding all 4 CPUs and ``waiting`` jobs behind it, as the cache holds them."""
    engine = AdmissionEngine()
    engine.apply(flavor("default"))
    engine.apply(ClusterQueueBuilder("team-a").quota("default", "cpu", 4).obj())
    engine.apply(local_queue("main", "team-a", "team-a"))
    documents: dict[str, dict[str, Any]] = {}
    for index in range(waiting + 1):
        builder = WorkloadBuilder(f"job-{index:03d}", "team-a").queue("main").created(index).pod_set(count=4, cpu="1")
        documents[engine.submit(builder.obj(), now=index)] = builder.doc()
    engine.schedule(now=100)
    return engine, documents


def _apply(documents: dict[str, dict[str, Any]], writes: list[Any], stamp: float) -> None:
    """What the server holds after the planned writes landed."""
    for write in writes:
        document = documents[write.key]
        document.setdefault("status", {})["conditions"] = write.patch["conditions"]


def test_new_reasons_are_all_written_at_once_and_position_refreshes_keep_to_the_budget() -> None:
    engine, documents = _engine_with_queue(waiting=50)
    pending = PendingStatus(refresh=10.0, refresh_rate=2.0)
    first = pending.plan(engine, documents.get, lambda key: False, now=0.0, stamp=100.0)
    # the admitted one holds quota; every waiting one gets its first reason, whatever the budget
    assert len(first) == 50
    assert all(write.event_message is not None for write in first)
    assert "(position 1 in ClusterQueue team-a)" in next(w for w in first if w.key.endswith("job-001")).event_message
    _apply(documents, first, 100.0)
    for write in first:
        pending.wrote(write.key, 0.0)

    # the head leaves the queue (admitted elsewhere, say): 49 positions move up by one
    engine.forget("team-a/job-001", 101.0)
    assert pending.plan(engine, documents.get, lambda key: False, now=5.0, stamp=105.0) == []  # too soon

    later = pending.plan(engine, documents.get, lambda key: False, now=12.0, stamp=112.0)
    assert len(later) == 14, "2 writes/s over the 7 s since the last plan"
    assert all(write.event_message is None for write in later), "a moved position is no new reason"
    _apply(documents, later, 112.0)
    for write in later:
        pending.wrote(write.key, 12.0)

    rest = pending.plan(engine, documents.get, lambda key: False, now=13.0, stamp=113.0)
    assert len(rest) == 2, "one second later: two more"
    assert not {w.key for w in rest} & {w.key for w in later}, "the stalest first: none just refreshed"


def test_a_busy_or_admitted_workload_is_left_alone() -> None:
    engine, documents = _engine_with_queue(waiting=2)
    pending = PendingStatus()
    writes = pending.plan(engine, documents.get, lambda key: key.endswith("job-001"), now=0.0, stamp=100.0)
    assert [w.key for w in writes] == ["team-a/job-002"]


def test_a_new_term_counts_the_messages_on_the_server_as_just_written() -> None:
    engine, documents = _engine_with_queue(waiting=3)
    pending = PendingStatus(refresh=10.0, refresh_rate=100.0)
    _apply(documents, pending.plan(engine, documents.get, lambda key: False, now=0.0, stamp=100.0), 100.0)
    engine.forget("team-a/job-001", 101.0)

    successor = PendingStatus(refresh=10.0, refresh_rate=100.0)
    successor.start_term(documents.values(), now=50.0)
    assert successor.plan(engine, documents.get, lambda key: False, now=51.0, stamp=151.0) == []
    assert len(successor.plan(engine, documents.get, lambda key: False, now=61.0, stamp=161.0)) == 2


def test_the_skeleton_blanks_positions_and_numbers_only() -> None:
    message = "2 more cpu needed in ClusterQueue team-a (position 7 in ClusterQueue team-a)"
    assert reason_skeleton(message) == reason_skeleton("6 more cpu needed in ClusterQueue team-a")
    assert reason_skeleton(message) != reason_skeleton("flavor default lacks nvidia.com/gpu")
    document = {"status": {"conditions": pending_patch({}, message, 0.0)["conditions"]}}  # type: ignore[index]
    assert quota_reserved_message(document) == message


def test_a_long_queue_is_looked_at_in_sweeps_after_new_arrivals_and_the_cycles_heads() -> None:
    engine, documents = _engine_with_queue(waiting=10)
    pending = PendingStatus(refresh=10.0, refresh_rate=100.0, sweep=3)
    first = pending.plan(engine, documents.get, lambda key: False, now=0.0, stamp=100.0)
    assert len(first) == 10, "every new arrival is looked at in the first plan"
    for document in documents.values():  # every message on the server is now out of date
        document.setdefault("status", {})["conditions"] = first[0].patch["conditions"]
        document["status"]["conditions"][0]["message"] = "an older reason"

    head = "team-a/job-010"  # the one the cycle tried: always looked at
    second = pending.plan(engine, documents.get, lambda key: False, now=1.0, stamp=101.0, heads=[head])
    assert head in {w.key for w in second}
    assert len(second) == 4, "the head and the three looked at longest ago"
    looked = {w.key for w in second}
    third = pending.plan(engine, documents.get, lambda key: False, now=2.0, stamp=102.0)
    assert len(third) == 3
    assert not looked & {w.key for w in third}, "the sweep moves on to those not looked at since"
