"""The fake API server's answers in kube-apiserver's shape: what a delete returns, where
``metadata.generation`` is kept, ``managedFields`` on every write, the resourceVersion a custom
resource's update needs, and the error bodies controllers read (each checked against
kube-apiserver v1.35 by tests/real/test_differential.py where the real components are built).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fakeapi.fixtures import FakeApi
from sandbox_support import APPLY, JSON_PATCH, MERGE, raw

CM = "/api/v1/namespaces/default/configmaps"
WL = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def config_map(name: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **metadata}, "data": {"a": "1"}}


def workload(name: str) -> dict[str, Any]:
    pod_set = {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"queueName": "default", "podSets": [pod_set]},
    }


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [{"name": "c"}]}}


async def test_a_delete_answers_a_status_unless_the_object_stays_or_its_kind_returns_it(fake_api: FakeApi) -> None:
    async with raw(fake_api) as api:
        made = await api.send("POST", CM, config_map("gone"))
        gone = await api.send("DELETE", f"{CM}/gone")
        await api.send("POST", CM, config_map("kept", finalizers=["example.com/hold"]))
        kept = await api.send("DELETE", f"{CM}/kept")
        await api.send("POST", CM, config_map("orphaned"))
        orphaned = await api.send("DELETE", f"{CM}/orphaned", {"propagationPolicy": "Orphan"})
        await api.send("POST", "/api/v1/namespaces/default/pods", pod("p"))
        deleted_pod = await api.send("DELETE", "/api/v1/namespaces/default/pods/p")
    assert gone.status == 200
    assert gone.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "gone", "kind": "configmaps", "uid": made.body["metadata"]["uid"]},
    }
    assert kept.body["kind"] == "ConfigMap"
    assert kept.body["metadata"]["deletionTimestamp"]
    assert orphaned.body["metadata"]["finalizers"] == ["orphan"], "the real server's GC finalizer, as it shows it"
    assert deleted_pod.body["kind"] == "Pod"
    assert deleted_pod.body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert deleted_pod.body["metadata"]["generation"] == 2, "deletion moves a Pod's generation"


async def test_generation_is_kept_only_where_the_real_server_keeps_it(fake_api: FakeApi) -> None:
    async with raw(fake_api) as api:
        config = await api.send("POST", CM, config_map("c"))
        updated = await api.send("PATCH", f"{CM}/c", {"data": {"a": "2"}}, MERGE)
        made = await api.send("POST", WL, workload("w"))
        changed = await api.send("PATCH", f"{WL}/w", {"spec": {"priority": 3}}, MERGE)
        made_pod = await api.send("POST", "/api/v1/namespaces/default/pods", pod("p"))
    assert "generation" not in config.body["metadata"]
    assert "generation" not in updated.body["metadata"]
    assert made.body["metadata"]["generation"] == 1
    assert changed.body["metadata"]["generation"] == 2
    assert made_pod.body["metadata"]["generation"] == 1


def managers(answer: Any) -> list[str]:
    entries = answer.body["metadata"].get("managedFields") or []
    return sorted(f"{e['manager']}/{e['operation']}/{e.get('subresource', '')}" for e in entries)


async def test_every_write_records_its_manager(fake_api: FakeApi) -> None:
    async with raw(fake_api) as api:
        created = await api.send("POST", WL, workload("w"))
        status = await api.send("PATCH", f"{WL}/w/status", {"status": {"conditions": []}}, MERGE)
        updated = await api.send("PATCH", f"{WL}/w?fieldManager=kueue", {"spec": {"priority": 1}}, MERGE)
    assert managers(created) == ["Python/Update/"], "aiohttp's User-Agent up to its first /"
    assert managers(status) == ["Python/Update/", "Python/Update/status"]
    assert managers(updated) == ["Python/Update/", "Python/Update/status", "kueue/Update/"]
    owned = next(e for e in updated.body["metadata"]["managedFields"] if e["manager"] == "kueue")
    assert owned["fieldsV1"] == {"f:spec": {"f:priority": {}}}


@pytest.mark.parametrize(
    ("path", "body", "qualified"),
    [
        pytest.param(f"{WL}/w", workload("w"), "workloads.kueue.x-k8s.io", id="custom-resource"),
        pytest.param(f"{WL}/w/status", workload("w"), "workloads.kueue.x-k8s.io", id="status"),
        pytest.param(
            f"{LEASES}/l",
            {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}},
            "leases.coordination.k8s.io",
            id="lease",
        ),
    ],
)
async def test_an_update_without_resource_version_is_refused_where_the_kind_needs_one(
    fake_api: FakeApi, path: str, body: dict[str, Any], qualified: str
) -> None:
    collection = path.rsplit("/", 2)[0] if path.endswith("/status") else path.rsplit("/", 1)[0]
    async with raw(fake_api) as api:
        await api.send("POST", collection, body)
        refused = await api.send("PUT", path, body)
        await api.send("POST", CM, config_map("free"))
        allowed = await api.send("PUT", f"{CM}/free", config_map("free"))
    assert refused.status == 422
    name = body["metadata"]["name"]
    assert refused.body["message"] == (
        f'{qualified} "{name}" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update'
    )
    assert allowed.status == 200, "a ConfigMap may be updated unconditionally"


async def test_error_bodies_are_the_real_servers(fake_api: FakeApi) -> None:
    async with raw(fake_api) as api:
        await api.send("POST", CM, config_map("c"))
        again = await api.send("POST", CM, config_map("c"))
        test_failed = await api.send("PATCH", f"{CM}/c", [{"op": "test", "path": "/data/a", "value": "x"}], JSON_PATCH)
        no_manager = await api.send("PATCH", f"{CM}/c", config_map("c"), APPLY)
        await api.send("PATCH", f"{CM}/s?fieldManager=alice", config_map("s"), APPLY)
        conflict = await api.send("PATCH", f"{CM}/s?fieldManager=bob", {**config_map("s"), "data": {"a": "2"}}, APPLY)
    assert again.body["details"] == {"name": "c", "kind": "configmaps"}, "no group for the core group"
    assert test_failed.status == 422
    assert test_failed.body["message"] == "the server rejected our request due to an error in our request"
    assert test_failed.body["details"] == {}
    assert no_manager.body["details"] == {
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [
            {
                "reason": "FieldValueRequired",
                "message": "Required value: is required for apply patch",
                "field": "fieldManager",
            }
        ],
    }
    assert conflict.status == 409
    assert set(conflict.body["details"]) == {"causes"}


async def test_continue_tokens_are_unpadded_and_an_expired_one_carries_its_continuation(fake_api: FakeApi) -> None:
    async with raw(fake_api) as api:
        for index in range(3):
            await api.send("POST", CM, config_map(f"c{index}"))
        first = await api.send("GET", f"{CM}?limit=1")
        token = first.body["metadata"]["continue"]
        fake_api.store.compact()
        expired = await api.send("GET", f"{CM}?limit=1&continue={token}")
        onward = await api.send("GET", f"{CM}?limit=5&continue={expired.body['metadata']['continue']}")
        future = base64.urlsafe_b64encode(json.dumps({"v": "meta.k8s.io/v1", "rv": 99999, "start": "x"}).encode())
        too_large = await api.send("GET", f"{CM}?limit=1&continue={future.decode().rstrip('=')}")
    assert "=" not in token, "base64url without padding, as Go's RawURLEncoding writes it"
    assert expired.status == 410
    assert expired.body["reason"] == "Expired"
    assert [item["metadata"]["name"] for item in onward.body["items"]] == ["c1", "c2"]
    assert too_large.status == 504
    assert too_large.body["message"].startswith("Timeout: Too large resource version: 99999, current: ")


async def test_an_expired_watch_says_so_as_the_watch_cache_or_etcd_would(fake_api: FakeApi) -> None:
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": "default"},
        "reason": "Made",
    }
    async with raw(fake_api) as api:
        made_event = await api.send("POST", "/api/v1/namespaces/default/events", event)
        made_map = await api.send("POST", CM, config_map("c"))
        fake_api.store.compact()
        events = "/api/v1/namespaces/default/events?watch=true&timeoutSeconds=1&resourceVersion="
        maps = f"{CM}?watch=true&timeoutSeconds=1&resourceVersion="
        from_etcd = await api.send_stream("GET", events + made_event.body["metadata"]["resourceVersion"])
        from_cache = await api.send_stream("GET", maps + made_map.body["metadata"]["resourceVersion"])
    # Events have no watch cache on the real server: etcd's words; every other kind: the cache's
    assert from_etcd[0]["object"]["message"] == "The resourceVersion for the provided watch is too old."
    assert from_cache[0]["object"]["message"].startswith("too old resource version: ")
    assert {from_etcd[0]["type"], from_cache[0]["object"]["code"]} == {"ERROR", 410}
