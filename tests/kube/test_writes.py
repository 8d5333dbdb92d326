"""Writes with resourceVersion and retries, against the fake API server's conflicts and faults."""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi.fixtures import FakeApi
from kube_support import flavor, kube, local_queue

from scheduler.kube import (
    Backoff,
    ConflictRetriesExhausted,
    KubeApiError,
    patch_status,
    update_status_with_retry,
    update_with_retry,
)

QUICK = Backoff(initial=0.01, maximum=0.02)


async def test_a_conflicting_writer_makes_the_update_start_over_from_a_fresh_read(fake_api: FakeApi) -> None:
    fake_api.server.seed(flavor("gpu"))
    rtype = fake_api.server.type_of("kueue.x-k8s.io/v1beta2", "ResourceFlavor")
    seen: list[dict[str, str]] = []  # the labels each attempt read

    def add_label(current: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(current["metadata"].get("labels") or {}))
        if len(seen) == 1:
            # someone else writes between our read and our PUT
            fake_api.store.patch(
                rtype, None, "gpu", "application/merge-patch+json", {"metadata": {"labels": {"other": "x"}}}
            )
        current["metadata"].setdefault("labels", {})["mine"] = "y"
        return current

    async with kube(fake_api) as client:
        updated = await update_with_retry(client, "ResourceFlavor", "gpu", None, add_label, backoff=QUICK)
    assert len(seen) == 2, "the second attempt read the object again"
    assert seen == [{}, {"other": "x"}]
    assert updated["metadata"]["labels"] == {"other": "x", "mine": "y"}
    puts = [r for r in fake_api.server.requests if r.verb == "update"]
    assert len(puts) == 2


async def test_injected_409_and_500s_are_retried(fake_api: FakeApi) -> None:
    fake_api.server.seed(flavor("gpu"))
    fake_api.faults.fail("update", code=409)
    fake_api.faults.fail("get", code=500, times=2)
    fake_api.faults.fail("update", code=503)

    def set_spec(current: dict[str, Any]) -> dict[str, Any]:
        current["spec"] = {"nodeLabels": {"gpu": "h100"}}
        return current

    async with kube(fake_api) as client:
        updated = await update_with_retry(client, "ResourceFlavor", "gpu", None, set_spec, backoff=QUICK)
    assert updated["spec"] == {"nodeLabels": {"gpu": "h100"}}
    assert len(fake_api.faults.failed) == 4


async def test_no_change_means_no_write(fake_api: FakeApi) -> None:
    fake_api.server.seed(flavor("gpu"))
    async with kube(fake_api) as client:
        result = await update_with_retry(client, "ResourceFlavor", "gpu", None, lambda current: None)
    assert result["metadata"]["name"] == "gpu"
    assert [r.verb for r in fake_api.server.requests] == ["get"]


async def test_endless_conflicts_give_up_with_a_clear_error(fake_api: FakeApi) -> None:
    fake_api.server.seed(flavor("gpu"))
    fake_api.faults.fail("update", code=409, times=10)
    async with kube(fake_api) as client:
        with pytest.raises(ConflictRetriesExhausted, match="3 read-modify-write attempts"):
            await update_with_retry(client, "ResourceFlavor", "gpu", None, lambda c: c, attempts=3, backoff=QUICK)


async def test_a_permanent_error_is_not_retried(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        with pytest.raises(KubeApiError) as missing:
            await update_with_retry(client, "ResourceFlavor", "ghost", None, lambda c: c, backoff=QUICK)
    assert missing.value.status == 404
    assert len(fake_api.server.requests) == 1


async def test_patch_status_changes_status_only_and_honours_a_revision(fake_api: FakeApi) -> None:
    created = fake_api.server.seed(local_queue("q"))
    async with kube(fake_api) as client:
        fake_api.faults.fail("patch", code=500)
        patched = await patch_status(
            client, "LocalQueue", "q", "default", {"pendingWorkloads": 1, "conditions": []}, backoff=QUICK
        )
        assert patched["status"] == {"pendingWorkloads": 1, "conditions": []}
        assert patched["spec"] == created["spec"]
        with pytest.raises(KubeApiError) as stale:
            await patch_status(
                client,
                "LocalQueue",
                "q",
                "default",
                {"pendingWorkloads": 2},
                resource_version=created["metadata"]["resourceVersion"],
            )
        assert stale.value.status == 409
        removed = await patch_status(client, "LocalQueue", "q", "default", {"conditions": None})
    assert removed["status"] == {"pendingWorkloads": 1}


async def test_update_status_with_retry_goes_through_the_subresource(fake_api: FakeApi) -> None:
    fake_api.server.seed(local_queue("q"))
    fake_api.faults.fail("update", "/status", code=409)

    def count(current: dict[str, Any]) -> dict[str, Any]:
        current["status"] = {"pendingWorkloads": 7}
        current["spec"]["clusterQueue"] = "ignored-by-the-status-subresource"
        return current

    async with kube(fake_api) as client:
        updated = await update_status_with_retry(client, "LocalQueue", "q", "default", count, backoff=QUICK)
    assert updated["status"] == {"pendingWorkloads": 7}
    assert updated["spec"]["clusterQueue"] == "team-a"
