"""The queue controller against the fake API server: Workloads created, admitted, pending, preempted."""

from __future__ import annotations

import asyncio

from fakeapi.fixtures import FakeApi
from queue_support import NS, Reader, condition, controller, is_admitted, kube, runtime_doc, seed_queues, trainjob

from runtimes.api.trainer import TrainJob
from scheduler.trainjob import workload_name
from tests.eventually import eventually


async def test_a_queued_trainjob_gets_its_workload_and_is_admitted(fake_api: FakeApi, reader: Reader) -> None:
    seed_queues(fake_api, cpu=4)
    created = fake_api.server.seed(trainjob("llm", nodes=2, cpu=1))
    async with kube(fake_api) as client, controller(client):
        workload = await eventually(lambda: reader.workload_of("llm"), what="the Workload")
        await eventually(lambda: _admitted(reader, "llm"), what="the admission")
        workload = await reader.workload_of("llm")
    assert workload is not None
    assert workload["metadata"]["name"] == workload_name(TrainJob.model_validate(created))
    assert workload["metadata"]["name"].startswith("trainjob-llm-")
    owner = workload["metadata"]["ownerReferences"][0]
    assert owner == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "name": "llm",
        "uid": created["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert workload["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == created["metadata"]["uid"]
    assert workload["spec"]["queueName"] == "lq"
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("node", 2)]
    admission = workload["status"]["admission"]
    assert admission["clusterQueue"] == "cq"
    assignment = admission["podSetAssignments"][0]
    assert assignment["name"] == "node"
    assert assignment["flavors"] == {"cpu": "default"}
    assert assignment["count"] == 2
    assert assignment["resourceUsage"]["cpu"] == "2"
    reserved = condition(workload, "QuotaReserved")
    assert reserved is not None
    assert reserved["status"] == "True"
    assert reserved["reason"] == "QuotaReserved"
    assert reserved["lastTransitionTime"]
    assert reserved["observedGeneration"] == workload["metadata"]["generation"]
    admitted = condition(workload, "Admitted")
    assert admitted is not None
    assert admitted["reason"] == "Admitted"
    reasons = {e.reason for e in await reader.events()}
    assert {"CreatedWorkload", "QuotaReserved"} <= reasons


async def _admitted(reader: Reader, name: str) -> bool:
    return is_admitted(await reader.workload_of(name))


async def test_a_job_that_does_not_fit_waits_with_its_reason_and_position(fake_api: FakeApi, reader: Reader) -> None:
    seed_queues(fake_api, cpu=2)
    fake_api.server.seed(trainjob("first", nodes=2))
    async with kube(fake_api) as client, controller(client) as process:
        # a change of position alone is written at most this often: a cycle that saw "second"
        # before "third" arrived wrote it position 1, and the tie may put "third" first
        process.built.queue.pending.refresh = 0.2
        await eventually(lambda: _admitted(reader, "first"), what="the first admission")
        fake_api.server.seed(trainjob("second", nodes=1))
        fake_api.server.seed(trainjob("third", nodes=1))

        async def both_pending() -> bool:
            second, third = await reader.workload_of("second"), await reader.workload_of("third")
            conditions = [condition(w, "QuotaReserved") for w in (second, third)]
            # both tried (the quota reason, not only "waiting for its turn": a status written
            # before the cycle that tried them, which a loaded machine can leave for a while)
            return (
                all(c is not None and c["status"] == "False" for c in conditions)
                and all(c is not None and "insufficient unused quota" in str(c["message"]) for c in conditions)
                and len({str(c["message"]).rsplit("(position ", 1)[-1] for c in conditions if c is not None}) == 2
            )

        await eventually(both_pending, what="pending conditions")
        second, third = await reader.workload_of("second"), await reader.workload_of("third")
        writes_before = process.built.queue.cycles
    assert second is not None
    assert third is not None
    positions = set()
    for workload in (second, third):
        pending = condition(workload, "QuotaReserved")
        assert pending is not None
        assert pending["reason"] == "Pending"
        assert "insufficient unused quota for cpu" in pending["message"], pending["message"]
        assert not (workload.get("status") or {}).get("admission")
        positions.add(pending["message"].rsplit("(position ", 1)[1])
    # created in the same second, so either may be first; each has its own place in line
    assert positions == {"1 in ClusterQueue cq)", "2 in ClusterQueue cq)"}
    assert writes_before >= 1


async def test_a_higher_priority_job_preempts_a_lower_one(fake_api: FakeApi, reader: Reader) -> None:
    seed_queues(fake_api, cpu=2, preemption="LowerPriority")
    fake_api.server.seed(trainjob("low", nodes=2, priority="low"))
    async with kube(fake_api) as client, controller(client):
        await eventually(lambda: _admitted(reader, "low"), what="the low-priority admission")
        fake_api.server.seed(trainjob("high", nodes=2, priority="high"))
        await eventually(lambda: _admitted(reader, "high"), what="the preemptor's admission")
        low = await reader.workload_of("low")
        high = await reader.workload_of("high")
    assert low is not None
    assert high is not None
    assert not (low.get("status") or {}).get("admission")
    evicted, preempted = condition(low, "Evicted"), condition(low, "Preempted")
    assert evicted is not None
    assert evicted["status"] == "True"
    assert evicted["reason"] == "Preempted"
    assert preempted is not None
    assert preempted["status"] == "True"
    assert preempted["reason"] == "InClusterQueue"
    assert condition(low, "QuotaReserved")["status"] == "False"  # type: ignore[index]
    assert condition(low, "Admitted")["status"] == "False"  # type: ignore[index]
    assert low["status"]["requeueState"]["count"] == 1
    assert low["status"]["requeueState"]["requeueAt"]
    assert high["spec"]["priorityClassRef"]["name"] == "high"


