"""KubeClient against the fake API server: one generic interface for every kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakeapi.fixtures import FakeApi
from kube_support import flavor, kube, local_queue

from scheduler.kube import KubeApiError, KubeClient, KubeConfigError, load_api_client


async def test_create_get_list_replace_patch_delete(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        created = await client.create(local_queue("q"))
        assert created["metadata"]["uid"]
        got = await client.get("LocalQueue", "q", "default")
        assert got == created
        got["spec"]["clusterQueue"] = "team-b"
        replaced = await client.replace(got)
        assert replaced["spec"]["clusterQueue"] == "team-b"
        patched = await client.patch("LocalQueue", "q", {"metadata": {"labels": {"tier": "gold"}}}, "default")
        assert patched["metadata"]["labels"] == {"tier": "gold"}
        json_patched = await client.patch(
            "LocalQueue", "q", [{"op": "replace", "path": "/spec/clusterQueue", "value": "team-c"}], "default"
        )
        assert json_patched["spec"]["clusterQueue"] == "team-c"
        status = await client.patch("LocalQueue", "q", {"status": {"pendingWorkloads": 3}}, "default", status=True)
        assert status["status"] == {"pendingWorkloads": 3}
        listed = await client.list("LocalQueue", label_selector="tier=gold")
        assert [i["metadata"]["name"] for i in listed.items] == ["q"]
        assert int(listed.resource_version) >= int(status["metadata"]["resourceVersion"])
        await client.delete("LocalQueue", "q", "default")
        with pytest.raises(KubeApiError) as missing:
            await client.get("LocalQueue", "q", "default")
    assert missing.value.status == 404
    assert missing.value.reason == "NotFound"
    assert missing.value.message == 'localqueues.kueue.x-k8s.io "q" not found'


async def test_built_in_list_items_get_kind_and_api_version(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        listed = await client.list("Namespace")
    assert {i["metadata"]["name"] for i in listed.items} >= {"default", "kube-system"}
    assert all(i["kind"] == "Namespace" and i["apiVersion"] == "v1" for i in listed.items)


async def test_stale_replace_is_a_409_with_the_servers_message(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        first = await client.create(flavor("gpu"))
        await client.patch("ResourceFlavor", "gpu", {"spec": {"nodeLabels": {"a": "b"}}})
        with pytest.raises(KubeApiError) as conflict:
            await client.replace(first)
    assert conflict.value.status == 409
    assert "the object has been modified" in conflict.value.message


async def test_retry_after_is_kept_on_429(fake_api: FakeApi) -> None:
    fake_api.faults.fail("get", code=429, retry_after=2)
    async with kube(fake_api) as client:
        with pytest.raises(KubeApiError) as throttled:
            await client.get("Namespace", "default")
    assert throttled.value.status == 429
    assert throttled.value.transient
    assert throttled.value.retry_after == 2.0


async def test_a_document_of_an_unknown_kind_is_refused_before_sending(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client:
        with pytest.raises(ValueError, match="unknown kind 'Deployment'"):
            await client.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}})
        with pytest.raises(ValueError, match=r"needs metadata\.namespace"):
            await client.create({**local_queue("q"), "metadata": {"name": "q"}})
    assert fake_api.server.requests == []


async def test_load_api_client_from_a_kubeconfig(fake_api: FakeApi) -> None:
    api_client = await load_api_client(fake_api.kubeconfig)
    try:
        namespaces = await KubeClient(api_client).list("Namespace")
    finally:
        await api_client.close()
    assert namespaces.items


async def test_missing_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="does not exist; pass --kubeconfig"):
        await load_api_client(tmp_path / "nope")
    broken = tmp_path / "broken"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    with pytest.raises(KubeConfigError, match=f"kubeconfig {broken} cannot be used"):
        await load_api_client(broken)


async def test_no_kubeconfig_outside_a_pod_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeConfigError, match="not running in a Pod"):
        await load_api_client(None)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(KubeConfigError, match="in-cluster configuration cannot be used"):
        await load_api_client(None)  # no service account token on this machine