async def test_an_unsuspended_trainjob_is_suspended_before_its_workload_is_created(
    fake_api: FakeApi, reader: Reader
) -> None:
    seed_queues(fake_api, cpu=4)
    fake_api.server.seed(trainjob("eager", nodes=1, suspend=False))
    async with kube(fake_api) as client, controller(client):
        await eventually(lambda: reader.workload_of("eager"), what="the Workload")
        job = await reader.trainjob("eager")
    assert job["spec"]["suspend"] is True


def seed_with_a_missing_runtime(fake_api: FakeApi, name: str, runtime: str) -> None:
    """The queues, and a TrainJob named ``name`` whose runtimeRef names ``runtime``, which does not exist."""
    seed_queues(fake_api, cpu=4)
    broken = trainjob(name)
    broken["spec"]["runtimeRef"] = {"name": runtime}
    fake_api.server.seed(broken)


async def test_a_trainjob_whose_runtime_is_missing_gets_an_event_and_a_condition(
    fake_api: FakeApi, reader: Reader
) -> None:
    seed_with_a_missing_runtime(fake_api, "lost", "no-such-runtime")

    async def failed() -> bool:
        c = condition(await reader.trainjob("lost"), "WorkloadCreated")
        return c is not None and c["status"] == "False"

    async with kube(fake_api) as client, controller(client):
        await eventually(failed, what="the WorkloadCreated=False condition")
        await asyncio.sleep(0.2)
        job = await reader.trainjob("lost")
        events = [e for e in await reader.events() if e.reason == "RuntimeNotFound"]
    c = condition(job, "WorkloadCreated")
    assert c is not None
    assert c["reason"] == "RuntimeNotFound"
    assert "no-such-runtime" in c["message"]
    assert len(events) == 1  # said once, not on every resync
    assert await reader.workload_of("lost") is None


async def test_the_failure_condition_is_cleared_once_the_runtime_exists_even_through_a_conflict(
    fake_api: FakeApi, reader: Reader
) -> None:
    seed_with_a_missing_runtime(fake_api, "late", "arrives-later")

    async def workload_created_condition() -> dict[str, object] | None:
        return condition(await reader.trainjob("late"), "WorkloadCreated")

    async with kube(fake_api) as client, controller(client):
        await eventually(workload_created_condition, what="the WorkloadCreated=False condition")
        # the clearing write meets a conflict that no newer TrainJob explains: nothing will wake
        # the reconciler with an event, so it must retry on its own
        fake_api.server.faults.fail("patch", "/trainjobs/late/status", code=409, times=1)
        runtime = runtime_doc()
        runtime["metadata"] = {"name": "arrives-later"}
        await client.create(runtime)
        await eventually(lambda: reader.workload_of("late"), what="the Workload once the runtime exists")

        async def cleared() -> bool:
            return await workload_created_condition() is None

        await eventually(cleared, what="the failure condition cleared")
    assert sum(fake_api.server.faults.injected.values()) >= 1


async def test_a_reason_whose_numbers_alone_change_is_refreshed_slowly_and_without_an_event(
    fake_api: FakeApi, reader: Reader
) -> None:
    # Freed quota changes "N more needed" of every pending workload: rewriting a thousand of
    # them (and recording two Events each) on every cycle starved the controllers under chaos.
    seed_queues(fake_api, cpu=4)
    fake_api.server.seed(trainjob("small", nodes=2))
    fake_api.server.seed(trainjob("other", nodes=1))
    async with kube(fake_api) as client, controller(client) as process:
        await eventually(lambda: _admitted(reader, "small"), what="the small job admitted")
        await eventually(lambda: _admitted(reader, "other"), what="the other job admitted")
        fake_api.server.seed(trainjob("big", nodes=4))

        async def pending_message() -> str | None:
            pending = condition(await reader.workload_of("big"), "QuotaReserved")
            return None if pending is None or pending["status"] != "False" else str(pending["message"])

        before = await eventually(pending_message, what="the big job pending")
        assert "3 more needed" in before, before
        await client.patch(
            "TrainJob",
            "small",
            {
                "status": {
                    "conditions": [
                        # lastTransitionTime: Trainer's CRD requires it (metav1.Condition), as the API server holds it
                        {
                            "type": "Complete",
                            "status": "True",
                            "reason": "Done",
                            "message": "done",
                            "lastTransitionTime": "2026-01-01T00:00:00Z",
                        }
                    ]
                }
            },
            NS,
            status=True,
        )
        await eventually(lambda: _finished(reader, "small"), what="the small job finished and its quota released")
        process.built.queue.request_cycle()
        await asyncio.sleep(0.5)
        assert await pending_message() == before  # only a number changed: not rewritten yet
        process.built.queue.pending.refresh = 0.05
        process.built.queue.request_cycle()

        async def refreshed() -> bool:
            message = await pending_message()
            return message is not None and "1 more needed" in message

        await eventually(refreshed, what="the refreshed numbers")
    pending_events = [e for e in await reader.events() if e.reason == "Pending" and "big" in e.involved_object.name]
    assert len(pending_events) == 2  # one on the Workload, one on the TrainJob: for the first reason only


async def _finished(reader: Reader, name: str) -> bool:
    finished = condition(await reader.workload_of(name), "Finished")
    return finished is not None and finished["status"] == "True"
